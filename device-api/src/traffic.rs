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
    /// `rx.packets` and `rx.bytes` by the frames' destination MAC.
    #[serde(default)]
    pub rx_by_destination: ByDestination,
    /// `tx.packets` and `tx.bytes` by the frames' destination MAC.
    #[serde(default)]
    pub tx_by_destination: ByDestination,
}

/// What an Ethernet frame's destination MAC address names (IEEE 802: the
/// I/G bit, bit 0 of the first octet, set for a group address; the group of
/// all stations is ff:ff:ff:ff:ff:ff).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// One station (I/G bit clear).
    Unicast,
    /// A group other than all stations (I/G bit set).
    Multicast,
    /// Every station (ff:ff:ff:ff:ff:ff).
    Broadcast,
}

impl Destination {
    /// The class of `frame`'s destination (its first 6 bytes); None for a
    /// frame too short to hold one.
    pub fn of(frame: &[u8]) -> Option<Destination> {
        let mac = frame.get(..6)?;
        Some(if mac[0] & 1 == 0 {
            Destination::Unicast
        } else if mac.iter().all(|&b| b == 0xff) {
            Destination::Broadcast
        } else {
            Destination::Multicast
        })
    }
}

/// Frames and their bytes (Ethernet frames without FCS).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FrameCount {
    /// Frames.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// Frames moved, by [`Destination`]; a frame shorter than a MAC address
/// is in none of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ByDestination {
    /// To one station.
    pub unicast: FrameCount,
    /// To a group other than all stations.
    pub multicast: FrameCount,
    /// To every station.
    pub broadcast: FrameCount,
}

impl ByDestination {
    /// Counts `frame` under its destination's class.
    pub fn count(&mut self, frame: &[u8]) {
        let class = match Destination::of(frame) {
            Some(Destination::Unicast) => &mut self.unicast,
            Some(Destination::Multicast) => &mut self.multicast,
            Some(Destination::Broadcast) => &mut self.broadcast,
            None => return,
        };
        class.packets += 1;
        class.bytes += frame.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_destination_class_is_the_group_bit_of_the_first_octet_and_all_ones_is_broadcast() {
        // Addresses from IEEE 802 and the IANA registries: 01:00:5e (IPv4
        // multicast), 33:33 (IPv6 multicast), 01:80:c2:00:00:0e (LLDP).
        let cases: [(&[u8], Option<Destination>); 8] = [
            (&[0x00, 0x15, 0x5d, 0x01, 0x02, 0x03], Some(Destination::Unicast)),
            (&[0x02, 0, 0, 0, 0, 1], Some(Destination::Unicast)),
            (&[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff], Some(Destination::Unicast)),
            (&[0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb], Some(Destination::Multicast)),
            (&[0x33, 0x33, 0x00, 0x00, 0x00, 0x01], Some(Destination::Multicast)),
            (&[0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e], Some(Destination::Multicast)),
            (&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff], Some(Destination::Broadcast)),
            (&[0xff, 0xff, 0xff, 0xff, 0xff], None),
        ];
        for (frame, class) in cases {
            assert_eq!(Destination::of(frame), class, "{frame:02x?}");
        }
        assert_eq!(Destination::of(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x08, 0x00]), Some(Destination::Multicast));
    }

    #[test]
    fn frames_are_counted_with_their_bytes_under_their_class_and_runts_under_none() {
        let mut by = ByDestination::default();
        by.count(&[0xff; 60]);
        by.count(&[0x00; 1514]);
        by.count(&[0x00; 64]);
        by.count(&[0x33; 90]);
        by.count(&[0x01; 3]);
        assert_eq!(by.unicast, FrameCount { packets: 2, bytes: 1578 });
        assert_eq!(by.multicast, FrameCount { packets: 1, bytes: 90 });
        assert_eq!(by.broadcast, FrameCount { packets: 1, bytes: 60 });
    }
}
