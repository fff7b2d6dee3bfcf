//! The text of a `run --irqbalance` run: one row per NIC IRQ, the driver's hint and
//! placement, then each sample while irqbalance ran, with its moves marked.

use super::super::irqbalance::{IrqbalanceReport, IrqbalanceStep};
use super::super::outcome::Verdict;
use super::text;
use crate::text::plural;

/// One cell: `smp_affinity_list@nodes`, with `/effective` when that differs, and
/// `*` in front when irqbalance changed it since the previous sample.
fn cell(s: &IrqbalanceStep) -> String {
    let nodes: Vec<String> = s.nodes.iter().map(u32::to_string).collect();
    let eff = if s.effective == s.affinity { String::new() } else { format!("/{}", s.effective) };
    format!("{}{}{eff}@{}", if s.moved { "*" } else { "" }, s.affinity, nodes.join(","))
}

/// The section; empty for a run without irqbalance.
pub(super) fn irqbalance(v: &Verdict) -> Vec<String> {
    let Some(r) = &v.irqbalance else { return Vec::new() };
    let mut lines = vec![heading(r)];
    lines.push(
        "  irqbalance 1.9.x never reads affinity_hint (no --hintpolicy): it places IRQs by its own policy. \
         Cells: smp_affinity_list[/effective_affinity_list]@nodes of smp_affinity_list, at guest seconds after \
         its start; * = moved since the previous sample (effective_affinity_list follows when the vector next \
         fires: x86 without interrupt remapping)."
            .to_owned(),
    );
    let width = r.irqs.iter().map(|i| i.samples.len()).max().unwrap_or(0);
    let times: Vec<f64> =
        (0..width).map(|k| r.irqs.iter().find_map(|i| i.samples.get(k)).map_or(0.0, |s| s.t)).collect();
    let mut head = vec!["IRQ".to_owned(), "name".to_owned(), "hint".to_owned()];
    head.extend(times.iter().enumerate().map(|(k, t)| if k == 0 { "driver".to_owned() } else { format!("{t:+.1} s") }));
    head.push("first move".to_owned());
    let mut rows = vec![head];
    for i in &r.irqs {
        let name = i.name.split('@').next().unwrap_or(&i.name).to_owned();
        let mut row = vec![i.irq.to_string(), name, i.hint.clone().unwrap_or_else(|| "-".to_owned())];
        row.extend((0..width).map(|k| i.samples.get(k).map_or_else(|| "-".to_owned(), cell)));
        row.push(i.first_move_s.map_or_else(|| "never".to_owned(), |t| format!("{t:+.1} s")));
        rows.push(row);
    }
    lines.extend(text::align(&rows).into_iter().map(|l| format!("  {l}")));
    if !r.log.is_empty() {
        lines.push(format!("  irqbalance's output ({}):", plural(r.log.len(), "line")));
        lines.extend(r.log.iter().take(10).map(|l| format!("    {l}")));
    }
    lines
}

fn heading(r: &IrqbalanceReport) -> String {
    format!(
        "irqbalance in the guest ({}): {} over {:.1} guest s; it moved {} of {} away from the \
         driver's placement (reported, not judged):",
        r.state.as_deref().unwrap_or("no state reported"),
        plural(r.samples, "sample"),
        r.sampled_s,
        r.moved,
        plural(r.irqs.len(), "NIC IRQ")
    )
}
