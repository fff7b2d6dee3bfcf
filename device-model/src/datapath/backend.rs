//! Where transmitted frames go and received frames come from.
//!
//! The device hands every frame it gathers from an SQ to
//! [`PacketBackend::transmit`], and pulls frames for the guest with
//! [`PacketBackend::receive`] (see `ManaDevice::poll_backend`); a peer that
//! pushes instead calls `ManaDevice::receive` itself.
//!
//! Shapes that fit this trait:
//! - a TAP device (or a user-space TCP/IP peer) in the rig's private network
//!   namespace: `transmit` writes one frame per `write()`; `receive` is a
//!   non-blocking `read()`; [`PacketBackend::readiness_fd`] gives the fd
//!   the device's event loop (rust-vmm `event-manager`) polls for
//!   EPOLLIN, upon which the loop calls `ManaDevice::poll_backend`.
//!   `rx_pending` then returns what the last readiness event said.
//! - the in-memory backends here: [`Discard`] (the default), [`Recorder`]
//!   (tests inspect and inject through a [`RecorderHandle`]) and [`Loopback`]
//!   (every transmitted frame comes back as a received frame).
//!
//! Frames are Ethernet frames without FCS, as the guest built them (after
//! the offloads the OOB asked for: checksums, TSO, VLAN insertion).
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex, MutexGuard};

/// Why a backend did not take or give a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The backend's queue is full; the frame is dropped (as a congested wire would).
    #[error("backend queue full, frame dropped")]
    Full,
    /// The backend failed (e.g. a TAP write error); the frame is dropped.
    #[error("backend failed: {0}")]
    Failed(String),
}

/// A frame [`PacketBackend::receive`] copied into the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// vPort index (0-based, as MANA_QUERY_VPORT_CONFIG numbers them) the frame is for.
    pub vport: u16,
    /// Frame length in bytes (≤ the buffer's length).
    pub len: usize,
}

/// The network behind the device's vPorts.
pub trait PacketBackend: Send {
    /// Takes one frame the guest sent on vPort `vport`. Must not block.
    ///
    /// # Errors
    /// [`BackendError`] when the frame was dropped; the device counts it as a
    /// TX drop (the guest still gets CQE_TX_OKAY, as from a wire that lost it).
    fn transmit(&mut self, vport: u16, frame: &[u8]) -> Result<(), BackendError>;

    /// Copies the next frame for the guest into `buf`, if there is one. Must
    /// not block. A frame longer than `buf` is dropped by the backend.
    fn receive(&mut self, buf: &mut [u8]) -> Option<Received>;

    /// Whether [`PacketBackend::receive`] may have a frame (a cheap hint the
    /// device checks after each doorbell; `false` keeps it from calling
    /// `receive`).
    fn rx_pending(&self) -> bool;

    /// A file descriptor an event loop should poll for readability before
    /// calling `ManaDevice::poll_backend`; `None` for in-memory backends.
    fn readiness_fd(&self) -> Option<BorrowedFd<'_>> {
        None
    }
}

/// Drops every transmitted frame and never receives: the device without a network.
#[derive(Debug, Default)]
pub struct Discard;

impl PacketBackend for Discard {
    fn transmit(&mut self, _vport: u16, _frame: &[u8]) -> Result<(), BackendError> {
        Ok(())
    }

    fn receive(&mut self, _buf: &mut [u8]) -> Option<Received> {
        None
    }

    fn rx_pending(&self) -> bool {
        false
    }
}

/// Frames waiting to be received, bounded.
#[derive(Debug)]
struct Inbox {
    frames: VecDeque<(u16, Vec<u8>)>,
    capacity: usize,
    overflowed: u64,
}

impl Inbox {
    fn new(capacity: usize) -> Self {
        Self { frames: VecDeque::new(), capacity, overflowed: 0 }
    }

    fn push(&mut self, vport: u16, frame: &[u8]) -> Result<(), BackendError> {
        if self.frames.len() >= self.capacity {
            self.overflowed += 1;
            return Err(BackendError::Full);
        }
        self.frames.push_back((vport, frame.to_vec()));
        Ok(())
    }

    fn pop_into(&mut self, buf: &mut [u8]) -> Option<Received> {
        while let Some((vport, frame)) = self.frames.pop_front() {
            if let Some(dst) = buf.get_mut(..frame.len()) {
                dst.copy_from_slice(&frame);
                return Some(Received { vport, len: frame.len() });
            }
            self.overflowed += 1;
        }
        None
    }
}

#[derive(Debug)]
struct RecorderState {
    sent: Vec<(u16, Vec<u8>)>,
    inbox: Inbox,
    refuse: bool,
}

fn lock(state: &Mutex<RecorderState>) -> MutexGuard<'_, RecorderState> {
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records every transmitted frame and receives the frames a test injects.
/// The device owns the backend; the test keeps the [`RecorderHandle`].
#[derive(Debug)]
pub struct Recorder {
    state: Arc<Mutex<RecorderState>>,
}

/// The test's side of a [`Recorder`].
#[derive(Debug, Clone)]
pub struct RecorderHandle {
    state: Arc<Mutex<RecorderState>>,
}

impl Recorder {
    /// A recorder whose inbox holds up to `capacity` frames, and its handle.
    pub fn new(capacity: usize) -> (Self, RecorderHandle) {
        let state =
            Arc::new(Mutex::new(RecorderState { sent: Vec::new(), inbox: Inbox::new(capacity), refuse: false }));
        (Self { state: Arc::clone(&state) }, RecorderHandle { state })
    }
}

impl RecorderHandle {
    /// Every (vPort, frame) transmitted so far, in order.
    pub fn sent(&self) -> Vec<(u16, Vec<u8>)> {
        lock(&self.state).sent.clone()
    }

    /// Forgets the frames transmitted so far.
    pub fn clear_sent(&self) {
        lock(&self.state).sent.clear();
    }

    /// Forgets the frames waiting to be received.
    pub fn clear_waiting(&self) {
        lock(&self.state).inbox.frames.clear();
    }

    /// Queues `frame` for the guest on vPort `vport`.
    ///
    /// # Errors
    /// [`BackendError::Full`] when the inbox is full.
    pub fn inject(&self, vport: u16, frame: &[u8]) -> Result<(), BackendError> {
        lock(&self.state).inbox.push(vport, frame)
    }

    /// Frames still waiting to be received.
    pub fn waiting(&self) -> usize {
        lock(&self.state).inbox.frames.len()
    }

    /// Makes `transmit` refuse (true) or take (false) frames.
    pub fn refuse_transmit(&self, refuse: bool) {
        lock(&self.state).refuse = refuse;
    }
}

impl PacketBackend for Recorder {
    fn transmit(&mut self, vport: u16, frame: &[u8]) -> Result<(), BackendError> {
        let mut state = lock(&self.state);
        if state.refuse {
            return Err(BackendError::Failed("refused by the test".into()));
        }
        state.sent.push((vport, frame.to_vec()));
        Ok(())
    }

    fn receive(&mut self, buf: &mut [u8]) -> Option<Received> {
        lock(&self.state).inbox.pop_into(buf)
    }

    fn rx_pending(&self) -> bool {
        !lock(&self.state).inbox.frames.is_empty()
    }
}

/// Sends every transmitted frame back to the guest on the same vPort (a
/// cable from the port to itself), holding up to `capacity` frames.
#[derive(Debug)]
pub struct Loopback {
    inbox: Inbox,
    looped: u64,
}

impl Loopback {
    /// A loopback holding up to `capacity` frames in flight.
    pub fn new(capacity: usize) -> Self {
        Self { inbox: Inbox::new(capacity), looped: 0 }
    }

    /// Frames looped back so far.
    pub fn looped(&self) -> u64 {
        self.looped
    }

    /// Frames dropped because the loop was full.
    pub fn overflowed(&self) -> u64 {
        self.inbox.overflowed
    }
}

impl PacketBackend for Loopback {
    fn transmit(&mut self, vport: u16, frame: &[u8]) -> Result<(), BackendError> {
        self.inbox.push(vport, frame)?;
        self.looped += 1;
        Ok(())
    }

    fn receive(&mut self, buf: &mut [u8]) -> Option<Received> {
        self.inbox.pop_into(buf)
    }

    fn rx_pending(&self) -> bool {
        !self.inbox.frames.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_returns_frames_in_order_and_drops_beyond_its_capacity() {
        let mut lo = Loopback::new(2);
        lo.transmit(0, b"one").expect("room");
        lo.transmit(1, b"two").expect("room");
        assert_eq!(lo.transmit(0, b"three"), Err(BackendError::Full));
        let mut buf = [0u8; 16];
        assert_eq!(lo.receive(&mut buf), Some(Received { vport: 0, len: 3 }));
        assert_eq!(&buf[..3], b"one");
        assert_eq!(lo.receive(&mut buf), Some(Received { vport: 1, len: 3 }));
        assert!(lo.receive(&mut buf).is_none() && !lo.rx_pending());
        assert_eq!((lo.looped(), lo.overflowed()), (2, 1));
    }

    #[test]
    fn recorder_shares_what_it_saw_with_its_handle_and_drops_frames_too_big_for_the_buffer() {
        let (mut rec, handle) = Recorder::new(4);
        rec.transmit(3, b"frame").expect("taken");
        assert_eq!(handle.sent(), vec![(3, b"frame".to_vec())]);
        handle.inject(0, &[7u8; 32]).expect("room");
        handle.inject(0, b"small").expect("room");
        let mut buf = [0u8; 8];
        assert_eq!(rec.receive(&mut buf), Some(Received { vport: 0, len: 5 }));
        handle.refuse_transmit(true);
        assert!(rec.transmit(0, b"x").is_err());
    }
}
