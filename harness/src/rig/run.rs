//! One run in sequence ([`run_one`]): load the topology, provision, boot
//! (again under TCG when `--accel auto`'s KVM guest stays silent), then judge
//! the booted guest (`judging`); under fault injection a guest that panicked
//! or hung is the driver not surviving, a failing outcome rather than an error.

use super::boot::{NicBoot, NicBootOutcome};
use super::cache::{kernel_lock_id, provisioned};
use super::judging::Judging;
use super::outcome::{RunOutcome, RunTimings, TrafficBoot};
use super::request::{injections, RunRequest};
use crate::accel::AccelChoice;
use crate::model::expected_table;
use crate::provision;
use crate::qemu;
use crate::topology::Topology;
use crate::verdict::{judge, Observed};
use anyhow::{Context, Result};
use std::time::{Duration, Instant};

/// Run one topology on one kernel, end to end.
///
/// # Errors
/// Rig errors only (bad topology file, provisioning, QEMU, device, guest panic,
/// observed topology differing from the file); a mismatch against the model is
/// a failing [`Verdict`](crate::verdict::Verdict), not an error.
pub fn run_one(req: &RunRequest) -> Result<RunOutcome> {
    let start = Instant::now();
    let topo = Topology::load(&req.topology)?.with_scenario(&req.topology.display().to_string(), &req.scenario)?;
    let prov = provisioned(req.cache_dir.as_deref())?;
    let provision_time = start.elapsed();
    let kernel = match &req.custom_kernel {
        Some(k) => k,
        None => prov.kernel(kernel_lock_id(req.kernel))?,
    };
    let scratch =
        crate::scratch::ScratchDir::new("manarig-run-").context("cannot create a temporary folder for the run")?;
    let channels = req.channels.or(topo.nic().channels);
    let inject = injections(&req.topology, &topo, &req.inject)?;
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
    };
    let (mut spec, mut booted) = attempt.boot(req.accel, "nic.sock")?;
    if req.accel == AccelChoice::Auto && matches!(booted.result, Err(qemu::LaunchError::KvmSilent { .. })) {
        // The KVM probe runs a vCPU, yet on some hosts real guests hang
        // (the build machines): `auto` means "KVM where it really works".
        eprintln!("manarig: KVM passed the vCPU probe but the guest printed nothing: --accel auto falls back to TCG");
        (spec, booted) = attempt.boot(AccelChoice::Tcg, "nic-tcg.sock")?;
    }
    let NicBootOutcome { result, marks, traffic } = booted;
    let specs: Vec<String> = inject.iter().map(ToString::to_string).collect();
    let result = match result {
        // With injections, a guest that panicked or never finished its report
        // is the driver not surviving: a FAIL, not a rig error.
        Err(qemu::LaunchError::GuestPanic { tail }) if !inject.is_empty() => {
            let why = "the guest kernel panicked";
            return Ok(unsurvived(req, &topo, kernel, why, &tail, &specs, start, provision_time, traffic));
        }
        Err(qemu::LaunchError::Deadline { secs, tail }) if !inject.is_empty() => {
            let why = format!("no guest report within {secs} s: the guest hung");
            return Ok(unsurvived(req, &topo, kernel, &why, &tail, &specs, start, provision_time, traffic));
        }
        other => other,
    };
    let booted = result.with_context(|| format!("booting {} on Linux {}", topo.name(), kernel.release))?;
    let judging = Judging {
        req,
        topo: &topo,
        spec: &spec,
        channels,
        inject: &inject,
        specs: &specs,
        start,
        provision_time,
        selftests: selftests.as_ref(),
    };
    judging.outcome(booted, marks, traffic)
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
        timings: RunTimings { provision: provision_time, boot_to_report: start.elapsed(), total: start.elapsed() },
        queues: None,
        report: crate::guest_protocol::GuestReport::default(),
        stages: Vec::new(),
        guest_times: Default::default(),
        speedups: req.speedups,
        traffic,
    }
}
