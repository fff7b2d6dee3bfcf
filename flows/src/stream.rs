//! The bytes a flow carries: a pseudo-random stream that both ends can
//! generate from the flow's id and direction, so the receiver checks every
//! byte, and a SHA-256 of what crossed (reported by both ends and compared
//! by the rig).

use sha2::{Digest, Sha256};

/// A deterministic byte stream (SplitMix64 output, little-endian words).
#[derive(Debug, Clone)]
pub struct Stream {
    state: u64,
    word: [u8; 8],
    used: usize,
}

impl Stream {
    /// The stream of flow `id` in one direction (`to_guest`: peer → guest).
    pub fn new(id: u32, to_guest: bool) -> Self {
        let seed = (u64::from(id) << 1 | u64::from(to_guest)) ^ 0x6d61_6e61_7269_6721;
        Self { state: seed, word: [0; 8], used: 8 }
    }

    fn next_word(&mut self) -> [u8; 8] {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)).to_le_bytes()
    }

    /// Fills `buf` with the next bytes of the stream.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            if self.used == 8 {
                self.word = self.next_word();
                self.used = 0;
            }
            *b = self.word[self.used];
            self.used += 1;
        }
    }
}

/// Checks received bytes against the stream and hashes them.
#[derive(Debug, Clone)]
pub struct Verifier {
    expected: Stream,
    scratch: Vec<u8>,
    hash: Sha256,
    /// Bytes seen so far.
    pub seen: u64,
    /// The offset of the first byte that differed, if any.
    pub first_mismatch: Option<u64>,
}

impl Verifier {
    /// A verifier for flow `id`'s stream in one direction.
    pub fn new(id: u32, to_guest: bool) -> Self {
        Self {
            expected: Stream::new(id, to_guest),
            scratch: Vec::new(),
            hash: Sha256::new(),
            seen: 0,
            first_mismatch: None,
        }
    }

    /// Takes the next received bytes.
    pub fn take(&mut self, bytes: &[u8]) {
        self.scratch.resize(bytes.len(), 0);
        self.expected.fill(&mut self.scratch);
        if self.first_mismatch.is_none() {
            if let Some(i) = bytes.iter().zip(&self.scratch).position(|(a, b)| a != b) {
                self.first_mismatch = Some(self.seen + i as u64);
            }
        }
        self.hash.update(bytes);
        self.seen += bytes.len() as u64;
    }

    /// The SHA-256 of everything taken, hex.
    pub fn sha256(&self) -> String {
        hex(&self.hash.clone().finalize())
    }
}

/// The SHA-256 of the first `len` bytes of a stream, hex (what a sender reports).
pub fn sha256_of(id: u32, to_guest: bool, len: u64) -> String {
    let mut stream = Stream::new(id, to_guest);
    let mut hash = Sha256::new();
    let mut buf = [0u8; 4096];
    let mut left = len;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        stream.fill(&mut buf[..n]);
        hash.update(&buf[..n]);
        left -= n as u64;
    }
    hex(&hash.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_read_in_any_pieces_verifies_and_hashes_like_the_sender() {
        let mut s = Stream::new(3, true);
        let mut data = vec![0u8; 10_000];
        s.fill(&mut data);
        let mut v = Verifier::new(3, true);
        for chunk in data.chunks(777) {
            v.take(chunk);
        }
        assert_eq!((v.seen, v.first_mismatch), (10_000, None));
        assert_eq!(v.sha256(), sha256_of(3, true, 10_000));
        assert_ne!(sha256_of(3, true, 100), sha256_of(3, false, 100), "directions differ");
        data[5000] ^= 1;
        let mut w = Verifier::new(3, true);
        w.take(&data);
        assert_eq!(w.first_mismatch, Some(5000));
    }
}
