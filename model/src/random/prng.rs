//! The workspace's one deterministic PRNG: SplitMix64 (Steele, Lea, Flood, "Fast
//! splittable pseudorandom number generators", OOPSLA 2014; the constants are the
//! published ones). Not for cryptography: it only has to give the same topologies for
//! the same seed on every machine and Rust version, which a crate's generator does not
//! promise, and the same random inputs to the tests (the device's, the importers', the
//! traffic plan's ports) on every run.

/// SplitMix64 state.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

/// The golden-ratio increment of SplitMix64.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

impl Rng {
    /// A generator whose state starts at `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// A generator for topology `index` of `seed`: streams of different indices are
    /// unrelated, so topology `i` does not depend on how many come before it.
    pub fn for_item(seed: u64, index: u64) -> Self {
        let mut outer = Self { state: seed };
        let base = outer.next_u64();
        let mut rng = Self { state: base ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03) };
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (0 when `n` is 0). Multiply-shift reduction: the bias is at
    /// most `n / 2^64`, nothing a topology generator can notice.
    pub fn below(&mut self, n: u32) -> u32 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u32
    }

    /// A value in `0..n` (0 when `n` is 0), as [`Rng::below`] for 64-bit bounds.
    pub fn below64(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A value in `lo..=hi` (`lo` when `hi < lo`).
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u32, den: u32) -> bool {
        self.below(den) < num
    }

    /// One element of a non-empty slice (`None` for an empty one).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        let n = u32::try_from(items.len()).unwrap_or(u32::MAX);
        items.get(self.below(n) as usize).copied()
    }

    /// Shuffle in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(u32::try_from(i + 1).unwrap_or(u32::MAX)) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_gives_the_published_sequence() {
        // SplitMix64 from state 0: the reference implementation's first outputs.
        let mut r = Rng { state: 0 };
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn streams_are_reproducible_and_ranges_hold() {
        let a: Vec<u64> = (0..4).map(|_| Rng::for_item(7, 3).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(Rng::for_item(7, 3).next_u64(), Rng::for_item(7, 4).next_u64());
        assert_ne!(Rng::for_item(7, 3).next_u64(), Rng::for_item(8, 3).next_u64());
        let mut r = Rng::for_item(1, 0);
        for _ in 0..1000 {
            assert!((3..=5).contains(&r.range(3, 5)));
            assert!(r.below(4) < 4);
        }
        assert_eq!(r.below(0), 0);
        assert_eq!(r.range(5, 2), 5);
        assert_eq!(r.pick::<u32>(&[]), None);
    }
}
