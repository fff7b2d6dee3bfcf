//! The text of a `[[nic]]` run's other NICs (each one's header, table, failed checks
//! and verdict line) and of the combined per-CPU IRQ load.

use super::super::outcome::{NicsReport, Verdict};
use super::text;
use crate::text::plural;

/// The other NICs and the load table; empty for a run with one NIC.
pub(super) fn nics(v: &Verdict) -> Vec<String> {
    let Some(report) = &v.nics else { return Vec::new() };
    let mut lines = Vec::new();
    for nic in &report.nics {
        lines.push(format!(
            "NIC {} ({}, node {}):",
            nic.index,
            nic.bdf.as_deref().unwrap_or("not in the guest"),
            text::node_text(nic.node)
        ));
        lines.extend(text::header(&nic.verdict).into_iter().map(|l| format!("  {l}")));
        lines.push(String::new());
        lines.extend(text::table(&nic.verdict).into_iter().map(|l| format!("  {l}")));
        lines.extend(text::failed_checks(&nic.verdict, "  "));
        lines.push(format!("  NIC {} {}", nic.index, text::verdict_line(&nic.verdict)));
        lines.push(String::new());
    }
    lines.extend(load(report));
    lines
}

/// One row per CPU: each NIC's vectors delivered there, their sum, and how many
/// vectors' affinity holds the CPU in the guest and in the model.
fn load(report: &NicsReport) -> Vec<String> {
    let n = report.nics.len() + 1;
    let mut head = vec!["CPU".to_owned(), "node".to_owned()];
    head.extend((0..n).map(|k| format!("NIC {k}")));
    head.extend(["delivered".to_owned(), "in affinity".to_owned(), "in model".to_owned()]);
    let mut rows = vec![head];
    for r in &report.load {
        let mut row = vec![r.cpu.to_string(), r.node.to_string()];
        row.extend(r.delivered.iter().map(u32::to_string));
        row.extend([r.delivered_total(), r.affinity_total(), r.model_total()].map(|v| v.to_string()));
        rows.push(row);
    }
    let most = report.load.iter().map(|r| r.delivered_total()).max().unwrap_or(0);
    let busiest: Vec<String> =
        report.load.iter().filter(|r| most > 0 && r.delivered_total() == most).map(|r| r.cpu.to_string()).collect();
    let idle = report.load.iter().filter(|r| r.delivered_total() == 0).count();
    let mut lines = vec![format!(
        "Combined MANA IRQ load per CPU ({n} NICs; NIC k and delivered: vectors whose effective_affinity_list is \
         the CPU; in affinity / in model: vectors whose smp_affinity_list holds it, guest / model):"
    )];
    lines.extend(text::align(&rows).into_iter().map(|l| format!("  {l}")));
    lines.push(format!(
        "  busiest: CPU {} with {}; {idle} of {} have none",
        if busiest.is_empty() { "-".to_owned() } else { busiest.join(",") },
        plural(most, "vector"),
        plural(report.load.len(), "CPU")
    ));
    lines
}
