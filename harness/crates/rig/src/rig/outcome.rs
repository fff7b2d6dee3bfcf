//! What a finished run gives back: [`RunOutcome`] with its verdict and the
//! guest's report, the earlier stages ([`StageOutcome`]), the traffic side
//! ([`TrafficBoot`]) and where the time went ([`RunTimings`]).

use super::queues;
use crate::qemu;
use crate::traffic::peer::PeerReport;
use crate::traffic::plan::PlannedFlow;
use crate::verdict::{Observed, Verdict};
use std::time::Duration;

/// Where a run's time went, host wall clock.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct RunTimings {
    /// Loading the cache manifest (or provisioning on first use).
    pub provision: Duration,
    /// QEMU start to the report's end marker.
    pub boot_to_report: Duration,
    /// The whole run.
    pub total: Duration,
}

/// A finished run.
#[derive(Debug)]
pub struct RunOutcome {
    /// The verdict (its status decides the run's exit code), with the
    /// stages, their link and queue tables and the checks on them
    /// ([`Verdict::add_stages`]).
    pub verdict: Verdict,
    /// What the guest showed.
    pub observed: Observed,
    /// Timings.
    pub timings: RunTimings,
    /// The queue → EQ → MSI-X vector → IRQ → CPUs table while the guest
    /// printed its report (None when the device status could not be taken).
    pub queues: Option<queues::QueueTable>,
    /// The guest's report (times, carrier, ethtool and rmmod results, warnings).
    pub report: crate::guest_protocol::GuestReport,
    /// Earlier moments of the run (`first-probe` with `reprobe`), judged the same way.
    pub stages: Vec<StageOutcome>,
    /// The guest's milestones in guest seconds since boot (`init`, `modules`,
    /// `probe`, `ifup`, `settled`, `report`; see [`crate::guest_protocol::GuestReport::times`]).
    pub guest_times: std::collections::BTreeMap<String, f64>,
    /// The speed-ups the boot really used.
    pub speedups: qemu::Speedups,
    /// The traffic side of the run (with [`RunRequest::traffic`](super::RunRequest::traffic)).
    pub traffic: Option<TrafficBoot>,
}

/// One earlier moment of a run (a [`crate::guest_protocol::Stage`]).
#[derive(Debug)]
pub struct StageOutcome {
    /// The stage name (`first-probe`).
    pub name: String,
    /// The verdict of that moment's IRQ table against the same model.
    pub verdict: Verdict,
    /// Its queue table, if the device status was taken.
    pub queues: Option<queues::QueueTable>,
    /// Its report.
    pub report: crate::guest_protocol::GuestReport,
}

/// The traffic side of one boot.
#[derive(Debug, Clone, Default)]
pub struct TrafficBoot {
    /// The peer's view: the guest's hello, both ends' results.
    pub peer: PeerReport,
    /// The flows the rig planned, with the model's predictions (None: the
    /// guest never asked for a plan).
    pub planned: Option<Vec<PlannedFlow>>,
    /// Why no plan was made, if the planner failed.
    pub plan_error: Option<String>,
}
