//! Where the wall time of one boot goes, phase by phase (`cargo xtask bench
//! boot`): a run's [`harness::rig::RunTimings`] and a bare boot's
//! [`harness::qemu::BootOutcome`] cut into the same [`Phase`]s, host seconds,
//! from the rig's own stamps (its phases, the host's arrival times of the first
//! console line and of the report's begin and end markers) and two of the
//! agent's (guest uptime at `/init` and at the report's end).
//!
//! The guest's two stamps are placed on the host clock through the report's
//! end: under TCG the guest's clock runs with the host's (docs/boot-speed.md),
//! so QEMU start → the kernel's clock is the host's seconds to the end marker
//! minus the guest's uptime at `time report` (the marker follows that line at
//! once). The phases add up to the whole: [`Split::total`].

use std::collections::BTreeMap;
use std::time::Duration;

/// One phase of a boot, in run order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading the topology, the cache manifest, finding the kernel.
    HostBefore,
    /// The device processes (and the traffic peer) starting until their sockets answer.
    Devices,
    /// Writing the initramfs.
    Initramfs,
    /// The rest before QEMU starts: the guest's options, the accelerator
    /// checks, the report channel's FIFOs, QEMU's arguments.
    QemuArgs,
    /// QEMU start → the guest kernel's clock starts: QEMU's own start, the
    /// firmware or PVH entry, the kernel's setup before timekeeping.
    ToKernel,
    /// The kernel's clock → `/init` (guest `time init`): initcalls, the
    /// initramfs unpacked, freeing init memory, the exec of `/init`.
    Kernel,
    /// `/init` → the report's begin marker on the host: the agent's work
    /// (modules, probe, `ip link set up`, the vectors firing).
    Agent,
    /// The report's begin → end marker on the host: gathering it in the guest
    /// while it crosses the emulated UART.
    Report,
    /// The end marker → QEMU reaped, the devices stopped, the peer's results read.
    Stop,
    /// The verdict (a bare boot has none).
    Judging,
}

impl Phase {
    /// Every phase, in run order.
    pub const ALL: [Phase; 10] = [
        Phase::HostBefore,
        Phase::Devices,
        Phase::Initramfs,
        Phase::QemuArgs,
        Phase::ToKernel,
        Phase::Kernel,
        Phase::Agent,
        Phase::Report,
        Phase::Stop,
        Phase::Judging,
    ];

    /// The phase's name in the bench's table.
    pub fn name(self) -> &'static str {
        match self {
            Phase::HostBefore => "host before QEMU (topology, cache, kernel)",
            Phase::Devices => "device processes start, ready",
            Phase::Initramfs => "initramfs written",
            Phase::QemuArgs => "guest options, QEMU args",
            Phase::ToKernel => "QEMU start → kernel clock",
            Phase::Kernel => "kernel → /init (guest)",
            Phase::Agent => "agent: /init → report begin",
            Phase::Report => "report: begin → end on the host",
            Phase::Stop => "QEMU and devices stop",
            Phase::Judging => "verdict",
        }
    }

    /// The phase's short name in one-line summaries.
    pub fn short(self) -> &'static str {
        match self {
            Phase::HostBefore => "host",
            Phase::Devices => "devices",
            Phase::Initramfs => "initramfs",
            Phase::QemuArgs => "args",
            Phase::ToKernel => "to kernel",
            Phase::Kernel => "kernel",
            Phase::Agent => "agent",
            Phase::Report => "report",
            Phase::Stop => "stop",
            Phase::Judging => "verdict",
        }
    }
}

/// The stamps one boot gives, seconds: host wall clock unless named guest.
/// `None` where the boot did not give the stamp (an agent without the time,
/// a marker that never arrived).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stamps {
    /// Before the boot: topology, cache manifest, kernel.
    pub host_before: f64,
    /// Device processes started and ready (0 for a bare boot).
    pub devices: f64,
    /// Everything between those and QEMU's start, the initramfs included.
    pub prepare: f64,
    /// The initramfs alone (part of `prepare`).
    pub initramfs: f64,
    /// QEMU start → the report's end marker.
    pub to_report: f64,
    /// QEMU start → the first console line.
    pub first_output: Option<f64>,
    /// QEMU start → the report's begin marker.
    pub report_begin: Option<f64>,
    /// The end marker → QEMU and the devices stopped.
    pub stop: f64,
    /// The verdict (0 for a bare boot).
    pub judging: f64,
    /// Guest uptime at `/init` (the agent's `time init`).
    pub guest_init: Option<f64>,
    /// Guest uptime at the report's last timed line (`time report`).
    pub guest_report: Option<f64>,
}

impl Stamps {
    /// A run's stamps: its timings and the agent's times
    /// ([`harness::rig::RunOutcome::guest_times`]).
    pub fn of_run(t: &harness::rig::RunTimings, guest: &BTreeMap<String, f64>) -> Stamps {
        let s = Duration::as_secs_f64;
        Stamps {
            host_before: s(&t.before_boot),
            devices: s(&t.devices_start),
            prepare: s(&t.boot_prepare),
            initramfs: s(&t.initramfs),
            to_report: s(&t.boot_to_report),
            first_output: t.first_output.as_ref().map(s),
            report_begin: t.report_begin.as_ref().map(s),
            stop: s(&t.teardown),
            judging: s(&t.judging),
            guest_init: guest.get("init").copied(),
            guest_report: guest.get("report").copied(),
        }
    }

    /// A bare boot's stamps: `before` seconds before [`harness::qemu::boot`], then its outcome.
    pub fn of_bare(before: f64, b: &harness::qemu::BootOutcome) -> Stamps {
        let s = Duration::as_secs_f64;
        Stamps {
            host_before: before,
            devices: 0.0,
            prepare: s(&b.prepare),
            initramfs: s(&b.initramfs),
            to_report: s(&b.to_report),
            first_output: b.moments.first_output.as_ref().map(s),
            report_begin: b.moments.report_begin.as_ref().map(s),
            stop: s(&b.stop),
            judging: 0.0,
            guest_init: b.report.times.get("init").copied(),
            guest_report: b.report.times.get("report").copied(),
        }
    }
}

/// One boot's seconds per [`Phase`] (NaN where a stamp was missing), and when
/// its first console line came.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    /// Seconds per phase, in [`Phase::ALL`]'s order.
    pub seconds: [f64; Phase::ALL.len()],
    /// QEMU start → the first console line, host seconds (NaN: none came).
    pub first_output: f64,
}

impl Split {
    /// The phases of `st`. Without the guest's two times or the begin
    /// marker, the guest's phases it would cut are NaN (and so is
    /// [`Split::total`]); the host's phases are always there.
    pub fn of(st: &Stamps) -> Split {
        let nan = |v: Option<f64>| v.unwrap_or(f64::NAN);
        let to_kernel = st.to_report - nan(st.guest_report);
        let kernel = nan(st.guest_init);
        let report = st.to_report - nan(st.report_begin);
        let agent = st.to_report - to_kernel - kernel - report;
        let seconds = [
            st.host_before,
            st.devices,
            st.initramfs,
            st.prepare - st.initramfs,
            to_kernel,
            kernel,
            agent,
            report,
            st.stop,
            st.judging,
        ];
        Split { seconds, first_output: nan(st.first_output) }
    }

    /// The seconds of `phase`.
    pub fn get(&self, phase: Phase) -> f64 {
        let i = Phase::ALL.iter().position(|&p| p == phase).unwrap_or(0);
        self.seconds[i]
    }

    /// The phases' sum: the boot's whole time when every stamp was there.
    pub fn total(&self) -> f64 {
        self.seconds.iter().sum()
    }
}

/// Median, lowest and highest of the finite values in `v` (None when there is none).
pub fn spread(v: impl IntoIterator<Item = f64>) -> Option<(f64, f64, f64)> {
    let mut v: Vec<f64> = v.into_iter().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let median = *v.get(v.len() / 2)?;
    Some((median, v[0], v[v.len() - 1]))
}

/// `median (low-high)` seconds, with a sign when `signed`; `?` without values.
fn cell(v: Option<(f64, f64, f64)>, signed: bool) -> String {
    match v {
        Some((m, lo, hi)) if signed => format!("{m:+.2} ({lo:+.2} to {hi:+.2})"),
        Some((m, lo, hi)) => format!("{m:.2} ({lo:.2}-{hi:.2})"),
        None => "?".into(),
    }
}

/// The table of `pairs` (a run's split, its bare boot's split): per phase the
/// run's, the bare boot's and the pair's difference, each as median (range)
/// over the pairs, seconds; then the first console line's time.
pub fn table(pairs: &[(Split, Split)]) -> Vec<String> {
    let mut lines =
        vec!["| phase | run, s | bare boot, s | run − bare, s |".to_string(), "| --- | --- | --- | --- |".to_string()];
    let row = |name: &str, f: &dyn Fn(&Split) -> f64| {
        let run = spread(pairs.iter().map(|(r, _)| f(r)));
        let bare = spread(pairs.iter().map(|(_, b)| f(b)));
        let added = spread(pairs.iter().map(|(r, b)| f(r) - f(b)));
        format!("| {name} | {} | {} | {} |", cell(run, false), cell(bare, false), cell(added, true))
    };
    for p in Phase::ALL {
        lines.push(row(p.name(), &|s: &Split| s.get(p)));
    }
    lines.push(row("whole (sum of the phases)", &Split::total));
    lines.push(row("(QEMU start → first console line)", &|s: &Split| s.first_output));
    lines
}

/// One pair's difference per phase on one line (`host +0.00 | devices +0.01 | …`).
pub fn pair_line(run: &Split, bare: &Split) -> String {
    Phase::ALL
        .iter()
        .map(|&p| {
            let d = run.get(p) - bare.get(p);
            if d.is_finite() {
                format!("{} {d:+.2}", p.short())
            } else {
                format!("{} ?", p.short())
            }
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The phases whose median difference (run − bare) is largest, biggest first,
/// with their seconds: what the run's added time is made of (`agent +0.31 s,
/// report +0.05 s`). Only differences of at least `min` seconds.
pub fn largest_added(pairs: &[(Split, Split)], min: f64) -> String {
    let mut added: Vec<(Phase, f64)> = Phase::ALL
        .iter()
        .filter_map(|&p| Some((p, spread(pairs.iter().map(|(r, b)| r.get(p) - b.get(p)))?.0)))
        .filter(|(_, d)| *d >= min)
        .collect();
    added.sort_by(|a, b| b.1.total_cmp(&a.1));
    if added.is_empty() {
        return format!("no phase adds {min:.2} s or more");
    }
    added.iter().map(|(p, d)| format!("{} {d:+.2} s", p.short())).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run as the rig stamps it (numbers of the shape a seed 002 run on
    /// 6.12-min gives on a quiet host: docs/boot-speed.md).
    fn run_stamps() -> Stamps {
        Stamps {
            host_before: 0.05,
            devices: 0.02,
            prepare: 0.04,
            initramfs: 0.03,
            to_report: 1.90,
            first_output: Some(0.30),
            report_begin: Some(1.70),
            stop: 0.01,
            judging: 0.02,
            guest_init: Some(1.00),
            guest_report: Some(1.60),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn the_phases_cut_the_boot_at_its_stamps_and_add_up_to_the_whole() {
        let st = run_stamps();
        let s = Split::of(&st);
        // QEMU start → kernel clock: 1.90 s to the end marker, 1.60 s of it on the guest's clock.
        assert!(close(s.get(Phase::ToKernel), 0.30));
        assert!(close(s.get(Phase::Kernel), 1.00));
        // The report: begin at 1.70 s, end at 1.90 s (host).
        assert!(close(s.get(Phase::Report), 0.20));
        // The agent: the rest of QEMU start → end marker.
        assert!(close(s.get(Phase::Agent), 1.90 - 0.30 - 1.00 - 0.20));
        assert!(close(s.get(Phase::Initramfs), 0.03) && close(s.get(Phase::QemuArgs), 0.01));
        let whole = st.host_before + st.devices + st.prepare + st.to_report + st.stop + st.judging;
        assert!(close(s.total(), whole), "{} vs {whole}", s.total());
        assert!(close(s.first_output, 0.30));
    }

    #[test]
    fn a_missing_stamp_leaves_only_the_phases_it_cuts_unknown() {
        let st = Stamps { report_begin: None, first_output: None, ..run_stamps() };
        let s = Split::of(&st);
        assert!(s.get(Phase::Report).is_nan() && s.get(Phase::Agent).is_nan() && s.total().is_nan());
        assert!(close(s.get(Phase::ToKernel), 0.30) && close(s.get(Phase::Kernel), 1.00));
        assert!(close(s.get(Phase::HostBefore), 0.05) && s.first_output.is_nan());
        let no_guest = Split::of(&Stamps { guest_init: None, guest_report: None, ..run_stamps() });
        assert!(no_guest.get(Phase::ToKernel).is_nan() && no_guest.get(Phase::Agent).is_nan());
        assert!(close(no_guest.get(Phase::Report), 0.20));
    }

    #[test]
    fn the_spread_is_median_and_range_of_the_finite_values() {
        assert_eq!(spread([3.0, f64::NAN, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        // An even count takes the upper middle, as the bench's medians always did.
        assert_eq!(spread([4.0, 1.0, 3.0, 2.0]), Some((3.0, 1.0, 4.0)));
        assert_eq!(spread([f64::NAN]), None);
        assert_eq!(spread([]), None);
    }

    #[test]
    fn the_table_and_the_lines_name_what_the_run_adds() {
        let run = Split::of(&run_stamps());
        // A bare boot: no devices, no verdict, a shorter agent (no module to load).
        let bare = Split::of(&Stamps {
            devices: 0.0,
            judging: 0.0,
            to_report: 1.50,
            report_begin: Some(1.35),
            guest_report: Some(1.20),
            ..run_stamps()
        });
        let pairs = [(run, bare), (run, bare)];
        let lines = table(&pairs);
        assert_eq!(lines.len(), 2 + Phase::ALL.len() + 2);
        let agent = lines.iter().find(|l| l.starts_with("| agent")).expect("agent row");
        // Run agent 0.40 s, bare 1.50 - 0.30 - 1.00 - 0.15 = 0.05 s.
        assert_eq!(
            agent,
            "| agent: /init → report begin | 0.40 (0.40-0.40) | 0.05 (0.05-0.05) | +0.35 (+0.35 to +0.35) |"
        );
        assert!(pair_line(&run, &bare).contains("agent +0.35 | report +0.05"), "{}", pair_line(&run, &bare));
        assert_eq!(largest_added(&pairs, 0.02), "agent +0.35 s, report +0.05 s, devices +0.02 s, verdict +0.02 s");
        assert_eq!(largest_added(&pairs, 1.0), "no phase adds 1.00 s or more");
    }
}
