//! A traffic run's text (human format, and KTAP diagnostics): a line on the
//! flows, the flows table (4-tuple, the model's hash, slot and RQ, what the
//! device did, channel, MSI-X vector, IRQ, CPU, frames), the per-CPU table (the NIC's
//! interrupts, NET_RX and NET_TX softirqs during the traffic) and the
//! summary lines that answer the reviewers' question under load.

use super::super::geometry::ids;
use super::super::outcome::Verdict;
use super::super::traffic::{TrafficFlow, TrafficReport, TrafficSummary};
use super::text::{align, node_text};

/// Flows listed one per line at most (more: the first ones and a count).
const FLOWS_MAX: usize = 64;

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".to_owned(), |v| v.to_string())
}

/// `=` when the device did what the model predicts, else what it did.
fn same<T: PartialEq + ToString>(model: Option<T>, device: Option<T>) -> String {
    match device {
        Some(d) if Some(&d) == model.as_ref() => "=".to_owned(),
        d => opt(d),
    }
}

fn flow_row(f: &TrafficFlow) -> Vec<String> {
    vec![
        f.id.to_string(),
        f.opener.clone(),
        format!("{}:{} -> {}:{}", f.tuple.src, f.tuple.src_port, f.tuple.dst, f.tuple.dst_port),
        format!("{:#010x}", f.hash),
        same(Some(f.hash), f.device_hash),
        opt(f.slot),
        opt(f.rq),
        same(f.rq, f.device_rq),
        opt(f.channel),
        opt(f.msix_index),
        opt(f.irq),
        opt(f.irq_name.clone()),
        opt(f.cpu),
        f.packets.to_string(),
        if f.verified { "ok".to_owned() } else { "NO".to_owned() },
    ]
}

/// `N (P%)` of `total`.
fn share(n: u64, total: u64) -> String {
    if total == 0 {
        return n.to_string();
    }
    format!("{n} ({:.0}%)", 100.0 * n as f64 / total as f64)
}

/// The summary lines (the reviewers' question under load).
pub(super) fn summary_lines(s: &TrafficSummary) -> Vec<String> {
    let cores = |c: &[u32]| if c.is_empty() { "none".to_owned() } else { format!("cores {}", ids(c)) };
    let cpus = |m: &crate::cpulist::CpuMask| if m.is_empty() { "none".to_owned() } else { format!("CPUs {m}") };
    let both = if s.both_siblings_busy.is_empty() {
        "none".to_owned()
    } else {
        let list: Vec<String> =
            s.both_siblings_busy.iter().map(|b| format!("core {} (CPUs {})", b.core, b.cpus)).collect();
        list.join("; ")
    };
    let remote = match s.nic_node {
        None => "n/a: the NIC has no node (NUMA_NO_NODE)".to_owned(),
        Some(_) if s.remote_cpus.is_empty() => "none".to_owned(),
        Some(_) => format!(
            "{}: {} of {} interrupts, {} of {} NET_RX softirqs",
            cpus(&s.remote_cpus),
            share(s.remote_interrupts, s.interrupts),
            s.interrupts,
            share(s.remote_net_rx, s.net_rx),
            s.net_rx
        ),
    };
    vec![
        "Where the traffic landed (during the flows):".to_owned(),
        format!("  RX interrupts (the queues' IRQs): {} ({})", cpus(&s.interrupt_cpus), cores(&s.interrupt_cores)),
        format!("  NET_RX softirqs: {} ({})", cpus(&s.net_rx_cpus), cores(&s.net_rx_cores)),
        format!(
            "  busy cores whose SMT siblings were both busy: {} of {} busy cores: {both}",
            s.both_siblings_busy.len(),
            s.busy_cores
        ),
        format!("  load outside the NIC's node (node {}): {remote}", node_text(s.nic_node)),
    ]
}

/// Everything about the traffic, for the human format.
pub(super) fn traffic(v: &Verdict) -> Vec<String> {
    let Some(t) = &v.traffic else { return Vec::new() };
    let mut out = vec![headline(t)];
    if !t.flows.is_empty() {
        out.push("Flows (peer -> guest 4-tuple; hash, slot and RQ of the rig's Toeplitz model; Device = what the device did, `=` same):".to_owned());
        let mut rows = vec![[
            "Flow", "Opener", "Tuple", "Hash", "Device", "Slot", "RQ", "Device", "Ch", "MSI-X", "IRQ", "Name", "CPU",
            "Packets", "Verified",
        ]
        .map(str::to_owned)
        .to_vec()];
        rows.extend(t.flows.iter().take(FLOWS_MAX).map(flow_row));
        out.extend(align(&rows));
        if t.flows.len() > FLOWS_MAX {
            out.push(format!("… and {} more flows (all of them: --format json)", t.flows.len() - FLOWS_MAX));
        }
    }
    out.push(
        "Per CPU during the traffic (the queues' interrupts; NET_RX and NET_TX softirqs, /proc/softirqs):".to_owned(),
    );
    let mut rows = vec![["CPU", "Core", "Node", "Interrupts", "NET_RX", "NET_TX"].map(str::to_owned).to_vec()];
    rows.extend(t.cpus.iter().map(|c| {
        vec![
            c.cpu.to_string(),
            opt(c.core),
            opt(c.node),
            c.interrupts.to_string(),
            c.net_rx.to_string(),
            c.net_tx.to_string(),
        ]
    }));
    out.extend(align(&rows));
    out.extend(summary_lines(&t.summary));
    out
}

/// `traffic: 16 TCP flows, 16 verified both ways in 1.30 s; ping: …`.
pub(super) fn headline(t: &TrafficReport) -> String {
    let verified = t.flows.iter().filter(|f| f.verified).count();
    let time = t.seconds.map_or(String::new(), |s| format!(" in {s:.2} s"));
    let ping = t.ping.as_ref().map_or(String::new(), |p| format!("; ping: {p}"));
    let error = t.error.as_ref().map_or(String::new(), |e| format!("; {e}"));
    format!("traffic: {} TCP flows, {verified} verified both ways{time}{ping}{error}", t.flows.len())
}

/// `compare --traffic`: the two runs' load side by side (both must carry
/// traffic; else nothing).
pub(super) fn before_after(before: &Verdict, after: &Verdict) -> Vec<String> {
    let (Some(b), Some(a)) = (&before.traffic, &after.traffic) else { return Vec::new() };
    let verified =
        |t: &TrafficReport| format!("{} of {}", t.flows.iter().filter(|f| f.verified).count(), t.flows.len());
    let cpus = |m: &crate::cpulist::CpuMask| if m.is_empty() { "none".to_owned() } else { m.to_cpulist() };
    let both = |s: &TrafficSummary| {
        let cores: Vec<u32> = s.both_siblings_busy.iter().map(|c| c.core).collect();
        let list = if cores.is_empty() { String::new() } else { format!(" (cores {})", ids(&cores)) };
        format!("{} of {}{list}", s.both_siblings_busy.len(), s.busy_cores)
    };
    let remote = |s: &TrafficSummary| match s.nic_node {
        None => "n/a".to_owned(),
        Some(_) => format!(
            "{} interrupts, {} NET_RX",
            share(s.remote_interrupts, s.interrupts),
            share(s.remote_net_rx, s.net_rx)
        ),
    };
    let rows: Vec<(&str, String, String)> = vec![
        ("flows verified both ways", verified(b), verified(a)),
        ("CPUs with RX interrupts", cpus(&b.summary.interrupt_cpus), cpus(&a.summary.interrupt_cpus)),
        ("CPUs with NET_RX softirqs", cpus(&b.summary.net_rx_cpus), cpus(&a.summary.net_rx_cpus)),
        ("busy cores with both SMT siblings busy", both(&b.summary), both(&a.summary)),
        ("load outside the NIC's node", remote(&b.summary), remote(&a.summary)),
    ];
    let mut table = vec![vec![
        String::new(),
        format!("before ({})", before.run.kernel_release),
        format!("after ({})", after.run.kernel_release),
    ]];
    table.extend(rows.into_iter().map(|(k, x, y)| vec![k.to_owned(), x, y]));
    let mut out = vec!["Under traffic (run --traffic: the same flow count on both sides):".to_owned()];
    out.extend(align(&table));
    out
}
