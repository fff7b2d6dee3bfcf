//! Built kernels in the rig: Debian's linux-source-6.12 with manarig's minimal
//! config, as is and with examples/patches/revert-irq-setup, each booted on
//! seed 002's machine and judged by the model its source runs.
//!
//! `slow_`: a cold build takes well over the CI budget on a 2-core machine
//! (see README "Test your own kernel" and `cargo xtask bench kernel`); the
//! builds are cached in the cache folder, so a second run only boots.
//! Needs the provisioned cache (`cargo xtask setup`), network on first use
//! (the pinned linux-source-6.12 package) and the host build packages (the
//! build installs them with apt-get when run as root).

use harness::kbuild::{build, source::SourceSpec, BuildRequest};
use harness::model::KernelGen;
use harness::rig::{run_one, RunRequest};
use harness::verdict::{render, Format, Status};
use std::path::PathBuf;
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn built_run(patches: Option<PathBuf>, want_model: KernelGen) {
    let cache = harness::provision::cache_dir(None).expect("cache dir");
    let req = BuildRequest {
        source: SourceSpec::parse("debian:linux-source-6.12").expect("pinned source"),
        patches,
        fragment: None,
        cache: cache.clone(),
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        ccache: true,
        install_deps: true,
        deadline: Duration::from_secs(3 * 3600),
        fresh: false,
    };
    let built = build(&req, &mut |l| eprintln!("kernel: {l}")).expect("kernel builds");
    // The detected algorithm: irq_setup() in stock 6.12, per-vector
    // cpumask_local_spread() once the example patch removes it.
    assert_eq!(built.model().expect("model"), want_model, "{}", built.stamp.detected.evidence);
    let mut run = RunRequest::new(root().join("topologies/seed-002.toml"), want_model);
    run.custom_kernel = Some(built.install());
    run.deadline = Duration::from_secs(900);
    let outcome = run_one(&run).expect("the built kernel boots and reports");
    eprintln!("{}", render(&outcome.verdict, Format::Human).unwrap_or_default());
    assert_eq!(outcome.observed.kernel_release, built.stamp.release);
    // seed-002.toml [expect] verdict = "pass" for every modelled kernel: the
    // guest's table equals the model of the algorithm the source runs.
    assert_eq!(outcome.verdict.status, Status::Pass);
}

#[test]
fn slow_built_linux_6_12_minimal_config_on_seed_002() {
    built_run(None, KernelGen::V6_12);
}

#[test]
fn slow_built_linux_6_12_with_irq_setup_reverted_on_seed_002() {
    built_run(Some(root().join("examples/patches/revert-irq-setup")), KernelGen::V6_1);
}
