//! The text of a selftest run: where the tests came from and the baseline
//! that judged them, one row per test program (its cases' results as the
//! test printed them), and each case that did not pass with its reason and
//! the baseline's; then each program's frames (between its marks: what
//! the device, eth0 and the remote end counted, and what was dropped
//! where), and the whole run's (the device's drops by reason, the guest's
//! `rx_dropped` and `rx_missed_errors`, the remote end's).

use super::super::check::CheckStatus;
use super::super::outcome::Verdict;
use super::super::selftest_rx::Delta;
use super::super::selftests::{ProgramResult, RxAccount, SelftestsReport};
use crate::selftests::baseline::Expected;

/// The section; empty for a run without selftests.
pub(super) fn selftests(v: &Verdict) -> Vec<String> {
    let Some(r) = &v.selftests else { return Vec::new() };
    let slack = match r.timer_slack_us {
        0 => String::new(),
        us if us % 1000 == 0 => format!("; the programs' timer slack {} ms", us / 1000),
        us => format!("; the programs' timer slack {us} µs"),
    };
    let mut lines = vec![format!("Kernel selftests from {} (baseline {}{slack}):", r.source, r.baseline)];
    lines.extend(table(r));
    // Consecutive cases with the same result, reason and judgement share a line.
    let mut groups: Vec<(Vec<&str>, String)> = Vec::new();
    for p in &r.programs {
        // A program's first case never joins the previous program's line.
        let first = groups.len();
        for c in p.cases.iter().filter(|c| c.status != CheckStatus::Pass || c.expected.is_some()) {
            let why = if c.reason.is_empty() { String::new() } else { format!(": {}", c.reason) };
            let judged = match (c.status, &c.baseline_reason) {
                (CheckStatus::Skip, Some(b)) => format!("expected ({b})"),
                (CheckStatus::Pass, Some(b)) if c.expected == Some(Expected::Flaky) => {
                    format!("passes (baseline: flaky: {b})")
                }
                (CheckStatus::Pass, Some(_)) => "passes: the baseline entry is stale".to_owned(),
                (_, Some(_)) if !c.unmet.is_empty() => {
                    format!("FAIL: the flaky entry does not hold: {}", c.unmet.join(", "))
                }
                (_, Some(_)) => "FAIL: the baseline expects another result".to_owned(),
                _ => "FAIL: not in the baseline".to_owned(),
            };
            let text = format!("{:?}{why} — {judged}", c.outcome);
            let own = groups.len() > first;
            match groups.last_mut() {
                Some((names, last)) if own && *last == text => names.push(&c.name),
                _ => groups.push((vec![&c.name], text)),
            }
        }
    }
    let notes: Vec<String> = groups
        .into_iter()
        .map(|(names, text)| match names.as_slice() {
            [one] => format!("  {one} {text}"),
            [first, .., last] => format!("  {first} … {last} ({} cases) {text}", names.len()),
            [] => String::new(),
        })
        .collect();
    if !notes.is_empty() {
        lines.push("Cases that did not pass:".to_owned());
        lines.extend(notes);
    }
    if !r.stale_baseline.is_empty() {
        lines.push("Baseline entries that no longer match:".to_owned());
        lines.extend(r.stale_baseline.iter().map(|s| format!("  {s}")));
    }
    lines.extend(program_rx_lines(&r.programs));
    lines.extend(rx_lines(&r.rx));
    lines
}

/// One line per program: what the device, eth0 and the remote end counted
/// between its marks and what was dropped where (its losses, as a flaky
/// entry's `needs = "no drops"` reads them).
fn program_rx_lines(programs: &[ProgramResult]) -> Vec<String> {
    let width = programs.iter().map(|p| p.file.len()).max().unwrap_or(0);
    let d = |v: Option<Delta>| Delta::text(v);
    let lines: Vec<String> = programs
        .iter()
        .map(|p| {
            let rx = &p.rx;
            if rx.device.is_none() && rx.guest.is_none() && rx.remote.is_none() {
                return format!("  {:width$}  no counters at marks {} and {}", p.file, rx.from, rx.to);
            }
            let mut parts = Vec::new();
            if let Some(dev) = &rx.device {
                parts.push(format!("device {} in, {} out", dev.delivered, dev.sent));
            }
            if let Some(g) = &rx.guest {
                parts.push(format!("{} rx {}, tx {}", g.netdev, d(g.packets), d(g.tx_packets)));
            }
            if let Some(r) = &rx.remote {
                parts.push(format!(
                    "{} rx {}, tx {}, UDP to no socket {}",
                    r.nic.netdev,
                    d(r.nic.packets),
                    d(r.nic.tx_packets),
                    d(r.udp_no_ports)
                ));
            }
            if let Some(n) = rx.queues_created.filter(|n| *n > 0) {
                parts.push(format!("mana created {n} queues"));
            }
            if let (Some(m), Some(g)) = (&rx.missed, &rx.guest) {
                parts.push(format!("{} {}", g.netdev, m.text()));
            }
            let losses = rx.losses();
            let verdict = if losses.is_empty() {
                "nothing dropped".to_owned()
            } else {
                format!("dropped: {}", losses.join(", "))
            };
            format!("  {:width$}  {} — {verdict}", p.file, parts.join("; "))
        })
        .collect();
    if lines.is_empty() {
        return lines;
    }
    let mut out = vec![
        "Frames per test program (between the marks before and after it; ≥N: the counter restarted, N counted since):"
            .to_owned(),
    ];
    out.extend(lines);
    out
}

/// The frames by the end of the run: the device's by what became of them,
/// the guest netdev's counters and the remote end's; nothing when none is
/// known.
fn rx_lines(rx: &RxAccount) -> Vec<String> {
    let mut out = Vec::new();
    let n = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
    if let Some(d) = &rx.device {
        out.push(format!(
            "  device: {} delivered, {} dropped (no WQE posted {}, unusable buffer {}, no RQ chosen {} of which {} with the port's RX off), {} RX completions lost; {} sent, {} not sent",
            d.delivered,
            d.dropped(),
            d.no_wqe,
            d.unusable_buffer,
            d.unsteered,
            d.port_off,
            d.cqe_lost,
            d.sent,
            d.tx_dropped
        ));
    }
    if let Some(g) = &rx.guest {
        out.push(format!(
            "  guest {}: rx_packets {}, rx_dropped {}, rx_missed_errors {}, tx_packets {}",
            g.netdev,
            n(g.packets),
            n(g.dropped),
            n(g.missed),
            n(g.tx_packets)
        ));
    }
    if let Some(r) = &rx.remote {
        let nic = &r.nic;
        out.push(format!(
            "  remote {}: rx_packets {}, rx_dropped {}, rx_missed_errors {}, tx_packets {}; UDP: {} taken by a socket, {} to no socket (came after its receiver closed), {} in error",
            nic.netdev,
            n(nic.packets),
            n(nic.dropped),
            n(nic.missed),
            n(nic.tx_packets),
            n(r.udp_in),
            n(r.udp_no_ports),
            n(r.udp_in_errors)
        ));
    }
    if !out.is_empty() {
        out.insert(
            0,
            "Frames between the MANA and the remote end by the end of the run (since the probe; eth0's rx_packets and \
             tx_packets since mana last created its queues):"
                .to_owned(),
        );
    }
    out
}

/// `program  ok skip xfail fail  seconds  exit` rows.
fn table(r: &SelftestsReport) -> Vec<String> {
    let width = r.programs.iter().map(|p| p.file.len()).max().unwrap_or(4).max(4);
    let mut out =
        vec![format!("  {:width$}  {:>4} {:>4} {:>5} {:>4}  {:>6}  exit", "test", "ok", "skip", "xfail", "fail", "s")];
    for p in &r.programs {
        let c = p.counts;
        let secs = p.seconds.map_or("-".to_owned(), |s| format!("{s:.0}"));
        let done = if p.complete { String::new() } else { " (incomplete)".to_owned() };
        out.push(format!(
            "  {:width$}  {:>4} {:>4} {:>5} {:>4}  {secs:>6}  {}{done}",
            p.file, c.ok, c.skip, c.xfail, c.fail, p.exit
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::super::selftest_missed::MissedCheck;
    use super::super::super::selftests::{CaseVerdict, Counts, ProgramResult, ProgramRx};
    use super::*;
    use crate::selftests::ktap::Outcome;

    fn case(name: &str, outcome: Outcome, status: CheckStatus, why: Option<&str>) -> CaseVerdict {
        CaseVerdict {
            name: name.into(),
            outcome,
            reason: String::new(),
            expected: why.map(|_| crate::selftests::baseline::Expected::Fail),
            baseline_reason: why.map(str::to_owned),
            status,
            diagnostics: Vec::new(),
            unmet: Vec::new(),
        }
    }

    #[test]
    fn the_table_counts_each_program_and_cases_with_one_reason_share_a_line() {
        let cases = vec![
            case("csum.a", Outcome::Fail, CheckStatus::Skip, Some("r")),
            case("csum.b", Outcome::Fail, CheckStatus::Skip, Some("r")),
            case("csum.c", Outcome::Fail, CheckStatus::Skip, Some("r")),
            case("csum.d", Outcome::Fail, CheckStatus::Fail, None),
        ];
        let report = SelftestsReport {
            source: "s".into(),
            baseline: "b".into(),
            setup: Some(0),
            timer_slack_us: 4000,
            programs: vec![ProgramResult {
                file: "hw/csum.py".into(),
                exit: "1".into(),
                seconds: Some(2.0),
                complete: true,
                counts: Counts { ok: 0, skip: 0, xfail: 0, fail: 4 },
                cases,
                other_output: Vec::new(),
                rx: ProgramRx::default(),
            }],
            stale_baseline: Vec::new(),
            rx: RxAccount::default(),
        };
        let rows = table(&report);
        assert!(rows[1].contains("hw/csum.py") && rows[1].trim_end().ends_with("2  1"), "{rows:?}");
        let mut v = crate::verdict::fixtures::Run::new("seed-002", "6.12").judge();
        v.selftests = Some(report);
        let text = selftests(&v).join("\n");
        assert!(text.contains("csum.a … csum.c (3 cases) Fail — expected (r)"), "{text}");
        assert!(text.starts_with("Kernel selftests from s (baseline b; the programs' timer slack 4 ms):"), "{text}");
        assert!(text.contains("csum.d Fail — FAIL: not in the baseline"), "{text}");
        assert!(!text.contains("Received frames"), "no counters, no line: {text}");
    }

    #[test]
    fn each_program_shows_its_own_frames_and_what_it_dropped_where() {
        use super::super::super::selftest_rx::{DeviceRx, NetdevDelta, RemoteDelta};
        let exact = |n| Some(Delta { n, reset: false });
        let program = |file: &str, rx: ProgramRx| ProgramResult {
            file: file.into(),
            exit: "0".into(),
            seconds: Some(1.0),
            complete: true,
            counts: Counts::default(),
            cases: Vec::new(),
            other_output: Vec::new(),
            rx,
        };
        let eth0 = NetdevDelta {
            netdev: "eth0".into(),
            packets: Some(Delta { n: 51, reset: true }),
            dropped: exact(0),
            missed: exact(0),
            tx_packets: Some(Delta { n: 50, reset: true }),
        };
        let eth1 = RemoteDelta {
            nic: NetdevDelta {
                netdev: "eth1".into(),
                packets: exact(50),
                dropped: exact(0),
                missed: exact(0),
                tx_packets: exact(2000),
            },
            udp_in: exact(0),
            udp_no_ports: exact(0),
            udp_in_errors: exact(0),
        };
        let gro = ProgramRx {
            from: 10,
            to: 11,
            device: Some(DeviceRx { delivered: 1900, no_wqe: 100, sent: 50, ..DeviceRx::default() }),
            queues_created: Some(8),
            guest: Some(eth0),
            remote: Some(eth1),
            missed: Some(MissedCheck::new(100, (100, 200), (40, 45))),
        };
        let quiet =
            ProgramRx { device: Some(DeviceRx::default()), queues_created: Some(0), missed: None, ..gro.clone() };
        let quiet = ProgramRx { from: 9, to: 10, device: Some(DeviceRx::default()), ..quiet };
        let lines = program_rx_lines(&[
            program("napi_id.py", quiet),
            program("gro.py", gro),
            program("x.py", ProgramRx { from: 11, to: 12, ..ProgramRx::default() }),
        ]);
        assert_eq!(
            lines,
            [
                "Frames per test program (between the marks before and after it; ≥N: the counter restarted, N counted since):",
                "  napi_id.py  device 0 in, 0 out; eth0 rx ≥51 since a restart, tx ≥50 since a restart; eth1 rx 50, tx 2000, UDP to no socket 0 — nothing dropped",
                "  gro.py      device 1900 in, 50 out; eth0 rx ≥51 since a restart, tx ≥50 since a restart; eth1 rx 50, tx 2000, UDP to no socket 0; mana created 8 queues; eth0 rx_missed_errors 100 in the device's no-WQE drops 100..=200 (at the two marks) — dropped: device: no WQE posted 100",
                "  x.py        no counters at marks 11 and 12",
            ]
        );
    }

    #[test]
    fn received_frames_show_the_device_drops_by_reason_and_both_ends_counters() {
        use crate::guest_protocol::{NetdevRxCounters, RemoteCounters};
        use mana_device_api::traffic::{Totals, Traffic};
        let totals = Totals {
            rx: Traffic { packets: 900, bytes: 90_000, drops: 17, errors: 2 },
            tx: Traffic { packets: 610, bytes: 61_000, drops: 0, errors: 0 },
            rx_unsteered: 3,
            rx_port_off: 2,
            rx_no_wqe: 15,
            rx_cqe_lost: 0,
            ..Totals::default()
        };
        let guest = NetdevRxCounters {
            netdev: "eth0".into(),
            packets: Some(880),
            dropped: Some(2),
            missed: None,
            tx_packets: Some(610),
        };
        let remote = RemoteCounters {
            nic: NetdevRxCounters {
                netdev: "eth1".into(),
                packets: Some(612),
                dropped: Some(0),
                missed: Some(0),
                tx_packets: Some(903),
            },
            udp_in: Some(400),
            udp_no_ports: Some(100),
            udp_in_errors: Some(0),
        };
        let rx = RxAccount {
            device: Some(super::super::super::DeviceRx::of(&totals)),
            guest: Some(guest),
            remote: Some(remote),
        };
        assert_eq!(
            rx_lines(&rx),
            [
                "Frames between the MANA and the remote end by the end of the run (since the probe; eth0's rx_packets and tx_packets since mana last created its queues):",
                "  device: 900 delivered, 20 dropped (no WQE posted 15, unusable buffer 2, no RQ chosen 3 of which 2 with the port's RX off), 0 RX completions lost; 610 sent, 0 not sent",
                "  guest eth0: rx_packets 880, rx_dropped 2, rx_missed_errors -, tx_packets 610",
                "  remote eth1: rx_packets 612, rx_dropped 0, rx_missed_errors 0, tx_packets 903; UDP: 400 taken by a socket, 100 to no socket (came after its receiver closed), 0 in error",
            ]
        );
    }
}
