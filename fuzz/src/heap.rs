//! Live heap bytes of the Rust side of a fuzz target (the device, the
//! driver model, the harness): a global allocator that counts, installed
//! only by the `persistent` target (fuzz_targets/persistent.rs).
//! libFuzzer's own memory (its corpus, its tables) is C++ and not counted,
//! so a growing corpus is not taken for a leak of the device.
//!
//! Each thread also counts what it allocates and frees
//! ([`net_bytes_of_this_thread`]), so that a test of the growth watch can
//! measure its own allocations while other tests run beside it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Bytes this thread allocated minus bytes it freed (const-initialised
    /// and without a destructor, so reading it never allocates).
    static NET: Cell<isize> = const { Cell::new(0) };
}

/// Counts `added` bytes more and `removed` fewer, on the whole and for this
/// thread (a thread being torn down no longer has its counter: skipped).
fn count(added: usize, removed: usize) {
    if added > 0 {
        LIVE.fetch_add(added, Ordering::Relaxed);
    }
    if removed > 0 {
        LIVE.fetch_sub(removed, Ordering::Relaxed);
    }
    let delta = added.cast_signed().wrapping_sub(removed.cast_signed());
    let _ = NET.try_with(|net| net.set(net.get().wrapping_add(delta)));
}

/// The system allocator, counting the bytes live.
#[derive(Debug)]
pub struct Counting;

// SAFETY: every call is forwarded to `System` with the caller's arguments,
// which uphold `GlobalAlloc`'s contract; the counter does not touch memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is (see the impl).
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size(), 0);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is (see the impl).
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(layout.size(), 0);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is (see the impl).
        unsafe { System.dealloc(ptr, layout) };
        count(0, layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is (see the impl).
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(new_size, layout.size());
        }
        new
    }
}

/// Bytes allocated through [`Counting`] and not freed (0 where it is not
/// the global allocator).
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Bytes this thread allocated through [`Counting`] minus the bytes it
/// freed (what another thread frees of them counts there); 0 where
/// [`Counting`] is not the global allocator.
pub fn net_bytes_of_this_thread() -> isize {
    NET.try_with(Cell::get).unwrap_or(0)
}

/// Resident memory of this process in bytes (`/proc/self/statm`, field 2,
/// 4 KiB pages on x86-64); 0 if it cannot be read.
pub fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}
