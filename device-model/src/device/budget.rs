//! The resource budget: what the device advertises, enforced when a command
//! would create more, and a total of guest pages the device keeps lists of.
//!
//! What is advertised (docs/mana-protocol.md §4.4, §4.6):
//! - GDMA_QUERY_MAX_RESOURCES: `max_eq` = [`DeviceConfig::max_queues`]. The
//!   6.x drivers create `max_num_queues ≤ max_eq` EQs per device at probe;
//!   7.3 creates them per vPort at open (`apc->eqs`), so the limit is
//!   `max_queues × num_vports` EQs made by GDMA_CREATE_QUEUE (the HWC EQ,
//!   made by the SMC, is not counted).
//! - MANA_QUERY_VPORT_CONFIG: `max_num_sq` = `max_num_rq` = `max_queues` per
//!   vPort: MANA_CREATE_WQ_OBJ refuses the next SQ (RQ) of a vPort that has
//!   that many. Each work-queue object brings exactly one CQ, so CQs are
//!   bounded by the same count.
//! - DMA regions: at most [`MAX_REGION_PAGES`] pages each and
//!   [`MAX_REGIONS`] not yet owned by a queue ([`crate::queues::dma_region`]), and
//!   at most [`MAX_TOTAL_PAGES`] pages in regions and queue rings together,
//!   counted when a region is created with its declared page count.
//!
//! A request over the budget fails with [`STATUS_INSUFFICIENT_RESOURCES`]
//! (any non-zero status other than `GDMA_STATUS_MORE_ENTRIES` fails the
//! command in every driver version) and changes nothing.
//!
//! [`STATUS_INSUFFICIENT_RESOURCES`]: crate::defs::STATUS_INSUFFICIENT_RESOURCES
#![forbid(unsafe_code)]

use crate::defs::{Command, CreateDmaRegionReq, CreateQueueReq, CreateWqObjReq, QueueType};
use crate::device::framing::{parse, CommandError};
use crate::device::resources::Resources;
pub use crate::queues::dma_region::{MAX_REGIONS, MAX_REGION_PAGES};
use crate::queues::PAGE_SIZE;
use mana_device_api::config::DeviceConfig;
use mana_device_api::snapshot::WqKind;

/// Guest pages the device keeps in page lists at once (DMA regions and
/// queue rings together): 4 GiB of guest memory, 8 MiB of lists. The
/// Ethernet driver's largest ring is 128 KiB (32 pages).
pub const MAX_TOTAL_PAGES: u64 = 1 << 20;

/// EQs GDMA_CREATE_QUEUE may create: `max_queues` per vPort (see the module doc).
pub fn eq_limit(config: &DeviceConfig) -> u64 {
    u64::from(config.max_queues) * u64::from(config.num_vports.max(1))
}

/// Guest pages held now: declared pages of every DMA region not yet owned
/// by a queue, plus the pages of every queue ring (HWC rings included).
pub fn pages_in_use(res: &Resources) -> u64 {
    let queues = &res.queues;
    let eq = queues.eqs.values().map(|eq| u64::from(eq.ring.entries()) * 16);
    let cq = queues.cqs.values().map(|cq| u64::from(cq.ring.entries()) * 64);
    let wq = queues.sqs.values().chain(queues.rqs.values()).map(|wq| wq.ring_bytes());
    let ring_bytes: u64 = eq.chain(cq).chain(wq).sum();
    res.regions.declared_pages() + ring_bytes.div_ceil(PAGE_SIZE)
}

/// Checks that `command` (whose request is `request`) stays within the
/// budget. Requests too short to read pass: their handler refuses them.
///
/// # Errors
/// [`CommandError::Exhausted`] when the command would create more than the
/// device advertises or allows.
pub fn admit(res: &Resources, config: &DeviceConfig, command: Command, request: &[u8]) -> Result<(), CommandError> {
    match command {
        Command::CREATE_QUEUE => {
            let Ok(req) = parse::<CreateQueueReq>(request) else {
                return Ok(());
            };
            if QueueType(req.queue_type.get()) != QueueType::EQ {
                return Ok(());
            }
            let hwc = res.hwc_eq.is_some_and(|id| res.queues.eqs.contains_key(&id));
            let made = res.queues.eqs.len() as u64 - u64::from(hwc);
            check("EQs", made, 1, eq_limit(config))
        }
        Command::MANA_CREATE_WQ_OBJ => {
            let Ok(req) = parse::<CreateWqObjReq>(request) else {
                return Ok(());
            };
            let (kind, what) = match QueueType(req.wq_type.get()) {
                QueueType::SQ => (WqKind::Sq, "SQs of the vPort"),
                QueueType::RQ => (WqKind::Rq, "RQs of the vPort"),
                _ => return Ok(()),
            };
            let vport = req.vport.get();
            let made = res.wq_objs.values().filter(|obj| obj.kind == kind && obj.vport == vport).count() as u64;
            check(what, made, 1, u64::from(config.max_queues))
        }
        Command::CREATE_DMA_REGION => {
            let Ok(req) = parse::<CreateDmaRegionReq>(request) else {
                return Ok(());
            };
            let declared = u64::from(req.page_count.get());
            check("guest pages", pages_in_use(res), declared, MAX_TOTAL_PAGES)
        }
        _ => Ok(()),
    }
}

fn check(what: &'static str, have: u64, adding: u64, limit: u64) -> Result<(), CommandError> {
    if have.saturating_add(adding) > limit {
        return Err(CommandError::Exhausted { what, have, limit });
    }
    Ok(())
}
