//! CPU sets and their two kernel text forms.
//!
//! [`CpuMask`] is a plain growable bitset of CPU ids (`Vec<u64>` words, bit `n` of word
//! `n / 64` is CPU `n`). It reads and writes:
//!
//! - the **cpulist** syntax of `lib/bitmap-str.c` `bitmap_parselist()` / `%*pbl`
//!   (`/proc/irq/N/smp_affinity_list`, `/sys/devices/system/node/nodeN/cpulist`):
//!   `0-3,8`, `0-15:2/4` (range with a `used/group` stride), the empty string;
//! - the **hex mask** syntax of `%*pb` (`/proc/irq/N/smp_affinity`, `affinity_hint`):
//!   comma-separated 32-bit words, most significant first, for `nr_cpu_ids` bits
//!   (see [`CpuMask::to_mask_string`]).
//!
//! CPU ids are limited to [`MAX_CPUS`] (Debian's `CONFIG_NR_CPUS` = 8192), so a
//! typo like `0-4000000000` is an error, not a 500 MB allocation.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Highest CPU count accepted (Debian kernels: `CONFIG_NR_CPUS=8192`).
pub const MAX_CPUS: u32 = 8192;

/// A cpulist or hex-mask string that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpulistError {
    /// A token is not `N`, `N-M` or `N-M:U/G`.
    #[error("bad cpulist {input:?}: {token:?} is not N, N-M or N-M:used/group")]
    Syntax {
        /// The whole input.
        input: String,
        /// The offending comma-separated token.
        token: String,
    },
    /// A range runs backwards (`5-3`) or has `used` > `group` or `group` = 0.
    #[error("bad cpulist {input:?}: {token:?} is an empty or backwards range")]
    BadRange {
        /// The whole input.
        input: String,
        /// The offending token.
        token: String,
    },
    /// A CPU id is at or above [`MAX_CPUS`].
    #[error("bad cpulist {input:?}: CPU {cpu} is beyond the kernel limit of {MAX_CPUS} CPUs")]
    TooLarge {
        /// The whole input.
        input: String,
        /// The CPU id that is too large.
        cpu: u64,
    },
    /// A hex mask has a word that is not 1..=8 hex digits.
    #[error("bad cpumask {input:?}: {word:?} is not a 32-bit hex word")]
    HexWord {
        /// The whole input.
        input: String,
        /// The offending word.
        word: String,
    },
}

/// A set of CPU ids (a kernel cpumask). Equality ignores capacity.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuMask {
    /// Bit `n % 64` of word `n / 64` is CPU `n`. No trailing zero words (normalised).
    words: Vec<u64>,
}

impl CpuMask {
    /// The empty set.
    pub const fn new() -> Self {
        Self { words: Vec::new() }
    }

    /// The set `{0, 1, …, n-1}` (e.g. all online CPUs of an `n`-CPU machine).
    pub fn first_n(n: u32) -> Self {
        let mut m = Self::new();
        m.insert_range(0, n);
        m
    }

    /// The set holding exactly `cpu`.
    pub fn single(cpu: u32) -> Self {
        let mut m = Self::new();
        m.insert(cpu);
        m
    }

    fn normalise(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// Add `cpu`.
    pub fn insert(&mut self, cpu: u32) {
        let w = (cpu / 64) as usize;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1u64 << (cpu % 64);
    }

    /// Add CPUs `start..end` (half-open).
    pub fn insert_range(&mut self, start: u32, end: u32) {
        for cpu in start..end {
            self.insert(cpu);
        }
    }

    /// Remove `cpu` (no-op if absent).
    pub fn remove(&mut self, cpu: u32) {
        if let Some(word) = self.words.get_mut((cpu / 64) as usize) {
            *word &= !(1u64 << (cpu % 64));
            self.normalise();
        }
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: u32) -> bool {
        self.words.get((cpu / 64) as usize).is_some_and(|w| w & (1u64 << (cpu % 64)) != 0)
    }

    /// Number of CPUs in the set (`cpumask_weight`).
    pub fn count(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// `CPU 3` or `CPUs 4-7`: the set as a cpulist after its noun in the right number,
    /// for messages (pair it with [`crate::text::agree`] for the verb).
    pub fn named(&self) -> String {
        let noun = if self.count() == 1 { "CPU" } else { "CPUs" };
        format!("{noun} {}", self.to_cpulist())
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Lowest CPU id at or above `start` (`cpumask_next(start - 1)`), or `None`.
    pub fn next_from(&self, start: u32) -> Option<u32> {
        let mut w = (start / 64) as usize;
        let mut word = self.words.get(w)? & (!0u64 << (start % 64));
        loop {
            if word != 0 {
                return Some(w as u32 * 64 + word.trailing_zeros());
            }
            w += 1;
            word = *self.words.get(w)?;
        }
    }

    /// Lowest CPU id (`cpumask_first`), or `None` when empty.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// Highest CPU id, or `None` when empty.
    pub fn last(&self) -> Option<u32> {
        let (i, w) = self.words.iter().enumerate().next_back()?;
        Some(i as u32 * 64 + 63 - w.leading_zeros())
    }

    /// The `n`-th CPU (0-based) in ascending order (`cpumask_nth`), or `None`.
    pub fn nth(&self, mut n: u32) -> Option<u32> {
        for (i, &w) in self.words.iter().enumerate() {
            let c = w.count_ones();
            if n < c {
                let mut w = w;
                for _ in 0..n {
                    w &= w - 1;
                }
                return Some(i as u32 * 64 + w.trailing_zeros());
            }
            n -= c;
        }
        None
    }

    /// CPU ids in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let bit = w.trailing_zeros();
                w &= w - 1;
                Some(i as u32 * 64 + bit)
            })
        })
    }

    fn zip_with(&self, other: &Self, len: usize, f: impl Fn(u64, u64) -> u64) -> Self {
        let get = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0);
        let mut m = Self { words: (0..len).map(|i| f(get(&self.words, i), get(&other.words, i))).collect() };
        m.normalise();
        m
    }

    /// `self ∪ other` (`cpumask_or`).
    pub fn or(&self, other: &Self) -> Self {
        self.zip_with(other, self.words.len().max(other.words.len()), |a, b| a | b)
    }

    /// `self ∩ other` (`cpumask_and`).
    pub fn and(&self, other: &Self) -> Self {
        self.zip_with(other, self.words.len().min(other.words.len()), |a, b| a & b)
    }

    /// `self \ other` (`cpumask_andnot`).
    pub fn andnot(&self, other: &Self) -> Self {
        self.zip_with(other, self.words.len(), |a, b| a & !b)
    }

    /// In-place `self |= other`.
    pub fn or_assign(&mut self, other: &Self) {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// In-place `self &= !other`.
    pub fn andnot_assign(&mut self, other: &Self) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !b;
        }
        self.normalise();
    }

    /// Whether the sets share a CPU (`cpumask_intersects`).
    pub fn intersects(&self, other: &Self) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// Whether every CPU of `self` is in `other` (`cpumask_subset`).
    pub fn is_subset(&self, other: &Self) -> bool {
        self.andnot(other).is_empty()
    }

    /// Parse kernel cpulist syntax (`bitmap_parselist()`): comma-separated `N`, `N-M` or
    /// `N-M:U/G` (in each group of `G` CPUs starting at `N`, take the first `U`); spaces
    /// around tokens and a trailing newline are ignored; the empty string is the empty set.
    ///
    /// # Errors
    /// [`CpulistError`] naming the token that is wrong.
    pub fn parse_cpulist(input: &str) -> Result<Self, CpulistError> {
        let mut m = Self::new();
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Ok(m);
        }
        for token in trimmed.split(',') {
            let token = token.trim();
            let syntax = || CpulistError::Syntax { input: input.to_owned(), token: token.to_owned() };
            let bad_range = || CpulistError::BadRange { input: input.to_owned(), token: token.to_owned() };
            let num = |s: &str| -> Result<u64, CpulistError> {
                if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(syntax());
                }
                s.parse::<u64>().map_err(|_| syntax())
            };
            let (range, stride) = match token.split_once(':') {
                Some((r, s)) => (r, Some(s)),
                None => (token, None),
            };
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None if stride.is_none() => {
                    let n = num(range)?;
                    (n, n)
                }
                None => return Err(syntax()),
            };
            let (used, group) = match stride {
                Some(s) => {
                    let (u, g) = s.split_once('/').ok_or_else(syntax)?;
                    (num(u)?, num(g)?)
                }
                None => (1, 1),
            };
            if lo > hi || group == 0 || used == 0 || used > group {
                return Err(bad_range());
            }
            if hi >= u64::from(MAX_CPUS) {
                return Err(CpulistError::TooLarge { input: input.to_owned(), cpu: hi });
            }
            for cpu in lo..=hi {
                if (cpu - lo) % group < used {
                    m.insert(cpu as u32);
                }
            }
        }
        Ok(m)
    }

    /// Format as a kernel cpulist (`%*pbl`): ascending, runs of two or more as `N-M`
    /// (`0-1`, not `0,1`), empty set as the empty string.
    pub fn to_cpulist(&self) -> String {
        let mut out = String::new();
        let mut iter = self.iter().peekable();
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end += 1;
                iter.next();
            }
            if !out.is_empty() {
                out.push(',');
            }
            if start == end {
                out.push_str(&start.to_string());
            } else {
                out.push_str(&format!("{start}-{end}"));
            }
        }
        out
    }

    /// Format as the hex mask that `/proc/irq/N/smp_affinity` and `affinity_hint` print
    /// (`%*pb` with `nr_cpu_ids` bits, `lib/vsprintf.c` `bitmap_string()`): 32-bit words,
    /// most significant first, separated by commas; every word has 8 hex digits except
    /// the most significant, which has just enough digits for its bits
    /// (8 CPUs → `ff`; 256 CPUs, CPU 112 → `00000000,00000000,00000000,00000000,00010000,00000000,00000000,00000000`).
    /// CPUs at or above `nr_cpu_ids` are not printed.
    pub fn to_mask_string(&self, nr_cpu_ids: u32) -> String {
        let nr_bits = nr_cpu_ids.max(1);
        let nwords = nr_bits.div_ceil(32);
        let top_bits = match nr_bits % 32 {
            0 => 32,
            r => r,
        };
        let mut parts = Vec::with_capacity(nwords as usize);
        for w in (0..nwords).rev() {
            let word64 = self.words.get((w / 2) as usize).copied().unwrap_or(0);
            let mut word = (word64 >> ((w % 2) * 32)) as u32;
            let digits = if w == nwords - 1 {
                if top_bits < 32 {
                    word &= (1u32 << top_bits) - 1;
                }
                top_bits.div_ceil(4) as usize
            } else {
                8
            };
            parts.push(format!("{word:0digits$x}"));
        }
        parts.join(",")
    }

    /// Parse a hex mask as printed by `smp_affinity` (`00000000,00010000`, `ff`).
    ///
    /// # Errors
    /// [`CpulistError::HexWord`] for a word that is not 1..=8 hex digits.
    pub fn parse_mask_string(input: &str) -> Result<Self, CpulistError> {
        let words: Vec<&str> = input.trim().split(',').collect();
        let mut m = Self::new();
        for (i, word) in words.iter().rev().enumerate() {
            let bad = || CpulistError::HexWord { input: input.to_owned(), word: (*word).to_owned() };
            if word.is_empty() || word.len() > 8 {
                return Err(bad());
            }
            let v = u32::from_str_radix(word, 16).map_err(|_| bad())?;
            for bit in 0..32 {
                if v & (1 << bit) != 0 {
                    let cpu = i as u64 * 32 + bit;
                    if cpu >= u64::from(MAX_CPUS) {
                        return Err(CpulistError::TooLarge { input: input.to_owned(), cpu });
                    }
                    m.insert(cpu as u32);
                }
            }
        }
        Ok(m)
    }
}

impl FromIterator<u32> for CpuMask {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut m = Self::new();
        for cpu in iter {
            m.insert(cpu);
        }
        m
    }
}

impl FromStr for CpuMask {
    type Err = CpulistError;
    /// Parses cpulist syntax (see [`CpuMask::parse_cpulist`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse_cpulist(s)
    }
}

impl fmt::Display for CpuMask {
    /// Formats as a cpulist (see [`CpuMask::to_cpulist`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_cpulist())
    }
}

impl fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuMask({:?})", self.to_cpulist())
    }
}

impl Serialize for CpuMask {
    /// Serialises as a cpulist string.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_cpulist())
    }
}

impl<'de> Deserialize<'de> for CpuMask {
    /// Deserialises from a cpulist string.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse_cpulist(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> CpuMask {
        CpuMask::parse_cpulist(s).expect("valid cpulist")
    }

    #[test]
    fn cpulist_round_trips_kernel_forms() {
        // Forms printed by the kernel's %*pbl (seed 003 lscpu: node0 = 0-7,128-135).
        for s in ["", "0", "0-1", "0-7,128-135", "0,2,4", "3,5-6,8191"] {
            assert_eq!(m(s).to_cpulist(), s);
        }
        assert_eq!(m("0,1").to_cpulist(), "0-1");
        assert_eq!(m(" 4-5 , 0 \n").to_cpulist(), "0,4-5");
    }

    #[test]
    fn cpulist_stride_form_is_understood() {
        // bitmap_parselist(): "0-15:2/4" = first 2 of every group of 4.
        assert_eq!(m("0-15:2/4").to_cpulist(), "0-1,4-5,8-9,12-13");
    }

    #[test]
    fn bad_cpulists_are_rejected_with_the_token() {
        for (s, tok) in [("0-", "0-"), ("a", "a"), ("1,,2", ""), ("-3", "-3"), ("0-3:2", "0-3:2")] {
            match CpuMask::parse_cpulist(s) {
                Err(CpulistError::Syntax { token, .. }) => assert_eq!(token, tok, "{s}"),
                other => panic!("{s}: {other:?}"),
            }
        }
        assert!(matches!(CpuMask::parse_cpulist("5-3"), Err(CpulistError::BadRange { .. })));
        assert!(matches!(CpuMask::parse_cpulist("0-7:3/2"), Err(CpulistError::BadRange { .. })));
        assert!(matches!(CpuMask::parse_cpulist("0-9999"), Err(CpulistError::TooLarge { cpu: 9999, .. })));
    }

    #[test]
    fn mask_string_matches_seed_003_affinity_hint() {
        // Seed 003, "Before", IRQ 331: CPU 112 of 256 (nr_cpu_ids = 256).
        let s = "00000000,00000000,00000000,00000000,00010000,00000000,00000000,00000000";
        assert_eq!(CpuMask::single(112).to_mask_string(256), s);
        assert_eq!(CpuMask::parse_mask_string(s).expect("valid"), CpuMask::single(112));
        // Seed 003, "Before", IRQ 339: CPU 240.
        let s = "00010000,00000000,00000000,00000000,00000000,00000000,00000000,00000000";
        assert_eq!(CpuMask::single(240).to_mask_string(256), s);
    }

    #[test]
    fn mask_string_top_word_is_trimmed_like_bitmap_string() {
        // lib/vsprintf.c bitmap_string(): the top chunk prints DIV_ROUND_UP(bits, 4) digits.
        assert_eq!(CpuMask::first_n(8).to_mask_string(8), "ff");
        assert_eq!(CpuMask::single(0).to_mask_string(4), "1");
        assert_eq!(m("0-1").to_mask_string(40), "00,00000003");
        assert_eq!(m("32").to_mask_string(33), "1,00000000");
    }

    #[test]
    fn set_operations_and_order() {
        let a = m("0-7,128-135");
        assert_eq!(a.count(), 16);
        assert_eq!(a.nth(8), Some(128));
        assert_eq!(a.nth(16), None);
        assert_eq!(a.last(), Some(135));
        assert_eq!(a.andnot(&m("0-127")).to_cpulist(), "128-135");
        assert_eq!(a.and(&m("4-130")).to_cpulist(), "4-7,128-130");
        assert!(m("1").is_subset(&a) && !m("8").is_subset(&a));
        assert!(a.intersects(&m("135")) && !a.intersects(&m("136")));
        // Equality ignores capacity.
        let mut b = m("0,200");
        b.remove(200);
        assert_eq!(b, m("0"));
    }
}
