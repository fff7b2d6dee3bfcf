//! The Toeplitz hash RSS uses, as Microsoft's NDIS specification defines it
//! ("RSS Hashing Functions", learn.microsoft.com/windows-hardware/drivers/network/rss-hashing-functions):
//! for every bit of the input from the most significant bit of the first
//! byte on, if the bit is 1 the result is XORed with the left-most 32 bits
//! of the key, and the key is shifted left by one bit.
//!
//! The key is 40 bytes (`MANA_HASH_KEY_SIZE`, include/net/mana/mana.h), so
//! inputs up to 36 bytes (the IPv6 4-tuple) see a full 32-bit key window;
//! the window of a longer input is filled with zero bits.
//!
//! Pure: no I/O, no state beyond [`ToeplitzTable`]'s precomputed lookups.
#![forbid(unsafe_code)]

/// Key length in bytes (`MANA_HASH_KEY_SIZE`).
pub const KEY_SIZE: usize = 40;
/// Longest input with a full key window: (320 - 32) / 8 + 1 bytes.
pub const MAX_INPUT: usize = KEY_SIZE - 4;

/// The 32-bit key window starting at bit `bit` (0 = MSB of `key[0]`);
/// bits past the key are zero.
fn window(key: &[u8; KEY_SIZE], bit: usize) -> u32 {
    let byte = bit / 8;
    let mut wide = [0u8; 8];
    for (i, slot) in wide.iter_mut().enumerate().take(5) {
        *slot = key.get(byte + i).copied().unwrap_or(0);
    }
    let bits = u64::from_be_bytes(wide);
    // The 40 bits at `byte` sit in the top of `bits`; take 32 starting `bit % 8` in.
    (bits >> (32 - bit % 8)) as u32
}

/// The Toeplitz hash of `input` under `key`, one bit at a time exactly as the
/// NDIS pseudocode states it (the reference for [`ToeplitzTable`]).
pub fn hash(key: &[u8; KEY_SIZE], input: &[u8]) -> u32 {
    let mut result = 0u32;
    for (i, &byte) in input.iter().enumerate() {
        for b in 0..8 {
            if byte & (0x80 >> b) != 0 {
                result ^= window(key, i * 8 + b);
            }
        }
    }
    result
}

/// A key with its hash precomputed per (input byte position, byte value): a
/// hash of n bytes is n table lookups. Same results as [`hash`] for inputs of
/// up to [`MAX_INPUT`] bytes; longer inputs hash their first [`MAX_INPUT`] bytes.
#[derive(Clone)]
pub struct ToeplitzTable {
    lookup: Box<[[u32; 256]; MAX_INPUT]>,
}

impl std::fmt::Debug for ToeplitzTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToeplitzTable").finish_non_exhaustive()
    }
}

impl ToeplitzTable {
    /// Precomputes the lookups for `key` (36 × 256 entries).
    pub fn new(key: &[u8; KEY_SIZE]) -> Self {
        let mut lookup = Box::new([[0u32; 256]; MAX_INPUT]);
        for (position, row) in lookup.iter_mut().enumerate() {
            let bits: [u32; 8] = std::array::from_fn(|b| window(key, position * 8 + b));
            for (value, slot) in row.iter_mut().enumerate() {
                *slot = (0..8).filter(|b| value & (0x80 >> b) != 0).fold(0, |acc, b| acc ^ bits[b]);
            }
        }
        Self { lookup }
    }

    /// The hash of `input` (see [`hash`]).
    pub fn hash(&self, input: &[u8]) -> u32 {
        input.iter().zip(self.lookup.iter()).fold(0, |acc, (&byte, row)| acc ^ row[usize::from(byte)])
    }
}

/// The key of Microsoft's RSS verification suite, for tests of both
/// ends (the suite's inputs and hashes are in this module's tests).
/// Source: "Verifying the RSS Hash Calculation",
/// learn.microsoft.com/windows-hardware/drivers/network/verifying-the-rss-hash-calculation
/// (the same key and table appear in Intel's 82599 datasheet §7.1.2.8.3
/// "RSS Verification Suite").
pub const VERIFICATION_KEY: [u8; KEY_SIZE] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b,
    0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac,
    0x01, 0xfa,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// One row of the suite: destination, source, and the expected hashes
    /// for "IPv4/IPv6 only" and "with TCP" (same source as [`VERIFICATION_KEY`]).
    struct Row {
        dst: &'static str,
        dst_port: u16,
        src: &'static str,
        src_port: u16,
        ip_only: u32,
        with_tcp: u32,
    }

    const IPV4: [Row; 5] = [
        Row {
            dst: "161.142.100.80",
            dst_port: 1766,
            src: "66.9.149.187",
            src_port: 2794,
            ip_only: 0x323e_8fc2,
            with_tcp: 0x51cc_c178,
        },
        Row {
            dst: "65.69.140.83",
            dst_port: 4739,
            src: "199.92.111.2",
            src_port: 14230,
            ip_only: 0xd718_262a,
            with_tcp: 0xc626_b0ea,
        },
        Row {
            dst: "12.22.207.184",
            dst_port: 38024,
            src: "24.19.198.95",
            src_port: 12898,
            ip_only: 0xd2d0_a5de,
            with_tcp: 0x5c2b_394a,
        },
        Row {
            dst: "209.142.163.6",
            dst_port: 2217,
            src: "38.27.205.30",
            src_port: 48228,
            ip_only: 0x8298_9176,
            with_tcp: 0xafc7_327f,
        },
        Row {
            dst: "202.188.127.2",
            dst_port: 1303,
            src: "153.39.163.191",
            src_port: 44251,
            ip_only: 0x5d18_09c5,
            with_tcp: 0x10e8_28a2,
        },
    ];

    const IPV6: [Row; 3] = [
        Row {
            dst: "3ffe:2501:200:3::1",
            dst_port: 1766,
            src: "3ffe:2501:200:1fff::7",
            src_port: 2794,
            ip_only: 0x2cc1_8cd5,
            with_tcp: 0x4020_7d3d,
        },
        Row {
            dst: "ff02::1",
            dst_port: 4739,
            src: "3ffe:501:8::260:97ff:fe40:efab",
            src_port: 14230,
            ip_only: 0x0f0c_461c,
            with_tcp: 0xdde5_1bbf,
        },
        Row {
            dst: "fe80::200:f8ff:fe21:67cf",
            dst_port: 38024,
            src: "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
            src_port: 44251,
            ip_only: 0x4b61_e985,
            with_tcp: 0x02d1_feef,
        },
    ];

    fn octets(addr: &str) -> Vec<u8> {
        match addr.parse::<std::net::IpAddr>().expect("test address") {
            std::net::IpAddr::V4(a) => a.octets().to_vec(),
            std::net::IpAddr::V6(a) => a.octets().to_vec(),
        }
    }

    /// The NDIS input order: source address, destination address, source port, destination port.
    fn inputs(row: &Row) -> (Vec<u8>, Vec<u8>) {
        let mut ip = octets(row.src);
        ip.extend(octets(row.dst));
        let mut tcp = ip.clone();
        tcp.extend(row.src_port.to_be_bytes());
        tcp.extend(row.dst_port.to_be_bytes());
        (ip, tcp)
    }

    #[test]
    fn the_bitwise_hash_matches_microsofts_verification_suite() {
        for row in IPV4.iter().chain(&IPV6) {
            let (ip, tcp) = inputs(row);
            assert_eq!(hash(&VERIFICATION_KEY, &ip), row.ip_only, "{} -> {} (IP only)", row.src, row.dst);
            assert_eq!(hash(&VERIFICATION_KEY, &tcp), row.with_tcp, "{} -> {} (with TCP)", row.src, row.dst);
        }
    }

    #[test]
    fn the_table_hash_matches_microsofts_verification_suite() {
        let table = ToeplitzTable::new(&VERIFICATION_KEY);
        for row in IPV4.iter().chain(&IPV6) {
            let (ip, tcp) = inputs(row);
            assert_eq!(table.hash(&ip), row.ip_only, "{} -> {} (IP only)", row.src, row.dst);
            assert_eq!(table.hash(&tcp), row.with_tcp, "{} -> {} (with TCP)", row.src, row.dst);
        }
    }

    #[test]
    fn the_table_agrees_with_the_bitwise_hash_on_other_keys_and_lengths() {
        // Arbitrary keys and every input length up to MAX_INPUT.
        let mut rng = manarig_model::random::Rng::new(0x1234_5678_9abc_def1);
        let mut next = move || rng.next_u64();
        for _ in 0..20 {
            let key: [u8; KEY_SIZE] = std::array::from_fn(|_| next() as u8);
            let table = ToeplitzTable::new(&key);
            let input: Vec<u8> = (0..MAX_INPUT).map(|_| next() as u8).collect();
            for len in 0..=MAX_INPUT {
                assert_eq!(table.hash(&input[..len]), hash(&key, &input[..len]));
            }
        }
    }

    #[test]
    fn a_zero_key_or_empty_input_hashes_to_zero() {
        assert_eq!(hash(&[0; KEY_SIZE], &[0xff; 12]), 0);
        assert_eq!(ToeplitzTable::new(&VERIFICATION_KEY).hash(&[]), 0);
    }
}
