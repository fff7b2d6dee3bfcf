//! `cargo xtask bench boot`: boot-to-verdict wall time of real runs (QEMU +
//! kernel + the emulated NIC) on the fast path (the minimal kernel,
//! `6.12-min`, with the speed-ups) and on Debian's 6.12 cloud kernel, the
//! fast path also without the speed-ups and against a bare boot of the same
//! kernel and machine (no NIC, no modules), printed as the targets table of
//! docs/boot-speed.md and compared with the committed baseline
//! `benches/baseline.json`. Wall times depend on the host and its load: this
//! is a benchmark, never a test.

use crate::boot_split::{self, Split, Stamps};
use anyhow::{Context, Result};
use harness::qemu::{self, BootRequest, Speedups};
use harness::rig;
use harness::rig::kernel_choice::{self, KernelChoice};
use harness::text::plural;
use harness::topology::Topology;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One row of the targets table.
struct Row {
    /// Topology file stem under topologies/.
    file: &'static str,
    /// Target for the whole run on the fast path, seconds (docs/boot-speed.md,
    /// *Targets*: the second round of boot-speed targets).
    target_s: f64,
    /// Target for the whole run on Debian's kernel, seconds, where the round
    /// set one (seed 002 only).
    distro_target_s: Option<f64>,
    /// Deadline of the comparison runs, seconds: Debian's kernel, and the
    /// run without the speed-ups where the row has one (`no_plain` is
    /// `None`); what they took at the round-1 measurements, with room for a
    /// slow phase of the host (README, *Boot speed*).
    comparison_deadline_s: f64,
    /// Only with `--slow`.
    slow: bool,
    /// Why the A/B run without the speed-ups is left out of this row, when it
    /// is: a run that cannot reach its report before the deadline only costs
    /// the deadline.
    no_plain: Option<&'static str>,
    /// At least this many runs (each paired with a bare boot) whatever `--runs`
    /// says: a 2-s boot moves by ±0.2 s from one boot to the next here, so one
    /// pair's ratio moves by ±0.15 and the median needs more pairs than a
    /// minute-long row.
    min_runs: usize,
}

const ROWS: &[Row] = &[
    Row {
        file: "seed-002",
        target_s: 1.5,
        distro_target_s: Some(3.0),
        comparison_deadline_s: 60.0,
        slow: false,
        no_plain: None,
        min_runs: 9,
    },
    Row {
        file: "seed-001-azure-128",
        target_s: 10.0,
        distro_target_s: None,
        comparison_deadline_s: 180.0,
        slow: true,
        no_plain: Some(NO_PLAIN_LARGE),
        min_runs: 1,
    },
    Row {
        file: "seed-003-epyc-7763",
        target_s: 30.0,
        distro_target_s: None,
        comparison_deadline_s: 360.0,
        slow: true,
        no_plain: Some(NO_PLAIN_LARGE),
        min_runs: 1,
    },
];

/// Why the large rows have no A/B run without the speed-ups: without
/// `cpuhp.parallel=0` and the CPU flags the bring-up alone spins for minutes
/// (docs/boot-speed.md, *What made 128 and 256 CPUs slow*); the runs of
/// 2026-12-03 ended at their deadlines (180 s at 128 vCPUs) or were refused.
const NO_PLAIN_LARGE: &str = "not run: past its deadline at this size (docs/boot-speed.md)";

/// Target for whole run / bare boot of the same kernel and machine (second round:
/// the rig's own cost under 10 %).
const OVERHEAD_TARGET: f64 = 1.1;

/// Options of the boot section.
pub struct Options {
    /// Also the 128- and 256-CPU rows.
    pub slow: bool,
    /// Runs per measurement (the median is reported).
    pub runs: usize,
    /// Write the medians measured into the baseline file.
    pub update_baseline: bool,
    /// The guests' architecture (main.rs runs `bench_boot_arm64`'s rows for arm64).
    pub arch: harness::topology::Arch,
}

pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn baseline_path() -> PathBuf {
    repo().join("benches/baseline.json")
}

/// benches/baseline.json: the median whole-run seconds of each `file@kernel`.
pub(crate) struct BaselineFile(BTreeMap<String, f64>);

impl BaselineFile {
    /// The committed baseline (empty when the file is missing).
    pub(crate) fn read() -> Result<BaselineFile> {
        Ok(BaselineFile(match std::fs::read_to_string(baseline_path()) {
            Ok(t) => serde_json::from_str(&t).with_context(|| format!("{}", baseline_path().display()))?,
            Err(_) => BTreeMap::new(),
        }))
    }

    /// `12.3 s (+5 %)` against `name`'s baseline, `-` without one.
    pub(crate) fn versus(&self, name: &str, measured: f64) -> String {
        self.0.get(name).map_or("-".to_string(), |b| format!("{b:.1} s ({:+.0} %)", (measured / b - 1.0) * 100.0))
    }

    /// Write the baseline with `measured` merged in.
    pub(crate) fn write_merged(self, measured: BTreeMap<String, f64>) -> Result<()> {
        let mut merged = self.0;
        merged.extend(measured);
        let text = serde_json::to_string_pretty(&merged)? + "\n";
        std::fs::write(baseline_path(), text).with_context(|| format!("{}", baseline_path().display()))?;
        println!("baseline written to {}", baseline_path().display());
        Ok(())
    }
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// One measured run: whole-run seconds and the phase breakdown.
pub(crate) struct Measured {
    pub(crate) whole: f64,
    /// CPU seconds (user + system) of the run's child processes (QEMU): less
    /// sensitive to other load on the host than wall time.
    pub(crate) qemu_cpu: f64,
    pub(crate) to_report: f64,
    /// The rig's phases, host wall clock.
    timings: rig::RunTimings,
    guest: BTreeMap<String, f64>,
    pub(crate) accel: String,
    pub(crate) verdict: String,
}

/// The fast path's kernel: Debian's 6.12 source with manarig's minimal config.
const FAST_KERNEL: &str = "6.12-min";
/// The distro path's kernel: Debian's 6.12 cloud kernel.
const DISTRO_KERNEL: &str = "6.12";

fn resolve(kernel: &str) -> Result<kernel_choice::ResolvedKernel> {
    let choice: KernelChoice = kernel.parse()?;
    Ok(kernel_choice::resolve(&choice, None, None)?)
}

/// Deadline of the fast path's runs: they must reach the report.
const FAST_DEADLINE: Duration = Duration::from_secs(3600);

/// Deadline of the comparison runs (no speed-ups, Debian's kernel): the row's
/// [`Row::comparison_deadline_s`]. Without the speed-ups seed 003 did not
/// report within 17 minutes; the column then says so instead of holding the
/// bench for an hour.
fn comparison_deadline(row: &Row) -> Duration {
    Duration::from_secs_f64(row.comparison_deadline_s)
}

/// A target in seconds as the table writes it: `1.5`, `10`.
fn secs(s: f64) -> String {
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

/// The first line of an error with its causes, at most 160 characters (the
/// full text carries console tails).
fn short(e: &anyhow::Error) -> String {
    let text = format!("{e:#}");
    text.lines().next().unwrap_or_default().chars().take(160).collect()
}

pub(crate) fn run_once(path: &Path, kernel: &str, speedups: Speedups, deadline: Duration) -> Result<Measured> {
    let mut req = resolve(kernel)?.request(path);
    req.deadline = deadline;
    req.speedups = speedups;
    let cpu0 = children_cpu_s();
    let out = rig::run_one(&req)?;
    Ok(Measured {
        whole: out.timings.total.as_secs_f64(),
        qemu_cpu: children_cpu_s() - cpu0,
        to_report: out.timings.boot_to_report.as_secs_f64(),
        timings: out.timings,
        guest: out.guest_times,
        accel: out.observed.accel.clone(),
        verdict: format!("{:?}", out.verdict.status),
    })
}

/// A bare boot, timed like a run: the same kernel, machine and speed-ups,
/// no NIC, no modules.
struct Bare {
    /// Seconds from reading the topology to QEMU stopped after the report.
    whole: f64,
    /// Seconds before [`qemu::boot`]: the topology, the cache, the kernel.
    before: f64,
    /// CPU seconds (user + system) of its child process (QEMU).
    qemu_cpu: f64,
    /// The boot's own phases.
    boot: qemu::BootOutcome,
}

fn bare_boot(path: &Path, kernel: &str, speedups: Speedups) -> Result<Bare> {
    let cpu0 = children_cpu_s();
    let start = std::time::Instant::now();
    let topo = Topology::load(path)?;
    let prov = rig::provisioned(None)?;
    let k = resolve(kernel)?;
    let kernel = k.install(&prov)?;
    let spec = rig::machine::machine_spec(&topo, harness::accel::AccelChoice::Tcg, 256)?;
    let mut req = BootRequest::new(&spec, kernel, &prov.busybox.binary);
    req.speedups = speedups;
    req.deadline = Duration::from_secs(3600);
    let before = start.elapsed().as_secs_f64();
    let boot = qemu::boot(&prov.qemu, &req)?;
    Ok(Bare { whole: start.elapsed().as_secs_f64(), before, qemu_cpu: children_cpu_s() - cpu0, boot })
}

fn breakdown(m: &Measured) -> String {
    let g = |k: &str| m.guest.get(k).copied().unwrap_or(f64::NAN);
    // Before the guest clock starts: QEMU start, firmware, boot loader,
    // decompression (host seconds to the report minus the guest's uptime then).
    let pre = m.to_report - g("report");
    format!(
        "before the guest clock (firmware, loader, decompression, early setup) {pre:.1} s | kernel to /init {:.1} s | modules {:.1} s | mana probe {:.1} s | \
         ifup+vectors {:.1} s | report {:.1} s | host (provision, device, verdict) {:.1} s",
        g("init"),
        g("modules") - g("init"),
        g("probe") - g("modules"),
        g("settled") - g("probe"),
        g("report") - g("settled"),
        m.whole - m.to_report,
    )
}

/// Run the boot section; returns false when a run failed.
///
/// # Errors
/// Reading or writing the baseline file.
pub fn run(opts: &Options) -> Result<bool> {
    let prov = rig::provisioned(None)?;
    println!("QEMU: {}", prov.qemu.version_line);
    println!("host cores: {}; load average: {}", harness::accel::host_cores(), load_average());
    let baseline = BaselineFile::read()?;
    let mut measured: BTreeMap<String, f64> = BTreeMap::new();
    let mut table = Vec::new();
    let mut ok = true;
    for row in ROWS.iter().filter(|r| opts.slow || !r.slow) {
        if harness::children::interrupted() {
            break;
        }
        let path = repo().join("topologies").join(format!("{}.toml", row.file));
        let name = format!("{}@{FAST_KERNEL}", row.file);
        let mut fast = Vec::new();
        let mut cpu = Vec::new();
        let mut last = None;
        // Each run is followed at once by a bare boot: this host's speed drifts
        // by ±20 % over minutes, so the overhead is the median of the pairs'
        // ratios rather than a ratio of medians taken minutes apart.
        // (whole run, bare boot) seconds.
        let mut pairs: Vec<(f64, f64)> = Vec::new();
        let mut splits: Vec<(Split, Split)> = Vec::new();
        // (run, bare boot) CPU seconds of the children: QEMU and the device processes.
        let mut cpu_pairs: Vec<(f64, f64)> = Vec::new();
        let mut bare_error = None;
        let runs = opts.runs.max(row.min_runs).max(1);
        for _ in 0..runs {
            match run_once(&path, FAST_KERNEL, Speedups::ALL, FAST_DEADLINE) {
                Ok(m) => {
                    fast.push(m.whole);
                    cpu.push(m.qemu_cpu);
                    match bare_boot(&path, FAST_KERNEL, Speedups::ALL) {
                        Ok(bare) => {
                            let b = bare.whole;
                            let split = (
                                Split::of(&Stamps::of_run(&m.timings, &m.guest)),
                                Split::of(&Stamps::of_bare(bare.before, &bare.boot)),
                            );
                            println!(
                                "  {name} run {}: whole {:.2} s, bare boot {b:.2} s, {:.2}×; CPU {:.2} vs {:.2} s; \
                                 run − bare: {}",
                                fast.len(),
                                m.whole,
                                m.whole / b,
                                m.qemu_cpu,
                                bare.qemu_cpu,
                                boot_split::pair_line(&split.0, &split.1)
                            );
                            pairs.push((m.whole, b));
                            cpu_pairs.push((m.qemu_cpu, bare.qemu_cpu));
                            splits.push(split);
                        }
                        Err(e) => bare_error = Some(e),
                    }
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
            table.push(format!("| {name} | ≤ {} s | not run (see above) | | |", secs(row.target_s)));
            continue;
        };
        let med = median(fast);
        let cpu_med = median(cpu);
        println!(
            "{name}: {} ({}), whole run median {med:.1} s of {}, QEMU CPU {cpu_med:.1} s",
            m.accel,
            m.verdict,
            plural(runs, "run")
        );
        println!("  {}", breakdown(&m));
        if !splits.is_empty() {
            println!(
                "  where the time goes, median (range) of {}, host seconds (load average {}):",
                plural(splits.len(), "pair"),
                load_average()
            );
            for line in boot_split::table(&splits) {
                println!("  {line}");
            }
            let cpu = |f: &dyn Fn(&(f64, f64)) -> f64| boot_split::spread(cpu_pairs.iter().map(f));
            if let (Some(r), Some(b), Some(d)) = (cpu(&|p| p.0), cpu(&|p| p.1), cpu(&|p| p.0 - p.1)) {
                println!(
                    "  CPU of QEMU and the device processes (user + system): run {:.2} s, bare boot {:.2} s, \
                     run − bare {:+.2} s ({:+.2} to {:+.2})",
                    r.0, b.0, d.0, d.1, d.2
                );
            }
            println!(
                "  the run adds (median of {}, run − bare, largest first): {}",
                plural(splits.len(), "pair"),
                boot_split::largest_added(&splits, 0.02)
            );
        }
        let plain_s = match row.no_plain {
            Some(why) => why.to_string(),
            None => match run_once(&path, FAST_KERNEL, Speedups::NONE, comparison_deadline(row)) {
                Ok(p) => format!("{:.1} s, QEMU CPU {:.1} s", p.whole, p.qemu_cpu),
                Err(e) => format!("failed: {}", short(&e)),
            },
        };
        let distro = run_once(&path, DISTRO_KERNEL, Speedups::ALL, comparison_deadline(row));
        let distro_s = distro.as_ref().map_or_else(
            |e| format!("failed: {}", short(e)),
            |d| {
                let target = row.distro_target_s.map_or_else(String::new, |t| {
                    format!(", target ≤ {} s: {}", secs(t), if d.whole <= t { "met" } else { "MISSED" })
                });
                format!("{:.1} s, QEMU CPU {:.1} s ({}){target}", d.whole, d.qemu_cpu, d.verdict)
            },
        );
        if let Ok(d) = &distro {
            println!("{}@{DISTRO_KERNEL}: {}\n  {}", row.file, d.accel, breakdown(d));
        }
        let overhead = match (&bare_error, pairs.is_empty()) {
            (Some(e), _) => format!("bare boot failed: {}", short(e)),
            (None, true) => "no bare boot".to_string(),
            (None, false) => {
                let ratios: Vec<f64> = pairs.iter().map(|(w, b)| w / b).collect();
                let (lo, hi) = ratios.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
                let ratio = median(ratios);
                format!(
                    "{ratio:.2}× {} (median of {} run/bare pairs, which range over {lo:.2}-{hi:.2}×; the run adds a median {:.2} s \
                     to a bare boot of median {:.1} s; target ≤ {OVERHEAD_TARGET}×)",
                    if ratio <= OVERHEAD_TARGET { "met" } else { "MISSED" },
                    pairs.len(),
                    median(pairs.iter().map(|(w, b)| w - b).collect()),
                    median(pairs.iter().map(|(_, b)| *b).collect()),
                )
            }
        };
        let base = baseline.versus(&name, med);
        table.push(format!(
            "| {name} | ≤ {} s | {med:.1} s {} (QEMU CPU {cpu_med:.1} s) | without speed-ups {plain_s} | Debian {DISTRO_KERNEL} kernel {distro_s} | rig/bare {overhead} | baseline {base} |",
            secs(row.target_s),
            if med <= row.target_s { "met" } else { "MISSED" },
        ));
        measured.insert(name, med);
    }
    let header = "| run | target | with speed-ups (median) | A/B | distro kernel | overhead | vs baseline |";
    finish(header, &table, baseline, measured, opts.update_baseline).map(|kept| ok && kept)
}

/// Prints a bench's markdown table (`header`, its separator, the `rows`) and,
/// when asked, merges `measured` into `baseline`. False when the bench was
/// interrupted: runs after the signal failed at once, so their columns mean
/// nothing and the baseline is left as it was.
///
/// # Errors
/// The baseline file cannot be written.
pub(crate) fn finish(
    header: &str,
    rows: &[String],
    baseline: BaselineFile,
    measured: BTreeMap<String, f64>,
    update_baseline: bool,
) -> Result<bool> {
    let columns = header.matches('|').count().saturating_sub(1);
    println!("\n{header}");
    println!("|{}", " --- |".repeat(columns));
    for l in rows {
        println!("{l}");
    }
    if harness::children::interrupted() {
        println!("interrupted: the table is incomplete and the baseline was not written");
        return Ok(false);
    }
    if update_baseline {
        baseline.write_merged(measured)?;
    }
    Ok(true)
}

/// User + system CPU seconds of reaped children so far (getrusage RUSAGE_CHILDREN).
fn children_cpu_s() -> f64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one rusage into the pointer, which is valid for it.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, ru.as_mut_ptr()) };
    if rc != 0 {
        return f64::NAN;
    }
    // SAFETY: getrusage returned 0, so it filled the struct (it was zeroed before anyway).
    let ru = unsafe { ru.assume_init() };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}
