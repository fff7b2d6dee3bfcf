//! `cargo xtask bench matrix`: the fast matrix, every topology file under
//! 96 vCPUs × the minimal kernels `6.1-min`, `6.12-min` and `7.x-min`, run as
//! `cargo xtask matrix` runs it (the host's cores as jobs), against a target
//! of 10 minutes on the 2-core build machine with the kernels cached (a
//! missing minimal kernel is built first, about 8 minutes each, and that is
//! not counted). Prints the wall time, the planned cost, how real time
//! compared with it, the shard split CI would use (`--shard K/N`, each
//! shard's cost) and the Markdown summary. Wall times depend on the host's
//! load: a benchmark, never a test.

use anyhow::{bail, Result};
use harness::cli::matrix_progress::Display;
use harness::matrix::kernels::{KernelRequest, Readiness};
use harness::matrix::oracle::ModelOracle;
use harness::matrix::pair_runner::{BootRunner, RigSettings};
use harness::matrix::progress::short_duration;
use harness::matrix::shard::Shard;
use harness::matrix::shard_run::{default_run_id, run_shard, shard_jobs, Hooks, ShardRequest};
use harness::matrix::spec::{expand, read_inputs, MatrixSpec};
use harness::matrix::summary;
use harness::text::{plural, plural_as};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The target for the whole fast matrix, seconds (README *Patch CI*).
const TARGET_S: f64 = 600.0;
/// Topologies from this many vCPUs on are not in the fast matrix.
const FAST_BELOW_VCPUS: u32 = 96;
/// The fast matrix's kernels.
pub const FAST_KERNELS: [&str; 3] = ["6.1-min", "6.12-min", "7.x-min"];
/// The shard counts whose split is printed.
const SPLITS: [u32; 3] = [2, 3, 4];

/// Options of the matrix section.
pub struct Options {
    /// Kernels (default [`FAST_KERNELS`]).
    pub kernels: Vec<String>,
    /// Where the outputs go (default `target/bench-matrix`).
    pub out: Option<PathBuf>,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Run the fast matrix; `Ok(true)` when every pair passed within the target.
///
/// # Errors
/// No topologies, a kernel name that does not parse, or the outputs cannot be written.
pub fn run(opts: &Options) -> Result<bool> {
    let kernels: Vec<KernelRequest> =
        opts.kernels.iter().map(|k| Ok(KernelRequest::Choice(k.parse()?))).collect::<Result<_>>()?;
    let files = expand(&[repo().join("topologies")])?;
    let inputs: Vec<_> = read_inputs(&files)
        .into_iter()
        .filter(|i| i.error.is_none() && i.vcpus.is_some_and(|v| v < FAST_BELOW_VCPUS))
        .collect();
    if inputs.is_empty() {
        bail!("no topology file under {FAST_BELOW_VCPUS} vCPUs in topologies/");
    }
    let spec = MatrixSpec {
        inputs,
        kernels: kernels.iter().map(KernelRequest::spec).collect::<Result<_, _>>()?,
        oracle: "model".into(),
        shards: 1,
        random: None,
        inject: Vec::new(),
        selftests: None,
        archs: Vec::new(),
    };
    let pairs = spec.plan();
    let planned: f64 = pairs.iter().map(|p| p.cost_s).sum();
    println!(
        "{} under {FAST_BELOW_VCPUS} vCPUs × {} = {}; planned {} of guest time (load average {})",
        plural_as(spec.inputs.len(), "topology", "topologies"),
        opts.kernels.join(", "),
        plural(pairs.len(), "pair"),
        short_duration(Duration::from_secs_f64(planned)),
        crate::bench_boot::load_average()
    );
    for n in SPLITS {
        let split = MatrixSpec { shards: n, ..spec.clone() };
        let costs: Vec<String> = (1..=n)
            .map(|k| {
                let p = split.shard_plan(Shard { index: k, count: n });
                format!("{k}/{n} {:.0} s ({})", p.iter().map(|p| p.cost_s).sum::<f64>(), plural(p.len(), "pair"))
            })
            .collect();
        println!("  --shard K/{n}: {}", costs.join(", "));
    }
    let out = opts.out.clone().unwrap_or_else(|| repo().join("target/bench-matrix"));
    std::fs::create_dir_all(out.join("console"))?;
    let jobs = shard_jobs(&spec, Shard::WHOLE, None, harness::accel::host_cores());
    let runner = BootRunner {
        settings: RigSettings {
            accel: harness::accel::AccelChoice::Tcg,
            cache_dir: None,
            mem_per_node_mib: 256,
            deadline: Duration::from_secs(900),
            slow_deadline: Duration::from_secs(3600),
            speedups: harness::qemu::Speedups::ALL,
            extra_cmdline: Vec::new(),
            console_dir: Some(out.join("console")),
            inject: Vec::new(),
            selftests: None,
        },
    };
    let mut display = Display::new(&pairs, jobs.limits.jobs);
    let _deferral = harness::children::defer_exit();
    let stop = harness::children::interrupted;
    let req = ShardRequest {
        spec: &spec,
        kernels: &kernels,
        shard: Shard::WHOLE,
        jobs,
        run_id: default_run_id(),
        readiness: Readiness::Boot,
        cache_dir: None,
        search_root: None,
    };
    // Kernels are made ready (built when missing) before the clock starts.
    let t0 = Instant::now();
    let cell = std::cell::RefCell::new(&mut display);
    let report = run_shard(
        &req,
        &runner,
        &ModelOracle,
        Hooks { on_event: &mut |e| cell.borrow_mut().event(e), on_note: &mut |l| cell.borrow().note(l), stop: &stop },
    );
    display.finish();
    let whole = t0.elapsed().as_secs_f64();
    let prepare: f64 = report.header.kernels.iter().filter_map(|k| k.prepare_s).sum();
    let matrix_s = (whole - prepare).max(0.0);
    let text = summary::render(&report);
    std::fs::write(out.join("summary.md"), &text)?;
    std::fs::write(out.join("matrix.json"), serde_json::to_string_pretty(&report)? + "\n")?;
    println!("{text}");
    let guest: f64 = report.pairs.iter().filter_map(|r| r.duration_s).sum();
    let (pass, fail, err, not_run) = report.counts();
    let met = matrix_s <= TARGET_S;
    println!(
        "matrix: {} (kernels ready in {:.0} s, not counted) for {} at {}: target ≤ {} {}; \
         guest runs {:.0} s in all, {:.2}× the plan's {:.0} s; {pass} passed, {fail} failed, {}, {not_run} not run{}",
        short_duration(Duration::from_secs_f64(matrix_s)),
        prepare,
        plural(report.pairs.len(), "pair"),
        plural(req.jobs.limits.jobs, "job"),
        short_duration(Duration::from_secs_f64(TARGET_S)),
        if met { "met" } else { "MISSED" },
        guest,
        if planned > 0.0 { guest / planned } else { f64::NAN },
        planned,
        plural(err, "rig error"),
        report.skipped_note()
    );
    println!("wrote {} and {}", out.join("summary.md").display(), out.join("matrix.json").display());
    Ok(met && fail == 0 && err == 0 && not_run == 0)
}
