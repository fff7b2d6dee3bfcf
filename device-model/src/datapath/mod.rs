//! The Ethernet data path: SQ WQEs → frames → a packet backend → TX
//! completions; backend frames → RSS → RQ buffers → RX completions; each
//! completion then goes CQ → EQ → MSI-X vector under the same arming rules
//! as the control path ([`crate::queues`]).
//!
//! Models the device side of drivers/net/ethernet/microsoft/mana/mana_en.c
//! (`mana_start_xmit()`, `mana_poll_tx_cq()`, `mana_process_rx_cqe()`,
//! `mana_rx_skb()`, `mana_cfg_vport_steering()`), Linux 6.1–7.3.
//!
//! Modules, one concern each (none imports a sibling that imports it back):
//! - [`frame`]: Ethernet/VLAN/IPv4/IPv6/TCP/UDP header layouts;
//! - [`headers`]: where a frame's headers are;
//! - [`rss`]: per-vPort steering (the Toeplitz hash is
//!   [`mana_device_api::toeplitz`], which the rig computes too);
//! - [`checksum`]: RFC 1071 checksums (TX insertion, RX verification);
//!   [`tso`]: TCP segmentation;
//! - [`tx`]: SQ WQEs to frames; [`rx`]: frames to RQ buffers;
//! - [`engine`]: batching per doorbell, pending queues, backend polling;
//! - [`backend`]: the [`backend::PacketBackend`] trait and in-memory backends;
//! - [`flows`]: per-flow records (queue, RSS hash), off unless enabled;
//! - [`tap`]: a TAP device as the backend.
//!
//! Bad guest input never panics and never reaches outside guest memory: it
//! becomes the error completion or drop the hardware gives, a counter, and
//! a [`Fault`] the device logs with rate limiting.
#![forbid(unsafe_code)]

pub mod backend;
pub mod checksum;
pub mod engine;
pub mod flows;
pub mod frame;
pub mod headers;
pub mod rss;
pub mod rx;
pub mod tap;
pub mod tso;
pub mod tx;

use crate::interrupt::InterruptSink;
use crate::queues::{Mem, QueueError, Queues};
use headers::Headers;
use mana_device_api::rss::SteeringSnapshot;
use mana_device_api::snapshot::WqKind;
use mana_device_api::traffic::{Totals, Traffic};
use rss::{Selection, Steering, SteeringUpdate};
use std::collections::BTreeMap;

/// Largest frame without FCS and VLAN tags the vPort sends or accepts: the
/// `adapter_mtu` MANA_QUERY_DEV_CONFIG reports, an MTU of 9000 (Azure
/// documents 9000 as MANA's largest MTU: docs/selftests.md) plus the 14-byte
/// Ethernet header; the driver's `max_mtu` is this minus that header
/// (mana_en.c). The netdev starts at 1500 all the same; the kernel's own
/// tests raise it (gro.py's large segments at 4096, ping.py's multi-buffer
/// XDP at 9000).
pub const MAX_FRAME: usize = 9014;
/// The vPort offset MANA_CONFIG_VPORT_TX answers (`tx_vport_offset`); TX
/// OOBs must carry it.
pub const TX_VPORT_OFFSET: u16 = 0;

/// A data-path problem caused by the guest, for the device's rate-limited log.
#[derive(Debug, thiserror::Error)]
pub enum Fault {
    /// A TX WQE failed (and completed with an error CQE).
    #[error(transparent)]
    Tx(#[from] tx::TxError),
    /// An RQ WQE could not take a frame.
    #[error(transparent)]
    Rx(#[from] rx::RxError),
    /// A completion could not be written.
    #[error(transparent)]
    Completion(#[from] QueueError),
}

impl Fault {
    /// The counter name of this kind of fault.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Tx(_) => "tx wqe",
            Self::Rx(_) => "rx wqe",
            Self::Completion(_) => "data-path completion",
        }
    }
}

/// A data-path queue: its vPort and counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueueInfo {
    /// vPort index.
    pub vport: u16,
    /// What the queue moved.
    pub traffic: Traffic,
}

/// Data-path state that lives as long as the queues (dropped with them on
/// DESTROY_HWC and reset): per-vPort steering and per-queue counters.
#[derive(Debug, Default, Clone)]
pub struct DataPath {
    vports: BTreeMap<u16, Steering>,
    sqs: BTreeMap<u32, QueueInfo>,
    rqs: BTreeMap<u32, QueueInfo>,
}

impl DataPath {
    fn map(&mut self, kind: WqKind) -> &mut BTreeMap<u32, QueueInfo> {
        match kind {
            WqKind::Sq => &mut self.sqs,
            WqKind::Rq => &mut self.rqs,
        }
    }

    /// Registers an Ethernet SQ or RQ of vPort `vport` (MANA_CREATE_WQ_OBJ).
    pub fn add_queue(&mut self, kind: WqKind, id: u32, vport: u16) {
        self.map(kind).insert(id, QueueInfo { vport, traffic: Traffic::default() });
    }

    /// Forgets a queue (MANA_DESTROY_WQ_OBJ); an RQ is also dropped from
    /// every vPort's steering.
    pub fn remove_queue(&mut self, kind: WqKind, id: u32) {
        self.map(kind).remove(&id);
        if kind == WqKind::Rq {
            for steering in self.vports.values_mut() {
                steering.forget_rq(id);
            }
        }
    }

    /// The vPort and counters of a data-path queue, if it is one.
    pub fn queue(&self, kind: WqKind, id: u32) -> Option<QueueInfo> {
        match kind {
            WqKind::Sq => self.sqs.get(&id).copied(),
            WqKind::Rq => self.rqs.get(&id).copied(),
        }
    }

    /// Whether SQ `id` is an Ethernet SQ (not the HWC's).
    pub fn is_data_sq(&self, id: u32) -> bool {
        self.sqs.contains_key(&id)
    }

    /// Applies a validated MANA_CONFIG_VPORT_RX to vPort `vport`, at once.
    pub fn configure(&mut self, vport: u16, update: SteeringUpdate) {
        self.vports.entry(vport).or_default().apply(update);
    }

    /// Whether vPort `vport` receives: configured, with RX on.
    pub fn receiving(&self, vport: u16) -> bool {
        self.vports.get(&vport).is_some_and(|s| s.receiving())
    }

    /// Where vPort `vport` steers `frame`; `None` for a vPort never configured.
    pub fn select(&self, vport: u16, frame: &[u8], headers: &Headers) -> Option<Selection> {
        self.vports.get(&vport).map(|s| s.select(frame, headers))
    }

    /// How many vPorts are steered, and how many Ethernet SQs and RQs are known.
    pub fn sizes(&self) -> (usize, usize, usize) {
        (self.vports.len(), self.sqs.len(), self.rqs.len())
    }

    /// Steering of every configured vPort.
    pub fn steering(&self) -> Vec<SteeringSnapshot> {
        self.vports.iter().map(|(&v, s)| s.snapshot(v)).collect()
    }

    fn queue_mut(&mut self, kind: WqKind, id: u32) -> &mut QueueInfo {
        self.map(kind).entry(id).or_insert(QueueInfo { vport: 0, traffic: Traffic::default() })
    }
}

/// Everything a data-path step touches, borrowed from the device.
pub struct Env<'a> {
    /// Every queue.
    pub queues: &'a mut Queues,
    /// Steering and per-queue state.
    pub datapath: &'a mut DataPath,
    /// Device-wide totals.
    pub totals: &'a mut Totals,
    /// Guest memory.
    pub mem: &'a Mem,
    /// MSI-X delivery.
    pub irq: &'a dyn InterruptSink,
    /// The MANA device's `gpa_mkey` (GDMA_REGISTER_DEVICE); `None` before
    /// registration, when every SGE is refused.
    pub mem_key: Option<u32>,
    /// Per-flow records (when enabled).
    pub flows: &'a mut flows::FlowTable,
}

impl Env<'_> {
    /// Counts `frame` moved by queue `id`: on the queue, in the totals and
    /// under its destination's class.
    fn moved(&mut self, kind: WqKind, id: u32, frame: &[u8]) {
        self.datapath.queue_mut(kind, id).traffic.moved(frame.len());
        self.total(kind).moved(frame.len());
        match kind {
            WqKind::Sq => self.totals.tx_by_destination.count(frame),
            WqKind::Rq => self.totals.rx_by_destination.count(frame),
        }
    }

    /// Counts a frame dropped by queue `id` (`guest_error`: the guest's entry was bad).
    fn dropped(&mut self, kind: WqKind, id: u32, guest_error: bool) {
        let traffic = &mut self.datapath.queue_mut(kind, id).traffic;
        traffic.drops += 1;
        traffic.errors += u64::from(guest_error);
        let total = self.total(kind);
        total.drops += 1;
        total.errors += u64::from(guest_error);
    }

    fn total(&mut self, kind: WqKind) -> &mut Traffic {
        match kind {
            WqKind::Sq => &mut self.totals.tx,
            WqKind::Rq => &mut self.totals.rx,
        }
    }
}
