//! The Ethernet data path driven by the in-process model of Linux's `mana`
//! driver (tests/support, tests/support/net.rs): TX from SQ WQEs to the
//! packet backend, RX from the backend into posted RQ buffers, RSS as
//! MANA_CONFIG_VPORT_RX programs it, and the bad input a buggy or hostile
//! driver can post.
//!
//! Expected hashes come from Microsoft's RSS verification suite ("Verifying
//! the RSS Hash Calculation",
//! learn.microsoft.com/windows-hardware/drivers/network/verifying-the-rss-hash-calculation,
//! the key the model programs); CQE types from include/net/mana/mana.h
//! (`enum mana_cqe_type`); queue choice from the driver's default table
//! (`ethtool_rxfh_indir_default()`: entry i → queue i % n, 64 entries) and
//! the device's `hash % 64`.
// Tests fail by panicking; unwrap() on a driver step is the assertion.
#![allow(clippy::unwrap_used)]

mod support;

use device_model::datapath::backend::Loopback;
use device_model::datapath::rx::RxVerdict;
use device_model::defs::*;
use device_model::queues::WqKind;
use mana_device_api::config::DeviceConfig;
use manarig_model::random::Rng;
use support::frames::{self, checksums_ok, Flow, Proto};
use support::net::{RxFrame, Steer, TxOpts, MS_RSS_KEY};
use support::*;
use zerocopy::IntoBytes;

/// CQE_TX_OKAY, CQE_RX_OKAY, CQE_RX_TRUNCATED and the TX errors (mana.h).
const TX_OKAY: u8 = 32;
const RX_OKAY: u8 = 1;
const RX_TRUNCATED: u8 = 4;
const TX_MTU_DROP: u8 = 34;
const TX_INVALID_OOB: u8 = 35;
const TX_HDR_PROCESSING_ERROR: u8 = 37;
const TX_VPORT_IDX_OUT_OF_RANGE: u8 = 39;
/// NDIS_HASH_* bits (mana.h).
const HASH_TCP_IPV4: u16 = 1 << 1;
const HASH_UDP_IPV4: u16 = 1 << 2;
const HASH_TCP_IPV6: u16 = 1 << 4;

/// The five IPv4 rows of the verification suite: (source, source port,
/// destination, destination port, hash with TCP).
const SUITE_V4: [(&str, u16, &str, u16, u32); 5] = [
    ("66.9.149.187", 2794, "161.142.100.80", 1766, 0x51cc_c178),
    ("199.92.111.2", 14230, "65.69.140.83", 4739, 0xc626_b0ea),
    ("24.19.198.95", 12898, "12.22.207.184", 38024, 0x5c2b_394a),
    ("38.27.205.30", 48228, "209.142.163.6", 2217, 0xafc7_327f),
    ("153.39.163.191", 44251, "202.188.127.2", 1303, 0x10e8_28a2),
];
/// The three IPv6 rows of the suite, hash with TCP.
const SUITE_V6: [(&str, u16, &str, u16, u32); 3] = [
    ("3ffe:2501:200:1fff::7", 2794, "3ffe:2501:200:3::1", 1766, 0x4020_7d3d),
    ("3ffe:501:8::260:97ff:fe40:efab", 14230, "ff02::1", 4739, 0xdde5_1bbf),
    ("3ffe:1900:4545:3:200:f8ff:fe21:67cf", 44251, "fe80::200:f8ff:fe21:67cf", 38024, 0x02d1_feef),
];

fn mac() -> [u8; 6] {
    DeviceConfig::default().mac
}

/// Probed (6.12 order) and opened with 4 queue pairs.
fn opened() -> (Driver, Vec<DrvQueuePair>) {
    let mut drv = Driver::new(Kernel::V6_12, DeviceConfig::default());
    let eqs = drv.probe().unwrap();
    let pairs = drv.open(&eqs, 4).unwrap();
    (drv, pairs)
}

fn suite_flow(row: (&str, u16, &str, u16, u32)) -> Flow {
    Flow::tcp(row.0, row.1, row.2, row.3)
}

/// The RQ the default 64-entry table picks for `hash` over 4 queues.
fn default_queue(hash: u32) -> usize {
    (hash % 64) as usize % 4
}

fn traffic(drv: &Driver, kind: WqKind, id: u32) -> mana_device_api::traffic::Traffic {
    let snap = drv.dev.snapshot();
    let wq = snap.wqs.iter().find(|w| w.kind == kind && w.id == id).unwrap();
    wq.traffic.unwrap()
}

fn sent(drv: &Driver) -> Vec<Vec<u8>> {
    drv.net
        .as_ref()
        .unwrap()
        .sent()
        .into_iter()
        .map(|(vport, f)| {
            assert_eq!(vport, 0);
            f
        })
        .collect()
}

/// Receives `frame` and checks it went to the queue the default table
/// picks for `hash`, with that hash and `hash_type`.
fn expect_rss(drv: &mut Driver, pairs: &[DrvQueuePair], frame: &[u8], hash: u32, hash_type: u16) {
    let rq = pairs[default_queue(hash)].rq.id;
    let verdict = drv.dev.receive(0, frame);
    assert_eq!(verdict, RxVerdict::Delivered { rq, hash, hash_type }, "{frame:02x?}");
}

/// `mana_start_xmit()` without offloads, one SGE.
fn xmit_plain(drv: &mut Driver, pair: &DrvQueuePair, frame: &[u8]) {
    drv.xmit(pair, frame, &TxOpts::default()).unwrap();
}

fn last_rx(drv: &Driver) -> RxFrame {
    drv.data.rx_frames.last().cloned().unwrap()
}

#[test]
fn a_transmitted_frame_reaches_the_backend_byte_for_byte_with_a_tx_cqe_an_eqe_and_its_vector() {
    let (mut drv, pairs) = opened();
    let pair = &pairs[1];
    let frame = frames::frame([0x02, 0, 0, 0, 0, 9], &Flow::tcp("10.0.0.1", 40000, "10.0.0.2", 5201), &[0xAB; 100]);
    let before = drv.irqs.all().len();
    drv.xmit(pair, &frame, &TxOpts::default()).unwrap();
    // The doorbell did the work: frame out, CQE on the SQ's CQ, COMPLETION
    // EQE on the pair's EQ, its vector raised (docs/mana-protocol.md, arming).
    assert_eq!(sent(&drv), vec![frame.clone()]);
    assert_eq!(drv.irqs.all()[before..], [drv.vector_of(pair)]);
    let eqes_before = drv.seen.eqe_types[&pair.eq].len();
    drv.pump().unwrap();
    assert_eq!(drv.data.tx_cqe_types[&pair.sq.id], vec![TX_OKAY]);
    assert_eq!(drv.seen.eqe_types[&pair.eq][eqes_before..], [3], "one GDMA_EQE_COMPLETION");
    let t = traffic(&drv, WqKind::Sq, pair.sq.id);
    assert_eq!((t.packets, t.bytes, t.drops), (1, frame.len() as u64, 0));
    let snap = drv.dev.snapshot();
    assert_eq!(snap.counters.traffic.tx.packets, 1);
    assert!(snap.counters.guest_errors.is_empty(), "{:?}", snap.counters.guest_errors);
}

#[test]
fn frames_still_leave_after_the_sqs_byte_producer_wrapped_at_2_pow_32() {
    // mana_gd_wq_ring_doorbell() rings `head * GDMA_WQE_BU_SIZE` in u32, so
    // after 2^27 basic units (about 67 s at 1 Mpps of 2-BU WQEs) the tail
    // wraps to where a fresh SQ's starts: the device, which keeps bytes in
    // u32, is then where it was. Found as a panic of this driver model's
    // doorbell (docs/fuzzing.md, "Findings", campaign 13).
    let (mut drv, pairs) = opened();
    let pair = &pairs[0];
    drv.sqs.get_mut(&pair.sq.id).unwrap().head = 1 << 27;
    let flow = Flow::tcp("10.0.0.1", 40000, "10.0.0.2", 5201);
    let frames: Vec<Vec<u8>> = (0..3u8).map(|i| frames::frame(mac(), &flow, &[i; 100])).collect();
    for frame in &frames {
        xmit_plain(&mut drv, pair, frame);
        drv.pump().unwrap();
    }
    assert_eq!(sent(&drv), frames);
    assert_eq!(drv.data.tx_cqe_types[&pair.sq.id], vec![TX_OKAY; 3]);
    assert!(drv.dev.snapshot().counters.guest_errors.is_empty());
}

#[test]
fn a_frame_of_mtu_9000_leaves_whole_as_azure_s_mana_sends_jumbo_frames() {
    let (mut drv, pairs) = opened();
    let pair = &pairs[0];
    // 8960 bytes of TCP payload: 9000 after the Ethernet header, the largest the vPort sends.
    let frame = frames::frame(mac(), &Flow::tcp("10.0.0.1", 40000, "10.0.0.2", 5201), &[0x5A; 8960]);
    assert_eq!(frame.len(), device_model::datapath::MAX_FRAME);
    drv.xmit(pair, &frame, &TxOpts::default()).unwrap();
    drv.pump().unwrap();
    assert_eq!(drv.data.tx_cqe_types[&pair.sq.id], vec![TX_OKAY]);
    assert_eq!(sent(&drv), vec![frame]);
}

#[test]
fn a_frame_split_over_sges_that_wrap_the_ring_end_arrives_whole() {
    let (mut drv, pairs) = opened();
    let pair = &pairs[0];
    let flow = Flow::tcp("10.0.0.1", 1, "10.0.0.2", 2);
    // The SQ is 8 KiB = 256 basic units; 255 one-unit WQEs bring the
    // producer to the last unit, so the next WQE's header and OOB fill it
    // and its 4 SGEs wrap to the ring start (mana_gd_write_sgl()).
    for i in 0..255u8 {
        xmit_plain(&mut drv, pair, &frames::frame(mac(), &flow, &[i; 20]));
        drv.pump().unwrap();
    }
    let frame = frames::frame(mac(), &flow, &(0..=255u8).collect::<Vec<u8>>());
    let opts = TxOpts { sges: vec![14, 20, 100], ..TxOpts::default() };
    drv.xmit(pair, &frame, &opts).unwrap();
    drv.pump().unwrap();
    assert_eq!(sent(&drv).last(), Some(&frame));
    assert_eq!(drv.data.tx_cqe_types[&pair.sq.id].len(), 256);
    assert!(drv.data.tx_cqe_types[&pair.sq.id].iter().all(|&t| t == TX_OKAY));
}

#[test]
fn checksum_offload_fills_in_tcp_and_udp_checksums_over_ipv4_and_ipv6() {
    let (mut drv, pairs) = opened();
    let v4 = Flow::tcp("192.168.1.1", 33000, "192.168.1.2", 80);
    let v6 = Flow::tcp("fd00::1", 33000, "fd00::2", 80);
    for flow in [v4, v4.udp(), v6, v6.udp()] {
        let good = frames::frame(mac(), &flow, b"checksum me, please");
        let mut partial = good.clone();
        frames::spoil_l4_checksum(&mut partial, flow.proto);
        assert!(!checksums_ok(&partial));
        let opts =
            TxOpts { tcp_csum: flow.proto == Proto::Tcp, udp_csum: flow.proto == Proto::Udp, ..TxOpts::default() };
        drv.xmit(&pairs[2], &partial, &opts).unwrap();
        drv.pump().unwrap();
        assert_eq!(sent(&drv).last(), Some(&good), "{flow:?}");
    }
}

#[test]
fn tso_cuts_a_large_tcp_send_into_mss_sized_segments_with_their_own_headers() {
    let (mut drv, pairs) = opened();
    let payload: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
    let mut frame = frames::frame(mac(), &Flow::tcp("10.1.0.1", 45000, "10.1.0.2", 5201), &payload);
    // mana_start_xmit() for GSO: IPv4 tot_len and check zeroed, SGE 0 = headers.
    frame[16..18].fill(0);
    frame[24..26].fill(0);
    let opts = TxOpts { sges: vec![54, 4000], tcp_csum: true, ip_csum: true, mss: 1448, ..TxOpts::default() };
    drv.xmit(&pairs[0], &frame, &opts).unwrap();
    drv.pump().unwrap();
    let segs = sent(&drv);
    assert_eq!(segs.len(), 10_000usize.div_ceil(1448));
    let mut joined = Vec::new();
    for (i, seg) in segs.iter().enumerate() {
        assert!(checksums_ok(seg), "segment {i}");
        assert!(seg.len() <= 1514);
        assert_eq!(&seg[..16], &frame[..16], "MACs and IP version/tos");
        assert_eq!(u16::from_be_bytes([seg[18], seg[19]]), 7 + i as u16, "IP id counts up");
        assert_eq!(u32::from_be_bytes([seg[38], seg[39], seg[40], seg[41]]), 1000 + (i * 1448) as u32);
        joined.extend_from_slice(&seg[54..]);
    }
    assert_eq!(joined, payload);
    assert_eq!(drv.data.tx_cqe_types[&pairs[0].sq.id], vec![TX_OKAY], "one CQE per WQE");
    assert_eq!(traffic(&drv, WqKind::Sq, pairs[0].sq.id).packets, segs.len() as u64);
}

#[test]
fn a_long_oob_inserts_the_802_1q_tag_the_driver_asked_for() {
    let (mut drv, pairs) = opened();
    let frame = frames::frame(mac(), &Flow::tcp("10.0.0.1", 1, "10.0.0.2", 2), &[1; 30]);
    let tci = (5 << 13) | 0x123;
    drv.xmit(&pairs[3], &frame, &TxOpts { vlan: Some(tci), ..TxOpts::default() }).unwrap();
    drv.pump().unwrap();
    let mut tagged = frame[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00]);
    tagged.extend_from_slice(&tci.to_be_bytes());
    tagged.extend_from_slice(&frame[12..]);
    assert_eq!(sent(&drv), vec![tagged]);
}

#[test]
fn tx_wqes_the_driver_got_wrong_complete_with_the_error_the_driver_counts() {
    let (mut drv, pairs) = opened();
    let pair = pairs[0].clone();
    let frame = frames::frame(mac(), &Flow::tcp("10.0.0.1", 1, "10.0.0.2", 2), &[0; 40]);
    let udp = frames::frame(mac(), &Flow::tcp("10.0.0.1", 1, "10.0.0.2", 2).udp(), &[0; 40]);
    // 9000 bytes of TCP payload: 9040 bytes after the Ethernet header, above MTU 9000.
    let jumbo = frames::frame(mac(), &Flow::tcp("10.0.0.1", 1, "10.0.0.2", 2), &[0; 9000]);
    let cases: Vec<(&str, &[u8], TxOpts, u8)> = vec![
        ("foreign memory key", &frame, TxOpts { mem_key: Some(0xBAD), ..TxOpts::default() }, TX_HDR_PROCESSING_ERROR),
        (
            "address past guest RAM",
            &frame,
            TxOpts { addresses: Some(vec![RAM_SIZE as u64 - 16]), ..TxOpts::default() },
            TX_HDR_PROCESSING_ERROR,
        ),
        (
            "address far outside",
            &frame,
            TxOpts { addresses: Some(vec![u64::MAX - 8]), ..TxOpts::default() },
            TX_HDR_PROCESSING_ERROR,
        ),
        ("zero-length SGE", &frame, TxOpts { sges: vec![0], ..TxOpts::default() }, TX_HDR_PROCESSING_ERROR),
        ("runt", &frame[..10], TxOpts::default(), TX_HDR_PROCESSING_ERROR),
        ("TCP checksum on UDP", &udp, TxOpts { tcp_csum: true, ..TxOpts::default() }, TX_HDR_PROCESSING_ERROR),
        (
            "TSO on UDP",
            &udp,
            TxOpts { tcp_csum: true, mss: 100, sges: vec![42], ..TxOpts::default() },
            TX_HDR_PROCESSING_ERROR,
        ),
        ("above the MTU", &jumbo, TxOpts::default(), TX_MTU_DROP),
    ];
    for (what, f, opts, want) in &cases {
        drv.xmit(&pair, f, opts).unwrap();
        drv.pump().unwrap();
        assert_eq!(drv.data.tx_cqe_types[&pair.sq.id].last(), Some(want), "{what}");
    }
    // OOBs the device did not hand out (raw WQEs, one SGE each).
    let sge = Sge { address: Le64::new(0x10_0000), mem_key: Le32::new(drv.gpa_mkey), size: Le32::new(60) };
    let good = TxShortOob::new().with_vcq_num(pair.sq_cq.id).with_vsq_frame(((pair.sq.id >> 10) & 0x3FFF) as u16);
    let oob_cases: Vec<(&str, Vec<u8>, u8)> = vec![
        ("vcq_num of another CQ", good.with_vcq_num(pairs[1].sq_cq.id).as_bytes().to_vec(), TX_INVALID_OOB),
        ("pkt_fmt 2", good.with_pkt_fmt(2).as_bytes().to_vec(), TX_INVALID_OOB),
        ("long format, short OOB", good.with_pkt_fmt(MANA_LONG_PKT_FMT).as_bytes().to_vec(), TX_INVALID_OOB),
        ("16-byte OOB", [good.as_bytes(), &[0u8; 8][..]].concat(), TX_INVALID_OOB),
        ("vPort offset 5", good.with_short_vp_offset(5).as_bytes().to_vec(), TX_VPORT_IDX_OUT_OF_RANGE),
    ];
    for (what, oob, want) in &oob_cases {
        drv.post_sq_wqe(&pair, oob, &[sge], 0, 60).unwrap();
        drv.pump().unwrap();
        assert_eq!(drv.data.tx_cqe_types[&pair.sq.id].last(), Some(want), "{what}");
    }
    // No SGE at all: the WQE is a header and OOB; it completes too.
    drv.post_sq_wqe(&pair, good.as_bytes(), &[], 0, 0).unwrap();
    drv.pump().unwrap();
    assert_eq!(drv.data.tx_cqe_types[&pair.sq.id].last(), Some(&TX_INVALID_OOB), "no SGE");
    let n = (cases.len() + oob_cases.len() + 1) as u64;
    assert!(sent(&drv).is_empty(), "nothing reached the wire");
    let t = traffic(&drv, WqKind::Sq, pair.sq.id);
    assert_eq!((t.packets, t.drops, t.errors), (0, n, n));
    let snap = drv.dev.snapshot();
    assert_eq!(snap.counters.guest_errors["tx wqe"], n);
    // And the queue still works.
    drv.xmit(&pair, &frame, &TxOpts::default()).unwrap();
    drv.pump().unwrap();
    assert_eq!(sent(&drv), vec![frame]);
}

#[test]
fn an_sq_doorbell_serves_one_batch_and_the_rest_follows_the_drivers_later_doorbells() {
    let (mut drv, pairs) = opened();
    let pair = &pairs[0];
    let flow = Flow::tcp("10.0.0.1", 1, "10.0.0.2", 2);
    drv.data.defer_sq_doorbell = true;
    for i in 0..150u8 {
        xmit_plain(&mut drv, pair, &frames::frame(mac(), &flow, &[i; 10]));
    }
    drv.ring_sq(pair).unwrap();
    // One MMIO write served TX_BATCH (64) WQEs, no more (datapath::engine).
    assert_eq!(sent(&drv).len(), 64);
    assert!(drv.dev.has_pending_work());
    // The completions interrupt the driver; its CQ doorbells continue the SQ.
    drv.pump().unwrap();
    let out = sent(&drv);
    assert_eq!(out.len(), 150);
    for (i, f) in out.iter().enumerate() {
        assert_eq!(f[f.len() - 1], i as u8, "in order");
    }
    assert!(!drv.dev.has_pending_work());
    assert_eq!(drv.data.tx_cqe_types[&pair.sq.id].len(), 150);
}

#[test]
fn received_frames_land_in_the_rq_the_indirection_table_picks_with_the_published_hash() {
    let (mut drv, pairs) = opened();
    for row in SUITE_V4 {
        let frame = frames::frame(mac(), &suite_flow(row), &[7; 64]);
        let q = default_queue(row.4);
        let before = drv.irqs.all().len();
        let verdict = drv.dev.receive(0, &frame);
        assert_eq!(verdict, RxVerdict::Delivered { rq: pairs[q].rq.id, hash: row.4, hash_type: HASH_TCP_IPV4 });
        assert_eq!(drv.irqs.all()[before..], [drv.vector_of(&pairs[q])], "the RQ's EQ vector");
        drv.pump().unwrap();
        let got = last_rx(&drv);
        assert_eq!((got.rq, got.cqe_type, got.hash, got.hash_type), (pairs[q].rq.id, RX_OKAY, row.4, HASH_TCP_IPV4));
        assert_eq!(got.bytes, frame, "pkt_len and bytes");
        // The device verified the checksums (mana_rx_skb(): CHECKSUM_UNNECESSARY).
        assert!(got.flags.rx_iphdr_csum_succeed() && got.flags.rx_tcp_csum_succeed());
        assert!(!got.flags.rx_vlantag_present());
    }
    let total: u64 = pairs.iter().map(|p| traffic(&drv, WqKind::Rq, p.rq.id).packets).sum();
    assert_eq!(total, SUITE_V4.len() as u64);
    assert!(drv.dev.snapshot().counters.guest_errors.is_empty());
}

#[test]
fn ipv6_and_udp_flows_hash_their_4_tuple_and_non_ip_frames_go_to_the_default_rq() {
    let (mut drv, pairs) = opened();
    for row in SUITE_V6 {
        let frame = frames::frame(mac(), &suite_flow(row), &[1; 20]);
        expect_rss(&mut drv, &pairs, &frame, row.4, HASH_TCP_IPV6);
    }
    // A UDP 4-tuple hashes the same bytes as TCP's (NDIS input order), so
    // the suite's TCP column applies; the type says UDP.
    let row = SUITE_V4[1];
    let frame = frames::frame(mac(), &suite_flow(row).udp(), &[2; 20]);
    expect_rss(&mut drv, &pairs, &frame, row.4, HASH_UDP_IPV4);
    drv.pump().unwrap();
    assert!(last_rx(&drv).flags.rx_udp_csum_succeed());
    // ARP: no hash, the default RX object (RQ 0 at open).
    let verdict = drv.dev.receive(0, &frames::arp(mac()));
    assert_eq!(verdict, RxVerdict::Delivered { rq: pairs[0].rq.id, hash: 0, hash_type: 0 });
    drv.pump().unwrap();
    let got = last_rx(&drv);
    assert_eq!(got.bytes, frames::arp(mac()));
    assert!(!got.flags.rx_iphdr_csum_succeed(), "nothing verified on non-IP");
}

#[test]
fn reprogramming_rss_moves_a_flow_to_another_queue_at_once() {
    let (mut drv, pairs) = opened();
    let row = SUITE_V4[0];
    let frame = frames::frame(mac(), &suite_flow(row), &[3; 32]);
    let objs: Vec<u64> = pairs.iter().map(|p| p.rq_obj).collect();
    let rq_of = |drv: &mut Driver| match drv.dev.receive(0, &frame) {
        RxVerdict::Delivered { rq, .. } => rq,
        other => panic!("{other:?}"),
    };
    assert_eq!(rq_of(&mut drv), pairs[default_queue(row.4)].rq.id);
    // ethtool -X equal: every entry → queue 3 (the key is not resent).
    let mut steer = Steer::open(&objs);
    steer.key = None;
    steer.table = Some(vec![objs[3]; 64]);
    drv.steer(&steer).unwrap();
    assert_eq!(rq_of(&mut drv), pairs[3].rq.id);
    // A 4-entry table: hash % 4.
    steer.table = Some(vec![objs[1], objs[2], objs[3], objs[0]]);
    drv.steer(&steer).unwrap();
    assert_eq!(rq_of(&mut drv), pairs[[1, 2, 3, 0][(row.4 % 4) as usize]].rq.id);
    // A new key changes the hash; RSS off sends everything to the default RQ.
    let mut key = MS_RSS_KEY;
    key.reverse();
    drv.steer(&Steer { key: Some(key), table: None, ..steer.clone() }).unwrap();
    match drv.dev.receive(0, &frame) {
        RxVerdict::Delivered { hash, .. } => assert_ne!(hash, row.4),
        other => panic!("{other:?}"),
    }
    drv.steer(&Steer { rss: TriState::FALSE, default_rxobj: Some(objs[2]), key: None, table: None, ..steer }).unwrap();
    assert_eq!(rq_of(&mut drv), pairs[2].rq.id);
    drv.pump().unwrap();
    let snap = drv.dev.snapshot();
    assert_eq!(snap.steering.len(), 1);
    assert!(!snap.steering[0].rss_enabled && snap.steering[0].rx_enabled);
    assert_eq!(snap.steering[0].default_rq, Some(pairs[2].rq.id));
}

#[test]
fn steering_requests_naming_unknown_objects_are_refused_and_change_nothing() {
    let (mut drv, pairs) = opened();
    let objs: Vec<u64> = pairs.iter().map(|p| p.rq_obj).collect();
    let before = drv.dev.snapshot().steering;
    let cases = [
        ("an SQ in the table", Steer { table: Some(vec![pairs[0].sq_obj; 64]), ..Steer::open(&objs) }),
        ("an unknown handle", Steer { table: Some(vec![0xDEAD; 64]), ..Steer::open(&objs) }),
        ("an unknown default", Steer { default_rxobj: Some(0xDEAD), ..Steer::open(&objs) }),
        ("an empty table", Steer { table: Some(Vec::new()), ..Steer::open(&objs) }),
        ("rx_enable 7", Steer { rx: TriState(7), ..Steer::open(&objs) }),
    ];
    for (what, steer) in cases {
        let err = drv.steer(&steer).unwrap_err();
        assert!(format!("{err:#}").contains("status"), "{what}: {err:#}");
    }
    assert_eq!(drv.dev.snapshot().steering, before);
}

#[test]
fn frames_without_a_posted_buffer_are_dropped_and_counted() {
    let (mut drv, pairs) = opened();
    let row = SUITE_V4[2];
    let pair = &pairs[default_queue(row.4)];
    let frame = frames::frame(mac(), &suite_flow(row), &[9; 16]);
    // The driver's NAPI does not run (vector masked): no buffer is reposted.
    drv.masked.insert(drv.vector_of(pair));
    let verdicts: Vec<RxVerdict> = (0..520).map(|_| drv.dev.receive(0, &frame)).collect();
    let delivered = verdicts.iter().filter(|v| matches!(v, RxVerdict::Delivered { .. })).count();
    assert_eq!(delivered, 512, "the 512 buffers mana_alloc_rx_wqe() posted at open");
    assert!(verdicts[512..].iter().all(|v| *v == RxVerdict::NoBuffer { rq: pair.rq.id }));
    let t = traffic(&drv, WqKind::Rq, pair.rq.id);
    assert_eq!((t.packets, t.drops, t.errors), (512, 8, 0));
    let totals = drv.dev.snapshot().counters.traffic;
    assert_eq!((totals.rx_no_wqe, totals.rx_cqe_lost, totals.rx_unsteered), (8, 0, 0), "the reason is said");
    // Once the driver runs, it takes all 512 in order and reposts them.
    drv.unmask(drv.vector_of(pair)).unwrap();
    assert_eq!(drv.received_on(pair.rq.id).len(), 512);
    assert!(matches!(drv.dev.receive(0, &frame), RxVerdict::Delivered { .. }));
}

#[test]
fn query_gf_stat_reports_the_frames_dropped_for_want_of_a_wqe_and_the_bytes_moved() {
    // 7.3's probe and open; its mana_gf_stats_work_handler() asks every 2 s
    // and mana_get_stats64() shows rx_discards_nowqe as rx_missed_errors.
    let mut drv = Driver::new(Kernel::V7_3, DeviceConfig::default());
    let eqs = drv.probe().unwrap();
    let pairs = drv.open(&eqs, 4).unwrap();
    let quiet = drv.query_gf_stats().unwrap();
    assert_eq!((quiet.rx_discards_nowqe.get(), quiet.hc_rx_bytes.get(), quiet.hc_tx_bytes.get()), (0, 0, 0));
    let row = SUITE_V4[2];
    let pair = &pairs[default_queue(row.4)];
    let frame = frames::frame(mac(), &suite_flow(row), &[9; 16]);
    // The driver's NAPI does not run (vector masked): the 1024 buffers 7.3
    // posts at open (a 32 KiB RQ of 32-byte WQEs) are all the RQ has.
    drv.masked.insert(drv.vector_of(pair));
    let no_buffer = (0..1030).map(|_| drv.dev.receive(0, &frame)).filter(|v| matches!(v, RxVerdict::NoBuffer { .. }));
    assert_eq!(no_buffer.count(), 6);
    // A broadcast ARP request goes to the default RQ, which has buffers.
    let arp = frames::arp([0xff; 6]);
    assert!(matches!(drv.dev.receive(0, &arp), RxVerdict::Delivered { .. }));
    let other = &pairs[(default_queue(row.4) + 1) % 4];
    let peer = [0x00, 0x15, 0x5d, 0x33, 0x44, 0x55];
    let sent = frames::frame(peer, &suite_flow(SUITE_V4[0]), &[1; 100]);
    xmit_plain(&mut drv, other, &sent);
    let stats = drv.query_gf_stats().unwrap();
    let (len, arp_len, sent_len) = (frame.len() as u64, arp.len() as u64, sent.len() as u64);
    assert_eq!(stats.rx_discards_nowqe.get(), 6, "mana's rx_missed_errors");
    assert_eq!(stats.hc_rx_bytes.get(), 1024 * len + arp_len, "delivered frames only");
    assert_eq!((stats.hc_rx_ucast_pkts.get(), stats.hc_rx_ucast_bytes.get()), (1024, 1024 * len));
    assert_eq!((stats.hc_rx_bcast_pkts.get(), stats.hc_rx_bcast_bytes.get()), (1, arp_len));
    assert_eq!((stats.hc_rx_mcast_pkts.get(), stats.hc_tx_bcast_pkts.get()), (0, 0));
    assert_eq!((stats.hc_tx_bytes.get(), stats.hc_tx_ucast_pkts.get()), (sent_len, 1));
    assert_eq!(stats.rx_err_vport_disabled.get(), 0);
    let totals = drv.dev.snapshot().counters.traffic;
    assert_eq!((totals.rx_no_wqe, totals.rx.bytes, totals.tx.bytes), (6, 1024 * len + arp_len, sent_len));
    // After close the vPort's RX is off: a frame for it counts as such.
    drv.unmask(drv.vector_of(pair)).unwrap();
    drv.close(&pairs).unwrap();
    assert_eq!(drv.dev.receive(0, &frame), RxVerdict::Unsteered);
    let stats = drv.query_gf_stats().unwrap();
    assert_eq!((stats.rx_err_vport_disabled.get(), stats.rx_discards_nowqe.get()), (1, 6));
}

#[test]
fn frames_longer_than_the_buffer_complete_as_truncated_and_the_buffer_is_reposted() {
    let (mut drv, pairs) = opened();
    let row = SUITE_V4[3];
    let pair = &pairs[default_queue(row.4)];
    let big = frames::frame(mac(), &suite_flow(row), &[0; 1600]);
    assert_eq!(drv.dev.receive(0, &big), RxVerdict::Truncated { rq: pair.rq.id });
    drv.pump().unwrap();
    assert_eq!(last_rx(&drv).cqe_type, RX_TRUNCATED);
    let small = frames::frame(mac(), &suite_flow(row), &[0; 100]);
    assert!(matches!(drv.dev.receive(0, &small), RxVerdict::Delivered { .. }));
    drv.pump().unwrap();
    assert_eq!(last_rx(&drv).bytes, small);
    let t = traffic(&drv, WqKind::Rq, pair.rq.id);
    assert_eq!((t.packets, t.drops), (1, 1));
}

#[test]
fn rx_is_dropped_before_the_vport_is_configured_and_after_close() {
    let mut drv = Driver::new(Kernel::V6_12, DeviceConfig::default());
    let eqs = drv.probe().unwrap();
    let frame = frames::frame(mac(), &suite_flow(SUITE_V4[0]), &[0; 10]);
    assert_eq!(drv.dev.receive(0, &frame), RxVerdict::Unsteered, "never configured");
    let pairs = drv.open(&eqs, 4).unwrap();
    assert_eq!(drv.dev.receive(1, &frame), RxVerdict::Unsteered, "no vPort 1");
    assert_eq!(drv.dev.receive(0, &frame[..10]), RxVerdict::Unsteered, "runt");
    drv.close(&pairs).unwrap();
    assert_eq!(drv.dev.receive(0, &frame), RxVerdict::Unsteered, "closed");
    let totals = drv.dev.snapshot().counters.traffic;
    assert_eq!(totals.rx_unsteered, 4);
    // Never configured, no such vPort, closed: the driver had asked not to
    // receive; the runt came to a receiving port.
    assert_eq!(totals.rx_port_off, 3, "the port was off for all but the runt");
}

#[test]
fn completions_for_queues_whose_eq_is_gone_raise_no_vector() {
    let (mut drv, pairs) = opened();
    let row = SUITE_V4[0];
    let pair = &pairs[default_queue(row.4)];
    let vector = drv.vector_of(pair);
    drv.destroy_eq(pair.eq).unwrap();
    let raised = |drv: &Driver| drv.irqs.all().iter().filter(|&&v| v == vector).count();
    let before = raised(&drv);
    // The frame still goes into a buffer with a CQE on the RQ's CQ, and a
    // frame sent on the pair's SQ still leaves; the EQ they report to is
    // gone, so no EQE is written and its vector is never raised.
    let frame = frames::frame(mac(), &suite_flow(row), &[0; 20]);
    assert!(matches!(drv.dev.receive(0, &frame), RxVerdict::Delivered { .. }));
    drv.data.inflight.clear();
    drv.xmit(pair, &frame, &TxOpts::default()).unwrap();
    assert_eq!(sent(&drv), vec![frame]);
    assert_eq!(raised(&drv), before);
    let snap = drv.dev.snapshot();
    assert!(snap.eqs.iter().all(|e| e.id != pair.eq));
}

#[test]
fn a_loopback_backend_brings_transmitted_frames_back_through_rss() {
    let mut drv = Driver::with_backend(Kernel::V7_3, DeviceConfig::default(), Box::new(Loopback::new(64)));
    let eqs = drv.probe().unwrap();
    let pairs = drv.open(&eqs, 4).unwrap();
    for row in SUITE_V4 {
        let frame = frames::frame(mac(), &suite_flow(row), &[5; 50]);
        drv.xmit(&pairs[0], &frame, &TxOpts::default()).unwrap();
        drv.pump().unwrap();
        let got = last_rx(&drv);
        assert_eq!(got.bytes, frame);
        assert_eq!((got.rq, got.hash), (pairs[default_queue(row.4)].rq.id, row.4));
    }
    let snap = drv.dev.snapshot();
    assert_eq!(snap.counters.traffic.tx.packets, 5);
    assert_eq!(snap.counters.traffic.rx.packets, 5);
}

/// An RQ the test fills with hand-made WQEs, steered to as the default RQ
/// with RSS off; returns (RQ, its CQ id, its EQ vector).
fn raw_rq(drv: &mut Driver, pairs: &[DrvQueuePair], cq_size: u64) -> (DrvWorkQueue, u32, u16) {
    let eq = pairs[0].eq;
    let (rq, cq, obj) = drv.create_wq_obj(false, 16384, cq_size, eq).unwrap();
    let objs: Vec<u64> = pairs.iter().map(|p| p.rq_obj).collect();
    drv.steer(&Steer { rss: TriState::FALSE, default_rxobj: Some(obj), key: None, table: None, ..Steer::open(&objs) })
        .unwrap();
    (rq, cq.id, drv.vector_of(&pairs[0]))
}

#[test]
fn rx_wqes_with_unusable_buffers_complete_as_truncated() {
    let (mut drv, pairs) = opened();
    let (mut rq, _, _) = raw_rq(&mut drv, &pairs, 65536);
    let buf = drv.alloc(4);
    let key = drv.gpa_mkey;
    let sge = |address: u64, size: u32, mem_key: u32| Sge {
        address: Le64::new(address),
        mem_key: Le32::new(mem_key),
        size: Le32::new(size),
    };
    let cases: Vec<(&str, u8, Vec<Sge>)> = vec![
        ("foreign memory key", 2, vec![sge(buf, 2048, 0xBAD)]),
        ("outside guest RAM", 2, vec![sge(RAM_SIZE as u64 - 100, 2048, key)]),
        ("wrapping the address space", 2, vec![sge(u64::MAX - 10, 2048, key)]),
        ("zero length", 2, vec![sge(buf, 0, key)]),
        ("overlapping SGEs", 2, vec![sge(buf, 1000, key), sge(buf + 500, 1000, key)]),
        ("no inline OOB", 0, vec![sge(buf, 2048, key)]),
        ("no SGE", 2, vec![]),
        ("good, two SGEs", 2, vec![sge(buf, 60, key), sge(buf + 4096, 2000, key)]),
    ];
    let mut bufs = Vec::new();
    for (_, oob_div4, sges) in &cases {
        let offset = u64::from(rq.head) * 32;
        let header = WqeHeader::new().with_num_sge(sges.len() as u8).with_inline_oob_size_div4(*oob_div4);
        drv.write(rq.ring.addr(offset), header.as_bytes());
        let at = offset + 8 + u64::from(*oob_div4) * 4;
        for (i, s) in sges.iter().enumerate() {
            drv.write(rq.ring.addr(at + 16 * i as u64), s.as_bytes());
        }
        rq.head += (8 + u32::from(*oob_div4) * 4 + 16 * sges.len() as u32).div_ceil(32);
        bufs.push(buf);
    }
    drv.ring_wq(&rq, false);
    drv.rqs.insert(rq.id, rq.clone());
    drv.data.rx.insert(rq.id, support::net::RxBufs { bufs, tail: 0 });
    let frame = frames::frame(mac(), &suite_flow(SUITE_V4[0]), &[4; 100]);
    for (what, _, _) in &cases[..cases.len() - 1] {
        assert_eq!(drv.dev.receive(0, &frame), RxVerdict::Truncated { rq: rq.id }, "{what}");
    }
    assert!(matches!(drv.dev.receive(0, &frame), RxVerdict::Delivered { .. }));
    // The good WQE scattered the frame over its two SGEs.
    assert_eq!(drv.read(buf, 60), frame[..60]);
    assert_eq!(drv.read(buf + 4096, frame.len() - 60), frame[60..]);
    let t = traffic(&drv, WqKind::Rq, rq.id);
    assert_eq!((t.packets, t.drops, t.errors), (1, 7, 7));
    assert_eq!(drv.dev.snapshot().counters.guest_errors["rx wqe"], 7);
    assert_eq!(drv.dev.snapshot().counters.traffic.rx_no_wqe, 0, "a buffer was there, unusable");
}

#[test]
fn a_cq_the_driver_does_not_drain_holds_completions_back_and_never_overruns_it() {
    let (mut drv, pairs) = opened();
    // A 64-entry RX CQ under a 512-entry RQ, the driver's interrupts held back.
    let (mut rq, cq, vector) = raw_rq(&mut drv, &pairs, 4096);
    drv.post_rx_buffers(&mut rq, 512);
    drv.masked.insert(vector);
    let frame = frames::frame(mac(), &suite_flow(SUITE_V4[0]), &[6; 30]);
    for _ in 0..200 {
        assert!(matches!(drv.dev.receive(0, &frame), RxVerdict::Delivered { .. }));
    }
    // 64 written, 136 waiting for room: the owner-bit check of
    // mana_gd_read_cqe() in the model would fail on an overrun.
    let snap = drv.dev.snapshot();
    assert_eq!(snap.cqs.iter().find(|c| c.id == cq).unwrap().completions_posted, 64);
    drv.unmask(vector).unwrap();
    assert_eq!(drv.received_on(rq.id).len(), 200);
    assert!(drv.received_on(rq.id).iter().all(|f| f.bytes == frame));
}

/// A guest address to put in a random SGE: inside the `zone`, at the end
/// of guest RAM, past it, or anywhere.
fn random_address(rng: &mut Rng, zone: (u64, u64)) -> u64 {
    match rng.below64(5) {
        0 | 1 => zone.0 + rng.below64(zone.1 - zone.0),
        2 => RAM_SIZE as u64 - rng.below64(64),
        3 => RAM_SIZE as u64 + rng.below64(1 << 30),
        _ => rng.next_u64(),
    }
}

fn random_size(rng: &mut Rng) -> u32 {
    match rng.below64(6) {
        0 => 0,
        1..=3 => rng.below64(2048) as u32,
        4 => rng.below64(70_000) as u32,
        _ => rng.next_u64() as u32,
    }
}

#[test]
fn random_wqes_never_panic_or_write_guest_memory_outside_their_buffers_and_rings() {
    let (mut drv, pairs) = opened();
    let mut rng = Rng::new(0x5EED_DA7A_9A7B_0001);
    // Random TX and RX WQEs go to an SQ and an RQ of their own on EQ 0,
    // whose vector the model does not service (it would rightly reject
    // what the device answers to garbage).
    let eq = pairs[0].eq;
    let (mut rq, rq_cq, vector) = raw_rq(&mut drv, &pairs, 65536);
    drv.masked.insert(vector);
    let (mut sq, sq_cq, _) = drv.create_wq_obj(true, 8192, 16384, eq).unwrap();
    let zone_base = drv.alloc(64);
    let zone = (zone_base, zone_base + 64 * 4096);
    let writable: Vec<(u64, u64)> = [&drv.cqs[&sq_cq.id].ring, &drv.cqs[&rq_cq].ring, &drv.eqs[&eq].1.ring]
        .iter()
        .flat_map(|r| r.pages.iter().map(|&p| (p, p + 4096)))
        .chain([zone])
        .collect();
    let before = drv.read(0, RAM_SIZE);
    let frame = frames::frame(mac(), &suite_flow(SUITE_V4[0]), &[0x77; 200]);
    for round in 0..3000 {
        let (wq, is_sq) = if rng.below64(2) == 0 { (&mut sq, true) } else { (&mut rq, false) };
        let offset = u64::from(wq.head) * 32;
        // Half the time a plausible shape, to get past the header to the SGEs.
        let num_sge = if rng.below64(2) == 0 { 1 + rng.below64(3) } else { rng.below64(40) } as u8;
        let oob_div4 = if rng.below64(2) == 0 { 2 } else { rng.below64(8) } as u8;
        let header =
            WqeHeader::from_bits(Le64::new(rng.next_u64())).with_num_sge(num_sge).with_inline_oob_size_div4(oob_div4);
        let mut bytes = header.as_bytes().to_vec();
        if rng.below64(3) > 0 {
            // Often an OOB that passes validation, to reach the SGEs.
            let oob = TxShortOob::new()
                .with_vcq_num(if is_sq { sq_cq.id } else { rq_cq })
                .with_vsq_frame(((wq.id >> 10) & 0x3FFF) as u16)
                .with_comp_tcp_csum(rng.below64(2) == 0)
                .with_comp_udp_csum(rng.below64(4) == 0);
            bytes.extend_from_slice(oob.as_bytes());
        }
        bytes.resize(8 + usize::from(oob_div4) * 4, 0);
        for _ in 0..num_sge {
            let key = if rng.below64(4) > 0 { drv.gpa_mkey } else { rng.next_u64() as u32 };
            let sge = Sge {
                address: Le64::new(random_address(&mut rng, zone)),
                mem_key: Le32::new(key),
                size: Le32::new(random_size(&mut rng)),
            };
            bytes.extend_from_slice(sge.as_bytes());
        }
        for (i, b) in bytes.iter().enumerate() {
            drv.write(wq.ring.addr(offset + i as u64), &[*b]);
        }
        // The honest producer, or a doorbell the device must refuse (past
        // the ring, or not a whole basic unit), which leaves it in step.
        wq.head = wq.head.wrapping_add((bytes.len() as u32).div_ceil(32));
        let tail = match rng.below64(16) {
            0 => wq.head.wrapping_mul(32).wrapping_add(wq.ring.size as u32 + 32),
            1 => wq.head.wrapping_mul(32).wrapping_add(4),
            _ => wq.head.wrapping_mul(32),
        };
        let db = WqDoorbell::new().with_id(wq.id).with_tail_ptr(tail);
        drv.writeq(0x1000 + if is_sq { 0x000 } else { 0x400 }, db.into_bits());
        if !is_sq {
            // Take every posted RQ entry, so the ring never fills.
            loop {
                let len = rng.below64(frame.len() as u64) as usize;
                match drv.dev.receive(0, &frame[..len.max(14)]) {
                    RxVerdict::NoBuffer { .. } | RxVerdict::Unsteered => break,
                    _ => {}
                }
            }
            let _ = drv.dev.receive(0, &frame[..rng.below64(14) as usize]);
        }
        if round % 100 == 0 {
            // The driver's CQ doorbells, so completions keep flowing.
            for cq in [sq_cq.id, rq_cq] {
                let c = drv.cqs[&cq].clone();
                let posted = drv.dev.snapshot().cqs.iter().find(|s| s.id == cq).unwrap().completions_posted;
                let head = (c.entries + posted as u32) % (c.entries * 8);
                let db = CqDoorbell::new().with_id(cq).with_tail_ptr(head).with_arm(true);
                drv.writeq(0x1800, db.into_bits());
            }
        }
    }
    while drv.dev.poll() {}
    // Guest memory changed only in the completion rings, the buffer zone
    // and the last page (SGEs straddling the end of RAM); the SQ/RQ rings
    // were written by the test itself.
    let after = drv.read(0, RAM_SIZE);
    let own: Vec<(u64, u64)> = [&sq.ring, &rq.ring]
        .iter()
        .flat_map(|r| r.pages.iter().map(|&p| (p, p + 4096)))
        .chain([(RAM_SIZE as u64 - 4096, RAM_SIZE as u64)])
        .collect();
    for (page, (a, b)) in before.chunks(4096).zip(after.chunks(4096)).enumerate() {
        let addr = page as u64 * 4096;
        if a != b {
            let allowed = writable.iter().chain(&own).any(|&(s, e)| (s..e).contains(&addr));
            assert!(allowed, "guest page {addr:#x} changed outside rings and buffers");
        }
    }
    let snap = drv.dev.snapshot();
    // The seed reaches every stage: refused doorbells, bad WQEs on both
    // sides, and WQEs good enough to move frames.
    let t = snap.counters.traffic;
    assert!(t.tx.errors > 100 && t.rx.errors > 100, "{t:?}");
    assert!(t.tx.packets > 0 && t.rx.packets > 0, "{t:?}");
    assert!(snap.counters.guest_errors["doorbell"] > 100);
    assert!(snap.vectors_raised.keys().all(|&v| snap.eqs.iter().any(|e| e.msix_index == v)));
    // The other queues still work.
    drv.masked.clear();
    drv.drop_interrupts();
    let ok = frames::frame(mac(), &Flow::tcp("10.0.0.1", 1, "10.0.0.2", 2), &[1; 10]);
    drv.xmit(&pairs[1], &ok, &TxOpts::default()).unwrap();
    assert_eq!(sent(&drv).last(), Some(&ok));
}

/// `--inject rx-cqe-corrupt@2` (device_model::inject): the 2nd RX completion
/// carries a CQE type no `enum mana_cqe_type` value has (mana.h), the first
/// stays CQE_RX_OKAY.
#[test]
fn an_injected_corrupt_rx_cqe_carries_an_unknown_type_and_the_one_before_is_normal() {
    let (mut drv, _pairs) = opened();
    drv.dev.inject(&["rx-cqe-corrupt@2".parse().unwrap()]);
    let frame = frames::frame(mac(), &Flow::tcp("10.0.0.1", 40000, "10.0.0.2", 5201), &[1; 64]);
    for _ in 0..3 {
        drv.dev.receive(0, &frame);
    }
    // The test driver stops at the type it does not know (so does
    // mana_process_rx_cqe(), which logs it and drops the frame).
    let _ = drv.pump();
    let types: Vec<u8> =
        drv.seen.rx_cqe_types.values().flatten().copied().filter(|&t| t != ManaCqeType::RX_OBJECT_FENCE.0).collect();
    let corrupt = device_model::inject::CORRUPT_RX_CQE_TYPE;
    assert_eq!(types[..2], [ManaCqeType::RX_OKAY.0, corrupt]);
    assert_eq!(drv.dev.snapshot().counters.injected.get("spoiled entries"), Some(&1));
}
