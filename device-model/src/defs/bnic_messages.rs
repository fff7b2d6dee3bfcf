//! BNIC requests and responses (mana.h).
#![forbid(unsafe_code)]

use super::ethernet::NdisHashTypes;
use super::gdma_messages::{GdmaReqHdr, GdmaRespHdr};
use super::{Le16, Le32, Le64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `MANA_HASH_KEY_SIZE` (mana.h): the Toeplitz key length in bytes.
pub const MANA_HASH_KEY_SIZE: usize = 40;
/// `MANA_INDIRECT_TABLE_MAX_SIZE` (mana.h): the largest indirection table.
pub const MANA_INDIRECT_TABLE_MAX_SIZE: u16 = 512;
/// `INVALID_MANA_HANDLE` (mana.h): "no object", e.g. a default RX object after close.
pub const INVALID_MANA_HANDLE: u64 = u64::MAX;

/// `struct mana_query_device_cfg_resp`, 80 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryDevCfgResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// PF capability flags 1-4 (7.3 bit 5 of flags1 = CQE coalescing; 0 here).
    pub pf_cap_flags: [Le64; 4],
    /// Number of vPorts.
    pub max_num_vports: Le16,
    /// 7.3: host mode.
    pub bm_hostmode: u8,
    /// Reserved.
    pub reserved2: u8,
    /// Maximum EQs.
    pub max_num_eqs: Le32,
    /// Adapter MTU (frame size, e.g. 1514); read when the response version is ≥ 2.
    pub adapter_mtu: Le16,
    /// Reserved.
    pub reserved3: [u8; 6],
}

/// `struct mana_query_vport_cfg_req`, 44 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryVportCfgReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// vPort index.
    pub vport_index: Le32,
}

/// `struct mana_query_vport_cfg_resp`, 64 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryVportCfgResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// Maximum SQs.
    pub max_num_sq: Le32,
    /// Maximum RQs.
    pub max_num_rq: Le32,
    /// RSS indirection table size.
    pub num_indirection_ent: Le32,
    /// Reserved.
    pub reserved1: Le32,
    /// MAC address.
    pub mac_addr: [u8; 6],
    /// Reserved.
    pub reserved2: [u8; 2],
    /// vPort handle.
    pub vport: Le64,
}

/// `struct mana_config_vport_req`, 56 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ConfigVportReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// vPort handle.
    pub vport: Le64,
    /// Protection domain id.
    pub pdid: Le32,
    /// Doorbell page.
    pub doorbell_pageid: Le32,
}

/// `struct mana_config_vport_resp`, 36 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ConfigVportResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// TX vPort offset (> 255 forces the long TX OOB).
    pub tx_vport_offset: Le16,
    /// Short TX OOB allowed.
    pub short_form_allowed: u8,
    /// Reserved.
    pub reserved: u8,
}

/// `struct mana_create_wqobj_req` (6.x, 88 bytes; 7.3 appends 8 bytes of
/// moderation fields that this device ignores).
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CreateWqObjReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// vPort handle.
    pub vport: Le64,
    /// [`QueueType`](super::QueueType): SQ or RQ.
    pub wq_type: Le32,
    /// Reserved.
    pub reserved: Le32,
    /// DMA region of the work queue.
    pub wq_gdma_region: Le64,
    /// DMA region of the completion queue.
    pub cq_gdma_region: Le64,
    /// WQ ring size in bytes.
    pub wq_size: Le32,
    /// CQ ring size in bytes.
    pub cq_size: Le32,
    /// CQ moderation context.
    pub cq_moderation_ctx_id: Le32,
    /// EQ id the CQ reports to.
    pub cq_parent_qid: Le32,
}

/// `struct mana_create_wqobj_resp` (6.x, 48 bytes; 7.3 V2 adds 8 bytes left zero).
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CreateWqObjResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// WQ id.
    pub wq_id: Le32,
    /// CQ id (< MAX_NUM_CQS).
    pub cq_id: Le32,
    /// Object handle (never all-ones).
    pub wq_obj: Le64,
}

/// `struct mana_destroy_wqobj_req`, 56 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DestroyWqObjReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// [`QueueType`](super::QueueType).
    pub wq_type: Le32,
    /// Reserved.
    pub reserved: Le32,
    /// Object handle.
    pub wq_obj_handle: Le64,
}

/// `struct mana_fence_rq_req`, 48 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct FenceRqReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// RQ object handle.
    pub wq_obj_handle: Le64,
}

/// Fixed part of `struct mana_cfg_rx_steer_req_v2` (MANA_CONFIG_VPORT_RX,
/// `mana_cfg_vport_steering()`), 120 bytes; the indirection table of
/// `num_indir_entries` RQ object handles (u64, `[Le64]`) follows at
/// `indir_tab_offset` (= 120 in every driver version).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CfgRxSteerReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// vPort handle.
    pub vport: Le64,
    /// Indirection table entries.
    pub num_indir_entries: Le16,
    /// Byte offset of the indirection table in the request.
    pub indir_tab_offset: Le16,
    /// RX on/off.
    pub rx_enable: Le32,
    /// RSS on/off ([`TriState`](super::TriState)).
    pub rss_enable: Le32,
    /// Non-zero: take `default_rxobj`.
    pub update_default_rxobj: u8,
    /// Non-zero: take `hashkey`.
    pub update_hashkey: u8,
    /// Non-zero: take the indirection table.
    pub update_indir_tab: u8,
    /// Reserved.
    pub reserved: u8,
    /// Default RX object: receives what RSS does not steer (non-IP frames, RSS off).
    pub default_rxobj: Le64,
    /// Toeplitz key.
    pub hashkey: [u8; MANA_HASH_KEY_SIZE],
    /// CQE coalescing (never honoured: not advertised).
    pub cqe_coalescing_enable: u8,
    /// Reserved.
    pub reserved2: [u8; 3],
    /// 7.3 (request V5): enabled [`NdisHashTypes`]; reserved (0) in 6.x.
    pub rss_hash_types: NdisHashTypes,
    /// 7.3: CQE8 coalescing and reserved byte.
    pub cqe8: [u8; 2],
}

/// `struct mana_cfg_rx_steer_req_v2` whole: the fixed part and the
/// indirection table (`indir_tab[num_indir_entries]`, RQ object handles)
/// right after it, where every driver version puts it (`indir_tab_offset`
/// = `offsetof(..., indir_tab)` = 120).
#[derive(Debug, FromBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CfgRxSteerReqV2 {
    /// The fixed part.
    pub fixed: CfgRxSteerReq,
    /// RQ object handles.
    pub indir_tab: [Le64],
}

/// `struct mana_query_gf_stat_resp`, 256 bytes (all counters zero here).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryGfStatResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// Bitmap of reported counters.
    pub reported_stats: Le64,
    /// 27 counters.
    pub counters: [Le64; 27],
}

const _: () = {
    use std::mem::size_of;
    assert!(size_of::<QueryDevCfgResp>() == 80);
    assert!(size_of::<QueryVportCfgReq>() == 44);
    assert!(size_of::<QueryVportCfgResp>() == 64);
    assert!(size_of::<ConfigVportReq>() == 56);
    assert!(size_of::<ConfigVportResp>() == 36);
    assert!(size_of::<CreateWqObjReq>() == 88);
    assert!(size_of::<CreateWqObjResp>() == 48);
    assert!(size_of::<DestroyWqObjReq>() == 56);
    assert!(size_of::<FenceRqReq>() == 48);
    assert!(size_of::<CfgRxSteerReq>() == 120);
    assert!(size_of::<QueryGfStatResp>() == 256);
};
