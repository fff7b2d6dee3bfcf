//! What a hostile or broken guest driver cannot do to the device: grow its
//! memory without bound, create more than the device advertises, or make a
//! stale CQ notify an EQ that reuses an old id. Driven by the in-process
//! model of Linux's `mana` driver (tests/support), as linux_driver.rs.
// Tests fail by panicking; unwrap() on a driver step is the assertion.
#![allow(clippy::unwrap_used)]

mod support;

use device_model::defs::*;
use device_model::device::budget::{MAX_REGIONS, MAX_REGION_PAGES};
use mana_device_api::config::DeviceConfig;
use mana_device_api::snapshot::UNKNOWN_COMMAND;
use support::*;
use zerocopy::{FromZeros, IntoBytes};

fn probed(kernel: Kernel, config: DeviceConfig) -> (Driver, Vec<u32>) {
    let mut drv = Driver::new(kernel, config);
    let eqs = drv.probe().expect("probe");
    (drv, eqs)
}

fn small(max_queues: u32) -> DeviceConfig {
    DeviceConfig { max_queues, ..DeviceConfig::default() }
}

#[test]
fn unknown_command_codes_count_under_one_key_however_many_there_are() {
    let (mut drv, _) = probed(Kernel::V6_12, DeviceConfig::default());
    let before = drv.dev.snapshot().counters.commands.len();
    let codes: Vec<(u32, DevId)> = (0..300u32)
        .map(|i| (0x9000 + i, DevId::default()))
        .chain((0..300u32).map(|i| (0x2_F000 + i, mana_dev())))
        .chain((0..300u32).map(|i| (0x7_0000 + i, mana_dev())))
        .collect();
    for &(code, dev) in &codes {
        let hdr = req_hdr(Command(code), 40, 32, dev);
        let resp = drv.send_raw(hdr.as_bytes(), 32).unwrap();
        assert_ne!(status(&resp), 0, "{code:#x}");
    }
    let counters = drv.dev.snapshot().counters;
    assert_eq!(counters.commands[UNKNOWN_COMMAND], codes.len() as u64);
    assert_eq!(counters.command_errors[UNKNOWN_COMMAND], codes.len() as u64);
    assert!(
        counters.commands.len() <= before + 1,
        "one key for every unknown code: {:?}",
        counters.commands.keys().collect::<Vec<_>>()
    );
}

#[test]
fn eqs_beyond_the_advertised_max_eq_are_refused_with_insufficient_resources() {
    // 6.12 probe: min(max_eq, max_msix - 1, 4) = 4 EQs, the budget.
    let (mut drv, eqs) = probed(Kernel::V6_12, small(4));
    assert_eq!(eqs.len(), 4);
    let max: QueryMaxResourcesResp = drv.general(Command::QUERY_MAX_RESOURCES, DevId::default()).unwrap();
    assert_eq!(max.max_eq.get(), 4, "what is advertised");
    expect_err(drv.create_eq(9, 4096, mana_dev()), "status 0xc000009a").unwrap();
    assert_eq!(drv.dev.snapshot().eqs.len(), 1 + 4, "HWC EQ + the budget");
    // Disabling one makes room again.
    drv.destroy_eq(eqs[3]).unwrap();
    drv.create_eq(9, 4096, mana_dev()).unwrap();
}

#[test]
fn wq_objects_beyond_the_advertised_queues_per_vport_are_refused() {
    let (mut drv, eqs) = probed(Kernel::V6_12, small(2));
    let vport = drv.query_vport(0).unwrap();
    assert_eq!(vport.max_num_sq.get(), 2, "what is advertised");
    drv.open(&eqs, 2).unwrap();
    for is_sq in [true, false] {
        let refused = drv.create_wq_obj(is_sq, 8192, 16384, eqs[0]);
        expect_err(refused, "status 0xc000009a").unwrap();
    }
    let snap = drv.dev.snapshot();
    assert_eq!(snap.wq_objs.len(), 4, "two SQs and two RQs");
    assert_eq!(snap.cqs.len(), 1 + 4, "the HWC CQ and one CQ per work queue");
}

#[test]
fn a_dma_region_that_lists_a_page_twice_or_too_many_pages_is_refused() {
    let (mut drv, _) = probed(Kernel::V6_12, DeviceConfig::default());
    let page = drv.alloc(1);
    let twice = dma_region_request(&[page, page], mana_dev());
    let resp = drv.send_raw(&twice, 40).unwrap();
    assert_eq!(status(&resp), STATUS_INVALID_PARAMETER, "same page twice");
    // Declares more pages than a region may have (listing only one).
    let mut huge = dma_region_request(&[page], mana_dev());
    let pages = MAX_REGION_PAGES + 1;
    huge[40..48].copy_from_slice(&(u64::from(pages) * 4096).to_le_bytes());
    huge[56..60].copy_from_slice(&pages.to_le_bytes());
    let resp = drv.send_raw(&huge, 40).unwrap();
    assert_ne!(status(&resp), 0, "{pages} pages");
    assert_eq!(drv.dev.snapshot().dma_regions, 0);
}

#[test]
fn dma_regions_beyond_the_page_budget_are_refused_with_insufficient_resources() {
    let (mut drv, _) = probed(Kernel::V6_12, DeviceConfig::default());
    let page = drv.alloc(1);
    // Regions that declare the most pages a region may have, one listed
    // (GDMA_DMA_REGION_ADD_PAGES would bring the rest).
    let mut req = dma_region_request(&[page], mana_dev());
    req[40..48].copy_from_slice(&(u64::from(MAX_REGION_PAGES) * 4096).to_le_bytes());
    req[56..60].copy_from_slice(&MAX_REGION_PAGES.to_le_bytes());
    let mut created = 0;
    let mut handles = Vec::new();
    let refusal = loop {
        let resp = drv.send_raw(&req, 40).unwrap();
        if status(&resp) != 0 {
            break status(&resp);
        }
        handles.push(resp_as::<CreateDmaRegionResp>(&resp).dma_region_handle.get());
        created += 1;
        assert!(created <= MAX_REGIONS, "more regions than the budget");
    };
    assert_eq!(refusal, STATUS_INSUFFICIENT_RESOURCES);
    assert_eq!(drv.dev.snapshot().dma_regions, created);
    // The channel still works: a small region fits once one is destroyed.
    let mut destroy = DestroyDmaRegionReq::new_zeroed();
    destroy.hdr = req_hdr(Command::DESTROY_DMA_REGION, 48, 32, mana_dev());
    destroy.dma_region_handle = Le64::new(handles[0]);
    let _: GdmaRespHdr = drv.send(&destroy).unwrap();
    drv.create_dma_region(&[page], mana_dev()).unwrap();
}

#[test]
fn a_cq_of_a_disabled_eq_does_not_notify_a_new_eq_that_reuses_its_id() {
    let (mut drv, eqs) = probed(Kernel::V6_12, DeviceConfig::default());
    let pairs = drv.open(&eqs, 4).unwrap();
    let pair = &pairs[0];
    drv.destroy_eq(pair.eq).unwrap();
    // The lowest free id is the old one: a new EQ on another vector takes it.
    let reused = drv.create_eq(9, 4096, mana_dev()).unwrap();
    assert_eq!(reused, pair.eq, "the id is reused");
    let events = |drv: &Driver| drv.dev.snapshot().eqs.iter().find(|eq| eq.id == reused).map(|eq| eq.events_posted);
    let before = events(&drv);
    let raised_before = drv.dev.snapshot().vectors_raised.get(&9).copied();
    // FENCE on the RQ whose CQ pointed at the old EQ: the CQE is written,
    // but the new EQ gets no COMPLETION event and its vector stays quiet.
    let mut req = FenceRqReq::new_zeroed();
    req.hdr = req_hdr(Command::MANA_FENCE_RQ, 48, 32, mana_dev());
    req.wq_obj_handle = Le64::new(pair.rq_obj);
    let _: GdmaRespHdr = drv.bnic(req.as_bytes().to_vec()).unwrap();
    assert_eq!(events(&drv), before);
    assert_eq!(drv.dev.snapshot().vectors_raised.get(&9).copied(), raised_before);
    let cq = drv.dev.snapshot().cqs.into_iter().find(|cq| cq.id == pair.rq_cq.id);
    assert_eq!(cq.map(|cq| cq.parent_eq), Some(device_model::device::gdma::DETACHED_EQ));
}
