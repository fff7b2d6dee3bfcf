//! Which flows a traffic run drives, chosen from the RSS state the guest's
//! driver programmed (MANA_CONFIG_VPORT_RX: Toeplitz key, hash types,
//! indirection table of RQs; read from the emulated device), so that every
//! active RQ receives at least one flow.
//!
//! The model: a frame from the peer to the guest (the direction RSS steers)
//! is hashed over source address, destination address, source port and
//! destination port, in network byte order, with the NDIS Toeplitz function
//! (`mana_device_api::toeplitz::hash`, the bit-by-bit reference);
//! the indirection slot is `hash mod n` (n = the table's size, a power of two
//! in every driver: also `hash & (n - 1)`, what `mana_get_tx_queue()` uses);
//! the RQ is the table's entry there (docs/mana-protocol.md §6.5). Flows
//! 0..k-1 (k active RQs) search their port until they land on RQ i; the rest
//! take random ports. Each flow's opener alternates (even: the peer connects,
//! odd: the guest), so both ends open connections and send first.
//!
//! Pure: no I/O. Same inputs, same plan.

use mana_device_api::rss::NdisHashTypes;
use mana_device_api::rss::SteeringSnapshot;
use mana_device_api::toeplitz::{self, KEY_SIZE};
use manarig_flows::proto::{FlowSpec, Plan, Side, PROTOCOL_VERSION};
use serde::Serialize;
use std::collections::BTreeSet;
use std::net::Ipv4Addr;

/// Ports flows use on either end: below the guest's ephemeral range
/// (32768-60999, where its control connection's port comes from) and above
/// the peer's control port.
pub const PORTS: std::ops::Range<u16> = 10_000..30_000;
/// Port candidates tried per targeted flow before giving up (a table where
/// an RQ holds one slot of 64 needs about 64).
const MAX_TRIES: u32 = 20_000;

/// What to plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRequest {
    /// The peer's address.
    pub host: Ipv4Addr,
    /// The guest's address.
    pub guest: Ipv4Addr,
    /// How many flows (None: twice the active RQs).
    pub flows: Option<u32>,
    /// Bytes each flow carries to the guest.
    pub to_guest: u64,
    /// Bytes each flow carries back.
    pub to_host: u64,
    /// Milliseconds the flows may take.
    pub limit_ms: u64,
    /// Mixed into the ports' random seed, so that each round of a soak
    /// (`rig::soak`) gets other ports (0 for a plain run).
    pub round: u32,
    /// (guest port, host port) pairs not to use: earlier rounds' 4-tuples,
    /// which the end that closed first may still hold in TIME_WAIT for a
    /// minute (a `connect()` from the same 4-tuple then fails with
    /// EADDRNOTAVAIL).
    pub avoid: BTreeSet<(u16, u16)>,
}

/// Errors planning.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The driver never configured RX steering of vPort 0.
    #[error("the device has no RX steering for vPort 0 (MANA_CONFIG_VPORT_RX never came)")]
    NoSteering,
    /// vPort 0 does not receive.
    #[error("vPort 0 has RX disabled")]
    RxDisabled,
    /// The key in the snapshot is not 40 hex bytes.
    #[error("RSS key {0:?} is not {KEY_SIZE} hex bytes")]
    BadKey(String),
    /// No active RQ to send to.
    #[error("no RQ in the indirection table and no default RQ")]
    NoRq,
    /// No port reaches an RQ.
    #[error("no port in {lo}..{hi} steers a flow to RQ {rq}")]
    Unreachable {
        /// The RQ.
        rq: u32,
        /// Lowest port tried.
        lo: u16,
        /// One past the highest.
        hi: u16,
    },
    /// More flows than ports.
    #[error("{0} flows: more than there are ports to give them")]
    TooMany(u32),
}

/// One planned flow with what the model predicts for its frames to the guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PlannedFlow {
    /// The flow as both ends run it.
    pub spec: FlowSpec,
    /// The Toeplitz hash of its 4-tuple (peer → guest).
    pub hash: u32,
    /// The NDIS hash-type bit the device should report (2 = TCP/IPv4).
    pub hash_type: u16,
    /// Its indirection-table slot (`hash mod n`), None when RSS does not spread it.
    pub slot: Option<usize>,
    /// The RQ its frames should reach.
    pub rq: Option<u32>,
    /// Whether its port was searched to reach a given RQ (else random).
    pub targeted: bool,
}

/// The vPort's steering as the model reads it.
#[derive(Debug, Clone)]
pub struct SteeringModel {
    key: [u8; KEY_SIZE],
    hash_types: NdisHashTypes,
    rss_enabled: bool,
    rx_enabled: bool,
    default_rq: Option<u32>,
    table: Vec<Option<u32>>,
}

impl SteeringModel {
    /// The model of `snapshot` (the device's view of one vPort).
    ///
    /// # Errors
    /// [`PlanError::BadKey`] for a key that is not 40 hex bytes.
    pub fn new(snapshot: &SteeringSnapshot) -> Result<Self, PlanError> {
        let bad = || PlanError::BadKey(snapshot.key.clone());
        let text = snapshot.key.as_bytes();
        if text.len() != 2 * KEY_SIZE {
            return Err(bad());
        }
        let mut key = [0u8; KEY_SIZE];
        for (byte, pair) in key.iter_mut().zip(text.chunks(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| bad())?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
        }
        Ok(Self {
            key,
            hash_types: NdisHashTypes::from_bits(snapshot.hash_types.into()),
            rss_enabled: snapshot.rss_enabled,
            rx_enabled: snapshot.rx_enabled,
            default_rq: snapshot.default_rq,
            table: snapshot.table.clone(),
        })
    }

    /// The hash and hash type of a TCP/IPv4 frame from `src:sport` to
    /// `dst:dport` (the 4-tuple when TCP/IPv4 hashing is on, else the
    /// addresses when IPv4 hashing is, else none: 0, 0).
    pub fn hash(&self, src: Ipv4Addr, sport: u16, dst: Ipv4Addr, dport: u16) -> (u32, u16) {
        let mut input = [0u8; 12];
        input[..4].copy_from_slice(&src.octets());
        input[4..8].copy_from_slice(&dst.octets());
        input[8..10].copy_from_slice(&sport.to_be_bytes());
        input[10..].copy_from_slice(&dport.to_be_bytes());
        let none = NdisHashTypes::new();
        let bit = |t: NdisHashTypes| u16::from(t.into_bits());
        if self.hash_types.tcp_ipv4() {
            (toeplitz::hash(&self.key, &input), bit(none.with_tcp_ipv4(true)))
        } else if self.hash_types.ipv4() {
            (toeplitz::hash(&self.key, &input[..8]), bit(none.with_ipv4(true)))
        } else {
            (0, 0)
        }
    }

    /// The slot and RQ for a frame with this hash (see the module docs).
    pub fn steer(&self, hash: u32, hash_type: u16) -> (Option<usize>, Option<u32>) {
        if !self.rx_enabled {
            return (None, None);
        }
        if self.rss_enabled && hash_type != 0 && !self.table.is_empty() {
            let slot = hash as usize % self.table.len();
            return (Some(slot), self.table[slot]);
        }
        (None, self.default_rq)
    }

    /// The RQs frames can reach: the table's, in order of first appearance
    /// (the default RQ when RSS is off).
    pub fn active_rqs(&self) -> Vec<u32> {
        let mut rqs = Vec::new();
        let candidates: Vec<u32> = if self.rss_enabled {
            self.table.iter().flatten().copied().collect()
        } else {
            self.default_rq.into_iter().collect()
        };
        for rq in candidates {
            if !rqs.contains(&rq) {
                rqs.push(rq);
            }
        }
        rqs
    }
}

/// The plan's random ports: the workspace's SplitMix64, seeded from the key.
struct Random(manarig_model::random::Rng);

impl Random {
    fn port(&mut self) -> u16 {
        PORTS.start + (self.0.next_u64() % u64::from(PORTS.end - PORTS.start)) as u16
    }
}

/// Plans the flows for vPort 0's `steering` (see the module docs).
///
/// # Errors
/// [`PlanError`]: no usable steering, or no port reaches an active RQ.
pub fn plan(steering: Option<&SteeringSnapshot>, req: &PlanRequest) -> Result<(Plan, Vec<PlannedFlow>), PlanError> {
    let model = SteeringModel::new(steering.ok_or(PlanError::NoSteering)?)?;
    if !model.rx_enabled {
        return Err(PlanError::RxDisabled);
    }
    let rqs = model.active_rqs();
    if rqs.is_empty() {
        return Err(PlanError::NoRq);
    }
    let n = req.flows.unwrap_or(2 * rqs.len() as u32);
    if n > u32::from(PORTS.end - PORTS.start) / 2 {
        return Err(PlanError::TooMany(n));
    }
    let seed = model.key.iter().fold(0u64, |acc, &b| acc.rotate_left(8) ^ u64::from(b));
    let seed = seed ^ u64::from(req.round).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut random = Random(manarig_model::random::Rng::new(seed));
    let (mut guest_ports, mut host_ports) = (Vec::new(), Vec::new());
    let mut planned = Vec::new();
    for id in 0..n {
        let opener = if id % 2 == 0 { Side::Host } else { Side::Guest };
        let target = rqs.get(id as usize).copied();
        // The listening end's port is fixed by the flow's id (the first n
        // ports); the opener's is searched above them.
        let fixed = PORTS.start + id as u16;
        let mut chosen = None;
        for _ in 0..MAX_TRIES {
            let port = random.port();
            if port < PORTS.start + n as u16 {
                continue;
            }
            let (g, h, taken) = match opener {
                Side::Host => (fixed, port, host_ports.contains(&port)),
                Side::Guest => (port, fixed, guest_ports.contains(&port)),
            };
            if taken || req.avoid.contains(&(g, h)) {
                continue;
            }
            let (hash, hash_type) = model.hash(req.host, h, req.guest, g);
            let (slot, rq) = model.steer(hash, hash_type);
            if target.is_none() || rq == target {
                chosen = Some((g, h, hash, hash_type, slot, rq));
                break;
            }
        }
        let Some((g, h, hash, hash_type, slot, rq)) = chosen else {
            return Err(PlanError::Unreachable { rq: target.unwrap_or_default(), lo: PORTS.start, hi: PORTS.end });
        };
        guest_ports.push(g);
        host_ports.push(h);
        planned.push(PlannedFlow {
            spec: FlowSpec { id, opener, guest_port: g, host_port: h, to_guest: req.to_guest, to_host: req.to_host },
            hash,
            hash_type,
            slot,
            rq,
            targeted: target.is_some(),
        });
    }
    let plan = Plan {
        version: PROTOCOL_VERSION,
        host: req.host,
        guest: req.guest,
        flows: planned.iter().map(|p| p.spec).collect(),
        limit_ms: req.limit_ms,
    };
    Ok((plan, planned))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of Microsoft's RSS verification suite ("Verifying the RSS
    /// Hash Calculation", learn.microsoft.com/windows-hardware/drivers/network).
    const KEY: &str = "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa";

    fn snapshot(table: Vec<Option<u32>>) -> SteeringSnapshot {
        SteeringSnapshot {
            vport: 0,
            rx_enabled: true,
            rss_enabled: true,
            default_rq: Some(1),
            hash_types: 0x3f,
            key: KEY.into(),
            table,
        }
    }

    fn request(flows: Option<u32>) -> PlanRequest {
        PlanRequest {
            host: Ipv4Addr::new(192, 0, 2, 1),
            guest: Ipv4Addr::new(192, 0, 2, 2),
            flows,
            to_guest: 1000,
            to_host: 2000,
            limit_ms: 3000,
            round: 0,
            avoid: BTreeSet::new(),
        }
    }

    #[test]
    fn the_model_hashes_the_published_tcp_ipv4_vector() {
        // First IPv4 row of the suite: 66.9.149.187:2794 -> 161.142.100.80:1766, TCP 0x51ccc178.
        let m = SteeringModel::new(&snapshot(vec![Some(1)])).expect("model");
        let (hash, ty) = m.hash(Ipv4Addr::new(66, 9, 149, 187), 2794, Ipv4Addr::new(161, 142, 100, 80), 1766);
        assert_eq!((hash, ty), (0x51cc_c178, 2));
        let two_tuple =
            SteeringModel::new(&SteeringSnapshot { hash_types: 0x1, ..snapshot(vec![Some(1)]) }).expect("model");
        // The same row, IPv4 only: 0x323e8fc2.
        let (hash, ty) = two_tuple.hash(Ipv4Addr::new(66, 9, 149, 187), 2794, Ipv4Addr::new(161, 142, 100, 80), 1766);
        assert_eq!((hash, ty), (0x323e_8fc2, 1));
    }

    #[test]
    fn every_active_rq_gets_a_flow_and_the_rest_are_random_and_distinct() {
        // 8 queues, the driver's default table: entry i = RQ (i mod 8) + 10.
        let table: Vec<Option<u32>> = (0..64).map(|i| Some(10 + i % 8)).collect();
        let (plan, planned) = super::plan(Some(&snapshot(table)), &request(None)).expect("plan");
        assert_eq!(plan.flows.len(), 16, "twice the active RQs");
        let targeted: Vec<Option<u32>> = planned.iter().filter(|p| p.targeted).map(|p| p.rq).collect();
        assert_eq!(targeted, (10..18).map(Some).collect::<Vec<_>>());
        let m = SteeringModel::new(&snapshot((0..64).map(|i| Some(10 + i % 8)).collect())).expect("model");
        for p in &planned {
            let (hash, ty) = m.hash(plan.host, p.spec.host_port, plan.guest, p.spec.guest_port);
            assert_eq!((hash, ty, p.slot), (p.hash, p.hash_type, Some(hash as usize % 64)));
            assert_eq!(p.rq, Some(10 + (hash % 64) % 8));
            assert!(PORTS.contains(&p.spec.guest_port) && PORTS.contains(&p.spec.host_port));
        }
        let mut tuples: Vec<(u16, u16)> = plan.flows.iter().map(|f| (f.guest_port, f.host_port)).collect();
        tuples.sort_unstable();
        tuples.dedup();
        assert_eq!(tuples.len(), 16, "distinct 4-tuples");
        assert!(
            plan.flows.iter().any(|f| f.opener == Side::Guest) && plan.flows.iter().any(|f| f.opener == Side::Host)
        );
        assert_eq!(
            super::plan(Some(&snapshot((0..64).map(|i| Some(10 + i % 8)).collect())), &request(None)).expect("again").0,
            plan
        );
    }

    #[test]
    fn without_steering_rss_or_rqs_there_is_no_plan_but_rss_off_sends_all_to_the_default_rq() {
        assert_eq!(super::plan(None, &request(None)).expect_err("none"), PlanError::NoSteering);
        let off = SteeringSnapshot { rx_enabled: false, ..snapshot(vec![Some(1)]) };
        assert_eq!(super::plan(Some(&off), &request(None)).expect_err("off"), PlanError::RxDisabled);
        let empty = SteeringSnapshot { default_rq: None, rss_enabled: false, ..snapshot(vec![]) };
        assert_eq!(super::plan(Some(&empty), &request(None)).expect_err("no rq"), PlanError::NoRq);
        let single = SteeringSnapshot { rss_enabled: false, ..snapshot(vec![Some(3)]) };
        let (_, planned) = super::plan(Some(&single), &request(Some(3))).expect("plan");
        assert!(planned.iter().all(|p| p.rq == Some(1) && p.slot.is_none()), "{planned:?}");
        let bad = SteeringSnapshot { key: "zz".into(), ..snapshot(vec![Some(3)]) };
        assert!(matches!(super::plan(Some(&bad), &request(None)), Err(PlanError::BadKey(_))));
    }

    #[test]
    fn a_later_round_avoids_the_earlier_rounds_4_tuples_and_still_reaches_every_rq() {
        let table = || (0..64).map(|i| Some(10 + i % 8)).collect::<Vec<_>>();
        let (first, _) = super::plan(Some(&snapshot(table())), &request(None)).expect("round 0");
        let used: BTreeSet<(u16, u16)> = first.flows.iter().map(|f| (f.guest_port, f.host_port)).collect();
        let next = PlanRequest { round: 1, avoid: used.clone(), ..request(None) };
        let (second, planned) = super::plan(Some(&snapshot(table())), &next).expect("round 1");
        assert!(second.flows.iter().all(|f| !used.contains(&(f.guest_port, f.host_port))), "{second:?}");
        let targeted: Vec<Option<u32>> = planned.iter().filter(|p| p.targeted).map(|p| p.rq).collect();
        assert_eq!(targeted, (10..18).map(Some).collect::<Vec<_>>());
    }
}
