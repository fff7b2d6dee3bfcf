//! Before/after: two runs side by side (seed 001's `IRQ node-num core-num CPU` table with
//! `before | after` cells), then each run's `affinity_hint` masks the way
//! `/proc/irq/N/affinity_hint` prints them (seed 003's `IRQ: mask` lists).

use super::super::check::{Check, CheckStatus, Status};
use super::super::geometry::ids;
use super::super::outcome::Verdict;
use super::super::row::{RowOutcome, VectorRow};
use super::text::align;
use crate::text::plural;
use std::collections::BTreeMap;

/// `x | y`, or just `x` when both sides say the same and `merge_equal` is set.
fn pair(b: Option<String>, a: Option<String>, merge_equal: bool) -> String {
    let dash = || "-".to_owned();
    match (b, a) {
        (Some(b), Some(a)) if merge_equal && a == b => a,
        (b, a) => format!("{} | {}", b.unwrap_or_else(dash), a.unwrap_or_else(dash)),
    }
}

/// The CPU cell of one side: observed `smp_affinity_list`, with `!` when it differs from
/// that run's model, or `missing`.
fn cpu_cell(r: &VectorRow) -> String {
    match (&r.observed, r.outcome) {
        (None, _) => "missing".to_owned(),
        (Some(o), RowOutcome::Match) => o.smp_affinity_list.to_cpulist(),
        (Some(o), _) => format!("{}!", o.smp_affinity_list),
    }
}

type Side<'a> = Option<&'a VectorRow>;

fn rows_by_index<'a>(before: &'a Verdict, after: &'a Verdict) -> Vec<(Side<'a>, Side<'a>)> {
    let mut by_index: BTreeMap<u32, (Side<'a>, Side<'a>)> = BTreeMap::new();
    let mut unindexed = Vec::new();
    for r in &before.vectors {
        match r.msix_index {
            Some(i) => by_index.entry(i).or_default().0 = Some(r),
            None => unindexed.push((Some(r), None)),
        }
    }
    for r in &after.vectors {
        match r.msix_index {
            Some(i) => by_index.entry(i).or_default().1 = Some(r),
            None => unindexed.push((None, Some(r))),
        }
    }
    by_index.into_values().chain(unindexed).collect()
}

fn run_line(label: &str, v: &Verdict) -> String {
    let status = match v.status {
        Status::Pass => "PASS",
        Status::Fail => "FAIL",
    };
    let model = if v.run.model.is_empty() { String::new() } else { format!(": {}", v.run.model) };
    format!(
        "{label}: {} on Linux {} (model {}{model}), verdict {status}",
        v.run.name, v.run.kernel_release, v.run.kernel
    )
}

/// `affinity_hint` of every IRQ the guest shows, as `irq: mask` lines (all zeros when the
/// kernel has no hint, as the proc file prints it).
fn hint_lines(v: &Verdict) -> Vec<String> {
    let n = v.run.nr_cpu_ids;
    v.vectors
        .iter()
        .filter_map(|r| r.observed.as_ref())
        .map(|o| {
            let mask = o.affinity_hint.clone().unwrap_or_default();
            format!("{}: {}", o.irq, mask.to_mask_string(n))
        })
        .collect()
}

/// With fault injection (`compare --inject`), both sides' `driver_survived`
/// on one line: `driver_survived: before pass, after fail; <the after's message>`.
fn survival_line(before: &Verdict, after: &Verdict) -> Option<String> {
    let check = |v: &Verdict| v.checks.iter().find(|c| c.name == crate::verdict::DRIVER_SURVIVED).cloned();
    let (b, a) = (check(before), check(after));
    let status = |c: &Option<Check>| match c.as_ref().map(|c| c.status) {
        Some(CheckStatus::Pass) => "pass",
        Some(CheckStatus::Fail) => "fail",
        Some(CheckStatus::Skip) => "skip",
        None => "-",
    };
    let message = a.as_ref().or(b.as_ref())?.message.clone();
    Some(format!("driver_survived: before {}, after {}; {message}", status(&b), status(&a)))
}

/// Two runs side by side, matched by MSI-X index (so 6.x `mana_q<k>` and 7.x
/// `mana_msi<k+1>` share a row). Columns: IRQ (queue number), MSI-X, Name, node-num,
/// core-num, CPU (observed `smp_affinity_list`, `!` = differs from that run's model),
/// Effective; each cell `before | after` (one value when both runs agree on the name).
/// Then the `affinity_hint` masks of each run in `/proc` hex form (nr_cpu_ids bits).
pub fn render_before_after(before: &Verdict, after: &Verdict) -> String {
    let mut lines = vec![run_line("before", before), run_line("after ", after)];
    for (label, v) in [("before", before), ("after ", after)] {
        if !v.run.packages.is_empty() {
            lines.push(format!("{label} {}", crate::packages::summary(&v.run.packages)));
        }
    }
    lines.extend(survival_line(before, after));
    lines.push(String::new());
    let mut rows =
        vec![["IRQ", "MSI-X", "Name", "node-num", "core-num", "CPU", "Effective"].map(str::to_owned).to_vec()];
    for (b, a) in rows_by_index(before, after) {
        let any = b.or(a).map(|r| (r.msix_index, r.queue));
        let (index, queue) = any.unwrap_or((None, None));
        let side = |r: Side<'_>, f: &dyn Fn(&VectorRow) -> String| r.map(f);
        let nodes = |r: &VectorRow| match &r.observed {
            Some(o) => ids(&o.nodes),
            None => "-".to_owned(),
        };
        let cores = |r: &VectorRow| match &r.observed {
            Some(o) => ids(&o.cores),
            None => "-".to_owned(),
        };
        let eff = |r: &VectorRow| r.effective_cpu().map_or("-".to_owned(), |c| c.to_string());
        rows.push(vec![
            queue.map_or_else(|| if index == Some(0) { "-".to_owned() } else { "?".to_owned() }, |q| q.to_string()),
            index.map_or("?".to_owned(), |i| i.to_string()),
            pair(side(b, &|r| r.name.clone()), side(a, &|r| r.name.clone()), true),
            pair(side(b, &nodes), side(a, &nodes), false),
            pair(side(b, &cores), side(a, &cores), false),
            pair(side(b, &cpu_cell), side(a, &cpu_cell), false),
            pair(side(b, &eff), side(a, &eff), false),
        ]);
    }
    lines.extend(align(&rows));
    lines.push("! = differs from the model for that kernel; Effective is - until the vector has fired".to_owned());
    let count = |v: &Verdict| v.vectors.iter().filter(|r| r.observed.is_some()).count();
    for (label, v) in [("Before", before), ("After", after)] {
        lines.push(String::new());
        lines.push(format!(
            "{label} ({}): affinity hints ({}, nr_cpu_ids = {}):",
            v.run.kernel_release,
            plural(count(v), "IRQ"),
            v.run.nr_cpu_ids
        ));
        lines.extend(hint_lines(v));
    }
    let traffic = super::traffic_text::before_after(before, after);
    if !traffic.is_empty() {
        lines.push(String::new());
        lines.extend(traffic);
    }
    lines.join("\n") + "\n"
}
