//! One place that routes an HWC request to its handler by command code:
//! GDMA commands (below 0x10000, [`crate::device::gdma`]), BNIC commands (0x2xxxx,
//! [`crate::device::bnic`]); codes from the IB range are refused as unsupported.
//! Commands that create queues or DMA regions pass [`crate::device::budget`] first.
#![forbid(unsafe_code)]

use crate::defs::{Command, GdmaReqHdr, STATUS_INVALID_PARAMETER, STATUS_OK};
use crate::device::framing::{frame, parse, CommandError};
use crate::device::resources::Ctx;
use crate::device::{bnic, budget, gdma};

/// Result of one request.
#[derive(Debug)]
pub struct Outcome {
    /// The command code (0 when the header was unreadable).
    pub command: Command,
    /// The response bytes to deliver.
    pub response: Vec<u8>,
    /// The failure, if any.
    pub error: Option<CommandError>,
}

/// The framed response refusing `request` with `status`, without running it
/// (an injected error status, [`crate::inject`]).
pub fn refuse(request: &[u8], status: u32) -> Outcome {
    let hdr = parse::<GdmaReqHdr>(request).unwrap_or_default();
    let command = Command(hdr.req.msg_type.get());
    Outcome { command, response: frame(&hdr, status, Vec::new()), error: Some(CommandError::Injected(status)) }
}

/// Handles one HWC request and returns the framed response.
pub fn dispatch(ctx: &mut Ctx<'_>, request: &[u8]) -> Outcome {
    let hdr = match parse::<GdmaReqHdr>(request) {
        Ok(hdr) => hdr,
        Err(error) => {
            let response = frame(&GdmaReqHdr::default(), STATUS_INVALID_PARAMETER, Vec::new());
            return Outcome { command: Command(0), response, error: Some(error) };
        }
    };
    let command = Command(hdr.req.msg_type.get());
    let result = if command.0 >= Command::IB_RANGE_START {
        Err(CommandError::Unsupported(command))
    } else if let Err(error) = budget::admit(ctx.res, ctx.config, command, request) {
        Err(error)
    } else if command.0 >= Command::BNIC_RANGE_START {
        bnic::handle(ctx, command, &hdr, request)
    } else {
        gdma::handle(ctx, command, &hdr, request)
    };
    match result {
        Ok(body) => Outcome { command, response: frame(&hdr, STATUS_OK, body), error: None },
        Err(error) => Outcome { command, response: frame(&hdr, error.status(), Vec::new()), error: Some(error) },
    }
}
