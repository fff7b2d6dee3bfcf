//! The `matrix` and `matrix-merge` subcommands.

use super::matrix_output::{emit, OutputArgs};
use super::matrix_progress::Display;
use super::run::RigOptions;
use super::Exit;
use crate::matrix::kernels::{KernelRequest, Readiness};
use crate::matrix::merge::merge;
use crate::matrix::oracle::Oracle;
use crate::matrix::other_oracles::BaselineOracle;
use crate::matrix::pair_runner::{BootRunner, ModelRunner, PairRunner, RigSettings};
use crate::matrix::progress::short_duration;
use crate::matrix::report::{MatrixReport, Overall};
use crate::matrix::search::write_random;
use crate::matrix::shard::Shard;
use crate::matrix::shard_run::{default_run_id, run_shard, shard_jobs, Hooks, ShardRequest};
use crate::matrix::spec::{expand, read_inputs, MatrixSpec, RandomSpec};
use crate::rig::kernel_choice::KernelChoice;
use crate::text::plural;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `matrix`.
#[derive(Debug, clap::Args)]
pub struct MatrixArgs {
    /// Topology files, or folders whose *.toml files are taken (by name).
    /// (default: topologies, unless --random is given)
    #[arg(value_name = "TOPOLOGY|DIR")]
    pub inputs: Vec<PathBuf>,
    /// Kernels, comma-separated or repeated, as `run` names them: 6.1, 6.12, 7.x
    /// (Debian's), 6.1-min, 6.12-min, 7.x-min (minimal builds), build:KEY,
    /// image:BZIMAGE:MODULES_DIR (default 6.12-min unless --source is given).
    #[arg(long, value_delimiter = ',', value_name = "K[,K2...]")]
    pub kernel: Vec<KernelChoice>,
    /// Build this source once with `kernel build`'s recipe (a tree, or
    /// debian:linux-source-6.1|6.12|7.3) and run the matrix on it too.
    #[arg(long, value_name = "SRC")]
    pub source: Option<String>,
    /// The patch series for --source (a folder of *.patch or an mbox).
    #[arg(long, value_name = "DIR|MBOX", requires = "source")]
    pub patches: Option<PathBuf>,
    /// A commit range of the git tree --source: the series A..B applied to A's
    /// tree (as `git format-patch A..B` writes it), or A's tree alone (`--commits A`:
    /// a baseline K0 built the same way). KCIDB's checkout gets A's commit hash.
    #[arg(long, value_name = "A..B|A", requires = "source", conflicts_with = "patches")]
    pub commits: Option<String>,
    /// The --source kernel's name in pair names (default: patched, or source without --patches).
    #[arg(long, value_name = "NAME", requires = "source")]
    pub label: Option<String>,
    /// Guests at once (default: the host's cores; lowered, with a note, beyond
    /// 128 vCPUs per host core in all).
    #[arg(long, value_name = "J")]
    pub jobs: Option<u32>,
    /// Run only shard K of N (cost-balanced, the same split on every machine).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// Who judges each pair: model (the kernel reference model), properties
    /// (rules any sane spreading keeps, no model), baseline (each pair also runs
    /// on --baseline K0: not worse than K0). Default: the model where the
    /// kernel's driver source is recognised, properties otherwise (auto).
    #[arg(long, value_name = "model|properties|baseline")]
    pub oracle: Option<String>,
    /// The baseline kernel K0 of --oracle baseline (named as --kernel names them).
    #[arg(long, value_name = "K0")]
    pub baseline: Option<KernelChoice>,
    /// Also run N random topologies (written to OUT/random/; those the guest
    /// disagrees with the oracle on are shrunk into OUT/found/). Needs --out;
    /// N is at least 1 (a matrix of 0 random topologies would pass having run nothing).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub random: Option<u32>,
    /// Make every pair's emulated NIC misbehave, as `run --inject SPEC`
    /// (repeatable): each pair is then judged by `driver_survived` alone (the
    /// model oracle's verdict; other oracles are refused). Part of the
    /// matrix's spec: shards with other injections do not merge.
    #[arg(long = "inject", value_name = "SPEC")]
    pub inject: Vec<mana_device_api::inject::InjectSpec>,
    /// Also run the kernel's drivers/net selftests in every pair's guest, as
    /// `selftests` does (each case a check, judged against the kernel series'
    /// baseline). Part of the matrix's spec.
    #[arg(long)]
    pub selftests: bool,
    /// Which selftests (as `selftests --tests`; default: the rig's set).
    #[arg(long, value_name = "GLOB,...", value_delimiter = ',', requires = "selftests")]
    pub tests: Vec<String>,
    /// The seed of --random (same seed, same topologies).
    #[arg(long, value_name = "S", default_value_t = 0, requires = "random")]
    pub seed: u64,
    /// The most CPUs of a random topology (at least 1).
    #[arg(
        long,
        value_name = "C",
        default_value_t = crate::matrix::search::DEFAULT_MAX_CPUS,
        requires = "random",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_cpus: u32,
    /// Only make the kernels bootable (provision, build --source and the -min
    /// kernels when missing) and exit: a CI job that fills the cache for the shards.
    #[arg(long, conflicts_with_all = ["shard", "dry_run"])]
    pub prepare_only: bool,
    /// Answer every pair with the model instead of booting it (plans, shards and
    /// report formats without QEMU; the verdicts mean nothing).
    #[arg(long, hide = true)]
    pub dry_run: bool,
    /// Outputs.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Rig options (--console is per pair: OUT/console/).
    #[command(flatten)]
    pub rig: RigOptions,
}

/// Arguments of `matrix-merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// Shard documents (`matrix --out DIR`'s matrix.json), or folders holding them.
    #[arg(value_name = "RESULTS", required = true)]
    pub results: Vec<PathBuf>,
    /// Outputs.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A `matrix` or `matrix-merge` that could not run.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// `--console` (a matrix keeps each pair's console).
    #[error("--console: a matrix keeps every pair's console in <--out>/console/ instead")]
    Console,
    /// `--monitor` (a matrix boots many guests, several at once).
    #[error("--monitor: a matrix boots many guests, several at once; use `run --monitor` on the pair to look into")]
    Monitor,
    /// The KCIDB origin is not one KCIDB takes.
    #[error(transparent)]
    Kcidb(#[from] crate::matrix::kcidb::BadOrigin),
    /// A picture destination cannot be written.
    #[error(transparent)]
    Picture(#[from] super::pictures::PictureError),
    /// Two kernels have the same name.
    #[error("kernel {label} is named twice (give --label another name for --source)")]
    DuplicateKernel {
        /// The name.
        label: String,
    },
    /// `--out`'s console folder cannot be made.
    #[error("{}: {error}", path.display())]
    ConsoleDir {
        /// The folder.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// `--inject` with another oracle than the model's.
    #[error(
        "--inject: each pair is judged by driver_survived (--oracle model); --oracle {oracle} or --baseline cannot \
         judge it"
    )]
    InjectOracle {
        /// The oracle asked for.
        oracle: String,
    },
    /// `--oracle baseline` without `--baseline`.
    #[error("--oracle baseline needs --baseline K0 (the kernel to compare with)")]
    BaselineNeedsKernel,
    /// `--baseline` with another oracle.
    #[error("--baseline is for --oracle baseline, not --oracle {oracle}")]
    BaselineWithoutOracle {
        /// The oracle asked for.
        oracle: String,
    },
    /// No such oracle.
    #[error(transparent)]
    Oracle(#[from] crate::matrix::other_oracles::UnknownOracle),
    /// The baseline kernel cannot be made ready (the error names it).
    #[error("the baseline (--baseline)")]
    BaselineKernel(#[source] Box<crate::matrix::kernels::KernelPrepareError>),
    /// A kernel request cannot be planned.
    #[error(transparent)]
    PlanKernel(#[from] crate::matrix::kernels::PlanKernelError),
    /// The inputs cannot be listed.
    #[error(transparent)]
    Inputs(#[from] crate::matrix::spec::InputError),
    /// `--random` without `--out`.
    #[error("--random writes its topologies to OUT/random/: give --out OUT")]
    RandomNeedsOut,
    /// The random topologies cannot be written.
    #[error(transparent)]
    Random(#[from] crate::matrix::search::SearchError),
    /// The outputs cannot be written or checked.
    #[error(transparent)]
    Output(#[from] super::matrix_output::OutputError),
    /// A `matrix-merge` folder cannot be listed.
    #[error("{}: {error}", path.display())]
    ResultsFolder {
        /// The folder.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// A `matrix-merge` folder has no shard document.
    #[error("{}: no matrix.json in the folder", path.display())]
    NoDocuments {
        /// The folder.
        path: PathBuf,
    },
    /// A shard document cannot be read.
    #[error("{}: {error}", path.display())]
    ReadDocument {
        /// The document.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// A shard document is not a matrix document.
    #[error("{}: {reason}", path.display())]
    BadDocument {
        /// The document.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The shards do not merge.
    #[error(transparent)]
    Merge(#[from] crate::matrix::merge::MergeError),
}

fn kernel_requests(args: &MatrixArgs) -> Result<Vec<KernelRequest>, MatrixError> {
    let mut reqs: Vec<KernelRequest> = args.kernel.iter().cloned().map(KernelRequest::Choice).collect();
    if let Some(source) = &args.source {
        let patched = args.patches.is_some() || args.commits.as_deref().is_some_and(|c| c.contains(".."));
        let label = args.label.clone().unwrap_or_else(|| if patched { "patched" } else { "source" }.to_owned());
        reqs.push(KernelRequest::Source {
            source: source.clone(),
            patches: args.patches.clone(),
            commits: args.commits.clone(),
            label,
        });
    }
    if reqs.is_empty() {
        reqs.push(KernelRequest::Choice(KernelChoice::Minimal(crate::model::KernelGen::V6_12)));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = reqs.iter().map(KernelRequest::label).find(|l| !seen.insert(l.clone())) {
        return Err(MatrixError::DuplicateKernel { label: dup });
    }
    Ok(reqs)
}

/// `matrix`: run every (topology, kernel) pair of the shard; exit 0 all pass,
/// 1 a mismatch, 2 a rig error or an interrupted run.
pub fn run(args: &MatrixArgs) -> ExitCode {
    match run_inner(args) {
        Ok(exit) => exit.into(),
        Err(e) => {
            eprintln!("manarig matrix: {}", crate::text::chain(&e));
            Exit::RigError.into()
        }
    }
}

fn run_inner(args: &MatrixArgs) -> Result<Exit, MatrixError> {
    if args.rig.console.is_some() {
        return Err(MatrixError::Console);
    }
    if args.rig.monitor.is_some() {
        return Err(MatrixError::Monitor);
    }
    // Refuse a bad origin or picture path before any guest boots.
    crate::matrix::kcidb::render_kcidb(&empty_report(), &args.output.kcidb())?;
    args.output.pictures.check()?;
    let kernels = kernel_requests(args)?;
    let baseline = args.baseline.clone().map(KernelRequest::Choice);
    if args.prepare_only {
        let all: Vec<KernelRequest> = kernels.iter().cloned().chain(baseline).collect();
        return Ok(prepare_only(&all, args.rig.cache_dir.as_deref()));
    }
    let readiness = if args.dry_run { Readiness::ModelOnly } else { Readiness::Boot };
    let settings = match args.dry_run {
        true => None,
        false => Some(RigSettings {
            selftests: args.selftests.then(|| crate::rig::SelftestsRequest {
                patterns: args.tests.clone(),
                ..crate::rig::SelftestsRequest::default()
            }),
            ..rig_settings(&args.rig, args.output.out.as_deref(), &args.inject)?
        }),
    };
    let make_runner = || -> Box<dyn PairRunner> {
        match &settings {
            Some(s) => Box::new(BootRunner { settings: s.clone() }),
            None => Box::new(ModelRunner),
        }
    };
    let oracle = make_oracle(args, baseline.as_ref(), readiness, &make_runner)?;
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let random = args.random.map(|count| RandomSpec { seed: args.seed, count, max_cpus: args.max_cpus });
    let mut inputs = Vec::new();
    if !args.inputs.is_empty() || random.is_none() {
        let given = if args.inputs.is_empty() { vec![PathBuf::from("topologies")] } else { args.inputs.clone() };
        inputs = read_inputs(&expand(&given)?);
    }
    let search_root = match (&random, &args.output.out) {
        (Some(r), Some(out)) => {
            inputs.extend(write_random(r, out)?);
            Some(out.clone())
        }
        (Some(_), None) => return Err(MatrixError::RandomNeedsOut),
        _ => None,
    };
    let spec = MatrixSpec {
        inputs,
        kernels: kernels.iter().map(KernelRequest::spec).collect::<Result<_, _>>()?,
        oracle: oracle.identity(),
        shards: shard.count,
        random,
        inject: args.inject.iter().map(ToString::to_string).collect(),
        selftests: args.selftests.then(|| args.tests.clone()),
        // `--arch` (RigOptions): the guest architectures as an axis of the
        // matrix, every topology on every kernel on each (`run --arch` on each
        // pair, whose name ends in `@<arch>`); without it each file's own.
        archs: dedup_archs(&args.rig.arch),
    };
    let jobs = shard_jobs(&spec, shard, args.jobs, crate::accel::host_cores());
    let pairs = spec.shard_plan(shard);
    let mut display = Display::new(&pairs, jobs.limits.jobs);
    if let Some(n) = &jobs.note {
        display.note(n);
    }
    let planned: f64 = pairs.iter().map(|p| p.cost_s).sum();
    display.note(&format!(
        "shard {shard}: {} of {}, planned {}, jobs {} (spec {})",
        plural(pairs.len(), "pair"),
        spec.plan().len(),
        short_duration(Duration::from_secs_f64(planned)),
        jobs.limits.jobs,
        spec.digest()
    ));
    let runner = make_runner();
    // Ctrl-C: stop starting pairs, let the running guests be killed, write what we have.
    let _deferral = crate::children::defer_exit();
    let stop = crate::children::interrupted;
    let req = ShardRequest {
        spec: &spec,
        kernels: &kernels,
        shard,
        jobs,
        run_id: args.output.run_id.clone().unwrap_or_else(default_run_id),
        readiness,
        cache_dir: args.rig.cache_dir.clone(),
        search_root,
    };
    let display_cell = std::cell::RefCell::new(&mut display);
    let report = run_shard(
        &req,
        runner.as_ref(),
        oracle.as_ref(),
        Hooks {
            on_event: &mut |e| display_cell.borrow_mut().event(e),
            on_note: &mut |l| display_cell.borrow().note(l),
            stop: &stop,
        },
    );
    display.finish();
    finish(&report, &args.output)
}

/// The oracle `--oracle` and `--baseline` name; for `baseline`, K0 made ready
/// (`readiness`) and run by `make_runner`'s runner.
fn make_oracle(
    args: &MatrixArgs,
    baseline: Option<&KernelRequest>,
    readiness: Readiness,
    make_runner: &dyn Fn() -> Box<dyn PairRunner>,
) -> Result<Box<dyn Oracle>, MatrixError> {
    let name = args.oracle.as_deref().unwrap_or(if baseline.is_some() { "baseline" } else { "auto" });
    if !args.inject.is_empty() {
        // A run with injections is judged by driver_survived: the run's own verdict, the model oracle's answer.
        return match args.oracle.as_deref().unwrap_or("model") {
            "model" if baseline.is_none() => Ok(Box::new(crate::matrix::oracle::ModelOracle)),
            other => Err(MatrixError::InjectOracle { oracle: other.to_owned() }),
        };
    }
    match (name, baseline) {
        ("baseline", None) => Err(MatrixError::BaselineNeedsKernel),
        ("baseline", Some(k0)) => {
            let label = k0.label();
            let spec = k0.spec()?;
            let (_, resolved) =
                crate::matrix::kernels::prepare(k0, readiness, args.rig.cache_dir.as_deref(), &mut |l| {
                    eprintln!("matrix: baseline kernel {label}: {l}")
                });
            let kernel = resolved.map_err(|e| MatrixError::BaselineKernel(Box::new(e)))?;
            Ok(Box::new(BaselineOracle::new(kernel, spec, make_runner())))
        }
        (other, Some(_)) => Err(MatrixError::BaselineWithoutOracle { oracle: other.to_owned() }),
        (other, None) => Ok(crate::matrix::other_oracles::by_name(other)?),
    }
}

/// `--prepare-only`: every kernel made bootable, one line each; exit 2 if one cannot be.
fn prepare_only(kernels: &[KernelRequest], cache_dir: Option<&Path>) -> Exit {
    let _deferral = crate::children::defer_exit();
    let mut exit = Exit::Pass;
    for k in kernels {
        let label = k.label();
        let (facts, result) = crate::matrix::kernels::prepare(k, Readiness::Boot, cache_dir, &mut |l| {
            eprintln!("matrix: kernel {label}: {l}")
        });
        match result {
            Ok(r) => eprintln!(
                "matrix: kernel {label}: ready ({}; {:.0} s)",
                facts.release.as_deref().unwrap_or(&r.model_note),
                facts.prepare_s.unwrap_or_default()
            ),
            Err(e) => {
                eprintln!("matrix: {}", crate::verdict::format::error_text(&e));
                exit = Exit::RigError;
            }
        }
        if crate::children::interrupted() {
            return Exit::RigError;
        }
    }
    exit
}

/// Emit the report and its pictures, and say how it ended (the pictures never change
/// the exit code).
fn finish(report: &MatrixReport, output: &OutputArgs) -> Result<Exit, MatrixError> {
    let written = emit(report, output, &mut |l| eprintln!("matrix: {l}"))?;
    output.pictures.write(report, &mut |l| eprintln!("matrix: {l}"));
    let (pass, fail, err, not_run) = report.counts();
    let wall: f64 = report.header.shards.iter().map(|s| s.wall_s).sum();
    let planned: f64 = report.header.shards.iter().map(|s| s.planned_cost_s).sum();
    eprintln!(
        "matrix: {}, {pass} passed, {fail} failed, {}, {not_run} not run{}; {} (planned {}){}{}",
        plural(report.pairs.len(), "pair"),
        plural(err, "rig error"),
        report.skipped_note(),
        short_duration(Duration::from_secs_f64(wall)),
        short_duration(Duration::from_secs_f64(planned)),
        if report.header.complete { "" } else { "; INCOMPLETE" },
        if written.is_empty() {
            String::new()
        } else {
            format!("; wrote {}", written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))
        }
    );
    Ok(match report.overall() {
        Overall::Pass => Exit::Pass,
        Overall::Mismatch => Exit::Mismatch,
        Overall::RigError => Exit::RigError,
    })
}

fn rig_settings(
    rig: &RigOptions,
    out: Option<&Path>,
    inject: &[mana_device_api::inject::InjectSpec],
) -> Result<RigSettings, MatrixError> {
    let console_dir = match out {
        Some(dir) => {
            let d = dir.join("console");
            std::fs::create_dir_all(&d).map_err(|error| MatrixError::ConsoleDir { path: d.clone(), error })?;
            Some(d)
        }
        None => None,
    };
    Ok(RigSettings {
        accel: rig.accel,
        cache_dir: rig.cache_dir.clone(),
        mem_per_node_mib: rig.mem_per_node,
        deadline: Duration::from_secs(rig.deadline),
        // The slow machines' own limit (harness/tests/matrix.rs gives them an hour).
        slow_deadline: Duration::from_secs(3600),
        speedups: if rig.no_speedups { crate::qemu::Speedups::NONE } else { crate::qemu::Speedups::ALL },
        extra_cmdline: rig.cmdline.clone(),
        console_dir,
        inject: inject.to_vec(),
        selftests: None,
    })
}

/// `--arch`'s architectures in the order given, each once.
fn dedup_archs(given: &[crate::topology::Arch]) -> Vec<crate::topology::Arch> {
    let mut out = Vec::new();
    for &a in given {
        if !out.contains(&a) {
            out.push(a);
        }
    }
    out
}

/// A matrix of nothing (to check the output options before running).
fn empty_report() -> MatrixReport {
    let spec = MatrixSpec {
        inputs: Vec::new(),
        kernels: Vec::new(),
        oracle: "model".into(),
        shards: 1,
        random: None,
        inject: Vec::new(),
        selftests: None,
        archs: Vec::new(),
    };
    MatrixReport {
        schema_version: crate::matrix::report::MATRIX_SCHEMA_VERSION,
        kind: crate::matrix::report::KIND.into(),
        header: crate::matrix::report::Header {
            spec_digest: spec.digest(),
            spec,
            plan: Vec::new(),
            shards: Vec::new(),
            kernels: Vec::new(),
            mode: String::new(),
            run_id: "0".into(),
            complete: true,
            verdict_schema_version: crate::verdict::SCHEMA_VERSION,
        },
        pairs: Vec::new(),
    }
}

/// The matrix documents `results` name: files, or every `matrix.json` in a
/// folder (three levels deep: CI artifact folders).
fn documents(results: &[PathBuf]) -> Result<Vec<PathBuf>, MatrixError> {
    fn walk(dir: &Path, depth: u32, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() && depth > 0 {
                walk(&p, depth - 1, out)?;
            } else if p.file_name().is_some_and(|n| n == "matrix.json") {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for r in results {
        if r.is_dir() {
            let before = out.len();
            walk(r, 3, &mut out).map_err(|error| MatrixError::ResultsFolder { path: r.clone(), error })?;
            if out.len() == before {
                return Err(MatrixError::NoDocuments { path: r.clone() });
            }
        } else {
            out.push(r.clone());
        }
    }
    Ok(out)
}

/// `matrix-merge`: shard documents → one matrix document and every format;
/// the exit code as `matrix` would give for the whole matrix (2 when a shard
/// is missing or was interrupted).
pub fn merge_cmd(args: &MergeArgs) -> ExitCode {
    let result = (|| -> Result<Exit, MatrixError> {
        crate::matrix::kcidb::render_kcidb(&empty_report(), &args.output.kcidb())?;
        args.output.pictures.check()?;
        let mut docs = Vec::new();
        for path in documents(&args.results)? {
            let text = std::fs::read_to_string(&path)
                .map_err(|error| MatrixError::ReadDocument { path: path.clone(), error })?;
            let doc = MatrixReport::from_json(&text)
                .map_err(|reason| MatrixError::BadDocument { path: path.clone(), reason })?;
            docs.push((path.display().to_string(), doc));
        }
        let merged = merge(&docs, args.output.run_id.as_deref())?;
        eprintln!(
            "matrix-merge: {}, shards {} of {}",
            plural(docs.len(), "document"),
            merged.header.shards.iter().map(|s| s.shard.index.to_string()).collect::<Vec<_>>().join(","),
            merged.header.spec.shards
        );
        finish(&merged, &args.output)
    })();
    match result {
        Ok(exit) => exit.into(),
        Err(e) => {
            eprintln!("manarig matrix-merge: {}", crate::text::chain(&e));
            Exit::RigError.into()
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[test]
    fn a_matrix_refuses_a_console_file_or_a_monitor_before_any_guest_boots() {
        for (flag, value) in [("--console", "/tmp/c.log"), ("--monitor", "/tmp/m.sock")] {
            let argv = ["manarig", "matrix", "topologies/seed-002.toml", "--kernel", "6.12", flag, value];
            let cli = super::super::Cli::try_parse_from(argv).expect("parses");
            let super::super::Command::Matrix(args) = cli.command else { panic!("not a matrix") };
            let err = super::run_inner(&args).expect_err("refused");
            assert!(err.to_string().starts_with(flag), "{err}");
        }
    }

    #[test]
    fn random_needs_at_least_one_topology_of_at_least_one_cpu() {
        // `--random 0` would write a PASS having run nothing.
        for args in [&["--random", "0"][..], &["--random", "2", "--max-cpus", "0"]] {
            let argv =
                ["manarig", "matrix", "--kernel", "6.12", "--out", "/tmp/m"].into_iter().chain(args.iter().copied());
            let err = super::super::Cli::try_parse_from(argv).expect_err("refused");
            assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation, "{args:?}: {err}");
        }
        let argv = ["manarig", "matrix", "--kernel", "6.12", "--out", "/tmp/m", "--random", "1", "--max-cpus", "1"];
        super::super::Cli::try_parse_from(argv).expect("parses");
    }
}
