//! A checkpoint of the driver model and its device (tests/support/checkpoint.rs,
//! `ManaDevice::save` / `restore`) gives back exactly what it took: the fuzz
//! targets start every input from one and rely on it (docs/fuzzing.md).
// Tests fail by panicking; unwrap() on a driver step is the assertion.
#![allow(clippy::unwrap_used)]

mod support;

use mana_device_api::config::DeviceConfig;
use support::checkpoint::DmaView;
use support::frames::{self, Flow};
use support::net::TxOpts;
use support::*;

/// Traffic both ways, a queue closed, DMA remapped under the live queues and
/// back, and an HWC request: most of what a fuzz input can touch.
fn session(drv: &mut Driver, pairs: &[DrvQueuePair]) {
    let mac = DeviceConfig::default().mac;
    for (i, pair) in pairs.iter().enumerate() {
        let frame = frames::frame(mac, &Flow::tcp("10.0.0.1", 1000 + i as u16, "10.0.0.2", 80), &[i as u8; 300]);
        drv.xmit(pair, &frame, &TxOpts { tcp_csum: true, ..TxOpts::default() }).unwrap();
        let _ = drv.dev.receive(0, &frame);
    }
    drv.pump().unwrap();
    drv.remap_dma(DmaView::Unmapped);
    let frame = frames::frame(mac, &Flow::tcp("10.0.0.3", 7, "10.0.0.2", 80), &[9; 64]);
    let _ = drv.dev.receive(0, &frame);
    drv.remap_dma(DmaView::Ram);
    drv.pump().unwrap();
    drv.close(&pairs[..1]).unwrap();
    drv.general::<device_model::defs::QueryMaxResourcesResp>(
        device_model::defs::Command::QUERY_MAX_RESOURCES,
        device_model::defs::DevId::default(),
    )
    .unwrap();
}

fn opened() -> (Driver, Vec<DrvQueuePair>) {
    let mut drv = Driver::new(Kernel::V6_12, DeviceConfig::default());
    let eqs = drv.probe().unwrap();
    let pairs = drv.open(&eqs, 2).unwrap();
    (drv, pairs)
}

#[test]
fn a_rewind_gives_back_the_device_and_the_next_run_goes_as_on_a_fresh_one() {
    let (mut drv, pairs) = opened();
    let checkpoint = drv.checkpoint();
    let before = drv.dev.snapshot();
    session(&mut drv, &pairs);
    assert_ne!(drv.dev.snapshot(), before, "the session changed the device");
    drv.rewind(&checkpoint);
    assert_eq!(drv.dev.snapshot(), before);
    assert_eq!(drv.dev.footprint(), {
        let (fresh, _) = opened();
        fresh.dev.footprint()
    });
    // The same session again, from the rewound device and from a fresh one.
    session(&mut drv, &pairs);
    let (mut fresh, fresh_pairs) = opened();
    session(&mut fresh, &fresh_pairs);
    assert_eq!(drv.dev.snapshot(), fresh.dev.snapshot());
    assert_eq!(drv.net.as_ref().unwrap().sent(), fresh.net.as_ref().unwrap().sent());
    assert_eq!(drv.data.rx_frames.len(), fresh.data.rx_frames.len());
}
