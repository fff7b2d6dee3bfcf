//! The text of a selftest run: where the tests came from and the baseline
//! that judged them, one row per test program (its cases' results as the
//! test printed them), and each case that did not pass with its reason and
//! the baseline's.

use super::super::check::CheckStatus;
use super::super::outcome::Verdict;
use super::super::selftests::SelftestsReport;

/// The section; empty for a run without selftests.
pub(super) fn selftests(v: &Verdict) -> Vec<String> {
    let Some(r) = &v.selftests else { return Vec::new() };
    let mut lines = vec![format!("Kernel selftests from {} (baseline {}):", r.source, r.baseline)];
    lines.extend(table(r));
    let mut notes = Vec::new();
    for p in &r.programs {
        for c in p.cases.iter().filter(|c| c.status != CheckStatus::Pass || c.expected.is_some()) {
            let why = if c.reason.is_empty() { String::new() } else { format!(": {}", c.reason) };
            let judged = match (c.status, &c.baseline_reason) {
                (CheckStatus::Skip, Some(b)) => format!("expected ({b})"),
                (CheckStatus::Pass, Some(_)) => "passes: the baseline entry is stale".to_owned(),
                (_, Some(_)) => "FAIL: the baseline expects another result".to_owned(),
                _ => "FAIL: not in the baseline".to_owned(),
            };
            notes.push(format!("  {} {:?}{why} — {judged}", c.name, c.outcome));
        }
    }
    if !notes.is_empty() {
        lines.push("Cases that did not pass:".to_owned());
        lines.extend(notes);
    }
    if !r.stale_baseline.is_empty() {
        lines.push("Baseline entries that no longer match:".to_owned());
        lines.extend(r.stale_baseline.iter().map(|s| format!("  {s}")));
    }
    lines
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
