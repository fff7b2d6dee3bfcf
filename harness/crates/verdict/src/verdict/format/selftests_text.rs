//! The text of a selftest run: where the tests came from and the baseline
//! that judged them, one row per test program (its cases' results as the
//! test printed them), and each case that did not pass with its reason and
//! the baseline's; then where the MANA netdev's received frames went (the
//! device's drops by reason, the guest's `rx_dropped` and `rx_missed_errors`).

use super::super::check::CheckStatus;
use super::super::outcome::Verdict;
use super::super::selftests::{RxAccount, SelftestsReport};
use crate::selftests::baseline::Expected;

/// The section; empty for a run without selftests.
pub(super) fn selftests(v: &Verdict) -> Vec<String> {
    let Some(r) = &v.selftests else { return Vec::new() };
    let mut lines = vec![format!("Kernel selftests from {} (baseline {}):", r.source, r.baseline)];
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
    lines.extend(rx_lines(&r.rx));
    lines
}

/// `RX by the end: …`: the device's frames by what became of them and the
/// guest netdev's counters; nothing when neither is known.
fn rx_lines(rx: &RxAccount) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(d) = &rx.device {
        out.push(format!(
            "  device: {} delivered, {} dropped (no WQE posted {}, unusable buffer {}, no RQ chosen {}), {} RX completions lost",
            d.delivered,
            d.dropped(),
            d.no_wqe,
            d.unusable_buffer,
            d.unsteered,
            d.cqe_lost
        ));
    }
    if let Some(g) = &rx.guest {
        let n = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
        out.push(format!(
            "  guest {}: rx_packets {}, rx_dropped {}, rx_missed_errors {}",
            g.netdev,
            n(g.packets),
            n(g.dropped),
            n(g.missed)
        ));
    }
    if !out.is_empty() {
        out.insert(0, "Received frames by the end of the run (since the probe):".to_owned());
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
    use super::super::super::selftests::{CaseVerdict, Counts, ProgramResult};
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
            programs: vec![ProgramResult {
                file: "hw/csum.py".into(),
                exit: "1".into(),
                seconds: Some(2.0),
                complete: true,
                counts: Counts { ok: 0, skip: 0, xfail: 0, fail: 4 },
                cases,
                other_output: Vec::new(),
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
        assert!(text.contains("csum.d Fail — FAIL: not in the baseline"), "{text}");
        assert!(!text.contains("Received frames"), "no counters, no line: {text}");
    }

    #[test]
    fn received_frames_show_the_device_drops_by_reason_and_the_guest_counters() {
        use crate::guest_protocol::NetdevRxCounters;
        use mana_device_api::traffic::{Totals, Traffic};
        let totals = Totals {
            rx: Traffic { packets: 900, bytes: 90_000, drops: 17, errors: 2 },
            rx_unsteered: 3,
            rx_no_wqe: 15,
            rx_cqe_lost: 0,
            ..Totals::default()
        };
        let guest = NetdevRxCounters { netdev: "eth0".into(), packets: Some(880), dropped: Some(2), missed: None };
        let rx = RxAccount { device: Some(super::super::super::DeviceRx::of(&totals)), guest: Some(guest) };
        assert_eq!(
            rx_lines(&rx),
            [
                "Received frames by the end of the run (since the probe):",
                "  device: 900 delivered, 20 dropped (no WQE posted 15, unusable buffer 2, no RQ chosen 3), 0 RX completions lost",
                "  guest eth0: rx_packets 880, rx_dropped 2, rx_missed_errors -",
            ]
        );
    }
}
