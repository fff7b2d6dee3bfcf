//! A traffic run's verdict: the three traffic checks, the `traffic` object in
//! every format, and the summary under load. The flows are planned the way
//! the rig plans them (`traffic::plan`, from a steering snapshot like the
//! driver's), the device's records and the guest's counters are what a clean
//! run shows, then edited to break one thing at a time.

use super::fixtures::*;
use super::traffic::{
    flow_results, judge_traffic, verified_both_ways, TrafficInput, FLOWS_CHECK, INTERRUPTS_CHECK, RSS_CHECK,
};
use super::*;
use crate::guest_protocol::GuestTraffic;
use crate::traffic::plan::{plan, PlanRequest, PlannedFlow};
use mana_device_api::flows::{Direction, FlowKey, FlowRecord};
use mana_device_api::rss::SteeringSnapshot;
use manarig_flows::proto::{FlowResult, Outcome, Plan};
use std::net::{IpAddr, Ipv4Addr};

const HOST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const GUEST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
/// The key of Microsoft's RSS verification suite.
const KEY: &str = "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa";

/// Everything a traffic verdict is built from, for seed 002 on 6.12 with 8
/// channels: RQ 30 + i on channel i, whose IRQ is mana_q<i> firing on its
/// effective CPU.
struct Traffic {
    run: Run,
    table: QueueTable,
    planned: Vec<PlannedFlow>,
    plan: Plan,
    records: Vec<FlowRecord>,
    guest: GuestTraffic,
    outcome: Outcome,
}

fn result(id: u32, sent: u64, received: u64, sha_out: &str, sha_in: &str) -> FlowResult {
    FlowResult {
        id,
        sent,
        received,
        sent_sha256: sha_out.into(),
        received_sha256: sha_in.into(),
        verified: true,
        error: None,
        elapsed_ms: 10,
    }
}

impl Traffic {
    fn new() -> Self {
        let mut run = Run::new("seed-002", "6.12");
        // Effective CPUs as a real 6.12 run shows them (mana_hwc, q0..q7).
        run.set_effective(&[0, 0, 3, 1, 3, 4, 6, 5, 7]);
        let rows = (0..8usize)
            .map(|ch| {
                let v = &run.observed.vectors[ch + 1];
                QueueRow {
                    channel: ch,
                    sqs: vec![10 + ch as u32],
                    rqs: vec![30 + ch as u32],
                    eq: ch as u32 + 1,
                    msix_index: ch as u16 + 1,
                    irq: Some(v.irq),
                    name: Some(format!("mana_q{ch}")),
                    cpus: Some(v.smp_affinity.clone()),
                    effective: v.effective.clone(),
                }
            })
            .collect();
        let table = QueueTable { rows, ..QueueTable::default() };
        let steering = SteeringSnapshot {
            vport: 0,
            rx_enabled: true,
            rss_enabled: true,
            default_rq: Some(30),
            hash_types: 0x3f,
            key: KEY.into(),
            table: (0..64).map(|i| Some(30 + i % 8)).collect(),
        };
        let req = PlanRequest {
            host: HOST,
            guest: GUEST,
            flows: None,
            to_guest: 4096,
            to_host: 2048,
            limit_ms: 5000,
            round: 0,
            avoid: Default::default(),
        };
        let (plan, planned) = plan(Some(&steering), &req).expect("plan");
        let records = planned
            .iter()
            .map(|p| FlowRecord {
                key: FlowKey {
                    direction: Direction::Rx,
                    protocol: 6,
                    src: IpAddr::V4(HOST),
                    src_port: p.spec.host_port,
                    dst: IpAddr::V4(GUEST),
                    dst_port: p.spec.guest_port,
                },
                queue: p.rq,
                hash: p.hash,
                hash_type: p.hash_type,
                packets: 6,
                bytes: 6000,
                dropped: 0,
                other_queue: 0,
            })
            .collect();
        let mut guest = GuestTraffic {
            addr_status: Some(0),
            ping_status: Some(0),
            ping_summary: "3 packets transmitted, 3 packets received, 0% packet loss".into(),
            tool_status: Some(0),
            ..GuestTraffic::default()
        };
        for (ch, row) in table.rows.iter().enumerate() {
            let irq = row.irq.expect("irq");
            let cpu = row.effective.as_ref().and_then(|e| e.first()).expect("effective") as usize;
            let mut before = vec![0u64; 8];
            before[cpu] = 1;
            let mut after = before.clone();
            after[cpu] += 10 + ch as u64;
            guest.before.irqs.insert(irq, before);
            guest.after.irqs.insert(irq, after);
            guest.before.stats.insert(format!("rx_{ch}_packets"), 3);
            guest.after.stats.insert(format!("rx_{ch}_packets"), 15);
        }
        guest.before.net_rx = vec![5; 8];
        guest.after.net_rx = vec![25, 25, 5, 40, 20, 20, 20, 20];
        guest.after.net_tx = vec![1, 0, 0, 0, 0, 0, 0, 0];
        let sha = |id: u32, dir: &str| format!("{dir}{id}");
        let outcome = Outcome {
            plan: plan.clone(),
            host: plan.flows.iter().map(|f| result(f.id, 4096, 2048, &sha(f.id, "g"), &sha(f.id, "h"))).collect(),
            guest: plan.flows.iter().map(|f| result(f.id, 2048, 4096, &sha(f.id, "h"), &sha(f.id, "g"))).collect(),
            error: None,
            elapsed_ms: 1250,
        };
        Self { run, table, planned, plan, records, guest, outcome }
    }

    fn verdict(&self) -> Verdict {
        let mut v = self.run.judge();
        let input = TrafficInput {
            planned: &self.planned,
            plan_error: None,
            outcome: Some(&self.outcome),
            peer_error: None,
            device_flows: &self.records,
            queues: Some(&self.table),
            guest: &self.guest,
            host: HOST,
            guest_ip: GUEST,
        };
        let (report, checks) = judge_traffic(&input, &v.summary);
        v.add_traffic(report, checks);
        v
    }
}

#[test]
fn a_clean_traffic_run_passes_the_three_traffic_checks() {
    let t = Traffic::new();
    assert_eq!(t.plan.flows.len(), 16);
    let v = t.verdict();
    assert_eq!(v.status, Status::Pass, "{:#?}", v.failures().collect::<Vec<_>>());
    for name in [FLOWS_CHECK, RSS_CHECK, INTERRUPTS_CHECK] {
        assert_eq!(check(&v, name).status, CheckStatus::Pass, "{name}: {:?}", check(&v, name));
    }
    let tr = v.traffic.as_ref().expect("traffic");
    assert_eq!((tr.flows.len(), tr.queues.len(), tr.cpus.len()), (16, 8, 8));
    let f0 = &tr.flows[0];
    assert_eq!(
        (f0.device_rq, f0.rq, f0.channel, f0.irq_name.as_deref(), f0.cpu),
        (Some(30), Some(30), Some(0), Some("mana_q0"), Some(0))
    );
    assert_eq!((f0.to_guest, f0.to_host, f0.verified), (4096, 2048, true));
    assert_eq!(tr.queues[3].rx_packets, Some(12));
    assert_eq!(tr.queues[3].interrupts, vec![traffic::CpuCount { cpu: 3, count: 13 }]);
    // CPU 3 takes mana_q1 and mana_q3 (channels 1 and 3: 11 + 13 interrupts).
    assert_eq!((tr.cpus[3].interrupts, tr.cpus[3].net_rx, tr.cpus[2].interrupts), (24, 35, 0));
}

#[test]
fn the_summary_names_busy_cores_with_both_siblings_busy_and_the_load_off_the_nics_node() {
    let v = Traffic::new().verdict();
    let s = &v.traffic.as_ref().expect("traffic").summary;
    assert_eq!(s.interrupt_cpus, mask("0-1,3-7"));
    assert_eq!(s.busy_cpus, mask("0-1,3-7"), "CPU 2 ran no NET_RX: not busy");
    assert_eq!(s.busy_cores, 4);
    let both: Vec<(u32, String)> = s.both_siblings_busy.iter().map(|b| (b.core, b.cpus.to_cpulist())).collect();
    assert_eq!(both, vec![(0, "0-1".into()), (2, "4-5".into()), (3, "6-7".into())]);
    assert_eq!((s.nic_node, s.remote_cpus.to_cpulist()), (Some(0), "4-7".to_string()));
    // Channels 4-7 fire on node 1: 14 + 15 + 16 + 17 of the 8 channels' 10 + … + 17.
    assert_eq!((s.remote_interrupts, s.interrupts), (62, 108));
    assert_eq!((s.remote_net_rx, s.net_rx), (60, 135));
}

#[test]
fn a_flow_on_another_rq_or_with_another_hash_fails_rss_steering_naming_it() {
    let mut t = Traffic::new();
    t.records[2].queue = Some(37);
    t.records[5].hash ^= 1;
    let v = t.verdict();
    let c = check(&v, RSS_CHECK);
    assert_eq!(c.status, CheckStatus::Fail);
    assert_eq!(v.status, Status::Fail);
    let p2 = &t.planned[2].spec;
    assert!(
        c.detail
            .iter()
            .any(|d| d.starts_with(&format!("flow 2 (192.0.2.1:{} -> 192.0.2.2:{})", p2.host_port, p2.guest_port))
                && d.contains("on RQ 37, the model predicts RQ 32")),
        "{:?}",
        c.detail
    );
    assert!(c.detail.iter().any(|d| d.starts_with("flow 5") && d.contains("device's hash")), "{:?}", c.detail);
    assert_eq!(c.detail.len(), 2, "RQ 32 still has other flows: {:?}", c.detail);
    // The flow's IRQ follows where the device put it (channel 7).
    assert_eq!(v.traffic.as_ref().expect("traffic").flows[2].channel, Some(7));
}

#[test]
fn a_flow_the_device_never_saw_fails_rss_steering_and_frames_on_a_second_rq_are_named() {
    let mut t = Traffic::new();
    t.records.remove(0);
    t.records[0].other_queue = 2;
    // Flow 0 was RQ 30's only targeted flow; flow 14 also goes there.
    t.records.retain(|r| r.queue != Some(30));
    let c = check(&t.verdict(), RSS_CHECK).clone();
    assert_eq!(c.status, CheckStatus::Fail);
    assert!(c.detail.iter().any(|d| d.starts_with("flow 0") && d.contains("recorded no frame")), "{:?}", c.detail);
    assert!(c.detail.iter().any(|d| d.contains("2 frames went to another RQ")), "{:?}", c.detail);
    assert!(c.detail.iter().any(|d| d == "active RQs that received no flow: 30"), "{:?}", c.detail);
}

#[test]
fn interrupts_off_the_effective_cpu_or_none_at_all_fail_traffic_interrupts() {
    let mut t = Traffic::new();
    let q2 = t.table.rows[2].irq.expect("irq");
    t.guest.after.irqs.get_mut(&q2).expect("q2")[6] = 4;
    let q5 = t.table.rows[5].irq.expect("irq");
    let before = t.guest.before.irqs[&q5].clone();
    t.guest.after.irqs.insert(q5, before);
    let c = check(&t.verdict(), INTERRUPTS_CHECK).clone();
    assert_eq!(c.status, CheckStatus::Fail);
    assert!(
        c.detail.iter().any(|d| d.starts_with("mana_q2") && d.contains("effective CPUs 1, but interrupts 4 on CPU 6")),
        "{:?}",
        c.detail
    );
    assert!(
        c.detail.iter().any(|d| d.starts_with("mana_q5") && d.contains("no interrupt during the traffic")),
        "{:?}",
        c.detail
    );
}

#[test]
fn without_interrupt_counts_the_interrupt_check_is_skipped() {
    let mut t = Traffic::new();
    t.guest.before.irqs.clear();
    t.guest.after.irqs.clear();
    assert_eq!(check(&t.verdict(), INTERRUPTS_CHECK).status, CheckStatus::Skip);
}

#[test]
fn a_flow_not_verified_or_no_results_at_all_fails_traffic_flows_with_the_reason() {
    let mut t = Traffic::new();
    t.outcome.guest[4].verified = false;
    t.outcome.guest[4].error = Some("byte 17 differs from the expected stream".into());
    let c = check(&t.verdict(), FLOWS_CHECK).clone();
    assert_eq!(c.status, CheckStatus::Fail);
    assert!(c.detail.iter().any(|d| d.starts_with("flow 4") && d.contains("guest: byte 17 differs")), "{:?}", c.detail);
    let mut t = Traffic::new();
    t.outcome.host[1].received_sha256 = "something else".into();
    assert_eq!(check(&t.verdict(), FLOWS_CHECK).status, CheckStatus::Fail, "checksums compared across the ends");

    let t = Traffic::new();
    let mut v = t.run.judge();
    let input = TrafficInput {
        planned: &[],
        plan_error: None,
        outcome: None,
        peer_error: None,
        device_flows: &[],
        queues: Some(&t.table),
        guest: &GuestTraffic {
            addr_status: Some(0),
            ping_status: Some(1),
            tool_status: Some(2),
            ..GuestTraffic::default()
        },
        host: HOST,
        guest_ip: GUEST,
    };
    let (report, checks) = judge_traffic(&input, &v.summary);
    v.add_traffic(report, checks);
    let c = check(&v, FLOWS_CHECK);
    assert_eq!(c.status, CheckStatus::Fail);
    assert!(c.message.contains("never reached the peer (exit 2"), "{}", c.message);
    assert_eq!(check(&v, RSS_CHECK).status, CheckStatus::Skip);
}

#[test]
fn every_format_carries_the_traffic() {
    let v = Traffic::new().verdict();
    let human = render(&v, Format::Human).expect("human");
    assert!(
        human.contains("traffic: 16 TCP flows, 16 verified both ways in 1.25 s; ping: 3 packets transmitted"),
        "{human}"
    );
    assert!(human.contains("Per CPU during the traffic"), "{human}");
    assert!(
        human.contains("busy cores whose SMT siblings were both busy: 3 of 4 busy cores: core 0 (CPUs 0-1)"),
        "{human}"
    );
    assert!(human.contains("load outside the NIC's node (node 0): CPUs 4-7: 62 (57%) of 108 interrupts"), "{human}");
    let cpu3 = human.lines().find(|l| l.starts_with("3    1")).expect("CPU 3's row");
    assert_eq!(cpu3.split_whitespace().collect::<Vec<_>>(), ["3", "1", "0", "24", "35", "0"]);
    assert!(human.lines().last().is_some_and(|l| l.starts_with("verdict: PASS")), "{human}");
    let ktap = render(&v, Format::Ktap).expect("ktap");
    assert_eq!(parse_ktap(&ktap), vec![true]);
    for name in [FLOWS_CHECK, RSS_CHECK, INTERRUPTS_CHECK] {
        assert!(ktap.lines().any(|l| l.trim_start().starts_with("ok ") && l.ends_with(name)), "{name}: {ktap}");
    }
    assert!(ktap.contains("# Where the traffic landed"), "{ktap}");
    let junit = render(&v, Format::Junit).expect("junit");
    assert!(junit.contains(&format!("name=\"{RSS_CHECK}\"")), "{junit}");
    let json: serde_json::Value = serde_json::from_str(&render(&v, Format::Json).expect("json")).expect("parse");
    assert_eq!(json["traffic"]["flows"][0]["device_rq"], 30);
    assert_eq!(json["traffic"]["queues"][0]["rx_packets"], 12);
    assert_eq!(json["traffic"]["cpus"][3]["net_rx"], 35);
}

#[test]
fn a_failing_traffic_check_is_not_ok_in_ktap() {
    let mut t = Traffic::new();
    t.records[1].queue = Some(30);
    let ktap = render(&t.verdict(), Format::Ktap).expect("ktap");
    assert_eq!(parse_ktap(&ktap), vec![false]);
    assert!(ktap.lines().any(|l| l.trim_start().starts_with("not ok ") && l.ends_with(RSS_CHECK)), "{ktap}");
}

#[test]
fn the_schema_doc_names_every_traffic_field() {
    let value = serde_json::to_value(Traffic::new().verdict()).expect("json");
    let mut all = std::collections::BTreeSet::from(["traffic".to_owned()]);
    json_keys(&value["traffic"], &mut all);
    let doc = include_str!("format/report-schema.md");
    let undocumented: Vec<&String> = all.iter().filter(|k| !doc.contains(&format!("`{k}`"))).collect();
    assert!(undocumented.is_empty(), "fields missing from report-schema.md: {undocumented:?}");
    for name in [FLOWS_CHECK, RSS_CHECK, INTERRUPTS_CHECK] {
        assert!(doc.contains(&format!("`{name}`")), "check {name} missing from report-schema.md");
    }
}

#[test]
fn the_hwcs_interrupts_do_not_make_a_cpu_busy() {
    // `ethtool -S` asks the device over the HWC (mana_query_gf_stats()): its vector fires.
    let mut t = Traffic::new();
    let hwc = t.run.observed.vectors[0].irq;
    t.guest.before.irqs.insert(hwc, vec![0; 8]);
    t.guest.after.irqs.insert(hwc, vec![0, 0, 3, 0, 0, 0, 0, 0]);
    let v = t.verdict();
    let tr = v.traffic.as_ref().expect("traffic");
    assert_eq!(tr.cpus[2].interrupts, 0);
    assert!(!tr.summary.busy_cpus.contains(2), "{}", tr.summary.busy_cpus);
}

#[test]
fn a_flow_is_verified_both_ways_only_when_both_ends_verified_and_their_checksums_cross() {
    let t = Traffic::new();
    let (Some(h), Some(g)) = flow_results(&t.outcome, 3) else { panic!("flow 3 has both ends' results") };
    assert_eq!((h.id, g.id), (3, 3));
    assert!(verified_both_ways(h, g));
    let (mut h2, mut g2) = (h.clone(), g.clone());
    h2.received_sha256 = "something else".into();
    assert!(!verified_both_ways(&h2, g), "the guest's sent checksum is not what the peer received");
    g2.verified = false;
    assert!(!verified_both_ways(h, &g2), "an end that did not verify its bytes");
    let mut one_sided = t.outcome.clone();
    one_sided.guest.retain(|r| r.id != 3);
    assert!(matches!(flow_results(&one_sided, 3), (Some(_), None)));
}
