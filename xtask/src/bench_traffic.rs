//! `cargo xtask bench traffic`: what `run --traffic` costs. Seed 002 on the
//! fast path (`6.12-min`), each run without traffic followed at once by one
//! with the default traffic (twice the channel count of flows,
//! `harness::traffic::DEFAULT_BYTES` each way), the median of the pairs' ratios against the target (README *Traffic*: under
//! twice the run without traffic), with the guest's time in the traffic
//! phase. Wall times depend on the host and its load: a benchmark, never a
//! test.

use anyhow::Result;
use harness::rig;
use harness::rig::kernel_choice::{self, KernelChoice};
use harness::text::plural;
use harness::traffic::TrafficOptions;
use std::path::PathBuf;

/// Whole run with traffic / whole run without, at most.
const TARGET: f64 = 2.0;
/// The machine and kernel.
const FILE: &str = "seed-002";
const KERNEL: &str = "6.12-min";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// One run: whole seconds, guest seconds from the traffic's start to its
/// end (NaN without traffic), the verdict.
fn once(traffic: bool) -> Result<(f64, f64, String)> {
    let choice: KernelChoice = KERNEL.parse()?;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../topologies").join(format!("{FILE}.toml"));
    let mut req = kernel_choice::resolve(&choice, None, None)?.request(&path);
    req.traffic = traffic.then(TrafficOptions::default);
    let out = rig::run_one(&req)?;
    let t = &out.guest_times;
    let phase = match (t.get("traffic"), t.get("traffic-end")) {
        (Some(a), Some(b)) => b - a,
        _ => f64::NAN,
    };
    Ok((out.timings.total.as_secs_f64(), phase, format!("{:?}", out.verdict.status)))
}

/// Runs `runs` pairs (at least 5); returns false when a run failed or the target was missed.
///
/// # Errors
/// A run's rig error.
pub fn run(runs: usize) -> Result<bool> {
    let mut ratios = Vec::new();
    let (mut plain, mut with, mut phases) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs.max(5) {
        if harness::children::interrupted() {
            break;
        }
        let (p, _, pv) = once(false)?;
        let (w, phase, wv) = once(true)?;
        println!("  pair {}: without {p:.2} s ({pv}), with --traffic {w:.2} s ({wv}; traffic phase {phase:.2} s guest), {:.2}×", i + 1, w / p);
        ratios.push(w / p);
        plain.push(p);
        with.push(w);
        phases.push(phase);
    }
    let ratio = median(ratios.clone());
    let (lo, hi) = ratios.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    println!(
        "{FILE}@{KERNEL}: without traffic {:.1} s, with --traffic {:.1} s (medians; traffic phase {:.2} s guest): {ratio:.2}× {} \
         (median of {}, range {lo:.2}-{hi:.2}×; target < {TARGET}×)",
        median(plain),
        median(with),
        median(phases),
        if ratio < TARGET { "met" } else { "MISSED" },
        plural(ratios.len(), "pair")
    );
    Ok(ratio < TARGET)
}
