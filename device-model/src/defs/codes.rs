//! Open enums and status codes of the GDMA, HWC and BNIC protocols. The
//! two that cross the device's boundary, [`Command`] and [`DeviceType`],
//! are the api crate's ([`mana_device_api::codes`]) and re-exported here.
#![forbid(unsafe_code)]

pub use mana_device_api::codes::{Command, DeviceType};
use mana_device_api::open_enum;

open_enum! {
    /// `enum gdma_eqe_type` (gdma.h): the `type` field of an EQE.
    pub struct EqeType(u8) {
        /// GDMA_EQE_COMPLETION: `details[0]` bits 0-23 = CQ id.
        COMPLETION = 3,
        /// GDMA_EQE_TEST_EVENT, answer to GDMA_GENERATE_TEST_EQE.
        TEST_EVENT = 64,
        /// GDMA_EQE_HWC_INIT_EQ_ID_DB: `details[0]` = [`HwcInitEqIdDb`](super::HwcInitEqIdDb).
        HWC_INIT_EQ_ID_DB = 129,
        /// GDMA_EQE_HWC_INIT_DATA: `details[0]` = [`HwcInitTypeData`](super::HwcInitTypeData).
        HWC_INIT_DATA = 130,
        /// GDMA_EQE_HWC_INIT_DONE.
        HWC_INIT_DONE = 131,
        /// GDMA_EQE_HWC_SOC_RECONFIG_DATA: `details[0]` = [`HwcInitTypeData`](super::HwcInitTypeData)
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
