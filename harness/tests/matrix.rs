//! The rig's matrix: one test per (topology file, kernel). Each boots the
//! topology in QEMU with the emulated MANA NIC, lets the kernel's own `mana`
//! driver probe it, and requires the verdict the file names in `[expect]`
//! (and, for `pass`, every vector's `smp_affinity_list` as the reference model
//! predicts from the kernel's algorithms), with no kernel warning in the guest
//! and the carrier up once the netdev is.
//!
//! Tests whose name starts with `slow_` (machines of 96 vCPUs or more) are left
//! out of the default nextest profile; `cargo nextest run --profile slow` runs
//! them. CI can split the matrix with `--partition count:K/N`.
//! They need the cache that `cargo xtask setup` fills (`cargo xtask test` runs it first).
//! `MANARIG_MATRIX_KERNEL_BUILD=KEY` runs the rows of that kernel build's detected
//! generation on the build (`cargo xtask kernel build`; README "Test your own kernel").

use harness::rig::kernel_choice::{self, KernelChoice};
use harness::rig::{run_one, RunRequest};
use harness::topology::{ExpectedVerdict, Topology};
use harness::verdict::{render, Format, Status};
use std::path::PathBuf;
use std::time::Duration;

/// Environment variable naming a kernel build (`cargo xtask kernel build`) to run the matrix on.
const MATRIX_BUILD_ENV: &str = "MANARIG_MATRIX_KERNEL_BUILD";

fn topology_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../topologies").join(format!("{file}.toml"))
}

/// A run request for `file` on `kernel` as `--kernel` names it (`6.12`, `6.12-min`, …).
fn request(path: &std::path::Path, kernel: &str) -> RunRequest {
    let choice: KernelChoice = kernel.parse().expect("a kernel choice");
    kernel_choice::resolve(&choice, None, None).unwrap_or_else(|e| panic!("kernel {kernel}: {e}")).request(path)
}

fn check(file: &str, kernel: &str) {
    let path = topology_path(file);
    let topo = Topology::load(&path).expect("topology file loads");
    let mut req = request(&path, kernel);
    let gen = req.kernel;
    // Kernel patch CI: MANARIG_MATRIX_KERNEL_BUILD=KEY runs the rows of the
    // build's detected generation on that build instead of the pinned kernel.
    if let Ok(key) = std::env::var(MATRIX_BUILD_ENV) {
        let cache = harness::provision::cache_dir(None).expect("cache dir");
        let built =
            harness::kbuild::load_build(&key, &cache).unwrap_or_else(|e| panic!("{MATRIX_BUILD_ENV}={key}: {e}"));
        if built.model().expect("model") == gen {
            eprintln!("{file}: on kernel build {key} ({}, {})", built.stamp.release, built.stamp.detected.evidence);
            req.custom_kernel = Some(built.install());
            req.model_basis = built.model_basis();
        }
    }
    req.deadline = Duration::from_secs(if topo.slow() { 3600 } else { 900 });
    let (expected, source) = topo.expect().on(gen.as_str());
    let outcome = match (run_one(&req), expected) {
        (Err(e), ExpectedVerdict::RigError) => {
            eprintln!("{file} on {kernel}: rig error, as the file expects: {}", harness::text::chain(&e));
            return;
        }
        (Err(e), want) => {
            panic!("{file} on {kernel}: rig error ({}); the file expects {want:?}", harness::text::chain(&e))
        }
        (Ok(outcome), _) => outcome,
    };
    let report = render(&outcome.verdict, Format::Human).unwrap_or_else(|e| format!("(cannot render: {e})"));
    eprintln!("{report}");
    let got = outcome.verdict.status;
    let want = match expected {
        ExpectedVerdict::Pass => Status::Pass,
        ExpectedVerdict::Mismatch => Status::Fail,
        ExpectedVerdict::KernelFinding => {
            // The kernel's own words are the file's source: the finding names them.
            let finding = outcome
                .verdict
                .kernel_finding()
                .unwrap_or_else(|| panic!("{file} on {kernel}: no kernel finding:\n{report}"));
            let warning = source.split_once("WARNING: ").map(|(_, w)| w.split(" at ").next().unwrap_or(w));
            assert!(warning.is_none_or(|w| finding.message.contains(w)), "{file} on {kernel}: {}", finding.message);
            assert!(outcome.verdict.as_topology_expects());
            return;
        }
        ExpectedVerdict::RigError => {
            panic!("{file} on {kernel}: the file expects a rig error, the run worked:\n{report}")
        }
    };
    assert_eq!(got, want, "{file} on {kernel} ({source}): verdict differs from the file's expectation");
    // Whatever the table, the driver must not upset the kernel, and a netdev
    // that probed must get its carrier after `ip link set up` (mana_open()).
    let r = &outcome.report;
    assert!(r.warnings.is_empty(), "{file} on {kernel}: kernel warnings: {:#?}", r.warnings);
    if r.netdev.is_some() {
        assert_eq!(r.carrier, Some(true), "{file} on {kernel}: no carrier after ip link set up");
    }
}

macro_rules! matrix {
    ($($name:ident: $file:literal on $kernel:literal;)*) => {$(
        #[test]
        fn $name() {
            check($file, $kernel);
        }
    )*};
}

// Sources of each machine and its expected outcome are in the files themselves
// (topologies/README.md lists them).
matrix! {
    seed_002_on_linux_6_1: "seed-002" on "6.1";
    // A kernel finding: Linux 7.3 does not bring up CPU 15 of this machine (6.1 does;
    // 6.12 does too, with timer-migration warnings this test would count as the driver's).
    k01_tmigr_uneven_nodes_on_linux_6_1: "k01-tmigr-uneven-nodes" on "6.1";
    k01_tmigr_uneven_nodes_on_linux_7: "k01-tmigr-uneven-nodes" on "7.x";
    seed_002_on_linux_6_12: "seed-002" on "6.12";
    // The arm virt machine's NUMA history (arm64 guests under TCG, 20-40 s each:
    // the slow tier). A kernel finding on 7.x: Linux 7.3 builds no scheduling
    // domains for a socket split across nodes (6.12 does).
    slow_arm64_virt_socket_split_nodes_on_linux_6_12: "arm64/virt-socket-split-nodes" on "6.12";
    slow_arm64_virt_socket_split_nodes_on_linux_7: "arm64/virt-socket-split-nodes" on "7.x";
    slow_arm64_virt_one_cluster_4_nodes_on_linux_6_12: "arm64/virt-one-cluster-4-nodes" on "6.12";
    slow_arm64_virt_one_cluster_4_nodes_on_linux_7: "arm64/virt-one-cluster-4-nodes" on "7.x";
    seed_002_on_linux_7: "seed-002" on "7.x";
    seed_000_4ch_on_linux_6_1: "seed-000-4ch" on "6.1";
    seed_000_4ch_on_linux_6_12: "seed-000-4ch" on "6.12";
    seed_000_4ch_on_linux_7: "seed-000-4ch" on "7.x";
    r01_nic_node1_on_linux_6_12: "r01-nic-node1" on "6.12";
    r02_small_table_on_linux_6_1: "r02-small-table" on "6.1";
    r02_small_table_on_linux_6_12: "r02-small-table" on "6.12";
    r02_small_table_on_linux_7: "r02-small-table" on "7.x";
    r05_dyn_skip_on_linux_7: "r05-dyn-skip" on "7.x";
    r05_dyn_skip_on_linux_6_12: "r05-dyn-skip" on "6.12";
    r06_low_vcpu_on_linux_7: "r06-low-vcpu" on "7.x";
    r08_four_nodes_on_linux_6_1: "r08-four-nodes" on "6.1";
    r08_four_nodes_on_linux_6_12: "r08-four-nodes" on "6.12";
    r08_four_nodes_on_linux_7: "r08-four-nodes" on "7.x";
    r15_memory_only_small_on_linux_6_12: "r15-memory-only-small" on "6.12";
    r16_row0_on_linux_6_12: "r16-row0" on "6.12";
    r17_diameter_on_linux_6_12: "r17-diameter" on "6.12";
    r23_no_node_on_linux_6_12: "r23-no-node" on "6.12";
    r24_no_smt_on_linux_6_12: "r24-no-smt" on "6.12";
    // The minimal kernel (Debian's 6.12 source, manarig's config; the fast
    // path): the same expectations as Debian's 6.12 kernel.
    seed_002_on_linux_6_12_min: "seed-002" on "6.12-min";
    seed_000_4ch_on_linux_6_12_min: "seed-000-4ch" on "6.12-min";
    r08_four_nodes_on_linux_6_12_min: "r08-four-nodes" on "6.12-min";
    r15_memory_only_small_on_linux_6_12_min: "r15-memory-only-small" on "6.12-min";
    r23_no_node_on_linux_6_12_min: "r23-no-node" on "6.12-min";
    // An asymmetric SLIT; node 0's hops come from row 0.
    scen_asymmetric_slit_on_linux_6_12_min: "scen-asymmetric-slit" on "6.12-min";
    slow_seed_001_azure_128_on_linux_6_12_min: "seed-001-azure-128" on "6.12-min";
    // 7.x's minimal kernel (Debian's linux-source-7.3): a second kernel build
    // (about 8 minutes cold), so in the slow profile only.
    slow_seed_002_on_linux_7_min: "seed-002" on "7.x-min";
    slow_r05_dyn_skip_on_linux_7_min: "r05-dyn-skip" on "7.x-min";
    slow_seed_003_epyc_7763_on_linux_6_12_min: "seed-003-epyc-7763" on "6.12-min";
    slow_seed_000_kelley_96_on_linux_6_12: "seed-000-kelley-96" on "6.12";
    slow_seed_001_azure_128_on_linux_6_12: "seed-001-azure-128" on "6.12";
    slow_seed_001_azure_128_on_linux_6_1: "seed-001-azure-128" on "6.1";
    slow_r15_memory_only_on_linux_6_12: "r15-memory-only" on "6.12";
    // 256 vCPUs on Debian's kernel: 108 s on the 2-core build machine.
    slow_seed_003_epyc_7763_on_linux_6_12: "seed-003-epyc-7763" on "6.12";
}

/// A deliberately wrong expectation: seed 002's guest on 6.12 judged against
/// the 6.1 model (one CPU per vector from the flat cpumask_local_spread, seed
/// 000's "Case 2") must fail with exit code 1 and name the differing vectors,
/// e.g. mana_q0: expected 1, got 0-1 (seed 002 / irq_setup).
#[test]
fn wrong_expectation_fails_the_verdict_with_exit_code_1() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_manarig"))
        .arg("run")
        .arg(topology_path("seed-002"))
        .args(["--kernel", "6.12", "--model", "6.1"])
        .output()
        .expect("manarig runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("verdict: FAIL"), "{stdout}");
    assert!(stdout.contains("mana_q0"), "{stdout}");
}

/// `compare --before 6.1 --after 6.12` on seed 002's machine prints seed 001's
/// before|after layout and seed 003's affinity_hint masks: on 6.1 queue 0 has
/// hint 02 (CPU 1, flat cpumask_local_spread), on 6.12 it has 03 (CPUs 0-1,
/// irq_setup's sibling group; seed 002's table).
#[test]
fn compare_prints_the_before_after_table_for_seed_002() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_manarig"))
        .arg("compare")
        .arg(topology_path("seed-002"))
        .args(["--before", "6.1", "--after", "6.12"])
        .output()
        .expect("manarig runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let row = stdout.lines().find(|l| l.contains("mana_q0 ")).unwrap_or_default();
    assert!(row.contains("1 | 0-1"), "mana_q0 row: {row:?}\n{stdout}");
    assert!(stdout.contains("affinity hints"), "{stdout}");
    assert!(stdout.lines().any(|l| l.ends_with(": 02")) && stdout.lines().any(|l| l.ends_with(": 03")), "{stdout}");
}

/// The vectors as the test compares them across boots: name, smp_affinity_list
/// and affinity_hint (effective CPUs and counts may differ run to run, see
/// `ObservedVector::effective`).
fn placement(o: &harness::verdict::Observed) -> Vec<(String, String, Option<String>)> {
    o.vectors
        .iter()
        .map(|v| (v.name.clone(), v.smp_affinity.to_string(), v.affinity_hint.as_ref().map(ToString::to_string)))
        .collect()
}

fn speedups_keep_the_placement(file: &str, kernel: &str) {
    let path = topology_path(file);
    let run = |speedups| {
        let mut req = request(&path, kernel);
        req.speedups = speedups;
        run_one(&req)
            .unwrap_or_else(|e| panic!("{file} on {kernel} with {speedups:?}: rig error {}", harness::text::chain(&e)))
    };
    let fast = run(harness::qemu::Speedups::ALL);
    let plain = run(harness::qemu::Speedups::NONE);
    assert!(fast.observed.accel.contains("speed-ups: cmdline, pvh"), "{}", fast.observed.accel);
    assert!(plain.observed.accel.contains("speed-ups: none"), "{}", plain.observed.accel);
    // The speed-ups must not change what is tested: the same verdict and the
    // same smp_affinity_list / affinity_hint per vector (docs/boot-speed.md).
    assert_eq!(fast.verdict.status, plain.verdict.status, "{file} on {kernel}: verdict differs with the speed-ups");
    assert_eq!(placement(&fast.observed), placement(&plain.observed), "{file} on {kernel}: IRQ placement differs");
}

#[test]
fn speedups_keep_the_irq_placement_seed_002_on_linux_6_12() {
    speedups_keep_the_placement("seed-002", "6.12");
}

#[test]
fn speedups_keep_the_irq_placement_r17_on_linux_6_1() {
    // R17 (four nodes, SLIT distances 12-24) on the kernel before irq_setup().
    speedups_keep_the_placement("r17-diameter", "6.1");
}

#[test]
fn speedups_keep_the_irq_placement_seed_002_on_linux_6_12_min() {
    // The minimal kernel: PVH entry of its own vmlinux vs its bzImage through SeaBIOS.
    speedups_keep_the_placement("seed-002", "6.12-min");
}
