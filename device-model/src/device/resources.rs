//! What the GDMA and BNIC commands create and destroy: queues, DMA regions,
//! registered devices and work-queue objects, plus the context a command
//! handler runs in.
#![forbid(unsafe_code)]

use crate::datapath::DataPath;
use crate::defs::{DevId, DeviceType};
use crate::interrupt::InterruptSink;
use crate::queues::dma_region::DmaRegions;
use crate::queues::{Mem, Queues};
use mana_device_api::config::DeviceConfig;
use mana_device_api::snapshot::{Registration, WqObj};
use mana_device_api::traffic::Totals;
use std::collections::BTreeMap;

/// `HWC_INIT_DATA_MAX_NUM_CQS`: size of the driver's `cq_table`; every CQ id
/// (HWC and BNIC) is below it. 64 queues × 2 CQs × 16 vPorts fit with room.
pub const MAX_NUM_CQS: u32 = 4096;
/// EQ ids must fit the 16-bit id field of the EQ doorbell.
pub const MAX_EQ_ID: u32 = 1 << 16;
/// SQ / RQ ids must fit the 24-bit id field of their doorbells and CQEs.
pub const MAX_WQ_ID: u32 = 1 << 24;
/// Doorbell page every device's queues use (db_id 0 is valid for all versions).
pub const DOORBELL_PAGE: u32 = 0;

/// The devices LIST_DEVICES reports: MANA (Ethernet) and MANA_IB (RDMA).
///
/// MANA_IB is listed because 6.12's mana_ib probe registers it
/// unconditionally and would dereference a NULL context otherwise
/// (drivers/infiniband/hw/mana/device.c `mana_ib_probe()`, 6.12.117); its
/// 0x3xxxx commands all fail, which makes mana_ib unwind cleanly in 6.12 and
/// 7.3 and is ignored by 6.1 (no mana_ib there). See docs/mana-protocol.md §7.
pub const LISTED_DEVICES: [DevId; 2] = [
    DevId { dev_type: crate::defs::Le16::new(DeviceType::MANA.0), instance: crate::defs::Le16::new(0) },
    DevId { dev_type: crate::defs::Le16::new(DeviceType::MANA_IB.0), instance: crate::defs::Le16::new(0) },
];

/// Device state that commands act on; dropped as a whole on DESTROY_HWC and reset.
#[derive(Debug, Default, Clone)]
pub struct Resources {
    /// Every queue, HWC ones included.
    pub queues: Queues,
    /// DMA regions not yet owned by a queue.
    pub regions: DmaRegions,
    /// Registered devices by (type, instance).
    pub registered: BTreeMap<(u16, u16), Registration>,
    /// Work-queue objects by handle.
    pub wq_objs: BTreeMap<u64, WqObj>,
    next_wq_obj: u64,
    /// HWC EQ id while the channel is up (never disabled by a command).
    pub hwc_eq: Option<u32>,
    /// Data-path steering and per-queue counters of the Ethernet queues.
    pub datapath: DataPath,
}

impl Resources {
    /// A fresh work-queue object handle (never 0 or all-ones, the driver's
    /// INVALID_MANA_HANDLE).
    pub fn allocate_wq_obj(&mut self) -> u64 {
        loop {
            self.next_wq_obj = self.next_wq_obj.wrapping_add(1);
            let handle = self.next_wq_obj;
            if handle != 0 && handle != u64::MAX && !self.wq_objs.contains_key(&handle) {
                return handle;
            }
        }
    }
}

/// What a command handler may touch.
pub struct Ctx<'a> {
    /// Device state.
    pub res: &'a mut Resources,
    /// Guest memory for DMA.
    pub mem: &'a Mem,
    /// MSI-X delivery.
    pub irq: &'a dyn InterruptSink,
    /// Device knobs.
    pub config: &'a DeviceConfig,
    /// The data path's device-wide totals, read-only (MANA_QUERY_GF_STAT
    /// reports them).
    pub totals: &'a Totals,
}
