//! One run in sequence ([`run_one`]): load the topology, provision, boot
//! (again under TCG when `--accel auto`'s KVM guest stays silent), then judge
//! the booted guest (`judging`); under fault injection a guest that panicked
//! or hung is the driver not surviving, a failing outcome rather than an error.

use super::boot::{BootError, NicBoot, NicBootOutcome};
use super::cache::{kernel_lock_id, provisioned_for, CacheError};
use super::judging::{JudgeError, Judging};
use super::kernel_choice::{image_fit, ImageFit};
use super::kernel_finding::{cpus_not_brought_up, sched_domains_not_built};
use super::outcome::{RunOutcome, RunTimings, TrafficBoot};
use super::request::{injections, BadInjection, RunRequest};
use crate::accel::AccelChoice;
use crate::model::expected_table;
use crate::provision;
use crate::qemu;
use crate::topology::Arch;
use crate::topology::Topology;
use crate::verdict::properties::judge_without_model;
use crate::verdict::{judge, Observed};
use std::time::{Duration, Instant};

/// A run that ended in a rig error: each variant is one step of [`run_one`].
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The topology file cannot be loaded, or the request's scenario does not fit it.
    #[error(transparent)]
    Topology(Box<crate::topology::TopologyError>),
    /// The provisioned cache cannot be had.
    #[error(transparent)]
    Cache(Box<CacheError>),
    /// The pinned kernel is not in the cache.
    #[error(transparent)]
    Kernel(Box<provision::ProvisionError>),
    /// The run's temporary folder cannot be made.
    #[error("cannot create a temporary folder for the run: {0}")]
    Scratch(std::io::Error),
    /// A `[nic] inject` entry of the topology file does not parse.
    #[error(transparent)]
    Injection(#[from] BadInjection),
    /// What the debug kernel's reports are judged against cannot be had.
    #[error(transparent)]
    DebugBaseline(Box<super::debug_baseline::DebugBaselineError>),
    /// The selftests cannot be prepared.
    #[error(transparent)]
    Selftests(Box<super::selftests::SelftestsError>),
    /// The boot could not start (machine, device, peer).
    #[error(transparent)]
    Boot(Box<BootError>),
    /// QEMU or the guest failed.
    #[error("booting {topology} on Linux {release}")]
    Launch {
        /// The topology's name.
        topology: String,
        /// The kernel's release.
        release: String,
        /// What happened.
        #[source]
        source: Box<qemu::LaunchError>,
    },
    /// The guest's report shows a rig error or cannot be judged.
    #[error(transparent)]
    Judge(Box<JudgeError>),
    /// The run asks for what arm64 guests cannot do yet.
    #[error("{what} is not available on arm64 guests yet: {why}")]
    NotOnArm64 {
        /// The option (`--traffic`).
        what: &'static str,
        /// Why not.
        why: &'static str,
    },
}

/// The most flows a soak's rounds may have on an arm64 guest. Its guest end,
/// like `--traffic`'s, is the x86_64 `manarig-flows` under `qemu-x86_64`
/// (`flows_guest`); measured on `arm64/cobalt-16.toml`, 6.12, 2 minutes: with
/// 4 flows a round every check passed (3 rounds verified, every disruption
/// came through, the device flat); with the default 16 an emulated round
/// outlasted the first guest minute, so `soak_traffic_flowed` (a verified
/// round every minute) failed.
pub const ARM64_SOAK_MAX_FLOWS: u32 = 4;

/// What an arm64 run cannot do yet, refused before anything starts: a soak
/// with more than [`ARM64_SOAK_MAX_FLOWS`] flows a round; the selftests'
/// tools are amd64 packages; a kernel build must be an arm64 `Image`
/// (`kernel build --arch arm64`, `--kernel 6.12-min` on an arm64 topology),
/// not an x86 bzImage.
///
/// # Errors
/// [`RunError::NotOnArm64`] naming the option.
fn arm64_supports(req: &RunRequest) -> Result<(), RunError> {
    let round_flows = req.traffic.as_ref().and_then(|t| t.flows).unwrap_or(u32::MAX);
    if req.soak.is_some() && round_flows > ARM64_SOAK_MAX_FLOWS {
        return Err(RunError::NotOnArm64 {
            what: "a soak with more than 4 flows a round",
            why: "its rounds run the flows tool emulated (qemu-x86_64), longer than the minute a soak judges: \
                  use --flows 4",
        });
    }
    if req.selftests.is_some() {
        return Err(RunError::NotOnArm64 { what: "the selftests", why: "their guest tools are amd64 packages" });
    }
    let x86_build = |k: &provision::KernelInstall| {
        k.is_rig_build() && crate::kbuild::image::image_arch(&k.vmlinuz) != Some(Arch::Arm64)
    };
    if req.custom_kernel.as_ref().is_some_and(x86_build) {
        return Err(RunError::NotOnArm64 {
            what: "a kernel build that is not an arm64 Image",
            why: "build it for arm64 (`kernel build --arch arm64`, or `--kernel 6.12-min` with --arch arm64)",
        });
    }
    Ok(())
}

/// `From` for the variants that only box their error.
macro_rules! boxed_from {
    ($($variant:ident($t:ty)),* $(,)?) => {$(
        impl From<$t> for RunError {
            fn from(e: $t) -> Self {
                RunError::$variant(Box::new(e))
            }
        }
    )*};
}

boxed_from!(
    Topology(crate::topology::TopologyError),
    Cache(CacheError),
    Kernel(provision::ProvisionError),
    DebugBaseline(super::debug_baseline::DebugBaselineError),
    Selftests(super::selftests::SelftestsError),
    Boot(BootError),
    Judge(JudgeError),
);

/// Run one topology on one kernel, end to end.
///
/// # Errors
/// [`RunError`]: rig errors only (bad topology file, provisioning, QEMU,
/// device, guest panic, observed topology differing from the file); a
/// mismatch against the model is a failing [`Verdict`](crate::verdict::Verdict),
/// not an error.
pub fn run_one(req: &RunRequest) -> Result<RunOutcome, RunError> {
    let start = Instant::now();
    let shown = req.topology.display().to_string();
    let mut topo = Topology::load(&req.topology)?.with_scenario(&shown, &req.scenario)?;
    if let Some(arch) = req.arch.filter(|&a| a != topo.arch()) {
        topo = topo.with_arch(arch, &shown)?;
    }
    let arm64_req;
    let req = if topo.arch() == Arch::Arm64 {
        arm64_supports(req)?;
        arm64_req = super::page_memory::with_page_memory(super::flows_guest::arm64_request(req));
        &arm64_req
    } else {
        req
    };
    super::machine::msix_platform(&topo, req.model.unwrap_or(req.kernel)).map_err(BootError::DeviceConfig)?;
    // A file whose node ids the guest would not show is refused before anything is
    // provisioned or booted (QEMU x86's SRAT order; no rule for arm64 yet).
    topo.check_guest_node_ids(&shown)?;
    let prov = provisioned_for(topo.arch(), req.cache_dir.as_deref())?;
    let provision_time = start.elapsed();
    let kernel = match &req.custom_kernel {
        Some(k) => k,
        None => prov.kernel(kernel_lock_id(req.kernel))?,
    };
    // A Debian image standing in for a gone pin is judged by the model only
    // when its mana.ko runs the pinned generation's code.
    let fit = image_fit(req.kernel, req.model.is_some(), kernel);
    let refit;
    let req = match &fit {
        ImageFit::Same(basis) => {
            refit = RunRequest { model_basis: basis.clone(), ..req.clone() };
            &refit
        }
        ImageFit::Unmodelled(why) => {
            eprintln!("manarig: {why}: judging with the properties oracle instead of the {} model", req.kernel);
            req
        }
        ImageFit::NotAStandIn => req,
    };
    let scratch = crate::scratch::ScratchDir::new("manarig-run-").map_err(RunError::Scratch)?;
    let channels = req.channels.or(topo.nic().channels);
    let inject = injections(&req.topology, &topo, &req.inject)?;
    let packages = run_packages(req, &topo, &prov, kernel, channels);
    // A patched debug build is judged against its stock build's reports (run once, then cached).
    let against = match req.debug && inject.is_empty() {
        true => Some(super::debug_baseline::against(req, kernel, &prov.cache, &run_one)?),
        false => None,
    };
    let selftests = match &req.selftests {
        Some(s) => Some(super::selftests::prepare(s, &prov, kernel, scratch.path())?),
        None => None,
    };
    let attempt = NicBoot {
        req,
        topo: &topo,
        prov: &prov,
        kernel,
        channels,
        dir: scratch.path(),
        inject: &inject,
        selftests: selftests.as_ref(),
        run_start: start,
    };
    // `auto` is KVM when its probe runs a vCPU, yet on some hosts real guests
    // hang or QEMU dies (the build machines): it means "KVM where it really
    // works", so a KVM boot that fails is run again under TCG.
    let kvm_first = req.accel == AccelChoice::Auto && crate::accel::probe_kvm().is_ok();
    let first = if kvm_first { AccelChoice::Kvm } else { req.accel };
    let (mut spec, mut booted) = attempt.boot(first, "nic.sock")?;
    if kvm_first {
        if let Some(why) = booted.result.as_ref().err().and_then(kvm_failure) {
            eprintln!("manarig: --accel auto: {why}; running the guest again under TCG");
            (spec, booted) = attempt.boot(AccelChoice::Tcg, "nic-tcg.sock")?;
        }
    }
    let NicBootOutcome { result, marks, traffic, soak, phases } = booted;
    let specs: Vec<String> = inject.iter().map(ToString::to_string).collect();
    let result = match result {
        // With injections, a guest that panicked or never finished its report
        // is the driver not surviving: a FAIL, not a rig error.
        Err(qemu::LaunchError::GuestPanic { tail }) if !inject.is_empty() => {
            let why = "the guest kernel panicked";
            let mut out = unsurvived(req, &topo, kernel, why, &tail, &specs, start, provision_time, traffic);
            out.verdict.run.packages = packages;
            return Ok(out);
        }
        Err(qemu::LaunchError::Deadline { secs, tail }) if !inject.is_empty() => {
            let why = format!("no guest report within {secs} s: the guest hung");
            let mut out = unsurvived(req, &topo, kernel, &why, &tail, &specs, start, provision_time, traffic);
            out.verdict.run.packages = packages;
            return Ok(out);
        }
        other => other,
    };
    let booted = result.map_err(|source| RunError::Launch {
        topology: topo.name().to_owned(),
        release: kernel.release.clone(),
        source: Box::new(source),
    })?;
    let judging = Judging {
        req,
        topo: &topo,
        spec: &spec,
        channels,
        inject: &inject,
        specs: &specs,
        start,
        provision_time,
        phases,
        packages: &packages,
        selftests: selftests.as_ref(),
        against: against.as_ref(),
    };
    // A kernel that did not bring up the declared machine is a finding, not a rig error.
    let guest = topo.to_qemu_numbering();
    if let Some(f) = cpus_not_brought_up(&spec, &guest, &booted.report, &booted.report.kernel) {
        return judging.kernel_finding_outcome(booted, &f).map_err(|e| JudgeError::from(e).into());
    }
    let mut outcome = judging.outcome(booted, marks, traffic, soak)?;
    if let ImageFit::Unmodelled(why) = &fit {
        outcome.verdict = judge_without_model(&outcome.verdict, &topo.to_qemu_numbering(), &outcome.observed, why);
    }
    // Every CPU up, but no scheduling domains for the machine: a finding too.
    if let Some(f) = sched_domains_not_built(&outcome.report.warnings, &outcome.report.kernel) {
        outcome.verdict.add_sched_domains_finding(&f);
    }
    Ok(outcome)
}

/// Why a boot under KVM failed, in one line, when `--accel auto` should run
/// it again under TCG: QEMU died or the guest never finished (silent, hung,
/// panicked). `None` for what TCG would not change: a signal, the rig's own
/// abort (a device failure), a bad machine or report.
pub(crate) fn kvm_failure(e: &qemu::LaunchError) -> Option<String> {
    use qemu::LaunchError as L;
    let first = |s: &str| s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").to_owned();
    match e {
        L::KvmSilent { secs } => Some(format!("KVM passed the vCPU probe but the guest printed nothing in {secs} s")),
        L::Exited { status, stderr, .. } => Some(format!("QEMU died under KVM ({status}: {})", first(stderr))),
        L::Io { what, error: source } => Some(format!("QEMU could not run under KVM ({what}: {source})")),
        L::Deadline { secs, .. } => Some(format!("the KVM guest sent no report within {secs} s")),
        L::GuestPanic { tail } => {
            Some(format!("the KVM guest panicked ({})", first(&tail.lines().rev().collect::<Vec<_>>().join("\n"))))
        }
        _ => None,
    }
}

/// The Debian packages a run uses: QEMU (when private), the kernel's
/// packages (or a build's source), busybox, ethtool when `ethtool -L` or
/// traffic runs in the guest, irqbalance when the scenario asks for it, and
/// on arm64 with traffic the flows tool's emulator and x86_64 libraries.
fn run_packages(
    req: &RunRequest,
    topo: &Topology,
    prov: &provision::Provisioned,
    kernel: &provision::KernelInstall,
    channels: Option<u32>,
) -> Vec<provision::UsedPackage> {
    let mut tools = Vec::new();
    if channels.is_some() || req.traffic.is_some() {
        tools.push("ethtool");
    }
    if topo.scenario().irqbalance {
        tools.push("irqbalance");
    }
    if req.selftests.is_some() {
        tools.push("selftests");
    }
    if req.traffic.is_some() {
        tools.extend(super::flows_guest::packages_tool(prov));
    }
    prov.run_packages(kernel, &tools)
}

/// The outcome of a run with injections whose guest never finished its
/// report (`why`; `tail`: the last console lines): the model's checks on an
/// empty guest, not judged, and a failing `driver_survived`.
#[allow(clippy::too_many_arguments)]
fn unsurvived(
    req: &RunRequest,
    topo: &Topology,
    kernel: &provision::KernelInstall,
    why: &str,
    tail: &str,
    specs: &[String],
    start: Instant,
    provision_time: Duration,
    traffic: Option<TrafficBoot>,
) -> RunOutcome {
    let model = req.model.unwrap_or(req.kernel);
    let observed = Observed {
        kernel_release: kernel.release.clone(),
        kernel: model,
        model_basis: req.model_basis.clone(),
        accel: format!("{:?} (no guest report)", req.accel).to_lowercase(),
        nic_bdf: None,
        nic_numa_node: None,
        vectors: Vec::new(),
        probe_ok: false,
        probe_unfinished: false,
        dmesg_mana: Vec::new(),
    };
    let expected = expected_table(&topo.to_qemu_numbering(), model);
    let mut verdict = judge(topo, &observed, &expected);
    if let Some(label) = &req.label {
        verdict.run.name = format!("{}@{label}", topo.name());
    }
    verdict.judge_by_survival(crate::verdict::driver_did_not_survive(why, tail, specs));
    RunOutcome {
        verdict,
        observed,
        timings: RunTimings {
            provision: provision_time,
            boot_to_report: start.elapsed(),
            total: start.elapsed(),
            ..Default::default()
        },
        queues: None,
        report: crate::guest_protocol::GuestReport::default(),
        stages: Vec::new(),
        guest_times: Default::default(),
        speedups: req.speedups,
        traffic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qemu::LaunchError as L;

    #[test]
    fn a_kvm_boot_that_qemu_dies_in_or_the_guest_never_finishes_is_run_again_under_tcg() {
        // QEMU 11.1's abort under a nested KVM that lacks a vPMU (seen on the build machines).
        let died = L::Exited {
            status: "signal: 6 (SIGABRT) (core dumped)".into(),
            stderr:
                "\nqemu-system-x86_64: host doesn't support requested feature: vPMU\nqemu: failed to set MSR 0x10a\n"
                    .into(),
            tail: String::new(),
        };
        assert_eq!(
            kvm_failure(&died).as_deref(),
            Some(
                "QEMU died under KVM (signal: 6 (SIGABRT) (core dumped): qemu-system-x86_64: host doesn't support \
                 requested feature: vPMU)"
            )
        );
        assert!(kvm_failure(&L::KvmSilent { secs: 30 }).is_some_and(|w| w.contains("printed nothing in 30 s")));
        assert!(kvm_failure(&L::Deadline { secs: 120, tail: String::new() }).is_some());
        let panic = L::GuestPanic { tail: "a\nKernel panic - not syncing: Fatal exception\n".into() };
        assert!(kvm_failure(&panic).is_some_and(|w| w.contains("Kernel panic")), "{:?}", kvm_failure(&panic));
        // Not KVM's doing: a signal, the rig's own abort.
        assert_eq!(kvm_failure(&L::Interrupted), None);
        assert_eq!(kvm_failure(&L::Aborted { reason: "the device died".into(), tail: String::new() }), None);
    }

    #[test]
    fn a_file_whose_node_ids_a_guest_would_not_show_fails_before_the_cache_is_looked_at() {
        // Seed 002 with a memory-only node 0 in front: a guest on x86 shows it as node 2.
        let seed = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../topologies/seed-002.toml");
        let text = std::fs::read_to_string(seed).expect("seed-002");
        let text = text.replacen("[[numa.nodes]]", "[[numa.nodes]]\ncpus = \"\"\nmemory_mib = 64\n\n[[numa.nodes]]", 1);
        let text =
            text.replace("distances = [[10, 20], [20, 10]]", "distances = [[10, 20, 20], [20, 10, 20], [20, 20, 10]]");
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("memory-first.toml");
        std::fs::write(&file, text).expect("write");
        let mut req = RunRequest::new(&file, crate::model::KernelGen::V6_12);
        req.cache_dir = Some(dir.path().join("no-cache-here"));
        let started = Instant::now();
        let err = run_one(&req).expect_err("refused");
        assert!(
            matches!(&err, RunError::Topology(e) if matches!(**e, crate::topology::TopologyError::NodeOrder { .. })),
            "{err}"
        );
        let line = err.to_string();
        assert!(line.starts_with(&format!("{}: numa.nodes: a guest on x86 would show node 0 (memory-only) as node 2, node 1 (CPUs 0-3) as node 0, node 2 (CPUs 4-7) as node 1", file.display())), "{line}");
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    }
}
