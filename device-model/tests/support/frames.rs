//! Ethernet frames for the data-path tests, built from the device's header
//! layouts (device_model::datapath::frame) with checksums computed here,
//! independently of the device's own checksum code (RFC 1071).

use device_model::datapath::frame::*;
use std::net::IpAddr;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

/// MAC of the peer (source of received frames).
pub const PEER_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];

/// Transport protocol of a [`Flow`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

/// A 5-tuple.
#[derive(Debug, Clone, Copy)]
pub struct Flow {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    pub proto: Proto,
}

impl Flow {
    /// A TCP flow between two addresses (IPv4 or IPv6 literals).
    pub fn tcp(src: &str, sport: u16, dst: &str, dport: u16) -> Self {
        Self {
            src: src.parse().expect("test address"),
            dst: dst.parse().expect("test address"),
            sport,
            dport,
            proto: Proto::Tcp,
        }
    }

    /// The same flow over UDP.
    pub fn udp(self) -> Self {
        Self { proto: Proto::Udp, ..self }
    }
}

fn octets(addr: IpAddr) -> Vec<u8> {
    match addr {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// One's-complement sum of big-endian 16-bit words (odd byte padded).
pub fn ones_sum(bytes: &[u8]) -> u32 {
    let mut sum = 0u32;
    for pair in bytes.chunks(2) {
        let hi = u32::from(pair[0]) << 8;
        let lo = pair.get(1).map_or(0, |&b| u32::from(b));
        sum += hi | lo;
    }
    sum
}

/// Folds and complements a one's-complement sum.
pub fn finish(mut sum: u32) -> u16 {
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet frame to `dst_mac` carrying `flow` with `payload`, correct
/// IPv4 header and TCP/UDP checksums.
pub fn frame(dst_mac: [u8; 6], flow: &Flow, payload: &[u8]) -> Vec<u8> {
    let v6 = flow.src.is_ipv6();
    let mut l4 = match flow.proto {
        Proto::Tcp => {
            let mut tcp = TcpHdr::new_zeroed();
            tcp.sport.set(flow.sport);
            tcp.dport.set(flow.dport);
            tcp.seq.set(1000);
            tcp.flags = TcpFlags::new().with_data_offset(5).with_ack(true).with_psh(true);
            tcp.window.set(0xFFFF);
            tcp.as_bytes().to_vec()
        }
        Proto::Udp => {
            let mut udp = UdpHdr::new_zeroed();
            udp.sport.set(flow.sport);
            udp.dport.set(flow.dport);
            udp.len.set((8 + payload.len()) as u16);
            udp.as_bytes().to_vec()
        }
    };
    l4.extend_from_slice(payload);
    let (protocol, check_at) = match flow.proto {
        Proto::Tcp => (IPPROTO_TCP, TCP_CHECK_OFFSET),
        Proto::Udp => (IPPROTO_UDP, UDP_CHECK_OFFSET),
    };
    let (src, dst) = (octets(flow.src), octets(flow.dst));
    let pseudo = ones_sum(&src) + ones_sum(&dst) + u32::from(protocol) + l4.len() as u32;
    let check = finish(pseudo + ones_sum(&l4));
    l4[check_at..check_at + 2].copy_from_slice(&check.to_be_bytes());
    let mut out = EthHdr { dst: dst_mac, src: PEER_MAC, ethertype: Be16::new(if v6 { ETH_P_IPV6 } else { ETH_P_IP }) }
        .as_bytes()
        .to_vec();
    if v6 {
        let mut ip = Ipv6Hdr::new_zeroed();
        ip.version_class_flow.set(6 << 28);
        ip.payload_len.set(l4.len() as u16);
        ip.next_header = protocol;
        ip.hop_limit = 64;
        ip.saddr.copy_from_slice(&src);
        ip.daddr.copy_from_slice(&dst);
        out.extend_from_slice(ip.as_bytes());
    } else {
        let mut ip = Ipv4Hdr::new_zeroed();
        ip.version_ihl = Ipv4VersionIhl::new().with_version(4).with_ihl(5);
        ip.tot_len.set((20 + l4.len()) as u16);
        ip.id.set(7);
        ip.frag = Ipv4Frag::new().with_dont_fragment(true);
        ip.ttl = 64;
        ip.protocol = protocol;
        ip.saddr.copy_from_slice(&src);
        ip.daddr.copy_from_slice(&dst);
        ip.check.set(finish(ones_sum(ip.as_bytes())));
        out.extend_from_slice(ip.as_bytes());
    }
    out.extend_from_slice(&l4);
    out
}

/// An ARP request (a frame RSS cannot hash).
pub fn arp(dst_mac: [u8; 6]) -> Vec<u8> {
    let mut out = EthHdr { dst: dst_mac, src: PEER_MAC, ethertype: Be16::new(0x0806) }.as_bytes().to_vec();
    out.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    out.extend_from_slice(&[0u8; 20]);
    out
}

/// Whether the IPv4 header checksum and the TCP/UDP checksum of an
/// untagged `frame` are right (checked here, not by the device).
pub fn checksums_ok(frame: &[u8]) -> bool {
    let Ok((eth, rest)) = EthHdr::ref_from_prefix(frame) else {
        return false;
    };
    let (src, dst, protocol, l4) = match eth.ethertype.get() {
        ETH_P_IP => {
            let Ok((ip, _)) = Ipv4Hdr::ref_from_prefix(rest) else {
                return false;
            };
            if finish(ones_sum(&rest[..20])) != 0 {
                return false;
            }
            let end = usize::from(ip.tot_len.get());
            (ip.saddr.to_vec(), ip.daddr.to_vec(), ip.protocol, &rest[20..end])
        }
        ETH_P_IPV6 => {
            let Ok((ip, after)) = Ipv6Hdr::ref_from_prefix(rest) else {
                return false;
            };
            let end = usize::from(ip.payload_len.get());
            (ip.saddr.to_vec(), ip.daddr.to_vec(), ip.next_header, &after[..end])
        }
        _ => return false,
    };
    let pseudo = ones_sum(&src) + ones_sum(&dst) + u32::from(protocol) + l4.len() as u32;
    finish(pseudo + ones_sum(l4)) == 0
}

/// Breaks the TCP/UDP checksum of `frame` (as a driver asking for checksum
/// offload leaves it: not final).
pub fn spoil_l4_checksum(frame: &mut [u8], proto: Proto) {
    let at = l4_offset(frame) + if proto == Proto::Tcp { TCP_CHECK_OFFSET } else { UDP_CHECK_OFFSET };
    frame[at] ^= 0x5A;
}

/// Offset of the TCP/UDP header in an untagged frame.
pub fn l4_offset(frame: &[u8]) -> usize {
    match EthHdr::ref_from_prefix(frame).map(|(eth, _)| eth.ethertype.get()) {
        Ok(ETH_P_IPV6) => 14 + 40,
        _ => 14 + 20,
    }
}
