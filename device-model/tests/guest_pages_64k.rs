//! The device under a guest whose PAGE_SIZE is 64 KiB (arm64 with
//! CONFIG_ARM64_64K_PAGES, as Azure's Cobalt VMs can run), driven by the
//! in-process model of Linux's `mana` driver (tests/support) with its
//! 64 KiB-page request sequence ([`Driver::with_guest_pages`]): every queue
//! buffer a guest-page-aligned allocation listed as 4 KiB GDMA pages
//! (MANA_PAGE_SIZE), HWC rings on their own guest pages with 4 KiB PFNs in
//! the SMC message, RX buffers a whole guest page each (6.12) or packed
//! page_pool fragments (7.3), doorbells at the device's 4 KiB stride.
//!
//! What the driver sends and why: device-model/src/queues/dma_region.rs
//! ("Guests with pages above 4 KiB"), from Debian's linux-source-6.12 and
//! 7.3 (drivers/net/ethernet/microsoft/mana, include/net/mana/gdma.h).
// Tests fail by panicking; unwrap() on a driver step is the assertion.
#![allow(clippy::unwrap_used)]

mod support;

use device_model::datapath::rx::RxVerdict;
use mana_device_api::config::DeviceConfig;
use support::frames::{self, Flow};
use support::net::TxOpts;
use support::*;

/// PAGE_SIZE of an arm64 kernel built with CONFIG_ARM64_64K_PAGES.
const PAGE_64K: u64 = 65536;
/// CQE_TX_OKAY and CQE_RX_OKAY (include/net/mana/mana.h, `enum mana_cqe_type`).
const TX_OKAY: u8 = 32;
const RX_OKAY: u8 = 1;

/// Probed and opened with `queues` queue pairs on a 64 KiB-page guest.
fn opened_64k(kernel: Kernel, queues: usize) -> (Driver, Vec<DrvQueuePair>) {
    let mut drv = Driver::with_guest_pages(kernel, DeviceConfig::default(), PAGE_64K);
    let eqs = drv.probe().unwrap();
    let pairs = drv.open(&eqs, queues).unwrap();
    (drv, pairs)
}

/// One frame out of every pair's SQ and one into every pair's RQ: TX and RX
/// complete OK, the frames arrive byte for byte, and the device logged no
/// guest error.
fn traffic_passes(drv: &mut Driver, pairs: &[DrvQueuePair], what: &str) {
    let mac = DeviceConfig::default().mac;
    for (i, pair) in pairs.iter().enumerate() {
        let flow = Flow::tcp("10.0.0.1", 40000 + i as u16, "10.0.0.2", 5201);
        let out = frames::frame([0x02, 0, 0, 0, 0, 9], &flow, &[0xA5; 1400]);
        drv.xmit(pair, &out, &TxOpts::default()).unwrap();
        drv.pump().unwrap();
        assert_eq!(drv.data.tx_cqe_types[&pair.sq.id], vec![TX_OKAY], "{what}: SQ {}", pair.sq.id);
    }
    let sent: Vec<Vec<u8>> = drv.net.as_ref().unwrap().sent().into_iter().map(|(_, f)| f).collect();
    assert_eq!(sent.len(), pairs.len(), "{what}");
    // A non-IP frame goes to the default RQ; the full-size one fills most of a 1514-byte buffer.
    let inbound = frames::frame(mac, &Flow::tcp("10.0.0.2", 5201, "10.0.0.1", 40000), &[0x3C; 1400]);
    let verdict = drv.dev.receive(0, &inbound);
    assert!(matches!(verdict, RxVerdict::Delivered { .. }), "{what}: {verdict:?}");
    drv.pump().unwrap();
    let rx = drv.data.rx_frames.last().cloned().unwrap();
    assert_eq!((rx.cqe_type, rx.bytes.as_slice()), (RX_OKAY, inbound.as_slice()), "{what}");
    let snap = drv.dev.snapshot();
    assert!(snap.counters.guest_errors.is_empty(), "{what}: {:?}", snap.counters.guest_errors);
}

#[test]
fn a_64k_page_guest_on_6_12_probes_opens_and_passes_traffic() {
    let (mut drv, pairs) = opened_64k(Kernel::V6_12, 2);
    traffic_passes(&mut drv, &pairs, "6.12, 64 KiB pages");
    drv.close(&pairs).unwrap();
}

#[test]
fn a_64k_page_guest_on_7_3_with_scattered_64k_chunks_probes_opens_and_passes_traffic() {
    let (mut drv, pairs) = opened_64k(Kernel::V7_3, 2);
    traffic_passes(&mut drv, &pairs, "7.3, 64 KiB pages");
    drv.close(&pairs).unwrap();
}

/// mana_gd_create_dma_region() on a 64 KiB-page guest: the queue's memory is
/// one dma_alloc_coherent() block on a 64 KiB boundary, but the page list
/// steps by MANA_PAGE_SIZE (4 KiB), so a 16 KiB RQ is 4 entries inside one
/// guest page, and the ring the device builds covers exactly those bytes.
#[test]
fn a_queue_smaller_than_a_guest_page_is_listed_as_its_4k_pages_and_accepted() {
    let mut drv = Driver::with_guest_pages(Kernel::V6_12, DeviceConfig::default(), PAGE_64K);
    drv.probe().unwrap();
    let pages = drv.queue_pages(16384);
    assert_eq!(pages.len(), 4, "16 KiB / MANA_PAGE_SIZE");
    assert_eq!(pages[0] % PAGE_64K, 0, "dma_alloc_coherent() returns whole guest pages");
    assert!(pages.windows(2).all(|w| w[1] == w[0] + 4096), "{pages:x?}");
    drv.create_dma_region(&pages, mana_dev()).unwrap();
    // The next allocation starts on the next guest page: the rest of this one is unused.
    let next = drv.queue_pages(4096);
    assert_eq!(next[0], pages[0] + PAGE_64K);
    drv.create_dma_region(&next, mana_dev()).unwrap();
}

/// mana_smc_setup_hwc(): the HWC rings are 4 KiB (MANA_MIN_QSIZE) on their
/// own 64 KiB pages, and the SMC message carries MANA_PFN(addr) (address >>
/// 12), not the guest's PFN (address >> 16); the device places the rings there.
#[test]
fn hwc_rings_on_64k_pages_are_found_by_their_4k_frame_numbers() {
    let mut drv = Driver::with_guest_pages(Kernel::V6_12, DeviceConfig::default(), PAGE_64K);
    drv.establish_hwc().unwrap();
    let rq = drv.hwc_rq.as_ref().unwrap().ring.pages[0];
    let sq = drv.hwc_sq.as_ref().unwrap().ring.pages[0];
    assert_eq!((rq % PAGE_64K, sq % PAGE_64K, sq - rq), (0, 0, PAGE_64K));
    // The channel works: a request out, its response back (mana_hwc_send_request()).
    drv.test_channel().unwrap();
}

/// The doorbell page stride is the device's GDMA_REG_DB_PAGE_SIZE (4 KiB),
/// which the driver reads, never its own PAGE_SIZE: BAR0 stays 64 KiB (one
/// guest page) with its doorbell pages at 4 KiB steps.
#[test]
fn doorbell_pages_keep_the_devices_4k_stride_under_64k_guest_pages() {
    let mut drv = Driver::with_guest_pages(Kernel::V6_12, DeviceConfig::default(), PAGE_64K);
    assert_eq!(drv.readl(REG_DB_PAGE_SIZE) & 0xFFFF, 0x1000);
    assert_eq!(device_model::bar::Bar0Handler::size(&drv.dev), PAGE_64K);
}
