//! The request/response framing every HWC command shares, GDMA and BNIC
//! alike: reading a request's structs, turning a failure into a response
//! status, and framing the response around a handler's body.
//!
//! Response framing (every version): the response header is a copy of the
//! request's `resp` header with `hwc_msg_id` echoed, plus the request's
//! `dev_id` and `activity_id`; a success is `min(resp.msg_size, 4096)` bytes
//! (at least the 32-byte header), a failure is the 32-byte header alone with a
//! non-zero status (drivers/net/ethernet/microsoft/mana/hw_channel.c
//! `mana_hwc_send_request()` and include/net/mana/gdma.h `struct gdma_resp_hdr`).
#![forbid(unsafe_code)]

use crate::defs::{
    Command, GdmaReqHdr, GdmaRespHdr, Le32, Le64, STATUS_CMD_UNSUPPORTED, STATUS_INSUFFICIENT_RESOURCES,
    STATUS_INVALID_PARAMETER, STATUS_OK,
};
use crate::device::hwc::MAX_MESSAGE_SIZE;
use crate::queues::dma_region::RegionError;
use crate::queues::QueueError;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Why a command failed; turned into a response status.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The device does not implement this command.
    #[error("command {0:?} is not supported")]
    Unsupported(Command),
    /// The request is shorter than its struct.
    #[error("request of {len} bytes is shorter than the {need} bytes it needs")]
    Truncated {
        /// Bytes received.
        len: usize,
        /// Bytes needed.
        need: usize,
    },
    /// A field holds a value the device refuses.
    #[error("{what} {value:#x} is invalid")]
    Invalid {
        /// Field name.
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// A DMA-region problem.
    #[error(transparent)]
    Region(#[from] RegionError),
    /// A queue problem.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// The command would create more than the device's budget allows
    /// ([`crate::device::budget`]).
    #[error("{what}: {have} of at most {limit} in use")]
    Exhausted {
        /// What ran out.
        what: &'static str,
        /// How many there are.
        have: u64,
        /// The limit.
        limit: u64,
    },
    /// The device was told to fail this command ([`crate::inject`]).
    #[error("injected error status {0:#x}")]
    Injected(u32),
}

impl CommandError {
    /// The response status the driver sees.
    pub fn status(&self) -> u32 {
        match self {
            Self::Unsupported(_) => STATUS_CMD_UNSUPPORTED,
            Self::Injected(status) => *status,
            Self::Exhausted { .. } | Self::Region(RegionError::Exhausted(_)) => STATUS_INSUFFICIENT_RESOURCES,
            _ => STATUS_INVALID_PARAMETER,
        }
    }
}

/// Shorthand for an invalid field.
pub fn invalid(what: &'static str, value: impl Into<u64>) -> CommandError {
    CommandError::Invalid { what, value: value.into() }
}

/// Reads a `T` from the start of `request`.
///
/// # Errors
/// [`CommandError::Truncated`] if the request is shorter than `T`.
pub fn parse<T: FromBytes + KnownLayout + Immutable>(request: &[u8]) -> Result<T, CommandError> {
    T::read_from_prefix(request)
        .map(|(value, _)| value)
        .map_err(|_| CommandError::Truncated { len: request.len(), need: size_of::<T>() })
}

/// Reads `count` u64 values at byte `offset` of `request`.
///
/// # Errors
/// [`CommandError::Truncated`] if they do not fit.
pub fn u64_list(request: &[u8], offset: usize, count: usize) -> Result<Vec<u64>, CommandError> {
    let need = count.checked_mul(8).and_then(|n| n.checked_add(offset)).unwrap_or(usize::MAX);
    let bytes = request.get(offset..need).ok_or(CommandError::Truncated { len: request.len(), need })?;
    let list = <[Le64]>::ref_from_bytes(bytes).map_err(|_| CommandError::Truncated { len: request.len(), need })?;
    Ok(list.iter().map(|v| v.get()).collect())
}

/// The response body of a handler: the full response struct, header zeroed.
pub fn body<T: IntoBytes + Immutable>(resp: &T) -> Vec<u8> {
    resp.as_bytes().to_vec()
}

/// Builds the response bytes for `req` with `status` around `body`.
pub fn frame(req: &GdmaReqHdr, status: u32, mut body: Vec<u8>) -> Vec<u8> {
    let header_len = size_of::<GdmaRespHdr>();
    let len = if status == STATUS_OK {
        (req.resp.msg_size.get() as usize).clamp(header_len, MAX_MESSAGE_SIZE)
    } else {
        header_len
    };
    body.resize(len, 0);
    let mut hdr = GdmaRespHdr {
        response: req.resp,
        dev_id: req.dev_id,
        activity_id: req.activity_id,
        status: Le32::new(status),
        reserved: Le32::new(0),
    };
    hdr.response.hwc_msg_id = req.req.hwc_msg_id;
    body[..header_len].copy_from_slice(hdr.as_bytes());
    body
}
