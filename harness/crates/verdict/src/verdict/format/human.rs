//! `--format human`: the seeds' table, the failed checks, the summary block, a rig run's
//! stages (link and queue table of each), a traffic run's flows, per-CPU table and
//! summary, a `--irqbalance` run's samples per IRQ, a soak's samples and counts, and a last
//! line `verdict: PASS|FAIL (…)`.

use super::super::check::Status;
use super::super::outcome::Verdict;
use super::irqbalance_text;
use super::json::RigErrorReport;
use super::nics_text;
use super::text;
use super::traffic_text;
use crate::text::plural;

/// Driver log lines shown with a failing verdict (the newest ones).
const DMESG_TAIL: usize = 20;

pub(super) fn render(v: &Verdict) -> String {
    let mut lines = text::header(v);
    lines.push(String::new());
    lines.extend(text::table(v));
    let failed = text::failed_checks(v, "");
    if !failed.is_empty() {
        lines.push(String::new());
        lines.extend(failed);
    }
    lines.push(String::new());
    lines.extend(text::summary(&v.summary));
    if v.status == Status::Fail && !v.dmesg_mana.is_empty() {
        let skip = v.dmesg_mana.len().saturating_sub(DMESG_TAIL);
        lines.push(String::new());
        lines.push(format!(
            "Driver log (last {} of {}):",
            v.dmesg_mana.len() - skip,
            plural(v.dmesg_mana.len(), "line")
        ));
        lines.extend(v.dmesg_mana.iter().skip(skip).map(|l| format!("  {l}")));
    }
    let stages = text::stages(v);
    if !stages.is_empty() {
        lines.push(String::new());
        lines.extend(stages);
    }
    let traffic = traffic_text::traffic(v);
    if !traffic.is_empty() {
        lines.push(String::new());
        lines.extend(traffic);
    }
    let irqbalance = irqbalance_text::irqbalance(v);
    if !irqbalance.is_empty() {
        lines.push(String::new());
        lines.extend(irqbalance);
    }
    let selftests = super::selftests_text::selftests(v);
    if !selftests.is_empty() {
        lines.push(String::new());
        lines.extend(selftests);
    }
    let soak = super::soak_text::soak(v);
    if !soak.is_empty() {
        lines.push(String::new());
        lines.extend(soak);
    }
    // The evidence behind a passing survival or debug-report check (a failed one is
    // among the failed checks above, with its evidence).
    let evidence =
        [(crate::verdict::DRIVER_SURVIVED, "Driver survival"), (crate::verdict::DEBUG_REPORTS_CHECK, "Debug reports")];
    for (name, title) in evidence {
        let check = v.checks.iter().find(|c| c.name == name);
        if let Some(c) = check.filter(|c| c.status != crate::verdict::CheckStatus::Fail) {
            lines.push(String::new());
            lines.push(format!("{title}: {}", c.message));
            lines.extend(c.detail.iter().map(|d| format!("  {d}")));
        }
    }
    let nics = nics_text::nics(v);
    if !nics.is_empty() {
        lines.push(String::new());
        lines.extend(nics);
    }
    lines.push(text::verdict_line(v));
    lines.join("\n") + "\n"
}

pub(super) fn render_rig_error(r: &RigErrorReport) -> String {
    let mut lines = vec![format!("manarig {}: the rig failed before a verdict:", r.run)];
    lines.extend(r.causes.iter().map(|c| format!("  {c}")));
    lines.push(format!("verdict: RIG ERROR ({})", r.error));
    lines.join("\n") + "\n"
}
