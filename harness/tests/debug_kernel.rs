//! Debug kernels in the rig (README "Debug kernels"): Debian's
//! linux-source-6.12 with manarig's config plus guest-images/kernel-config/debug.config
//! (KASAN, kmemleak, lockdep), stock and with the two bug patches of
//! examples/patches, each booted on seed 000's 4-channel machine and judged. The stock
//! kernel passes with a passing `debug_reports` check; each patch fails that
//! check naming its checker (kmemleak; slub_debug's free poison in the hints).
//!
//! All `slow_`: each needs a debug kernel build (about an hour on a loaded
//! 2-core machine; a patched one after the stock one rebuilds mana only) and
//! a debug boot is several times a minimal one.

use harness::kbuild::{build, minimal, Built};
use harness::model::KernelGen;
use harness::rig::{run_one, RunOutcome, RunRequest};
use harness::verdict::{render, CheckStatus, Format, Status, DEBUG_REPORTS_CHECK};
use std::path::PathBuf;
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The stock (`None`) or patched debug build of Debian's 6.12 source.
fn debug_kernel(patches: Option<&str>) -> Built {
    let cache = harness::provision::cache_dir(None).expect("cache dir");
    let mut req = minimal::request(KernelGen::V6_12, &cache, true).expect("pinned source");
    req.patches = patches.map(|p| root().join("examples/patches").join(p));
    req.deadline = Duration::from_secs(4 * 3600);
    build(&req, &mut |l| eprintln!("kernel: {l}")).expect("debug kernel builds")
}

/// seed 000 on `built` as a debug kernel; returns the outcome and the
/// `debug_reports` check's status and message.
fn debug_run(built: &Built) -> (RunOutcome, CheckStatus, String) {
    assert!(built.is_debug(), "{:?}", built.stamp.fragments);
    let mut run = RunRequest::new(root().join("topologies/seed-000-4ch.toml"), KernelGen::V6_12);
    run.custom_kernel = Some(built.install());
    run.model_basis = built.model_basis();
    run.debug = true;
    let outcome = run_one(&run).expect("the debug kernel boots and reports");
    eprintln!("{}", render(&outcome.verdict, Format::Human).unwrap_or_default());
    let check = outcome.verdict.checks.iter().find(|c| c.name == DEBUG_REPORTS_CHECK).expect("debug_reports check");
    let (status, message) = (check.status, format!("{}\n{}", check.message, check.detail.join("\n")));
    (outcome, status, message)
}

#[test]
fn slow_stock_debug_kernel_passes_seed_000() {
    let (outcome, status, message) = debug_run(&debug_kernel(None));
    // seed-000-4ch.toml [expect]: pass; and no report of KASAN, kmemleak, lockdep,
    // WARN or BUG names a mana frame.
    assert_eq!(status, CheckStatus::Pass, "{message}");
    assert_eq!(outcome.verdict.status, Status::Pass);
    assert!(outcome.report.debug.as_deref().is_some_and(|d| d.starts_with("kmemleak=")), "{:?}", outcome.report.debug);
}

/// A bug patch's debug run fails `debug_reports` with a report whose
/// headline starts `headline` and that names `mana` (a frame of mana.ko:
/// `irq_setup()` and `mana_gd_setup_irqs()` are static, the compiler may fold
/// them into their caller; or a MANA IRQ).
fn bug_patch_fails(patch: &str, headline: &str, mana: &str) {
    let (outcome, status, message) = debug_run(&debug_kernel(Some(patch)));
    assert_eq!(status, CheckStatus::Fail, "{message}");
    assert!(message.contains(headline) && message.contains(mana), "{message}");
    assert_eq!(outcome.verdict.status, Status::Fail);
}

#[test]
fn slow_leaked_irq_array_fails_debug_reports_naming_kmemleak() {
    bug_patch_fails("leak-irq-array", "kmemleak: unreferenced object", " [mana]");
}

/// The hints read SLUB's free poison (`slub_debug`); KASAN does not see
/// that read with Debian 12's GCC 12 (harness/src/verdict/debug_reports.rs).
#[test]
fn slow_freed_affinity_hint_fails_debug_reports_naming_the_poisoned_hint() {
    bug_patch_fails("freed-affinity-hint", "slub_debug: affinity_hint of IRQ", "(mana_q0@pci:");
}
