//! A soak's host side (`cargo xtask soak`, README.md *Soak*): what a soak
//! asks for ([`SoakOptions`]), what the rig does at the guest's
//! `MANARIG-SOAK` marks while it runs ([`SoakWatch`]: samples the device
//! process's memory and descriptors, has the device raise the link events),
//! and the verdict's input from what it gathered ([`judge`]).
//!
//! The guest drives the schedule (guest-images/init.sh `run_soak`): every
//! minute it changes the channels, asks for link-down and link-up, and
//! unloads and loads mana, while its traffic loop runs rounds of the flows
//! the rig plans; the rig only answers its marks, so that the disruptions
//! and the samples keep their place in the guest's minute whatever the host's
//! load.

use super::device::DeviceStatusHandle;
use super::outcome::TrafficBoot;
use crate::guest_protocol::{GuestReport, SoakMark, SoakStep};
use crate::verdict::flatness::DeviceSample;
use crate::verdict::{judge_soak, Check, RaisedEvent, RoundEnd, SoakInput, SoakReport};
use mana_device_api::inject::DeviceEvent;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Soak minutes by default.
pub const DEFAULT_MINUTES: u32 = 10;
/// Flows per traffic round by default.
pub const DEFAULT_FLOWS: u32 = 16;
/// Bytes each flow of a round carries each way by default: a round of 16
/// flows then takes a few seconds under TCG, so that every minute has
/// several rounds and each disruption lands in one.
pub const DEFAULT_ROUND_BYTES: u64 = 64 * 1024;
/// How long a round's flows may take: a round caught by a re-probe waits for
/// the new netdev and its address, then for TCP's backed-off retransmission
/// (up to TCP_RTO_MAX, 120 s, in the worst case).
pub const ROUND_LIMIT: Duration = Duration::from_secs(150);
/// The fewest minutes a soak runs: the warm-up plus one judged minute.
pub const MIN_MINUTES: u32 = 2;
/// The most minutes a soak runs.
pub const MAX_MINUTES: u32 = 24 * 60;

/// What a soak asks for besides its traffic ([`super::RunRequest::traffic`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoakOptions {
    /// Guest minutes of the soak.
    pub minutes: u32,
    /// The combined channels each minute's `ethtool -L` sets, in turn
    /// (empty: no channel change).
    pub channels: Vec<u32>,
}

impl SoakOptions {
    /// The channel counts a soak alternates between on a NIC with `max`
    /// combined channels: half of them, then a quarter (at least one each),
    /// so that every change moves the queues and none is a no-op; `[1]`
    /// alone would never change after the first re-probe's default.
    pub fn default_channels(max: u32) -> Vec<u32> {
        let mut c = vec![(max / 2).max(1), (max / 4).max(1)];
        c.dedup();
        c.retain(|&n| n != max);
        c
    }

    /// Guest seconds the agent needs from mana's `insmod`: the probe, the minutes,
    /// the last round, the last re-probe's margin.
    pub fn agent_deadline_s(&self, round_limit: Duration) -> u32 {
        let round = u32::try_from(round_limit.as_secs()).unwrap_or(u32::MAX);
        self.minutes.saturating_mul(60).saturating_add(round).saturating_add(180)
    }

    /// The host's deadline for the boot: at least `asked`, and the guest's
    /// time with room for a slow host.
    pub fn host_deadline(&self, asked: Duration, round_limit: Duration) -> Duration {
        let guest = u64::from(self.agent_deadline_s(round_limit));
        asked.max(Duration::from_secs(guest * 3 / 2 + 300))
    }
}

/// What the rig gathered at the marks.
#[derive(Debug, Clone, Default)]
pub struct SoakLog {
    /// The device process's samples, in order.
    pub samples: Vec<DeviceSample>,
    /// Samples that could not be taken (why).
    pub sample_errors: Vec<String>,
    /// The link events raised.
    pub raised: Vec<RaisedEvent>,
    /// When the first sample was taken (the soak's host time base).
    pub start: Option<Instant>,
}

/// The rig's side of a running soak: answers the guest's marks.
#[derive(Clone)]
pub struct SoakWatch {
    device: DeviceStatusHandle,
    log: Arc<Mutex<SoakLog>>,
}

impl SoakWatch {
    /// A watch on the device `device` (NIC 0's process).
    pub fn new(device: DeviceStatusHandle) -> Self {
        Self { device, log: Arc::default() }
    }

    /// Acts on one mark: a sample of the device process, or a link event.
    pub fn on_mark(&self, mark: SoakMark) {
        let now = Instant::now();
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let start = *log.start.get_or_insert(now);
        let at_s = now.duration_since(start).as_secs_f64();
        match mark.step {
            SoakStep::Sample => match sample(self.device.pid(), mark.minute, at_s) {
                Ok(s) => log.samples.push(s),
                Err(e) => log.sample_errors.push(format!("minute {}: {e}", mark.minute)),
            },
            SoakStep::LinkDown | SoakStep::LinkUp => {
                let event = if mark.step == SoakStep::LinkDown { DeviceEvent::LinkDown } else { DeviceEvent::LinkUp };
                let (reached, error) = match self.device.raise(event) {
                    Ok(r) => (Some(r), None),
                    Err(e) => (None, Some(e.to_string())),
                };
                let event = event.name().to_owned();
                log.raised.push(RaisedEvent { minute: mark.minute, event, at_s, reached, error });
            }
            other => tracing::warn!("soak: mark {} {} is not one the rig acts on", other.name(), mark.minute),
        }
    }

    /// What it gathered.
    pub fn finish(self) -> SoakLog {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A sample of process `pid` now: `/proc/<pid>/status`'s `VmRSS`,
/// `RssAnon`, `RssFile`, `RssShmem` (kB) and the entries of `/proc/<pid>/fd`.
fn sample(pid: u32, minute: u32, at_s: f64) -> Result<DeviceSample, String> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let field = |name: &str| -> Result<u64, String> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("{path}: no {name} in kB"))
    };
    let dir = format!("/proc/{pid}/fd");
    let fds = std::fs::read_dir(&dir).map_err(|e| format!("{dir}: {e}"))?.count();
    Ok(DeviceSample {
        minute,
        at_s,
        vm_rss_kib: field("VmRSS")?,
        rss_anon_kib: field("RssAnon")?,
        rss_file_kib: field("RssFile")?,
        rss_shmem_kib: field("RssShmem")?,
        fds: u32::try_from(fds).unwrap_or(u32::MAX),
    })
}

/// The soak's report and checks from what the rig gathered (`log`), the
/// traffic peer's sessions and the guest's report.
pub fn judge(
    options: &SoakOptions,
    log: &SoakLog,
    traffic: Option<&TrafficBoot>,
    report: &GuestReport,
) -> (SoakReport, Vec<Check>) {
    let start = log.start;
    let rounds: Vec<RoundEnd<'_>> = traffic
        .map(|t| t.peer.sessions.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|s| RoundEnd {
            at_s: start.map_or(0.0, |t0| s.at.saturating_duration_since(t0).as_secs_f64()),
            result: s.result.as_ref().map_err(String::as_str),
        })
        .collect();
    let input = SoakInput {
        minutes: options.minutes,
        channels: &options.channels,
        samples: &log.samples,
        sample_errors: &log.sample_errors,
        raised: &log.raised,
        rounds: &rounds,
        report,
    };
    judge_soak(&input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_channels_halve_then_quarter_and_never_repeat_the_driver_s_count() {
        assert_eq!(SoakOptions::default_channels(8), [4, 2]);
        assert_eq!(SoakOptions::default_channels(4), [2, 1]);
        assert_eq!(SoakOptions::default_channels(2), [1]);
        assert_eq!(SoakOptions::default_channels(1), Vec::<u32>::new());
        assert_eq!(SoakOptions::default_channels(64), [32, 16]);
    }

    #[test]
    fn a_soak_s_deadlines_cover_its_minutes_and_its_last_round() {
        let s = SoakOptions { minutes: 10, channels: vec![4, 2] };
        assert_eq!(s.agent_deadline_s(ROUND_LIMIT), 600 + 150 + 180);
        assert_eq!(s.host_deadline(Duration::from_secs(900), ROUND_LIMIT), Duration::from_secs(930 * 3 / 2 + 300));
        assert_eq!(s.host_deadline(Duration::from_secs(9000), ROUND_LIMIT), Duration::from_secs(9000));
    }

    #[test]
    fn this_process_can_be_sampled_and_a_gone_one_is_an_error() {
        let s = sample(std::process::id(), 3, 1.5).expect("own sample");
        assert!(s.vm_rss_kib > 0 && s.fds >= 3 && s.minute == 3, "{s:?}");
        assert!(s.vm_rss_kib >= s.rss_anon_kib, "{s:?}");
        let e = sample(u32::MAX, 0, 0.0).expect_err("no such process");
        assert!(e.contains("/proc/4294967295/status"), "{e}");
    }
}
