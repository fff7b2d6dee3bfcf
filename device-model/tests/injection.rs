//! `--inject` faults (device_model::inject) against the in-process model of
//! Linux's `mana` driver (tests/support): each fault reaches the driver the
//! way the spec says, and nothing else changes.
// Tests fail by panicking; unwrap() on a driver step is the assertion.
#![allow(clippy::unwrap_used)]

mod support;

use device_model::defs::{
    Command, Le32, QueryHwcTimeoutReq, QueryHwcTimeoutResp, QueryMaxResourcesResp, VerifyVerResp,
};
use mana_device_api::config::DeviceConfig;
use mana_device_api::inject::InjectSpec;
use std::time::{Duration, Instant};
use support::*;

fn driver_with(specs: &[&str]) -> Driver {
    let mut drv = Driver::new(Kernel::V6_12, DeviceConfig::default());
    let specs: Vec<InjectSpec> = specs.iter().map(|s| s.parse().unwrap()).collect();
    drv.dev.inject(&specs);
    drv
}

#[test]
fn an_injected_status_fails_exactly_the_named_command_and_is_counted() {
    // mana_gd_create_dma_region() sees the status and the probe fails there.
    let mut drv = driver_with(&["status:create_dma_region=0xc000009a"]);
    let err = drv.probe().expect_err("CREATE_DMA_REGION fails");
    assert!(format!("{err:#}").contains("status 0xc000009a"), "{err:#}");
    let snapshot = drv.dev.snapshot();
    assert_eq!(snapshot.counters.injected.get("status:create_dma_region=0xc000009a"), Some(&1));
    assert_eq!(snapshot.dma_regions, 0, "the refused command created nothing");
    assert_eq!(snapshot.counters.command_errors.get("CREATE_DMA_REGION"), Some(&1));
}

#[test]
fn a_status_for_the_second_occurrence_lets_the_first_through() {
    let mut drv = driver_with(&["status:create_queue=0x1@2"]);
    let err = drv.probe().expect_err("the second CREATE_QUEUE fails");
    assert!(format!("{err:#}").contains("status 0x1"), "{err:#}");
    assert_eq!(drv.dev.snapshot().counters.commands.get("CREATE_QUEUE"), Some(&2));
}

#[test]
fn a_delayed_response_arrives_only_when_its_time_has_come() {
    let mut drv = driver_with(&["hwc-delay:query_max_resources=60000"]);
    drv.establish_hwc().unwrap();
    drv.test_channel().unwrap();
    // mana_gd_verify_vf_version(): the capability, then the query, which
    // the device answers with its short timeout.
    let ver: VerifyVerResp = drv.general(Command::VERIFY_VF_DRIVER_VERSION, hwc_dev()).unwrap();
    assert_eq!(ver.pf_cap_flags1.get() & (1 << 3), 1 << 3, "HWC_TIMEOUT_RECONFIG offered");
    let mut req = QueryHwcTimeoutReq::default();
    let (req_size, resp_size) = (size_of::<QueryHwcTimeoutReq>(), size_of::<QueryHwcTimeoutResp>());
    req.hdr = req_hdr(Command::QUERY_HWC_TIMEOUT, req_size, resp_size, hwc_dev());
    req.timeout_ms = Le32::new(30_000);
    let resp: QueryHwcTimeoutResp = drv.send(&req).unwrap();
    assert_eq!(resp.timeout_ms.get(), mana_device_api::inject::INJECT_HWC_TIMEOUT_MS);
    let err =
        drv.general::<QueryMaxResourcesResp>(Command::QUERY_MAX_RESOURCES, hwc_dev()).expect_err("no response yet");
    assert!(format!("{err:#}").contains("no response"), "{err:#}");
    assert_eq!(drv.dev.tick(Instant::now()), 1, "still held");
    let responses = drv.seen.responses.len();
    assert_eq!(drv.dev.tick(Instant::now() + Duration::from_secs(61)), 0);
    drv.pump().unwrap();
    assert_eq!(drv.seen.responses.len(), responses + 1, "the late response came");
}

#[test]
fn spurious_interrupts_hit_only_an_existing_eq_and_the_probe_survives_them() {
    let mut plain = Driver::new(Kernel::V6_12, DeviceConfig::default());
    plain.probe().unwrap();
    let mut drv = driver_with(&["spurious-irq:eq=0"]);
    drv.probe().unwrap();
    let count = |d: &Driver, v: u16| d.irqs.all().iter().filter(|&&x| x == v).count();
    assert!(count(&drv, 0) > count(&plain, 0), "HWC vector raised more often with spurious interrupts");
    // An EQ id that never exists: no vector is ever raised for it.
    let mut ghost = driver_with(&["spurious-irq:eq=4000", "spurious-irq:vector=60"]);
    ghost.probe().unwrap();
    assert_eq!(ghost.irqs.all(), plain.irqs.all(), "no vector for an EQ that does not exist");
}

#[test]
fn a_silent_vector_is_never_raised_while_its_events_are_still_posted() {
    let mut drv = driver_with(&["silent-vector:0"]);
    let err = drv.establish_hwc().expect_err("the HWC vector never fires");
    assert!(format!("{err:#}").contains("no INIT_DONE"), "{err:#}");
    assert!(drv.irqs.all().is_empty());
    let snapshot = drv.dev.snapshot();
    assert!(snapshot.eqs.iter().any(|eq| eq.events_posted > 0));
    assert!(snapshot.counters.injected.get("silenced vectors").is_some_and(|&n| n >= 1));
}

#[test]
fn a_spoiled_owner_bit_stops_the_driver_at_that_entry() {
    // The third EQE of the HWC init sequence carries bad owner bits: the
    // driver (mana_gd_process_eq_events()) stops there, so INIT_DONE is never seen.
    let mut drv = driver_with(&["owner-bits:eqe@3"]);
    assert!(drv.establish_hwc().is_err());
    assert_eq!(drv.dev.snapshot().counters.injected.get("spoiled entries"), Some(&1));
}

#[test]
fn timed_events_wait_for_the_vport_open_then_come_on_the_hwc_eq_and_a_reset_forgets_everything() {
    let mut drv = driver_with(&["link-down@0", "link-up@0", "reset@0"]);
    let eqs = drv.probe().unwrap();
    drv.dev.tick(Instant::now() + Duration::from_secs(3600));
    drv.pump().unwrap();
    let hwc_eq = drv.hwc_eq_id.unwrap();
    let types = |d: &Driver| d.seen.eqe_types.get(&hwc_eq).cloned().unwrap_or_default();
    assert!(!types(&drv).iter().any(|&t| t == 133 || t == 135), "nothing before the first MANA_CONFIG_VPORT_RX");
    let _pairs = drv.open(&eqs, 2).unwrap();
    assert!(!drv.dev.snapshot().wqs.is_empty());
    drv.dev.tick(Instant::now());
    drv.pump().unwrap();
    // GDMA_EQE_HWC_SOC_RECONFIG_DATA twice (down, up), then GDMA_EQE_HWC_RESET_REQUEST.
    let seen = types(&drv);
    assert_eq!(seen[seen.len() - 3..], [133, 133, 135], "{seen:?}");
    let snapshot = drv.dev.snapshot();
    assert!(snapshot.hwc.is_none() && snapshot.eqs.is_empty() && snapshot.wqs.is_empty(), "{snapshot:#?}");
    assert_eq!(snapshot.dma_regions, 0);
    for spec in ["link-down@0", "link-up@0", "reset@0"] {
        assert_eq!(snapshot.counters.injected.get(spec), Some(&1), "{spec}");
    }
    // Each comes once.
    drv.dev.tick(Instant::now() + Duration::from_secs(3600));
    assert_eq!(drv.dev.snapshot().counters.injected.get("reset@0"), Some(&1));
}
