//! What a guest driver cannot make the device grow, however long it tries:
//! command codes it invents, responses an `hwc-delay` injection holds, the
//! frames one doorbell sends. Driven by the in-process model of Linux's
//! `mana` driver (tests/support); the device's size is read from
//! `ManaDevice::footprint` (every collection the guest can fill) and from the
//! process's resident memory.
// Tests fail by panicking; unwrap() on a driver step is the assertion.
#![allow(clippy::unwrap_used)]

mod support;

use device_model::datapath::engine::{TX_BATCH, TX_FRAME_BATCH};
use device_model::datapath::tso::MAX_SEGMENTS;
use device_model::defs::*;
use device_model::inject::MAX_HELD_RESPONSES;
use mana_device_api::config::DeviceConfig;
use mana_device_api::inject::InjectSpec;
use support::frames::{self, Flow};
use support::net::TxOpts;
use support::*;
use zerocopy::IntoBytes;

/// Resident memory of this process in bytes (`/proc/self/statm`, field 2,
/// in pages of 4 KiB on x86-64). nextest runs every test in a process of
/// its own, so this is the device's and the driver model's alone.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn injected(specs: &[&str]) -> Driver {
    let mut drv = Driver::new(Kernel::V6_12, DeviceConfig::default());
    let specs: Vec<InjectSpec> = specs.iter().map(|s| s.parse().unwrap()).collect();
    drv.dev.inject(&specs);
    drv
}

/// Sends one header-only request of code `code` and checks it is refused.
fn send_code(drv: &mut Driver, code: u32) {
    let hdr = req_hdr(Command(code), 40, 32, DevId::default());
    let resp = drv.send_raw(hdr.as_bytes(), 32).unwrap();
    assert_ne!(status(&resp), 0, "{code:#x} is no command");
}

#[test]
fn a_hundred_thousand_distinct_command_codes_leave_the_device_the_size_it_was() {
    // Counting every code a guest sends grew 29 bytes per code (113 MB for
    // 4 M codes), with or without --inject; only the codes an injection
    // names are counted now. An injection is on, so the counting path runs.
    let mut drv = injected(&["status:create_queue=0x5@1000", "hwc-delay:query_gf_stat=10@7"]);
    drv.probe().unwrap();
    let codes = (0..100_000u32).map(|i| 0x0010_0000 + i);
    let mut codes = codes.peekable();
    let send = |drv: &mut Driver, code: u32| {
        send_code(drv, code);
        if code % 1000 == 0 {
            drv.forget_history();
        }
    };
    for code in codes.by_ref().take(10_000) {
        send(&mut drv, code);
    }
    let (footprint, resident) = (drv.dev.footprint(), resident_bytes());
    for code in codes {
        send(&mut drv, code);
    }
    assert_eq!(drv.dev.footprint(), footprint, "no collection grew over 90,000 more codes");
    assert_eq!(footprint.len("inject.commands_counted"), 2, "create_queue and query_gf_stat only");
    assert!(footprint.over_bounds().is_empty(), "{:?}", footprint.over_bounds());
    let grown = resident_bytes().saturating_sub(resident);
    // Before: 90,000 × 29 bytes = 2.6 MB for those codes alone.
    assert!(grown < 512 << 10, "resident memory grew {grown} bytes over 90,000 codes");
    let counters = drv.dev.snapshot().counters;
    assert_eq!(counters.commands["unknown"], 100_000);
}

#[test]
fn hwc_delay_without_an_occurrence_holds_one_ring_of_responses_and_answers_the_rest_at_once() {
    let mut drv = injected(&["hwc-delay:query_max_resources=60000"]);
    drv.establish_hwc().unwrap();
    drv.test_channel().unwrap();
    let query = |drv: &mut Driver| drv.general::<QueryMaxResourcesResp>(Command::QUERY_MAX_RESOURCES, hwc_dev());
    for _ in 0..MAX_HELD_RESPONSES {
        let err = query(&mut drv).expect_err("held");
        assert!(format!("{err:#}").contains("no response"), "{err:#}");
    }
    // The ring's worth is held; every later response comes at once.
    for _ in 0..1000 {
        query(&mut drv).unwrap();
    }
    let footprint = drv.dev.footprint();
    assert_eq!(footprint.len("inject.held_responses"), MAX_HELD_RESPONSES);
    assert!(footprint.over_bounds().is_empty(), "{:?}", footprint.over_bounds());
    let snapshot = drv.dev.snapshot();
    assert_eq!(snapshot.counters.guest_errors["hwc-delay: held responses full"], 1000);
    assert_eq!(snapshot.counters.injected["hwc-delay:query_max_resources=60000"], 1000 + MAX_HELD_RESPONSES as u64);
}

#[test]
fn one_doorbell_of_64_tso_wqes_at_mss_64_sends_one_frame_batch_and_the_rest_follows() {
    // 64 WQEs × 1,016 segments = 65,024 frames in one MMIO write before;
    // now no WQE starts once TX_FRAME_BATCH frames went out.
    let mut drv = Driver::new(Kernel::V6_12, DeviceConfig::default());
    let eqs = drv.probe().unwrap();
    let pairs = drv.open(&eqs, 1).unwrap();
    let pair = &pairs[0];
    let payload = vec![0x5A; 1016 * 64];
    let mut frame = frames::frame(DeviceConfig::default().mac, &Flow::tcp("10.1.0.1", 1, "10.1.0.2", 2), &payload);
    // mana_start_xmit() for GSO: IPv4 tot_len and check zeroed, SGE 0 = headers.
    frame[16..18].fill(0);
    frame[24..26].fill(0);
    let opts = TxOpts { sges: vec![54], tcp_csum: true, ip_csum: true, mss: 64, ..TxOpts::default() };
    drv.data.defer_sq_doorbell = true;
    for _ in 0..TX_BATCH {
        drv.xmit(pair, &frame, &opts).unwrap();
    }
    drv.ring_sq(pair).unwrap();
    let sent = |drv: &Driver| drv.net.as_ref().unwrap().sent().len();
    let first = sent(&drv);
    assert!(first >= TX_FRAME_BATCH as usize, "a whole batch: {first}");
    assert!(first < TX_FRAME_BATCH as usize + MAX_SEGMENTS, "one doorbell sent {first} frames");
    assert_eq!(first % 1016, 0, "whole WQEs only");
    assert!(drv.dev.has_pending_work());
    // The completions interrupt the driver; its CQ doorbells continue the SQ.
    drv.pump().unwrap();
    assert_eq!(sent(&drv), 65_024);
    assert_eq!(drv.data.tx_cqe_types[&pair.sq.id].len(), 64, "one CQE per WQE");
    assert!(!drv.dev.has_pending_work());
}

#[test]
fn every_collection_of_a_working_device_is_within_the_bound_it_states() {
    for (kernel, queues) in [(Kernel::V6_1, 4), (Kernel::V6_12, 4), (Kernel::V7_3, 8)] {
        let config = DeviceConfig { max_queues: 8, num_vports: 2, ..DeviceConfig::default() };
        let mut drv = Driver::new(kernel, config);
        let eqs = drv.probe().unwrap();
        // 6.x opens on the probe's EQs (4 here); 7.3 makes one per queue.
        let queues = if kernel == Kernel::V7_3 { queues } else { queues.min(eqs.len()) };
        let pairs = drv.open(&eqs, queues).unwrap();
        drv.dev.record_flows(16);
        for (i, pair) in pairs.iter().enumerate() {
            let flow = Flow::tcp("10.0.0.1", 1000 + i as u16, "10.0.0.2", 80);
            let frame = frames::frame(DeviceConfig::default().mac, &flow, &[1; 100]);
            drv.xmit(pair, &frame, &TxOpts::default()).unwrap();
        }
        drv.pump().unwrap();
        let footprint = drv.dev.footprint();
        assert!(footprint.over_bounds().is_empty(), "{kernel:?}: {:?}", footprint.over_bounds());
        assert_eq!(footprint.len("queues.sqs"), pairs.len() + 1, "{kernel:?}: the HWC SQ and the Ethernet ones");
        assert_eq!(footprint.len("flows"), pairs.len());
    }
}
