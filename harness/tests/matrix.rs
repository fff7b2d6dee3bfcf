//! The rig's matrix: one test per (topology file, kernel). Each boots the
//! topology in QEMU with the emulated MANA NIC, lets the kernel's own `mana`
//! driver probe it, and requires the verdict the file names in `[expect]`
//! (and, for `pass`, every vector's `smp_affinity_list` as the reference model
//! predicts from the kernel's algorithms).
//!
//! Tests whose name starts with `slow_` (machines of 96 vCPUs or more) are left
//! out of the default nextest profile; `cargo nextest run --profile slow` runs
//! them. CI can split the matrix with `--partition count:K/N`.
//! They need the cache that `cargo xtask setup` fills (`cargo xtask test` runs it first).
//! `MANARIG_MATRIX_KERNEL_BUILD=KEY` runs the rows of that kernel build's detected
//! generation on the build (`cargo xtask kernel build`; README "Test your own kernel").

use harness::model::KernelGen;
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

fn check(file: &str, kernel: &str) {
    let gen: KernelGen = kernel.parse().expect("a modelled kernel");
    let path = topology_path(file);
    let topo = Topology::load(&path).expect("topology file loads");
    let mut req = RunRequest::new(&path, gen);
    // Kernel patch CI: MANARIG_MATRIX_KERNEL_BUILD=KEY runs the rows of the
    // build's detected generation on that build instead of the pinned kernel.
    if let Ok(key) = std::env::var(MATRIX_BUILD_ENV) {
        let cache = harness::provision::cache_dir(None).expect("cache dir");
        let built = harness::kbuild::load_build(&key, &cache).unwrap_or_else(|e| panic!("{MATRIX_BUILD_ENV}={key}: {e}"));
        if built.model().expect("model") == gen {
            eprintln!("{file}: on kernel build {key} ({}, {})", built.stamp.release, built.stamp.detected.evidence);
            req.custom_kernel = Some(built.install());
        }
    }
    req.deadline = Duration::from_secs(if topo.slow() { 3600 } else { 900 });
    let outcome = match (run_one(&req), topo.expect().verdict) {
        (Err(e), ExpectedVerdict::RigError) => {
            eprintln!("{file} on {kernel}: rig error, as the file expects: {e:#}");
            return;
        }
        (Err(e), want) => panic!("{file} on {kernel}: rig error ({e:#}); the file expects {want:?}"),
        (Ok(outcome), _) => outcome,
    };
    let report = render(&outcome.verdict, Format::Human).unwrap_or_else(|e| format!("(cannot render: {e})"));
    eprintln!("{report}");
    let got = outcome.verdict.status;
    let want = match topo.expect().verdict {
        ExpectedVerdict::Pass => Status::Pass,
        ExpectedVerdict::Mismatch => Status::Fail,
        ExpectedVerdict::RigError => panic!("{file} on {kernel}: the file expects a rig error, the run worked:\n{report}"),
    };
    assert_eq!(got, want, "{file} on {kernel} ({}): verdict differs from the file's expectation", topo.expect().source);
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
    seed_002_on_linux_6_12: "seed-002" on "6.12";
    seed_002_on_linux_7: "seed-002" on "7.x";
    seed_000_4ch_on_linux_6_1: "seed-000-4ch" on "6.1";
    seed_000_4ch_on_linux_6_12: "seed-000-4ch" on "6.12";
    seed_000_4ch_on_linux_7: "seed-000-4ch" on "7.x";
    r01_nic_node1_on_linux_6_12: "r01-nic-node1" on "6.12";
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
    slow_seed_000_kelley_96_on_linux_6_12: "seed-000-kelley-96" on "6.12";
    slow_seed_001_azure_128_on_linux_6_12: "seed-001-azure-128" on "6.12";
    slow_seed_001_azure_128_on_linux_6_1: "seed-001-azure-128" on "6.1";
    slow_r15_memory_only_on_linux_6_12: "r15-memory-only" on "6.12";
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
