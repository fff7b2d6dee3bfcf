//! Transmit: Ethernet SQ WQEs → frames → the packet backend → TX CQEs.
//!
//! Models the device side of `mana_start_xmit()` and `mana_poll_tx_cq()`
//! (drivers/net/ethernet/microsoft/mana/mana_en.c) and
//! `mana_gd_post_work_request()` (gdma_main.c), Linux 6.1–7.3. A WQE is the
//! 8-byte `gdma_wqe` header, the inline OOB (`mana_tx_short_oob`, 8 bytes,
//! or `mana_tx_oob`, 24 bytes) and 1–30 `gdma_sge`s whose concatenation is
//! the frame. Every SGE must carry the MANA device's `gpa_mkey` (from
//! GDMA_REGISTER_DEVICE) and lie in guest memory; the device reads it only
//! through vm-memory's checked accessors.
//!
//! Each WQE completes with exactly one CQE on the SQ's CQ, in order (unless
//! the OOB sets `supress_txcqe_gen`): CQE_TX_OKAY, or the error the driver
//! counts as `tx_cqe_err` and still frees the skb for:
//! - CQE_TX_INVALID_OOB: inline OOB not 8/24 bytes, unknown `pkt_fmt`, a
//!   long format without the long OOB, `vcq_num` not the SQ's CQ,
//!   `vsq_frame` not the SQ id's bits 10-23, no SGE or more than 30;
//! - CQE_TX_VPORT_IDX_OUT_OF_RANGE: a vPort offset other than the 0 that
//!   MANA_CONFIG_VPORT_TX gave;
//! - CQE_TX_HDR_PROCESSING_ERROR: an SGE with another memory key, of zero
//!   length or outside guest memory, more than [`MAX_GATHER`] bytes in all, a
//!   frame shorter than an Ethernet header, a checksum or TSO request the
//!   frame's headers do not allow (mana.h has no closer code);
//! - CQE_TX_MTU_DROP: a frame (or TSO segment) longer than 9000 bytes after
//!   its Ethernet header and VLAN tags.
//!
//! Offloads: IPv4 header, TCP and UDP checksums ([`super::checksum`]), TSO
//! ([`super::tso`], `client_data_unit` = MSS) and 802.1Q tag insertion
//! (`mana_tx_long_oob.inject_vlan_pri_tag`).
//!
//! A WQE whose size cannot be trusted (larger than `GDMA_MAX_SQE_SIZE` or
//! past the producer) or a ring outside guest memory breaks the queue: the
//! rest of the posted entries are skipped without completions.
#![forbid(unsafe_code)]

use super::backend::PacketBackend;
use super::checksum::{insert_ipv4, insert_transport, ChecksumError};
use super::frame::{Be16, VlanTag, VlanTci, ETH_P_8021Q, IPPROTO_TCP, IPPROTO_UDP};
use super::headers::{parse, Headers, ETH_HLEN};
use super::tso::{segment, TsoError};
use super::{Env, Fault, MAX_FRAME, TX_VPORT_OFFSET};
use crate::defs::{
    ManaCqeHeader, ManaCqeType, ManaTxCompOob, Sge, TxLongOob, TxShortOob, INLINE_OOB_LARGE_SIZE,
    INLINE_OOB_SMALL_SIZE, MANA_CQE_COMPLETION, MANA_LONG_PKT_FMT, MANA_SHORT_PKT_FMT, MAX_TX_WQE_SGL_ENTRIES,
};
use crate::queues::{completion, Mem, QueueError, WqeSlot, MAX_SQE_SIZE};
use mana_device_api::snapshot::WqKind;
use vm_memory::{Bytes, GuestAddress};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

/// Most bytes one TX WQE may gather: a 64 KiB GSO payload plus headers.
pub const MAX_GATHER: usize = 0x1_0000 + 0x400;

/// Why a TX WQE failed; each maps to the CQE type the guest gets.
#[derive(Debug, thiserror::Error)]
pub enum TxError {
    /// The header or inline OOB is malformed (CQE_TX_INVALID_OOB).
    #[error("SQ {sq}: bad TX OOB at byte {offset:#x}: {reason}")]
    BadOob {
        /// SQ id.
        sq: u32,
        /// WQE byte offset in the ring.
        offset: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// The OOB names a vPort offset the device did not give (CQE_TX_VPORT_IDX_OUT_OF_RANGE).
    #[error("SQ {sq}: vPort offset {vp_offset} (MANA_CONFIG_VPORT_TX gave {TX_VPORT_OFFSET})")]
    WrongVport {
        /// SQ id.
        sq: u32,
        /// The offset the OOB carries.
        vp_offset: u16,
    },
    /// An SGE cannot be gathered (CQE_TX_HDR_PROCESSING_ERROR).
    #[error("SQ {sq}: SGE {index} ({addr:#x}+{len}, key {mem_key:#x}): {reason}")]
    BadSge {
        /// SQ id.
        sq: u32,
        /// SGE index in the WQE.
        index: usize,
        /// Guest address.
        addr: u64,
        /// Length.
        len: u32,
        /// Memory key.
        mem_key: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// The gathered frame cannot be sent as the OOB asks (CQE_TX_HDR_PROCESSING_ERROR).
    #[error("SQ {sq}: frame of {len} bytes: {reason}")]
    BadFrame {
        /// SQ id.
        sq: u32,
        /// Frame length.
        len: usize,
        /// What is wrong.
        reason: String,
    },
    /// A frame or segment longer than the MTU (CQE_TX_MTU_DROP).
    #[error("SQ {sq}: frame of {len} bytes exceeds the MTU")]
    TooLong {
        /// SQ id.
        sq: u32,
        /// Frame length.
        len: usize,
    },
    /// The ring itself is unusable; the posted entries were skipped.
    #[error("SQ {sq}: {error}; the posted entries were skipped")]
    Ring {
        /// SQ id.
        sq: u32,
        /// The queue error.
        error: QueueError,
    },
}

impl TxError {
    /// The CQE type the guest gets for this failure.
    pub fn cqe_type(&self) -> ManaCqeType {
        match self {
            Self::BadOob { .. } | Self::Ring { .. } => ManaCqeType::TX_INVALID_OOB,
            Self::WrongVport { .. } => ManaCqeType::TX_VPORT_IDX_OUT_OF_RANGE,
            Self::BadSge { .. } | Self::BadFrame { .. } => ManaCqeType::TX_HDR_PROCESSING_ERROR,
            Self::TooLong { .. } => ManaCqeType::TX_MTU_DROP,
        }
    }
}

/// Buffers reused across WQEs (no allocation per frame).
#[derive(Debug)]
pub struct TxScratch {
    wqe: [u8; MAX_SQE_SIZE as usize],
    frame: Vec<u8>,
    segment: Vec<u8>,
}

impl Default for TxScratch {
    fn default() -> Self {
        Self {
            wqe: [0; MAX_SQE_SIZE as usize],
            frame: Vec::with_capacity(MAX_GATHER),
            segment: Vec::with_capacity(MAX_FRAME + 64),
        }
    }
}

/// How much TX work one [`service`] call (or one `Engine::run_tx`) may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxBudget {
    /// WQEs consumed at most.
    pub wqes: u32,
    /// No WQE is started once this many frames went to the backend (a WQE
    /// is never split).
    pub frames: u32,
}

/// The result of one [`service`] call.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TxRun {
    /// WQEs consumed (completed, with or without a CQE).
    pub completed: u32,
    /// Frames handed to the backend (a TSO WQE makes one per segment).
    pub frames: u32,
    /// Entries remain posted (the budget ran out).
    pub more: bool,
}

/// Consumes WQEs of Ethernet SQ `sq_id` within `budget` (no WQE is started
/// once `budget.frames` frames went out), handing frames to `backend` and
/// posting one CQE per WQE; guest errors go to `faults`.
/// A completion that cannot be written (CQ ring outside guest memory,
/// backlog overrun) ends the run with a [`Fault::Completion`].
pub fn service(
    env: &mut Env<'_>,
    backend: &mut dyn PacketBackend,
    scratch: &mut TxScratch,
    sq_id: u32,
    budget: TxBudget,
    faults: &mut Vec<Fault>,
) -> TxRun {
    let mut run = TxRun::default();
    while run.completed < budget.wqes && run.frames < budget.frames {
        let Some(sq) = env.queues.sqs.get_mut(&sq_id) else {
            return run;
        };
        let cq_id = sq.cq_id;
        let slot = match sq.peek(env.mem, &mut scratch.wqe) {
            Ok(Some(slot)) => slot,
            Ok(None) => return run,
            Err(source) => {
                sq.skip_to_producer();
                faults.push(TxError::Ring { sq: sq_id, error: source }.into());
                return run;
            }
        };
        sq.consume(slot.size);
        run.completed += 1;
        let suppress = short_oob(&scratch.wqe, &slot).is_some_and(|o| o.supress_txcqe_gen());
        let cqe_type = match transmit(env, backend, scratch, sq_id, cq_id, &slot, &mut run.frames) {
            Ok(()) => ManaCqeType::TX_OKAY,
            Err(err) => {
                env.dropped(WqKind::Sq, sq_id, true);
                let cqe_type = err.cqe_type();
                faults.push(err.into());
                cqe_type
            }
        };
        if suppress {
            continue;
        }
        let comp = ManaTxCompOob {
            cqe_hdr: ManaCqeHeader::new().with_cqe_type(cqe_type.0).with_client_type(MANA_CQE_COMPLETION),
            ..ManaTxCompOob::new_zeroed()
        };
        let cqe = completion(comp.as_bytes(), sq_id, true);
        if let Err(err) = env.queues.post_cqe(env.mem, env.irq, cq_id, cqe) {
            faults.push(err.into());
            break;
        }
    }
    run.more = env.queues.sqs.get(&sq_id).is_some_and(|sq| sq.available() > 0);
    run
}

fn short_oob(wqe: &[u8], slot: &WqeSlot) -> Option<TxShortOob> {
    TxShortOob::read_from_prefix(slot.oob(wqe)).ok().map(|(oob, _)| oob)
}

/// What the OOB asks for, validated.
struct Request {
    oob: TxShortOob,
    vlan: Option<VlanTci>,
    mss: usize,
}

fn validate(wqe: &[u8], slot: &WqeSlot, sq_id: u32, cq_id: u32) -> Result<Request, TxError> {
    let bad = |reason| TxError::BadOob { sq: sq_id, offset: slot.offset, reason };
    let oob_bytes = slot.oob(wqe);
    let oob_len = oob_bytes.len() as u32;
    if oob_len != INLINE_OOB_SMALL_SIZE && oob_len != INLINE_OOB_LARGE_SIZE {
        return Err(bad("inline OOB is neither 8 nor 24 bytes"));
    }
    let (oob, rest) = TxShortOob::read_from_prefix(oob_bytes).map_err(|_| bad("short OOB"))?;
    let long = TxLongOob::read_from_prefix(rest).ok().map(|(long, _)| long);
    let long = match oob.pkt_fmt() {
        MANA_SHORT_PKT_FMT => None,
        MANA_LONG_PKT_FMT => Some(long.ok_or(bad("long format without the long OOB"))?),
        _ => return Err(bad("unknown pkt_fmt")),
    };
    if oob.vcq_num() != cq_id {
        return Err(bad("vcq_num is not the SQ's CQ"));
    }
    if u32::from(oob.vsq_frame()) != (sq_id >> 10) & 0x3FFF {
        return Err(bad("vsq_frame is not the SQ id"));
    }
    let vp_offset = match long {
        Some(long) => long.offsets.long_vp_offset(),
        None => u16::from(oob.short_vp_offset()),
    };
    if vp_offset != TX_VPORT_OFFSET {
        return Err(TxError::WrongVport { sq: sq_id, vp_offset });
    }
    let num_sge = u32::from(slot.header.num_sge());
    if num_sge == 0 || num_sge > MAX_TX_WQE_SGL_ENTRIES {
        return Err(bad("SGE count outside 1..=30"));
    }
    let vlan = long
        .filter(|l| l.vlan.inject_vlan_pri_tag())
        .map(|l| VlanTci::new().with_vid(l.vlan.vlan_id()).with_dei(l.vlan.dei()).with_pcp(l.vlan.pcp()));
    Ok(Request { oob, vlan, mss: usize::from(slot.header.client_data_unit()) })
}

/// Gathers the SGEs of the WQE in `wqe` into `frame`.
fn gather(
    mem: &Mem,
    wqe: &[u8],
    slot: &WqeSlot,
    sq_id: u32,
    mem_key: Option<u32>,
    frame: &mut Vec<u8>,
) -> Result<(), TxError> {
    frame.clear();
    for (index, bytes) in slot.sgl(wqe).chunks_exact(size_of::<Sge>()).enumerate() {
        let Ok(sge) = Sge::read_from_bytes(bytes) else {
            continue;
        };
        let (addr, len, key) = (sge.address.get(), sge.size.get(), sge.mem_key.get());
        let bad = |reason| TxError::BadSge { sq: sq_id, index, addr, len, mem_key: key, reason };
        if Some(key) != mem_key {
            return Err(bad("memory key is not the device's gpa_mkey"));
        }
        if len == 0 {
            return Err(bad("zero length"));
        }
        let start = frame.len();
        let end = start
            .checked_add(len as usize)
            .filter(|&end| end <= MAX_GATHER)
            .ok_or(bad("the WQE gathers more than 65 KiB"))?;
        frame.resize(end, 0);
        mem.read_slice(&mut frame[start..end], GuestAddress(addr)).map_err(|_| bad("outside guest memory"))?;
    }
    Ok(())
}

/// Gathers, offloads and hands one WQE's frame(s) to the backend, counting
/// each in `frames`.
fn transmit(
    env: &mut Env<'_>,
    backend: &mut dyn PacketBackend,
    scratch: &mut TxScratch,
    sq_id: u32,
    cq_id: u32,
    slot: &WqeSlot,
    frames: &mut u32,
) -> Result<(), TxError> {
    let request = validate(&scratch.wqe, slot, sq_id, cq_id)?;
    gather(env.mem, &scratch.wqe, slot, sq_id, env.mem_key, &mut scratch.frame)?;
    let frame = &mut scratch.frame;
    let bad_frame = |len: usize, reason: String| TxError::BadFrame { sq: sq_id, len, reason };
    if frame.len() < ETH_HLEN {
        return Err(bad_frame(frame.len(), "shorter than an Ethernet header".into()));
    }
    let headers = parse(frame);
    let max_frame = headers.l3_offset + MAX_FRAME - ETH_HLEN;
    let vport = env.datapath.queue(WqKind::Sq, sq_id).map_or(0, |q| q.vport);
    let mut send = |out: &mut Vec<u8>| {
        *frames += 1;
        if let Some(tci) = request.vlan {
            insert_vlan(out, tci);
        }
        match backend.transmit(vport, out) {
            Ok(()) => {
                env.moved(WqKind::Sq, sq_id, out);
                if env.flows.enabled() {
                    env.flows.record_tx(out, &parse(out), sq_id);
                }
            }
            Err(_) => env.dropped(WqKind::Sq, sq_id, false),
        }
        Ok::<(), std::convert::Infallible>(())
    };
    if request.mss > 0 && request.oob.comp_tcp_csum() {
        let len = frame.len();
        return match segment(frame, &headers, request.mss, max_frame, &mut scratch.segment, send) {
            Ok(_) => Ok(()),
            Err(TsoError::TooLong(len)) => Err(TxError::TooLong { sq: sq_id, len }),
            Err(err) => Err(bad_frame(len, err.to_string())),
        };
    }
    if frame.len() > max_frame {
        return Err(TxError::TooLong { sq: sq_id, len: frame.len() });
    }
    checksums(frame, &headers, &request.oob).map_err(|err| bad_frame(frame.len(), err.to_string()))?;
    let _ = send(frame);
    Ok(())
}

/// The checksums a non-TSO OOB asks for.
fn checksums(frame: &mut [u8], headers: &Headers, oob: &TxShortOob) -> Result<(), ChecksumError> {
    if oob.comp_iphdr_csum() {
        insert_ipv4(frame, headers)?;
    }
    if oob.comp_tcp_csum() {
        insert_transport(frame, headers, IPPROTO_TCP)?;
    }
    if oob.comp_udp_csum() {
        insert_transport(frame, headers, IPPROTO_UDP)?;
    }
    Ok(())
}

/// Inserts an 802.1Q tag after the MAC addresses.
fn insert_vlan(frame: &mut Vec<u8>, tci: VlanTci) {
    let tag = VlanTag { tpid: Be16::new(ETH_P_8021Q), tci };
    let at = 2 * 6;
    frame.splice(at..at, tag.as_bytes().iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vlan_tag_goes_after_the_mac_addresses() {
        let mut f: Vec<u8> = (0..20).collect();
        insert_vlan(&mut f, VlanTci::new().with_vid(0x123).with_pcp(5));
        assert_eq!(&f[..12], &(0..12).collect::<Vec<u8>>()[..]);
        assert_eq!(&f[12..16], &[0x81, 0x00, 0xA1, 0x23]);
        assert_eq!(&f[16..], &(12..20).collect::<Vec<u8>>()[..]);
    }

    #[test]
    fn every_error_maps_to_a_cqe_type_the_driver_knows() {
        let err = TxError::TooLong { sq: 1, len: 9000 };
        assert_eq!(err.cqe_type(), ManaCqeType::TX_MTU_DROP);
        let err = TxError::WrongVport { sq: 1, vp_offset: 3 };
        assert_eq!(err.cqe_type(), ManaCqeType::TX_VPORT_IDX_OUT_OF_RANGE);
    }
}
