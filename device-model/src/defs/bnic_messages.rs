//! BNIC requests and responses (mana.h).
#![forbid(unsafe_code)]

use super::ethernet::NdisHashTypes;
use super::gdma_messages::{GdmaReqHdr, GdmaRespHdr};
use super::{Le16, Le32, Le64};
use bitfield_struct::bitfield;
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

/// `STATISTICS_FLAGS_*` (mana.h, Linux 6.1.192, 6.12.117 and 7.3.4 alike):
/// the `req_stats` bitmap of [`QueryGfStatReq`] (which counters the driver
/// asks for; every driver asks for all 27) and the `reported_stats` of
/// [`QueryGfStatResp`] (which ones the device filled). The bit order is not
/// the response's field order: multicast comes before broadcast here.
#[bitfield(u64, repr = Le64, from = Le64::new, into = Le64::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct GfStatFlags {
    /// `STATISTICS_FLAGS_RX_DISCARDS_NO_WQE` (bit 0).
    pub rx_discards_no_wqe: bool,
    /// `STATISTICS_FLAGS_RX_ERRORS_VPORT_DISABLED`.
    pub rx_errors_vport_disabled: bool,
    /// `STATISTICS_FLAGS_HC_RX_BYTES`.
    pub hc_rx_bytes: bool,
    /// `STATISTICS_FLAGS_HC_RX_UCAST_PACKETS`.
    pub hc_rx_ucast_packets: bool,
    /// `STATISTICS_FLAGS_HC_RX_UCAST_BYTES`.
    pub hc_rx_ucast_bytes: bool,
    /// `STATISTICS_FLAGS_HC_RX_MCAST_PACKETS`.
    pub hc_rx_mcast_packets: bool,
    /// `STATISTICS_FLAGS_HC_RX_MCAST_BYTES`.
    pub hc_rx_mcast_bytes: bool,
    /// `STATISTICS_FLAGS_HC_RX_BCAST_PACKETS`.
    pub hc_rx_bcast_packets: bool,
    /// `STATISTICS_FLAGS_HC_RX_BCAST_BYTES` (bit 8).
    pub hc_rx_bcast_bytes: bool,
    /// `STATISTICS_FLAGS_TX_ERRORS_GF_DISABLED`.
    pub tx_errors_gf_disabled: bool,
    /// `STATISTICS_FLAGS_TX_ERRORS_VPORT_DISABLED`.
    pub tx_errors_vport_disabled: bool,
    /// `STATISTICS_FLAGS_TX_ERRORS_INVAL_VPORT_OFFSET_PACKETS`.
    pub tx_errors_inval_vport_offset_packets: bool,
    /// `STATISTICS_FLAGS_TX_ERRORS_VLAN_ENFORCEMENT`.
    pub tx_errors_vlan_enforcement: bool,
    /// `STATISTICS_FLAGS_TX_ERRORS_ETH_TYPE_ENFORCEMENT`.
    pub tx_errors_eth_type_enforcement: bool,
    /// `STATISTICS_FLAGS_TX_ERRORS_SA_ENFORCEMENT`.
    pub tx_errors_sa_enforcement: bool,
    /// `STATISTICS_FLAGS_TX_ERRORS_SQPDID_ENFORCEMENT`.
    pub tx_errors_sqpdid_enforcement: bool,
    /// `STATISTICS_FLAGS_TX_ERRORS_CQPDID_ENFORCEMENT`.
    pub tx_errors_cqpdid_enforcement: bool,
    /// `STATISTICS_FLAGS_TX_ERRORS_MTU_VIOLATION`.
    pub tx_errors_mtu_violation: bool,
    /// `STATISTICS_FLAGS_TX_ERRORS_INVALID_OOB` (bit 18).
    pub tx_errors_invalid_oob: bool,
    /// `STATISTICS_FLAGS_HC_TX_BYTES` (bit 19).
    pub hc_tx_bytes: bool,
    /// `STATISTICS_FLAGS_HC_TX_UCAST_PACKETS`.
    pub hc_tx_ucast_packets: bool,
    /// `STATISTICS_FLAGS_HC_TX_UCAST_BYTES`.
    pub hc_tx_ucast_bytes: bool,
    /// `STATISTICS_FLAGS_HC_TX_MCAST_PACKETS`.
    pub hc_tx_mcast_packets: bool,
    /// `STATISTICS_FLAGS_HC_TX_MCAST_BYTES`.
    pub hc_tx_mcast_bytes: bool,
    /// `STATISTICS_FLAGS_HC_TX_BCAST_PACKETS`.
    pub hc_tx_bcast_packets: bool,
    /// `STATISTICS_FLAGS_HC_TX_BCAST_BYTES`.
    pub hc_tx_bcast_bytes: bool,
    /// `STATISTICS_FLAGS_TX_ERRORS_GDMA_ERROR` (bit 26).
    pub tx_errors_gdma_error: bool,
    #[bits(37)]
    __: u64,
}

/// `struct mana_query_gf_stat_req` (MANA_QUERY_GF_STAT, `mana_query_gf_stats()`), 48 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryGfStatReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// The counters asked for.
    pub req_stats: GfStatFlags,
}

/// `struct mana_query_gf_stat_resp`, 256 bytes: the function's (the VF's,
/// all its vPorts') traffic counters since the device powered on, each a
/// count of frames or of their bytes. Field order as in mana.h (6.1.192,
/// 6.12.117 and 7.3.4 alike); the driver copies them into its ethtool stats
/// (`hc_*`; 6.1 and 6.12 at each `ethtool -S`, 7.3 every 2 s), and 7.3.4's
/// `mana_get_stats64()` (not 6.12.117's) reports `rx_discards_nowqe` as the
/// netdev's `rx_missed_errors`. The `tx_err_*` counters are described by
/// their names only; the header says no more.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryGfStatResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// The counters the device filled.
    pub reported_stats: GfStatFlags,
    /// Received frames dropped: the RQ they were steered to had no WQE posted.
    pub rx_discards_nowqe: Le64,
    /// Received frames dropped: the vPort's RX was disabled.
    pub rx_err_vport_disabled: Le64,
    /// Bytes of the received frames delivered.
    pub hc_rx_bytes: Le64,
    /// Received unicast frames delivered.
    pub hc_rx_ucast_pkts: Le64,
    /// Their bytes.
    pub hc_rx_ucast_bytes: Le64,
    /// Received broadcast frames delivered.
    pub hc_rx_bcast_pkts: Le64,
    /// Their bytes.
    pub hc_rx_bcast_bytes: Le64,
    /// Received multicast frames delivered.
    pub hc_rx_mcast_pkts: Le64,
    /// Their bytes.
    pub hc_rx_mcast_bytes: Le64,
    /// Frames not sent: the GDMA function was disabled.
    pub tx_err_gf_disabled: Le64,
    /// Frames not sent: the vPort was disabled.
    pub tx_err_vport_disabled: Le64,
    /// Frames not sent: a bad vPort offset.
    pub tx_err_inval_vport_offset_pkt: Le64,
    /// Frames not sent: VLAN enforcement.
    pub tx_err_vlan_enforcement: Le64,
    /// Frames not sent: EtherType enforcement.
    pub tx_err_ethtype_enforcement: Le64,
    /// Frames not sent: source MAC enforcement.
    pub tx_err_sa_enforcement: Le64,
    /// Frames not sent: SQ protection-domain check.
    pub tx_err_sqpdid_enforcement: Le64,
    /// Frames not sent: CQ protection-domain check.
    pub tx_err_cqpdid_enforcement: Le64,
    /// Frames not sent: longer than the MTU.
    pub tx_err_mtu_violation: Le64,
    /// Frames not sent: a bad OOB.
    pub tx_err_inval_oob: Le64,
    /// Bytes of the frames sent.
    pub hc_tx_bytes: Le64,
    /// Unicast frames sent.
    pub hc_tx_ucast_pkts: Le64,
    /// Their bytes.
    pub hc_tx_ucast_bytes: Le64,
    /// Broadcast frames sent.
    pub hc_tx_bcast_pkts: Le64,
    /// Their bytes.
    pub hc_tx_bcast_bytes: Le64,
    /// Multicast frames sent.
    pub hc_tx_mcast_pkts: Le64,
    /// Their bytes.
    pub hc_tx_mcast_bytes: Le64,
    /// Frames not sent: a GDMA error.
    pub tx_err_gdma: Le64,
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
    assert!(size_of::<QueryGfStatReq>() == 48);
    assert!(size_of::<QueryGfStatResp>() == 256);
};
