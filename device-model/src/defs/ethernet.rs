//! The Ethernet data path's OOBs (mana.h): TX short/long OOBs, RX and TX
//! completion OOBs and their flags. [`NdisHashTypes`] (RSS hash types) is
//! the api crate's ([`mana_device_api::rss`]) and re-exported here.
#![forbid(unsafe_code)]

use super::entries::{INLINE_OOB_LARGE_SIZE, INLINE_OOB_SMALL_SIZE};
use super::{Le16, Le32, Le64};
use bitfield_struct::bitfield;
pub use mana_device_api::rss::NdisHashTypes;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `enum mana_tx_pkt_format` (mana.h): `pkt_fmt` of the TX OOB.
pub const MANA_SHORT_PKT_FMT: u8 = 0;
/// `MANA_LONG_PKT_FMT`: the 24-byte [`TxOob`] (VLAN insertion, long vPort offset).
pub const MANA_LONG_PKT_FMT: u8 = 1;
/// `client_type` of `struct mana_cqe_header`: MANA_CQE_COMPLETION.
pub const MANA_CQE_COMPLETION: u8 = 1;

/// `struct mana_cqe_header` (mana.h): dword 0 of a MANA RX/TX completion OOB.
#[bitfield(u32, repr = Le32, from = Le32::new, into = Le32::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ManaCqeHeader {
    /// [`ManaCqeType`](super::ManaCqeType).
    #[bits(6)]
    pub cqe_type: u8,
    /// [`MANA_CQE_COMPLETION`].
    #[bits(2)]
    pub client_type: u8,
    /// Vendor error.
    #[bits(24)]
    pub vendor_err: u32,
}

/// `struct mana_tx_short_oob` (mana.h): the 8-byte inline OOB of every
/// Ethernet SQ WQE (`mana_start_xmit()`), dword 0 in bits 0-31, dword 1 in bits 32-63.
#[bitfield(u64, repr = Le64, from = Le64::new, into = Le64::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct TxShortOob {
    /// [`MANA_SHORT_PKT_FMT`] or [`MANA_LONG_PKT_FMT`].
    #[bits(2)]
    pub pkt_fmt: u8,
    /// The frame is IPv4 (set with a checksum or TSO request).
    pub is_outer_ipv4: bool,
    /// The frame is IPv6 (set with a checksum or TSO request).
    pub is_outer_ipv6: bool,
    /// Compute the IPv4 header checksum (TSO).
    pub comp_iphdr_csum: bool,
    /// Compute the TCP checksum (`CHECKSUM_PARTIAL` TCP, and TSO).
    pub comp_tcp_csum: bool,
    /// Compute the UDP checksum (`CHECKSUM_PARTIAL` UDP).
    pub comp_udp_csum: bool,
    /// Do not post a TX CQE for this WQE.
    pub supress_txcqe_gen: bool,
    /// CQ id the completion goes to (the SQ's CQ).
    #[bits(24)]
    pub vcq_num: u32,
    /// Transport header offset in bytes (TCP only; 0 for UDP).
    #[bits(10)]
    pub trans_off: u16,
    /// SQ id bits 10-23 (`mana_txq.vsq_frame`).
    #[bits(14)]
    pub vsq_frame: u16,
    /// vPort offset from MANA_CONFIG_VPORT_TX when it is ≤ 255.
    pub short_vp_offset: u8,
}

/// `struct mana_tx_long_oob` dword 0 (mana.h): VLAN tag insertion.
#[bitfield(u32, repr = Le32, from = Le32::new, into = Le32::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct TxLongOobVlan {
    /// Encapsulated frame (never set by the Ethernet driver).
    pub is_encap: bool,
    /// Inner frame is IPv6 (encapsulation only).
    pub inner_is_ipv6: bool,
    /// Inner TCP options (encapsulation only).
    pub inner_tcp_opt: bool,
    /// Insert an 802.1Q tag built from `pcp`, `dei` and `vlan_id`.
    pub inject_vlan_pri_tag: bool,
    #[bits(12)]
    __: u16,
    /// 802.1Q priority code point.
    #[bits(3)]
    pub pcp: u8,
    /// 802.1Q drop-eligible indicator.
    pub dei: bool,
    /// 802.1Q VLAN id.
    #[bits(12)]
    pub vlan_id: u16,
}

/// `struct mana_tx_long_oob` dword 1 (mana.h): offsets.
#[bitfield(u32, repr = Le32, from = Le32::new, into = Le32::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct TxLongOobOffsets {
    /// Inner frame offset (encapsulation only).
    #[bits(10)]
    pub inner_frame_offset: u16,
    /// Inner IP header offset (encapsulation only).
    #[bits(6)]
    pub inner_ip_rel_offset: u8,
    /// vPort offset from MANA_CONFIG_VPORT_TX when it is > 255.
    #[bits(12)]
    pub long_vp_offset: u16,
    #[bits(4)]
    __: u8,
}

/// `struct mana_rxcomp_oob` dword 1 (mana.h): VLAN, hash type and checksum results.
#[bitfield(u32, repr = Le32, from = Le32::new, into = Le32::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct RxCompFlags {
    /// Stripped VLAN id (this device never strips: 0).
    #[bits(12)]
    pub rx_vlan_id: u16,
    /// A VLAN tag was stripped (never set here: tags stay in the frame).
    pub rx_vlantag_present: bool,
    /// Outer IP header checksum good (encapsulation; never set here).
    pub rx_outer_iphdr_csum_succeed: bool,
    /// Outer IP header checksum bad (encapsulation; never set here).
    pub rx_outer_iphdr_csum_fail: bool,
    #[bits(1)]
    __: u8,
    /// The hash type of `ppi[0].pkt_hash`: one [`NdisHashTypes`] bit, 0 = no hash.
    #[bits(9)]
    pub rx_hashtype: u16,
    /// IPv4 header checksum verified good (IPv6: header parsed).
    pub rx_iphdr_csum_succeed: bool,
    /// IPv4 header checksum verified bad.
    pub rx_iphdr_csum_fail: bool,
    /// TCP checksum verified good.
    pub rx_tcp_csum_succeed: bool,
    /// TCP checksum verified bad.
    pub rx_tcp_csum_fail: bool,
    /// UDP checksum verified good.
    pub rx_udp_csum_succeed: bool,
    /// UDP checksum verified bad.
    pub rx_udp_csum_fail: bool,
    #[bits(1)]
    __: u8,
}

/// `struct mana_rxcomp_perpkt_info` (mana.h), 12 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct RxCompPerPkt {
    /// Frame length in bytes (0 is an error for the driver).
    pub pkt_len: Le16,
    /// Reserved.
    pub reserved1: Le16,
    /// Reserved.
    pub reserved2: Le32,
    /// RSS hash of the frame (valid when `rx_hashtype` ≠ 0).
    pub pkt_hash: Le32,
}

/// `MANA_RXCOMP_OOB_NUM_PPI` (mana.h).
pub const MANA_RXCOMP_OOB_NUM_PPI: usize = 4;

/// `struct mana_rxcomp_oob` (mana.h): `cqe_data` of an Ethernet RX completion, 60 bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ManaRxCompOob {
    /// Completion type.
    pub cqe_hdr: ManaCqeHeader,
    /// VLAN / hash type / checksum flags.
    pub flags: RxCompFlags,
    /// Per-packet info; the driver reads `ppi[0]` only.
    pub ppi: [RxCompPerPkt; MANA_RXCOMP_OOB_NUM_PPI],
    /// Byte offset of the consumed RQ WQE (ignored by the driver).
    pub rx_wqe_offset: Le32,
}

/// `struct mana_tx_long_oob` (mana.h): the 16 bytes a long-format TX OOB
/// adds after [`TxShortOob`].
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct TxLongOob {
    /// VLAN insertion (dword 0).
    pub vlan: TxLongOobVlan,
    /// Offsets (dword 1).
    pub offsets: TxLongOobOffsets,
    /// Reserved.
    pub reserved: [Le32; 2],
}

/// `struct mana_tx_oob` (mana.h): the 24-byte long-format inline OOB.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct TxOob {
    /// The short part, present in every TX WQE.
    pub s_oob: TxShortOob,
    /// The long part ([`MANA_LONG_PKT_FMT`] only).
    pub l_oob: TxLongOob,
}

/// `struct mana_tx_comp_oob` (mana.h) as far as the device fills it; 60 bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ManaTxCompOob {
    /// Completion type.
    pub cqe_hdr: ManaCqeHeader,
    /// tx_data_offset.
    pub tx_data_offset: Le32,
    /// tx_sgl_offset / tx_wqe_offset.
    pub tx_wqe_offset: Le32,
    /// Reserved.
    pub reserved: [Le32; 12],
}

const _: () = {
    use std::mem::size_of;
    assert!(size_of::<ManaRxCompOob>() == 60);
    assert!(size_of::<ManaTxCompOob>() == 60);
    assert!(size_of::<RxCompPerPkt>() == 12);
    assert!(size_of::<RxCompFlags>() == 4);
    assert!(size_of::<TxShortOob>() == INLINE_OOB_SMALL_SIZE as usize);
    assert!(size_of::<TxLongOob>() == 16);
    assert!(size_of::<TxOob>() == INLINE_OOB_LARGE_SIZE as usize);
};
