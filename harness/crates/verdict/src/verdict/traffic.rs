//! A traffic run's verdict (`run --traffic`): where each flow went and where
//! its interrupts and softirqs landed, and the checks on it.
//!
//! Inputs ([`TrafficInput`]): the flows the rig planned with its model's
//! predictions ([`PlannedFlow`]: Toeplitz hash, indirection slot, RQ), both
//! ends' results ([`Outcome`]), the device's per-flow records at the report
//! ([`FlowRecord`]: the RQ each flow's frames went to, the hash it put in the
//! RX CQEs), the queue table (RQ → channel → MSI-X vector → guest IRQ →
//! effective CPU) and the guest's counters before and after the traffic
//! ([`GuestTraffic`]: the NIC's interrupts per CPU, NET_RX/NET_TX softirqs
//! per CPU, `ethtool -S` per queue).
//!
//! Checks:
//! - [`FLOWS_CHECK`]: every flow's bytes arrived intact both ways (each end
//!   checked every byte, and the SHA-256s the two ends report agree);
//! - [`RSS_CHECK`]: every flow arrived on the RQ the programmed key and
//!   indirection table predict, the device's hash equals the model's, and
//!   every active RQ received a flow;
//! - [`INTERRUPTS_CHECK`]: each flow's IRQ fired during the traffic, only on
//!   the CPUs of its effective affinity.

use super::check::{Check, CheckStatus};
use super::stages::QueueTable;
use super::summary::Summary;
use crate::cpulist::CpuMask;
use crate::guest_protocol::{GuestTraffic, TrafficCounts};
use crate::text::plural;
use crate::traffic::plan::PlannedFlow;
use mana_device_api::flows::{Direction, FlowRecord};
use manarig_flows::proto::{FlowResult, Outcome, Side};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};

/// Every flow's bytes verified on both ends.
pub const FLOWS_CHECK: &str = "traffic_flows";
/// Every flow on the RQ the key and table predict, with the model's hash.
pub const RSS_CHECK: &str = "rss_steering";
/// Each flow's interrupts on the CPUs of its IRQ's effective affinity.
pub const INTERRUPTS_CHECK: &str = "traffic_interrupts";

/// IP protocol number of TCP.
const TCP: u8 = 6;

/// What a traffic run's verdict is built from (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct TrafficInput<'a> {
    /// The flows the rig planned (empty when no plan was made).
    pub planned: &'a [PlannedFlow],
    /// Why no plan was made.
    pub plan_error: Option<&'a str>,
    /// Both ends' results (None when the peer has none).
    pub outcome: Option<&'a Outcome>,
    /// Why the peer has no results.
    pub peer_error: Option<&'a str>,
    /// The device's per-flow records at the report.
    pub device_flows: &'a [FlowRecord],
    /// The queue table at the report.
    pub queues: Option<&'a QueueTable>,
    /// The guest's side: ping, the tool's exit status, the counters.
    pub guest: &'a GuestTraffic,
    /// The peer's address (the source of every flow's frames to the guest).
    pub host: Ipv4Addr,
    /// The guest's address.
    pub guest_ip: Ipv4Addr,
}

/// A flow's 4-tuple as its frames to the guest carry it (what RSS hashes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowTuple {
    /// `tcp`.
    pub protocol: String,
    /// The peer's address.
    pub src: String,
    /// The peer's port.
    pub src_port: u16,
    /// The guest's address.
    pub dst: String,
    /// The guest's port.
    pub dst_port: u16,
}

/// One flow: the model's prediction, what the device did, where it interrupted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrafficFlow {
    /// Flow number.
    pub id: u32,
    /// Which end connected: `guest` or `host`.
    pub opener: String,
    /// Its 4-tuple, peer → guest.
    pub tuple: FlowTuple,
    /// The Toeplitz hash the rig's model computed.
    pub hash: u32,
    /// The indirection-table slot (`hash mod n`; null when RSS does not spread).
    pub slot: Option<usize>,
    /// The RQ the model predicts.
    pub rq: Option<u32>,
    /// The hash the device put in the flow's RX CQEs (null: no frame recorded).
    pub device_hash: Option<u32>,
    /// The RQ the device delivered the flow to (null: no frame recorded).
    pub device_rq: Option<u32>,
    /// The channel (queue index) of that RQ.
    pub channel: Option<usize>,
    /// That channel's MSI-X vector (its EQ's `eq_pci_msix_index`).
    pub msix_index: Option<u16>,
    /// The guest IRQ of that channel's MSI-X vector.
    pub irq: Option<u32>,
    /// Its short name (`mana_q3`).
    pub irq_name: Option<String>,
    /// Its effective CPU (where its interrupts land).
    pub cpu: Option<u32>,
    /// Frames the device delivered to the guest for this flow.
    pub packets: u64,
    /// Frames the guest sent for this flow (its SQ: `tx_sq`).
    pub tx_packets: u64,
    /// The SQ the guest's frames left on.
    pub tx_sq: Option<u32>,
    /// Bytes that reached the guest, verified.
    pub to_guest: u64,
    /// Bytes that reached the peer, verified.
    pub to_host: u64,
    /// Whether both ends verified every byte and their SHA-256s agree.
    pub verified: bool,
}

/// A count on one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuCount {
    /// Guest CPU.
    pub cpu: u32,
    /// The count.
    pub count: u64,
}

/// One channel during the traffic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrafficQueue {
    /// Channel (queue index, `rx_N`/`tx_N` in `ethtool -S`).
    pub channel: usize,
    /// Its RQ ids (device view).
    pub rqs: Vec<u32>,
    /// Its SQ ids.
    pub sqs: Vec<u32>,
    /// Its guest IRQ.
    pub irq: Option<u32>,
    /// The IRQ's short name.
    pub name: Option<String>,
    /// The IRQ's `effective_affinity_list`.
    pub effective: Option<CpuMask>,
    /// Planned flows the device steered to it.
    pub flows: u32,
    /// `rx_N_packets` during the traffic (`ethtool -S`; null: not read).
    pub rx_packets: Option<u64>,
    /// `tx_N_packets`.
    pub tx_packets: Option<u64>,
    /// `rx_N_bytes`.
    pub rx_bytes: Option<u64>,
    /// `tx_N_bytes`.
    pub tx_bytes: Option<u64>,
    /// The IRQ's interrupts during the traffic, per CPU (CPUs with none left out).
    pub interrupts: Vec<CpuCount>,
}

/// One guest CPU during the traffic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrafficCpu {
    /// Guest CPU.
    pub cpu: u32,
    /// Its physical core (the summary's numbering).
    pub core: Option<u32>,
    /// Its node.
    pub node: Option<u32>,
    /// The queues' interrupts it took (the channels' IRQs: not the HWC's).
    pub interrupts: u64,
    /// NET_RX softirqs it ran.
    pub net_rx: u64,
    /// NET_TX softirqs it ran.
    pub net_tx: u64,
}

/// A core whose SMT siblings were both (all) busy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BusySiblings {
    /// Physical core.
    pub core: u32,
    /// Its busy siblings.
    pub cpus: CpuMask,
}

/// The reviewers' question under load, answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrafficSummary {
    /// CPUs that took the queues' interrupts.
    pub interrupt_cpus: CpuMask,
    /// Their cores.
    pub interrupt_cores: Vec<u32>,
    /// CPUs that ran NET_RX softirqs.
    pub net_rx_cpus: CpuMask,
    /// Their cores.
    pub net_rx_cores: Vec<u32>,
    /// Busy CPUs: the queues' interrupts or NET_RX softirqs.
    pub busy_cpus: CpuMask,
    /// Cores with a busy CPU.
    pub busy_cores: u32,
    /// Busy cores with two or more busy SMT siblings.
    pub both_siblings_busy: Vec<BusySiblings>,
    /// The NIC's node (null: NUMA_NO_NODE).
    pub nic_node: Option<u32>,
    /// Busy CPUs outside the NIC's node.
    pub remote_cpus: CpuMask,
    /// Interrupts taken outside the NIC's node, and in all.
    pub remote_interrupts: u64,
    /// All the queues' interrupts during the traffic.
    pub interrupts: u64,
    /// NET_RX softirqs run outside the NIC's node.
    pub remote_net_rx: u64,
    /// All NET_RX softirqs during the traffic.
    pub net_rx: u64,
}

/// The `traffic` object of a verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficReport {
    /// One per planned flow.
    pub flows: Vec<TrafficFlow>,
    /// One per channel of the queue table.
    pub queues: Vec<TrafficQueue>,
    /// One per guest CPU.
    pub cpus: Vec<TrafficCpu>,
    /// Where the load went.
    pub summary: TrafficSummary,
    /// ping's summary line in the guest.
    pub ping: Option<String>,
    /// Seconds the flows took (the peer's clock).
    pub seconds: Option<f64>,
    /// Why the traffic did not run or ended early, if it did.
    pub error: Option<String>,
}

/// `after - before` per CPU (missing counts are 0).
fn delta(after: &[u64], before: &[u64]) -> Vec<u64> {
    after.iter().enumerate().map(|(i, a)| a.saturating_sub(before.get(i).copied().unwrap_or(0))).collect()
}

/// An IRQ's interrupts during the traffic, per CPU.
fn irq_delta(g: &GuestTraffic, irq: u32) -> Vec<u64> {
    let none = Vec::new();
    delta(g.after.irqs.get(&irq).unwrap_or(&none), g.before.irqs.get(&irq).unwrap_or(&none))
}

fn stat(g: &GuestTraffic, name: &str) -> Option<u64> {
    let get = |c: &TrafficCounts| c.stats.get(name).copied();
    Some(get(&g.after)?.saturating_sub(get(&g.before).unwrap_or(0)))
}

fn counts(per_cpu: &[u64]) -> Vec<CpuCount> {
    per_cpu
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(cpu, &count)| CpuCount { cpu: cpu as u32, count })
        .collect()
}

/// One flow's results in `outcome` by its id: the peer's and the guest's
/// (None: that end reported none).
pub(super) fn flow_results(outcome: &Outcome, id: u32) -> (Option<&FlowResult>, Option<&FlowResult>) {
    (outcome.host.iter().find(|r| r.id == id), outcome.guest.iter().find(|r| r.id == id))
}

/// Whether a flow's bytes were verified both ways: each end checked every
/// byte it received, and each end's SHA-256 of what it sent is the other's
/// of what it received.
pub(super) fn verified_both_ways(host: &FlowResult, guest: &FlowResult) -> bool {
    host.verified
        && guest.verified
        && host.sent_sha256 == guest.received_sha256
        && guest.sent_sha256 == host.received_sha256
}

/// Builds the `traffic` object and its three checks (see the module docs);
/// `summary` gives the cores and nodes of the guest's CPUs.
pub fn judge_traffic(input: &TrafficInput<'_>, summary: &Summary) -> (TrafficReport, Vec<Check>) {
    let records: BTreeMap<(IpAddr, u16, IpAddr, u16), &FlowRecord> = input
        .device_flows
        .iter()
        .filter(|r| r.key.protocol == TCP && r.key.direction == Direction::Rx)
        .map(|r| ((r.key.src, r.key.src_port, r.key.dst, r.key.dst_port), r))
        .collect();
    let tx_records: BTreeMap<(u16, u16), &FlowRecord> = input
        .device_flows
        .iter()
        .filter(|r| r.key.protocol == TCP && r.key.direction == Direction::Tx)
        .map(|r| ((r.key.src_port, r.key.dst_port), r))
        .collect();
    let rows = input.queues.map_or(&[][..], |t| &t.rows[..]);
    let row_of_rq = |rq: u32| rows.iter().find(|r| r.rqs.contains(&rq));
    let host = IpAddr::V4(input.host);
    let guest = IpAddr::V4(input.guest_ip);
    let flows: Vec<TrafficFlow> = input
        .planned
        .iter()
        .map(|p| {
            let s = &p.spec;
            let rx = records.get(&(host, s.host_port, guest, s.guest_port));
            let tx = tx_records.get(&(s.guest_port, s.host_port));
            let device_rq = rx.and_then(|r| r.queue);
            let row = device_rq.and_then(row_of_rq);
            let verified = input
                .outcome
                .is_some_and(|o| matches!(flow_results(o, s.id), (Some(h), Some(g)) if verified_both_ways(h, g)));
            let received = |side: Side| {
                input.outcome.and_then(|o| {
                    let list = if side == Side::Guest { &o.guest } else { &o.host };
                    list.iter().find(|r| r.id == s.id).map(|r| r.received)
                })
            };
            TrafficFlow {
                id: s.id,
                opener: match s.opener {
                    Side::Guest => "guest".into(),
                    Side::Host => "host".into(),
                },
                tuple: FlowTuple {
                    protocol: "tcp".into(),
                    src: input.host.to_string(),
                    src_port: s.host_port,
                    dst: input.guest_ip.to_string(),
                    dst_port: s.guest_port,
                },
                hash: p.hash,
                slot: p.slot,
                rq: p.rq,
                device_hash: rx.map(|r| r.hash),
                device_rq,
                channel: row.map(|r| r.channel),
                msix_index: row.map(|r| r.msix_index),
                irq: row.and_then(|r| r.irq),
                irq_name: row.and_then(|r| r.name.clone()),
                cpu: row.and_then(|r| r.effective.as_ref()).and_then(|e| e.iter().next()),
                packets: rx.map_or(0, |r| r.packets),
                tx_packets: tx.map_or(0, |r| r.packets),
                tx_sq: tx.and_then(|r| r.queue),
                to_guest: received(Side::Guest).unwrap_or(0),
                to_host: received(Side::Host).unwrap_or(0),
                verified,
            }
        })
        .collect();
    let g = input.guest;
    let queues: Vec<TrafficQueue> = rows
        .iter()
        .map(|r| {
            let ch = r.channel;
            TrafficQueue {
                channel: ch,
                rqs: r.rqs.clone(),
                sqs: r.sqs.clone(),
                irq: r.irq,
                name: r.name.clone(),
                effective: r.effective.clone(),
                flows: flows.iter().filter(|f| f.channel == Some(ch)).count() as u32,
                rx_packets: stat(g, &format!("rx_{ch}_packets")),
                tx_packets: stat(g, &format!("tx_{ch}_packets")),
                rx_bytes: stat(g, &format!("rx_{ch}_bytes")),
                tx_bytes: stat(g, &format!("tx_{ch}_bytes")),
                interrupts: r.irq.map(|irq| counts(&irq_delta(g, irq))).unwrap_or_default(),
            }
        })
        .collect();
    // An empty table is not known either: the device read after the final
    // rmmod (an agent without the MANARIG-UNLOAD mark) has no queues left.
    let queue_irqs: Option<BTreeSet<u32>> =
        input.queues.map(|t| t.rows.iter().filter_map(|r| r.irq).collect()).filter(|q: &BTreeSet<u32>| !q.is_empty());
    let cpus = cpu_rows(g, summary, queue_irqs.as_ref());
    let report = TrafficReport {
        summary: traffic_summary(&cpus, summary),
        flows,
        queues,
        cpus,
        ping: (!g.ping_summary.is_empty()).then(|| g.ping_summary.clone()),
        seconds: input.outcome.map(|o| o.elapsed_ms as f64 / 1000.0),
        error: failure_reason(input),
    };
    let checks = vec![flows_check(input, &report), rss_check(input, &report), interrupts_check(&report)];
    (report, checks)
}

/// Why there are no results (or fewer), if so.
fn failure_reason(input: &TrafficInput<'_>) -> Option<String> {
    if let Some(e) = input.plan_error {
        return Some(format!("no plan: {e}"));
    }
    if let Some(o) = input.outcome {
        return o.error.clone();
    }
    if let Some(e) = input.peer_error {
        return Some(e.to_string());
    }
    let g = input.guest;
    Some(match (g.addr_status, g.ping_status, g.tool_status) {
        (None, _, _) => "the guest agent ran no traffic (no netdev?)".to_string(),
        (Some(rc), _, _) if rc != 0 => format!("`ip addr add` failed in the guest (exit {rc})"),
        (_, _, Some(rc)) => {
            format!("the guest tool never reached the peer (exit {rc}; ping: exit {:?})", g.ping_status)
        }
        _ => "the guest tool did not run".to_string(),
    })
}

/// Per guest CPU: the queues' interrupts (`queue_irqs`; all the NIC's when
/// the queue table is not known) and the softirqs during the traffic.
fn cpu_rows(g: &GuestTraffic, summary: &Summary, queue_irqs: Option<&BTreeSet<u32>>) -> Vec<TrafficCpu> {
    let mut interrupts: Vec<u64> = Vec::new();
    for irq in g.after.irqs.keys().filter(|i| queue_irqs.is_none_or(|q| q.contains(i))) {
        for (cpu, n) in irq_delta(g, *irq).into_iter().enumerate() {
            if interrupts.len() <= cpu {
                interrupts.resize(cpu + 1, 0);
            }
            interrupts[cpu] += n;
        }
    }
    let net_rx = delta(&g.after.net_rx, &g.before.net_rx);
    let net_tx = delta(&g.after.net_tx, &g.before.net_tx);
    let ncpu = summary.per_core.iter().flat_map(|c| c.cpus.iter()).max().map_or(0, |m| m as usize + 1);
    let n = ncpu.max(interrupts.len()).max(net_rx.len()).max(net_tx.len());
    (0..n)
        .map(|cpu| {
            let core = summary.per_core.iter().find(|c| c.cpus.contains(cpu as u32));
            TrafficCpu {
                cpu: cpu as u32,
                core: core.map(|c| c.core),
                node: core.and_then(|c| c.node),
                interrupts: interrupts.get(cpu).copied().unwrap_or(0),
                net_rx: net_rx.get(cpu).copied().unwrap_or(0),
                net_tx: net_tx.get(cpu).copied().unwrap_or(0),
            }
        })
        .collect()
}

fn traffic_summary(cpus: &[TrafficCpu], summary: &Summary) -> TrafficSummary {
    let mask = |f: &dyn Fn(&TrafficCpu) -> bool| cpus.iter().filter(|c| f(c)).map(|c| c.cpu).collect::<CpuMask>();
    let cores = |m: &CpuMask| {
        let set: BTreeSet<u32> = cpus.iter().filter(|c| m.contains(c.cpu)).filter_map(|c| c.core).collect();
        set.into_iter().collect::<Vec<u32>>()
    };
    let interrupt_cpus = mask(&|c| c.interrupts > 0);
    let net_rx_cpus = mask(&|c| c.net_rx > 0);
    let busy_cpus = mask(&|c| c.interrupts > 0 || c.net_rx > 0);
    let both_siblings_busy = summary
        .per_core
        .iter()
        .filter_map(|core| {
            let busy: CpuMask = core.cpus.iter().filter(|&c| busy_cpus.contains(c)).collect();
            (busy.count() >= 2).then_some(BusySiblings { core: core.core, cpus: busy })
        })
        .collect();
    let nic_node = summary.nic_node;
    let remote = |c: &TrafficCpu| nic_node.is_some() && c.node != nic_node;
    TrafficSummary {
        interrupt_cores: cores(&interrupt_cpus),
        net_rx_cores: cores(&net_rx_cpus),
        busy_cores: cores(&busy_cpus).len() as u32,
        interrupt_cpus,
        net_rx_cpus,
        both_siblings_busy,
        nic_node,
        remote_cpus: mask(&|c| remote(c) && (c.interrupts > 0 || c.net_rx > 0)),
        remote_interrupts: cpus.iter().filter(|c| remote(c)).map(|c| c.interrupts).sum(),
        interrupts: cpus.iter().map(|c| c.interrupts).sum(),
        remote_net_rx: cpus.iter().filter(|c| remote(c)).map(|c| c.net_rx).sum(),
        net_rx: cpus.iter().map(|c| c.net_rx).sum(),
        busy_cpus,
    }
}

fn flows_check(input: &TrafficInput<'_>, report: &TrafficReport) -> Check {
    let n = report.flows.len();
    if input.outcome.is_none() || n == 0 {
        let why = report.error.clone().unwrap_or_else(|| "no flows ran".into());
        return Check::new(FLOWS_CHECK, CheckStatus::Fail, format!("no flow results: {why}"));
    }
    let bad: Vec<&TrafficFlow> = report.flows.iter().filter(|f| !f.verified).collect();
    let mut c = Check::pass_if(
        FLOWS_CHECK,
        bad.is_empty(),
        if bad.is_empty() {
            format!("{}, every byte verified both ways (SHA-256 equal on both ends)", plural(n, "TCP flow"))
        } else {
            format!("{} of {} not verified both ways", bad.len(), plural(n, "flow"))
        },
    );
    let outcome = input.outcome;
    c.detail = bad
        .iter()
        .map(|f| {
            let why = |list: Option<&Vec<FlowResult>>| {
                list.and_then(|l| l.iter().find(|r| r.id == f.id))
                    .map_or("no result".to_string(), |r| r.error.clone().unwrap_or_else(|| "checksums differ".into()))
            };
            format!(
                "flow {} ({}:{} -> {}:{}): peer: {}; guest: {}",
                f.id,
                f.tuple.src,
                f.tuple.src_port,
                f.tuple.dst,
                f.tuple.dst_port,
                why(outcome.map(|o| &o.host)),
                why(outcome.map(|o| &o.guest))
            )
        })
        .collect();
    c
}

fn rss_check(input: &TrafficInput<'_>, report: &TrafficReport) -> Check {
    if input.planned.is_empty() {
        return Check::new(RSS_CHECK, CheckStatus::Skip, "no flows were planned".to_string());
    }
    let mut detail = Vec::new();
    for f in &report.flows {
        let name =
            format!("flow {} ({}:{} -> {}:{})", f.id, f.tuple.src, f.tuple.src_port, f.tuple.dst, f.tuple.dst_port);
        match (f.device_rq, f.device_hash) {
            (None, _) | (_, None) => detail.push(format!("{name}: the device recorded no frame of it")),
            (Some(rq), Some(hash)) => {
                if Some(rq) != f.rq {
                    detail.push(format!(
                        "{name}: on RQ {rq}, the model predicts RQ {} (hash {:#010x}, slot {})",
                        f.rq.map_or("-".into(), |r| r.to_string()),
                        f.hash,
                        f.slot.map_or("-".into(), |s| s.to_string())
                    ));
                }
                if hash != f.hash {
                    detail.push(format!(
                        "{name}: the device's hash {hash:#010x} differs from the model's {:#010x}",
                        f.hash
                    ));
                }
            }
        }
    }
    for r in input.device_flows.iter().filter(|r| r.other_queue > 0 && r.key.direction == Direction::Rx) {
        detail.push(format!(
            "{}:{} -> {}:{}: {} went to another RQ than its first ({:?})",
            r.key.src,
            r.key.src_port,
            r.key.dst,
            r.key.dst_port,
            plural(r.other_queue, "frame"),
            r.queue
        ));
    }
    let targeted: BTreeSet<u32> = input.planned.iter().filter(|p| p.targeted).filter_map(|p| p.rq).collect();
    let reached: BTreeSet<u32> = report.flows.iter().filter_map(|f| f.device_rq).collect();
    let missed: Vec<String> = targeted.difference(&reached).map(u32::to_string).collect();
    if !missed.is_empty() {
        detail.push(format!("active RQs that received no flow: {}", missed.join(", ")));
    }
    let n = report.flows.len();
    let mut c = Check::pass_if(
        RSS_CHECK,
        detail.is_empty(),
        if detail.is_empty() {
            format!(
                "{} on the RQs the Toeplitz key and indirection table predict, device hash = model hash; \
                 all {} received flows",
                plural(n, "flow"),
                plural(targeted.len(), "active RQ")
            )
        } else {
            format!("{} over {}", plural(detail.len(), "steering difference"), plural(n, "flow"))
        },
    );
    c.detail = detail;
    c
}

fn interrupts_check(report: &TrafficReport) -> Check {
    let used: BTreeSet<usize> = report.flows.iter().filter_map(|f| f.channel).collect();
    if used.is_empty() {
        return Check::new(INTERRUPTS_CHECK, CheckStatus::Skip, "no flow was seen on a channel".to_string());
    }
    let mut detail = Vec::new();
    let mut counted = false;
    for q in report.queues.iter().filter(|q| used.contains(&q.channel)) {
        let name = q.name.clone().unwrap_or_else(|| format!("channel {}", q.channel));
        let total: u64 = q.interrupts.iter().map(|c| c.count).sum();
        counted |= !q.interrupts.is_empty();
        let flows: Vec<String> =
            report.flows.iter().filter(|f| f.channel == Some(q.channel)).map(|f| f.id.to_string()).collect();
        let Some(effective) = &q.effective else {
            detail.push(format!("{name} (flows {}): no effective_affinity_list", flows.join(", ")));
            continue;
        };
        if total == 0 {
            detail.push(format!("{name} (flows {}): no interrupt during the traffic", flows.join(", ")));
            continue;
        }
        let outside: Vec<String> = q
            .interrupts
            .iter()
            .filter(|c| !effective.contains(c.cpu))
            .map(|c| format!("{} on CPU {}", c.count, c.cpu))
            .collect();
        if !outside.is_empty() {
            detail.push(format!(
                "{name} (flows {}): effective CPUs {effective}, but interrupts {}",
                flows.join(", "),
                outside.join(", ")
            ));
        }
    }
    if !counted && detail.iter().all(|d| d.contains("no interrupt")) {
        return Check::new(
            INTERRUPTS_CHECK,
            CheckStatus::Skip,
            "the guest reported no interrupt counts around the traffic".to_string(),
        );
    }
    let mut c = Check::pass_if(
        INTERRUPTS_CHECK,
        detail.is_empty(),
        if detail.is_empty() {
            format!("the {} that carried flows fired only on their effective CPUs", plural(used.len(), "IRQ"))
        } else {
            format!(
                "{} of {} that carried flows fired elsewhere or not at all",
                detail.len(),
                plural(used.len(), "IRQ")
            )
        },
    );
    c.detail = detail;
    c
}
