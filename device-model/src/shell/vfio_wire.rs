//! The vfio-user wire format as the device's front ([`crate::shell::front`]) checks
//! it: the 16-byte message header, the size of every command's fixed part,
//! and the verdict on one client message before the `vfio_user` crate sees it.
//!
//! Layouts from the vfio-user specification (QEMU docs/interop/vfio-user.rst)
//! and QEMU's client (hw/vfio-user/protocol.h): little-endian, naturally
//! aligned, a header then the command's fields. The `vfio_user` 0.1.7 server
//! reads exactly the fixed part of each command (plus the payload of VERSION
//! and REGION_WRITE) and trusts the rest of the header: a VERSION without a
//! NUL-terminated payload panics it (`CString::from_vec_with_nul(..).unwrap()`),
//! a VERSION shorter than its fixed part underflows, a REGION_READ count
//! allocates up to 4 GiB, a message longer than what it reads leaves the
//! rest to be read as the next header, and so does a REGION_WRITE to a
//! region that does not exist (it refuses it before reading the data). Each
//! of these desynchronises or kills its server. [`check`] turns each into a
//! refusal with an errno before it reaches it.
#![forbid(unsafe_code)]

use crate::defs::{Le16, Le32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Size of the message header.
pub const HEADER_SIZE: usize = 16;
/// Largest region access (REGION_READ / REGION_WRITE `count`) and largest
/// message the front reads: the `max_data_xfer_size` the `vfio_user` crate
/// announces in its VERSION reply (1 MiB, QEMU's default too).
pub const MAX_DATA: u32 = 1 << 20;
/// Largest message accepted: [`MAX_DATA`] plus the largest fixed part.
pub const MAX_MESSAGE: u32 = MAX_DATA + 64;
/// Largest VERSION payload (the capabilities JSON with its NUL).
pub const MAX_VERSION_JSON: usize = 4096;

/// Header flag: this message is a reply.
pub const FLAG_REPLY: u32 = 0x1;
/// Header flag: the sender wants no reply (QEMU's posted writes).
pub const FLAG_NO_REPLY: u32 = 0x10;
/// Header flag: the reply reports an error, `error` holds an errno.
pub const FLAG_ERROR: u32 = 0x20;

/// `VFIO_USER_VERSION`.
pub const VERSION: u16 = 1;
/// `VFIO_USER_DMA_MAP`.
pub const DMA_MAP: u16 = 2;
/// `VFIO_USER_DMA_UNMAP`.
pub const DMA_UNMAP: u16 = 3;
/// `VFIO_USER_DEVICE_GET_INFO`.
pub const DEVICE_GET_INFO: u16 = 4;
/// `VFIO_USER_DEVICE_GET_REGION_INFO`.
pub const DEVICE_GET_REGION_INFO: u16 = 5;
/// `VFIO_USER_DEVICE_GET_IRQ_INFO`.
pub const DEVICE_GET_IRQ_INFO: u16 = 7;
/// `VFIO_USER_DEVICE_SET_IRQS`.
pub const DEVICE_SET_IRQS: u16 = 8;
/// `VFIO_USER_REGION_READ`.
pub const REGION_READ: u16 = 9;
/// `VFIO_USER_REGION_WRITE`.
pub const REGION_WRITE: u16 = 10;
/// `VFIO_USER_DEVICE_RESET`.
pub const DEVICE_RESET: u16 = 13;

/// `VFIOUserHdr`: every message starts with it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Header {
    /// Chosen by the sender; a reply carries the request's.
    pub message_id: Le16,
    /// The command.
    pub command: Le16,
    /// Size of the whole message, header included, in bytes.
    pub message_size: Le32,
    /// [`FLAG_REPLY`], [`FLAG_NO_REPLY`], [`FLAG_ERROR`].
    pub flags: Le32,
    /// In an error reply: a positive errno.
    pub error: Le32,
}

impl Header {
    /// A request header for `command` of `message_size` bytes.
    pub fn request(message_id: u16, command: u16, message_size: u32, flags: u32) -> Self {
        Self {
            message_id: Le16::new(message_id),
            command: Le16::new(command),
            message_size: Le32::new(message_size),
            flags: Le32::new(flags),
            error: Le32::new(0),
        }
    }

    /// The error reply to `self` carrying `errno`.
    pub fn error_reply(&self, errno: i32) -> Self {
        Self {
            message_id: self.message_id,
            command: self.command,
            message_size: Le32::new(HEADER_SIZE as u32),
            flags: Le32::new(FLAG_REPLY | FLAG_ERROR),
            error: Le32::new(errno.unsigned_abs()),
        }
    }

    /// Whether the sender wants no reply.
    pub fn no_reply(&self) -> bool {
        self.flags.get() & FLAG_NO_REPLY != 0
    }

    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        self.flags.get() & FLAG_ERROR != 0
    }
}

/// `VFIOUserRegionRW` without its data: REGION_READ, and REGION_WRITE before `count` bytes.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct RegionAccess {
    /// Header.
    pub header: Header,
    /// Byte offset in the region.
    pub offset: zerocopy::little_endian::U64,
    /// VFIO region index.
    pub region: Le32,
    /// Bytes to read or write.
    pub count: Le32,
}

/// `VFIOUserDMAMap`.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DmaMap {
    /// Header.
    pub header: Header,
    /// Size of the fields after the header (32).
    pub argsz: Le32,
    /// `VFIO_DMA_MAP_FLAG_READ` (1) / `_WRITE` (2).
    pub flags: Le32,
    /// Offset in the fd sent with the message.
    pub offset: zerocopy::little_endian::U64,
    /// Guest-physical address.
    pub iova: zerocopy::little_endian::U64,
    /// Length in bytes.
    pub size: zerocopy::little_endian::U64,
}

/// `VFIOUserDMAUnmap`.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DmaUnmap {
    /// Header.
    pub header: Header,
    /// Size of the fields after the header (24).
    pub argsz: Le32,
    /// `VFIO_DMA_UNMAP_FLAG_ALL` (4) or 0.
    pub flags: Le32,
    /// Guest-physical address.
    pub iova: zerocopy::little_endian::U64,
    /// Length in bytes.
    pub size: zerocopy::little_endian::U64,
}

/// `VFIOUserIRQSet`; eventfds travel as SCM_RIGHTS with the message.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct SetIrqs {
    /// Header.
    pub header: Header,
    /// Size of the fields after the header (20).
    pub argsz: Le32,
    /// `VFIO_IRQ_SET_DATA_*` | `VFIO_IRQ_SET_ACTION_*`.
    pub flags: Le32,
    /// VFIO IRQ index.
    pub index: Le32,
    /// First vector.
    pub start: Le32,
    /// Number of vectors.
    pub count: Le32,
}

/// Bytes of the fixed part of `command` (header included), and whether the
/// command must be answered (a NO_REPLY request of it is refused, as the
/// `vfio_user` crate does); `None` for a command the device does not serve.
pub fn fixed_size(command: u16) -> Option<(usize, bool)> {
    match command {
        // Header + major + minor; the capabilities JSON follows.
        VERSION => Some((HEADER_SIZE + 4, true)),
        DMA_MAP => Some((size_of::<DmaMap>(), false)),
        DMA_UNMAP => Some((size_of::<DmaUnmap>(), false)),
        // Header + argsz, flags, num_regions, num_irqs.
        DEVICE_GET_INFO => Some((HEADER_SIZE + 16, true)),
        // Header + struct vfio_region_info (32 bytes).
        DEVICE_GET_REGION_INFO => Some((HEADER_SIZE + 32, true)),
        // Header + argsz, flags, index, count.
        DEVICE_GET_IRQ_INFO => Some((HEADER_SIZE + 16, true)),
        DEVICE_SET_IRQS => Some((size_of::<SetIrqs>(), false)),
        REGION_READ => Some((size_of::<RegionAccess>(), true)),
        REGION_WRITE => Some((size_of::<RegionAccess>(), false)),
        DEVICE_RESET => Some((HEADER_SIZE, false)),
        _ => None,
    }
}

/// What the front does with one client message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Hand these bytes (the message as the crate reads it: trailing bytes
    /// beyond the fixed part dropped, `message_size` adjusted, NO_REPLY
    /// cleared so that the crate always answers) to the `vfio_user` server.
    Forward(Vec<u8>),
    /// Answer with this errno (unless NO_REPLY) without forwarding.
    Refuse {
        /// A positive errno.
        errno: i32,
        /// Why, for the log.
        reason: String,
    },
}

fn refuse(errno: i32, reason: impl Into<String>) -> Verdict {
    Verdict::Refuse { errno, reason: reason.into() }
}

/// Judges one whole client message: `header`, then `body` (the
/// `message_size - 16` bytes after it), for a server with `regions` regions.
pub fn check(header: &Header, body: &[u8], regions: u32) -> Verdict {
    let command = header.command.get();
    let Some((fixed, needs_reply)) = fixed_size(command) else {
        return refuse(libc::ENOTSUP, format!("command {command} is not served"));
    };
    if needs_reply && header.no_reply() {
        return refuse(libc::EINVAL, format!("command {command} with NO_REPLY"));
    }
    let size = HEADER_SIZE + body.len();
    if size < fixed {
        return refuse(libc::EINVAL, format!("command {command}: {size} bytes, its fixed part is {fixed}"));
    }
    let keep = match command {
        VERSION => {
            let json = &body[fixed - HEADER_SIZE..];
            match json.iter().position(|&b| b == 0) {
                _ if json.len() > MAX_VERSION_JSON => {
                    return refuse(libc::E2BIG, format!("VERSION payload of {} bytes", json.len()))
                }
                Some(nul) if nul + 1 == json.len() && nul > 0 => size,
                _ => return refuse(libc::EINVAL, "VERSION payload is not one NUL-terminated string"),
            }
        }
        REGION_READ | REGION_WRITE => {
            let mut fixed_part = header.as_bytes().to_vec();
            fixed_part.extend_from_slice(&body[..fixed - HEADER_SIZE]);
            let Ok((access, _)) = RegionAccess::read_from_prefix(&fixed_part) else {
                return refuse(libc::EINVAL, "unreadable region access");
            };
            let count = access.count.get();
            if access.region.get() >= regions {
                // The crate would refuse it without reading a REGION_WRITE's data.
                return refuse(libc::EINVAL, format!("region {} does not exist", access.region.get()));
            }
            if count > MAX_DATA {
                return refuse(libc::E2BIG, format!("region access of {count} bytes"));
            }
            if command == REGION_READ {
                fixed
            } else if size < fixed + count as usize {
                return refuse(libc::EINVAL, format!("REGION_WRITE of {count} bytes carries {}", size - fixed));
            } else {
                fixed + count as usize
            }
        }
        _ => fixed,
    };
    let mut forward = Vec::with_capacity(keep);
    let mut hdr = *header;
    hdr.message_size = Le32::new(keep as u32);
    hdr.flags = Le32::new(header.flags.get() & !FLAG_NO_REPLY);
    forward.extend_from_slice(hdr.as_bytes());
    forward.extend_from_slice(&body[..keep - HEADER_SIZE]);
    Verdict::Forward(forward)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(command: u16, body: &[u8], flags: u32) -> (Header, Vec<u8>) {
        let size = (HEADER_SIZE + body.len()) as u32;
        (Header::request(7, command, size, flags), body.to_vec())
    }

    fn errno(verdict: &Verdict) -> Option<i32> {
        match verdict {
            Verdict::Refuse { errno, .. } => Some(*errno),
            Verdict::Forward(_) => None,
        }
    }

    #[test]
    fn a_version_without_a_nul_terminated_payload_is_refused_before_the_crate_unwraps() {
        for body in [&[0u8, 0, 0, 0][..], &[0, 0, 0, 0, b'{'], &[0, 0, 0, 0, b'{', 0, b'}', 0]] {
            let (hdr, body) = message(VERSION, body, 0);
            assert_eq!(errno(&check(&hdr, &body, 9)), Some(libc::EINVAL), "{body:?}");
        }
        // Shorter than major + minor: the crate would underflow.
        let (hdr, body) = message(VERSION, &[0, 0], 0);
        assert_eq!(errno(&check(&hdr, &body, 9)), Some(libc::EINVAL));
        let (hdr, body) = message(VERSION, b"\0\0\0\0{}\0", 0);
        assert!(matches!(check(&hdr, &body, 9), Verdict::Forward(b) if b.len() == 23));
    }

    #[test]
    fn a_region_write_to_a_region_that_does_not_exist_is_refused_before_its_data_desyncs_the_crate() {
        // Found by the vfio_wire fuzz target: the crate refuses it before
        // reading its data, which it then reads as the next header.
        let access = RegionAccess { region: Le32::new(0x00ff_0007), count: Le32::new(2), ..RegionAccess::default() };
        let mut body = access.as_bytes()[HEADER_SIZE..].to_vec();
        body.extend_from_slice(&[6, 0]);
        let (hdr, body) = message(REGION_WRITE, &body, 0);
        assert_eq!(errno(&check(&hdr, &body, 9)), Some(libc::EINVAL));
        let (hdr, body) = message(REGION_READ, &access.as_bytes()[HEADER_SIZE..], 0);
        assert_eq!(errno(&check(&hdr, &body, 9)), Some(libc::EINVAL));
    }

    #[test]
    fn region_accesses_larger_than_the_transfer_limit_are_refused() {
        let mut access = RegionAccess { count: Le32::new(u32::MAX), ..RegionAccess::default() };
        let body = &access.as_bytes()[HEADER_SIZE..];
        let (hdr, body) = message(REGION_READ, body, 0);
        assert_eq!(errno(&check(&hdr, &body, 9)), Some(libc::E2BIG));
        // A write whose data is shorter than its count.
        access.count = Le32::new(8);
        let mut short = access.as_bytes()[HEADER_SIZE..].to_vec();
        short.extend_from_slice(&[1, 2, 3, 4]);
        let (hdr, body) = message(REGION_WRITE, &short, FLAG_NO_REPLY);
        assert_eq!(errno(&check(&hdr, &body, 9)), Some(libc::EINVAL));
    }

    #[test]
    fn trailing_bytes_are_dropped_and_no_reply_is_cleared_for_the_crate() {
        let mut body = vec![0u8; size_of::<SetIrqs>() - HEADER_SIZE + 12];
        body[0] = 20;
        let (hdr, body) = message(DEVICE_SET_IRQS, &body, FLAG_NO_REPLY);
        let Verdict::Forward(bytes) = check(&hdr, &body, 9) else { panic!("forwarded") };
        assert_eq!(bytes.len(), size_of::<SetIrqs>());
        let (fwd, _) = Header::read_from_prefix(&bytes).expect("header");
        assert_eq!(fwd.message_size.get() as usize, size_of::<SetIrqs>());
        assert!(!fwd.no_reply());
    }

    #[test]
    fn unknown_commands_short_messages_and_unanswerable_no_reply_requests_are_refused() {
        let (hdr, body) = message(11, &[0; 16], 0);
        assert_eq!(errno(&check(&hdr, &body, 9)), Some(libc::ENOTSUP), "DMA_READ");
        let (hdr, body) = message(DMA_MAP, &[0; 8], 0);
        assert_eq!(errno(&check(&hdr, &body, 9)), Some(libc::EINVAL), "short DMA_MAP");
        let (hdr, body) = message(DEVICE_GET_INFO, &[0; 16], FLAG_NO_REPLY);
        assert_eq!(errno(&check(&hdr, &body, 9)), Some(libc::EINVAL));
        let (hdr, body) = message(DEVICE_RESET, &[], 0);
        assert!(matches!(check(&hdr, &body, 9), Verdict::Forward(b) if b.len() == HEADER_SIZE));
    }
}
