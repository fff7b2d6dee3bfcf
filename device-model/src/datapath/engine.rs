//! How much data-path work one doorbell does, what waits, and how received
//! frames are pulled from the backend.
//!
//! Batching. An SQ doorbell only records the producer and marks the SQ
//! pending; the device then serves pending SQs round-robin, at most
//! [`TX_BATCH`] WQEs and about [`TX_FRAME_BATCH`] frames in all per BAR0
//! write (and per [`Engine::run_tx`] call of an event loop): a TSO WQE can
//! make up to [`super::tso::MAX_SEGMENTS`] frames, so 64 of them at a tiny
//! MSS would otherwise send 65,024 frames (each a `write()` to a TAP) in
//! one doorbell, under the core's lock. An SQ with WQEs left stays pending and is continued by
//! the next doorbell the driver rings (any SQ, RQ, CQ or EQ doorbell: the
//! TX completions of the batch interrupt the driver, whose NAPI poll rings
//! the CQ doorbell), or by an event loop calling `ManaDevice::poll` while
//! `ManaDevice::has_pending_work` says so. Why: a doorbell is an MMIO write
//! the vCPU waits on (vfio-user region writes are answered synchronously),
//! and the SQ ring the driver may size up to 16384 WQEs (`ethtool -G`) or
//! fill with 64 KiB TSO WQEs; 64 WQEs bound one write to about 4 MiB of
//! copying in the worst case and a few tens of microseconds for the
//! driver's usual one WQE per doorbell, and the default 256-entry SQ drains
//! in four doorbells at most. RX is bounded the same way: at most
//! [`RX_BATCH`] frames are pulled from the backend per call.
//!
//! Backend. Frames the backend holds are pulled after every doorbell when
//! [`PacketBackend::rx_pending`] says there may be some (the in-memory
//! backends, loopback), or by an event loop on the backend's readiness fd
//! calling `ManaDevice::poll_backend` (a TAP). A frame whose RQ has no
//! buffer is dropped and counted, as hardware does; nothing waits inside the
//! device.
#![forbid(unsafe_code)]

use super::backend::PacketBackend;
use super::rx::{self, RxScratch, RxVerdict};
use super::tx::{self, TxBudget, TxScratch};
use super::{Env, Fault};
use std::collections::VecDeque;

/// WQEs served per doorbell / [`Engine::run_tx`] call, across all pending SQs.
pub const TX_BATCH: u32 = 64;
/// Frames handed to the backend per doorbell / [`Engine::run_tx`] call: no
/// WQE is started once this many went out, and a WQE is never split, so one
/// call sends fewer than `TX_FRAME_BATCH + tso::MAX_SEGMENTS` (2048) frames.
pub const TX_FRAME_BATCH: u32 = 1024;

/// What one doorbell (or one event-loop poll) may do: [`TX_BATCH`] WQEs,
/// [`TX_FRAME_BATCH`] frames.
pub const PER_DOORBELL: TxBudget = TxBudget { wqes: TX_BATCH, frames: TX_FRAME_BATCH };

/// Frames pulled from the backend per call.
pub const RX_BATCH: usize = 64;
/// Largest frame taken from a backend: `ppi.pkt_len` is 16 bits.
pub const MAX_RX_FRAME: usize = u16::MAX as usize;
/// Faults kept between two [`Engine::take_faults`] calls (later ones are only counted).
pub const MAX_FAULTS: usize = 256;

/// The data path's scheduler: the backend, the pending SQs, reused buffers.
pub struct Engine {
    backend: Box<dyn PacketBackend>,
    tx: TxScratch,
    rx: RxScratch,
    rx_frame: Vec<u8>,
    pending: VecDeque<u32>,
    faults: Vec<Fault>,
    faults_dropped: u64,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("pending", &self.pending)
            .field("faults", &self.faults.len())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine sending to and receiving from `backend`.
    pub fn new(backend: Box<dyn PacketBackend>) -> Self {
        Self {
            backend,
            tx: TxScratch::default(),
            rx: RxScratch::default(),
            rx_frame: vec![0; MAX_RX_FRAME],
            pending: VecDeque::new(),
            faults: Vec::new(),
            faults_dropped: 0,
        }
    }

    /// The backend.
    pub fn backend_mut(&mut self) -> &mut dyn PacketBackend {
        self.backend.as_mut()
    }

    /// Marks SQ `sq_id` as having WQEs posted (after its doorbell).
    pub fn sq_posted(&mut self, sq_id: u32) {
        if !self.pending.contains(&sq_id) {
            self.pending.push_back(sq_id);
        }
    }

    /// Whether SQs wait to be continued or the backend may hold frames.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty() || self.backend.rx_pending()
    }

    /// How many SQs wait to be continued, and how many faults wait for
    /// [`Engine::take_faults`].
    pub fn sizes(&self) -> (usize, usize) {
        (self.pending.len(), self.faults.len())
    }

    /// Whether the backend may hold frames ([`PacketBackend::rx_pending`]).
    pub fn rx_pending(&self) -> bool {
        self.backend.rx_pending()
    }

    /// The SQs waiting to be continued, in the order they will be.
    pub fn pending_sqs(&self) -> &VecDeque<u32> {
        &self.pending
    }

    /// Makes `pending` the SQs waiting to be continued and forgets the faults
    /// not taken yet (a device put back into a saved state).
    pub fn restore_pending(&mut self, pending: &VecDeque<u32>) {
        self.pending.clone_from(pending);
        self.faults.clear();
        self.faults_dropped = 0;
    }

    /// Forgets pending SQs (DESTROY_HWC, reset: the queues are gone).
    pub fn reset(&mut self) {
        self.pending.clear();
    }

    /// Serves pending SQs round-robin within `budget`; returns the WQEs consumed.
    pub fn run_tx(&mut self, env: &mut Env<'_>, budget: TxBudget) -> u32 {
        let (mut done, mut frames) = (0, 0);
        while done < budget.wqes && frames < budget.frames {
            let Some(sq_id) = self.pending.pop_front() else {
                break;
            };
            if !env.datapath.is_data_sq(sq_id) {
                continue;
            }
            let left = TxBudget { wqes: budget.wqes - done, frames: budget.frames - frames };
            let mut faults = Vec::new();
            let run = tx::service(env, self.backend.as_mut(), &mut self.tx, sq_id, left, &mut faults);
            self.keep(faults);
            done += run.completed;
            frames += run.frames;
            if run.more {
                self.pending.push_back(sq_id);
            }
        }
        done
    }

    /// Pulls up to `budget` frames from the backend into the guest; returns
    /// the frames pulled.
    pub fn poll_backend(&mut self, env: &mut Env<'_>, budget: usize) -> usize {
        let mut pulled = 0;
        while pulled < budget {
            let Some(received) = self.backend.receive(&mut self.rx_frame) else {
                break;
            };
            pulled += 1;
            let len = received.len.min(self.rx_frame.len());
            let mut faults = Vec::new();
            rx::receive(env, &mut self.rx, received.vport, &self.rx_frame[..len], &mut faults);
            self.keep(faults);
        }
        pulled
    }

    /// Delivers one frame pushed by a peer (see [`rx::receive`]).
    pub fn receive(&mut self, env: &mut Env<'_>, vport: u16, frame: &[u8]) -> RxVerdict {
        let mut faults = Vec::new();
        let verdict = rx::receive(env, &mut self.rx, vport, frame, &mut faults);
        self.keep(faults);
        verdict
    }

    fn keep(&mut self, faults: Vec<Fault>) {
        for fault in faults {
            if self.faults.len() < MAX_FAULTS {
                self.faults.push(fault);
            } else {
                self.faults_dropped += 1;
            }
        }
    }

    /// The guest faults met since the last call, and how many more were
    /// met than could be kept.
    pub fn take_faults(&mut self) -> (Vec<Fault>, u64) {
        (std::mem::take(&mut self.faults), std::mem::take(&mut self.faults_dropped))
    }
}
