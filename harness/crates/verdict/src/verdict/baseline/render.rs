//! The baseline comparison as text for people: moved vectors, then the numbers.

use super::{Baseline, Metrics, Placement};
use crate::cpulist::CpuMask;
use std::collections::BTreeSet;
use std::fmt::Write as _;

fn ids(v: &[u32]) -> String {
    v.iter().copied().collect::<CpuMask>().to_cpulist()
}

/// `0-1 (node 0, core 0, hop 0; fired on 0)`, or `-` when absent.
fn place(p: Option<&Placement>) -> String {
    let Some(p) = p else { return "-".to_owned() };
    let hop = p.hop.map_or("no hop".to_owned(), |h| format!("hop {h}"));
    let fired = p.effective.map_or(String::new(), |c| format!("; fired on {c}"));
    let n = if p.nodes.len() == 1 { "node" } else { "nodes" };
    let c = if p.cores.len() == 1 { "core" } else { "cores" };
    format!("{} ({n} {}, {c} {}, {hop}{fired})", p.cpus, ids(&p.nodes), ids(&p.cores))
}

/// Left-aligned columns, two spaces apart.
fn table(out: &mut String, rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if widths.len() <= i {
                widths.push(0);
            }
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    for row in rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    }
}

fn metric_rows(b: &Metrics, a: &Metrics) -> Vec<Vec<String>> {
    let opt = |h: Option<u32>| h.map_or("-".to_owned(), |h| h.to_string());
    let mut rows = vec![vec![
        "MANA IRQs (fired)".to_owned(),
        format!("{} ({})", b.vectors, b.fired),
        format!("{} ({})", a.vectors, a.fired),
    ]];
    let nodes: BTreeSet<u32> = b.per_node.iter().chain(&a.per_node).map(|n| n.node).collect();
    let on = |m: &Metrics, node: u32| m.per_node.iter().find(|n| n.node == node).map_or(0, |n| n.irqs).to_string();
    rows.extend(nodes.into_iter().map(|n| vec![format!("IRQs on node {n}"), on(b, n), on(a, n)]));
    let plain = [
        ("cores with an IRQ", b.cores_with_irqs, a.cores_with_irqs),
        ("IRQs on the busiest core", b.most_on_one_core, a.most_on_one_core),
        ("cores whose SMT siblings both took IRQs", b.cores_with_busy_siblings, a.cores_with_busy_siblings),
        ("IRQs outside the NIC's node", b.outside_nic_node, a.outside_nic_node),
    ];
    rows.extend(plain.into_iter().map(|(what, x, y)| vec![what.to_owned(), x.to_string(), y.to_string()]));
    rows.push(vec!["farthest hop of those".to_owned(), opt(b.farthest_hop), opt(a.farthest_hop)]);
    rows
}

pub(super) fn text(b: &Baseline) -> String {
    let mut out = String::new();
    let (k0, k1) = (&b.baseline, &b.patched);
    let _ = writeln!(
        out,
        "baseline {}: {} ({}) vs patched {} ({})",
        b.topology, k0.kernel, k0.release, k1.kernel, k1.release
    );
    let _ = writeln!(out, "vectors moved: {} ({} on the same CPUs)", b.moved.len(), b.unchanged);
    if !b.moved.is_empty() {
        let mut rows = vec![vec![
            "MSI-X".to_owned(),
            "IRQ".to_owned(),
            format!("on {} (baseline)", k0.kernel),
            format!("on {} (patched)", k1.kernel),
        ]];
        for m in &b.moved {
            let name = m.after.as_ref().or(m.before.as_ref()).map_or("?".to_owned(), |p| p.name.clone());
            let index = m.msix_index.map_or("-".to_owned(), |i| i.to_string());
            rows.push(vec![index, name, place(m.before.as_ref()), place(m.after.as_ref())]);
        }
        table(&mut out, &rows);
    }
    let _ = writeln!(out, "numbers (each vector's effective CPU once it fired):");
    let mut rows = vec![vec![String::new(), k0.kernel.clone(), k1.kernel.clone()]];
    rows.extend(metric_rows(&b.before, &b.after));
    table(&mut out, &rows);
    let changed: Vec<String> = b
        .before_summary
        .per_core
        .iter()
        .filter_map(|c| {
            let after = b.after_summary.per_core.iter().find(|d| d.core == c.core).map_or(0, |d| d.irqs);
            (after != c.irqs).then(|| format!("core {} (CPUs {}) {} -> {after}", c.core, c.cpus, c.irqs))
        })
        .collect();
    if !changed.is_empty() {
        let _ = writeln!(out, "IRQs per core where they changed: {}", changed.join(", "));
    }
    out
}
