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
//!
//! The heap a bounded collection keeps is a high-water mark: a queue's
//! backlog that once filled to its bound keeps that capacity when drained
//! (one step up, once). Steps like that are not growth as long as nothing
//! else rises in every window, which is why the watch's own history is
//! allocated when it is built and never grows ([`Watch`]).

use device_model::device::mana::Footprint;
use std::collections::VecDeque;

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

/// The sizes of one window: the largest size of each watched collection
/// (in the order of [`Watch`]'s names) and the smallest live heap.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Window {
    largest: Vec<usize>,
    least_live: Option<usize>,
}

impl Window {
    fn empty(collections: usize) -> Self {
        Self { largest: vec![0; collections], least_live: None }
    }

    /// Empties the window for reuse, keeping its allocation.
    fn reset(&mut self) {
        self.largest.fill(0);
        self.least_live = None;
    }
}

/// The windows seen so far (the last [`WINDOWS`] + 1).
///
/// The watch is on the heap it measures, so it holds all it will ever hold
/// from [`Watch::new`] on: every window allocated up front and reused, so
/// that its own history, filling up over the first [`WINDOWS`] + 1 windows,
/// is not taken for growth of the device (it was: 1,216 bytes more per
/// window, a rise in every window, which any one capacity step of a bounded
/// collection then carried past [`MIN_HEAP_RISE`]).
#[derive(Debug)]
pub struct Watch {
    names: Vec<&'static str>,
    inputs: u64,
    current: Window,
    done: VecDeque<Window>,
    spare: Vec<Window>,
}

impl Watch {
    /// A watch over the collections of `footprint` (its names; every
    /// footprint recorded must have the same), with its windows allocated.
    pub fn new(footprint: &Footprint) -> Self {
        let names: Vec<&'static str> = footprint.0.keys().copied().collect();
        let collections = names.len();
        Self {
            names,
            inputs: 0,
            current: Window::empty(collections),
            done: VecDeque::with_capacity(WINDOWS + 1),
            spare: (0..=WINDOWS).map(|_| Window::empty(collections)).collect(),
        }
    }

    /// Records the sizes after one input; `Err` with what keeps growing.
    /// `live` is best measured before `footprint` is built (the footprint
    /// is not the device's).
    ///
    /// # Errors
    /// A description of the growth (the collection or the heap, and its
    /// sizes window by window), or of a footprint whose collections are not
    /// the ones the watch was made for.
    pub fn record(&mut self, footprint: &Footprint, live: usize) -> Result<(), String> {
        let over = footprint.over_bounds();
        if !over.is_empty() {
            return Err(format!("past their bounds: {}", over.join(", ")));
        }
        if footprint.0.len() != self.names.len() || !footprint.0.keys().eq(self.names.iter()) {
            let names: Vec<&str> = footprint.0.keys().copied().collect();
            return Err(format!("the footprint's collections changed: {names:?}, not {:?}", self.names));
        }
        for (largest, (&name, fill)) in self.current.largest.iter_mut().zip(&footprint.0) {
            let len = fill.len;
            if len > MAX_ENTRIES {
                return Err(format!("{name} holds {len} entries (more than {MAX_ENTRIES})"));
            }
            *largest = (*largest).max(len);
        }
        if live > MAX_LIVE_BYTES {
            return Err(format!("the live heap is {live} bytes (more than {MAX_LIVE_BYTES})"));
        }
        self.current.least_live = Some(self.current.least_live.map_or(live, |least| least.min(live)));
        self.inputs += 1;
        if self.inputs.is_multiple_of(WINDOW) {
            self.end_window();
            return self.check();
        }
        Ok(())
    }

    /// Moves the current window to the ones done (the oldest of more than
    /// [`WINDOWS`] + 1 becomes the next current one), allocating nothing.
    fn end_window(&mut self) {
        let next = if self.done.len() > WINDOWS { self.done.pop_front() } else { self.spare.pop() };
        let mut next = next.unwrap_or_else(|| Window::empty(self.names.len()));
        next.reset();
        self.done.push_back(std::mem::replace(&mut self.current, next));
    }

    /// Inputs recorded.
    pub fn inputs(&self) -> u64 {
        self.inputs
    }

    fn check(&self) -> Result<(), String> {
        if self.done.len() <= WINDOWS {
            return Ok(());
        }
        for (index, name) in self.names.iter().enumerate() {
            if rises_every_time(self.done.iter().map(|w| w.largest[index])) {
                let sizes: Vec<usize> = self.done.iter().map(|w| w.largest[index]).collect();
                return Err(format!("{name} grew in each of the last {WINDOWS} windows of {WINDOW} inputs: {sizes:?}"));
            }
        }
        let live = || self.done.iter().map(|w| w.least_live.unwrap_or(0));
        let rise = live().next_back().unwrap_or(0).saturating_sub(live().next().unwrap_or(0));
        if rises_every_time(live()) && rise >= MIN_HEAP_RISE {
            let live: Vec<usize> = live().collect();
            return Err(format!(
                "the live heap grew in each of the last {WINDOWS} windows of {WINDOW} inputs, by {rise} bytes: {live:?}"
            ));
        }
        Ok(())
    }
}

/// Whether every size is larger than the one before (and there are two).
fn rises_every_time(sizes: impl Iterator<Item = usize>) -> bool {
    let mut previous = None;
    let mut count = 0;
    for size in sizes {
        if previous.is_some_and(|p| size <= p) {
            return false;
        }
        previous = Some(size);
        count += 1;
    }
    count > 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::net_bytes_of_this_thread;
    use device_model::device::mana::Fill;
    use device_model::queues::MAX_BACKLOG;
    use std::collections::BTreeMap;

    fn one_map(len: usize) -> Footprint {
        Footprint(BTreeMap::from([("map", Fill { len, bound: usize::MAX })]))
    }

    fn watch() -> Watch {
        Watch::new(&one_map(0))
    }

    fn feed(
        watch: &mut Watch,
        inputs: u64,
        size: impl Fn(u64) -> usize,
        live: impl Fn(u64) -> usize,
    ) -> Result<(), String> {
        for i in 0..inputs {
            watch.record(&one_map(size(i)), live(i))?;
        }
        Ok(())
    }

    /// The footprint of a real device (every collection it names).
    fn device_footprint() -> Footprint {
        crate::support::Driver::new(crate::support::Kernel::V6_12, crate::targets::config()).dev.footprint()
    }

    /// The live heap as the target sees it, from this thread's count: a
    /// device of `base` bytes plus what this thread holds since `start`.
    fn live(base: usize, start: isize) -> usize {
        base.saturating_add_signed(net_bytes_of_this_thread() - start)
    }

    #[test]
    fn a_collection_that_keeps_growing_is_caught_and_one_that_stops_at_a_bound_is_not() {
        let windows = (WINDOWS as u64 + 2) * WINDOW;
        let err = feed(&mut watch(), windows, |i| i as usize, |_| 0).expect_err("growth");
        assert!(err.starts_with("map grew in each of the last"), "{err}");
        // Fills up to 256 entries (a budget) early on, then stays.
        feed(&mut watch(), 4 * windows, |i| (i as usize).min(256), |_| 0).expect("bounded");
        // Goes up and down every input: a working set.
        feed(&mut watch(), 4 * windows, |i| (i % 7) as usize * 100, |_| 0).expect("working set");
    }

    #[test]
    fn a_heap_that_keeps_growing_is_caught_and_small_steps_are_not() {
        let windows = (WINDOWS as u64 + 2) * WINDOW;
        let err = feed(&mut watch(), windows, |_| 1, |i| 1_000_000 + 64 * i as usize).expect_err("leak");
        assert!(err.contains("live heap grew"), "{err}");
        // A few bytes more per window: under MIN_HEAP_RISE.
        feed(&mut watch(), windows, |_| 1, |i| 1_000_000 + (i / WINDOW) as usize).expect("noise");
        let err = feed(&mut watch(), 1, |_| MAX_ENTRIES + 1, |_| 0).expect_err("cap");
        assert!(err.contains("more than"), "{err}");
    }

    #[test]
    fn a_collection_past_its_bound_is_caught_at_once() {
        let footprint = Footprint(BTreeMap::from([("held", Fill { len: 129, bound: 128 })]));
        let err = Watch::new(&footprint).record(&footprint, 0).expect_err("past the bound");
        assert_eq!(err, "past their bounds: held: 129 > 128");
    }

    #[test]
    fn a_footprint_with_other_collections_than_the_watched_ones_is_an_error() {
        let other = Footprint(BTreeMap::from([("other", Fill { len: 0, bound: 1 })]));
        let err = watch().record(&other, 0).expect_err("other names");
        assert!(err.starts_with("the footprint's collections changed"), "{err}");
    }

    #[test]
    fn recording_allocates_nothing_once_the_watch_is_built() {
        let footprint = device_footprint();
        let mut watch = Watch::new(&footprint);
        let start = net_bytes_of_this_thread();
        for _ in 0..(WINDOWS as u64 + 3) * WINDOW {
            watch.record(&footprint, 200_000).expect("flat");
        }
        assert_eq!(net_bytes_of_this_thread(), start, "the watch's history is allocated when it is built");
    }

    #[test]
    fn the_watchs_own_history_and_one_step_of_a_bounded_backlog_are_not_growth() {
        // The smoke run's finding, replayed with real allocations: a device
        // whose heap is flat but for one HWC CQ backlog that fills to its
        // bound (MAX_BACKLOG CQEs of 65 bytes with their flag: 266,240 bytes)
        // in window 4 and keeps that capacity once drained. The watch used
        // to add 1,216 bytes of its own history per window on the heap it
        // measures: a rise in every window, which the step carried past
        // MIN_HEAP_RISE ("the live heap grew in each of the last 24 windows
        // ..., by 343139 bytes").
        let footprint = device_footprint();
        let start = net_bytes_of_this_thread();
        let mut watch = Watch::new(&footprint);
        let mut backlog: VecDeque<([u8; 64], bool)> = VecDeque::new();
        for i in 0..(WINDOWS as u64 + 4) * WINDOW {
            if i == 4 * WINDOW + 100 {
                backlog.extend(std::iter::repeat_n(([0; 64], false), MAX_BACKLOG));
                backlog.clear();
            }
            watch.record(&footprint, live(200_000, start)).expect("bounded state is not growth");
        }
        assert!(backlog.capacity() >= MAX_BACKLOG);
    }

    #[test]
    fn a_real_leak_beside_the_watch_is_still_caught() {
        // 64 bytes kept per input (and the vector that keeps them): about
        // 36 KiB a window, on the heap the watch is on as well.
        let footprint = device_footprint();
        let start = net_bytes_of_this_thread();
        let mut watch = Watch::new(&footprint);
        let mut kept: Vec<Box<[u8; 64]>> = Vec::new();
        let mut found = None;
        for _ in 0..(WINDOWS as u64 + 2) * WINDOW {
            kept.push(Box::new([1; 64]));
            if let Err(err) = watch.record(&footprint, live(200_000, start)) {
                found = Some(err);
                break;
            }
        }
        let err = found.expect("a leak of 64 bytes per input is caught");
        assert!(err.starts_with("the live heap grew in each of the last 24 windows"), "{err}");
        assert_eq!(watch.inputs(), (WINDOWS as u64 + 1) * WINDOW, "caught as soon as 25 windows are seen");
    }
}
