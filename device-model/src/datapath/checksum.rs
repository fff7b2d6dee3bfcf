//! Internet checksums (RFC 1071) for the offloads the device implements:
//! TX checksum insertion (`mana_tx_short_oob.comp_iphdr_csum`,
//! `comp_tcp_csum`, `comp_udp_csum`, as `mana_start_xmit()` in
//! drivers/net/ethernet/microsoft/mana/mana_en.c requests them, Linux
//! 6.1–7.3) and RX checksum verification (`mana_rxcomp_oob.rx_*_csum_*`, as
//! `mana_rx_skb()` reads them).
//!
//! The TCP/UDP checksum is always computed from scratch (pseudo-header
//! included); the partial sum the driver seeds the field with is ignored.
//! Lengths come from the IP header (a frame may carry padding after the
//! packet); an IP length the frame does not hold is an error on TX and
//! "not verified" on RX.
#![forbid(unsafe_code)]

use super::frame::{
    Be16, Ipv4Hdr, Ipv6Hdr, IPPROTO_TCP, IPPROTO_UDP, IPV4_CHECK_OFFSET, TCP_CHECK_OFFSET, UDP_CHECK_OFFSET,
};
use super::headers::{Headers, Network, Transport};
use zerocopy::FromBytes;

/// Why a checksum could not be inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ChecksumError {
    /// The frame has no IPv4/IPv6 header with a TCP/UDP header of the kind asked for.
    #[error("no {0} header to checksum")]
    NoHeader(&'static str),
    /// The IP header claims more bytes than the frame holds, or fewer than its headers.
    #[error("IP length {claimed} does not fit the {available} bytes after the IP header")]
    BadLength {
        /// Length the IP header gives, from the start of the IP header.
        claimed: usize,
        /// Bytes the frame holds from the start of the IP header.
        available: usize,
    },
}

/// Adds `bytes` as big-endian 16-bit words to `acc` (an odd last byte is
/// padded with zero, RFC 1071 §4.1).
pub fn add(acc: u64, bytes: &[u8]) -> u64 {
    let even = bytes.len() & !1;
    let words = <[Be16]>::ref_from_bytes(&bytes[..even])
        .map_or(0, |words| words.iter().map(|w| u64::from(w.get())).sum::<u64>());
    let tail = bytes.get(even).map_or(0, |&b| u64::from(b) << 8);
    acc + words + tail
}

/// Folds a sum to 16 bits (end-around carry), not complemented.
pub fn fold(mut acc: u64) -> u16 {
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    acc as u16
}

/// The IP packet's extent: (start of the IP header, end of the packet) in frame bytes.
fn ip_extent(frame: &[u8], network: Network) -> Result<(usize, usize), ChecksumError> {
    let (start, claimed) = match network {
        Network::Ipv4 { offset, .. } => {
            let ip = Ipv4Hdr::ref_from_prefix(&frame[offset..]).map_err(|_| ChecksumError::NoHeader("IP"))?.0;
            (offset, usize::from(ip.tot_len.get()))
        }
        Network::Ipv6 { offset } => {
            let ip = Ipv6Hdr::ref_from_prefix(&frame[offset..]).map_err(|_| ChecksumError::NoHeader("IP"))?.0;
            (offset, size_of::<Ipv6Hdr>() + usize::from(ip.payload_len.get()))
        }
        Network::Other => return Err(ChecksumError::NoHeader("IP")),
    };
    let available = frame.len() - start;
    if claimed > available {
        return Err(ChecksumError::BadLength { claimed, available });
    }
    Ok((start, start + claimed))
}

/// The pseudo-header sum for a transport segment of `len` bytes with `protocol`.
fn pseudo_header(frame: &[u8], headers: &Headers, protocol: u8, len: usize) -> u64 {
    let Some((src, dst)) = headers.addresses(frame) else {
        return 0;
    };
    add(add(0, src), dst) + u64::from(protocol) + len as u64
}

/// Where the transport checksum of `headers` lives: (segment start, field
/// offset in the segment, protocol).
fn transport_field(headers: &Headers) -> Option<(usize, usize, u8)> {
    match headers.transport {
        Transport::Tcp { offset, .. } => Some((offset, TCP_CHECK_OFFSET, IPPROTO_TCP)),
        Transport::Udp { offset } => Some((offset, UDP_CHECK_OFFSET, IPPROTO_UDP)),
        Transport::None => None,
    }
}

/// Writes the IPv4 header checksum of the frame's IPv4 header.
///
/// # Errors
/// [`ChecksumError::NoHeader`] if the frame is not IPv4.
pub fn insert_ipv4(frame: &mut [u8], headers: &Headers) -> Result<(), ChecksumError> {
    let Network::Ipv4 { offset, header_len } = headers.network else {
        return Err(ChecksumError::NoHeader("IPv4"));
    };
    let field = offset + IPV4_CHECK_OFFSET;
    frame[field..field + 2].fill(0);
    let sum = !fold(add(0, &frame[offset..offset + header_len]));
    frame[field..field + 2].copy_from_slice(&sum.to_be_bytes());
    Ok(())
}

/// Writes the TCP or UDP checksum (pseudo-header included) of the frame's
/// transport segment; `want` names the protocol the OOB asked for.
///
/// # Errors
/// [`ChecksumError::NoHeader`] if the frame has no `want` header (or is a
/// fragment), [`ChecksumError::BadLength`] if the IP length does not fit.
pub fn insert_transport(frame: &mut [u8], headers: &Headers, want: u8) -> Result<(), ChecksumError> {
    let name = if want == IPPROTO_TCP { "TCP" } else { "UDP" };
    let (start, field, protocol) =
        transport_field(headers).filter(|&(_, _, p)| p == want).ok_or(ChecksumError::NoHeader(name))?;
    let (_, end) = ip_extent(frame, headers.network)?;
    if end < start + field + 2 {
        return Err(ChecksumError::BadLength { claimed: end, available: start + field + 2 });
    }
    frame[start + field..start + field + 2].fill(0);
    let len = end - start;
    let sum = add(pseudo_header(frame, headers, protocol, len), &frame[start..end]);
    let mut check = !fold(sum);
    if protocol == IPPROTO_UDP && check == 0 {
        // RFC 768: a computed 0 is sent as all ones (0 means "no checksum").
        check = 0xFFFF;
    }
    frame[start + field..start + field + 2].copy_from_slice(&check.to_be_bytes());
    Ok(())
}

/// What RX checksum verification found; every field false means "not verified".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verified {
    /// IPv4 header checksum good, or an IPv6 header (which has none).
    pub ip_ok: bool,
    /// IPv4 header checksum bad.
    pub ip_bad: bool,
    /// TCP checksum good.
    pub tcp_ok: bool,
    /// TCP checksum bad.
    pub tcp_bad: bool,
    /// UDP checksum good.
    pub udp_ok: bool,
    /// UDP checksum bad.
    pub udp_bad: bool,
}

/// Verifies the IP and TCP/UDP checksums of a received frame. Fragments,
/// frames whose IP length does not fit and UDP over IPv4 without a checksum
/// leave the transport unverified.
pub fn verify(frame: &[u8], headers: &Headers) -> Verified {
    let mut v = Verified::default();
    match headers.network {
        Network::Ipv4 { offset, header_len } => {
            let good = fold(add(0, &frame[offset..offset + header_len])) == 0xFFFF;
            v.ip_ok = good;
            v.ip_bad = !good;
        }
        Network::Ipv6 { .. } => v.ip_ok = true,
        Network::Other => return v,
    }
    let Some((start, field, protocol)) = transport_field(headers) else {
        return v;
    };
    let Ok((_, end)) = ip_extent(frame, headers.network) else {
        return v;
    };
    if end < start + field + 2 {
        return v;
    }
    let udp_without_checksum = protocol == IPPROTO_UDP
        && matches!(headers.network, Network::Ipv4 { .. })
        && frame[start + field..start + field + 2] == [0, 0];
    if udp_without_checksum {
        return v;
    }
    let sum = add(pseudo_header(frame, headers, protocol, end - start), &frame[start..end]);
    let good = fold(sum) == 0xFFFF;
    if protocol == IPPROTO_TCP {
        (v.tcp_ok, v.tcp_bad) = (good, !good);
    } else {
        (v.udp_ok, v.udp_bad) = (good, !good);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::super::headers::{parse, tests::Build};
    use super::*;

    #[test]
    fn the_rfc_1071_example_sums_to_its_published_value() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (folded).
        assert_eq!(fold(add(0, &[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7])), 0xddf2);
    }

    #[test]
    fn inserted_checksums_verify_and_a_flipped_bit_fails() {
        for (v6, protocol) in [(false, IPPROTO_TCP), (false, IPPROTO_UDP), (true, IPPROTO_TCP), (true, IPPROTO_UDP)] {
            let mut b = Build::tcp4([192, 168, 0, 1], [192, 168, 0, 2], 4000, 5201);
            b.v6 = v6;
            b.protocol = protocol;
            if v6 {
                b.src = vec![0x20; 16];
                b.dst = vec![0x30; 16];
            }
            b.payload = 33;
            let mut f = b.frame();
            let h = parse(&f);
            if !v6 {
                insert_ipv4(&mut f, &h).expect("ipv4");
            }
            insert_transport(&mut f, &h, protocol).expect("transport");
            let v = verify(&f, &h);
            assert!(v.ip_ok && !v.ip_bad, "{v6} {protocol}");
            assert_eq!((v.tcp_ok, v.udp_ok), (protocol == IPPROTO_TCP, protocol == IPPROTO_UDP));
            let last = f.len() - 1;
            f[last] ^= 1;
            let v = verify(&f, &h);
            assert_eq!((v.tcp_bad, v.udp_bad), (protocol == IPPROTO_TCP, protocol == IPPROTO_UDP));
        }
    }

    #[test]
    fn padding_after_the_packet_is_not_summed_and_a_short_frame_is_refused() {
        let b = Build::tcp4([1, 1, 1, 1], [2, 2, 2, 2], 1, 2);
        let mut f = b.frame();
        let h = parse(&f);
        insert_transport(&mut f, &h, IPPROTO_TCP).expect("tcp");
        let mut padded = f.clone();
        padded.extend_from_slice(&[0xAA; 6]);
        assert!(verify(&padded, &parse(&padded)).tcp_ok);
        let short = &f[..f.len() - 1];
        assert!(matches!(
            insert_transport(&mut short.to_vec(), &parse(short), IPPROTO_TCP),
            Err(ChecksumError::BadLength { .. })
        ));
        assert_eq!(insert_transport(&mut f.clone(), &h, IPPROTO_UDP), Err(ChecksumError::NoHeader("UDP")));
    }
}
