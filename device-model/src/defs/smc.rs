//! The shared-memory channel's wire formats (shm_channel.c / shm_channel.h):
//! dword 7 of the SMC aperture and the ESTABLISH_HWC message.
#![forbid(unsafe_code)]

use super::{Le16, Le32};
use bitfield_struct::bitfield;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `union smc_proto_hdr` (shm_channel.c): dword 7 of the SMC aperture.
#[bitfield(u32, repr = Le32, from = Le32::new, into = Le32::get)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SmcProtoHdr {
    /// 1 = ESTABLISH_HWC, 2 = DESTROY_HWC ([`SmcMsgType`](super::SmcMsgType)).
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

const _: () = {
    use std::mem::size_of;
    assert!(size_of::<SmcEstablishMsg>() == 32);
};
