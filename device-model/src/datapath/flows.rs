//! Per-flow records: which queue each TCP/UDP flow used, the RSS hash the
//! device computed for it and put in its RX CQEs, and how many frames it
//! moved. The rig compares these with its own Toeplitz model of the key and
//! indirection table the driver programmed (harness `traffic` checks).
//!
//! Off by default (capacity 0: one branch per frame); [`FlowTable::enable`]
//! keeps up to `capacity` distinct flows and only counts the frames of any
//! later one ([`FlowTable::overflow`]). A flow is keyed by direction,
//! protocol and 4-tuple as the frame carries it (RX: the peer is the source).
#![forbid(unsafe_code)]

use super::frame::{IPPROTO_TCP, IPPROTO_UDP};
use super::headers::{Headers, Network, Transport};
use super::rx::RxVerdict;
use mana_device_api::flows::{Direction, FlowKey, FlowRecord, FlowsSnapshot};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The per-flow records of a device, bounded.
#[derive(Debug, Clone, Default)]
pub struct FlowTable {
    capacity: usize,
    flows: BTreeMap<FlowKey, FlowRecord>,
    overflow: u64,
}

/// The flow key of `frame`, if it is TCP or UDP over IP and not a fragment.
pub fn flow_key(direction: Direction, frame: &[u8], headers: &Headers) -> Option<FlowKey> {
    let protocol = match headers.transport {
        Transport::Tcp { .. } => IPPROTO_TCP,
        Transport::Udp { .. } => IPPROTO_UDP,
        Transport::None => return None,
    };
    let (src, dst) = headers.addresses(frame)?;
    let ports = headers.ports(frame)?;
    let ip = |bytes: &[u8]| -> Option<IpAddr> {
        match headers.network {
            Network::Ipv4 { .. } => Some(IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(bytes).ok()?))),
            Network::Ipv6 { .. } => Some(IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(bytes).ok()?))),
            Network::Other => None,
        }
    };
    Some(FlowKey {
        direction,
        protocol,
        src: ip(src)?,
        src_port: u16::from_be_bytes([*ports.first()?, *ports.get(1)?]),
        dst: ip(dst)?,
        dst_port: u16::from_be_bytes([*ports.get(2)?, *ports.get(3)?]),
    })
}

impl FlowTable {
    /// Keeps up to `capacity` flows from now on (0 turns recording off and
    /// forgets every flow).
    pub fn enable(&mut self, capacity: usize) {
        self.capacity = capacity;
        if capacity == 0 {
            self.flows.clear();
            self.overflow = 0;
        }
    }

    /// Whether flows are recorded.
    pub fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Flows kept at most (0: recording is off).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Flows kept.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// Whether no flow is kept.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Frames of flows that did not fit.
    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    /// The record of `key`, created if there is room.
    fn entry(&mut self, key: FlowKey) -> Option<&mut FlowRecord> {
        if !self.flows.contains_key(&key) && self.flows.len() >= self.capacity {
            self.overflow += 1;
            return None;
        }
        Some(self.flows.entry(key).or_insert(FlowRecord {
            key,
            queue: None,
            hash: 0,
            hash_type: 0,
            packets: 0,
            bytes: 0,
            dropped: 0,
            other_queue: 0,
        }))
    }

    /// Records a frame received from the network and what became of it.
    pub fn record_rx(&mut self, frame: &[u8], headers: &Headers, hash: u32, hash_type: u16, verdict: RxVerdict) {
        if !self.enabled() {
            return;
        }
        let Some(key) = flow_key(Direction::Rx, frame, headers) else { return };
        let Some(record) = self.entry(key) else { return };
        record.hash = hash;
        record.hash_type = hash_type;
        let rq = match verdict {
            RxVerdict::Delivered { rq, .. } => {
                record.packets += 1;
                record.bytes += frame.len() as u64;
                Some(rq)
            }
            RxVerdict::Truncated { rq } | RxVerdict::NoBuffer { rq } => {
                record.dropped += 1;
                Some(rq)
            }
            RxVerdict::Unsteered => {
                record.dropped += 1;
                None
            }
        };
        note_queue(record, rq);
    }

    /// Records a frame SQ `sq` handed to the backend.
    pub fn record_tx(&mut self, frame: &[u8], headers: &Headers, sq: u32) {
        if !self.enabled() {
            return;
        }
        let Some(key) = flow_key(Direction::Tx, frame, headers) else { return };
        let Some(record) = self.entry(key) else { return };
        record.packets += 1;
        record.bytes += frame.len() as u64;
        note_queue(record, Some(sq));
    }

    /// The serializable view.
    pub fn snapshot(&self) -> FlowsSnapshot {
        FlowsSnapshot {
            capacity: self.capacity,
            flows: self.flows.values().copied().collect(),
            overflow: self.overflow,
        }
    }
}

/// The first queue a flow used is its queue; later frames elsewhere are counted.
fn note_queue(record: &mut FlowRecord, queue: Option<u32>) {
    match (record.queue, queue) {
        (None, q) if record.packets + record.dropped <= 1 => record.queue = q,
        (Some(first), Some(q)) if first != q => record.other_queue += 1,
        (None, Some(_)) => record.other_queue += 1,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::headers::{parse, tests::Build};
    use super::*;

    #[test]
    fn rx_frames_of_one_flow_are_counted_on_one_record_with_their_hash_and_rq() {
        let mut t = FlowTable::default();
        let f = Build::tcp4([10, 0, 0, 1], [10, 0, 0, 2], 4000, 80).frame();
        let h = parse(&f);
        let delivered = RxVerdict::Delivered { rq: 3, hash: 0xabc, hash_type: 2 };
        t.record_rx(&f, &h, 0xabc, 2, delivered);
        assert!(t.snapshot().flows.is_empty(), "off by default");
        t.enable(1);
        t.record_rx(&f, &h, 0xabc, 2, delivered);
        t.record_rx(&f, &h, 0xabc, 2, RxVerdict::NoBuffer { rq: 3 });
        t.record_rx(&f, &h, 0xabc, 2, RxVerdict::Delivered { rq: 4, hash: 0xabc, hash_type: 2 });
        let s = t.snapshot();
        assert_eq!(s.flows.len(), 1);
        let r = s.flows[0];
        assert_eq!((r.queue, r.hash, r.hash_type, r.packets, r.dropped, r.other_queue), (Some(3), 0xabc, 2, 2, 1, 1));
        assert_eq!(r.key.src, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!((r.key.src_port, r.key.dst_port, r.key.protocol), (4000, 80, IPPROTO_TCP));
        // A second flow does not fit: counted only.
        let g = Build::tcp4([10, 0, 0, 1], [10, 0, 0, 2], 4001, 80).frame();
        t.record_tx(&g, &parse(&g), 7);
        assert_eq!((t.snapshot().flows.len(), t.overflow()), (1, 1));
    }

    #[test]
    fn frames_without_ports_are_not_flows() {
        let mut t = FlowTable::default();
        t.enable(8);
        let mut arp = Build::tcp4([1, 1, 1, 1], [2, 2, 2, 2], 1, 2).frame();
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        t.record_rx(&arp, &parse(&arp), 0, 0, RxVerdict::Unsteered);
        assert!(t.snapshot().flows.is_empty());
    }
}
