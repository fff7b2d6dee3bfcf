//! Shared-memory channel (SMC): the 32-byte aperture through which the driver
//! hands the HWC rings to the device.
//!
//! Models the device side of drivers/net/ethernet/microsoft/mana/shm_channel.c
//! (`mana_smc_setup_hwc()`, `mana_smc_teardown_hwc()`, Linux 6.1-7.3): the
//! driver writes 8 dwords, the write of dword 7 (`smc_proto_hdr`) triggers the
//! device, and the driver polls dword 7 until `owner_is_pf` (bit 31) is clear,
//! then checks type, version, direction = 1 and status = 0.
#![forbid(unsafe_code)]

use crate::defs::{Pfn52, SmcEstablishMsg, SmcMsgType, SmcProtoHdr};
use vm_memory::GuestAddress;
use zerocopy::{FromBytes, IntoBytes};

/// Size of the aperture in bytes.
pub const APERTURE_SIZE: usize = 32;
/// Byte offset of the protocol header (dword 7), whose write triggers the device.
const HDR_OFFSET: usize = 28;
/// HWC rings are addressed by 4 KiB page-frame numbers.
const HWC_PAGE_SIZE: u64 = 4096;

/// A request decoded from a write of dword 7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmcRequest {
    /// SMC_MSG_TYPE_ESTABLISH_HWC: the four 4 KiB HWC rings and the HWC EQ's vector.
    Establish(HwcRings),
    /// SMC_MSG_TYPE_DESTROY_HWC.
    Destroy,
    /// Anything else (unknown type, non-zero version, a response written by the driver).
    Invalid {
        /// The message type the driver wrote.
        msg_type: u8,
    },
}

/// Guest addresses of the HWC rings from an ESTABLISH_HWC message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HwcRings {
    /// HWC EQ ring (4096 bytes).
    pub eq: GuestAddress,
    /// HWC CQ ring (4096 bytes), shared by SQ and RQ.
    pub cq: GuestAddress,
    /// HWC RQ ring (4096 bytes).
    pub rq: GuestAddress,
    /// HWC SQ ring (4096 bytes).
    pub sq: GuestAddress,
    /// MSI-X index of the HWC EQ (0 in every driver version).
    pub msix_index: u16,
}

/// The aperture's contents. Reads return what was last written, except that
/// dword 7 holds the device's response after a trigger.
#[derive(Debug, Default, Clone)]
pub struct Smc {
    bytes: [u8; APERTURE_SIZE],
}

impl Smc {
    /// Reads `data.len()` bytes at aperture offset `offset`; out of range bytes read as 0xFF.
    pub fn read(&self, offset: u64, data: &mut [u8]) {
        for (i, byte) in data.iter_mut().enumerate() {
            let at = usize::try_from(offset).ok().and_then(|o| o.checked_add(i));
            *byte = at.and_then(|at| self.bytes.get(at)).copied().unwrap_or(0xFF);
        }
    }

    /// Stores a driver write. Returns the decoded request when the write
    /// covers the protocol header (dword 7); the caller must then call
    /// [`Smc::respond`].
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Option<SmcRequest> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(data.len())?;
        let dst = self.bytes.get_mut(start..end)?;
        dst.copy_from_slice(data);
        if end <= HDR_OFFSET {
            return None;
        }
        Some(self.decode())
    }

    fn decode(&self) -> SmcRequest {
        let Ok(msg) = SmcEstablishMsg::read_from_bytes(&self.bytes[..]) else {
            return SmcRequest::Invalid { msg_type: 0 };
        };
        let hdr = msg.hdr;
        let msg_type = hdr.msg_type();
        if hdr.is_response() || hdr.msg_version() != 0 {
            return SmcRequest::Invalid { msg_type };
        }
        match SmcMsgType(msg_type) {
            SmcMsgType::ESTABLISH_HWC => {
                let high = msg.pfn_high;
                let addr = |low: u64, high: u8| {
                    let pfn = Pfn52::new().with_low(low).with_high(high).into_bits();
                    GuestAddress(pfn.saturating_mul(HWC_PAGE_SIZE))
                };
                SmcRequest::Establish(HwcRings {
                    eq: addr(msg.eq_pfn.value(), high.eq()),
                    cq: addr(msg.cq_pfn.value(), high.cq()),
                    rq: addr(msg.rq_pfn.value(), high.rq()),
                    sq: addr(msg.sq_pfn.value(), high.sq()),
                    msix_index: msg.msix_index.get(),
                })
            }
            SmcMsgType::DESTROY_HWC => SmcRequest::Destroy,
            _ => SmcRequest::Invalid { msg_type },
        }
    }

    /// Writes the response header into dword 7: same type, version 0,
    /// direction = response, `status`, owner bit clear (0x81 / 0x82 on success).
    pub fn respond(&mut self, msg_type: u8, status: u8) {
        let hdr = SmcProtoHdr::new().with_msg_type(msg_type).with_is_response(true).with_status(status);
        self.bytes[HDR_OFFSET..].copy_from_slice(hdr.as_bytes());
    }

    /// The current value of dword 7.
    pub fn header(&self) -> u32 {
        let mut dword = [0u8; 4];
        self.read(HDR_OFFSET as u64, &mut dword);
        u32::from_le_bytes(dword)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_dwords(smc: &mut Smc, msg: &[u8; 32]) -> Option<SmcRequest> {
        let mut last = None;
        for (i, dword) in msg.chunks(4).enumerate() {
            last = smc.write(i as u64 * 4, dword);
            if i < 7 {
                assert_eq!(last, None, "only the dword-7 write triggers");
            }
        }
        last
    }

    #[test]
    fn establish_decodes_pfns_with_high_nibbles_and_vector() {
        // Layout from mana_smc_setup_hwc(): 4 × 48-bit PFNs, then 4 nibbles
        // of PFN bits 48-51, then the u16 MSI-X index, then the header.
        let mut msg = [0u8; 32];
        msg[0..6].copy_from_slice(&0x1_2345u64.to_le_bytes()[..6]); // EQ
        msg[6..12].copy_from_slice(&0x2_0000u64.to_le_bytes()[..6]); // CQ
        msg[12..18].copy_from_slice(&0x3u64.to_le_bytes()[..6]); // RQ
        msg[18..24].copy_from_slice(&0x4u64.to_le_bytes()[..6]); // SQ
        msg[24..26].copy_from_slice(&0x1000u16.to_le_bytes()); // SQ nibble = 1
        msg[26..28].copy_from_slice(&0u16.to_le_bytes());
        msg[28..32].copy_from_slice(&1u32.to_le_bytes()); // type 1, request
        let mut smc = Smc::default();
        let req = write_dwords(&mut smc, &msg);
        assert_eq!(
            req,
            Some(SmcRequest::Establish(HwcRings {
                eq: GuestAddress(0x1_2345 * 4096),
                cq: GuestAddress(0x2_0000 * 4096),
                rq: GuestAddress(0x3 * 4096),
                sq: GuestAddress(((1u64 << 48) + 4) * 4096),
                msix_index: 0,
            }))
        );
        smc.respond(1, 0);
        // shm_channel.c expects type 1, direction 1, status 0, owner clear.
        assert_eq!(smc.header(), 0x81);
    }

    #[test]
    fn destroy_answers_0x82() {
        let mut smc = Smc::default();
        assert_eq!(smc.write(28, &2u32.to_le_bytes()), Some(SmcRequest::Destroy));
        smc.respond(2, 0);
        assert_eq!(smc.header(), 0x82);
    }

    #[test]
    fn unknown_type_and_out_of_range_writes_are_not_requests() {
        let mut smc = Smc::default();
        assert_eq!(smc.write(28, &5u32.to_le_bytes()), Some(SmcRequest::Invalid { msg_type: 5 }));
        assert_eq!(smc.write(30, &[0; 4]), None);
        assert_eq!(smc.write(u64::MAX, &[0; 4]), None);
    }
}
