//! One run in sequence ([`run_one`]): load the topology, provision, boot
//! (falling back from KVM to TCG under `--accel auto`), check the guest's
//! report for rig errors, and judge it, at every stage, against the model.

use super::boot::{NicBoot, NicBootOutcome};
use super::cache::{kernel_lock_id, provisioned};
use super::guest_checks::{guest_topology_matches, hotplug_ran, lifecycle_steps_ran};
use super::irqbalance::irqbalance_usable;
use super::other_nics::OtherNics;
use super::outcome::{RunOutcome, RunTimings, StageOutcome, TrafficBoot};
use super::request::{injections, RunRequest};
use super::{queues, report_to_verdict, timed_injections};
use crate::accel::AccelChoice;
use crate::guest_protocol::Marker;
use crate::model::{expected_stages, expected_table};
use crate::provision;
use crate::qemu;
use crate::topology::Topology;
use crate::traffic;
use crate::verdict::{
    check_cpu_state, judge, judge_irqbalance, judge_traffic, DebugLog, IrqbalanceInput, Observed, TrafficInput,
};
use anyhow::{Context, Result};
use device_model::server::DeviceStatus;
use std::time::{Duration, Instant};

/// How a run names its accelerator in reports: QEMU's `-accel` value and the
/// boot speed-ups used, e.g. `tcg,thread=single (speed-ups: cmdline, pvh)` or
/// `tcg,thread=single (speed-ups: none)`.
pub fn accel_label(accel: crate::accel::Accel, speedups: qemu::Speedups) -> String {
    let names = speedups.names();
    let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
    format!("{} (speed-ups: {names})", accel.qemu_arg())
}

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
    let attempt = NicBoot { req, topo: &topo, prov: &prov, kernel, channels, dir: scratch.path(), inject: &inject };
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

    let guest = topo.to_qemu_numbering();
    guest_topology_matches(&req.topology, &spec, &guest, guest.last_stage(), &booted.report)?;
    for stage in &booted.stages {
        guest_topology_matches(&req.topology, &spec, &guest, &stage.name, &stage.report)
            .with_context(|| format!("stage {}", stage.name))?;
    }
    hotplug_ran(&booted.report)?;
    if guest.scenario().irqbalance {
        irqbalance_usable(&booted.report)?;
    }
    if inject.is_empty() {
        // With injections a failed step is the driver's answer to the fault:
        // driver_survived judges it.
        lifecycle_steps_ran(&booted.report, channels, req.reprobe)?;
    }
    let model = req.model.unwrap_or(req.kernel);
    let mut accel = accel_label(booted.accel, booted.speedups);
    if !req.extra_cmdline.is_empty() {
        // A user's `--cmdline` items change the guest: every format's header shows them.
        accel = format!("{accel}, kernel command line + {}", req.extra_cmdline.join(" "));
    }
    // The model's table at each CPU state of the run (the probe, then after each
    // hotplug stage of the scenario); the report shows the last one.
    let expected_at = expected_stages(&guest, model);
    let expected_for = |stage: &str| crate::verdict::table_at(&expected_at, stage);
    let expected = expected_for(guest.last_stage());
    // Which guest PCI address is which NIC (several NICs: their slots; one: the report's).
    let bdfs = match spec.more_nics.is_empty() {
        true => vec![booted.report.nic.clone()],
        false => qemu::nic_slots::match_nics(&spec.nics().collect::<Vec<_>>(), &booted.report.nics),
    };
    let marks = marks.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let status_at = |is: &dyn Fn(&Marker) -> bool| {
        marks.iter().rev().find(|(l, _)| Marker::parse(l).is_some_and(|m| is(&m))).and_then(|(_, s)| s.clone())
    };
    // The guest's IRQ names follow the booted kernel's scheme, whatever model judges it
    // (`--model`): the queue table joins by that kernel's names.
    let table = |status: Option<DeviceStatus>, observed: &Observed| {
        status.and_then(|s| match queues::queue_table(&s, &observed.vectors, req.kernel) {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!("queue table: {e}");
                None
            }
        })
    };
    let mut stages = Vec::new();
    for crate::guest_protocol::Stage { name, report } in booted.stages {
        // rmmod runs after the first stage.
        if inject.is_empty() {
            lifecycle_steps_ran(&report, channels, false).with_context(|| format!("stage {name}"))?;
        }
        let observed = report_to_verdict::observed_of(&report, bdfs[0].as_deref(), model, &req.model_basis, &accel)?;
        let queues = table(status_at(&|m| *m == Marker::StageBegin(name.clone())), &observed);
        let verdict = judge(&topo, &observed, expected_for(&name));
        stages.push(StageOutcome { name, verdict, queues, report });
    }
    let observed = report_to_verdict::observed_of(&booted.report, bdfs[0].as_deref(), model, &req.model_basis, &accel)?;
    let report_status = status_at(&|m| matches!(m, Marker::ReportBegin(_)));
    let struck = report_status.as_ref().and_then(|s| s.core.as_ref()).map(|c| &c.counters.injected);
    timed_injections::timed_injections_happened(&inject, struck)?;
    let device_flows =
        report_status.as_ref().and_then(|s| s.core.as_ref()).map(|c| c.flows.flows.clone()).unwrap_or_default();
    let queues = table(report_status, &observed);
    let mut verdict = judge(&topo, &observed, expected);
    if !guest.scenario().is_default() {
        let mut states: Vec<(&str, &crate::guest_protocol::GuestCpuState)> =
            stages.iter().map(|s| (s.name.as_str(), &s.report.cpu_state)).collect();
        states.push((guest.last_stage(), &booted.report.cpu_state));
        verdict.add_check(check_cpu_state(&guest, &states, &booted.report.init_env));
    }
    if let Some(label) = &req.label {
        verdict.run.name = format!("{}@{label}", topo.name());
    }
    if topo.nic().num_ports > 1 {
        let plan = crate::model::vport_plan(&topo.to_qemu_numbering(), model);
        verdict.add_vport_check(crate::verdict::vports::vport_vectors_check(plan.as_ref(), queues.as_ref()));
    }
    if topo.nics().len() > 1 {
        let judged = OtherNics { topo: &topo, report: &booted.report, bdfs: &bdfs, model, req, accel: &accel };
        verdict.add_nics(judged.report(&verdict.run.name, &stages, &observed, expected)?);
    }
    let earlier = stages
        .iter()
        .map(|s| (s.name.as_str(), &s.verdict, report_to_verdict::stage_facts(&s.report, s.queues.clone())))
        .collect();
    verdict.add_stages(earlier, report_to_verdict::stage_facts(&booted.report, queues.clone()));
    if req.debug {
        let r = &booted.report;
        verdict.add_debug_reports(&DebugLog {
            state: r.debug.as_deref(),
            kmemleak: &r.kmemleak,
            klog: &r.klog,
            vectors: &observed.vectors,
            nr_cpus: topo.ncpu(),
        });
    }
    if let Some(t) = &traffic {
        let input = TrafficInput {
            planned: t.planned.as_deref().unwrap_or_default(),
            plan_error: t.plan_error.as_deref(),
            outcome: t.peer.outcome.as_ref(),
            peer_error: t.peer.error.as_deref(),
            device_flows: &device_flows,
            queues: queues.as_ref(),
            guest: &booted.report.traffic,
            host: traffic::HOST,
            guest_ip: traffic::GUEST,
        };
        let (report, checks) = judge_traffic(&input, &verdict.summary);
        verdict.add_traffic(report, checks);
    }
    if guest.scenario().irqbalance {
        let r = &booted.report;
        let input = IrqbalanceInput {
            run: &r.irqbalance,
            started: r.times.get("irqbalance").copied(),
            msix: &r.msix,
            nodes: &r.nodes,
            log: r.stderr.get("irqbalance").map_or(&[], Vec::as_slice),
        };
        let (report, check) = judge_irqbalance(&input);
        verdict.add_irqbalance(report, check);
    }
    if !inject.is_empty() {
        verdict.judge_by_survival(crate::verdict::driver_survived(&booted.report, &specs));
    }
    Ok(RunOutcome {
        verdict,
        observed,
        timings: RunTimings { provision: provision_time, boot_to_report: booted.to_report, total: start.elapsed() },
        queues,
        guest_times: booted.report.times.clone(),
        speedups: booted.speedups,
        report: booted.report,
        stages,
        traffic,
    })
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
