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

/// One arm64 row: a topology file and the Debian kernels it runs on.
struct Row {
    /// Topology file stem under topologies/.
    file: &'static str,
    /// `--kernel` choices, each a row of the table.
    kernels: &'static [&'static str],
    /// Target for the whole run on an otherwise idle 2-core host, seconds
    /// (README, *arm64 guests*).
    target_s: f64,
}

const ROWS: &[Row] = &[Row { file: "arm64/seed-002-no-smt", kernels: &["6.12", "7.x"], target_s: 30.0 }];

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
        let path = crate::bench_boot::repo().join("topologies").join(format!("{}.toml", row.file));
        for kernel in row.kernels {
            if harness::children::interrupted() {
                break;
            }
            let name = format!("{}@{kernel}", row.file);
            let (mut whole, mut cpu, mut last) = (Vec::new(), Vec::new(), None);
            for i in 0..opts.runs.max(1) {
                match run_once(&path, kernel, Speedups::ALL, deadline(row)) {
                    Ok(m) => {
                        println!(
                            "  {name} run {}: whole {:.1} s, boot to report {:.1} s, QEMU CPU {:.1} s, load {}",
                            i + 1,
                            m.whole,
                            m.to_report,
                            m.qemu_cpu,
                            load_average()
                        );
                        whole.push(m.whole);
                        cpu.push(m.qemu_cpu);
                        last = Some(m);
                    }
                    Err(e) => {
                        println!("{name}: {e:#}");
                        ok = false;
                        break;
                    }
                }
            }
            let Some(m) = last else {
                table.push(format!("| {name} | ≤ {:.0} s | not run (see above) | |", row.target_s));
                continue;
            };
            let (n, med, cpu_med) = (whole.len(), median(whole), median(cpu));
            println!("{name}: {} ({}), whole run median {med:.1} s of {}", m.accel, m.verdict, plural(n, "run"));
            table.push(format!(
                "| {name} | ≤ {:.0} s | {med:.1} s {} (QEMU CPU {cpu_med:.1} s, {}) | {} |",
                row.target_s,
                if med <= row.target_s { "met" } else { "MISSED" },
                plural(n, "run"),
                baseline.versus(&name, med),
            ));
            measured.insert(name, med);
        }
    }
    println!("\n| run | target | whole run (median) | vs baseline |");
    println!("| --- | --- | --- | --- |");
    for l in &table {
        println!("{l}");
    }
    if harness::children::interrupted() {
        println!("interrupted: the table is incomplete and the baseline was not written");
        return Ok(false);
    }
    if opts.update_baseline {
        baseline.write_merged(measured)?;
    }
    Ok(ok)
}
