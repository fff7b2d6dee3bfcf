//! BNIC (MANA Ethernet) commands, codes 0x2xxxx, and the minimal data path.
//!
//! Models the device side of drivers/net/ethernet/microsoft/mana/mana_en.c
//! (Linux 6.1-7.3): `mana_query_device_cfg()`, `mana_query_vport_cfg()`,
//! `mana_cfg_vport()`, `mana_create_wq_obj()`, `mana_destroy_wq_obj()`,
//! `mana_cfg_vport_steering()`, `mana_fence_rq()` and `mana_query_gf_stats()`.
//!
//! BNIC commands are answered before GDMA_REGISTER_DEVICE too: 7.3 sends
//! MANA_QUERY_DEV_CONFIG first (`mana_gd_query_max_resources()`, 7.3.4).
//! The response version is whatever the request asked for (the framing
//! copies `req.resp`), which is what `mana_verify_resp_hdr()` checks.
//!
//! The data path itself (SQ/RQ traffic, RSS) is [`crate::datapath`]; this
//! module registers its queues and programs its steering.
#![forbid(unsafe_code)]

use crate::datapath::rss::SteeringUpdate;
use crate::datapath::{MAX_FRAME, TX_VPORT_OFFSET};
use crate::defs::{
    CfgRxSteerReq, CfgRxSteerReqV2, Command, ConfigVportReq, ConfigVportResp, CreateWqObjReq, CreateWqObjResp,
    DestroyWqObjReq, DeviceType, FenceRqReq, GdmaReqHdr, GdmaRespHdr, Le16, Le32, Le64, ManaCqeHeader, ManaCqeType,
    ManaRxCompOob, QueryDevCfgResp, QueryGfStatReq, QueryVportCfgReq, QueryVportCfgResp, QueueType, TriState,
    INVALID_MANA_HANDLE, MANA_CQE_COMPLETION, MANA_INDIRECT_TABLE_MAX_SIZE,
};
use crate::device::framing::{body, invalid, parse, CommandError};
use crate::device::gf_stats::gf_stats;
use crate::device::resources::{Ctx, MAX_NUM_CQS, MAX_WQ_ID};
use crate::queues::{completion, free_id, CompletionQueue, Producer, Ring, WorkQueue};
use mana_device_api::snapshot::WqKind;
use mana_device_api::snapshot::WqObj;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

/// Frame size reported as `adapter_mtu` (7.3 rejects < 74): the data path's
/// [`MAX_FRAME`], 9014 (MTU 9000).
pub const ADAPTER_MTU: u16 = MAX_FRAME as u16;
/// RSS indirection table size reported by QUERY_VPORT_CONFIG
/// (`MANA_INDIRECT_TABLE_DEF_SIZE`; 512 would overflow CONFIG_VPORT_RX's 4 KiB request).
pub const NUM_INDIRECTION_ENT: u32 = 64;
/// vPort k has handle `VPORT_HANDLE_BASE + k`.
pub const VPORT_HANDLE_BASE: u64 = 0x5600;

fn vport_index(ctx: &Ctx<'_>, handle: u64) -> Result<u16, CommandError> {
    handle
        .checked_sub(VPORT_HANDLE_BASE)
        .filter(|&k| k < u64::from(ctx.config.num_vports))
        .map(|k| k as u16)
        .ok_or(invalid("vport handle", handle))
}

/// Handles a BNIC command; returns the response body (header zeroed).
///
/// # Errors
/// [`CommandError`] for a wrong dev_id, a short request, an unknown handle,
/// region or EQ, or an unsupported code.
pub fn handle(ctx: &mut Ctx<'_>, command: Command, hdr: &GdmaReqHdr, request: &[u8]) -> Result<Vec<u8>, CommandError> {
    if DeviceType(hdr.dev_id.dev_type.get()) != DeviceType::MANA {
        return Err(invalid("BNIC dev_id type", hdr.dev_id.dev_type.get()));
    }
    match command {
        Command::MANA_QUERY_DEV_CONFIG => {
            let mut resp = QueryDevCfgResp::new_zeroed();
            resp.max_num_vports = Le16::new(ctx.config.num_vports);
            resp.max_num_eqs = Le32::new(ctx.config.max_queues);
            resp.adapter_mtu = Le16::new(ADAPTER_MTU);
            Ok(body(&resp))
        }
        Command::MANA_QUERY_VPORT_CONFIG => {
            let req: QueryVportCfgReq = parse(request)?;
            let index = req.vport_index.get();
            if index >= u32::from(ctx.config.num_vports) {
                return Err(invalid("vport_index", index));
            }
            let mut mac = ctx.config.mac;
            mac[5] = mac[5].wrapping_add(index as u8);
            let resp = QueryVportCfgResp {
                max_num_sq: Le32::new(ctx.config.max_queues),
                max_num_rq: Le32::new(ctx.config.max_queues),
                num_indirection_ent: Le32::new(NUM_INDIRECTION_ENT),
                mac_addr: mac,
                vport: Le64::new(VPORT_HANDLE_BASE + u64::from(index)),
                ..QueryVportCfgResp::new_zeroed()
            };
            Ok(body(&resp))
        }
        Command::MANA_CONFIG_VPORT_TX => {
            let req: ConfigVportReq = parse(request)?;
            vport_index(ctx, req.vport.get())?;
            let mut resp = ConfigVportResp::new_zeroed();
            resp.tx_vport_offset = Le16::new(TX_VPORT_OFFSET);
            resp.short_form_allowed = 1;
            Ok(body(&resp))
        }
        Command::MANA_CREATE_WQ_OBJ => create_wq_obj(ctx, request),
        Command::MANA_DESTROY_WQ_OBJ => {
            let req: DestroyWqObjReq = parse(request)?;
            let handle = req.wq_obj_handle.get();
            let obj = ctx.res.wq_objs.remove(&handle).ok_or(invalid("wq_obj_handle", handle))?;
            match obj.kind {
                WqKind::Sq => ctx.res.queues.sqs.remove(&obj.wq_id),
                WqKind::Rq => ctx.res.queues.rqs.remove(&obj.wq_id),
            };
            ctx.res.datapath.remove_queue(obj.kind, obj.wq_id);
            ctx.res.queues.cqs.remove(&obj.cq_id);
            Ok(body(&GdmaRespHdr::new_zeroed()))
        }
        Command::MANA_FENCE_RQ => {
            let req: FenceRqReq = parse(request)?;
            let handle = req.wq_obj_handle.get();
            let obj = ctx.res.wq_objs.get(&handle).copied().filter(|o| o.kind == WqKind::Rq);
            let obj = obj.ok_or(invalid("RQ wq_obj_handle", handle))?;
            // mana_process_rx_cqe(): CQE_RX_OBJECT_FENCE completes the fence wait.
            let oob = ManaRxCompOob {
                cqe_hdr: ManaCqeHeader::new()
                    .with_cqe_type(ManaCqeType::RX_OBJECT_FENCE.0)
                    .with_client_type(MANA_CQE_COMPLETION),
                ..ManaRxCompOob::new_zeroed()
            };
            let cqe = completion(oob.as_bytes(), obj.wq_id, false);
            ctx.res.queues.post_cqe(ctx.mem, ctx.irq, obj.cq_id, cqe)?;
            Ok(body(&GdmaRespHdr::new_zeroed()))
        }
        Command::MANA_CONFIG_VPORT_RX => configure_vport_rx(ctx, request),
        Command::MANA_QUERY_GF_STAT => {
            let req: QueryGfStatReq = parse(request)?;
            Ok(body(&gf_stats(&req, ctx.totals)))
        }
        other => Err(CommandError::Unsupported(other)),
    }
}

fn create_wq_obj(ctx: &mut Ctx<'_>, request: &[u8]) -> Result<Vec<u8>, CommandError> {
    let req: CreateWqObjReq = parse(request)?;
    let vport = req.vport.get();
    let index = vport_index(ctx, vport)?;
    let kind = match QueueType(req.wq_type.get()) {
        QueueType::SQ => WqKind::Sq,
        QueueType::RQ => WqKind::Rq,
        _ => return Err(invalid("wq_type", req.wq_type.get())),
    };
    let parent_eq = req.cq_parent_qid.get();
    if !ctx.res.queues.eqs.contains_key(&parent_eq) {
        return Err(invalid("cq_parent_qid", parent_eq));
    }
    let (wq_handle, cq_handle) = (req.wq_gdma_region.get(), req.cq_gdma_region.get());
    if wq_handle == cq_handle {
        return Err(invalid("cq_gdma_region", cq_handle));
    }
    let (wq_size, cq_size) = (u64::from(req.wq_size.get()), u64::from(req.cq_size.get()));
    let wq_pages = ctx.res.regions.check(wq_handle, wq_size)?.pages.clone();
    let cq_pages = ctx.res.regions.check(cq_handle, cq_size)?.pages.clone();
    let queues = &ctx.res.queues;
    let wq_map = match kind {
        WqKind::Sq => &queues.sqs,
        WqKind::Rq => &queues.rqs,
    };
    let wq_id = free_id(wq_map, MAX_WQ_ID).ok_or(invalid("WQ count", MAX_WQ_ID))?;
    let cq_id = free_id(&queues.cqs, MAX_NUM_CQS).ok_or(invalid("CQ count", MAX_NUM_CQS))?;
    let wq = WorkQueue::new(wq_id, kind, Ring::from_pages(&wq_pages, wq_size)?, cq_id)?;
    let cq = CompletionQueue { ring: Producer::new(cq_id, Ring::from_pages(&cq_pages, cq_size)?)?, parent_eq };
    // The queue owns its regions from here on (the driver forgets the handles).
    ctx.res.regions.destroy(wq_handle)?;
    ctx.res.regions.destroy(cq_handle)?;
    let queues = &mut ctx.res.queues;
    match kind {
        WqKind::Sq => queues.sqs.insert(wq_id, wq),
        WqKind::Rq => queues.rqs.insert(wq_id, wq),
    };
    queues.cqs.insert(cq_id, cq);
    ctx.res.datapath.add_queue(kind, wq_id, index);
    let wq_obj = ctx.res.allocate_wq_obj();
    ctx.res.wq_objs.insert(wq_obj, WqObj { kind, wq_id, cq_id, vport });
    let resp = CreateWqObjResp {
        wq_id: Le32::new(wq_id),
        cq_id: Le32::new(cq_id),
        wq_obj: Le64::new(wq_obj),
        ..CreateWqObjResp::new_zeroed()
    };
    Ok(body(&resp))
}

/// `rx_enable` / `rss_enable` of CONFIG_VPORT_RX: `None` leaves the setting as it is.
fn tri_state(what: &'static str, value: u32) -> Result<Option<bool>, CommandError> {
    match TriState(value) {
        TriState::FALSE => Ok(Some(false)),
        TriState::TRUE => Ok(Some(true)),
        TriState::UNKNOWN => Ok(None),
        _ => Err(invalid(what, value)),
    }
}

/// MANA_CONFIG_VPORT_RX (`mana_cfg_vport_steering()`): validates the whole
/// request (every RX object an RQ of this vPort, 1..=512 table entries right
/// after the fixed part), then programs the vPort's steering at once. A
/// refused request changes nothing.
fn configure_vport_rx(ctx: &mut Ctx<'_>, request: &[u8]) -> Result<Vec<u8>, CommandError> {
    let req: CfgRxSteerReq = parse(request)?;
    let handle = req.vport.get();
    let vport = vport_index(ctx, handle)?;
    let wq_objs = &ctx.res.wq_objs;
    let rq_of = |obj: u64| {
        wq_objs
            .get(&obj)
            .filter(|o| o.kind == WqKind::Rq && o.vport == handle)
            .map(|o| o.wq_id)
            .ok_or(invalid("RX object", obj))
    };
    let default_rq = match (req.update_default_rxobj, req.default_rxobj.get()) {
        (0, _) => None,
        (_, INVALID_MANA_HANDLE) => Some(None),
        (_, obj) => Some(Some(rq_of(obj)?)),
    };
    let table = if req.update_indir_tab != 0 {
        let count = req.num_indir_entries.get();
        if count == 0 || count > MANA_INDIRECT_TABLE_MAX_SIZE {
            return Err(invalid("num_indir_entries", count));
        }
        let offset = req.indir_tab_offset.get();
        if usize::from(offset) != size_of::<CfgRxSteerReq>() {
            return Err(invalid("indir_tab_offset", offset));
        }
        let (whole, _) = CfgRxSteerReqV2::ref_from_prefix_with_elems(request, usize::from(count)).map_err(|_| {
            CommandError::Truncated { len: request.len(), need: size_of::<CfgRxSteerReq>() + 8 * usize::from(count) }
        })?;
        let rqs = whole.indir_tab.iter().map(|obj| rq_of(obj.get()));
        Some(rqs.collect::<Result<Vec<u32>, _>>()?)
    } else {
        None
    };
    let update = SteeringUpdate {
        rx_enabled: tri_state("rx_enable", req.rx_enable.get())?,
        rss_enabled: tri_state("rss_enable", req.rss_enable.get())?,
        default_rq,
        key: (req.update_hashkey != 0).then_some(req.hashkey),
        table,
        hash_types: req.rss_hash_types,
    };
    ctx.res.datapath.configure(vport, update);
    Ok(body(&GdmaRespHdr::new_zeroed()))
}
