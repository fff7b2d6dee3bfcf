//! Receive-side scaling as the driver programs it and the device reports
//! it: the NDIS hash types ([`NdisHashTypes`], which the wire formats carry
//! in MANA_CONFIG_VPORT_RX and RX completions) and a vPort's steering in the
//! snapshot ([`SteeringSnapshot`]), from which the rig plans its flows with
//! [`crate::toeplitz`].
#![forbid(unsafe_code)]

use bitfield_struct::bitfield;
use zerocopy::little_endian::U16 as Le16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `NDIS_HASH_*` (mana.h): RSS hash types, as CONFIG_VPORT_RX (7.3
/// `rss_hash_types`) enables them and as an RX CQE's `rx_hashtype` reports one.
#[bitfield(u16, repr = Le16, from = Le16::new, into = Le16::get)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NdisHashTypes {
    /// NDIS_HASH_IPV4: source and destination address.
    pub ipv4: bool,
    /// NDIS_HASH_TCP_IPV4: addresses and TCP ports.
    pub tcp_ipv4: bool,
    /// NDIS_HASH_UDP_IPV4: addresses and UDP ports.
    pub udp_ipv4: bool,
    /// NDIS_HASH_IPV6: source and destination address.
    pub ipv6: bool,
    /// NDIS_HASH_TCP_IPV6: addresses and TCP ports.
    pub tcp_ipv6: bool,
    /// NDIS_HASH_UDP_IPV6: addresses and UDP ports.
    pub udp_ipv6: bool,
    /// NDIS_HASH_IPV6_EX (home address / routing header addresses; not implemented).
    pub ipv6_ex: bool,
    /// NDIS_HASH_TCP_IPV6_EX (not implemented).
    pub tcp_ipv6_ex: bool,
    /// NDIS_HASH_UDP_IPV6_EX (not implemented).
    pub udp_ipv6_ex: bool,
    #[bits(7)]
    __: u8,
}

/// The serializable view of a vPort's steering.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SteeringSnapshot {
    /// vPort index.
    pub vport: u16,
    /// RX enabled.
    pub rx_enabled: bool,
    /// RSS enabled.
    pub rss_enabled: bool,
    /// Default RQ id.
    pub default_rq: Option<u32>,
    /// Enabled NDIS hash-type bits.
    pub hash_types: u16,
    /// The Toeplitz key, hex.
    pub key: String,
    /// The indirection table as RQ ids (`None`: the RQ was destroyed).
    pub table: Vec<Option<u32>>,
}

const _: () = assert!(std::mem::size_of::<NdisHashTypes>() == 2);
