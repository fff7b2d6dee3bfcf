//! One shard of a matrix, start to end: the jobs, the kernels its pairs need
//! (built when missing), the topologies, the run, and the matrix document.

use super::executor::{execute, Executor, Ready};
use super::kernels::{self, KernelFacts, KernelRequest, Readiness};
use super::limits;
use super::oracle::Oracle;
use super::pair_runner::PairRunner;
use super::progress::Event;
use super::report::{rfc3339, Header, MatrixReport, PairStatus, ShardRun, KIND, MATRIX_SCHEMA_VERSION};
use super::search::{on_disk, Shrinker, SHRINK_TRIES};
use super::shard::Shard;
use super::spec::MatrixSpec;
use crate::topology::Topology;
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

/// A shard to run.
pub struct ShardRequest<'a> {
    /// The matrix.
    pub spec: &'a MatrixSpec,
    /// The kernels as asked for, in the spec's order.
    pub kernels: &'a [KernelRequest],
    /// Which shard (`1/1`: all).
    pub shard: Shard,
    /// Jobs and limits ([`limits::plan`] for this shard's pairs).
    pub jobs: limits::JobsPlan,
    /// The run's id (see [`Header::run_id`]).
    pub run_id: String,
    /// Boot or model only.
    pub readiness: Readiness,
    /// Cache folder override.
    pub cache_dir: Option<PathBuf>,
    /// The `--out` folder of a `--random` matrix: its `random/` inputs are
    /// read from there, and the pairs that fail are shrunk into `found/`
    /// ([`super::search`]).
    pub search_root: Option<PathBuf>,
}

/// Hooks a shard reports through: progress events, and one-line notes (kernel
/// build steps and errors).
pub struct Hooks<'a> {
    /// Each pair's start and result.
    pub on_event: &'a mut dyn FnMut(Event<'_>),
    /// Notes.
    pub on_note: &'a mut dyn FnMut(&str),
    /// True once the matrix must stop.
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

/// The pairs of `shard`, and the jobs plan for them (`--jobs`, `host_cores`).
pub fn shard_jobs(spec: &MatrixSpec, shard: Shard, jobs: Option<u32>, host_cores: u32) -> limits::JobsPlan {
    let vcpus: Vec<u32> = spec.shard_plan(shard).iter().filter_map(|p| p.vcpus).collect();
    limits::plan(jobs, host_cores, &vcpus)
}

/// Run one shard of the matrix and return its document (never fails: what
/// cannot run is in the records as rig errors or not-run pairs).
pub fn run_shard(
    req: &ShardRequest<'_>,
    runner: &dyn PairRunner,
    oracle: &dyn Oracle,
    hooks: Hooks<'_>,
) -> MatrixReport {
    let Hooks { on_event, on_note, stop } = hooks;
    let t0 = Instant::now();
    let started = rfc3339(SystemTime::now());
    let plan = req.spec.plan();
    let pairs: Vec<_> = plan.iter().filter(|p| p.shard == req.shard.index).cloned().collect();
    let jobs = &req.jobs;
    let mut notes: Vec<String> = jobs.note.iter().cloned().collect();

    let mut ready = Ready::default();
    let mut facts = Vec::new();
    // QEMU, busybox and the pinned kernels once, before guests start side by side.
    let unprovisioned = match req.readiness {
        Readiness::Boot if !pairs.is_empty() => crate::rig::provisioned(req.cache_dir.as_deref())
            .err()
            .map(|e| format!("provisioning: {}", crate::verdict::format::error_text(&e).replace(['\n', '\r'], " "))),
        _ => None,
    };
    if let Some(e) = &unprovisioned {
        on_note(e);
    }
    for k in req.kernels {
        let label = k.label();
        if let Some(e) = &unprovisioned {
            ready.kernels.insert(label.clone(), Err(e.clone()));
            facts.push(KernelFacts { label, error: Some(e.clone()), ..KernelFacts::default() });
            continue;
        }
        if !pairs.iter().any(|p| p.kernel == label) || stop() {
            facts.push(KernelFacts { label, ..KernelFacts::default() });
            continue;
        }
        let (f, resolved) = kernels::prepare(k, req.readiness, req.cache_dir.as_deref(), &mut |line| {
            on_note(&format!("kernel {label}: {line}"));
        });
        if let Some(e) = &f.error {
            // The error names the kernel already.
            on_note(e);
        }
        ready
            .kernels
            .insert(label, resolved.map_err(|e| crate::verdict::format::error_text(&e).replace(['\n', '\r'], " ")));
        facts.push(f);
    }
    for input in &req.spec.inputs {
        let file = on_disk(req.spec, &input.path, req.search_root.as_deref());
        let loaded = match &input.error {
            Some(e) => Err(e.clone()),
            None => Topology::load(&file).map_err(|e| e.to_string()),
        };
        if file.as_os_str() != input.path.as_str() {
            ready.files.insert(input.path.clone(), file);
        }
        ready.topologies.insert(input.path.clone(), loaded);
    }

    let x = Executor { spec: req.spec, ready: &ready, runner, oracle, limits: jobs.limits, stop };
    let records = execute(&x, &pairs, on_event);
    let found = match (&req.search_root, req.spec.random) {
        (Some(root), Some(_)) => {
            Shrinker { spec: req.spec, ready: &ready, runner, oracle, root, max_tries: SHRINK_TRIES, stop }
                .shrink_failures(&records, on_note)
        }
        _ => Vec::new(),
    };
    let interrupted = stop() || records.iter().any(|r| r.status == PairStatus::NotRun);
    if interrupted {
        notes.push("the pairs that did not run are marked not-run".to_owned());
    }
    let shard = ShardRun {
        shard: req.shard,
        pairs: pairs.len(),
        planned_cost_s: pairs.iter().map(|p| p.cost_s).sum(),
        started,
        wall_s: t0.elapsed().as_secs_f64(),
        jobs: jobs.limits.jobs,
        host_cores: jobs.limits.host_cores,
        complete: !interrupted,
        notes,
        found,
    };
    MatrixReport {
        schema_version: MATRIX_SCHEMA_VERSION,
        kind: KIND.to_owned(),
        header: Header {
            spec: req.spec.clone(),
            spec_digest: req.spec.digest(),
            plan,
            shards: vec![shard],
            kernels: facts,
            mode: runner.mode().to_owned(),
            run_id: req.run_id.clone(),
            complete: !interrupted,
            verdict_schema_version: crate::verdict::SCHEMA_VERSION,
        },
        pairs: records,
    }
}

/// The default run id: `GITHUB_RUN_ID`-`GITHUB_RUN_ATTEMPT` in GitHub Actions
/// (equal on every shard of a workflow run), else `CI_PIPELINE_ID` (GitLab),
/// else the current time in seconds (then give shards one with `--run-id`).
pub fn default_run_id() -> String {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if let Some(id) = var("GITHUB_RUN_ID") {
        return format!("{id}-{}", var("GITHUB_RUN_ATTEMPT").unwrap_or_else(|| "1".into()));
    }
    if let Some(id) = var("CI_PIPELINE_ID") {
        return id;
    }
    SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()).to_string()
}

/// A dry-run document of `files` (under topologies/) × `kernels`, shard
/// `shard`, for the formats' and the merge's tests.
#[cfg(test)]
pub(crate) fn dry_report(files: &[&str], kernels: &[&str], shard: Shard) -> MatrixReport {
    dry_report_on(files, kernels, &[], shard)
}

/// [`dry_report`] with the arch axis `archs` (`matrix --arch`).
#[cfg(test)]
pub(crate) fn dry_report_on(
    files: &[&str],
    kernels: &[&str],
    archs: &[crate::topology::Arch],
    shard: Shard,
) -> MatrixReport {
    use super::oracle::ModelOracle;
    use super::pair_runner::ModelRunner;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../topologies");
    let paths: Vec<PathBuf> = files.iter().map(|f| dir.join(format!("{f}.toml"))).collect();
    let reqs: Vec<KernelRequest> =
        kernels.iter().map(|k| KernelRequest::Choice(k.parse().expect("a kernel"))).collect();
    let spec = MatrixSpec {
        inputs: super::spec::read_inputs(&paths),
        kernels: reqs.iter().map(|r| r.spec().expect("spec")).collect(),
        oracle: "model".into(),
        shards: shard.count,
        random: None,
        inject: Vec::new(),
        selftests: None,
        archs: archs.to_vec(),
    };
    let req = ShardRequest {
        spec: &spec,
        kernels: &reqs,
        shard,
        jobs: shard_jobs(&spec, shard, Some(2), 2),
        run_id: "test".into(),
        readiness: Readiness::ModelOnly,
        cache_dir: None,
        search_root: None,
    };
    let stop = || false;
    run_shard(&req, &ModelRunner, &ModelOracle, Hooks { on_event: &mut |_| {}, on_note: &mut |_| {}, stop: &stop })
}
