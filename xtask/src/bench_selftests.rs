//! `cargo xtask bench selftests`: what CI's selftest run costs. Seed 002 on
//! Debian's 7.3 (`7.x`) with `--tests quick` (the local-only tests, ping.py
//! and hw/toeplitz.py), the median of `runs` whole runs against the target
//! (a few minutes on 2 cores), with each program's guest seconds. Wall times
//! depend on the host and its load: a benchmark, never a test.

use anyhow::Result;
use harness::rig::kernel_choice::{self, KernelChoice};
use harness::rig::{self, SelftestsRequest};
use harness::text::plural;
use std::path::PathBuf;

/// Whole seconds of one quick run, at most.
const TARGET_S: f64 = 180.0;
/// The machine and kernel.
const FILE: &str = "seed-002";
const KERNEL: &str = "7.x";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Runs `runs` quick selftest runs (at least 1); returns false when the
/// median misses the target.
///
/// # Errors
/// A run's rig error.
pub fn run(runs: usize) -> Result<bool> {
    let choice: KernelChoice = KERNEL.parse()?;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../topologies").join(format!("{FILE}.toml"));
    let mut totals = Vec::new();
    for i in 0..runs.max(1) {
        if harness::children::interrupted() {
            break;
        }
        let mut req = kernel_choice::resolve(&choice, None, None)?.request(&path);
        req.selftests = Some(SelftestsRequest { patterns: vec!["quick".into()], ..SelftestsRequest::default() });
        let out = rig::run_one(&req)?;
        let total = out.timings.total.as_secs_f64();
        let programs: Vec<String> = out
            .verdict
            .selftests
            .iter()
            .flat_map(|s| s.programs.iter())
            .map(|p| format!("{} {:.0} s", p.file, p.seconds.unwrap_or(f64::NAN)))
            .collect();
        println!("  run {}: {total:.1} s ({:?}; guest: {})", i + 1, out.verdict.status, programs.join(", "));
        totals.push(total);
    }
    let m = median(totals.clone());
    println!(
        "{FILE}@{KERNEL} --tests quick: {m:.1} s (median of {}; target < {TARGET_S:.0} s): {}",
        plural(totals.len(), "run"),
        if m < TARGET_S { "met" } else { "MISSED" }
    );
    Ok(m < TARGET_S)
}
