//! Where the headers of an Ethernet frame are: VLAN tags, IPv4 / IPv6 (with
//! IPv6 extension headers and fragments), TCP / UDP. A pure function over
//! the frame bytes, shared by RSS, the checksum offloads and TSO; it never
//! panics and never reads past the frame.
//!
//! Layouts: [`super::frame`] (IEEE 802.3/802.1Q, RFC 791, RFC 8200, RFC 9293, RFC 768).
#![forbid(unsafe_code)]

use super::frame::{
    Be16, EthHdr, Ipv4Hdr, Ipv6ExtHdr, Ipv6Hdr, TcpHdr, UdpHdr, VlanTag, ETH_P_8021AD, ETH_P_8021Q, ETH_P_IP,
    ETH_P_IPV6, IPPROTO_TCP, IPPROTO_UDP, IPV6_DEST_OPTS, IPV6_FRAGMENT, IPV6_HOP_BY_HOP, IPV6_ROUTING,
};
use zerocopy::FromBytes;

/// Ethernet header length (`ETH_HLEN`).
pub const ETH_HLEN: usize = 14;
/// VLAN tags looked through (QinQ: an 802.1ad tag, then an 802.1Q tag).
const MAX_VLAN_TAGS: usize = 2;
/// IPv6 extension headers walked before giving up on finding the transport header.
const MAX_IPV6_EXT_HEADERS: usize = 8;

/// The network layer of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// Not IP (ARP, LLDP, ...) or a truncated IP header.
    Other,
    /// IPv4 at `offset`; `header_len` counts the options.
    Ipv4 {
        /// Byte offset of the IPv4 header in the frame.
        offset: usize,
        /// Header length in bytes (IHL × 4).
        header_len: usize,
    },
    /// IPv6 at `offset`.
    Ipv6 {
        /// Byte offset of the IPv6 header in the frame.
        offset: usize,
    },
}

/// The transport layer of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// No transport header: not IP, a fragment, an unknown protocol, or truncated.
    None,
    /// TCP at `offset`; `header_len` counts the options.
    Tcp {
        /// Byte offset of the TCP header in the frame.
        offset: usize,
        /// Header length in bytes (data offset × 4).
        header_len: usize,
    },
    /// UDP at `offset`.
    Udp {
        /// Byte offset of the UDP header in the frame.
        offset: usize,
    },
}

/// The headers found in a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headers {
    /// Byte offset of the network header (after the MACs and any VLAN tags).
    pub l3_offset: usize,
    /// The network layer.
    pub network: Network,
    /// Whether the IP packet is a fragment (ports are then not used or checked).
    pub fragment: bool,
    /// The transport layer.
    pub transport: Transport,
}

impl Headers {
    /// Byte offset just past the transport header (the TCP/UDP payload), if known.
    pub fn payload_offset(&self) -> Option<usize> {
        match self.transport {
            Transport::Tcp { offset, header_len } => Some(offset + header_len),
            Transport::Udp { offset } => Some(offset + size_of::<UdpHdr>()),
            Transport::None => None,
        }
    }

    /// The source and destination addresses (4 or 16 bytes each), if IP.
    pub fn addresses<'a>(&self, frame: &'a [u8]) -> Option<(&'a [u8], &'a [u8])> {
        match self.network {
            Network::Ipv4 { offset, .. } => {
                let (ip, _) = Ipv4Hdr::ref_from_prefix(frame.get(offset..)?).ok()?;
                Some((&ip.saddr[..], &ip.daddr[..]))
            }
            Network::Ipv6 { offset } => {
                let (ip, _) = Ipv6Hdr::ref_from_prefix(frame.get(offset..)?).ok()?;
                Some((&ip.saddr[..], &ip.daddr[..]))
            }
            Network::Other => None,
        }
    }

    /// The source and destination ports (network byte order), if TCP or UDP.
    pub fn ports<'a>(&self, frame: &'a [u8]) -> Option<&'a [u8]> {
        match self.transport {
            Transport::Tcp { offset, .. } | Transport::Udp { offset } => frame.get(offset..offset + 4),
            Transport::None => None,
        }
    }
}

/// Finds the headers of `frame` (an Ethernet frame without FCS).
pub fn parse(frame: &[u8]) -> Headers {
    let mut headers =
        Headers { l3_offset: ETH_HLEN, network: Network::Other, fragment: false, transport: Transport::None };
    let Ok((eth, _)) = EthHdr::ref_from_prefix(frame) else {
        return headers;
    };
    let mut ethertype = eth.ethertype.get();
    for _ in 0..MAX_VLAN_TAGS {
        if ethertype != ETH_P_8021Q && ethertype != ETH_P_8021AD {
            break;
        }
        // A tag is the TPID just read (2 bytes before l3_offset) and its TCI;
        // the next ethertype follows the TCI.
        let tag_at = headers.l3_offset - 2;
        let next = frame
            .get(tag_at..)
            .and_then(|rest| VlanTag::ref_from_prefix(rest).ok())
            .and_then(|(_, rest)| Be16::read_from_prefix(rest).ok());
        let Some((next, _)) = next else {
            return headers;
        };
        ethertype = next.get();
        headers.l3_offset += size_of::<VlanTag>();
    }
    let l3 = headers.l3_offset;
    let (protocol, l4) = match ethertype {
        ETH_P_IP => match ipv4(frame, l3) {
            Some((header_len, protocol, fragment)) => {
                headers.network = Network::Ipv4 { offset: l3, header_len };
                headers.fragment = fragment;
                (protocol, l3 + header_len)
            }
            None => return headers,
        },
        ETH_P_IPV6 => match ipv6(frame, l3) {
            Some((protocol, l4, fragment)) => {
                headers.network = Network::Ipv6 { offset: l3 };
                headers.fragment = fragment;
                (protocol, l4)
            }
            None => return headers,
        },
        _ => return headers,
    };
    if headers.fragment {
        return headers;
    }
    headers.transport = transport(frame, protocol, l4);
    headers
}

/// (header length, protocol, is a fragment) of the IPv4 header at `at`.
fn ipv4(frame: &[u8], at: usize) -> Option<(usize, u8, bool)> {
    let (ip, _) = Ipv4Hdr::ref_from_prefix(frame.get(at..)?).ok()?;
    let header_len = usize::from(ip.version_ihl.ihl()) * 4;
    if ip.version_ihl.version() != 4 || header_len < size_of::<Ipv4Hdr>() {
        return None;
    }
    frame.get(at..at + header_len)?;
    let fragment = ip.frag.more_fragments() || ip.frag.offset() != 0;
    Some((header_len, ip.protocol, fragment))
}

/// (transport protocol, transport offset, is a fragment) of the IPv6 header at `at`.
fn ipv6(frame: &[u8], at: usize) -> Option<(u8, usize, bool)> {
    let (ip, _) = Ipv6Hdr::ref_from_prefix(frame.get(at..)?).ok()?;
    if ip.version_class_flow.get() >> 28 != 6 {
        return None;
    }
    let mut next = ip.next_header;
    let mut offset = at + size_of::<Ipv6Hdr>();
    for _ in 0..MAX_IPV6_EXT_HEADERS {
        match next {
            IPV6_FRAGMENT => return Some((next, offset, true)),
            IPV6_HOP_BY_HOP | IPV6_ROUTING | IPV6_DEST_OPTS => {
                let (ext, _) = Ipv6ExtHdr::ref_from_prefix(frame.get(offset..)?).ok()?;
                next = ext.next_header;
                offset += (usize::from(ext.hdr_ext_len) + 1) * 8;
            }
            _ => return Some((next, offset, false)),
        }
    }
    // Too many extension headers: IP, but no transport header.
    Some((u8::MAX, offset, false))
}

fn transport(frame: &[u8], protocol: u8, at: usize) -> Transport {
    let Some(rest) = frame.get(at..) else {
        return Transport::None;
    };
    match protocol {
        IPPROTO_TCP => match TcpHdr::ref_from_prefix(rest) {
            Ok((tcp, _)) => {
                let header_len = usize::from(tcp.flags.data_offset()) * 4;
                if header_len >= size_of::<TcpHdr>() && rest.len() >= header_len {
                    Transport::Tcp { offset: at, header_len }
                } else {
                    Transport::None
                }
            }
            Err(_) => Transport::None,
        },
        IPPROTO_UDP if rest.len() >= size_of::<UdpHdr>() => Transport::Udp { offset: at },
        _ => Transport::None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A frame builder for tests: Ethernet (optionally VLAN-tagged), IPv4 or
    /// IPv6, TCP or UDP, with a payload. Checksums are left zero.
    pub(crate) struct Build {
        pub vlan: Option<u16>,
        pub v6: bool,
        pub protocol: u8,
        pub src: Vec<u8>,
        pub dst: Vec<u8>,
        pub sport: u16,
        pub dport: u16,
        pub payload: usize,
    }

    impl Build {
        pub(crate) fn tcp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Self {
            Self {
                vlan: None,
                v6: false,
                protocol: IPPROTO_TCP,
                src: src.to_vec(),
                dst: dst.to_vec(),
                sport,
                dport,
                payload: 10,
            }
        }

        pub(crate) fn frame(&self) -> Vec<u8> {
            let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
            if let Some(vid) = self.vlan {
                f.extend_from_slice(&ETH_P_8021Q.to_be_bytes());
                f.extend_from_slice(&vid.to_be_bytes());
            }
            let l4_len = if self.protocol == IPPROTO_TCP { 20 } else { 8 } + self.payload;
            if self.v6 {
                f.extend_from_slice(&ETH_P_IPV6.to_be_bytes());
                f.extend_from_slice(&[0x60, 0, 0, 0]);
                f.extend_from_slice(&(l4_len as u16).to_be_bytes());
                f.extend_from_slice(&[self.protocol, 64]);
            } else {
                f.extend_from_slice(&ETH_P_IP.to_be_bytes());
                f.extend_from_slice(&[0x45, 0]);
                f.extend_from_slice(&((20 + l4_len) as u16).to_be_bytes());
                f.extend_from_slice(&[0, 1, 0x40, 0, 64, self.protocol, 0, 0]);
            }
            f.extend_from_slice(&self.src);
            f.extend_from_slice(&self.dst);
            f.extend_from_slice(&self.sport.to_be_bytes());
            f.extend_from_slice(&self.dport.to_be_bytes());
            if self.protocol == IPPROTO_TCP {
                f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
            } else {
                f.extend_from_slice(&((8 + self.payload) as u16).to_be_bytes());
                f.extend_from_slice(&[0, 0]);
            }
            f.extend((0..self.payload).map(|i| i as u8));
            f
        }
    }

    #[test]
    fn ipv4_tcp_behind_a_vlan_tag_is_found() {
        let mut b = Build::tcp4([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80);
        b.vlan = Some(5);
        let f = b.frame();
        let h = parse(&f);
        assert_eq!(h.l3_offset, 18);
        assert_eq!(h.network, Network::Ipv4 { offset: 18, header_len: 20 });
        assert_eq!(h.transport, Transport::Tcp { offset: 38, header_len: 20 });
        assert_eq!(h.addresses(&f), Some((&[10, 0, 0, 1][..], &[10, 0, 0, 2][..])));
        assert_eq!(h.ports(&f), Some(&[0x03, 0xe8, 0, 80][..]));
        assert_eq!(h.payload_offset(), Some(58));
    }

    #[test]
    fn ipv6_udp_after_extension_headers_is_found_and_fragments_have_no_ports() {
        let mut b = Build::tcp4([0; 4], [0; 4], 53, 53);
        b.v6 = true;
        b.protocol = IPPROTO_UDP;
        b.src = vec![0xfe; 16];
        b.dst = vec![0xff; 16];
        let plain = b.frame();
        let h = parse(&plain);
        assert_eq!(h.network, Network::Ipv6 { offset: 14 });
        assert_eq!(h.transport, Transport::Udp { offset: 54 });
        // Insert an 8-byte Destination Options header in front of UDP.
        let mut ext = plain[..54].to_vec();
        ext[20] = IPV6_DEST_OPTS;
        ext.extend_from_slice(&[IPPROTO_UDP, 0, 0, 0, 0, 0, 0, 0]);
        ext.extend_from_slice(&plain[54..]);
        assert_eq!(parse(&ext).transport, Transport::Udp { offset: 62 });
        // A fragment header: IP, but no transport.
        ext[54] = IPV6_FRAGMENT;
        ext[20] = IPV6_FRAGMENT;
        let h = parse(&ext);
        assert!(h.fragment);
        assert_eq!(h.transport, Transport::None);
        assert!(h.addresses(&ext).is_some());
    }

    #[test]
    fn truncated_or_foreign_frames_parse_as_far_as_they_go() {
        let f = Build::tcp4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2).frame();
        for len in 0..f.len() {
            let h = parse(&f[..len]);
            if len < 34 {
                assert_eq!(h.network, Network::Other, "{len}");
            }
            if len < 54 {
                assert_eq!(h.transport, Transport::None, "{len}");
            }
        }
        let mut arp = f.clone();
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(parse(&arp).network, Network::Other);
        let mut frag = f;
        frag[20] = 0x20; // MF
        let h = parse(&frag);
        assert!(h.fragment && h.transport == Transport::None);
    }
}
