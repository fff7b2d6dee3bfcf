//! GDMA commands (codes < 0x10000); the framing they share with BNIC is in
//! [`crate::device::framing`], the routing by code in [`crate::device::commands`].
//!
//! Models the device side of drivers/net/ethernet/microsoft/mana/gdma_main.c
//! (Linux 6.1-7.3): `mana_gd_verify_vf_version()`,
//! `mana_gd_query_max_resources()`, `mana_gd_detect_devices()`,
//! `mana_gd_register_device()` / `mana_gd_deregister_device()`,
//! `mana_gd_create_dma_region()` / `mana_gd_destroy_dma_region()`,
//! `mana_gd_create_hw_eq()`, `mana_gd_disable_queue()`, `mana_gd_test_eq()`
//! and `mana_gd_query_hwc_timeout()`.
#![forbid(unsafe_code)]

use crate::defs::{
    Command, CreateDmaRegionReq, CreateDmaRegionResp, CreateQueueReq, CreateQueueResp, DestroyDmaRegionReq, DevId,
    DisableQueueReq, DmaRegionAddPagesReq, EqeType, GdmaReqHdr, GdmaRespHdr, GenerateTestEqeReq, Le32, Le64,
    ListDevicesResp, QueryHwcTimeoutReq, QueryHwcTimeoutResp, QueryMaxResourcesResp, QueueType, RegisterDeviceResp,
    VerifyVerResp,
};
use crate::device::framing::{body, invalid, parse, u64_list, CommandError};
use crate::device::resources::{Ctx, DOORBELL_PAGE, LISTED_DEVICES, MAX_EQ_ID};
use crate::queues::{event, free_id, EventQueue, Producer, Ring};
use mana_device_api::snapshot::Owner;
use mana_device_api::snapshot::Registration;
use zerocopy::FromZeros;

/// `GDMA_PROTOCOL_V1`, the only protocol version the drivers offer.
const GDMA_PROTOCOL_V1: u64 = 1;
/// Default HWC timeout (`HW_CHANNEL_WAIT_RESOURCE_TIMEOUT_MS`).
const HWC_TIMEOUT_MS: u32 = 30_000;
/// `parent_eq` of a CQ whose EQ was disabled (GDMA_DISABLE_QUEUE): no EQ
/// has this id (EQ ids are below 65536), so its completions raise nothing,
/// even after a new EQ takes the old id.
pub const DETACHED_EQ: u32 = u32::MAX;

fn dev_key(dev_id: DevId) -> (u16, u16) {
    (dev_id.dev_type.get(), dev_id.instance.get())
}

/// Handles one GDMA command (after [`crate::device::commands::dispatch`] routed it here).
///
/// # Errors
/// [`CommandError`] for an unsupported command or a request the device refuses.
pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    command: Command,
    hdr: &GdmaReqHdr,
    request: &[u8],
) -> Result<Vec<u8>, CommandError> {
    match command {
        Command::VERIFY_VF_DRIVER_VERSION => {
            let mut resp = VerifyVerResp::new_zeroed();
            resp.gdma_protocol_ver = Le64::new(GDMA_PROTOCOL_V1);
            // pf_cap_flags1 = 0: no QUERY_HWC_TIMEOUT (bit 3), no DIM (7.3 bit 15).
            Ok(body(&resp))
        }
        Command::QUERY_MAX_RESOURCES => {
            let queues = Le32::new(ctx.config.max_queues);
            let resp = QueryMaxResourcesResp {
                max_sq: queues,
                max_rq: queues,
                max_cq: queues,
                max_eq: queues,
                max_db: Le32::new(1),
                max_mst: Le32::new(1),
                max_cq_mod_ctx: Le32::new(queues.get()),
                max_mod_cq: Le32::new(queues.get()),
                max_msix: Le32::new(ctx.config.max_msix),
                ..QueryMaxResourcesResp::new_zeroed()
            };
            Ok(body(&resp))
        }
        Command::LIST_DEVICES => {
            let mut resp = ListDevicesResp::new_zeroed();
            resp.num_of_devs = Le32::new(LISTED_DEVICES.len() as u32);
            resp.devs[..LISTED_DEVICES.len()].copy_from_slice(&LISTED_DEVICES);
            Ok(body(&resp))
        }
        Command::REGISTER_DEVICE => register_device(ctx, hdr.dev_id),
        Command::DEREGISTER_DEVICE => {
            let key = dev_key(hdr.dev_id);
            ctx.res.registered.remove(&key).ok_or(invalid("unregistered dev_id type", key.0))?;
            Ok(body(&GdmaRespHdr::new_zeroed()))
        }
        Command::GENERATE_TEST_EQE => {
            let req: GenerateTestEqeReq = parse(request)?;
            let eq_id = req.queue_index.get();
            if !ctx.res.queues.eqs.contains_key(&eq_id) {
                return Err(invalid("queue_index", eq_id));
            }
            ctx.res.queues.post_eqe(ctx.mem, ctx.irq, eq_id, event(EqeType::TEST_EVENT, 0))?;
            Ok(body(&GdmaRespHdr::new_zeroed()))
        }
        Command::CREATE_QUEUE => create_queue(ctx, hdr, request),
        Command::DISABLE_QUEUE => {
            let req: DisableQueueReq = parse(request)?;
            let eq_id = req.queue_index.get();
            if QueueType(req.queue_type.get()) != QueueType::EQ {
                return Err(invalid("queue type", req.queue_type.get()));
            }
            if ctx.res.hwc_eq == Some(eq_id) || ctx.res.queues.eqs.remove(&eq_id).is_none() {
                return Err(invalid("queue_index", eq_id));
            }
            // CQs still pointing at the disabled EQ must not notify an EQ
            // that later reuses its id: their completions notify nobody.
            for cq in ctx.res.queues.cqs.values_mut() {
                if cq.parent_eq == eq_id {
                    cq.parent_eq = DETACHED_EQ;
                }
            }
            Ok(body(&GdmaRespHdr::new_zeroed()))
        }
        Command::CREATE_DMA_REGION => {
            let req: CreateDmaRegionReq = parse(request)?;
            let listed = req.page_addr_list_len.get();
            let pages = u64_list(request, size_of::<CreateDmaRegionReq>(), listed as usize)?;
            let handle = ctx.res.regions.create(
                ctx.mem,
                req.length.get(),
                req.offset_in_page.get(),
                req.gdma_page_type.get(),
                req.page_count.get(),
                pages,
            )?;
            let mut resp = CreateDmaRegionResp::new_zeroed();
            resp.dma_region_handle = Le64::new(handle);
            Ok(body(&resp))
        }
        Command::DMA_REGION_ADD_PAGES => {
            let req: DmaRegionAddPagesReq = parse(request)?;
            let listed = req.page_addr_list_len.get() as usize;
            let pages = u64_list(request, size_of::<DmaRegionAddPagesReq>(), listed)?;
            ctx.res.regions.add_pages(ctx.mem, req.dma_region_handle.get(), pages)?;
            Ok(body(&GdmaRespHdr::new_zeroed()))
        }
        Command::DESTROY_DMA_REGION => {
            let req: DestroyDmaRegionReq = parse(request)?;
            ctx.res.regions.destroy(req.dma_region_handle.get())?;
            Ok(body(&GdmaRespHdr::new_zeroed()))
        }
        Command::QUERY_HWC_TIMEOUT => {
            let req: QueryHwcTimeoutReq = parse(request)?;
            let mut resp = QueryHwcTimeoutResp::new_zeroed();
            let asked = req.timeout_ms.get();
            resp.timeout_ms = Le32::new(if asked == 0 { HWC_TIMEOUT_MS } else { asked });
            Ok(body(&resp))
        }
        other => Err(CommandError::Unsupported(other)),
    }
}

fn register_device(ctx: &mut Ctx<'_>, dev_id: DevId) -> Result<Vec<u8>, CommandError> {
    if !LISTED_DEVICES.contains(&dev_id) {
        return Err(invalid("dev_id type", dev_id.dev_type.get()));
    }
    let (dev_type, instance) = dev_key(dev_id);
    let registration = Registration {
        // Any non-INVALID_PDID value; distinct per device to ease debugging.
        pdid: 0x100 + u32::from(dev_type),
        gpa_mkey: 0x1000 + u32::from(dev_type),
        db_id: DOORBELL_PAGE,
    };
    ctx.res.registered.insert((dev_type, instance), registration);
    let resp = RegisterDeviceResp {
        hdr: GdmaRespHdr::new_zeroed(),
        pdid: Le32::new(registration.pdid),
        gpa_mkey: Le32::new(registration.gpa_mkey),
        db_id: Le32::new(registration.db_id),
    };
    Ok(body(&resp))
}

fn create_queue(ctx: &mut Ctx<'_>, hdr: &GdmaReqHdr, request: &[u8]) -> Result<Vec<u8>, CommandError> {
    let req: CreateQueueReq = parse(request)?;
    if !ctx.res.registered.contains_key(&dev_key(hdr.dev_id)) {
        return Err(invalid("unregistered dev_id type", hdr.dev_id.dev_type.get()));
    }
    if QueueType(req.queue_type.get()) != QueueType::EQ {
        return Err(invalid("queue type", req.queue_type.get()));
    }
    let msix = req.eq_pci_msix_index.get();
    if msix >= u32::from(ctx.config.msix_table_size) {
        return Err(invalid("eq_pci_msix_index", msix));
    }
    let size = u64::from(req.queue_size.get());
    let handle = req.gdma_region.get();
    let region = ctx.res.regions.check(handle, size)?;
    let eq_id = free_id(&ctx.res.queues.eqs, MAX_EQ_ID).ok_or(invalid("EQ count", MAX_EQ_ID))?;
    let ring = Producer::new(eq_id, Ring::from_pages(&region.pages, size)?)?;
    ctx.res.regions.destroy(handle)?;
    let owner = Owner { dev_type: hdr.dev_id.dev_type.get(), instance: hdr.dev_id.instance.get() };
    ctx.res.queues.eqs.insert(eq_id, EventQueue { ring, msix_index: msix as u16, owner });
    let mut resp = CreateQueueResp::new_zeroed();
    resp.queue_index = Le32::new(eq_id);
    Ok(body(&resp))
}
