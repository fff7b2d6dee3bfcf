//! GDMA / HWC / BNIC wire formats: structs, bitfields and open enums only.
//!
//! Every layout here is the one the Linux `mana` driver uses (the spec):
//! include/net/mana/{gdma,hw_channel,shm_channel,mana}.h in Debian's
//! linux-source 6.1.192, 6.12.117 and 7.3.4. All fields are little-endian and
//! naturally aligned in the C headers; here they are zerocopy little-endian
//! integers (alignment 1), and each struct's size is asserted against the C
//! `sizeof` (see docs/mana-protocol.md §3-§4, checked with gcc).
//! No logic lives here.
#![forbid(unsafe_code)]

use bitfield_struct::bitfield;
use std::fmt;
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Little-endian u16 on the wire.
pub type Le16 = U16;
/// Little-endian u32 on the wire.
pub type Le32 = U32;
/// Little-endian u64 on the wire.
pub type Le64 = U64;

/// Declares an "open enum": a transparent newtype over an integer with named
/// constants, so values the driver sends that we do not know stay representable.
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($ty:ty) {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(transparent)]
        pub struct $name(pub $ty);

        impl $name {
            $( $(#[$vmeta])* pub const $variant: Self = Self($value); )*

            /// The constant's name, or `None` for a value this device does not know.
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $( Self::$variant => Some(stringify!($variant)), )*
                    _ => None,
                }
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(name) => write!(f, "{name}({:#x})", self.0),
                    None => write!(f, "{}({:#x})", stringify!($name), self.0),
                }
            }
        }
    };
}

open_enum! {
    /// Request codes: `enum gdma_request_type` (gdma.h) and
    /// `enum mana_command_code` (mana.h), plus the mana_ib codes (0x3xxxx).
    pub struct Command(u32) {
        /// GDMA_VERIFY_VF_DRIVER_VERSION
        VERIFY_VF_DRIVER_VERSION = 1,
        /// GDMA_QUERY_MAX_RESOURCES
        QUERY_MAX_RESOURCES = 2,
        /// GDMA_LIST_DEVICES
        LIST_DEVICES = 3,
        /// GDMA_REGISTER_DEVICE
        REGISTER_DEVICE = 4,
        /// GDMA_DEREGISTER_DEVICE
        DEREGISTER_DEVICE = 5,
        /// GDMA_GENERATE_TEST_EQE
        GENERATE_TEST_EQE = 10,
        /// GDMA_CREATE_QUEUE
        CREATE_QUEUE = 12,
        /// GDMA_DISABLE_QUEUE
        DISABLE_QUEUE = 13,
        /// GDMA_ALLOCATE_RESOURCE_RANGE (mana_ib, 6.12+)
        ALLOCATE_RESOURCE_RANGE = 22,
        /// GDMA_DESTROY_RESOURCE_RANGE (mana_ib, 6.12+)
        DESTROY_RESOURCE_RANGE = 24,
        /// GDMA_CREATE_DMA_REGION
        CREATE_DMA_REGION = 25,
        /// GDMA_DMA_REGION_ADD_PAGES
        DMA_REGION_ADD_PAGES = 26,
        /// GDMA_DESTROY_DMA_REGION
        DESTROY_DMA_REGION = 27,
        /// GDMA_CREATE_PD
        CREATE_PD = 29,
        /// GDMA_DESTROY_PD
        DESTROY_PD = 30,
        /// GDMA_CREATE_MR
        CREATE_MR = 31,
        /// GDMA_DESTROY_MR
        DESTROY_MR = 32,
        /// GDMA_QUERY_HWC_TIMEOUT
        QUERY_HWC_TIMEOUT = 0x54,
        /// MANA_QUERY_DEV_CONFIG
        MANA_QUERY_DEV_CONFIG = 0x20001,
        /// MANA_QUERY_GF_STAT
        MANA_QUERY_GF_STAT = 0x20002,
        /// MANA_CONFIG_VPORT_TX
        MANA_CONFIG_VPORT_TX = 0x20003,
        /// MANA_CREATE_WQ_OBJ
        MANA_CREATE_WQ_OBJ = 0x20004,
        /// MANA_DESTROY_WQ_OBJ
        MANA_DESTROY_WQ_OBJ = 0x20005,
        /// MANA_FENCE_RQ
        MANA_FENCE_RQ = 0x20006,
        /// MANA_CONFIG_VPORT_RX
        MANA_CONFIG_VPORT_RX = 0x20007,
        /// MANA_QUERY_VPORT_CONFIG
        MANA_QUERY_VPORT_CONFIG = 0x20008,
        /// MANA_QUERY_LINK_CONFIG (7.3)
        MANA_QUERY_LINK_CONFIG = 0x2000A,
        /// MANA_SET_BW_CLAMP (7.3)
        MANA_SET_BW_CLAMP = 0x2000B,
        /// MANA_QUERY_PHY_STAT (7.3)
        MANA_QUERY_PHY_STAT = 0x2000C,
        /// MANA_IB_GET_ADAPTER_CAP
        MANA_IB_GET_ADAPTER_CAP = 0x30001,
    }
}

impl Command {
    /// First code of the mana_ib (RDMA) command range.
    pub const IB_RANGE_START: u32 = 0x30000;
    /// First code of the BNIC (`mana_command_code`) range.
    pub const BNIC_RANGE_START: u32 = 0x20000;
}

open_enum! {
    /// `enum gdma_eqe_type` (gdma.h): the `type` field of an EQE.
    pub struct EqeType(u8) {
        /// GDMA_EQE_COMPLETION: `details[0]` bits 0-23 = CQ id.
        COMPLETION = 3,
        /// GDMA_EQE_TEST_EVENT, answer to GDMA_GENERATE_TEST_EQE.
        TEST_EVENT = 64,
        /// GDMA_EQE_HWC_INIT_EQ_ID_DB: `details[0]` = [`HwcInitEqIdDb`].
        HWC_INIT_EQ_ID_DB = 129,
        /// GDMA_EQE_HWC_INIT_DATA: `details[0]` = [`HwcInitTypeData`].
        HWC_INIT_DATA = 130,
        /// GDMA_EQE_HWC_INIT_DONE.
        HWC_INIT_DONE = 131,
        /// GDMA_EQE_HWC_SOC_RECONFIG_DATA: `details[0]` = [`HwcInitTypeData`]
        /// with a `HWC_DATA_*` type (hw_channel.h; handled from Linux 7.x,
        /// dropped by 6.1/6.12's `mana_gd_process_eqe()`).
        HWC_SOC_RECONFIG_DATA = 133,
        /// GDMA_EQE_HWC_RESET_REQUEST (gdma.h, Linux 7.3): the device asks
        /// the driver to reset (`mana_serv_reset()` in gdma_main.c).
        HWC_RESET_REQUEST = 135,
    }
}

open_enum! {
    /// `HWC_INIT_DATA_*` (hw_channel.h): the `type` of an INIT_DATA EQE.
    pub struct HwcInitData(u8) {
        /// HWC CQ id.
        CQID = 1,
        /// HWC RQ id.
        RQID = 2,
        /// HWC SQ id.
        SQID = 3,
        /// Queue depth (stored and ignored by the driver).
        QUEUE_DEPTH = 4,
        /// Maximum request size (stored and ignored).
        MAX_REQUEST = 5,
        /// Maximum response size (stored and ignored).
        MAX_RESPONSE = 6,
        /// `gc->max_num_cqs`: every CQ id must be below it.
        MAX_NUM_CQS = 7,
        /// HWC protection domain id.
        PDID = 8,
        /// Memory key for HWC SGEs.
        GPA_MKEY = 9,
    }
}

open_enum! {
    /// `enum gdma_queue_type` (gdma.h).
    pub struct QueueType(u32) {
        /// GDMA_SQ
        SQ = 1,
        /// GDMA_RQ
        RQ = 2,
        /// GDMA_CQ
        CQ = 3,
        /// GDMA_EQ
        EQ = 4,
    }
}

open_enum! {
    /// `GDMA_DEVICE_*` (gdma.h): the `type` half of a [`DevId`].
    pub struct DeviceType(u16) {
        /// GDMA_DEVICE_NONE (an empty LIST_DEVICES slot).
        NONE = 0,
        /// GDMA_DEVICE_HWC
        HWC = 1,
        /// GDMA_DEVICE_MANA (Ethernet)
        MANA = 2,
        /// GDMA_DEVICE_MANA_IB (RDMA, 6.12+)
        MANA_IB = 3,
    }
}

open_enum! {
    /// SMC message types (`SMC_MSG_TYPE_*`, shm_channel.c / shm_channel.h).
    pub struct SmcMsgType(u8) {
        /// SMC_MSG_TYPE_ESTABLISH_HWC
        ESTABLISH_HWC = 1,
        /// SMC_MSG_TYPE_DESTROY_HWC
        DESTROY_HWC = 2,
    }
}

open_enum! {
    /// `cqe_type` of `struct mana_cqe_header` (`enum mana_cqe_type`, mana.h).
    pub struct ManaCqeType(u8) {
        /// CQE_RX_OKAY: a frame is in the RQ WQE's buffer.
        RX_OKAY = 1,
        /// CQE_RX_COALESCED_4 (never sent: CQE coalescing is not advertised).
        RX_COALESCED_4 = 2,
        /// CQE_RX_OBJECT_FENCE: answer to MANA_FENCE_RQ.
        RX_OBJECT_FENCE = 3,
        /// CQE_RX_TRUNCATED: the frame did not fit the WQE's buffers and was
        /// dropped; `mana_process_rx_cqe()` counts it and reposts the buffer.
        RX_TRUNCATED = 4,
        /// CQE_TX_OKAY
        TX_OKAY = 32,
        /// CQE_TX_SA_DROP
        TX_SA_DROP = 33,
        /// CQE_TX_MTU_DROP: a frame (or a TSO segment) longer than the adapter MTU.
        TX_MTU_DROP = 34,
        /// CQE_TX_INVALID_OOB: bad WQE header or inline OOB.
        TX_INVALID_OOB = 35,
        /// CQE_TX_INVALID_ETH_TYPE
        TX_INVALID_ETH_TYPE = 36,
        /// CQE_TX_HDR_PROCESSING_ERROR: the frame could not be gathered or parsed.
        TX_HDR_PROCESSING_ERROR = 37,
        /// CQE_TX_VF_DISABLED
        TX_VF_DISABLED = 38,
        /// CQE_TX_VPORT_IDX_OUT_OF_RANGE: the OOB names a vPort offset the device did not give.
        TX_VPORT_IDX_OUT_OF_RANGE = 39,
        /// CQE_TX_VPORT_DISABLED
        TX_VPORT_DISABLED = 40,
        /// CQE_TX_VLAN_TAGGING_VIOLATION
        TX_VLAN_TAGGING_VIOLATION = 41,
    }
}

/// `enum mana_tx_pkt_format` (mana.h): `pkt_fmt` of the TX OOB.
pub const MANA_SHORT_PKT_FMT: u8 = 0;
/// `MANA_LONG_PKT_FMT`: the 24-byte [`TxOob`] (VLAN insertion, long vPort offset).
pub const MANA_LONG_PKT_FMT: u8 = 1;
/// `INLINE_OOB_SMALL_SIZE` (gdma.h): inline OOB of a short-format SQ WQE and of every RQ WQE.
pub const INLINE_OOB_SMALL_SIZE: u32 = 8;
/// `INLINE_OOB_LARGE_SIZE` (gdma.h): inline OOB of a long-format SQ WQE.
pub const INLINE_OOB_LARGE_SIZE: u32 = 24;
/// `MAX_TX_WQE_SGL_ENTRIES` (gdma.h): (512 - 16 - 8) / 16.
pub const MAX_TX_WQE_SGL_ENTRIES: u32 = 30;
/// `MAX_RX_WQE_SGL_ENTRIES` (gdma.h): (256 - 16) / 16.
pub const MAX_RX_WQE_SGL_ENTRIES: u32 = 15;
/// `MANA_HASH_KEY_SIZE` (mana.h): the Toeplitz key length in bytes.
pub const MANA_HASH_KEY_SIZE: usize = 40;
/// `MANA_INDIRECT_TABLE_MAX_SIZE` (mana.h): the largest indirection table.
pub const MANA_INDIRECT_TABLE_MAX_SIZE: u16 = 512;
/// `INVALID_MANA_HANDLE` (mana.h): "no object", e.g. a default RX object after close.
pub const INVALID_MANA_HANDLE: u64 = u64::MAX;

open_enum! {
    /// `enum TRI_STATE` (mana.h) as CONFIG_VPORT_RX's `rx_enable` / `rss_enable`
    /// carry it (a u32): -1 leaves the setting as it is.
    pub struct TriState(u32) {
        /// TRI_STATE_FALSE
        FALSE = 0,
        /// TRI_STATE_TRUE
        TRUE = 1,
        /// TRI_STATE_UNKNOWN (-1): unchanged.
        UNKNOWN = 0xFFFF_FFFF,
    }
}

/// `client_type` of `struct mana_cqe_header`: MANA_CQE_COMPLETION.
pub const MANA_CQE_COMPLETION: u8 = 1;

/// Response status: success.
pub const STATUS_OK: u32 = 0;
/// Response status `GDMA_STATUS_CMD_UNSUPPORTED` (gdma.h, 7.3), which 7.3
/// maps to -EOPNOTSUPP; 6.x treats every non-zero status as -EPROTO.
pub const STATUS_CMD_UNSUPPORTED: u32 = 0xFFFF_FFFF;
/// Response status for a request the device refuses (bad handle, id, size,
/// address). Any non-zero value fails the request in every driver version;
/// this one is our choice (NTSTATUS STATUS_INVALID_PARAMETER).
pub const STATUS_INVALID_PARAMETER: u32 = 0xC000_000D;
/// Response status for a request over the device's resource budget (more
/// queues than advertised, too many guest pages): NTSTATUS
/// STATUS_INSUFFICIENT_RESOURCES. Like every non-zero status other than
/// `GDMA_STATUS_MORE_ENTRIES` (0x105) it fails the command (-EPROTO); it is
/// not 0xFFFFFFFF, which 7.3 reads as "unsupported" (docs/mana-protocol.md §4.6).
pub const STATUS_INSUFFICIENT_RESOURCES: u32 = 0xC000_009A;

// ---------------------------------------------------------------------------
// Bitfields

/// `union smc_proto_hdr` (shm_channel.c): dword 7 of the SMC aperture.
#[bitfield(u32, repr = Le32, from = Le32::new, into = Le32::get)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SmcProtoHdr {
    /// 1 = ESTABLISH_HWC, 2 = DESTROY_HWC ([`SmcMsgType`]).
    #[bits(3)]
    pub msg_type: u8,
    /// Message version (0 in every driver).
    #[bits(3)]
    pub msg_version: u8,
    #[bits(1)]
    __: u8,
    /// 0 = request (driver), 1 = response (device).
    pub is_response: bool,
    /// 0 = success.
    pub status: u8,
    __: u8,
    /// Reset-VF request (always 0 in these drivers).
    pub reset_vf: bool,
    #[bits(6)]
    __: u8,
    /// Set while the device owns the aperture; the driver polls for 0.
    pub owner_is_pf: bool,
}

/// Bits 48-51 of the four HWC ring PFNs, one nibble each (ESTABLISH bytes 24-25).
#[bitfield(u16, repr = Le16, from = Le16::new, into = Le16::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SmcPfnHigh {
    /// EQ PFN bits 48-51.
    #[bits(4)]
    pub eq: u8,
    /// CQ PFN bits 48-51.
    #[bits(4)]
    pub cq: u8,
    /// RQ PFN bits 48-51.
    #[bits(4)]
    pub rq: u8,
    /// SQ PFN bits 48-51.
    #[bits(4)]
    pub sq: u8,
}

/// A 52-bit page-frame number assembled from its 48 low bits and 4 high bits.
#[bitfield(u64)]
pub struct Pfn52 {
    /// PFN bits 0-47 (bytes 0-5 of a ring field).
    #[bits(48)]
    pub low: u64,
    /// PFN bits 48-51 (one nibble of [`SmcPfnHigh`]).
    #[bits(4)]
    pub high: u8,
    #[bits(12)]
    __: u16,
}

/// `union gdma_eqe_info` (gdma.h): last dword of an EQE.
#[bitfield(u32, repr = Le32, from = Le32::new, into = Le32::get)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct EqeInfo {
    /// [`EqeType`].
    pub eqe_type: u8,
    __: u8,
    /// Client id.
    #[bits(2)]
    pub client_id: u8,
    #[bits(11)]
    __: u16,
    /// Owner bits: `(producer / entries) & 7`.
    #[bits(3)]
    pub owner_bits: u8,
}

/// `struct gdma_cqe.cqe_info` (gdma.h): last dword of a CQE.
#[bitfield(u32, repr = Le32, from = Le32::new, into = Le32::get)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CqeInfo {
    /// SQ or RQ id the completion belongs to.
    #[bits(24)]
    pub wq_num: u32,
    /// 1 = send queue completion.
    pub is_sq: bool,
    #[bits(4)]
    __: u8,
    /// Owner bits: `(producer / entries) & 7`.
    #[bits(3)]
    pub owner_bits: u8,
}

/// `union hwc_init_eq_id_db` (hw_channel.h): `details[0]` of HWC_INIT_EQ_ID_DB.
#[bitfield(u32)]
pub struct HwcInitEqIdDb {
    /// HWC EQ id.
    pub eq_id: u16,
    /// Doorbell page index for all HWC queues.
    pub doorbell: u16,
}

/// `union hwc_init_type_data` (hw_channel.h): `details[0]` of HWC_INIT_DATA.
#[bitfield(u32)]
pub struct HwcInitTypeData {
    /// The value.
    #[bits(24)]
    pub value: u32,
    /// [`HwcInitData`].
    pub data_type: u8,
}

/// `struct gdma_wqe` (gdma.h): the 8-byte header of every work-queue entry.
#[bitfield(u64, repr = Le64, from = Le64::new, into = Le64::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct WqeHeader {
    #[bits(24)]
    __: u32,
    /// GSO: size of SGE 0 when padded.
    pub last_vbytes: u8,
    /// Number of 16-byte SGEs after the inline OOB.
    pub num_sge: u8,
    /// Inline OOB size in dwords (SQ: 2 or 6; RQ: 2).
    #[bits(3)]
    pub inline_oob_size_div4: u8,
    /// The client OOB is in the SGL.
    pub client_oob_in_sgl: bool,
    #[bits(4)]
    __: u8,
    /// SQ: MSS for GSO.
    #[bits(14)]
    pub client_data_unit: u16,
    #[bits(2)]
    __: u8,
}

/// CQ doorbell (`union gdma_doorbell_entry.cq`, gdma.h), written at +0x800.
#[bitfield(u64)]
pub struct CqDoorbell {
    /// CQ id.
    #[bits(24)]
    pub id: u32,
    #[bits(8)]
    __: u8,
    /// Consumer head modulo `entries << 3`.
    #[bits(31)]
    pub tail_ptr: u32,
    /// Arm: notify on the next completion.
    pub arm: bool,
}

/// EQ doorbell (`union gdma_doorbell_entry.eq`, gdma.h), written at +0xFF8.
#[bitfield(u64)]
pub struct EqDoorbell {
    /// EQ id (16 bits only).
    pub id: u16,
    __: u16,
    /// Consumer head modulo `entries << 3`.
    #[bits(31)]
    pub tail_ptr: u32,
    /// Arm: raise the vector on the next event.
    pub arm: bool,
}

/// SQ / RQ doorbell (`union gdma_doorbell_entry.sq` / `.rq`), at +0x000 / +0x400.
#[bitfield(u64)]
pub struct WqDoorbell {
    /// SQ or RQ id.
    #[bits(24)]
    pub id: u32,
    /// RQ: always 0.
    pub wqe_cnt: u8,
    /// Producer in bytes (`head * 32`), not reduced modulo the ring size.
    pub tail_ptr: u32,
}

/// `struct mana_cqe_header` (mana.h): dword 0 of a MANA RX/TX completion OOB.
#[bitfield(u32, repr = Le32, from = Le32::new, into = Le32::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ManaCqeHeader {
    /// [`ManaCqeType`].
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

/// `NDIS_HASH_*` (mana.h): RSS hash types, as CONFIG_VPORT_RX (7.3
/// `rss_hash_types`) enables them and as an RX CQE's `rx_hashtype` reports one.
#[bitfield(u16, repr = Le16, from = Le16::new, into = Le16::get)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NdisHashTypes {
    /// NDIS_HASH_IPV4: source and destination address.
    pub ipv4: bool,
    /// NDIS_HASH_TCP_IPV4: addresses and TCP ports.
    pub tcp_ipv4: bool,
    /// NDIS_HASH_UDP_IPV4: addresses and UDP ports.
    pub udp_ipv4: bool,
    /// NDIS_HASH_IPV6: source and destination address.
    pub ipv6: bool,
    /// NDIS_HASH_TCP_IPV6: addresses and TCP ports.
    pub tcp_ipv6: bool,
    /// NDIS_HASH_UDP_IPV6: addresses and UDP ports.
    pub udp_ipv6: bool,
    /// NDIS_HASH_IPV6_EX (home address / routing header addresses; not implemented).
    pub ipv6_ex: bool,
    /// NDIS_HASH_TCP_IPV6_EX (not implemented).
    pub tcp_ipv6_ex: bool,
    /// NDIS_HASH_UDP_IPV6_EX (not implemented).
    pub udp_ipv6_ex: bool,
    #[bits(7)]
    __: u8,
}

// ---------------------------------------------------------------------------
// Shared-memory channel

/// A 48-bit little-endian PFN field of the ESTABLISH_HWC message.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(transparent)]
pub struct Pfn48(pub [u8; 6]);

impl Pfn48 {
    /// The 48-bit value.
    pub fn value(self) -> u64 {
        let mut wide = [0u8; 8];
        wide[..6].copy_from_slice(&self.0);
        u64::from_le_bytes(wide)
    }
}

/// The 32-byte SMC aperture as `mana_smc_setup_hwc()` fills it.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct SmcEstablishMsg {
    /// HWC EQ PFN bits 0-47.
    pub eq_pfn: Pfn48,
    /// HWC CQ PFN bits 0-47.
    pub cq_pfn: Pfn48,
    /// HWC RQ PFN bits 0-47.
    pub rq_pfn: Pfn48,
    /// HWC SQ PFN bits 0-47.
    pub sq_pfn: Pfn48,
    /// PFN bits 48-51.
    pub pfn_high: SmcPfnHigh,
    /// MSI-X index of the HWC EQ.
    pub msix_index: Le16,
    /// Protocol header (dword 7).
    pub hdr: SmcProtoHdr,
}

// ---------------------------------------------------------------------------
// Queue entries

/// `struct gdma_eqe` (gdma.h), 16 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Eqe {
    /// Event data (`GDMA_EVENT_DATA_SIZE` = 12 bytes).
    pub details: [Le32; 3],
    /// Type and owner bits.
    pub info: EqeInfo,
}

/// `struct gdma_cqe` (gdma.h), 64 bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Cqe {
    /// Completion data (`GDMA_COMP_DATA_SIZE` = 60 bytes).
    pub data: [Le32; 15],
    /// WQ number, is_sq, owner bits.
    pub info: CqeInfo,
}

/// `struct gdma_sge` (gdma.h), 16 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Sge {
    /// Guest DMA address.
    pub address: Le64,
    /// Memory key (ignored by this device).
    pub mem_key: Le32,
    /// Length in bytes.
    pub size: Le32,
}

/// `struct hwc_rx_oob` (hw_channel.h): `cqe_data` of an HWC completion, 32 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct HwcRxOob {
    /// type/eom/som/vendor_err (unused by the driver).
    pub dw0: Le32,
    /// src_virt_wq / src_vfid.
    pub dw1: Le32,
    /// Reserved.
    pub reserved2: Le32,
    /// Byte offset of the consumed RQ WQE in the RQ ring.
    pub wqe_offset: Le32,
    /// High half of a WQE address (unused).
    pub wqe_addr_high: Le32,
    /// client_data_unit.
    pub dw5: Le32,
    /// Response length in bytes.
    pub tx_oob_data_size: Le32,
    /// chunk_offset.
    pub dw7: Le32,
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

// ---------------------------------------------------------------------------
// Message headers

/// `struct gdma_msg_hdr` (gdma.h), 16 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GdmaMsgHdr {
    /// GDMA_STANDARD_HEADER_TYPE = 0.
    pub hdr_type: Le32,
    /// [`Command`].
    pub msg_type: Le32,
    /// Message version (V1..V5 = 1..5).
    pub msg_version: Le16,
    /// HWC message slot, echoed in the response.
    pub hwc_msg_id: Le16,
    /// Message size in bytes.
    pub msg_size: Le32,
}

/// `struct gdma_dev_id` (gdma.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DevId {
    /// [`DeviceType`].
    pub dev_type: Le16,
    /// Instance number.
    pub instance: Le16,
}

/// `struct gdma_req_hdr` (gdma.h), 40 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GdmaReqHdr {
    /// The request's own header.
    pub req: GdmaMsgHdr,
    /// The response the driver expects (code, version, size).
    pub resp: GdmaMsgHdr,
    /// Target device.
    pub dev_id: DevId,
    /// Echoed in the response.
    pub activity_id: Le32,
}

/// `struct gdma_resp_hdr` (gdma.h), 32 bytes; also `struct gdma_general_resp`.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GdmaRespHdr {
    /// Copy of the request's `resp` header, with `hwc_msg_id` echoed.
    pub response: GdmaMsgHdr,
    /// Echo of the request's `dev_id`.
    pub dev_id: DevId,
    /// Echo of the request's `activity_id`.
    pub activity_id: Le32,
    /// 0 = success.
    pub status: Le32,
    /// Reserved.
    pub reserved: Le32,
}

// ---------------------------------------------------------------------------
// GDMA requests and responses (gdma.h)

/// `struct gdma_verify_ver_resp`, 72 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct VerifyVerResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// Protocol version chosen.
    pub gdma_protocol_ver: Le64,
    /// Bit 3: HWC timeout reconfig (QUERY_HWC_TIMEOUT); 7.3 bit 15: DIM.
    pub pf_cap_flags1: Le64,
    /// Capability flags 2-4.
    pub pf_cap_flags: [Le64; 3],
}

/// `struct gdma_query_hwc_timeout_req`, 48 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryHwcTimeoutReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// Requested timeout in ms.
    pub timeout_ms: Le32,
    /// Reserved.
    pub reserved: Le32,
}

/// `struct gdma_query_hwc_timeout_resp`, 40 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryHwcTimeoutResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// HWC timeout in ms.
    pub timeout_ms: Le32,
    /// Reserved.
    pub reserved: Le32,
}

/// `struct gdma_query_max_resources_resp`, 72 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryMaxResourcesResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// Unused.
    pub status: Le32,
    /// Max SQs.
    pub max_sq: Le32,
    /// Max RQs.
    pub max_rq: Le32,
    /// Max CQs.
    pub max_cq: Le32,
    /// Max EQs.
    pub max_eq: Le32,
    /// Max doorbell pages.
    pub max_db: Le32,
    /// Max MSTs.
    pub max_mst: Le32,
    /// Max CQ moderation contexts.
    pub max_cq_mod_ctx: Le32,
    /// Max moderated CQs.
    pub max_mod_cq: Le32,
    /// Max MSI-X vectors the driver may use.
    pub max_msix: Le32,
}

/// Number of slots in `gdma_list_devices_resp.devs` (64).
pub const LIST_DEVICES_SLOTS: usize = 64;

/// `struct gdma_list_devices_resp`, 296 bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ListDevicesResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// Number of non-empty entries.
    pub num_of_devs: Le32,
    /// Reserved.
    pub reserved: Le32,
    /// Devices; empty slots are all-zero.
    pub devs: [DevId; LIST_DEVICES_SLOTS],
}

/// `struct gdma_register_device_resp`, 44 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct RegisterDeviceResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// Protection domain id.
    pub pdid: Le32,
    /// Memory key.
    pub gpa_mkey: Le32,
    /// Doorbell page index for the device's queues.
    pub db_id: Le32,
}

/// `struct gdma_generate_test_event_req`, 44 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GenerateTestEqeReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// EQ id.
    pub queue_index: Le32,
}

/// Fixed part of `struct gdma_create_dma_region_req`, 64 bytes; followed by
/// `page_addr_list_len` u64 page addresses.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CreateDmaRegionReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// Region length in bytes.
    pub length: Le64,
    /// Offset of the data in the first page (0).
    pub offset_in_page: Le32,
    /// GDMA_PAGE_TYPE_4K = 0.
    pub gdma_page_type: Le32,
    /// Total pages in the region.
    pub page_count: Le32,
    /// Pages listed in this request.
    pub page_addr_list_len: Le32,
}

/// `struct gdma_create_dma_region_resp`, 40 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CreateDmaRegionResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// Region handle (never 0 = GDMA_INVALID_DMA_REGION).
    pub dma_region_handle: Le64,
}

/// Fixed part of `struct gdma_dma_region_add_pages_req`, 56 bytes; followed
/// by `page_addr_list_len` u64 page addresses.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DmaRegionAddPagesReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// Region handle.
    pub dma_region_handle: Le64,
    /// Pages listed in this request.
    pub page_addr_list_len: Le32,
    /// Reserved.
    pub reserved3: Le32,
}

/// `struct gdma_destroy_dma_region_req`, 48 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DestroyDmaRegionReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// Region handle.
    pub dma_region_handle: Le64,
}

/// `struct gdma_create_queue_req`, 96 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CreateQueueReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// [`QueueType`].
    pub queue_type: Le32,
    /// Reserved.
    pub reserved1: Le32,
    /// Protection domain id.
    pub pdid: Le32,
    /// Doorbell page index (`doolbell_id` in gdma.h).
    pub doorbell_id: Le32,
    /// DMA region holding the ring.
    pub gdma_region: Le64,
    /// Reserved.
    pub reserved2: Le32,
    /// Ring size in bytes.
    pub queue_size: Le32,
    /// EQ throttle.
    pub log2_throttle_limit: Le32,
    /// MSI-X vector of the EQ.
    pub eq_pci_msix_index: Le32,
    /// CQ moderation context.
    pub cq_mod_ctx_id: Le32,
    /// Parent EQ of a CQ.
    pub cq_parent_eq_id: Le32,
    /// RQ flags.
    pub rq_flags: [u8; 4],
    /// Reserved.
    pub reserved3: Le32,
}

/// `struct gdma_create_queue_resp`, 36 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CreateQueueResp {
    /// Header.
    pub hdr: GdmaRespHdr,
    /// Queue id.
    pub queue_index: Le32,
}

/// `struct gdma_disable_queue_req`, 52 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DisableQueueReq {
    /// Header.
    pub hdr: GdmaReqHdr,
    /// [`QueueType`].
    pub queue_type: Le32,
    /// Queue id.
    pub queue_index: Le32,
    /// Always 1.
    pub alloc_res_id_on_creation: Le32,
}

// ---------------------------------------------------------------------------
// BNIC requests and responses (mana.h)

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
    /// [`QueueType`]: SQ or RQ.
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
    /// [`QueueType`].
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
    /// RSS on/off ([`TriState`]).
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
    assert!(size_of::<SmcEstablishMsg>() == 32);
    assert!(size_of::<Eqe>() == 16);
    assert!(size_of::<Cqe>() == 64);
    assert!(size_of::<Sge>() == 16);
    assert!(size_of::<HwcRxOob>() == 32);
    assert!(size_of::<ManaRxCompOob>() == 60);
    assert!(size_of::<ManaTxCompOob>() == 60);
    assert!(size_of::<RxCompPerPkt>() == 12);
    assert!(size_of::<RxCompFlags>() == 4);
    assert!(size_of::<TxShortOob>() == INLINE_OOB_SMALL_SIZE as usize);
    assert!(size_of::<TxLongOob>() == 16);
    assert!(size_of::<TxOob>() == INLINE_OOB_LARGE_SIZE as usize);
    assert!(size_of::<NdisHashTypes>() == 2);
    assert!(size_of::<WqeHeader>() == 8);
    assert!(size_of::<GdmaReqHdr>() == 40);
    assert!(size_of::<GdmaRespHdr>() == 32);
    assert!(size_of::<VerifyVerResp>() == 72);
    assert!(size_of::<QueryHwcTimeoutReq>() == 48);
    assert!(size_of::<QueryHwcTimeoutResp>() == 40);
    assert!(size_of::<QueryMaxResourcesResp>() == 72);
    assert!(size_of::<ListDevicesResp>() == 296);
    assert!(size_of::<RegisterDeviceResp>() == 44);
    assert!(size_of::<GenerateTestEqeReq>() == 44);
    assert!(size_of::<CreateDmaRegionReq>() == 64);
    assert!(size_of::<CreateDmaRegionResp>() == 40);
    assert!(size_of::<DmaRegionAddPagesReq>() == 56);
    assert!(size_of::<DestroyDmaRegionReq>() == 48);
    assert!(size_of::<CreateQueueReq>() == 96);
    assert!(size_of::<CreateQueueResp>() == 36);
    assert!(size_of::<DisableQueueReq>() == 52);
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
