//! Ethernet, 802.1Q, IPv4, IPv6, TCP and UDP header layouts: wire structs
//! only (network byte order, zerocopy, bitfields through `bitfield-struct`),
//! each size asserted against its RFC. The parsing logic lives in
//! [`super::headers`].
//!
//! Sources: IEEE 802.3 / 802.1Q (Ethernet and VLAN tag), RFC 791 (IPv4),
//! RFC 8200 (IPv6 and its extension headers), RFC 9293 (TCP), RFC 768 (UDP).
#![forbid(unsafe_code)]

use bitfield_struct::bitfield;
use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Big-endian u16 on the wire.
pub type Be16 = U16;
/// Big-endian u32 on the wire.
pub type Be32 = U32;

/// EtherType IPv4.
pub const ETH_P_IP: u16 = 0x0800;
/// EtherType IPv6.
pub const ETH_P_IPV6: u16 = 0x86DD;
/// EtherType 802.1Q VLAN tag.
pub const ETH_P_8021Q: u16 = 0x8100;
/// EtherType 802.1ad service tag (QinQ outer tag).
pub const ETH_P_8021AD: u16 = 0x88A8;
/// IP protocol number of TCP.
pub const IPPROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const IPPROTO_UDP: u8 = 17;
/// IPv6 Hop-by-Hop Options header.
pub const IPV6_HOP_BY_HOP: u8 = 0;
/// IPv6 Routing header.
pub const IPV6_ROUTING: u8 = 43;
/// IPv6 Fragment header.
pub const IPV6_FRAGMENT: u8 = 44;
/// IPv6 Destination Options header.
pub const IPV6_DEST_OPTS: u8 = 60;

/// Ethernet II header (no FCS: frames never carry one here), 14 bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct EthHdr {
    /// Destination MAC.
    pub dst: [u8; 6],
    /// Source MAC.
    pub src: [u8; 6],
    /// EtherType (or a VLAN TPID).
    pub ethertype: Be16,
}

/// 802.1Q tag control information.
#[bitfield(u16, repr = Be16, from = Be16::new, into = Be16::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct VlanTci {
    /// VLAN id.
    #[bits(12)]
    pub vid: u16,
    /// Drop-eligible indicator.
    pub dei: bool,
    /// Priority code point.
    #[bits(3)]
    pub pcp: u8,
}

/// An 802.1Q / 802.1ad tag as it follows the MAC addresses (TPID included), 4 bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct VlanTag {
    /// [`ETH_P_8021Q`] or [`ETH_P_8021AD`].
    pub tpid: Be16,
    /// Tag control information.
    pub tci: VlanTci,
}

/// The first byte of an IPv4 header.
#[bitfield(u8)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Ipv4VersionIhl {
    /// Header length in 32-bit words (≥ 5).
    #[bits(4)]
    pub ihl: u8,
    /// 4.
    #[bits(4)]
    pub version: u8,
}

/// Flags and fragment offset of an IPv4 header.
#[bitfield(u16, repr = Be16, from = Be16::new, into = Be16::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Ipv4Frag {
    /// Fragment offset in 8-byte units.
    #[bits(13)]
    pub offset: u16,
    /// More fragments.
    pub more_fragments: bool,
    /// Don't fragment.
    pub dont_fragment: bool,
    #[bits(1)]
    __: u8,
}

/// IPv4 header without options, 20 bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Ipv4Hdr {
    /// Version and header length.
    pub version_ihl: Ipv4VersionIhl,
    /// DSCP / ECN.
    pub tos: u8,
    /// Header plus payload length in bytes.
    pub tot_len: Be16,
    /// Identification.
    pub id: Be16,
    /// Flags and fragment offset.
    pub frag: Ipv4Frag,
    /// Time to live.
    pub ttl: u8,
    /// Payload protocol ([`IPPROTO_TCP`], [`IPPROTO_UDP`], ...).
    pub protocol: u8,
    /// Header checksum.
    pub check: Be16,
    /// Source address.
    pub saddr: [u8; 4],
    /// Destination address.
    pub daddr: [u8; 4],
}

/// IPv6 fixed header, 40 bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Ipv6Hdr {
    /// Version (4 bits), traffic class, flow label.
    pub version_class_flow: Be32,
    /// Payload length in bytes (extension headers included).
    pub payload_len: Be16,
    /// Next header.
    pub next_header: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Source address.
    pub saddr: [u8; 16],
    /// Destination address.
    pub daddr: [u8; 16],
}

/// The common start of the Hop-by-Hop, Routing and Destination Options headers, 2 bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Ipv6ExtHdr {
    /// Next header.
    pub next_header: u8,
    /// Length in 8-byte units, not counting the first 8 bytes.
    pub hdr_ext_len: u8,
}

/// Flags and data offset of a TCP header (bytes 12-13).
#[bitfield(u16, repr = Be16, from = Be16::new, into = Be16::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct TcpFlags {
    /// FIN.
    pub fin: bool,
    /// SYN.
    pub syn: bool,
    /// RST.
    pub rst: bool,
    /// PSH.
    pub psh: bool,
    /// ACK.
    pub ack: bool,
    /// URG.
    pub urg: bool,
    /// ECE.
    pub ece: bool,
    /// CWR.
    pub cwr: bool,
    #[bits(4)]
    __: u8,
    /// Header length in 32-bit words (≥ 5).
    #[bits(4)]
    pub data_offset: u8,
}

/// TCP header without options, 20 bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct TcpHdr {
    /// Source port.
    pub sport: Be16,
    /// Destination port.
    pub dport: Be16,
    /// Sequence number.
    pub seq: Be32,
    /// Acknowledgment number.
    pub ack_seq: Be32,
    /// Data offset and flags.
    pub flags: TcpFlags,
    /// Window.
    pub window: Be16,
    /// Checksum.
    pub check: Be16,
    /// Urgent pointer.
    pub urg_ptr: Be16,
}

/// UDP header, 8 bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct UdpHdr {
    /// Source port.
    pub sport: Be16,
    /// Destination port.
    pub dport: Be16,
    /// Header plus payload length in bytes.
    pub len: Be16,
    /// Checksum (0 over IPv4: none).
    pub check: Be16,
}

/// Byte offset of the checksum field in a TCP header.
pub const TCP_CHECK_OFFSET: usize = 16;
/// Byte offset of the checksum field in a UDP header.
pub const UDP_CHECK_OFFSET: usize = 6;
/// Byte offset of the checksum field in an IPv4 header.
pub const IPV4_CHECK_OFFSET: usize = 10;

const _: () = {
    use std::mem::size_of;
    assert!(size_of::<EthHdr>() == 14);
    assert!(size_of::<VlanTag>() == 4);
    assert!(size_of::<Ipv4Hdr>() == 20);
    assert!(size_of::<Ipv6Hdr>() == 40);
    assert!(size_of::<Ipv6ExtHdr>() == 2);
    assert!(size_of::<TcpHdr>() == 20);
    assert!(size_of::<UdpHdr>() == 8);
    assert!(std::mem::offset_of!(TcpHdr, check) == TCP_CHECK_OFFSET);
    assert!(std::mem::offset_of!(UdpHdr, check) == UDP_CHECK_OFFSET);
    assert!(std::mem::offset_of!(Ipv4Hdr, check) == IPV4_CHECK_OFFSET);
};
