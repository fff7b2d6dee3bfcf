//! Text pieces every format shares: header, IRQ table, differences, summary block,
//! a rig run's stages (link and queue table), verdict line. Each returns lines without
//! newlines.

use super::super::check::{CheckStatus, Status};
use super::super::geometry::ids;
use super::super::outcome::Verdict;
use super::super::row::{RowOutcome, VectorRow};
use super::super::stage_checks::{same_irq_table_check, same_queue_table_check, stage_irq_table_check};
use super::super::stages::{QueueTable, StageLink, HOTPLUG_STAGES};
use super::super::summary::{RemoteIrq, Summary};
use crate::cpulist::CpuMask;
use crate::text::plural;
use std::collections::BTreeMap;

/// Longest list of IRQ names the summary block spells out; longer ones become cpulists.
const LIST_MAX: usize = 8;

/// Group key of remote IRQs: (hop, node, distance).
type RemoteKey = (Option<u32>, Option<u32>, Option<u32>);

/// `a | b | c`, or `none` for an empty list of hops.
fn hops_text(hops: &[CpuMask]) -> String {
    if hops.is_empty() {
        return "none (the NIC's node has no CPUs)".to_owned();
    }
    let parts: Vec<String> =
        hops.iter().map(|h| if h.is_empty() { "(nothing new)".to_owned() } else { h.to_cpulist() }).collect();
    parts.join(" | ")
}

/// `0` or `none (NUMA_NO_NODE)`.
pub(super) fn node_text(n: Option<u32>) -> String {
    n.map_or("none (NUMA_NO_NODE)".to_owned(), |n| n.to_string())
}

/// Two header lines: what ran where, and the machine/NIC facts.
pub(super) fn header(v: &Verdict) -> Vec<String> {
    let r = &v.run;
    let observed_node = r.nic_numa_node_observed.map_or("-1".to_owned(), |n| n.to_string());
    let model = if r.model.is_empty() { String::new() } else { format!(": {}", r.model) };
    let basis = if r.model_basis.is_empty() { String::new() } else { format!(" (model chosen by {})", r.model_basis) };
    let mut lines = vec![
        format!(
            "manarig {}: {} ({}) on Linux {}, modelled as {} ({}); accel {}",
            r.name, r.topology, r.source, r.kernel_release, r.kernel, r.model_version, r.accel
        ),
        format!("model {}{model}{basis}", r.kernel),
        format!(
            "NIC {} numa_node {observed_node} (topology: node {}); {}; MSI-X table {}; {} expected, {} seen; hops from the NIC node: {}",
            r.nic_bdf.as_deref().unwrap_or("(no PCI address)"),
            node_text(r.nic_node),
            plural(r.online_cpus, "online CPU"),
            r.msix_table_size,
            plural(r.vectors_expected, "vector"),
            r.vectors_observed,
            hops_text(&r.hops)
        ),
    ];
    if !r.packages.is_empty() {
        lines.insert(1, crate::packages::summary(&r.packages));
    }
    if let Some(by) = &r.judged_by {
        lines.insert(1, format!("judged by {by} (the model's table is shown, not judged)"));
    }
    lines
}

/// Left-align cells in columns two spaces apart, trimming trailing blanks.
pub(super) fn align(rows: &[Vec<String>]) -> Vec<String> {
    let ncol = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; ncol];
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
            cells.join("  ").trim_end().to_owned()
        })
        .collect()
}

fn queue_cell(r: &VectorRow) -> String {
    match (r.msix_index, r.queue) {
        (_, Some(q)) => q.to_string(),
        (Some(0), None) => "-".to_owned(),
        _ => "?".to_owned(),
    }
}

/// The "Model" cell: `ok`, `want 2-3`, `missing, want 6-7`, `unexpected`.
fn model_cell(r: &VectorRow) -> String {
    let want = r.expected.as_ref().map(|e| e.smp_affinity_list.to_cpulist());
    match (r.outcome, &r.observed, want) {
        (RowOutcome::Match, _, _) => "ok".to_owned(),
        (RowOutcome::Missing, _, Some(w)) => format!("missing, want {w}"),
        (RowOutcome::Unexpected, _, _) => "unexpected".to_owned(),
        (_, Some(o), Some(w)) if o.smp_affinity_list.to_cpulist() != w => format!("want {w}"),
        _ => "differs (below)".to_owned(),
    }
}

/// Whether any row has a file-numbering column.
fn has_file_cpus(v: &Verdict) -> bool {
    v.vectors.iter().any(|r| r.observed.as_ref().is_some_and(|o| o.file_cpus.is_some()))
}

/// The IRQ table in the seeds' layout (IRQ = queue number, Nodes, Cores, CPUs) plus MSI-X
/// index, name, Linux IRQ, the model's verdict on the row, affinity_hint and effective CPU.
/// A `*` after the effective CPU marks a vector that never fired.
pub(super) fn table(v: &Verdict) -> Vec<String> {
    let file = has_file_cpus(v);
    let mut header: Vec<String> =
        ["IRQ", "MSI-X", "Name", "Linux", "Nodes", "Cores", "CPUs", "Model", "Hint", "Effective"]
            .map(str::to_owned)
            .to_vec();
    if file {
        header.push("File CPUs".to_owned());
    }
    let mut rows = vec![header];
    for r in &v.vectors {
        let mut row = vec![queue_cell(r), r.msix_index.map_or("?".to_owned(), |i| i.to_string()), r.name.clone()];
        match &r.observed {
            Some(o) => {
                let hint = match &o.affinity_hint {
                    None => "none".to_owned(),
                    Some(h) if *h == o.smp_affinity_list => "=".to_owned(),
                    Some(h) => h.to_cpulist(),
                };
                let eff = match (&o.effective, o.interrupts) {
                    (None, _) => "-".to_owned(),
                    (Some(e), 0) => format!("{e}*"),
                    (Some(e), _) => e.to_cpulist(),
                };
                row.extend([
                    o.irq.to_string(),
                    ids(&o.nodes),
                    ids(&o.cores),
                    o.smp_affinity_list.to_cpulist(),
                    model_cell(r),
                    hint,
                    eff,
                ]);
                if file {
                    row.push(o.file_cpus.as_ref().map_or("-".to_owned(), CpuMask::to_cpulist));
                }
            }
            None => {
                let e = r.expected.as_ref();
                row.extend([
                    "-".to_owned(),
                    e.map_or(String::new(), |e| ids(&e.nodes)),
                    e.map_or(String::new(), |e| ids(&e.cores)),
                    "-".to_owned(),
                    model_cell(r),
                    "-".to_owned(),
                    "-".to_owned(),
                ]);
            }
        }
        rows.push(row);
    }
    if v.vectors.is_empty() {
        return vec![format!(
            "(no MANA IRQs: the probe {})",
            if v.run.probe_ok { "succeeded but no vector was found" } else { "failed" }
        )];
    }
    let mut out = align(&rows);
    out.push("Model: ok = as the model predicts; Hint: = same as CPUs; Effective: effective_affinity_list".to_owned());
    if v.vectors.iter().any(|r| r.observed.as_ref().is_some_and(|o| o.interrupts == 0 && o.effective.is_some())) {
        out.push("* never fired: effective CPU not yet meaningful (x86 moves a vector when it next fires)".to_owned());
    }
    out
}

/// The failed checks under one heading, `Failed checks (N):`, N counting checks: each
/// one's message, its detail lines below it; every line starts with `indent`. Empty
/// when nothing failed. The model's differences are among them, with the checks made
/// outside the model (the guest's machine, the driver's survival, debug reports,
/// selftests).
pub(super) fn failed_checks(v: &Verdict, indent: &str) -> Vec<String> {
    let failed: Vec<_> = v.failures().collect();
    if failed.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!("{indent}Failed checks ({}):", failed.len())];
    for check in failed {
        lines.push(format!("{indent}  {}", check.message));
        lines.extend(check.detail.iter().map(|d| format!("{indent}    {d}")));
    }
    lines
}

/// `core 0`, `cores 1-3`.
fn cores_text(cores: &[u32]) -> String {
    if cores.len() == 1 {
        format!("core {}", cores[0])
    } else {
        format!("cores {}", ids(cores))
    }
}

/// The compact answer block: IRQs per node and core, SMT siblings both busy, IRQs outside
/// the NIC's node (from `effective_affinity_list`).
pub(super) fn summary(s: &Summary) -> Vec<String> {
    let mut out =
        vec![format!("Where the IRQs landed (effective_affinity_list; {} of {} MANA IRQs fired):", s.fired, s.vectors)];
    let mut nodes: Vec<String> =
        s.per_node.iter().filter(|n| n.irqs > 0).map(|n| format!("node {}: {}", n.node, n.irqs)).collect();
    let idle: Vec<u32> = s.per_node.iter().filter(|n| n.irqs == 0).map(|n| n.node).collect();
    match idle.len() {
        0 => {}
        1 => nodes.push(format!("node {}: 0", idle[0])),
        _ => nodes.push(format!("0 on nodes {}", ids(&idle))),
    }
    out.push(format!("  per node: {} (NIC on node {})", nodes.join(", "), node_text(s.nic_node)));
    let mut by_count: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for c in &s.per_core {
        by_count.entry(c.irqs).or_default().push(c.core);
    }
    let cores: Vec<String> = by_count.iter().rev().map(|(n, cores)| format!("{n} on {}", cores_text(cores))).collect();
    out.push(format!("  per core: {}", cores.join("; ")));
    let total = s.per_core.len();
    let smt = if s.threads_per_core < 2 {
        "none: no SMT (1 thread per core)".to_owned()
    } else if s.both_siblings.is_empty() {
        format!("none of {}", plural(total, "core"))
    } else if s.both_siblings.len() > LIST_MAX {
        let cores: Vec<u32> = s.both_siblings.iter().map(|b| b.core).collect();
        format!("{} of {}: {} (IRQ names: --format json)", cores.len(), plural(total, "core"), cores_text(&cores))
    } else {
        let list: Vec<String> = s
            .both_siblings
            .iter()
            .map(|b| format!("core {} (CPUs {}: {})", b.core, b.cpus, b.irqs.join(", ")))
            .collect();
        format!("{} of {}: {}", s.both_siblings.len(), plural(total, "core"), list.join("; "))
    };
    out.push(format!("  IRQs on two or more SMT siblings of one core: {smt}"));
    let remote = match s.nic_node {
        None => "n/a: the NIC has no node (NUMA_NO_NODE), every CPU is hop 0".to_owned(),
        Some(_) if s.remote.is_empty() => "none".to_owned(),
        Some(_) => {
            let mut groups: BTreeMap<RemoteKey, Vec<&RemoteIrq>> = BTreeMap::new();
            for r in &s.remote {
                groups.entry((r.hop, r.node, r.distance)).or_default().push(r);
            }
            let parts: Vec<String> = groups
                .iter()
                .map(|((hop, node, dist), irqs)| {
                    let show = |x: &Option<u32>| x.map_or("?".to_owned(), |x| x.to_string());
                    let list = if irqs.len() > LIST_MAX {
                        let cpus: CpuMask = irqs.iter().map(|r| r.cpu).collect();
                        format!("{} IRQs on CPUs {cpus}", irqs.len())
                    } else {
                        let each: Vec<String> = irqs.iter().map(|r| format!("{} on CPU {}", r.name, r.cpu)).collect();
                        each.join(", ")
                    };
                    format!("node {} (hop {}, distance {}): {list}", show(node), show(hop), show(dist))
                })
                .collect();
            format!("{}: {}", s.remote.len(), parts.join("; "))
        }
    };
    out.push(format!("  IRQs outside the NIC's node: {remote}"));
    if !s.not_fired.is_empty() {
        out.push(format!("  never fired, effective CPU not yet meaningful (not counted): {}", s.not_fired.join(", ")));
    }
    out
}

/// What the queue tables' titles say about where the rows come from.
const QUEUE_SOURCE: &str = "device view: SQ/RQ -> CQ -> EQ -> eq_pci_msix_index; guest IRQ";

/// One stage's queue table: `title (…):`, a header, one row per channel (Channel, SQ,
/// RQ, EQ, MSI-X, IRQ, Name, CPUs, Effective; `-` = none), then the idle Ethernet EQs.
pub(super) fn queue_table(t: Option<&QueueTable>, title: &str) -> Vec<String> {
    let Some(t) = t else {
        return vec![format!("{title}: not known (the device status was not taken)")];
    };
    let list = |v: &[u32]| {
        if v.is_empty() {
            "-".to_owned()
        } else {
            v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        }
    };
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
    let mut rows =
        vec![["Channel", "SQ", "RQ", "EQ", "MSI-X", "IRQ", "Name", "CPUs", "Effective"].map(str::to_owned).to_vec()];
    for r in &t.rows {
        rows.push(vec![
            r.channel.to_string(),
            list(&r.sqs),
            list(&r.rqs),
            r.eq.to_string(),
            r.msix_index.to_string(),
            opt(r.irq.map(|i| i.to_string())),
            opt(r.name.clone()),
            opt(r.cpus.as_ref().map(CpuMask::to_cpulist)),
            opt(r.effective.as_ref().map(CpuMask::to_cpulist)),
        ]);
    }
    let mut out = vec![format!("{title} ({QUEUE_SOURCE}):")];
    out.extend(align(&rows));
    if !t.idle_eqs.is_empty() {
        out.push(format!("Ethernet EQs without queues: {}", list(&t.idle_eqs)));
    }
    out
}

/// `link: eth0 up at 3.10 s, carrier 1 at 3.21 s (0.40 s from the start of ip link set up, guest clock); …`
pub(super) fn link_line(l: &StageLink) -> String {
    let secs = |t: Option<f64>| t.map_or("-".to_owned(), |t| format!("{t:.2} s"));
    let carrier = match l.carrier {
        Some(true) => "carrier 1",
        Some(false) => "NO carrier",
        None => "carrier not read",
    };
    let ethtool = match (l.ethtool_status, l.channels) {
        (None, Some(c)) => format!("; {c} combined channels"),
        (None, None) => String::new(),
        (Some(rc), c) => format!(
            "; ethtool -L exit {rc} at {}, now {} combined channels",
            secs(l.ethtool_s),
            c.map_or("?".to_owned(), |c| c.to_string())
        ),
    };
    format!(
        "link: {} up at {}, {carrier} at {} ({} from the start of ip link set up, guest clock){ethtool}",
        l.netdev.as_deref().unwrap_or("-"),
        secs(l.ifup_s),
        secs(l.carrier_s),
        secs(l.ifup_to_carrier_s)
    )
}

/// An earlier stage's IRQ table: Name, the model's `smp_affinity_list` for that
/// moment, the guest's, its effective CPUs, and the row's outcome.
fn stage_irq_table(rows: &[VectorRow], stage: &str) -> Vec<String> {
    let opt = |m: Option<&CpuMask>| m.map_or("-".to_owned(), CpuMask::to_cpulist);
    let mut table = vec![["Name", "Expected", "smp_affinity_list", "Effective", "Outcome"].map(str::to_owned).to_vec()];
    for r in rows {
        table.push(vec![
            r.name.clone(),
            opt(r.expected.as_ref().map(|e| &e.smp_affinity_list)),
            opt(r.observed.as_ref().map(|o| &o.smp_affinity_list)),
            opt(r.observed.as_ref().and_then(|o| o.effective.as_ref())),
            format!("{:?}", r.outcome).to_lowercase(),
        ]);
    }
    let mut out = vec![format!("IRQs at stage {stage}:")];
    out.extend(align(&table));
    out
}

/// A rig run's stages (none outside the rig): each earlier stage with its verdict, link
/// and queue table; the report's link and queue table; `rmmod`; how each earlier stage
/// compares with the report (from the stage checks); the kernel warnings.
pub(super) fn stages(v: &Verdict) -> Vec<String> {
    let Some((report, earlier)) = v.queues.as_deref().and_then(<[_]>::split_last) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for s in earlier {
        let status = if s.status == Status::Pass { "PASS" } else { "FAIL" };
        out.push(format!("== stage {}: {status}", s.stage));
        if let Some(online) = &s.facts.online {
            out.push(format!("online CPUs: {}", online.to_cpulist()));
        }
        if let Some(rows) = &s.facts.vectors {
            out.extend(stage_irq_table(rows, &s.stage));
        }
        out.push(link_line(&s.facts.link));
        out.extend(queue_table(s.facts.table.as_ref(), &format!("Queues at stage {}", s.stage)));
        out.push(String::new());
    }
    if !earlier.is_empty() {
        out.push(format!("== {}", report.stage));
        if let Some(online) = &report.facts.online {
            out.push(format!("online CPUs: {}", online.to_cpulist()));
        }
    }
    out.push(link_line(&report.facts.link));
    out.extend(queue_table(report.facts.table.as_ref(), &format!("Queues at the {}", report.stage)));
    if let Some(rc) = report.facts.rmmod_status {
        out.push(format!("rmmod mana: exit {rc}"));
    }
    let word = |check: String| match v.checks.iter().find(|c| c.name == check).map(|c| c.status) {
        Some(CheckStatus::Pass) => "same",
        Some(CheckStatus::Fail) => "DIFFERS",
        _ => "not compared",
    };
    for s in earlier {
        if HOTPLUG_STAGES.contains(&s.stage.as_str()) {
            // A hotplug stage's table differs from the report's on purpose: it is judged
            // against the model for the CPUs online then, by its own check.
            let check = stage_irq_table_check(&s.stage);
            let status = v.checks.iter().find(|c| c.name == check).map(|c| c.status);
            let word = match status {
                Some(CheckStatus::Fail) => "FAIL",
                Some(CheckStatus::Pass) => "PASS",
                _ if s.status == Status::Fail => "FAIL",
                _ => "PASS",
            };
            out.push(format!("{}: IRQ table against the model for the CPUs online then: {word} ({check})", s.stage));
            continue;
        }
        out.push(format!(
            "{} vs {}: IRQ table {}, queue table {}",
            s.stage,
            report.stage,
            word(same_irq_table_check(&s.stage)),
            word(same_queue_table_check(&s.stage))
        ));
    }
    let warnings = &report.facts.warnings;
    if warnings.is_empty() {
        out.push("kernel warnings: none".to_owned());
    } else {
        out.push(format!("kernel warnings: {}", warnings.len()));
        out.extend(warnings.iter().map(|w| format!("  {w}")));
    }
    out
}

/// `verdict: PASS (…)` / `verdict: FAIL (…)`.
/// Several NICs: every NIC's checks count (NIC K's named `nicK:<check>`). A FAIL
/// always names what failed: a hotplug stage fails through its `irq_table_at_<stage>`
/// check; a verdict read from a document older than that check names the stage.
pub(super) fn verdict_line(v: &Verdict) -> String {
    let all = v.checks_of_every_nic();
    let n = all.len();
    let checks = plural(n, "check");
    let skipped = all.iter().filter(|(_, c)| c.status == CheckStatus::Skip).count();
    let skip = if skipped == 0 { String::new() } else { format!(", {skipped} skipped") };
    let survived = v.checks.iter().find(|c| c.name == crate::verdict::DRIVER_SURVIVED);
    match v.status {
        // A run with fault injection is judged by driver_survived alone.
        Status::Pass if survived.is_some() => format!(
            "verdict: PASS (driver_survived; {} of {checks} passed{skip}): {}",
            n - skipped,
            survived.map_or("", |c| c.message.as_str())
        ),
        Status::Pass if v.run.judged_by.is_some() => format!(
            "verdict: PASS ({} of {checks} passed{skip}; judged by {})",
            n - skipped,
            v.run.judged_by.as_deref().unwrap_or_default()
        ),
        Status::Pass => format!(
            "verdict: PASS ({} of {checks} passed{skip}; {} on Linux {} matches the Linux {} model)",
            n - skipped,
            v.run.topology,
            v.run.kernel_release,
            v.run.kernel
        ),
        Status::Fail => {
            let failed: Vec<&str> =
                all.iter().filter(|(_, c)| c.status == CheckStatus::Fail).map(|(name, _)| name.as_str()).collect();
            if failed.is_empty() {
                let stages: Vec<String> = v
                    .queues
                    .iter()
                    .flatten()
                    .filter(|s| s.status == Status::Fail)
                    .map(|s| format!("stage {}", s.stage))
                    .collect();
                return if stages.is_empty() {
                    format!("verdict: FAIL (none of {checks} failed)")
                } else {
                    format!("verdict: FAIL ({} failed; none of {checks} did)", stages.join(", "))
                };
            }
            format!("verdict: FAIL ({} of {checks} failed: {})", failed.len(), failed.join(", "))
        }
    }
}
