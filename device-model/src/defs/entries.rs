//! Queue entries and doorbells (gdma.h, hw_channel.h): EQEs, CQEs, SGEs, WQE
//! headers, the HWC's init EQE payloads and RX OOB, the doorbell values.
#![forbid(unsafe_code)]

use super::{Le32, Le64};
use bitfield_struct::bitfield;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `INLINE_OOB_SMALL_SIZE` (gdma.h): inline OOB of a short-format SQ WQE and of every RQ WQE.
pub const INLINE_OOB_SMALL_SIZE: u32 = 8;
/// `INLINE_OOB_LARGE_SIZE` (gdma.h): inline OOB of a long-format SQ WQE.
pub const INLINE_OOB_LARGE_SIZE: u32 = 24;
/// `MAX_TX_WQE_SGL_ENTRIES` (gdma.h): (512 - 16 - 8) / 16.
pub const MAX_TX_WQE_SGL_ENTRIES: u32 = 30;
/// `MAX_RX_WQE_SGL_ENTRIES` (gdma.h): (256 - 16) / 16.
pub const MAX_RX_WQE_SGL_ENTRIES: u32 = 15;

/// `union gdma_eqe_info` (gdma.h): last dword of an EQE.
#[bitfield(u32, repr = Le32, from = Le32::new, into = Le32::get)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct EqeInfo {
    /// [`EqeType`](super::EqeType).
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
    /// [`HwcInitData`](super::HwcInitData).
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

const _: () = {
    use std::mem::size_of;
    assert!(size_of::<Eqe>() == 16);
    assert!(size_of::<Cqe>() == 64);
    assert!(size_of::<Sge>() == 16);
    assert!(size_of::<HwcRxOob>() == 32);
    assert!(size_of::<WqeHeader>() == 8);
};
