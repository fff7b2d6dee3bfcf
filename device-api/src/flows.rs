//! Per-flow records: which queue each TCP/UDP flow used, the RSS hash the
//! device computed for it and put in its RX CQEs, and how many frames it
//! moved. The device keeps them (device-model `datapath::flows`, off unless
//! `mana-device --record-flows N`); the rig compares them with its own
//! Toeplitz model of the key and indirection table the driver programmed.
//! A flow is keyed by direction, protocol and 4-tuple as the frame carries
//! it (RX: the peer is the source).
#![forbid(unsafe_code)]

use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// Which way a flow's frames went, seen from the guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// From the network into an RQ.
    Rx,
    /// From an SQ to the network.
    Tx,
}

/// A flow: direction, IP protocol and 4-tuple as the frames carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FlowKey {
    /// RX or TX.
    pub direction: Direction,
    /// IP protocol number (6 TCP, 17 UDP).
    pub protocol: u8,
    /// Source address.
    pub src: IpAddr,
    /// Source port.
    pub src_port: u16,
    /// Destination address.
    pub dst: IpAddr,
    /// Destination port.
    pub dst_port: u16,
}

/// What one flow did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowRecord {
    /// The flow.
    pub key: FlowKey,
    /// RX: the RQ its first frame was steered to; TX: the SQ of its first frame.
    pub queue: Option<u32>,
    /// RX: the Toeplitz hash put in the CQE (`ppi[0].pkt_hash`); 0 for TX.
    pub hash: u32,
    /// RX: the NDIS hash-type bit put in the CQE (`rx_hashtype`); 0 for TX.
    pub hash_type: u16,
    /// Frames delivered (RX: into an RQ buffer; TX: handed to the backend).
    pub packets: u64,
    /// Bytes of those frames (Ethernet, no FCS).
    pub bytes: u64,
    /// RX frames dropped (no buffer posted, unusable buffer, no RQ).
    pub dropped: u64,
    /// Frames that went to another queue than the first one (RSS reprogrammed
    /// mid-flow, or a TX queue change).
    pub other_queue: u64,
}

/// The per-flow records of a device (the snapshot's `flows`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowsSnapshot {
    /// How many flows are kept at most (0: recording is off).
    pub capacity: usize,
    /// Every flow kept, in key order.
    pub flows: Vec<FlowRecord>,
    /// Frames of flows beyond the capacity (counted, not kept).
    pub overflow: u64,
}
