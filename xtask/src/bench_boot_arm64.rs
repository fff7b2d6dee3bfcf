//! `cargo xtask bench boot --arch arm64`: boot-to-verdict wall time of arm64
//! guests (qemu-system-aarch64 under TCG, UEFI, Debian's arm64 cloud
//! kernels) on seed 002's machine without SMT
//! (topologies/arm64/seed-002-no-smt.toml), printed as README's arm64 speed
//! table and compared with benches/baseline.json (keys
//! `arm64/seed-002-no-smt@6.12`, …). No bare boot and no run without the
//! speed-ups here: the x86 rows measure the rig's own overhead, which is the
//! same code on arm64; this section measures what TCG emulating arm64 costs.
//! Wall times depend on the host and its load: a benchmark, never a test.

use crate::bench_boot::{load_average, median, run_once, BaselineFile, Options};
use anyhow::Result;
use harness::qemu::Speedups;
use harness::text::plural;
use std::collections::BTreeMap;
use std::time::Duration;

/// One row of the table: a topology file on one Debian kernel.
struct Row {
    /// Topology file stem under topologies/.
    file: &'static str,
    /// The `--kernel` choice.
    kernel: &'static str,
    /// Target for the whole run on the 2-core build host, seconds (README,
    /// *arm64 guests*): a bare 8-vCPU arm64 boot through UEFI took 24.8 s
    /// there, and QEMU's CPU time for the whole run is about 16.5 s on 6.12
    /// and 21 s on 7.x (2026-12-03), so 30 s and 40 s leave the rig a few seconds.
    target_s: f64,
}

const ROWS: &[Row] = &[
    Row { file: "arm64/seed-002-no-smt", kernel: "6.12", target_s: 30.0 },
    Row { file: "arm64/seed-002-no-smt", kernel: "7.x", target_s: 40.0 },
];

/// Deadline of one arm64 run: 10 times the target (TCG on a loaded host).
fn deadline(row: &Row) -> Duration {
    Duration::from_secs_f64(10.0 * row.target_s)
}

/// Run the arm64 boot rows; returns false when a run failed.
///
/// # Errors
/// Reading or writing the baseline file.
pub fn run(opts: &Options) -> Result<bool> {
    println!("host cores: {}; load average: {}", harness::accel::host_cores(), load_average());
    let baseline = BaselineFile::read()?;
    let mut measured: BTreeMap<String, f64> = BTreeMap::new();
    let mut table = Vec::new();
    let mut ok = true;
    for row in ROWS {
        if harness::children::interrupted() {
            break;
        }
        let name = format!("{}@{}", row.file, row.kernel);
        match measure(row, &name, opts.runs.max(1)) {
            Some((med, cpu_med, n)) => {
                table.push(format!(
                    "| {name} | ≤ {:.0} s | {med:.1} s {} (QEMU CPU {cpu_med:.1} s, {}) | {} |",
                    row.target_s,
                    if med <= row.target_s { "met" } else { "MISSED" },
                    plural(n, "run"),
                    baseline.versus(&name, med),
                ));
                measured.insert(name, med);
            }
            None => {
                ok = false;
                table.push(format!("| {name} | ≤ {:.0} s | not run (see above) | |", row.target_s));
            }
        }
    }
    let header = "| run | target | whole run (median) | vs baseline |";
    crate::bench_boot::finish(header, &table, baseline, measured, opts.update_baseline).map(|kept| ok && kept)
}

/// `runs` runs of `row`, each printed: the medians of the whole run and of
/// QEMU's CPU time, and how many ran; `None` when a run failed (said above).
fn measure(row: &Row, name: &str, runs: usize) -> Option<(f64, f64, usize)> {
    let path = crate::bench_boot::repo().join("topologies").join(format!("{}.toml", row.file));
    let (mut whole, mut cpu) = (Vec::new(), Vec::new());
    for i in 0..runs {
        match run_once(&path, row.kernel, Speedups::ALL, deadline(row)) {
            Ok(m) => {
                println!(
                    "  {name} run {}: whole {:.1} s, boot to report {:.1} s, QEMU CPU {:.1} s, {} ({}), load {}",
                    i + 1,
                    m.whole,
                    m.to_report,
                    m.qemu_cpu,
                    m.accel,
                    m.verdict,
                    load_average()
                );
                whole.push(m.whole);
                cpu.push(m.qemu_cpu);
            }
            Err(e) => {
                println!("{name}: {e:#}");
                return None;
            }
        }
    }
    let n = whole.len();
    Some((median(whole), median(cpu), n))
}
