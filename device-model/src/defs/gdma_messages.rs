//! GDMA message headers and the GDMA requests and responses (gdma.h).
#![forbid(unsafe_code)]

use super::{Le16, Le32, Le64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `struct gdma_msg_hdr` (gdma.h), 16 bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GdmaMsgHdr {
    /// GDMA_STANDARD_HEADER_TYPE = 0.
    pub hdr_type: Le32,
    /// [`Command`](super::Command).
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
    /// [`DeviceType`](super::DeviceType).
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
    /// [`QueueType`](super::QueueType).
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
    /// [`QueueType`](super::QueueType).
    pub queue_type: Le32,
    /// Queue id.
    pub queue_index: Le32,
    /// Always 1.
    pub alloc_res_id_on_creation: Le32,
}

const _: () = {
    use std::mem::size_of;
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
};
