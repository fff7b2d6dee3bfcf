//! A booted guest judged: its report checked for rig errors first, then its
//! MSI-X table at every stage against the model, and the run's other checks
//! (CPU state, vPorts, several NICs, debug reports, traffic, irqbalance, and
//! the driver's survival under fault injection) into one [`RunOutcome`].

use super::boot::Marks;
use super::guest_checks::{guest_topology_matches, hotplug_ran, lifecycle_steps_ran, GuestCheckError};
use super::irqbalance::{irqbalance_usable, IrqbalanceError};
use super::other_nics::OtherNics;
use super::outcome::{RunOutcome, RunTimings, StageOutcome, TrafficBoot};
use super::request::RunRequest;
use super::{queues, report_to_verdict, timed_injections};
use crate::guest_protocol::Marker;
use crate::model::expected_stages;
use crate::qemu;
use crate::topology::Topology;
use crate::traffic;
use crate::verdict::{
    check_cpu_state, judge, judge_irqbalance, judge_traffic, DebugLog, IrqbalanceInput, Observed, TrafficInput, Verdict,
};
use mana_device_api::inject::InjectSpec;
use mana_device_api::status::DeviceStatus;
use std::time::{Duration, Instant};

/// How a run names its accelerator in reports: QEMU's `-accel` value and the
/// boot speed-ups used, e.g. `tcg,thread=single (speed-ups: cmdline, pvh)` or
/// `tcg,thread=single (speed-ups: none)`.
pub fn accel_label(accel: crate::accel::Accel, speedups: qemu::Speedups) -> String {
    let names = speedups.names();
    let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
    format!("{} (speed-ups: {names})", accel.qemu_arg())
}

/// A booted guest whose report shows a rig error, or cannot be judged.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// The report shows a rig error.
    #[error(transparent)]
    Guest(#[from] GuestCheckError),
    /// A stage's report (before the last) shows a rig error.
    #[error("stage {stage}")]
    Stage {
        /// The stage (`probe`, …).
        stage: String,
        /// The rig error.
        #[source]
        source: GuestCheckError,
    },
    /// irqbalance could not run in the guest.
    #[error(transparent)]
    Irqbalance(#[from] IrqbalanceError),
    /// An IRQ's `affinity_hint` is not a cpumask.
    #[error(transparent)]
    Hint(#[from] report_to_verdict::BadHint),
    /// A timed injection never struck.
    #[error(transparent)]
    TimedInjections(#[from] timed_injections::TimedInjectionsMissed),
}

/// The device's status taken at the last marker line `is` accepts.
fn status_at(marks: &[(String, Option<DeviceStatus>)], is: &dyn Fn(&Marker) -> bool) -> Option<DeviceStatus> {
    marks.iter().rev().find(|(l, _)| Marker::parse(l).is_some_and(|m| is(&m))).and_then(|(_, s)| s.clone())
}

/// The device's status for the report's queue table: at the final unload's
/// mark (`MANARIG-UNLOAD`, printed just before the agent's last `rmmod`, which
/// destroys every queue before the report begins) when the run has one, else
/// at the report's begin marker.
fn queue_status(marks: &[(String, Option<DeviceStatus>)]) -> Option<DeviceStatus> {
    let before_unload = marks.iter().any(|(l, _)| Marker::parse(l) == Some(Marker::Unload));
    match before_unload {
        true => status_at(marks, &|m| *m == Marker::Unload),
        false => status_at(marks, &|m| matches!(m, Marker::ReportBegin(_))),
    }
}

/// The device at each selftest mark (`MANARIG-SELFTEST <k>`) whose status
/// was read; a mark seen twice (it cannot be) keeps its last status.
fn selftest_marks(
    marks: &[(String, Option<DeviceStatus>)],
) -> std::collections::BTreeMap<u32, crate::verdict::DeviceMark> {
    marks
        .iter()
        .filter_map(|(line, status)| match Marker::parse(line) {
            Some(Marker::Selftest(k)) => {
                let core = status.as_ref()?.core.as_ref()?;
                Some((k, crate::verdict::DeviceMark::of(&core.counters)))
            }
            _ => None,
        })
        .collect()
}

/// What every stage of a run is judged with.
struct Judged<'a> {
    /// The generation whose model judges.
    model: crate::model::KernelGen,
    /// The run's accelerator label ([`accel_label`]).
    accel: &'a str,
    /// NIC 0's guest PCI address.
    nic: Option<&'a str>,
    /// The model's table at each stage.
    expected_at: &'a [(String, crate::model::ExpectedTable)],
}

/// What the report shows that the run's other checks read.
struct RunFacts<'a> {
    report: &'a crate::guest_protocol::GuestReport,
    observed: &'a Observed,
    queues: Option<&'a crate::verdict::QueueTable>,
    device_flows: &'a [mana_device_api::flows::FlowRecord],
    /// The device's traffic totals when the report began.
    device_totals: Option<mana_device_api::traffic::Totals>,
    /// The device at each `MANARIG-SELFTEST` mark whose status was read.
    selftest_marks: std::collections::BTreeMap<u32, crate::verdict::DeviceMark>,
}

/// What the run knows about a guest that booted and printed its report.
pub(super) struct Judging<'a> {
    pub(super) req: &'a RunRequest,
    /// The topology file as loaded, with the request's scenario.
    pub(super) topo: &'a Topology,
    /// The machine QEMU booted.
    pub(super) spec: &'a qemu::MachineSpec,
    /// Combined channels set with `ethtool -L` (`--channels`, else the topology's).
    pub(super) channels: Option<u32>,
    /// The run's injections ([`injections`](super::injections)) and their text.
    pub(super) inject: &'a [InjectSpec],
    pub(super) specs: &'a [String],
    /// When the run started, and how long provisioning took.
    pub(super) start: Instant,
    pub(super) provision_time: Duration,
    /// Where the boot's host time went.
    pub(super) phases: super::outcome::BootPhases,
    /// The packages the run used ([`Provisioned::run_packages`](crate::provision::Provisioned::run_packages)).
    pub(super) packages: &'a [crate::provision::UsedPackage],
    /// What a debug kernel's reports are judged against (debug runs without injections).
    pub(super) against: Option<&'a crate::verdict::debug_reports::Against>,
    /// The run's selftests, prepared (their cases become checks).
    pub(super) selftests: Option<&'a super::selftests::PreparedSelftests>,
}

impl Judging<'_> {
    /// The run's accelerator label ([`accel_label`]), with a user's
    /// `--cmdline` items, which change the guest: every format's header shows them.
    pub(super) fn run_accel_label(&self, booted: &qemu::BootOutcome) -> String {
        let accel = accel_label(booted.accel, booted.speedups);
        match self.req.extra_cmdline.is_empty() {
            true => accel,
            false => format!("{accel}, kernel command line + {}", self.req.extra_cmdline.join(" ")),
        }
    }

    /// The run's outcome from the boot's result, the device's status at the
    /// report's markers (`marks`), the traffic side and what the rig gathered
    /// at a soak's marks: the rig errors first, then the model at every stage
    /// ([`Judging::stage_outcomes`]) and at the report, then the run's other
    /// checks ([`Judging::add_run_checks`]).
    ///
    /// # Errors
    /// [`JudgeError`]: a rig error in the report ([`Judging::rig_errors`]), an
    /// `affinity_hint` that is not a hex cpumask, or a timed injection that
    /// never struck.
    pub(super) fn outcome(
        &self,
        booted: qemu::BootOutcome,
        marks: Marks,
        traffic: Option<TrafficBoot>,
        soak: Option<super::soak::SoakLog>,
    ) -> Result<RunOutcome, JudgeError> {
        let (req, topo, spec) = (self.req, self.topo, self.spec);
        let guest = topo.to_qemu_numbering();
        self.rig_errors(&guest, &booted)?;
        let model = req.model.unwrap_or(req.kernel);
        let accel = self.run_accel_label(&booted);
        // The model's table at each CPU state of the run (the probe, then after each
        // hotplug stage of the scenario); the report shows the last one.
        let expected_at = expected_stages(&guest, model);
        let expected = crate::verdict::table_at(&expected_at, guest.last_stage());
        // Which guest PCI address is which NIC (several NICs: their slots; one: the report's).
        let bdfs = match spec.more_nics.is_empty() {
            true => vec![booted.report.nic.clone()],
            false => qemu::nic_slots::match_nics(&spec.nics().collect::<Vec<_>>(), &booted.report.nics),
        };
        let marks = marks.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let at = Judged { model, accel: &accel, nic: bdfs[0].as_deref(), expected_at: &expected_at };
        let stages = self.stage_outcomes(&booted.stages, &at, &marks)?;
        let observed = report_to_verdict::observed_of(&booted.report, at.nic, model, &req.model_basis, &accel)?;
        let report_status = status_at(&marks, &|m| matches!(m, Marker::ReportBegin(_)));
        let struck = report_status.as_ref().and_then(|s| s.core.as_ref()).map(|c| &c.counters.injected);
        timed_injections::timed_injections_happened(self.inject, struck)?;
        let device_flows =
            report_status.as_ref().and_then(|s| s.core.as_ref()).map(|c| c.flows.flows.clone()).unwrap_or_default();
        let device_totals = report_status.as_ref().and_then(|s| s.core.as_ref()).map(|c| c.counters.traffic);
        let selftest_marks = selftest_marks(&marks);
        let queues = self.queue_table(queue_status(&marks), &observed);
        if booted.report.unload_handshake == Some(crate::guest_protocol::UnloadHandshake::Timeout) {
            // The launcher answers MANARIG-UNLOAD once the status is taken
            // (qemu::go_ahead): the answer was lost, or came too late.
            let waited = booted.report.times.get("unload-go").zip(booted.report.times.get("unload-mark"));
            let waited = waited.map_or("its wait".to_owned(), |(go, mark)| format!("{:.1} guest s", go - mark));
            tracing::warn!("the guest's final unload had no go-ahead from the rig: it ran `rmmod mana` after {waited}");
        }
        let mut verdict = self.report_verdict(&observed, expected);
        if !guest.scenario().is_default() {
            let mut states: Vec<(&str, &crate::guest_protocol::GuestCpuState)> =
                stages.iter().map(|s| (s.name.as_str(), &s.report.cpu_state)).collect();
            states.push((guest.last_stage(), &booted.report.cpu_state));
            verdict.add_check(check_cpu_state(&guest, &states, &booted.report.init_env));
        }
        if topo.nic().num_ports > 1 {
            let plan = crate::model::vport_plan(&topo.to_qemu_numbering(), model);
            verdict.add_check(crate::verdict::vports::vport_vectors_check(plan.as_ref(), queues.as_ref()));
        }
        if topo.nics().len() > 1 {
            let judged = OtherNics { topo, report: &booted.report, bdfs: &bdfs, model, req, accel: &accel };
            verdict.add_nics(judged.report(&verdict.run.name, &stages, &observed, expected)?);
        }
        let earlier = stages
            .iter()
            .map(|s| (s.name.as_str(), &s.verdict, report_to_verdict::stage_facts(&s.report, s.queues.clone())))
            .collect();
        verdict.add_stages(earlier, report_to_verdict::stage_facts(&booted.report, queues.clone()));
        verdict.add_queue_pairs(self.report_moved());
        let run = RunFacts {
            report: &booted.report,
            observed: &observed,
            queues: queues.as_ref(),
            device_flows: &device_flows,
            device_totals,
            selftest_marks,
        };
        self.add_run_checks(&mut verdict, &run, traffic.as_ref(), soak);
        Ok(RunOutcome { queues, stages, traffic, ..self.finished(booted, verdict, observed) })
    }

    /// What ran in the guest between the agent's channel count and the
    /// device's state at the report and may change the queues (the selftests
    /// take links down and set channels; a soak runs `ethtool -L` and link
    /// events): the `queue_pairs` check does not judge the report then.
    fn report_moved(&self) -> Option<&'static str> {
        if self.req.soak.is_some() {
            Some("the soak")
        } else if self.selftests.is_some() {
            Some("the selftests")
        } else {
            None
        }
    }

    /// The model's verdict on what the guest showed at the report
    /// (`expected`: the model's table then), named `<topology>@<label>` when
    /// the request has a label, with the packages the run used.
    pub(super) fn report_verdict(&self, observed: &Observed, expected: &crate::model::ExpectedTable) -> Verdict {
        let mut verdict = judge(self.topo, observed, expected);
        if let Some(label) = &self.req.label {
            verdict.run.name = format!("{}@{label}", self.topo.name());
        }
        verdict.run.packages = self.packages.to_vec();
        verdict
    }

    /// A run's outcome from its `verdict` on what the guest showed
    /// (`observed`): the boot's report, guest times and speed-ups, and the
    /// run's timings until now; without a queue table, earlier stages or
    /// traffic, which a caller that has them sets.
    pub(super) fn finished(&self, booted: qemu::BootOutcome, verdict: Verdict, observed: Observed) -> RunOutcome {
        RunOutcome {
            verdict,
            observed,
            timings: RunTimings::finish(self.start, self.provision_time, self.phases),
            queues: None,
            guest_times: booted.report.times.clone(),
            speedups: booted.speedups,
            report: booted.report,
            stages: Vec::new(),
            traffic: None,
        }
    }

    /// Each stage before the report judged against the model's table at that
    /// stage, with the device's queue table at its begin marker (in `marks`).
    ///
    /// # Errors
    /// A stage's lifecycle step failed (without injections), or an
    /// `affinity_hint` is not a hex cpumask.
    fn stage_outcomes(
        &self,
        stages: &[crate::guest_protocol::Stage],
        at: &Judged<'_>,
        marks: &[(String, Option<DeviceStatus>)],
    ) -> Result<Vec<StageOutcome>, JudgeError> {
        let mut out = Vec::new();
        for crate::guest_protocol::Stage { name, report } in stages {
            // rmmod runs after the first stage.
            if self.inject.is_empty() {
                lifecycle_steps_ran(report, self.channels, false)
                    .map_err(|source| JudgeError::Stage { stage: name.clone(), source })?;
            }
            let observed = report_to_verdict::observed_of(report, at.nic, at.model, &self.req.model_basis, at.accel)?;
            let queues = self.queue_table(status_at(marks, &|m| *m == Marker::StageBegin(name.clone())), &observed);
            let verdict = judge(self.topo, &observed, crate::verdict::table_at(at.expected_at, name));
            out.push(StageOutcome { name: name.clone(), verdict, queues, report: report.clone() });
        }
        Ok(out)
    }

    /// The device's queue table joined with the guest's vectors, when the
    /// device's status was taken. The guest's IRQ names follow the booted
    /// kernel's scheme, whatever model judges it (`--model`): the table joins
    /// by that kernel's names.
    fn queue_table(&self, status: Option<DeviceStatus>, observed: &Observed) -> Option<crate::verdict::QueueTable> {
        status.and_then(|s| match queues::queue_table(&s, &observed.vectors, self.req.kernel) {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!("queue table: {e}");
                None
            }
        })
    }

    /// The run's checks beside the model's: a debug kernel's reports and
    /// unload, the traffic (or a soak's rounds), irqbalance, the selftests, and under injections
    /// the driver's survival (which then judges the run).
    fn add_run_checks(
        &self,
        verdict: &mut Verdict,
        run: &RunFacts<'_>,
        traffic: Option<&TrafficBoot>,
        soak: Option<super::soak::SoakLog>,
    ) {
        let (req, r) = (self.req, run.report);
        if req.debug {
            let mana_frames = crate::verdict::debug_reports::Against::default();
            let log = DebugLog {
                state: r.debug.as_deref(),
                kmemleak: &r.kmemleak,
                klog: &r.klog,
                vectors: &run.observed.vectors,
                nr_cpus: self.topo.ncpu(),
            };
            verdict.add_debug_reports(&log, self.against.unwrap_or(&mana_frames));
            if self.inject.is_empty() {
                // The teardown the agent ran after the report's snapshot.
                verdict.add_check(crate::verdict::driver_unloaded(r));
            }
        }
        if let Some(options) = &req.soak {
            // A soak's rounds are judged as a whole; the one-run traffic
            // checks (one plan, one RSS state) do not apply.
            let (report, checks) = super::soak::judge(options, &soak.unwrap_or_default(), traffic, r);
            verdict.add_soak(report, checks);
        } else if let Some(t) = traffic {
            let input = TrafficInput {
                planned: t.planned.as_deref().unwrap_or_default(),
                plan_error: t.plan_error.as_deref(),
                outcome: t.peer.outcome.as_ref(),
                peer_error: t.peer.error.as_deref(),
                device_flows: run.device_flows,
                queues: run.queues,
                guest: &r.traffic,
                host: traffic::HOST,
                guest_ip: traffic::GUEST,
            };
            let (report, checks) = judge_traffic(&input, &verdict.summary);
            verdict.add_traffic(report, checks);
        }
        if self.topo.scenario().irqbalance {
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
        if let Some(prepared) = self.selftests {
            let input = crate::verdict::SelftestsInput {
                guest: &r.selftests,
                asked: &prepared.tests,
                baseline: &prepared.baseline,
                source: &prepared.source_label,
                timer_slack_us: prepared.timer_slack_us,
                setup_errors: r.stderr.get("selftest-setup").map_or(&[], Vec::as_slice),
                device_totals: run.device_totals.as_ref(),
                device_marks: &run.selftest_marks,
                missed_is_no_wqe: self.req.kernel == crate::model::KernelGen::V7,
            };
            let (report, checks) = crate::verdict::judge_selftests(&input);
            verdict.add_selftests(report, checks);
        }
        if !self.inject.is_empty() {
            verdict.judge_by_survival(crate::verdict::driver_survived(r, self.specs));
        }
    }

    /// The report (and each stage's) shows no rig error: the guest's topology
    /// is the machine's, the hotplug writes and the lifecycle steps ran, and
    /// irqbalance could run when asked for.
    ///
    /// # Errors
    /// The first rig error, naming the stage where it was not the report.
    fn rig_errors(&self, guest: &Topology, booted: &qemu::BootOutcome) -> Result<(), JudgeError> {
        let (req, spec, inject, channels) = (self.req, self.spec, self.inject, self.channels);
        guest_topology_matches(&req.topology, spec, guest, guest.last_stage(), &booted.report)?;
        for stage in &booted.stages {
            guest_topology_matches(&req.topology, spec, guest, &stage.name, &stage.report)
                .map_err(|source| JudgeError::Stage { stage: stage.name.clone(), source })?;
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
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A status told apart by its reset count.
    fn status(resets: u64) -> Option<DeviceStatus> {
        let mut s = DeviceStatus::default();
        s.shell.resets = resets;
        Some(s)
    }

    #[test]
    fn the_queue_table_is_the_devices_before_the_final_unload_when_the_run_unloads() {
        // guest-images/init.sh: a run with manarig.unload=1 prints MANARIG-UNLOAD,
        // then rmmod destroys every queue, then the report begins.
        let unloading = vec![
            ("MANARIG-SELFTEST 0".to_owned(), status(1)),
            ("MANARIG-UNLOAD".to_owned(), status(2)),
            ("MANARIG-REPORT-BEGIN 3".to_owned(), status(3)),
        ];
        assert_eq!(queue_status(&unloading), status(2));
        let staying =
            vec![("MANARIG-STAGE-BEGIN probe".to_owned(), status(1)), ("MANARIG-REPORT-BEGIN 3".to_owned(), status(3))];
        assert_eq!(queue_status(&staying), status(3));
        // A mark whose status could not be read leaves no table; the report's is not taken instead.
        let unread = vec![("MANARIG-UNLOAD".to_owned(), None), ("MANARIG-REPORT-BEGIN 3".to_owned(), status(3))];
        assert_eq!(queue_status(&unread), None);
    }
}
