//! What a finished run gives back: [`RunOutcome`] with its verdict and the
//! guest's report, the earlier stages ([`StageOutcome`]), the traffic side
//! ([`TrafficBoot`]) and where the time went ([`RunTimings`]).

use super::queues;
use crate::qemu;
use crate::traffic::peer::PeerReport;
use crate::traffic::plan::PlannedFlow;
use crate::verdict::{Observed, Verdict};
use std::time::Duration;

/// Where a run's time went, host wall clock, phase by phase in run order:
/// `before_boot`, `devices_start`, `boot_prepare`, `boot_to_report`,
/// `teardown`, `judging` add up to `total` (`provision` is part of
/// `before_boot`, `initramfs` of `boot_prepare`; `first_output` and
/// `report_begin` are moments inside `boot_to_report`). `cargo xtask bench
/// boot` sets them beside a bare boot's.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct RunTimings {
    /// Loading the cache manifest (or provisioning on first use).
    pub provision: Duration,
    /// The run's start until the boot with the NIC begins: the topology, the
    /// cache manifest, the kernel, a debug kernel's stock baseline, the
    /// selftests' tree.
    pub before_boot: Duration,
    /// Starting the device processes (and the traffic peer) until their
    /// sockets answer.
    pub devices_start: Duration,
    /// The guest's options and files, the initramfs and QEMU's arguments,
    /// until QEMU starts.
    pub boot_prepare: Duration,
    /// Writing the initramfs (part of `boot_prepare`).
    pub initramfs: Duration,
    /// QEMU start to the report's end marker.
    pub boot_to_report: Duration,
    /// QEMU start to the guest's first console line (None: none came).
    pub first_output: Option<Duration>,
    /// QEMU start to the report's begin marker (None: none came).
    pub report_begin: Option<Duration>,
    /// The report's end until QEMU is reaped, the devices stopped and the
    /// peer's results read.
    pub teardown: Duration,
    /// Judging the report (the rest of `total`).
    pub judging: Duration,
    /// The whole run.
    pub total: Duration,
}

/// The host's phases of one boot with the NIC (see [`RunTimings`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct BootPhases {
    /// The run's start until the boot began.
    pub(super) before_boot: Duration,
    /// Device processes and peer started.
    pub(super) devices_start: Duration,
    /// Guest set-up, initramfs and QEMU's arguments.
    pub(super) boot_prepare: Duration,
    /// The initramfs alone (part of `boot_prepare`).
    pub(super) initramfs: Duration,
    /// QEMU start to the report's end.
    pub(super) boot_to_report: Duration,
    /// QEMU start to the first console line and to the report's begin.
    pub(super) moments: crate::qemu::BootMoments,
    /// QEMU stopped, devices stopped, peer finished.
    pub(super) teardown: Duration,
}

impl RunTimings {
    /// The timings of a run that began at `start`, spent `provision` on the
    /// cache manifest and booted in `phases`; judging is what is left of the
    /// time until now.
    pub(super) fn finish(start: std::time::Instant, provision: Duration, phases: BootPhases) -> Self {
        let total = start.elapsed();
        let BootPhases { before_boot, devices_start, boot_prepare, initramfs, boot_to_report, moments, teardown } =
            phases;
        let booted = before_boot + devices_start + boot_prepare + boot_to_report + teardown;
        RunTimings {
            provision,
            before_boot,
            devices_start,
            boot_prepare,
            initramfs,
            boot_to_report,
            first_output: moments.first_output,
            report_begin: moments.report_begin,
            teardown,
            judging: total.saturating_sub(booted),
            total,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_runs_phases_and_its_judging_add_up_to_its_whole_time() {
        let ms = Duration::from_millis;
        let phases = BootPhases {
            before_boot: ms(30),
            devices_start: ms(20),
            boot_prepare: ms(10),
            initramfs: ms(4),
            boot_to_report: ms(50),
            moments: crate::qemu::BootMoments { first_output: Some(ms(8)), report_begin: Some(ms(40)) },
            teardown: ms(5),
        };
        let start = Instant::now() - ms(200);
        let t = RunTimings::finish(start, ms(7), phases);
        assert!(t.total >= ms(200));
        assert_eq!(t.provision, ms(7));
        let parts = t.before_boot + t.devices_start + t.boot_prepare + t.boot_to_report + t.teardown + t.judging;
        assert_eq!(parts, t.total);
        assert!(t.judging >= ms(85), "judging is the rest: {:?}", t.judging);
        assert_eq!((t.initramfs, t.first_output, t.report_begin), (ms(4), Some(ms(8)), Some(ms(40))));
    }

    #[test]
    fn phases_longer_than_the_run_leave_no_negative_judging() {
        let phases = BootPhases { boot_to_report: Duration::from_secs(3600), ..Default::default() };
        let t = RunTimings::finish(Instant::now(), Duration::ZERO, phases);
        assert_eq!(t.judging, Duration::ZERO);
    }
}
