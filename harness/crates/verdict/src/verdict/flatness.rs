//! Whether a process's memory and descriptors stayed flat over a soak
//! (`cargo xtask soak`): the rule, in numbers, on one sample per soak minute
//! of the emulated device process (README.md *Soak*).
//!
//! - **Which samples.** One at the start of every soak minute (the guest's
//!   `MANARIG-SOAK sample k`, before that minute's disruptions: the same
//!   moment of every cycle) and one at its end. The first [`warmup_minutes`]
//!   are warm-up (the heap grows to its working size: the first probes,
//!   queues, the flows' first rounds); the rule judges the samples from
//!   there on.
//! - **Memory: `RssAnon`** (`/proc/<pid>/status`): the process's own memory
//!   (heap, stacks). `VmRSS` is reported but not judged: it also counts
//!   `RssShmem`, the guest RAM the device maps from QEMU's memfd (DMA_MAP),
//!   which grows as the device touches guest pages it had not touched
//!   before (new RX buffers after every reprobe), and `RssFile`, the
//!   binary's pages. Flat = the last judged sample is at most
//!   [`RSS_GROWTH_LIMIT_KIB`] above the first, and the judged samples are
//!   not a monotone rise: not each one above the one before over at least
//!   [`TREND_MIN_SAMPLES`] samples (a slow leak under the limit still shows).
//! - **Descriptors** (`/proc/<pid>/fd`): every judged sample the same count.

use serde::{Deserialize, Serialize};

/// Minutes of warm-up in a soak of `minutes`: 2, or 1 in a soak shorter
/// than 4 minutes (so that a 2-minute soak still has two judged samples).
pub fn warmup_minutes(minutes: u32) -> u32 {
    if minutes >= 4 {
        2
    } else {
        1
    }
}

/// How much `RssAnon` may grow between the first and the last judged
/// sample, KiB. Measured: +12 KiB (1052 to 1064) from minute 2 to 10 of
/// seed 002's 16-flow soak on Debian 6.12 (the recorded samples in the
/// tests); over 8 judged minutes the limit is crossed by a leak of 64 KiB
/// per disruption cycle or of about 3 KiB per traffic round (about 22 a
/// minute there).
pub const RSS_GROWTH_LIMIT_KIB: u64 = 512;

/// Fewest judged samples for the trend rule (three rises in a row).
pub const TREND_MIN_SAMPLES: usize = 4;

/// One sample of the device process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DeviceSample {
    /// The soak minute it starts (the soak's length for the last sample).
    pub minute: u32,
    /// Host seconds since the soak's first sample.
    pub at_s: f64,
    /// `VmRSS`, KiB.
    pub vm_rss_kib: u64,
    /// `RssAnon`, KiB (judged).
    pub rss_anon_kib: u64,
    /// `RssFile`, KiB.
    pub rss_file_kib: u64,
    /// `RssShmem`, KiB (the guest RAM the device touched).
    pub rss_shmem_kib: u64,
    /// Open descriptors (entries of `/proc/<pid>/fd`).
    pub fds: u32,
}

/// The rule applied to a soak's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flatness {
    /// The first judged minute ([`warmup_minutes`]).
    pub judged_from_minute: u32,
    /// How many samples were judged.
    pub judged: usize,
    /// `RssAnon` of the first and last judged samples and their largest, KiB.
    pub rss_first_kib: u64,
    /// See `rss_first_kib`.
    pub rss_last_kib: u64,
    /// See `rss_first_kib`.
    pub rss_max_kib: u64,
    /// Last minus first (negative: it shrank), KiB.
    pub rss_growth_kib: i64,
    /// [`RSS_GROWTH_LIMIT_KIB`].
    pub rss_limit_kib: u64,
    /// Every judged sample above the one before (with at least [`TREND_MIN_SAMPLES`]).
    pub rss_monotone_rise: bool,
    /// `VmRSS` of the first and last judged samples, KiB (reported, not judged).
    pub vm_rss_first_kib: u64,
    /// See `vm_rss_first_kib`.
    pub vm_rss_last_kib: u64,
    /// Open descriptors: first and last judged sample, least and most.
    pub fds_first: u32,
    /// See `fds_first`.
    pub fds_last: u32,
    /// See `fds_first`.
    pub fds_min: u32,
    /// See `fds_first`.
    pub fds_max: u32,
}

impl Flatness {
    /// Whether the memory stayed flat (growth within the limit, no monotone rise).
    pub fn memory_flat(&self) -> bool {
        self.rss_growth_kib <= self.rss_limit_kib as i64 && !self.rss_monotone_rise
    }

    /// Whether every judged sample had the same descriptor count.
    pub fn fds_flat(&self) -> bool {
        self.fds_min == self.fds_max
    }
}

/// The rule on `samples` of a soak of `minutes`; None when fewer than two
/// samples fall after the warm-up (nothing to judge).
pub fn flatness(samples: &[DeviceSample], minutes: u32) -> Option<Flatness> {
    let from = warmup_minutes(minutes);
    let judged: Vec<&DeviceSample> = samples.iter().filter(|s| s.minute >= from).collect();
    let (first, last) = (judged.first()?, judged.last()?);
    if judged.len() < 2 {
        return None;
    }
    let rises = judged.windows(2).all(|w| w[1].rss_anon_kib > w[0].rss_anon_kib);
    Some(Flatness {
        judged_from_minute: from,
        judged: judged.len(),
        rss_first_kib: first.rss_anon_kib,
        rss_last_kib: last.rss_anon_kib,
        rss_max_kib: judged.iter().map(|s| s.rss_anon_kib).max().unwrap_or_default(),
        rss_growth_kib: last.rss_anon_kib as i64 - first.rss_anon_kib as i64,
        rss_limit_kib: RSS_GROWTH_LIMIT_KIB,
        rss_monotone_rise: judged.len() >= TREND_MIN_SAMPLES && rises,
        vm_rss_first_kib: first.vm_rss_kib,
        vm_rss_last_kib: last.vm_rss_kib,
        fds_first: first.fds,
        fds_last: last.fds,
        fds_min: judged.iter().map(|s| s.fds).min().unwrap_or_default(),
        fds_max: judged.iter().map(|s| s.fds).max().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples as (minute, VmRSS, RssAnon, RssShmem, fds), KiB.
    fn samples(rows: &[(u32, u64, u64, u64, u32)]) -> Vec<DeviceSample> {
        rows.iter()
            .map(|&(minute, vm, anon, shmem, fds)| DeviceSample {
                minute,
                at_s: f64::from(minute) * 60.0,
                vm_rss_kib: vm,
                rss_anon_kib: anon,
                rss_file_kib: vm - anon - shmem,
                rss_shmem_kib: shmem,
                fds,
            })
            .collect()
    }

    /// A 10-minute soak of seed 002 with 16 flows a round on Debian 6.12.117
    /// under TCG (`cargo xtask soak --format json`, the `soak.samples`): the
    /// device's `RssAnon` settles after the first minute (1052 to 1064 KiB
    /// from minute 2) while `RssShmem`, the guest RAM the device touched,
    /// keeps growing; the descriptors are 33 at every sample.
    const RECORDED: [(u32, u64, u64, u64, u32); 11] = [
        (0, 8_776, 980, 612, 33),
        (1, 41_996, 1_052, 33_760, 33),
        (2, 43_936, 1_052, 35_700, 33),
        (3, 46_572, 1_052, 38_336, 33),
        (4, 46_584, 1_056, 38_344, 33),
        (5, 47_748, 1_056, 39_508, 33),
        (6, 47_820, 1_060, 39_576, 33),
        (7, 47_828, 1_064, 39_580, 33),
        (8, 48_016, 1_064, 39_768, 33),
        (9, 48_120, 1_064, 39_872, 33),
        (10, 48_264, 1_064, 40_016, 33),
    ];

    #[test]
    fn a_recorded_soak_is_flat_although_its_vm_rss_grows_with_the_guest_ram_it_touched() {
        let f = flatness(&samples(&RECORDED), 10).expect("judged");
        assert_eq!((f.judged_from_minute, f.judged), (2, 9));
        assert_eq!((f.rss_first_kib, f.rss_last_kib, f.rss_max_kib, f.rss_growth_kib), (1_052, 1_064, 1_064, 12));
        assert!(!f.rss_monotone_rise && f.memory_flat(), "{f:?}");
        assert!(f.vm_rss_last_kib > f.vm_rss_first_kib + 4_000, "VmRSS grew, not judged");
        assert!(f.fds_flat() && f.fds_first == 33);
    }

    #[test]
    fn growth_above_the_limit_a_slow_steady_rise_or_one_more_descriptor_is_not_flat() {
        let mut leak = RECORDED;
        leak[10].2 += RSS_GROWTH_LIMIT_KIB;
        let f = flatness(&samples(&leak), 10).expect("judged");
        assert!(f.rss_growth_kib > f.rss_limit_kib as i64 && !f.memory_flat(), "{f:?}");
        // 8 KiB a minute: 64 KiB in all, far under the limit, but every sample higher.
        let slow: Vec<_> = RECORDED.iter().map(|&(m, v, _, s, fd)| (m, v, 3_000 + 8 * u64::from(m), s, fd)).collect();
        let f = flatness(&samples(&slow), 10).expect("judged");
        assert!(f.rss_monotone_rise && !f.memory_flat(), "{f:?}");
        let mut fd = RECORDED;
        fd[7].4 += 1;
        let f = flatness(&samples(&fd), 10).expect("judged");
        assert!(f.memory_flat() && !f.fds_flat() && (f.fds_min, f.fds_max) == (33, 34), "{f:?}");
    }

    #[test]
    fn the_warm_up_is_not_judged_and_a_short_soak_judges_from_minute_one() {
        // A big jump inside the warm-up counts for nothing.
        let mut warm = RECORDED;
        warm[0].2 = 100;
        warm[1].4 = 20;
        let f = flatness(&samples(&warm), 10).expect("judged");
        assert!(f.memory_flat() && f.fds_flat());
        // Two minutes: samples 1 and 2 judged, the trend rule needs more.
        let short = samples(&RECORDED[..3]);
        let f = flatness(&short, 2).expect("judged");
        assert_eq!((f.judged_from_minute, f.judged, f.rss_growth_kib), (1, 2, 0));
        assert!(!f.rss_monotone_rise && f.memory_flat());
        assert_eq!(flatness(&short[..1], 2), None, "one sample after the warm-up: nothing to judge");
        assert_eq!(flatness(&[], 10), None);
    }
}
