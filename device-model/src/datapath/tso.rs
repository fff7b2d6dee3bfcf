//! TCP segmentation offload as `mana_start_xmit()` requests it
//! (drivers/net/ethernet/microsoft/mana/mana_en.c, Linux 6.1–7.3): for a GSO
//! skb the WQE's `client_data_unit` is the MSS, SGE 0 holds exactly the
//! headers (`GDMA_WR_OOB_IN_SGL | GDMA_WR_PAD_BY_SGE0`, `last_vbytes` = its
//! size), the IPv4 `tot_len`/`check` or IPv6 `payload_len` are zero and the
//! TCP checksum holds a pseudo-header sum without the length. The device
//! cuts the payload into MSS-sized segments, each with a copy of the headers
//! in which it sets the IP length, the IPv4 id (+1 per segment) and header
//! checksum, the TCP sequence number, and clears FIN/PSH on all but the last
//! segment and CWR on all but the first (RFC 9293 / RFC 3168 as TSO hardware
//! applies them), then computes the TCP checksum from scratch.
#![forbid(unsafe_code)]

use super::checksum::{insert_ipv4, insert_transport, ChecksumError};
use super::frame::{Ipv4Hdr, Ipv6Hdr, TcpHdr, IPPROTO_TCP};
use super::headers::{Headers, Network, Transport};
use zerocopy::FromBytes;

/// Segments one TSO WQE may produce; more is refused (a guest-chosen MSS of
/// 1 byte would otherwise turn 64 KiB into 64 Ki frames inside one doorbell).
pub const MAX_SEGMENTS: usize = 1024;

/// Why a TSO request cannot be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TsoError {
    /// The frame is not TCP over IPv4/IPv6 (or is an IP fragment).
    #[error("TSO on a frame that is not TCP over IP")]
    NotTcp,
    /// A segment would exceed the maximum frame size.
    #[error("TSO segment of {0} bytes exceeds the MTU")]
    TooLong(usize),
    /// The payload needs more than [`MAX_SEGMENTS`] segments.
    #[error("TSO of {payload} bytes at MSS {mss} needs more than {MAX_SEGMENTS} segments")]
    TooManySegments {
        /// Payload bytes.
        payload: usize,
        /// Segment size.
        mss: usize,
    },
    /// A checksum could not be computed.
    #[error(transparent)]
    Checksum(#[from] ChecksumError),
}

/// Cuts `frame` (headers as [`Headers`] found them, then the payload) into
/// segments of at most `mss` payload bytes, no frame longer than
/// `max_frame`, and hands each to `emit` in order (the buffer may be
/// changed, e.g. to insert a VLAN tag). Returns the number of segments.
///
/// # Errors
/// [`TsoError`] before any segment is emitted.
pub fn segment<E>(
    frame: &[u8],
    headers: &Headers,
    mss: usize,
    max_frame: usize,
    out: &mut Vec<u8>,
    mut emit: impl FnMut(&mut Vec<u8>) -> Result<(), E>,
) -> Result<Result<usize, E>, TsoError> {
    let Transport::Tcp { offset: tcp_at, .. } = headers.transport else {
        return Err(TsoError::NotTcp);
    };
    let Some(header_len) = headers.payload_offset() else {
        return Err(TsoError::NotTcp);
    };
    let payload = &frame[header_len..];
    let mss = mss.max(1);
    if header_len + mss.min(payload.len()) > max_frame {
        return Err(TsoError::TooLong(header_len + mss.min(payload.len())));
    }
    let count = payload.len().div_ceil(mss).max(1);
    if count > MAX_SEGMENTS {
        return Err(TsoError::TooManySegments { payload: payload.len(), mss });
    }
    let first = TcpHdr::read_from_prefix(&frame[tcp_at..]).map_err(|_| TsoError::NotTcp)?.0;
    let ip_id = match headers.network {
        Network::Ipv4 { offset, .. } => {
            Ipv4Hdr::read_from_prefix(&frame[offset..]).map_err(|_| TsoError::NotTcp)?.0.id.get()
        }
        _ => 0,
    };
    for (i, chunk) in payload.chunks(mss).chain(payload.is_empty().then_some(&[][..])).enumerate() {
        out.clear();
        out.extend_from_slice(&frame[..header_len]);
        out.extend_from_slice(chunk);
        let last = i + 1 == count;
        fix_ip(out, headers, ip_id.wrapping_add(i as u16))?;
        let tcp = TcpHdr::mut_from_prefix(&mut out[tcp_at..]).map_err(|_| TsoError::NotTcp)?.0;
        tcp.seq.set(first.seq.get().wrapping_add((i * mss) as u32));
        let mut flags = first.flags;
        if !last {
            flags.set_fin(false);
            flags.set_psh(false);
        }
        if i > 0 {
            flags.set_cwr(false);
        }
        tcp.flags = flags;
        insert_transport(out, headers, IPPROTO_TCP)?;
        if let Err(err) = emit(out) {
            return Ok(Err(err));
        }
    }
    Ok(Ok(count))
}

/// Sets the IP length (and IPv4 id and header checksum) of the segment in `out`.
fn fix_ip(out: &mut [u8], headers: &Headers, id: u16) -> Result<(), TsoError> {
    let total = out.len();
    match headers.network {
        Network::Ipv4 { offset, .. } => {
            let ip = Ipv4Hdr::mut_from_prefix(&mut out[offset..]).map_err(|_| TsoError::NotTcp)?.0;
            ip.tot_len.set((total - offset) as u16);
            ip.id.set(id);
            insert_ipv4(out, headers)?;
        }
        Network::Ipv6 { offset } => {
            let ip = Ipv6Hdr::mut_from_prefix(&mut out[offset..]).map_err(|_| TsoError::NotTcp)?.0;
            ip.payload_len.set((total - offset - size_of::<Ipv6Hdr>()) as u16);
        }
        Network::Other => return Err(TsoError::NotTcp),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::checksum::verify;
    use super::super::headers::{parse, tests::Build};
    use super::*;
    use std::convert::Infallible;

    #[test]
    fn a_tso_frame_is_cut_into_mss_segments_with_fixed_headers() {
        let mut b = Build::tcp4([10, 0, 0, 1], [10, 0, 0, 2], 40000, 5201);
        b.payload = 3000;
        let mut f = b.frame();
        // As the driver hands it over: tot_len 0, FIN|PSH|CWR set to see them move.
        f[16..18].fill(0);
        f[47] |= 0x01 | 0x08 | 0x80;
        let h = parse(&f);
        let mut segs = Vec::new();
        let n = segment(&f, &h, 1448, 1514, &mut Vec::new(), |s| {
            segs.push(s.clone());
            Ok::<_, Infallible>(())
        })
        .expect("tso")
        .expect("emit");
        assert_eq!(n, 3);
        let lens: Vec<usize> = segs.iter().map(Vec::len).collect();
        assert_eq!(lens, vec![54 + 1448, 54 + 1448, 54 + 104]);
        for (i, s) in segs.iter().enumerate() {
            let hs = parse(s);
            let v = verify(s, &hs);
            assert!(v.ip_ok && v.tcp_ok, "segment {i} checksums");
            let ip = Ipv4Hdr::read_from_prefix(&s[14..]).expect("ip").0;
            assert_eq!(usize::from(ip.tot_len.get()), s.len() - 14);
            assert_eq!(ip.id.get(), 1 + i as u16, "ids count up from the original");
            let tcp = TcpHdr::read_from_prefix(&s[34..]).expect("tcp").0;
            assert_eq!(tcp.seq.get(), 1 + (i * 1448) as u32);
            assert_eq!(tcp.flags.fin() || tcp.flags.psh(), i == 2, "FIN/PSH only on the last");
            assert_eq!(tcp.flags.cwr(), i == 0, "CWR only on the first");
            assert_eq!(&s[54..], &f[54 + i * 1448..(54 + (i + 1) * 1448).min(f.len())]);
        }
    }

    #[test]
    fn ipv6_segments_get_their_payload_length_and_bad_requests_are_refused() {
        let mut b = Build::tcp4([0; 4], [0; 4], 1, 2);
        b.v6 = true;
        b.src = vec![0xfd; 16];
        b.dst = vec![0xfe; 16];
        b.payload = 2000;
        let f = b.frame();
        let h = parse(&f);
        let mut lens = Vec::new();
        segment(&f, &h, 1000, 1514, &mut Vec::new(), |s| {
            let ip = Ipv6Hdr::read_from_prefix(&s[14..]).expect("ip").0;
            lens.push(ip.payload_len.get());
            assert!(verify(s, &parse(s)).tcp_ok);
            Ok::<_, Infallible>(())
        })
        .expect("tso")
        .expect("emit");
        assert_eq!(lens, vec![1020, 1020]);
        let emit = |_: &mut Vec<u8>| Ok::<_, Infallible>(());
        assert_eq!(segment(&f, &h, 1500, 1514, &mut Vec::new(), emit), Err(TsoError::TooLong(74 + 1500)));
        assert!(matches!(segment(&f, &h, 1, 1514, &mut Vec::new(), emit), Err(TsoError::TooManySegments { .. })));
        let mut udp = b;
        udp.protocol = crate::datapath::frame::IPPROTO_UDP;
        let u = udp.frame();
        assert_eq!(segment(&u, &parse(&u), 100, 1514, &mut Vec::new(), emit), Err(TsoError::NotTcp));
    }
}
