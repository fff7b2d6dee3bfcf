//! Built kernels in the rig: README's worked example. Debian's
//! linux-source-6.12 with manarig's minimal config (`--kernel 6.12-min`), as
//! is and with examples/patches/revert-irq-setup (MANA back on per-vector
//! `cpumask_local_spread()`: the seed series' "before"), each booted and
//! judged by the model its source runs, and `compare` of the two.
//!
//! `cargo xtask test` builds both kernels before the tests (a cold build is
//! about 8 minutes on a 2-core machine, the patched one then about 15 s); run
//! alone, the first test builds them (network for the pinned source package,
//! host build packages installed with apt-get as root). `slow_`: the 128-vCPU
//! machine of seed 001.

use harness::kbuild::{build, minimal, Built};
use harness::model::KernelGen;
use harness::rig::{run_one, RunRequest};
use harness::verdict::{render, Format, Status};
use std::path::PathBuf;
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The stock (`None`) or patched build of Debian's 6.12 source.
fn kernel(patches: Option<PathBuf>) -> Built {
    let cache = harness::provision::cache_dir(None).expect("cache dir");
    let mut req = minimal::request(KernelGen::V6_12, &cache, false).expect("pinned source");
    req.patches = patches;
    req.deadline = Duration::from_secs(3 * 3600);
    build(&req, &mut |l| eprintln!("kernel: {l}")).expect("kernel builds")
}

fn reverted() -> Built {
    kernel(Some(root().join("examples/patches/revert-irq-setup")))
}

fn built_run(built: &Built, topology: &str, want_model: KernelGen) {
    // The detected algorithm: irq_setup() in stock 6.12, per-vector
    // (hop-aware) cpumask_local_spread() once the example patch removes it.
    assert_eq!(built.model().expect("model"), want_model, "{}", built.stamp.detected.evidence);
    let mut run = RunRequest::new(root().join("topologies").join(topology), want_model);
    run.custom_kernel = Some(built.install());
    run.model_basis = built.model_basis();
    run.deadline = Duration::from_secs(3600);
    let outcome = run_one(&run).expect("the built kernel boots and reports");
    eprintln!("{}", render(&outcome.verdict, Format::Human).unwrap_or_default());
    assert_eq!(outcome.observed.kernel_release, built.stamp.release);
    // seed-002.toml [expect] verdict = "pass" for every modelled kernel: the
    // guest's table equals the model of the algorithm the source runs.
    assert_eq!(outcome.verdict.status, Status::Pass);
    assert!(outcome.report.warnings.is_empty(), "kernel warnings: {:#?}", outcome.report.warnings);
}

#[test]
fn built_linux_6_12_minimal_config_on_seed_002() {
    built_run(&kernel(None), "seed-002.toml", KernelGen::V6_12);
}

#[test]
fn built_linux_6_12_with_irq_setup_reverted_on_seed_002() {
    // Without irq_setup() the 6.12 tree spreads one CPU per vector through its own
    // cpumask_local_spread(), which is NUMA-hop-aware since 6.3: the 6.3 model.
    built_run(&reverted(), "seed-002.toml", KernelGen::V6_3);
}

/// `compare --before build:<reverted> --after 6.12-min`: README's worked
/// example. seed 002's machine: before, queue 0 gets one CPU (1: the flat
/// per-vector spread skips CPU 0, which the HWC took) with hint 02; after,
/// the sibling group 0-1 with hint 03 (seed 002's table).
fn worked_example_compare(topology: &str) -> String {
    let before = reverted();
    kernel(None);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_manarig"))
        .arg("compare")
        .arg(root().join("topologies").join(topology))
        .arg("--before")
        .arg(format!("build:{}", before.dir.display()))
        .args(["--after", "6.12-min"])
        .output()
        .expect("manarig runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}");
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    stdout
}

#[test]
fn built_worked_example_compare_on_seed_002() {
    let stdout = worked_example_compare("seed-002.toml");
    let row = stdout.lines().find(|l| l.contains("mana_q0 ")).unwrap_or_default();
    assert!(row.contains("1 | 0-1"), "mana_q0 row: {row:?}\n{stdout}");
    assert!(stdout.lines().any(|l| l.ends_with(": 02")) && stdout.lines().any(|l| l.ends_with(": 03")), "{stdout}");
}

/// seed 001's Azure machine (128 vCPUs, 2 nodes, 64 sibling pairs). Seed
/// 001's table numbers IRQ n = MSI-X index n-1: old design IRQ n → CPU n-1,
/// new design IRQ 1 (the HWC) → 0-1, IRQ 2 (mana_q0) → 2-3. So mana_q0's row
/// reads `1 | 2-3`, and the HWC's `0 | 0-1`.
#[test]
fn slow_built_worked_example_compare_on_seed_001() {
    let stdout = worked_example_compare("seed-001-azure-128.toml");
    let row = |name: &str| stdout.lines().find(|l| l.contains(name)).unwrap_or_default().to_owned();
    assert!(row("mana_q0 ").contains("1 | 2-3"), "mana_q0 row: {:?}\n{stdout}", row("mana_q0 "));
    assert!(row("mana_hwc ").contains("0 | 0-1"), "mana_hwc row: {:?}\n{stdout}", row("mana_hwc "));
}

/// Seed 003's affinity hints (IRQ: mask lines, Linux numbering), "[before]" or
/// "[after]": one CPU each, in IRQ order.
fn seed_003_hints(section: &str) -> Vec<u32> {
    let text = std::fs::read_to_string(root().join("model/src/model/testdata/seed-003-affinity-hints.txt"))
        .expect("seed 003 hints");
    let mut inside = false;
    let mut cpus = Vec::new();
    for line in text.lines() {
        if line.starts_with('[') {
            inside = line == section;
        } else if inside && !line.starts_with('#') {
            let (_, hex) = line.split_once(": ").expect("IRQ: mask");
            let mask = harness::cpulist::CpuMask::parse_mask_string(hex).expect("hex mask");
            cpus.push(mask.first().expect("one CPU"));
        }
    }
    cpus
}

/// The `IRQ: mask` lines `compare` prints under "<label> (…): affinity hints", as CPUs.
fn compare_hints(stdout: &str, label: &str) -> Vec<u32> {
    stdout
        .lines()
        .skip_while(|l| !(l.starts_with(label) && l.contains("affinity hints")))
        .skip(1)
        .map_while(|l| l.split_once(": ").filter(|(irq, _)| !irq.is_empty() && irq.bytes().all(|b| b.is_ascii_digit())))
        .map(|(_, hex)| harness::cpulist::CpuMask::parse_mask_string(hex).expect("hex mask").first().expect("a hint"))
        .collect()
}

/// `compare seed-003 --before 6.1-min --after build:<reverted 6.12>`.
/// The reverted 6.12 tree gives each vector one CPU from its own, NUMA-hop-aware
/// `cpumask_local_spread()` (the 6.3 model), so its hints follow seed 003's
/// "After" list (node 14, then 12, 13, 15, then 8-11, then 0-7); 6.1's flat
/// helper follows the "Before" list (node 14, then every CPU by id). MANA has 65
/// vectors (HWC + 64 queues): the lists' first 65 entries.
///
/// The guest numbers SMT siblings adjacently (QEMU), the seed's machine N and
/// N+128, so the order *within* a hop differs; what carries over is each
/// vector's NUMA hop from node 14 (both lists, entry by entry) and, for the
/// hop-aware list, which CPUs the 65 vectors cover. Both verdicts must pass: the
/// model of each side, applied to the guest's numbering, predicts every CPU.
#[test]
fn slow_built_revert_on_seed_003_follows_the_hop_aware_cpumask_local_spread() {
    let after = reverted();
    let topo_path = root().join("topologies/seed-003-epyc-7763.toml");
    let topo = harness::topology::Topology::load(&topo_path).expect("seed 003 loads");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_manarig"))
        .arg("compare")
        .arg(&topo_path)
        .args(["--before", "6.1-min", "--after"])
        .arg(format!("build:{}", after.dir.display()))
        .output()
        .expect("manarig runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}");
    assert_eq!(out.status.code(), Some(0), "both sides pass\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stderr.contains("sched_numa_find_nth_cpu"), "the after side names its evidence:\n{stderr}");
    assert!(stdout.contains("(model 6.3: per-vector cpumask_local_spread, NUMA-hop-aware"), "{stdout}");
    // Hop of a file CPU from the NIC's node 14: the rank of its node's distance.
    let mut levels: Vec<u32> = topo.nodes().iter().map(|n| topo.distance(14, n.id)).collect();
    levels.sort_unstable();
    levels.dedup();
    let hop = |file_cpu: u32| {
        let node = topo.node_of(file_cpu).expect("a CPU of a node");
        levels.iter().position(|&d| d == topo.distance(14, node)).expect("a level")
    };
    for (label, section) in [("Before", "[before]"), ("After", "[after]")] {
        let seed: Vec<u32> = seed_003_hints(section).into_iter().take(65).collect();
        let guest: Vec<u32> = compare_hints(&stdout, label).into_iter().map(|g| topo.cpu_of_qemu_index(g)).collect();
        assert_eq!(guest.len(), 65, "{label}: 65 hints");
        let hops = |cpus: &[u32]| cpus.iter().map(|&c| hop(c)).collect::<Vec<_>>();
        assert_eq!(hops(&guest), hops(&seed), "{label}: each vector's hop from node 14, as seed 003's {section} list");
        let set = |cpus: &[u32]| cpus.iter().copied().collect::<std::collections::BTreeSet<u32>>();
        // Node 14's 16 CPUs first on both sides.
        assert_eq!(set(&guest[..16]), set(&seed[..16]), "{label}: node 14 first");
        if label == "After" {
            assert_eq!(set(&guest), set(&seed), "After: the CPUs of seed 003's first 65 hop-aware hints");
        }
    }
}
