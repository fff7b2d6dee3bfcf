//! Telling growth from a working set: what the `persistent` target checks
//! after every input on its one long-lived device.
//!
//! First, every collection must stay within the bound the device states
//! for it (`Footprint::over_bounds`): a collection past its bound is growth
//! at once. Then, for what has no stated bound or grows slowly inside it:
//! inputs are grouped into windows of [`WINDOW`]. Per window the watch
//! keeps, for every collection of the device's footprint
//! (`ManaDevice::footprint`), the largest size seen, and for the live heap
//! the smallest (after each input the driver model forgets its records, so
//! the smallest is the device's own state plus what it keeps). A size that
//! rises in each of [`WINDOWS`] windows in a row keeps growing: bounded
//! state stops rising once it reaches its bound (a budget, a table size),
//! and a working set goes up and down. Beyond that, any collection past
//! [`MAX_ENTRIES`] or a live heap past [`MAX_LIVE_BYTES`] is growth at once.

use device_model::device::mana::Footprint;
use std::collections::{BTreeMap, VecDeque};

/// Inputs per window.
pub const WINDOW: u64 = 512;
/// Windows in a row a size must rise in to count as growing.
pub const WINDOWS: usize = 24;
/// Entries no collection of the device should ever hold.
pub const MAX_ENTRIES: usize = 1_000_000;
/// Live heap bytes the device and the driver model should never need.
pub const MAX_LIVE_BYTES: usize = 1 << 30;
/// The live heap must rise by at least this much over [`WINDOWS`] windows
/// to count (allocator rounding and capacity steps rise by less).
pub const MIN_HEAP_RISE: usize = 256 << 10;

/// The sizes of one window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Window {
    largest: BTreeMap<&'static str, usize>,
    least_live: Option<usize>,
}

/// The windows seen so far (the last [`WINDOWS`] + 1).
#[derive(Debug, Default)]
pub struct Watch {
    inputs: u64,
    current: Window,
    done: VecDeque<Window>,
}

impl Watch {
    /// Records the sizes after one input; `Err` with what keeps growing.
    ///
    /// # Errors
    /// A description of the growth (the collection or the heap, and its
    /// sizes window by window).
    pub fn record(&mut self, footprint: &Footprint, live: usize) -> Result<(), String> {
        let over = footprint.over_bounds();
        if !over.is_empty() {
            return Err(format!("past their bounds: {}", over.join(", ")));
        }
        for (&name, fill) in &footprint.0 {
            let len = fill.len;
            if len > MAX_ENTRIES {
                return Err(format!("{name} holds {len} entries (more than {MAX_ENTRIES})"));
            }
            let largest = self.current.largest.entry(name).or_default();
            *largest = (*largest).max(len);
        }
        if live > MAX_LIVE_BYTES {
            return Err(format!("the live heap is {live} bytes (more than {MAX_LIVE_BYTES})"));
        }
        self.current.least_live = Some(self.current.least_live.map_or(live, |least| least.min(live)));
        self.inputs += 1;
        if self.inputs.is_multiple_of(WINDOW) {
            self.done.push_back(std::mem::take(&mut self.current));
            if self.done.len() > WINDOWS + 1 {
                self.done.pop_front();
            }
            return self.check();
        }
        Ok(())
    }

    /// Inputs recorded.
    pub fn inputs(&self) -> u64 {
        self.inputs
    }

    fn check(&self) -> Result<(), String> {
        if self.done.len() <= WINDOWS {
            return Ok(());
        }
        let names: Vec<&'static str> =
            self.done.back().map(|w| w.largest.keys().copied().collect()).unwrap_or_default();
        for name in names {
            let sizes: Vec<usize> = self.done.iter().map(|w| w.largest.get(name).copied().unwrap_or(0)).collect();
            if rises_every_time(&sizes) {
                return Err(format!("{name} grew in each of the last {WINDOWS} windows of {WINDOW} inputs: {sizes:?}"));
            }
        }
        let live: Vec<usize> = self.done.iter().map(|w| w.least_live.unwrap_or(0)).collect();
        let rise = live.last().copied().unwrap_or(0).saturating_sub(live.first().copied().unwrap_or(0));
        if rises_every_time(&live) && rise >= MIN_HEAP_RISE {
            return Err(format!(
                "the live heap grew in each of the last {WINDOWS} windows of {WINDOW} inputs, by {rise} bytes: {live:?}"
            ));
        }
        Ok(())
    }
}

fn rises_every_time(sizes: &[usize]) -> bool {
    sizes.len() > 1 && sizes.windows(2).all(|pair| pair[1] > pair[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use device_model::device::mana::Fill;

    fn feed(
        watch: &mut Watch,
        inputs: u64,
        size: impl Fn(u64) -> usize,
        live: impl Fn(u64) -> usize,
    ) -> Result<(), String> {
        for i in 0..inputs {
            let footprint = Footprint(BTreeMap::from([("map", Fill { len: size(i), bound: usize::MAX })]));
            watch.record(&footprint, live(i))?;
        }
        Ok(())
    }

    #[test]
    fn a_collection_that_keeps_growing_is_caught_and_one_that_stops_at_a_bound_is_not() {
        let windows = (WINDOWS as u64 + 2) * WINDOW;
        let err = feed(&mut Watch::default(), windows, |i| i as usize, |_| 0).expect_err("growth");
        assert!(err.starts_with("map grew in each of the last"), "{err}");
        // Fills up to 256 entries (a budget) early on, then stays.
        feed(&mut Watch::default(), 4 * windows, |i| (i as usize).min(256), |_| 0).expect("bounded");
        // Goes up and down every input: a working set.
        feed(&mut Watch::default(), 4 * windows, |i| (i % 7) as usize * 100, |_| 0).expect("working set");
    }

    #[test]
    fn a_heap_that_keeps_growing_is_caught_and_small_steps_are_not() {
        let windows = (WINDOWS as u64 + 2) * WINDOW;
        let err = feed(&mut Watch::default(), windows, |_| 1, |i| 1_000_000 + 64 * i as usize).expect_err("leak");
        assert!(err.contains("live heap grew"), "{err}");
        // A few bytes more per window: under MIN_HEAP_RISE.
        feed(&mut Watch::default(), windows, |_| 1, |i| 1_000_000 + (i / WINDOW) as usize).expect("noise");
        let err = feed(&mut Watch::default(), 1, |_| MAX_ENTRIES + 1, |_| 0).expect_err("cap");
        assert!(err.contains("more than"), "{err}");
    }

    #[test]
    fn a_collection_past_its_bound_is_caught_at_once() {
        let footprint = Footprint(BTreeMap::from([("held", Fill { len: 129, bound: 128 })]));
        let err = Watch::default().record(&footprint, 0).expect_err("past the bound");
        assert_eq!(err, "past their bounds: held: 129 > 128");
    }
}
