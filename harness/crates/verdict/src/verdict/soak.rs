//! A soak's verdict (`cargo xtask soak`, README.md *Soak*): minutes of
//! traffic rounds while every minute the guest changes the channels, the
//! device's link goes down and up, and mana is unloaded and loaded again.
//! Judged, one check each:
//! - [`SOAK_DEVICE_MEMORY`], [`SOAK_DEVICE_FDS`]: the emulated device process
//!   stayed flat ([`super::flatness`]: the rule in numbers);
//! - [`SOAK_BYTES_VERIFIED`]: every flow of every round verified by both ends
//!   (the flows tool checks each byte; the SHA-256s of both ends agree), and
//!   every round the guest started reached its results;
//! - [`SOAK_TRAFFIC_FLOWED`]: every soak minute had a round end verified;
//! - [`SOAK_DISRUPTIONS`]: every minute's disruptions happened and the driver
//!   came back from each (`ethtool -L` set the count, both link events
//!   reached the driver's HWC, `rmmod` returned 0, the new probe brought the
//!   carrier up, the address went back on);
//! - [`SOAK_KERNEL_LOG`]: no kernel warning, oops, lockdep or hung-task report.

use super::check::{Check, CheckStatus};
use super::flatness::{flatness, DeviceSample, Flatness};
use super::traffic::{flow_results, verified_both_ways};
use crate::guest_protocol::{GuestReport, SoakStep};
use crate::text::plural;
use manarig_flows::proto::Outcome;
use serde::{Deserialize, Serialize};

/// The device process's memory stayed flat.
pub const SOAK_DEVICE_MEMORY: &str = "soak_device_memory";
/// The device process's descriptor count stayed the same.
pub const SOAK_DEVICE_FDS: &str = "soak_device_fds";
/// Every byte of every round verified.
pub const SOAK_BYTES_VERIFIED: &str = "soak_bytes_verified";
/// Traffic flowed in every soak minute.
pub const SOAK_TRAFFIC_FLOWED: &str = "soak_traffic_flowed";
/// Every disruption happened and the driver came back from it.
pub const SOAK_DISRUPTIONS: &str = "soak_disruptions";
/// The kernel logged no warning or crash.
pub const SOAK_KERNEL_LOG: &str = "soak_kernel_log";
/// Every check of a soak, in report order.
pub const SOAK_CHECKS: [&str; 6] =
    [SOAK_DEVICE_MEMORY, SOAK_DEVICE_FDS, SOAK_BYTES_VERIFIED, SOAK_TRAFFIC_FLOWED, SOAK_DISRUPTIONS, SOAK_KERNEL_LOG];

/// Failures a check lists in its detail, at most.
const DETAIL_LINES: usize = 20;

/// A device event the rig raised at the guest's mark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaisedEvent {
    /// The soak minute.
    pub minute: u32,
    /// `link-down` or `link-up`.
    pub event: String,
    /// Host seconds since the soak's first sample.
    pub at_s: f64,
    /// Whether it reached the driver (the device had an HWC to post it on);
    /// None when the device did not answer.
    pub reached: Option<bool>,
    /// Why the device did not answer.
    pub error: Option<String>,
}

/// One guest session (traffic round) as the rig saw it end.
#[derive(Debug, Clone, Copy)]
pub struct RoundEnd<'a> {
    /// Host seconds since the soak's first sample.
    pub at_s: f64,
    /// Both ends' results, or why the session ended before its flows.
    pub result: Result<&'a Outcome, &'a str>,
}

/// What a soak is judged from.
#[derive(Debug, Clone, Copy)]
pub struct SoakInput<'a> {
    /// Soak minutes asked for.
    pub minutes: u32,
    /// The channel counts of the minutes' `ethtool -L`, in turn.
    pub channels: &'a [u32],
    /// The device process's samples, in order.
    pub samples: &'a [DeviceSample],
    /// Samples the rig could not take (why).
    pub sample_errors: &'a [String],
    /// The link events the rig raised.
    pub raised: &'a [RaisedEvent],
    /// Every traffic round the peer saw end, in order.
    pub rounds: &'a [RoundEnd<'a>],
    /// The guest's report (its `soak` steps and rounds, its kernel warnings).
    pub report: &'a GuestReport,
}

/// How often one kind of disruption was asked for and came through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisruptionCount {
    /// The step (`channels`, `link-down`, `link-up`, `rmmod`, `insmod`, `addr`).
    pub step: String,
    /// Minutes that asked for it.
    pub planned: u32,
    /// Times it ran (the guest's step line; for the link events, the rig's raise).
    pub done: u32,
    /// Times it ran and came through.
    pub ok: u32,
}

/// The soak's traffic, both ends' view.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SoakTraffic {
    /// Rounds the peer saw end (sessions).
    pub rounds: u32,
    /// Rounds whose every flow was verified by both ends.
    pub rounds_verified: u32,
    /// Sessions that ended before their flows ran.
    pub rounds_dropped: u32,
    /// Rounds the guest ran (`soak-round`) and how many of them did not exit 0.
    pub guest_rounds: u32,
    /// See `guest_rounds`.
    pub guest_rounds_failed: u32,
    /// Flows in all rounds, and those verified by both ends.
    pub flows: u32,
    /// See `flows`.
    pub flows_verified: u32,
    /// Bytes verified to the guest (by the guest) and to the peer (by the peer).
    pub bytes_to_guest: u64,
    /// See `bytes_to_guest`.
    pub bytes_to_host: u64,
    /// Verified rounds that ended in each soak minute.
    pub per_minute: Vec<u32>,
}

/// A soak's figures, in every format (JSON: `soak`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakReport {
    /// Soak minutes asked for.
    pub minutes: u32,
    /// The channel counts of the minutes' `ethtool -L`, in turn.
    pub channels: Vec<u32>,
    /// Guest seconds from the soak's start to its last sample (`time soak` to `time soak-end`).
    pub guest_seconds: Option<f64>,
    /// Host seconds from the first sample to the last.
    pub wall_seconds: Option<f64>,
    /// The device process, once a minute.
    pub samples: Vec<DeviceSample>,
    /// The flatness rule on them (None: too few samples after the warm-up).
    pub flatness: Option<Flatness>,
    /// Each kind of disruption, in the order of a minute.
    pub disruptions: Vec<DisruptionCount>,
    /// The link events the rig raised.
    pub raised: Vec<RaisedEvent>,
    /// The traffic rounds.
    pub traffic: SoakTraffic,
    /// What the kernel cannot do with a disruption (6.x: no link events).
    pub notes: Vec<String>,
}

/// The soak's report and its checks.
pub fn judge_soak(input: &SoakInput<'_>) -> (SoakReport, Vec<Check>) {
    let flat = flatness(input.samples, input.minutes);
    let traffic = traffic(input);
    let disruptions = disruptions(input);
    let notes = super::kernel_log::unhandled_events(&input.report.kernel, &["link-down@0".to_owned()]);
    let times = &input.report.times;
    let report = SoakReport {
        minutes: input.minutes,
        channels: input.channels.to_vec(),
        guest_seconds: times.get("soak-end").zip(times.get("soak")).map(|(end, start)| end - start),
        wall_seconds: input.samples.first().zip(input.samples.last()).map(|(a, b)| b.at_s - a.at_s),
        samples: input.samples.to_vec(),
        flatness: flat.clone(),
        disruptions: disruptions.0,
        raised: input.raised.to_vec(),
        traffic: traffic.0,
        notes,
    };
    let checks = vec![
        memory_check(input, flat.as_ref()),
        fds_check(input, flat.as_ref()),
        traffic.1,
        flowed_check(input, &report.traffic),
        disruptions.1,
        kernel_log_check(input.report),
    ];
    (report, checks)
}

/// What to say when there is nothing to judge: the samples taken and why others are missing.
fn too_few(name: &str, input: &SoakInput<'_>) -> Check {
    let mut c = Check::new(
        name,
        CheckStatus::Fail,
        format!(
            "fewer than two samples of the device after the warm-up ({} taken in a {}-minute soak)",
            plural(input.samples.len(), "sample"),
            input.minutes
        ),
    );
    c.detail = input.sample_errors.to_vec();
    c
}

fn memory_check(input: &SoakInput<'_>, flat: Option<&Flatness>) -> Check {
    let Some(f) = flat else { return too_few(SOAK_DEVICE_MEMORY, input) };
    let trend = if f.rss_monotone_rise { ", rising at every sample" } else { "" };
    let message = format!(
        "RssAnon {} → {} KiB from minute {} ({:+} KiB, limit +{} KiB{trend}; max {} KiB); VmRSS {} → {} KiB (not judged: \
         it counts the guest RAM the device touched)",
        f.rss_first_kib,
        f.rss_last_kib,
        f.judged_from_minute,
        f.rss_growth_kib,
        f.rss_limit_kib,
        f.rss_max_kib,
        f.vm_rss_first_kib,
        f.vm_rss_last_kib
    );
    Check::pass_if(SOAK_DEVICE_MEMORY, f.memory_flat(), message)
}

fn fds_check(input: &SoakInput<'_>, flat: Option<&Flatness>) -> Check {
    let Some(f) = flat else { return too_few(SOAK_DEVICE_FDS, input) };
    let message = if f.fds_flat() {
        format!("{} open at each of the {} samples from minute {}", f.fds_first, f.judged, f.judged_from_minute)
    } else {
        format!(
            "{} → {} open from minute {} (between {} and {}): not the same at every sample",
            f.fds_first, f.fds_last, f.judged_from_minute, f.fds_min, f.fds_max
        )
    };
    Check::pass_if(SOAK_DEVICE_FDS, f.fds_flat(), message)
}

/// The rounds' figures and the bytes check.
fn traffic(input: &SoakInput<'_>) -> (SoakTraffic, Check) {
    let mut t = SoakTraffic { per_minute: vec![0; input.minutes as usize], ..SoakTraffic::default() };
    let mut failures = Vec::new();
    let starts: Vec<f64> = (0..input.minutes)
        .map(|k| input.samples.iter().find(|s| s.minute == k).map_or(f64::from(k) * 60.0, |s| s.at_s))
        .collect();
    for (n, round) in input.rounds.iter().enumerate() {
        t.rounds += 1;
        let outcome = match round.result {
            Ok(o) => o,
            Err(why) => {
                t.rounds_dropped += 1;
                failures.push(format!("round {}: dropped before its flows: {why}", n + 1));
                continue;
            }
        };
        let mut all = outcome.error.is_none() && outcome.guest.len() == outcome.plan.flows.len();
        if let Some(e) = &outcome.error {
            failures.push(format!("round {}: {e}", n + 1));
        }
        for flow in &outcome.plan.flows {
            t.flows += 1;
            let (h, g) = flow_results(outcome, flow.id);
            match (h, g) {
                (Some(h), Some(g)) if verified_both_ways(h, g) => {
                    t.flows_verified += 1;
                    t.bytes_to_guest += g.received;
                    t.bytes_to_host += h.received;
                }
                _ => {
                    all = false;
                    let why = [h, g]
                        .into_iter()
                        .flatten()
                        .find_map(|r| r.error.clone())
                        .unwrap_or_else(|| "the two ends' SHA-256s differ or a side has no result".into());
                    failures.push(format!("round {} flow {}: {why}", n + 1, flow.id));
                }
            }
        }
        if all {
            t.rounds_verified += 1;
            if let Some(k) = starts.iter().rposition(|s| round.at_s >= *s) {
                t.per_minute[k] += 1;
            }
        }
    }
    let guest = &input.report.soak.rounds;
    t.guest_rounds = guest.len() as u32;
    t.guest_rounds_failed = guest.iter().filter(|r| r.status != 0).count() as u32;
    for r in guest.iter().filter(|r| r.status != 0) {
        failures.push(format!("guest round {}: manarig-flows guest exited {} at {:.1} s", r.round, r.status, r.time));
    }
    let errors = input.report.stderr.get("soak").map_or(&[][..], Vec::as_slice);
    let ok = failures.is_empty() && t.rounds > 0;
    let message = format!(
        "{} of {} verified by both ends in {} of {} ({} to the guest, {} to the peer){}",
        t.flows_verified,
        plural(t.flows, "flow"),
        t.rounds_verified,
        plural(t.rounds, "round"),
        bytes(t.bytes_to_guest),
        bytes(t.bytes_to_host),
        if t.rounds == 0 { "; no round reached the peer" } else { "" }
    );
    let mut check = Check::pass_if(SOAK_BYTES_VERIFIED, ok, message);
    check.detail = failures.into_iter().take(DETAIL_LINES).collect();
    if !ok {
        check.detail.extend(errors.iter().map(|l| format!("stderr: {l}")));
    }
    (t, check)
}

/// `n` bytes in the largest binary unit that keeps it above 1.
fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.2} GiB", n as f64 / f64::from(1u32 << 30)),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1u32 << 20)),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

fn flowed_check(input: &SoakInput<'_>, t: &SoakTraffic) -> Check {
    let idle: Vec<String> =
        t.per_minute.iter().enumerate().filter(|(_, n)| **n == 0).map(|(k, _)| k.to_string()).collect();
    let counts: Vec<String> = t.per_minute.iter().map(u32::to_string).collect();
    let message = if idle.is_empty() {
        format!("verified rounds in every one of the {} minutes ({} per minute)", input.minutes, counts.join(", "))
    } else {
        format!("no round verified in minute {} (per minute: {})", idle.join(", "), counts.join(", "))
    };
    Check::pass_if(SOAK_TRAFFIC_FLOWED, idle.is_empty() && input.minutes > 0, message)
}

/// Each kind of disruption counted, and the check on them.
fn disruptions(input: &SoakInput<'_>) -> (Vec<DisruptionCount>, Check) {
    let steps = &input.report.soak.steps;
    let mut counts = Vec::new();
    let mut failures = Vec::new();
    let kinds =
        [SoakStep::Channels, SoakStep::LinkDown, SoakStep::LinkUp, SoakStep::Rmmod, SoakStep::Insmod, SoakStep::Addr];
    for kind in kinds {
        if kind == SoakStep::Channels && input.channels.is_empty() {
            continue;
        }
        let mut c = DisruptionCount { step: kind.name().into(), planned: input.minutes, done: 0, ok: 0 };
        for minute in 0..input.minutes {
            let step = steps.iter().find(|s| s.minute == minute && s.step == kind);
            let verdict: Result<(), String> = match kind {
                SoakStep::LinkDown | SoakStep::LinkUp => {
                    match input.raised.iter().find(|r| r.minute == minute && r.event == kind.name()) {
                        None => Err("the rig never got the mark".into()),
                        Some(RaisedEvent { reached: Some(true), .. }) => Ok(()),
                        Some(RaisedEvent { reached: Some(false), .. }) => {
                            Err("the device had no HWC to post it on".into())
                        }
                        Some(RaisedEvent { error, .. }) => Err(error.clone().unwrap_or_default()),
                    }
                }
                _ => match step {
                    None => Err("did not run".into()),
                    Some(s) if s.status != Some(0) => {
                        Err(format!("exit {}", s.status.map_or("-".into(), |v| v.to_string())))
                    }
                    Some(s) if kind == SoakStep::Channels => {
                        let want = input.channels[minute as usize % input.channels.len()];
                        match s.detail {
                            Some(now) if now == want => Ok(()),
                            now => Err(format!("asked for {want}, {} now", now.map_or("-".into(), |n| n.to_string()))),
                        }
                    }
                    Some(s) if kind == SoakStep::Insmod && s.detail != Some(1) => {
                        Err("the new probe left the carrier down".into())
                    }
                    Some(_) => Ok(()),
                },
            };
            let ran = match kind {
                SoakStep::LinkDown | SoakStep::LinkUp => {
                    input.raised.iter().any(|r| r.minute == minute && r.event == kind.name())
                }
                _ => step.is_some(),
            };
            c.done += u32::from(ran);
            match verdict {
                Ok(()) => c.ok += 1,
                Err(why) => failures.push(format!("minute {minute} {}: {why}", kind.name())),
            }
        }
        counts.push(c);
    }
    let summary: Vec<String> = counts.iter().map(|c| format!("{} {}/{}", c.step, c.ok, c.planned)).collect();
    let ok = failures.is_empty() && input.minutes > 0;
    let mut check = Check::pass_if(SOAK_DISRUPTIONS, ok, format!("came through: {}", summary.join(", ")));
    check.detail = failures.into_iter().take(DETAIL_LINES).collect();
    if let Some(errors) = input.report.stderr.get("soak").filter(|_| !ok) {
        check.detail.extend(errors.iter().map(|l| format!("stderr: {l}")));
    }
    check.detail.extend(super::kernel_log::unhandled_events(&input.report.kernel, &["link-down@0".to_owned()]));
    (counts, check)
}

fn kernel_log_check(report: &GuestReport) -> Check {
    let bad: Vec<&String> = report
        .warnings
        .iter()
        .filter(|w| w.contains("WARNING:") || super::kernel_log::FATAL.iter().any(|f| w.contains(f)))
        .collect();
    let message = match bad.first() {
        None => "no kernel warning, oops, lockdep or hung-task report".to_string(),
        Some(first) => format!("{}, the first: {first}", plural(bad.len(), "kernel report line")),
    };
    let mut check = Check::pass_if(SOAK_KERNEL_LOG, bad.is_empty(), message);
    check.detail = report.warnings.iter().take(DETAIL_LINES).map(|w| format!("warning: {w}")).collect();
    check
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest_protocol::{GuestSoak, SoakRound, SoakStepResult};
    use manarig_flows::proto::{FlowResult, FlowSpec, Plan, Side, PROTOCOL_VERSION};

    fn sample(minute: u32, anon: u64, fds: u32) -> DeviceSample {
        DeviceSample {
            minute,
            at_s: f64::from(minute) * 60.0,
            vm_rss_kib: anon + 10_000,
            rss_anon_kib: anon,
            rss_file_kib: 4_000,
            rss_shmem_kib: 6_000,
            fds,
        }
    }

    fn result(id: u32, bytes: u64) -> FlowResult {
        FlowResult {
            id,
            sent: bytes,
            received: bytes,
            sent_sha256: format!("s{id}"),
            received_sha256: format!("s{id}"),
            verified: true,
            error: None,
            elapsed_ms: 10,
        }
    }

    fn outcome(bytes: u64) -> Outcome {
        let flow = |id| FlowSpec {
            id,
            opener: Side::Guest,
            guest_port: 10_000 + id as u16,
            host_port: 20_000,
            to_guest: bytes,
            to_host: bytes,
        };
        Outcome {
            plan: Plan {
                version: PROTOCOL_VERSION,
                host: [192, 0, 2, 1].into(),
                guest: [192, 0, 2, 2].into(),
                flows: vec![flow(0), flow(1)],
                limit_ms: 1000,
            },
            host: vec![result(0, bytes), result(1, bytes)],
            guest: vec![result(0, bytes), result(1, bytes)],
            error: None,
            elapsed_ms: 100,
        }
    }

    /// A 2-minute soak's guest report where every step came through.
    fn report() -> GuestReport {
        let mut steps = Vec::new();
        for minute in 0..2 {
            let at = |s: u32| f64::from(minute * 60 + s);
            let step = |step, status, time, detail| SoakStepResult { minute, step, status, time, detail };
            steps.push(step(SoakStep::Channels, Some(0), at(5), Some([4, 2][minute as usize])));
            steps.push(step(SoakStep::LinkDown, None, at(25), Some(1)));
            steps.push(step(SoakStep::LinkUp, None, at(30), Some(1)));
            steps.push(step(SoakStep::Rmmod, Some(0), at(41), None));
            steps.push(step(SoakStep::Insmod, Some(0), at(45), Some(1)));
            steps.push(step(SoakStep::Addr, Some(0), at(45), None));
        }
        let rounds = (1..=4).map(|round| SoakRound { round, status: 0, time: 30.0 * f64::from(round) }).collect();
        GuestReport {
            kernel: "6.12.117+deb13-cloud-amd64".into(),
            soak: GuestSoak { steps, rounds },
            ..Default::default()
        }
    }

    fn raised() -> Vec<RaisedEvent> {
        (0..2)
            .flat_map(|minute| {
                ["link-down", "link-up"].map(|event| RaisedEvent {
                    minute,
                    event: event.into(),
                    at_s: f64::from(minute) * 60.0 + 20.0,
                    reached: Some(true),
                    error: None,
                })
            })
            .collect()
    }

    /// A 2-minute soak's input, channels 4 then 2.
    fn input<'a>(
        samples: &'a [DeviceSample],
        raised: &'a [RaisedEvent],
        rounds: &'a [RoundEnd<'a>],
        report: &'a GuestReport,
    ) -> SoakInput<'a> {
        SoakInput { minutes: 2, channels: &[4, 2], samples, sample_errors: &[], raised, rounds, report }
    }

    fn status(checks: &[Check], name: &str) -> CheckStatus {
        checks.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no {name}")).status
    }

    #[test]
    fn a_soak_where_everything_came_through_passes_every_check_with_its_figures() {
        let samples = [sample(0, 3_000, 30), sample(1, 3_200, 32), sample(2, 3_210, 32)];
        let (o1, o2) = (outcome(65_536), outcome(65_536));
        let rounds = [
            RoundEnd { at_s: 10.0, result: Ok(&o1) },
            RoundEnd { at_s: 30.0, result: Ok(&o2) },
            RoundEnd { at_s: 70.0, result: Ok(&o1) },
            RoundEnd { at_s: 100.0, result: Ok(&o2) },
        ];
        let (report, raised) = (report(), raised());
        let (soak, checks) = judge_soak(&input(&samples, &raised, &rounds, &report));
        assert_eq!(checks.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), SOAK_CHECKS);
        for c in &checks {
            assert_eq!(c.status, CheckStatus::Pass, "{c:?}");
        }
        assert_eq!(soak.traffic.per_minute, [2, 2]);
        assert_eq!((soak.traffic.flows_verified, soak.traffic.bytes_to_guest), (8, 8 * 65_536));
        assert!(soak.disruptions.iter().all(|d| d.ok == 2 && d.done == 2), "{:?}", soak.disruptions);
        assert!(checks.iter().find(|c| c.name == SOAK_DISRUPTIONS).expect("check").detail[0].contains("no link event"));
        assert_eq!(soak.wall_seconds, Some(120.0));
    }

    #[test]
    fn a_bad_byte_a_dropped_round_a_failed_step_an_idle_minute_or_a_warning_fails_its_check() {
        let samples = [sample(0, 3_000, 30), sample(1, 3_200, 32), sample(2, 4_210, 33)];
        let good = outcome(4096);
        let mut bad = outcome(4096);
        bad.guest[1].verified = false;
        bad.guest[1].error = Some("byte 17 differs from the expected stream".into());
        let rounds = [RoundEnd { at_s: 10.0, result: Ok(&good) }, RoundEnd { at_s: 70.0, result: Ok(&bad) }];
        let mut report = report();
        report.soak.steps.retain(|s| !(s.minute == 1 && s.step == SoakStep::Rmmod));
        report.warnings.push("WARNING: CPU: 1 PID: 80 at drivers/net/ethernet/microsoft/mana/mana_en.c:1".into());
        let mut raised = raised();
        raised[3].reached = Some(false);
        let input = input(&samples, &raised, &rounds, &report);
        let (soak, checks) = judge_soak(&input);
        for name in SOAK_CHECKS {
            assert_eq!(status(&checks, name), CheckStatus::Fail, "{name}: {checks:#?}");
        }
        let bytes = checks.iter().find(|c| c.name == SOAK_BYTES_VERIFIED).expect("check");
        assert!(bytes.detail.iter().any(|d| d.contains("round 2 flow 1: byte 17 differs")), "{bytes:?}");
        let d = checks.iter().find(|c| c.name == SOAK_DISRUPTIONS).expect("check");
        assert!(d.detail.iter().any(|l| l == "minute 1 rmmod: did not run"), "{d:?}");
        assert!(d.detail.iter().any(|l| l.contains("minute 1 link-up: the device had no HWC")), "{d:?}");
        assert_eq!(soak.traffic.per_minute, [1, 0]);
        // Nothing reached the peer at all: no round, and no samples to judge.
        let input = SoakInput { rounds: &[], samples: &[], ..input };
        let (_, checks) = judge_soak(&input);
        let c = checks.iter().find(|c| c.name == SOAK_DEVICE_MEMORY).expect("check");
        assert!(c.status == CheckStatus::Fail && c.message.contains("fewer than two samples"), "{c:?}");
        assert_eq!(status(&checks, SOAK_BYTES_VERIFIED), CheckStatus::Fail);
    }
}
