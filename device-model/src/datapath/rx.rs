//! Receive: a frame from the backend → RSS → the next WQE of the chosen RQ
//! → an RX CQE on that RQ's CQ.
//!
//! Models the device side of `mana_post_pkt_rxq()`, `mana_process_rx_cqe()`
//! and `mana_rx_skb()` (drivers/net/ethernet/microsoft/mana/mana_en.c, Linux
//! 6.1–7.3). The driver posts RQ WQEs of one SGE (`mtu + ETH_HLEN` bytes,
//! its `gpa_mkey`); the device consumes them strictly in order and writes
//! the frame across the WQE's SGEs (up to 15). The CQE's
//! `mana_rxcomp_oob` carries `ppi[0].pkt_len`, the RSS hash and its type,
//! and the checksum results the device verified (`rx_iphdr_csum_succeed`
//! etc.; the driver then marks TCP/UDP `CHECKSUM_UNNECESSARY`). VLAN tags
//! stay in the frame (`rx_vlantag_present` is never set).
//!
//! Drops, as hardware does them:
//! - no RQ chosen (vPort RX off, no default RQ, the RQ destroyed) or a
//!   frame shorter than an Ethernet header: dropped, counted in
//!   [`super::Totals::rx_unsteered`], and those for a vPort never
//!   configured or with RX off (the driver asked not to receive) also in
//!   [`super::Totals::rx_port_off`];
//! - the RQ has no WQE posted: dropped, counted on the RQ and in
//!   [`super::Totals::rx_no_wqe`];
//! - the WQE's buffers cannot take the frame (too small, an SGE with another
//!   memory key, of zero length, outside guest memory, overlapping another
//!   SGE of the WQE, an inline OOB that is not 8 bytes, no SGE or more than
//!   15): the WQE is consumed with CQE_RX_TRUNCATED, which the driver counts
//!   as `rx_dropped` and answers by reposting the buffer;
//! - a WQE whose size cannot be trusted, or a ring outside guest memory:
//!   the posted entries are skipped.
#![forbid(unsafe_code)]

use super::checksum::verify;
use super::headers::{parse, Headers, ETH_HLEN};
use super::rss::Selection;
use super::{Env, Fault};
use crate::defs::{
    Le16, Le32, ManaCqeHeader, ManaCqeType, ManaRxCompOob, RxCompFlags, Sge, INLINE_OOB_SMALL_SIZE,
    MANA_CQE_COMPLETION, MAX_RX_WQE_SGL_ENTRIES,
};
use crate::queues::{completion, QueueError, WqeSlot, MAX_RQE_SIZE};
use mana_device_api::snapshot::WqKind;
use vm_memory::{Bytes, GuestAddress, GuestMemory, Permissions};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

/// Why an RQ WQE could not take a frame.
#[derive(Debug, thiserror::Error)]
pub enum RxError {
    /// The WQE's header, OOB or SGEs are unusable (the frame was dropped
    /// with CQE_RX_TRUNCATED).
    #[error("RQ {rq}: bad WQE at byte {offset:#x}: {reason}")]
    BadWqe {
        /// RQ id.
        rq: u32,
        /// WQE byte offset in the ring.
        offset: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// The ring itself is unusable; the posted entries were skipped.
    #[error("RQ {rq}: {error}; the posted entries were skipped")]
    Ring {
        /// RQ id.
        rq: u32,
        /// The queue error.
        error: QueueError,
    },
}

/// What happened to a received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxVerdict {
    /// Written into a buffer of `rq`, completed with CQE_RX_OKAY.
    Delivered {
        /// RQ id.
        rq: u32,
        /// RSS hash reported in the CQE.
        hash: u32,
        /// Its NDIS hash type bit (0: none).
        hash_type: u16,
    },
    /// A WQE of `rq` was consumed with CQE_RX_TRUNCATED.
    Truncated {
        /// RQ id.
        rq: u32,
    },
    /// `rq` had no WQE posted.
    NoBuffer {
        /// RQ id.
        rq: u32,
    },
    /// No RQ was chosen (vPort unknown or RX off, no RQ configured, the RQ
    /// gone) or the frame is shorter than an Ethernet header.
    Unsteered,
}

/// Buffers reused across frames.
#[derive(Debug)]
pub struct RxScratch {
    wqe: [u8; MAX_RQE_SIZE as usize],
    sges: Vec<Sge>,
}

impl Default for RxScratch {
    fn default() -> Self {
        Self { wqe: [0; MAX_RQE_SIZE as usize], sges: Vec::with_capacity(MAX_RX_WQE_SGL_ENTRIES as usize) }
    }
}

/// Delivers `frame` (an Ethernet frame without FCS) received on vPort `vport`.
pub fn receive(
    env: &mut Env<'_>,
    scratch: &mut RxScratch,
    vport: u16,
    frame: &[u8],
    faults: &mut Vec<Fault>,
) -> RxVerdict {
    if !env.datapath.receiving(vport) {
        env.totals.rx_port_off += 1;
    }
    if frame.len() < ETH_HLEN {
        env.totals.rx_unsteered += 1;
        return RxVerdict::Unsteered;
    }
    let headers = parse(frame);
    let selection = env.datapath.select(vport, frame, &headers);
    let verdict = deliver(env, scratch, frame, &headers, selection, faults);
    if env.flows.enabled() {
        let (hash, hash_type) = selection.map_or((0, 0), |s| (s.hash, s.hash_type));
        env.flows.record_rx(frame, &headers, hash, hash_type, verdict);
    }
    verdict
}

/// Places `frame` (whose headers are `headers`) as `selection` says.
fn deliver(
    env: &mut Env<'_>,
    scratch: &mut RxScratch,
    frame: &[u8],
    headers: &Headers,
    selection: Option<Selection>,
    faults: &mut Vec<Fault>,
) -> RxVerdict {
    let Some(selection) = selection else {
        env.totals.rx_unsteered += 1;
        return RxVerdict::Unsteered;
    };
    let Some(rq_id) = selection.rq.filter(|id| env.queues.rqs.contains_key(id)) else {
        env.totals.rx_unsteered += 1;
        return RxVerdict::Unsteered;
    };
    let Some(rq) = env.queues.rqs.get_mut(&rq_id) else {
        return RxVerdict::Unsteered;
    };
    let cq_id = rq.cq_id;
    let slot = match rq.peek(env.mem, &mut scratch.wqe) {
        Ok(Some(slot)) => slot,
        Ok(None) => {
            env.dropped(WqKind::Rq, rq_id, false);
            env.totals.rx_no_wqe += 1;
            return RxVerdict::NoBuffer { rq: rq_id };
        }
        Err(source) => {
            rq.skip_to_producer();
            env.dropped(WqKind::Rq, rq_id, true);
            faults.push(RxError::Ring { rq: rq_id, error: source }.into());
            return RxVerdict::NoBuffer { rq: rq_id };
        }
    };
    rq.consume(slot.size);
    let placed = buffers(env, scratch, rq_id, &slot).and_then(|capacity| {
        if frame.len() > capacity || frame.len() > usize::from(u16::MAX) {
            return Ok(false);
        }
        scatter(env, &scratch.sges, frame).map_err(|reason| RxError::BadWqe {
            rq: rq_id,
            offset: slot.offset,
            reason,
        })?;
        Ok(true)
    });
    let mut oob = ManaRxCompOob {
        cqe_hdr: ManaCqeHeader::new().with_client_type(MANA_CQE_COMPLETION),
        rx_wqe_offset: Le32::new(slot.offset),
        ..ManaRxCompOob::new_zeroed()
    };
    let verdict = match placed {
        Ok(true) => {
            let v = verify(frame, headers);
            oob.cqe_hdr.set_cqe_type(ManaCqeType::RX_OKAY.0);
            oob.flags = RxCompFlags::new()
                .with_rx_hashtype(selection.hash_type)
                .with_rx_iphdr_csum_succeed(v.ip_ok)
                .with_rx_iphdr_csum_fail(v.ip_bad)
                .with_rx_tcp_csum_succeed(v.tcp_ok)
                .with_rx_tcp_csum_fail(v.tcp_bad)
                .with_rx_udp_csum_succeed(v.udp_ok)
                .with_rx_udp_csum_fail(v.udp_bad);
            oob.ppi[0].pkt_len = Le16::new(frame.len() as u16);
            oob.ppi[0].pkt_hash = Le32::new(selection.hash);
            env.moved(WqKind::Rq, rq_id, frame);
            RxVerdict::Delivered { rq: rq_id, hash: selection.hash, hash_type: selection.hash_type }
        }
        placed => {
            if let Err(err) = placed {
                faults.push(err.into());
                env.dropped(WqKind::Rq, rq_id, true);
            } else {
                env.dropped(WqKind::Rq, rq_id, false);
            }
            oob.cqe_hdr.set_cqe_type(ManaCqeType::RX_TRUNCATED.0);
            RxVerdict::Truncated { rq: rq_id }
        }
    };
    if env.queues.faults.next_rx_cqe_corrupt() {
        // An injected fault (crate::inject): a CQE type the driver does not know.
        oob.cqe_hdr.set_cqe_type(crate::inject::CORRUPT_RX_CQE_TYPE);
    }
    let cqe = completion(oob.as_bytes(), rq_id, false);
    if let Err(err) = env.queues.post_cqe(env.mem, env.irq, cq_id, cqe) {
        env.totals.rx_cqe_lost += 1;
        faults.push(err.into());
    }
    verdict
}

/// Checks the WQE in `scratch.wqe` and fills `scratch.sges`; returns the
/// total buffer size in bytes. Whether the buffers are guest memory is
/// checked by [`scatter`], for the bytes the frame needs.
fn buffers(env: &Env<'_>, scratch: &mut RxScratch, rq_id: u32, slot: &WqeSlot) -> Result<usize, RxError> {
    let bad = |reason| RxError::BadWqe { rq: rq_id, offset: slot.offset, reason };
    if slot.oob(&scratch.wqe).len() != INLINE_OOB_SMALL_SIZE as usize {
        return Err(bad("inline OOB is not 8 bytes"));
    }
    let num_sge = u32::from(slot.header.num_sge());
    if num_sge == 0 || num_sge > MAX_RX_WQE_SGL_ENTRIES {
        return Err(bad("SGE count outside 1..=15"));
    }
    scratch.sges.clear();
    let mut capacity = 0usize;
    for bytes in slot.sgl(&scratch.wqe).chunks_exact(size_of::<Sge>()) {
        let sge = Sge::read_from_bytes(bytes).map_err(|_| bad("short SGE"))?;
        let (addr, len) = (sge.address.get(), sge.size.get() as usize);
        if Some(sge.mem_key.get()) != env.mem_key {
            return Err(bad("memory key is not the device's gpa_mkey"));
        }
        if len == 0 {
            return Err(bad("zero-length SGE"));
        }
        let end = addr.checked_add(len as u64).ok_or(bad("SGE wraps the address space"))?;
        let overlaps = scratch.sges.iter().any(|other| {
            let start = other.address.get();
            addr < start + u64::from(other.size.get()) && start < end
        });
        if overlaps {
            return Err(bad("SGEs overlap"));
        }
        capacity += len;
        scratch.sges.push(sge);
    }
    Ok(capacity)
}

/// Writes `frame` across `sges` (whose sizes hold it). Every byte it will
/// write is checked to be guest memory first, so a frame is written whole
/// or not at all; a one-SGE write is checked by the write itself.
fn scatter(env: &Env<'_>, sges: &[Sge], frame: &[u8]) -> Result<(), &'static str> {
    let chunks = || {
        let mut left = frame.len();
        sges.iter().map_while(move |sge| {
            let take = left.min(sge.size.get() as usize);
            left -= take;
            (take > 0).then_some((GuestAddress(sge.address.get()), take))
        })
    };
    let outside = "SGE outside guest memory";
    if sges.len() > 1 && !chunks().all(|(addr, len)| GuestMemory::check_range(env.mem, addr, len, Permissions::Write)) {
        return Err(outside);
    }
    let mut rest = frame;
    for (addr, take) in chunks() {
        env.mem.write_slice(&rest[..take], addr).map_err(|_| outside)?;
        rest = &rest[take..];
    }
    Ok(())
}
