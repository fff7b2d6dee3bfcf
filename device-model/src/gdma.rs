//! GDMA commands (codes < 0x10000) and the request/response framing shared
//! with BNIC.
//!
//! Models the device side of drivers/net/ethernet/microsoft/mana/gdma_main.c
//! (Linux 6.1-7.3): `mana_gd_verify_vf_version()`,
//! `mana_gd_query_max_resources()`, `mana_gd_detect_devices()`,
//! `mana_gd_register_device()` / `mana_gd_deregister_device()`,
//! `mana_gd_create_dma_region()` / `mana_gd_destroy_dma_region()`,
//! `mana_gd_create_hw_eq()`, `mana_gd_disable_queue()`, `mana_gd_test_eq()`
//! and `mana_gd_query_hwc_timeout()`.
//!
//! Response framing (every version): the response header is a copy of the
//! request's `resp` header with `hwc_msg_id` echoed, plus the request's
//! `dev_id` and `activity_id`; a success is `min(resp.msg_size, 4096)` bytes
//! (at least the 32-byte header), a failure is the 32-byte header alone with a
//! non-zero status.
#![forbid(unsafe_code)]

use crate::bnic;
use crate::defs::{
    Command, CreateDmaRegionReq, CreateDmaRegionResp, CreateQueueReq, CreateQueueResp,
    DestroyDmaRegionReq, DevId, DisableQueueReq, DmaRegionAddPagesReq, EqeType, GdmaReqHdr,
    GdmaRespHdr, GenerateTestEqeReq, Le32, Le64, ListDevicesResp, QueryHwcTimeoutReq,
    QueryHwcTimeoutResp, QueryMaxResourcesResp, QueueType, RegisterDeviceResp, VerifyVerResp,
    STATUS_CMD_UNSUPPORTED, STATUS_INVALID_PARAMETER, STATUS_OK,
};
use crate::dma_region::RegionError;
use crate::hwc::MAX_MESSAGE_SIZE;
use crate::queues::{event, free_id, EventQueue, Owner, Producer, QueueError, Ring};
use crate::resources::{Ctx, Registration, DOORBELL_PAGE, LISTED_DEVICES, MAX_EQ_ID};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// `GDMA_PROTOCOL_V1`, the only protocol version the drivers offer.
const GDMA_PROTOCOL_V1: u64 = 1;
/// Default HWC timeout (`HW_CHANNEL_WAIT_RESOURCE_TIMEOUT_MS`).
const HWC_TIMEOUT_MS: u32 = 30_000;

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
}

impl CommandError {
    /// The response status the driver sees.
    pub fn status(&self) -> u32 {
        match self {
            Self::Unsupported(_) => STATUS_CMD_UNSUPPORTED,
            _ => STATUS_INVALID_PARAMETER,
        }
    }
}

/// Shorthand for an invalid field.
pub fn invalid(what: &'static str, value: impl Into<u64>) -> CommandError {
    CommandError::Invalid {
        what,
        value: value.into(),
    }
}

/// Reads a `T` from the start of `request`.
///
/// # Errors
/// [`CommandError::Truncated`] if the request is shorter than `T`.
pub fn parse<T: FromBytes + KnownLayout + Immutable>(request: &[u8]) -> Result<T, CommandError> {
    T::read_from_prefix(request)
        .map(|(value, _)| value)
        .map_err(|_| CommandError::Truncated {
            len: request.len(),
            need: size_of::<T>(),
        })
}

/// Reads `count` u64 values at byte `offset` of `request`.
///
/// # Errors
/// [`CommandError::Truncated`] if they do not fit.
pub fn u64_list(request: &[u8], offset: usize, count: usize) -> Result<Vec<u64>, CommandError> {
    let need = count
        .checked_mul(8)
        .and_then(|n| n.checked_add(offset))
        .unwrap_or(usize::MAX);
    let bytes = request.get(offset..need).ok_or(CommandError::Truncated {
        len: request.len(),
        need,
    })?;
    let list = <[Le64]>::ref_from_bytes(bytes).map_err(|_| CommandError::Truncated {
        len: request.len(),
        need,
    })?;
    Ok(list.iter().map(|v| v.get()).collect())
}

/// The response body of a handler: the full response struct, header zeroed.
pub fn body<T: IntoBytes + Immutable>(resp: &T) -> Vec<u8> {
    resp.as_bytes().to_vec()
}

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

/// Handles one HWC request and returns the framed response.
pub fn dispatch(ctx: &mut Ctx<'_>, request: &[u8]) -> Outcome {
    let hdr = match parse::<GdmaReqHdr>(request) {
        Ok(hdr) => hdr,
        Err(error) => {
            let response = frame(&GdmaReqHdr::default(), STATUS_INVALID_PARAMETER, Vec::new());
            return Outcome {
                command: Command(0),
                response,
                error: Some(error),
            };
        }
    };
    let command = Command(hdr.req.msg_type.get());
    let result = if command.0 >= Command::IB_RANGE_START {
        Err(CommandError::Unsupported(command))
    } else if command.0 >= Command::BNIC_RANGE_START {
        bnic::handle(ctx, command, &hdr, request)
    } else {
        handle(ctx, command, &hdr, request)
    };
    match result {
        Ok(body) => Outcome {
            command,
            response: frame(&hdr, STATUS_OK, body),
            error: None,
        },
        Err(error) => Outcome {
            command,
            response: frame(&hdr, error.status(), Vec::new()),
            error: Some(error),
        },
    }
}

fn dev_key(dev_id: DevId) -> (u16, u16) {
    (dev_id.dev_type.get(), dev_id.instance.get())
}

fn handle(
    ctx: &mut Ctx<'_>,
    command: Command,
    hdr: &GdmaReqHdr,
    request: &[u8],
) -> Result<Vec<u8>, CommandError> {
    match command {
        Command::VERIFY_VF_DRIVER_VERSION => {
            let mut resp = VerifyVerResp::new_zeroed();
            resp.gdma_protocol_ver = Le64::new(GDMA_PROTOCOL_V1);
            // pf_cap_flags1 = 0: no QUERY_HWC_TIMEOUT (bit 3), no DIM (7.3 bit 15).
            Ok(body(&resp))
        }
        Command::QUERY_MAX_RESOURCES => {
            let queues = Le32::new(ctx.config.max_queues);
            let resp = QueryMaxResourcesResp {
                max_sq: queues,
                max_rq: queues,
                max_cq: queues,
                max_eq: queues,
                max_db: Le32::new(1),
                max_mst: Le32::new(1),
                max_cq_mod_ctx: Le32::new(queues.get()),
                max_mod_cq: Le32::new(queues.get()),
                max_msix: Le32::new(ctx.config.max_msix),
                ..QueryMaxResourcesResp::new_zeroed()
            };
            Ok(body(&resp))
        }
        Command::LIST_DEVICES => {
            let mut resp = ListDevicesResp::new_zeroed();
            resp.num_of_devs = Le32::new(LISTED_DEVICES.len() as u32);
            resp.devs[..LISTED_DEVICES.len()].copy_from_slice(&LISTED_DEVICES);
            Ok(body(&resp))
        }
        Command::REGISTER_DEVICE => register_device(ctx, hdr.dev_id),
        Command::DEREGISTER_DEVICE => {
            let key = dev_key(hdr.dev_id);
            ctx.res
                .registered
                .remove(&key)
                .ok_or(invalid("unregistered dev_id type", key.0))?;
            Ok(body(&GdmaRespHdr::new_zeroed()))
        }
        Command::GENERATE_TEST_EQE => {
            let req: GenerateTestEqeReq = parse(request)?;
            let eq_id = req.queue_index.get();
            if !ctx.res.queues.eqs.contains_key(&eq_id) {
                return Err(invalid("queue_index", eq_id));
            }
            ctx.res
                .queues
                .post_eqe(ctx.mem, ctx.irq, eq_id, event(EqeType::TEST_EVENT, 0))?;
            Ok(body(&GdmaRespHdr::new_zeroed()))
        }
        Command::CREATE_QUEUE => create_queue(ctx, hdr, request),
        Command::DISABLE_QUEUE => {
            let req: DisableQueueReq = parse(request)?;
            let eq_id = req.queue_index.get();
            if QueueType(req.queue_type.get()) != QueueType::EQ {
                return Err(invalid("queue type", req.queue_type.get()));
            }
            if ctx.res.hwc_eq == Some(eq_id) || ctx.res.queues.eqs.remove(&eq_id).is_none() {
                return Err(invalid("queue_index", eq_id));
            }
            Ok(body(&GdmaRespHdr::new_zeroed()))
        }
        Command::CREATE_DMA_REGION => {
            let req: CreateDmaRegionReq = parse(request)?;
            let listed = req.page_addr_list_len.get();
            let pages = u64_list(request, size_of::<CreateDmaRegionReq>(), listed as usize)?;
            let handle = ctx.res.regions.create(
                ctx.mem,
                req.length.get(),
                req.offset_in_page.get(),
                req.gdma_page_type.get(),
                req.page_count.get(),
                pages,
            )?;
            let mut resp = CreateDmaRegionResp::new_zeroed();
            resp.dma_region_handle = Le64::new(handle);
            Ok(body(&resp))
        }
        Command::DMA_REGION_ADD_PAGES => {
            let req: DmaRegionAddPagesReq = parse(request)?;
            let listed = req.page_addr_list_len.get() as usize;
            let pages = u64_list(request, size_of::<DmaRegionAddPagesReq>(), listed)?;
            ctx.res
                .regions
                .add_pages(ctx.mem, req.dma_region_handle.get(), pages)?;
            Ok(body(&GdmaRespHdr::new_zeroed()))
        }
        Command::DESTROY_DMA_REGION => {
            let req: DestroyDmaRegionReq = parse(request)?;
            ctx.res.regions.destroy(req.dma_region_handle.get())?;
            Ok(body(&GdmaRespHdr::new_zeroed()))
        }
        Command::QUERY_HWC_TIMEOUT => {
            let req: QueryHwcTimeoutReq = parse(request)?;
            let mut resp = QueryHwcTimeoutResp::new_zeroed();
            let asked = req.timeout_ms.get();
            resp.timeout_ms = Le32::new(if asked == 0 { HWC_TIMEOUT_MS } else { asked });
            Ok(body(&resp))
        }
        other => Err(CommandError::Unsupported(other)),
    }
}

fn register_device(ctx: &mut Ctx<'_>, dev_id: DevId) -> Result<Vec<u8>, CommandError> {
    if !LISTED_DEVICES.contains(&dev_id) {
        return Err(invalid("dev_id type", dev_id.dev_type.get()));
    }
    let (dev_type, instance) = dev_key(dev_id);
    let registration = Registration {
        // Any non-INVALID_PDID value; distinct per device to ease debugging.
        pdid: 0x100 + u32::from(dev_type),
        gpa_mkey: 0x1000 + u32::from(dev_type),
        db_id: DOORBELL_PAGE,
    };
    ctx.res
        .registered
        .insert((dev_type, instance), registration);
    let resp = RegisterDeviceResp {
        hdr: GdmaRespHdr::new_zeroed(),
        pdid: Le32::new(registration.pdid),
        gpa_mkey: Le32::new(registration.gpa_mkey),
        db_id: Le32::new(registration.db_id),
    };
    Ok(body(&resp))
}

fn create_queue(
    ctx: &mut Ctx<'_>,
    hdr: &GdmaReqHdr,
    request: &[u8],
) -> Result<Vec<u8>, CommandError> {
    let req: CreateQueueReq = parse(request)?;
    if !ctx.res.registered.contains_key(&dev_key(hdr.dev_id)) {
        return Err(invalid(
            "unregistered dev_id type",
            hdr.dev_id.dev_type.get(),
        ));
    }
    if QueueType(req.queue_type.get()) != QueueType::EQ {
        return Err(invalid("queue type", req.queue_type.get()));
    }
    let msix = req.eq_pci_msix_index.get();
    if msix >= u32::from(ctx.config.msix_table_size) {
        return Err(invalid("eq_pci_msix_index", msix));
    }
    let size = u64::from(req.queue_size.get());
    let handle = req.gdma_region.get();
    let region = ctx.res.regions.check(handle, size)?;
    let eq_id = free_id(&ctx.res.queues.eqs, MAX_EQ_ID).ok_or(invalid("EQ count", MAX_EQ_ID))?;
    let ring = Producer::new(eq_id, Ring::from_pages(&region.pages, size)?)?;
    ctx.res.regions.destroy(handle)?;
    let owner = Owner {
        dev_type: hdr.dev_id.dev_type.get(),
        instance: hdr.dev_id.instance.get(),
    };
    ctx.res.queues.eqs.insert(
        eq_id,
        EventQueue {
            ring,
            msix_index: msix as u16,
            owner,
        },
    );
    let mut resp = CreateQueueResp::new_zeroed();
    resp.queue_index = Le32::new(eq_id);
    Ok(body(&resp))
}
