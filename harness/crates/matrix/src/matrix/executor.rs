//! Running a list of pairs: up to [`Limits::jobs`] guests at once within the
//! TCG limits ([`super::limits`]), largest first, each in its own thread,
//! each result judged by the oracle as it arrives; a stop request starts no
//! new pair and lets the running ones end (their guests are killed by the
//! signal handling in [`manarig_proc::children`], so their runs end at once).

use super::limits::Limits;
use super::oracle::{Evidence, Oracle, OracleError};
use super::pair_runner::{PairError, PairRunner};
use super::progress::Event;
use super::report::{rfc3339, PairRecord};
use super::spec::{MatrixSpec, PlannedPair};
use crate::rig::kernel_choice::ResolvedKernel;
use crate::topology::Topology;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

/// How often the scheduler looks at the stop request while guests run.
const TICK: Duration = Duration::from_millis(200);

/// What the pairs need, made ready once: topologies by file, kernels by label
/// (an error says why the pairs of that file or kernel cannot run).
#[derive(Debug, Default)]
pub struct Ready {
    /// Loaded topologies by the input's path.
    pub topologies: HashMap<String, Result<Topology, String>>,
    /// Resolved kernels by label.
    pub kernels: HashMap<String, Result<ResolvedKernel, String>>,
    /// Where an input's file is when not at its path (`--random`'s
    /// `random/<name>.toml` under `--out`).
    pub files: HashMap<String, std::path::PathBuf>,
}

/// A pair that ran into a rig error: why.
#[derive(Debug, thiserror::Error)]
pub enum PairFailure {
    /// Its topology or its kernel could not be made ready (their text).
    #[error("{0}")]
    NotReady(String),
    /// The runner failed.
    #[error(transparent)]
    Run(#[from] PairError),
    /// The pair's kernel is not one of the spec's.
    #[error("kernel {kernel} is not in the matrix's spec")]
    KernelNotInSpec {
        /// The pair's kernel.
        kernel: String,
    },
    /// The oracle could not judge it.
    #[error(transparent)]
    Oracle(#[from] OracleError),
    /// The rig panicked.
    #[error("the rig panicked: {what}")]
    Panicked {
        /// The panic's message.
        what: String,
    },
}

/// The topology and kernel of a pair, or why it cannot run.
fn prerequisites<'r>(ready: &'r Ready, pair: &PlannedPair) -> Result<(&'r Topology, &'r ResolvedKernel), String> {
    let topo = match ready.topologies.get(&pair.file) {
        Some(Ok(t)) => t,
        Some(Err(e)) => return Err(e.clone()),
        None => return Err(format!("{}: not loaded", pair.file)),
    };
    match ready.kernels.get(&pair.kernel) {
        Some(Ok(k)) => Ok((topo, k)),
        Some(Err(e)) => Err(e.clone()),
        None => Err(format!("kernel {}: not prepared", pair.kernel)),
    }
}

/// Why a pair cannot run on its kernel by what its topology asks for, if so:
/// `[scenario] irqbalance` on a kernel known not to run irqbalance (the
/// minimal builds have no AF_UNIX sockets); on the arch axis's arm64, a kernel
/// the rig builds (a matrix prepares its builds for x86_64 only) or a
/// generation `[arm64]` does not pin. Such a
/// pair is skipped, not booted: the kernel is not at fault, and `run` refuses
/// the same pair.
fn skip_reason(ready: &Ready, pair: &PlannedPair) -> Option<String> {
    if pair.arch == Some(crate::topology::Arch::Arm64) {
        if let Some(why) = arm64_skip_reason(&pair.kernel) {
            return Some(why);
        }
    }
    let Some(Ok(topo)) = ready.topologies.get(&pair.file) else { return None };
    if !topo.scenario().irqbalance {
        return None;
    }
    let choice = pair.kernel.parse::<crate::rig::kernel_choice::KernelChoice>().ok()?;
    // The short form of `run`'s refusal: the summary's cell shows 120 characters.
    crate::rig::kernel_choice::irqbalance_refusal(&choice).map(|_| {
        format!("[scenario] irqbalance needs AF_UNIX sockets; kernel {choice} has none (no CONFIG_UNIX): irqbalance cannot start")
    })
}

/// Why an arm64 pair cannot run on kernel `label`: a build of the rig's (a
/// matrix prepares one build per kernel label, for x86_64; `run --arch arm64
/// --kernel 6.12-min` builds the arm64 one), or a pinned generation the lock's `[arm64]`
/// has no kernel for (6.1).
fn arm64_skip_reason(label: &str) -> Option<String> {
    use crate::rig::kernel_choice::KernelChoice;
    match label.parse::<KernelChoice>().ok()? {
        KernelChoice::Minimal(_) | KernelChoice::Minimal64k(_) | KernelChoice::Debug(_) | KernelChoice::Build(_) => {
            Some(format!(
                "kernel {label} is built by the rig; a matrix builds it for x86_64 only: not run on arm64 \
                 (`run --arch arm64 --kernel {label}` builds the arm64 one)"
            ))
        }
        KernelChoice::Pinned(g) => {
            let lock = crate::provision::lock::Lock::embedded().ok()?;
            let id = crate::rig::kernel_lock_id(g);
            let pinned = lock.arm64.as_ref()?.kernels.iter().any(|k| k.id == id);
            (!pinned)
                .then(|| format!("kernel {label}: guest-images/kernels.lock's [arm64] pins none: not run on arm64"))
        }
        KernelChoice::Image { .. } => None,
    }
}

/// Everything [`execute`] runs with.
pub struct Executor<'a> {
    /// The matrix's spec (kernel specs for the oracle).
    pub spec: &'a MatrixSpec,
    /// Topologies and kernels.
    pub ready: &'a Ready,
    /// Boots (or models) each pair.
    pub runner: &'a dyn PairRunner,
    /// Judges each pair.
    pub oracle: &'a dyn Oracle,
    /// Jobs and the vCPU budget.
    pub limits: Limits,
    /// True once the matrix must stop (Ctrl-C).
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

/// Run `pairs` and return their records in the same order. `on_event` hears
/// each start and result (in this thread). Pairs that cannot run (a broken
/// file, a kernel that failed to build) are rig errors at once; pairs not
/// started when a stop is requested are `not-run`, and so are the running
/// ones whose run failed after the request (their guests were stopped).
pub fn execute(x: &Executor<'_>, pairs: &[PlannedPair], on_event: &mut dyn FnMut(Event<'_>)) -> Vec<PairRecord> {
    let mut records: Vec<Option<PairRecord>> = vec![None; pairs.len()];
    let mut queue: Vec<usize> = Vec::new();
    for (i, p) in pairs.iter().enumerate() {
        if let Some(why) = skip_reason(x.ready, p) {
            let r = PairRecord::skipped(p.clone(), &why);
            on_event(Event::Finished(&r));
            records[i] = Some(r);
            continue;
        }
        match prerequisites(x.ready, p) {
            Ok(_) => queue.push(i),
            // Stopped while the kernels were made ready: not the pair's fault.
            Err(_) if (x.stop)() => {
                let r = PairRecord::not_run(p.clone(), "the matrix was stopped before it started");
                on_event(Event::Finished(&r));
                records[i] = Some(r);
            }
            Err(e) => {
                let r = PairRecord::rig_error(p.clone(), &PairFailure::NotReady(e), None, None);
                on_event(Event::Finished(&r));
                records[i] = Some(r);
            }
        }
    }
    // Largest first: the long runs start early and the small ones fill in.
    queue.sort_by(|&a, &b| pairs[b].cost_s.total_cmp(&pairs[a].cost_s).then_with(|| pairs[a].name.cmp(&pairs[b].name)));
    let (tx, rx) = mpsc::channel::<(usize, PairRecord)>();
    let mut stopping = false;
    std::thread::scope(|s| {
        let mut running: Vec<(usize, u32)> = Vec::new();
        loop {
            if !stopping && (x.stop)() {
                stopping = true;
                on_event(Event::Stopping);
            }
            let mut k = 0;
            while !stopping && k < queue.len() {
                let i = queue[k];
                let vcpus = pairs[i].vcpus.unwrap_or(1);
                let slots: u32 = running.iter().map(|&(_, v)| x.limits.slots(v)).sum();
                let busy: u32 = running.iter().map(|&(_, v)| v).sum();
                if !x.limits.admits(slots, busy, vcpus) {
                    k += 1;
                    continue;
                }
                queue.remove(k);
                let Ok((topo, kernel)) = prerequisites(x.ready, &pairs[i]) else {
                    continue;
                };
                on_event(Event::Started(&pairs[i]));
                running.push((i, vcpus));
                let tx = tx.clone();
                let pair = &pairs[i];
                s.spawn(move || {
                    let _ = tx.send((i, run_pair(x, pair, topo, kernel)));
                });
            }
            if running.is_empty() && (queue.is_empty() || stopping) {
                break;
            }
            match rx.recv_timeout(TICK) {
                Ok((i, record)) => {
                    running.retain(|&(j, _)| j != i);
                    on_event(Event::Finished(&record));
                    records[i] = Some(record);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => on_event(Event::Tick),
                // Every running pair's thread holds a sender until it sent.
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    });
    for i in queue {
        let r = PairRecord::not_run(pairs[i].clone(), "the matrix was stopped before it started");
        on_event(Event::Finished(&r));
        records[i] = Some(r);
    }
    records
        .into_iter()
        .zip(pairs)
        .map(|(r, p)| r.unwrap_or_else(|| PairRecord::not_run(p.clone(), "no result (the scheduler lost it)")))
        .collect()
}

/// Run one pair and judge it; a panic in the rig is a rig error of that pair.
fn run_pair(x: &Executor<'_>, pair: &PlannedPair, topo: &Topology, kernel: &ResolvedKernel) -> PairRecord {
    let started = rfc3339(SystemTime::now());
    let t0 = Instant::now();
    let judged = std::panic::catch_unwind(AssertUnwindSafe(|| -> Result<_, PairFailure> {
        let observation = match x.ready.files.get(&pair.file) {
            Some(real) => {
                let mut p = pair.clone();
                p.file = real.display().to_string();
                x.runner.run(&p, topo, kernel)?
            }
            None => x.runner.run(pair, topo, kernel)?,
        };
        let kernel_spec =
            x.spec.kernel(pair).ok_or_else(|| PairFailure::KernelNotInSpec { kernel: pair.kernel.clone() })?;
        let evidence = Evidence { pair, topology: topo, kernel, kernel_spec, observation: &observation };
        Ok(x.oracle.judge(&evidence)?)
    }));
    let secs = t0.elapsed().as_secs_f64();
    match judged {
        Ok(Ok(judged)) => PairRecord::judged(pair.clone(), judged, started, secs),
        Ok(Err(e)) if (x.stop)() => {
            let mut r = PairRecord::not_run(
                pair.clone(),
                &format!("stopped while it ran: {}", crate::verdict::format::error_text(&e)),
            );
            r.started = Some(started);
            r.duration_s = Some(secs);
            r
        }
        Ok(Err(e)) => PairRecord::rig_error(pair.clone(), &e, Some(started), Some(secs)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned());
            PairRecord::rig_error(pair.clone(), &PairFailure::Panicked { what }, Some(started), Some(secs))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::kernels::KernelRequest;
    use crate::matrix::oracle::ModelOracle;
    use crate::matrix::pair_runner::{ModelRunner, Observation};
    use crate::matrix::report::PairStatus;
    use crate::matrix::spec::{expand, read_inputs};
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::Mutex;

    fn setup(files: &[&str], kernels: &[&str]) -> (MatrixSpec, Ready) {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../topologies");
        let paths: Vec<_> = files.iter().map(|f| dir.join(format!("{f}.toml"))).collect();
        let inputs = read_inputs(&expand(&paths).expect("files"));
        let reqs: Vec<KernelRequest> =
            kernels.iter().map(|k| KernelRequest::Choice(k.parse().expect("kernel"))).collect();
        let spec = MatrixSpec {
            inputs,
            kernels: reqs.iter().map(|r| r.spec().expect("spec")).collect(),
            oracle: "model".into(),
            shards: 1,
            random: None,
            inject: Vec::new(),
            selftests: None,
            archs: Vec::new(),
        };
        let mut ready = Ready::default();
        for i in &spec.inputs {
            ready.topologies.insert(i.path.clone(), Topology::load(&i.path).map_err(|e| e.to_string()));
        }
        for r in &reqs {
            let (_, k) =
                super::super::kernels::prepare(r, super::super::kernels::Readiness::ModelOnly, None, &mut |_| {});
            ready.kernels.insert(r.label(), k.map_err(|e| e.to_string()));
        }
        (spec, ready)
    }

    /// A runner that counts how many pairs run at once (each waits a little).
    struct Counting {
        now: AtomicU32,
        most: AtomicU32,
        fail: &'static str,
    }

    impl PairRunner for Counting {
        fn run(
            &self,
            pair: &PlannedPair,
            topology: &Topology,
            kernel: &ResolvedKernel,
        ) -> Result<Observation, PairError> {
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(30));
            self.now.fetch_sub(1, Ordering::SeqCst);
            if pair.name.starts_with(self.fail) {
                return Err(PairError::Fake("QEMU exited"));
            }
            ModelRunner.run(pair, topology, kernel)
        }
        fn mode(&self) -> &'static str {
            "test"
        }
    }

    #[test]
    fn pairs_run_at_most_jobs_at_once_and_results_keep_the_plan_order() {
        let (spec, ready) = setup(&["seed-002", "r06-low-vcpu", "r24-no-smt", "r17-diameter"], &["6.12-min", "6.1"]);
        let pairs = spec.plan();
        let runner = Counting { now: AtomicU32::new(0), most: AtomicU32::new(0), fail: "r24-no-smt@6.1" };
        let stop = || false;
        let limits = Limits { jobs: 3, host_cores: 3, vcpu_budget: 384 };
        let x = Executor { spec: &spec, ready: &ready, runner: &runner, oracle: &ModelOracle, limits, stop: &stop };
        let mut events = Vec::new();
        let records = execute(&x, &pairs, &mut |e| {
            events.push(match e {
                Event::Started(p) => format!("start {}", p.name),
                Event::Finished(r) => format!("end {}", r.pair.name),
                Event::Stopping => "stop".into(),
                Event::Tick => return,
            })
        });
        assert_eq!(
            records.iter().map(|r| r.pair.name.clone()).collect::<Vec<_>>(),
            pairs.iter().map(|p| p.name.clone()).collect::<Vec<_>>()
        );
        assert!(runner.most.load(Ordering::SeqCst) <= 3);
        let status = |n: &str| records.iter().find(|r| r.pair.name == n).map(|r| r.status);
        assert_eq!(status("seed-002@6.12-min"), Some(PairStatus::Pass));
        assert_eq!(status("r24-no-smt@6.1"), Some(PairStatus::RigError));
        assert_eq!(events.len(), 16);
    }

    #[test]
    fn a_stop_request_starts_nothing_new_and_marks_the_rest_not_run() {
        let (spec, ready) = setup(&["seed-002", "r06-low-vcpu", "r24-no-smt"], &["6.12-min"]);
        let pairs = spec.plan();
        let stopped = AtomicBool::new(false);
        let stop = || stopped.load(Ordering::SeqCst);
        let runner = Counting { now: AtomicU32::new(0), most: AtomicU32::new(0), fail: "-" };
        let x = Executor {
            spec: &spec,
            ready: &ready,
            runner: &runner,
            oracle: &ModelOracle,
            limits: Limits { jobs: 1, host_cores: 1, vcpu_budget: 128 },
            stop: &stop,
        };
        let seen = Mutex::new(Vec::new());
        let records = execute(&x, &pairs, &mut |e| {
            if let Event::Started(p) = e {
                seen.lock().expect("lock").push(p.name.clone());
                stopped.store(true, Ordering::SeqCst);
            }
        });
        assert_eq!(seen.lock().expect("lock").len(), 1, "only the first pair started");
        let not_run = records.iter().filter(|r| r.status == PairStatus::NotRun).count();
        assert_eq!(not_run, 2, "{records:#?}");
    }

    /// Every planned pair of `spec` through the model, without a stop.
    fn model_run(spec: &MatrixSpec, ready: &Ready, limits: Limits) -> Vec<PairRecord> {
        let stop = || false;
        let x = Executor { spec, ready, runner: &ModelRunner, oracle: &ModelOracle, limits, stop: &stop };
        execute(&x, &spec.plan(), &mut |_| {})
    }

    #[test]
    fn a_pair_whose_kernel_or_file_is_not_ready_is_a_rig_error_without_a_run() {
        let (spec, mut ready) = setup(&["seed-002"], &["6.12-min", "6.1"]);
        ready.kernels.insert("6.1".into(), Err("kernel 6.1: not provisioned".into()));
        let records = model_run(&spec, &ready, Limits { jobs: 2, host_cores: 2, vcpu_budget: 256 });
        assert_eq!(records[0].status, PairStatus::Pass);
        assert_eq!(records[1].status, PairStatus::RigError);
        assert_eq!(records[1].error.as_deref(), Some("kernel 6.1: not provisioned"));
        assert_eq!(records[1].started, None);
    }

    #[test]
    fn irqbalance_on_a_minimal_kernel_is_skipped_without_a_run() {
        let (spec, ready) = setup(&["scen-irqbalance"], &["6.12-min", "6.12"]);
        let records = model_run(&spec, &ready, Limits { jobs: 1, host_cores: 1, vcpu_budget: 128 });
        let min = records.iter().find(|r| r.pair.kernel == "6.12-min").expect("6.12-min pair");
        assert_eq!(min.status, PairStatus::Skip);
        assert!(min.error.as_deref().is_some_and(|e| e.contains("no CONFIG_UNIX")), "{min:?}");
        assert_eq!(min.started, None);
        let debian = records.iter().find(|r| r.pair.kernel == "6.12").expect("6.12 pair");
        assert_eq!(debian.status, PairStatus::Pass);
    }

    #[test]
    fn arm64_pairs_of_kernels_arm64_has_not_are_skipped_and_the_rest_run() {
        let (mut spec, ready) = setup(&["seed-002"], &["6.12-min", "6.1", "6.12"]);
        spec.archs = vec![crate::topology::Arch::X86_64, crate::topology::Arch::Arm64];
        let records = model_run(&spec, &ready, Limits { jobs: 1, host_cores: 1, vcpu_budget: 128 });
        let status = |name: &str| {
            let r = records.iter().find(|r| r.pair.name == name).unwrap_or_else(|| panic!("{name}"));
            (r.status, r.error.clone().unwrap_or_default())
        };
        let (s, why) = status("seed-002@6.12-min@arm64");
        assert!(s == PairStatus::Skip && why.contains("x86_64 only"), "{s:?} {why}");
        let (s, why) = status("seed-002@6.1@arm64");
        assert!(s == PairStatus::Skip && why.contains("[arm64] pins none"), "{s:?} {why}");
        for name in ["seed-002@6.12@arm64", "seed-002@6.12@x86_64", "seed-002@6.12-min@x86_64"] {
            assert_eq!(status(name).0, PairStatus::Pass, "{name}");
        }
    }
}
