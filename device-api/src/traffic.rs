//! Traffic counters: per SQ/RQ (in the device snapshot, so the rig can
//! report per-queue counts) and device-wide totals ([`Totals`]).
#![forbid(unsafe_code)]

/// What one queue (or the device in total) moved.
///
/// TX: `packets` / `bytes` are the frames handed to the packet backend (a TSO
/// WQE counts one per segment); `drops` the WQEs completed with an error CQE
/// plus the frames the backend refused; `errors` the WQEs completed with an
/// error CQE. RX: `packets` / `bytes` are the frames written into RQ buffers;
/// `drops` the frames steered to the queue that found no usable buffer (none
/// posted, too small, unusable); `errors` the unusable buffers among them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Traffic {
    /// Frames moved.
    pub packets: u64,
    /// Bytes moved (Ethernet frames without FCS).
    pub bytes: u64,
    /// Frames dropped.
    pub drops: u64,
    /// Entries the guest got wrong (a subset of the drops).
    pub errors: u64,
}

impl Traffic {
    /// Counts one frame of `len` bytes moved.
    pub fn moved(&mut self, len: usize) {
        self.packets += 1;
        self.bytes += len as u64;
    }

    /// Adds `other` to these counters.
    pub fn add(&mut self, other: &Traffic) {
        self.packets += other.packets;
        self.bytes += other.bytes;
        self.drops += other.drops;
        self.errors += other.errors;
    }
}

/// Device-wide traffic totals (kept across queue and HWC teardown).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Totals {
    /// Every SQ.
    pub tx: Traffic,
    /// Every RQ.
    pub rx: Traffic,
    /// Received frames no RQ was chosen for (vPort RX off, no RQ configured,
    /// the RQ gone, a runt).
    pub rx_unsteered: u64,
    /// Received frames steered to an RQ that had no WQE posted (a subset of
    /// `rx.drops`; the rest of `rx.drops` found a buffer they could not use
    /// and completed with CQE_RX_TRUNCATED).
    #[serde(default)]
    pub rx_no_wqe: u64,
    /// RX completions lost because their CQ's backlog was full (device-model
    /// `queues::MAX_BACKLOG`): the frame was written but the driver never
    /// hears of it. Counted in `rx.packets` too.
    #[serde(default)]
    pub rx_cqe_lost: u64,
    /// Received frames the driver had asked not to receive: for a vPort never
    /// configured (before the first open) or one whose RX is off (after a
    /// close, until the next open). A subset of `rx_unsteered`; the rest of
    /// it (RX on, but no RQ for the frame, or a runt) are frames a receiving
    /// port lost.
    #[serde(default)]
    pub rx_port_off: u64,
}
