//! A TAP device as the packet backend: the host kernel's own network stack
//! behind the emulated NIC (the rig's TAP lives in a network namespace of its
//! own; see harness `traffic`).
//!
//! The device is handed an open TAP file descriptor (`IFF_TAP | IFF_NO_PI`:
//! each `read()` returns one Ethernet frame, each `write()` sends one) in
//! non-blocking mode; it never creates, configures or names the interface.
//! Transmit never blocks: a full TAP queue (`EAGAIN`) drops the frame and
//! counts it ([`TapStats::tx_full`]), as a congested wire would. Receive is a
//! non-blocking `read()`: an event loop polls [`PacketBackend::readiness_fd`]
//! and calls `ManaDevice::poll_backend` until it pulls fewer frames than it
//! asked for.
#![forbid(unsafe_code)]

use super::backend::{BackendError, PacketBackend, Received};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Counters of a [`Tap`], shared with whoever holds a [`TapStatsHandle`].
#[derive(Debug, Default)]
pub struct TapStats {
    /// Frames written to the TAP.
    pub tx_frames: AtomicU64,
    /// Frames dropped because the TAP's queue was full (`EAGAIN`).
    pub tx_full: AtomicU64,
    /// Frames dropped on another write error (e.g. `EIO` while the interface is down).
    pub tx_errors: AtomicU64,
    /// Frames read from the TAP.
    pub rx_frames: AtomicU64,
    /// Reads that failed with an error other than `EAGAIN`.
    pub rx_errors: AtomicU64,
}

/// A read-only view of a [`Tap`]'s counters.
pub type TapStatsHandle = Arc<TapStats>;

/// A TAP file descriptor as a [`PacketBackend`] for vPort 0.
#[derive(Debug)]
pub struct Tap {
    file: File,
    /// The last read returned a frame: there may be more.
    may_have_more: bool,
    stats: Arc<TapStats>,
}

impl Tap {
    /// A backend on `fd`, an open TAP (`IFF_TAP | IFF_NO_PI`) in non-blocking
    /// mode (`O_NONBLOCK`; the caller checks it: a blocking TAP would stall the
    /// guest's doorbell writes when its queue fills).
    pub fn new(fd: OwnedFd) -> Self {
        Self { file: File::from(fd), may_have_more: false, stats: Arc::default() }
    }

    /// The counters, readable while the device owns the backend.
    pub fn stats(&self) -> TapStatsHandle {
        Arc::clone(&self.stats)
    }
}

impl PacketBackend for Tap {
    fn transmit(&mut self, _vport: u16, frame: &[u8]) -> Result<(), BackendError> {
        loop {
            return match self.file.write(frame) {
                Ok(n) if n == frame.len() => {
                    self.stats.tx_frames.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
                Ok(n) => {
                    self.stats.tx_errors.fetch_add(1, Ordering::Relaxed);
                    Err(BackendError::Failed(format!("TAP took {n} of {} bytes", frame.len())))
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.stats.tx_full.fetch_add(1, Ordering::Relaxed);
                    Err(BackendError::Full)
                }
                Err(e) => {
                    self.stats.tx_errors.fetch_add(1, Ordering::Relaxed);
                    Err(BackendError::Failed(format!("TAP write: {e}")))
                }
            };
        }
    }

    fn receive(&mut self, buf: &mut [u8]) -> Option<Received> {
        loop {
            match self.file.read(buf) {
                Ok(0) => {}
                Ok(len) => {
                    self.may_have_more = true;
                    self.stats.rx_frames.fetch_add(1, Ordering::Relaxed);
                    return Some(Received { vport: 0, len });
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => {
                    self.stats.rx_errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.may_have_more = false;
            return None;
        }
    }

    fn rx_pending(&self) -> bool {
        self.may_have_more
    }

    fn readiness_fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.file.as_fd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixDatagram;

    /// A datagram socket pair keeps message boundaries as a TAP does.
    fn pair() -> (Tap, UnixDatagram) {
        let (ours, theirs) = UnixDatagram::pair().expect("socketpair");
        ours.set_nonblocking(true).expect("nonblocking");
        (Tap::new(OwnedFd::from(ours)), theirs)
    }

    #[test]
    fn frames_cross_one_per_read_and_write_and_an_empty_queue_ends_the_pull() {
        let (mut tap, wire) = pair();
        assert!(tap.readiness_fd().is_some());
        tap.transmit(0, b"frame one").expect("sent");
        let mut got = [0u8; 64];
        assert_eq!(wire.recv(&mut got).expect("recv"), 9);
        wire.send(b"reply").expect("send");
        wire.send(b"second").expect("send");
        let mut buf = [0u8; 64];
        assert_eq!(tap.receive(&mut buf), Some(Received { vport: 0, len: 5 }));
        assert!(tap.rx_pending());
        assert_eq!(tap.receive(&mut buf), Some(Received { vport: 0, len: 6 }));
        assert_eq!(&buf[..6], b"second");
        assert_eq!(tap.receive(&mut buf), None);
        assert!(!tap.rx_pending());
        let stats = tap.stats();
        assert_eq!(stats.tx_frames.load(Ordering::Relaxed), 1);
        assert_eq!(stats.rx_frames.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_full_queue_drops_the_frame_without_blocking() {
        let (mut tap, _wire) = pair();
        // Nobody reads the other end: the socket's buffer fills up.
        let frame = [0u8; 1514];
        let mut full = false;
        for _ in 0..100_000 {
            match tap.transmit(0, &frame) {
                Ok(()) => {}
                Err(BackendError::Full) => {
                    full = true;
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(full, "the queue never filled");
        assert_eq!(tap.stats().tx_full.load(Ordering::Relaxed), 1);
    }
}
