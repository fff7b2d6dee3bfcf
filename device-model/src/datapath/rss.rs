//! Receive-side scaling as the driver programs it with MANA_CONFIG_VPORT_RX
//! (`mana_cfg_vport_steering()` in drivers/net/ethernet/microsoft/mana/mana_en.c,
//! Linux 6.1–7.3; `struct mana_cfg_rx_steer_req_v2` in include/net/mana/mana.h):
//! per vPort a Toeplitz key (40 bytes), the enabled hash types, a default RX
//! object and an indirection table of RQs.
//!
//! Steering of one frame: the hash input is the source and destination
//! address, then the source and destination port when the frame is TCP or
//! UDP and that 4-tuple type is enabled (NDIS order, see [`mana_device_api::toeplitz`]);
//! the RQ is `table[hash % table.len()]` (the driver's table is a power of
//! two, `MANA_INDIRECT_TABLE_DEF_SIZE` = 64, so this is also `hash & (n - 1)`,
//! the mask `mana_select_queue()`'s software table uses). Frames without a
//! hash (not IP, or no enabled type matches) and every frame while RSS is off
//! go to the default RQ. A new configuration applies to the next frame.
#![forbid(unsafe_code)]

use super::headers::{Headers, Network, Transport};
use crate::defs::NdisHashTypes;
use mana_device_api::rss::SteeringSnapshot;
use mana_device_api::toeplitz::{ToeplitzTable, KEY_SIZE};

/// The hash types used when the request enables none: 6.x requests have no
/// `rss_hash_types` field (reserved zero) and 7.3 sends these six
/// (`mana_cfg_vport_steering()`, 7.3.4): TCP and UDP 4-tuples, IP 2-tuples.
pub fn default_hash_types() -> NdisHashTypes {
    NdisHashTypes::new()
        .with_ipv4(true)
        .with_tcp_ipv4(true)
        .with_udp_ipv4(true)
        .with_ipv6(true)
        .with_tcp_ipv6(true)
        .with_udp_ipv6(true)
}

/// A validated MANA_CONFIG_VPORT_RX request, RX objects already resolved to RQ ids.
#[derive(Debug, Clone, Default)]
pub struct SteeringUpdate {
    /// New RX state (`None`: unchanged, TRI_STATE_UNKNOWN).
    pub rx_enabled: Option<bool>,
    /// New RSS state (`None`: unchanged).
    pub rss_enabled: Option<bool>,
    /// New default RQ (`Some(None)`: INVALID_MANA_HANDLE, no default).
    pub default_rq: Option<Option<u32>>,
    /// New key.
    pub key: Option<[u8; KEY_SIZE]>,
    /// New indirection table (RQ ids, at least one entry).
    pub table: Option<Vec<u32>>,
    /// Enabled hash types (always sent; 0 means [`default_hash_types`]).
    pub hash_types: NdisHashTypes,
}

/// Where a frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    /// The RQ, or `None` when RX is off or no RQ is configured for the frame.
    pub rq: Option<u32>,
    /// The Toeplitz hash (0 when `hash_type` is 0).
    pub hash: u32,
    /// The one [`NdisHashTypes`] bit describing the hash input, 0 = no hash.
    pub hash_type: u16,
}

/// The RX steering state of one vPort.
#[derive(Debug, Clone)]
pub struct Steering {
    rx_enabled: bool,
    rss_enabled: bool,
    default_rq: Option<u32>,
    key: [u8; KEY_SIZE],
    toeplitz: ToeplitzTable,
    hash_types: NdisHashTypes,
    table: Vec<Option<u32>>,
}

impl Default for Steering {
    /// A vPort before its first CONFIG_VPORT_RX: RX off, zero key, no table.
    fn default() -> Self {
        let key = [0; KEY_SIZE];
        Self {
            rx_enabled: false,
            rss_enabled: false,
            default_rq: None,
            key,
            toeplitz: ToeplitzTable::new(&key),
            hash_types: default_hash_types(),
            table: Vec::new(),
        }
    }
}

impl Steering {
    /// Applies a validated update at once.
    pub fn apply(&mut self, update: SteeringUpdate) {
        if let Some(rx) = update.rx_enabled {
            self.rx_enabled = rx;
        }
        if let Some(rss) = update.rss_enabled {
            self.rss_enabled = rss;
        }
        if let Some(default_rq) = update.default_rq {
            self.default_rq = default_rq;
        }
        if let Some(key) = update.key {
            if key != self.key {
                self.key = key;
                self.toeplitz = ToeplitzTable::new(&key);
            }
        }
        if let Some(table) = update.table {
            self.table = table.into_iter().map(Some).collect();
        }
        self.hash_types =
            if update.hash_types.into_bits().get() == 0 { default_hash_types() } else { update.hash_types };
    }

    /// Forgets RQ `rq` (MANA_DESTROY_WQ_OBJ): frames that would go there are dropped.
    pub fn forget_rq(&mut self, rq: u32) {
        if self.default_rq == Some(rq) {
            self.default_rq = None;
        }
        for entry in &mut self.table {
            if *entry == Some(rq) {
                *entry = None;
            }
        }
    }

    /// Whether RX is on (MANA_CONFIG_VPORT_RX's `rx_enable`).
    pub fn receiving(&self) -> bool {
        self.rx_enabled
    }

    /// Chooses the RQ for `frame` and computes its hash.
    pub fn select(&self, frame: &[u8], headers: &Headers) -> Selection {
        let (hash, hash_type) = self.hash(frame, headers);
        let rq = if !self.rx_enabled {
            None
        } else if self.rss_enabled && hash_type != 0 && !self.table.is_empty() {
            self.table[hash as usize % self.table.len()]
        } else {
            self.default_rq
        };
        Selection { rq, hash, hash_type }
    }

    /// The hash and its NDIS type bit (0, 0 when no enabled type applies).
    fn hash(&self, frame: &[u8], headers: &Headers) -> (u32, u16) {
        let Some((src, dst)) = headers.addresses(frame) else {
            return (0, 0);
        };
        let v4 = matches!(headers.network, Network::Ipv4 { .. });
        let none = NdisHashTypes::new();
        let l4_type = match (v4, headers.transport) {
            (true, Transport::Tcp { .. }) => none.with_tcp_ipv4(true),
            (true, Transport::Udp { .. }) => none.with_udp_ipv4(true),
            (false, Transport::Tcp { .. }) => none.with_tcp_ipv6(true),
            (false, Transport::Udp { .. }) => none.with_udp_ipv6(true),
            (_, Transport::None) => none,
        };
        let ip_type = if v4 { none.with_ipv4(true) } else { none.with_ipv6(true) };
        let enabled = |t: NdisHashTypes| t.into_bits().get() & self.hash_types.into_bits().get() != 0;
        let mut input = [0u8; 36];
        input[..src.len()].copy_from_slice(src);
        input[src.len()..src.len() + dst.len()].copy_from_slice(dst);
        let ip_len = src.len() + dst.len();
        if let (true, Some(ports)) = (enabled(l4_type), headers.ports(frame)) {
            input[ip_len..ip_len + 4].copy_from_slice(ports);
            return (self.toeplitz.hash(&input[..ip_len + 4]), l4_type.into_bits().get());
        }
        if !enabled(ip_type) {
            return (0, 0);
        }
        (self.toeplitz.hash(&input[..ip_len]), ip_type.into_bits().get())
    }

    /// The serializable view for vPort `vport`.
    pub fn snapshot(&self, vport: u16) -> SteeringSnapshot {
        SteeringSnapshot {
            vport,
            rx_enabled: self.rx_enabled,
            rss_enabled: self.rss_enabled,
            default_rq: self.default_rq,
            hash_types: self.hash_types.into_bits().get(),
            key: hex::encode(self.key),
            table: self.table.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::headers::{parse, tests::Build};
    use super::*;

    /// Key of Microsoft's RSS verification suite (source cited there).
    use mana_device_api::toeplitz::VERIFICATION_KEY as KEY;

    fn steering(table: Vec<u32>) -> Steering {
        let mut s = Steering::default();
        s.apply(SteeringUpdate {
            rx_enabled: Some(true),
            rss_enabled: Some(true),
            default_rq: Some(Some(100)),
            key: Some(KEY),
            table: Some(table),
            hash_types: NdisHashTypes::new(),
        });
        s
    }

    #[test]
    fn a_tcp_frame_hashes_its_4_tuple_and_lands_on_table_entry_hash_mod_size() {
        // First IPv4 row of the suite: 66.9.149.187:2794 -> 161.142.100.80:1766,
        // with TCP 0x51ccc178 (same source as KEY).
        let f = Build::tcp4([66, 9, 149, 187], [161, 142, 100, 80], 2794, 1766).frame();
        let table: Vec<u32> = (0..64).collect();
        let sel = steering(table).select(&f, &parse(&f));
        assert_eq!(sel.hash, 0x51cc_c178);
        assert_eq!(sel.hash_type, NdisHashTypes::new().with_tcp_ipv4(true).into_bits().get());
        assert_eq!(sel.rq, Some(0x51cc_c178 % 64));
    }

    #[test]
    fn udp_without_its_4_tuple_type_hashes_the_addresses_only() {
        let mut b = Build::tcp4([66, 9, 149, 187], [161, 142, 100, 80], 2794, 1766);
        b.protocol = crate::datapath::frame::IPPROTO_UDP;
        let f = b.frame();
        let mut s = steering(vec![7]);
        s.apply(SteeringUpdate {
            hash_types: NdisHashTypes::new().with_ipv4(true).with_tcp_ipv4(true),
            ..SteeringUpdate::default()
        });
        let sel = s.select(&f, &parse(&f));
        // IPv4 only: 0x323e8fc2 (same suite row).
        assert_eq!((sel.hash, sel.hash_type), (0x323e_8fc2, 1));
        assert_eq!(sel.rq, Some(7));
    }

    #[test]
    fn non_ip_frames_and_rss_off_go_to_the_default_rq_and_rx_off_drops() {
        let mut arp = Build::tcp4([1, 1, 1, 1], [2, 2, 2, 2], 1, 2).frame();
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        let mut s = steering(vec![1, 2, 3, 4]);
        assert_eq!(s.select(&arp, &parse(&arp)), Selection { rq: Some(100), hash: 0, hash_type: 0 });
        let f = Build::tcp4([1, 1, 1, 1], [2, 2, 2, 2], 1, 2).frame();
        s.apply(SteeringUpdate { rss_enabled: Some(false), ..SteeringUpdate::default() });
        assert_eq!(s.select(&f, &parse(&f)).rq, Some(100));
        s.apply(SteeringUpdate { rx_enabled: Some(false), ..SteeringUpdate::default() });
        assert_eq!(s.select(&f, &parse(&f)).rq, None);
    }

    #[test]
    fn a_forgotten_rq_is_no_longer_chosen() {
        let f = Build::tcp4([66, 9, 149, 187], [161, 142, 100, 80], 2794, 1766).frame();
        let mut s = steering(vec![5]);
        s.forget_rq(5);
        s.forget_rq(100);
        let sel = s.select(&f, &parse(&f));
        assert_eq!(sel.rq, None);
        assert_eq!(sel.hash, 0x51cc_c178, "the hash is still computed");
    }
}
