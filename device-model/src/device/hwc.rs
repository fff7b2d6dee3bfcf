//! Hardware channel (HWC): the request/response channel over the four rings
//! the driver hands over through the SMC.
//!
//! Models the device side of drivers/net/ethernet/microsoft/mana/hw_channel.c
//! (Linux 6.1-7.3):
//! - `mana_hwc_init_event_handler()`: the init EQEs, EQ_ID_DB first, then
//!   INIT_DATA (CQ id, RQ id, SQ id, queue depth, max request/response,
//!   MAX_NUM_CQS, PDID, GPA_MKEY), then INIT_DONE;
//! - `mana_hwc_send_request()` / `mana_hwc_post_tx_wqe()`: one SQ WQE per
//!   request whose SGE points at the request (≤ 4096 bytes);
//! - `mana_hwc_rx_event_handler()`: the response goes into the buffer of the
//!   next RQ WQE; the RX CQE's `hwc_rx_oob` carries that WQE's byte offset
//!   (`wqe_offset`) and the response length (`tx_oob_data_size`);
//! - `mana_hwc_comp_event()`: an SQ completion (is_sq = 1) is also posted.
#![forbid(unsafe_code)]

use crate::defs::{EqeType, HwcInitData, HwcInitEqIdDb, HwcInitTypeData, HwcRxOob, Le32};
use crate::device::smc::HwcRings;
use crate::interrupt::InterruptSink;
use crate::queues::{
    completion, event, CompletionQueue, EventQueue, Mem, Producer, QueueError, Queues, Ring, WorkQueue,
};
use mana_device_api::snapshot::HwcIds;
use mana_device_api::snapshot::{Owner, WqKind};
use std::collections::VecDeque;
use vm_memory::{Bytes, GuestAddress};
use zerocopy::IntoBytes;

/// Every HWC ring is exactly 4096 bytes (`MANA_MIN_QSIZE`; the SMC message carries no sizes).
pub const HWC_RING_SIZE: u64 = 4096;
/// `HW_CHANNEL_MAX_REQUEST_SIZE` = `HW_CHANNEL_MAX_RESPONSE_SIZE`.
pub const MAX_MESSAGE_SIZE: usize = 0x1000;
// `hwc-delay` holds at most one SQ ring of requests' responses.
const _: () = assert!(crate::inject::MAX_HELD_RESPONSES as u64 == HWC_RING_SIZE / crate::queues::WQE_BU_SIZE as u64);

/// Responses kept while the driver has no RQ WQE posted.
pub const MAX_PENDING_RESPONSES: usize = 16;

/// Values announced in the HWC init EQEs.
#[derive(Debug, Clone, Copy)]
pub struct InitParams {
    /// `HWC_INIT_DATA_MAX_NUM_CQS`: every CQ id is below it.
    pub max_num_cqs: u32,
    /// `HWC_INIT_DATA_PDID`.
    pub pdid: u32,
    /// `HWC_INIT_DATA_GPA_MKEY`.
    pub gpa_mkey: u32,
    /// Doorbell page of the HWC queues (`hwc_init_eq_id_db.doorbell`).
    pub doorbell: u16,
}

/// Errors of the hardware channel.
#[derive(Debug, thiserror::Error)]
pub enum HwcError {
    /// A ring or buffer access failed.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// A request's SGEs add up to more than 4096 bytes or are missing.
    #[error("HWC request at SQ byte {offset:#x}: {reason}")]
    BadRequest {
        /// SQ WQE offset.
        offset: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// The driver has no RQ buffer posted and too many responses wait.
    #[error("no HWC RQ buffer for a response and {0} responses already waiting")]
    NoRxBuffer(usize),
}

/// A request read from the HWC SQ.
#[derive(Debug)]
pub struct Request {
    /// The request bytes (at most 4096).
    pub bytes: Vec<u8>,
    /// Set when the request was malformed; `bytes` then holds what could be read.
    pub error: Option<HwcError>,
}

/// The established channel.
#[derive(Debug, Clone)]
pub struct Hwc {
    ids: HwcIds,
    msix_index: u16,
    pending: VecDeque<Vec<u8>>,
}

impl Hwc {
    /// Creates the HWC EQ, CQ, RQ and SQ in `queues` from the SMC message
    /// (rings of [`HWC_RING_SIZE`] bytes) and posts the init EQEs, which
    /// raises the HWC EQ's vector.
    ///
    /// # Errors
    /// [`HwcError::Queue`] if a ring is not in guest memory; the queues are
    /// then removed again.
    pub fn establish(
        queues: &mut Queues,
        mem: &Mem,
        irq: &dyn InterruptSink,
        rings: HwcRings,
        ids: HwcIds,
        params: InitParams,
    ) -> Result<Self, HwcError> {
        let hwc = Self { ids, msix_index: rings.msix_index, pending: VecDeque::new() };
        let result = hwc.create_queues(queues, mem, rings).and_then(|()| hwc.post_init_eqes(queues, mem, irq, params));
        if let Err(err) = result {
            hwc.remove(queues);
            return Err(err);
        }
        Ok(hwc)
    }

    fn create_queues(&self, queues: &mut Queues, mem: &Mem, rings: HwcRings) -> Result<(), HwcError> {
        use vm_memory::GuestMemory;
        for addr in [rings.eq, rings.cq, rings.rq, rings.sq] {
            if !GuestMemory::check_range(mem, addr, HWC_RING_SIZE as usize, vm_memory::Permissions::ReadWrite) {
                return Err(QueueError::BadRing { size: HWC_RING_SIZE, pages: 0 }.into());
            }
        }
        let ring = |addr: GuestAddress| Ring::contiguous(addr, HWC_RING_SIZE);
        let owner = Owner { dev_type: 1, instance: 0 };
        queues.eqs.insert(
            self.ids.eq,
            EventQueue { ring: Producer::new(self.ids.eq, ring(rings.eq)?)?, msix_index: self.msix_index, owner },
        );
        queues.cqs.insert(
            self.ids.cq,
            CompletionQueue { ring: Producer::new(self.ids.cq, ring(rings.cq)?)?, parent_eq: self.ids.eq },
        );
        queues.rqs.insert(self.ids.rq, WorkQueue::new(self.ids.rq, WqKind::Rq, ring(rings.rq)?, self.ids.cq)?);
        queues.sqs.insert(self.ids.sq, WorkQueue::new(self.ids.sq, WqKind::Sq, ring(rings.sq)?, self.ids.cq)?);
        Ok(())
    }

    fn post_init_eqes(
        &self,
        queues: &mut Queues,
        mem: &Mem,
        irq: &dyn InterruptSink,
        params: InitParams,
    ) -> Result<(), HwcError> {
        // EQ_ID_DB must come first: the driver's EQ handler needs the EQ id
        // and doorbell to ring the EQ doorbell.
        let eq_id_db = HwcInitEqIdDb::new().with_eq_id(self.ids.eq as u16).with_doorbell(params.doorbell);
        let mut events = vec![event(EqeType::HWC_INIT_EQ_ID_DB, eq_id_db.into_bits())];
        let data = [
            (HwcInitData::CQID, self.ids.cq),
            (HwcInitData::RQID, self.ids.rq),
            (HwcInitData::SQID, self.ids.sq),
            // HW_CHANNEL_VF_BOOTSTRAP_QUEUE_DEPTH: the driver keeps depth 1.
            (HwcInitData::QUEUE_DEPTH, 1),
            (HwcInitData::MAX_REQUEST, MAX_MESSAGE_SIZE as u32),
            (HwcInitData::MAX_RESPONSE, MAX_MESSAGE_SIZE as u32),
            (HwcInitData::MAX_NUM_CQS, params.max_num_cqs),
            (HwcInitData::PDID, params.pdid),
            (HwcInitData::GPA_MKEY, params.gpa_mkey),
        ];
        for (data_type, value) in data {
            let detail = HwcInitTypeData::new().with_value(value & 0x00FF_FFFF).with_data_type(data_type.0);
            events.push(event(EqeType::HWC_INIT_DATA, detail.into_bits()));
        }
        events.push(event(EqeType::HWC_INIT_DONE, 0));
        for eqe in events {
            queues.post_eqe(mem, irq, self.ids.eq, eqe)?;
        }
        Ok(())
    }

    /// Removes the HWC queues from `queues`.
    pub fn remove(&self, queues: &mut Queues) {
        queues.eqs.remove(&self.ids.eq);
        queues.cqs.remove(&self.ids.cq);
        queues.sqs.remove(&self.ids.sq);
        queues.rqs.remove(&self.ids.rq);
    }

    /// The HWC queue ids.
    pub fn ids(&self) -> HwcIds {
        self.ids
    }

    /// The HWC EQ's MSI-X index.
    pub fn msix_index(&self) -> u16 {
        self.msix_index
    }

    /// Responses waiting for an RQ buffer.
    pub fn pending_responses(&self) -> usize {
        self.pending.len()
    }

    /// Reads every request posted on the HWC SQ up to its producer and posts
    /// an SQ completion for each.
    ///
    /// # Errors
    /// [`HwcError::Queue`] when the SQ itself is unreadable (the remaining
    /// entries are skipped); per-request problems are in [`Request::error`].
    pub fn take_requests(
        &self,
        queues: &mut Queues,
        mem: &Mem,
        irq: &dyn InterruptSink,
    ) -> Result<Vec<Request>, HwcError> {
        let mut requests = Vec::new();
        while let Some(sq) = queues.sqs.get_mut(&self.ids.sq) {
            let Some(wqe) = sq.pop(mem)? else { break };
            requests.push(read_request(mem, &wqe));
            queues.post_cqe(mem, irq, self.ids.cq, completion(&[], self.ids.sq, true))?;
        }
        Ok(requests)
    }

    /// Delivers `response` (≤ 4096 bytes) into the next RQ buffer and posts
    /// the RX completion; without a posted RQ buffer the response waits.
    ///
    /// # Errors
    /// [`HwcError::NoRxBuffer`] when [`MAX_PENDING_RESPONSES`] already wait
    /// (the response is dropped); [`HwcError::Queue`] on a bad RQ entry or
    /// buffer.
    pub fn respond(
        &mut self,
        queues: &mut Queues,
        mem: &Mem,
        irq: &dyn InterruptSink,
        response: Vec<u8>,
    ) -> Result<(), HwcError> {
        if self.pending.len() >= MAX_PENDING_RESPONSES {
            return Err(HwcError::NoRxBuffer(self.pending.len()));
        }
        self.pending.push_back(response);
        self.flush(queues, mem, irq)
    }

    /// Delivers waiting responses into posted RQ buffers (called on RQ doorbells).
    ///
    /// # Errors
    /// As [`Hwc::respond`].
    pub fn flush(&mut self, queues: &mut Queues, mem: &Mem, irq: &dyn InterruptSink) -> Result<(), HwcError> {
        while !self.pending.is_empty() {
            let Some(rq) = queues.rqs.get_mut(&self.ids.rq) else {
                break;
            };
            let Some(wqe) = rq.pop(mem)? else { break };
            let Some(response) = self.pending.pop_front() else {
                break;
            };
            let Some(sge) = wqe.sges.first() else {
                continue;
            };
            let len = response.len().min(sge.size.get() as usize);
            let addr = sge.address.get();
            mem.write_slice(&response[..len], GuestAddress(addr)).map_err(|source| QueueError::Guest {
                addr,
                len,
                error: source,
            })?;
            let oob = HwcRxOob {
                wqe_offset: Le32::new(wqe.offset),
                tx_oob_data_size: Le32::new(len as u32),
                ..HwcRxOob::default()
            };
            queues.post_cqe(mem, irq, self.ids.cq, completion(oob.as_bytes(), self.ids.rq, false))?;
        }
        Ok(())
    }
}

fn read_request(mem: &Mem, wqe: &crate::queues::Wqe) -> Request {
    let mut bytes = Vec::new();
    for sge in &wqe.sges {
        let size = sge.size.get() as usize;
        if bytes.len() + size > MAX_MESSAGE_SIZE {
            let error = HwcError::BadRequest { offset: wqe.offset, reason: "larger than 4096 bytes" };
            return Request { bytes, error: Some(error) };
        }
        let start = bytes.len();
        bytes.resize(start + size, 0);
        let addr = sge.address.get();
        if let Err(source) = mem.read_slice(&mut bytes[start..], GuestAddress(addr)) {
            bytes.truncate(start);
            let error = HwcError::Queue(QueueError::Guest { addr, len: size, error: source });
            return Request { bytes, error: Some(error) };
        }
    }
    Request { bytes, error: None }
}
