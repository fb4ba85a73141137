//! The system allocator, counted: bytes live now and the most live since the last look. A
//! program installs it as its global allocator (`#[global_allocator] static A: Counting =
//! Counting;`) and reads [`live`] and [`peak`] around what it measures. Counted bytes are the
//! sizes asked for: the allocator's own overhead and fragmentation are not in them.
//!
//! One set of counters per process (what a global allocator sees), shared by whatever installs
//! it: the memory example and benchmark of `pipeline` and `align`, the gzip memory test, and the
//! page's loading worker (`app/src/heap.rs`: its heap per stage of a load).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator with every allocation's size counted. Reallocation and zeroed
/// allocation take `GlobalAlloc`'s defaults (a new block, then the old one freed), so a growing
/// vector's old and new blocks both count at the moment of the copy, as they are both live.
pub struct Counting;

// SAFETY: every call goes to the system allocator unchanged; only the counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

/// Bytes live now.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The most bytes live since the start or the last [`take_peak`].
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed).max(live())
}

/// [`peak`], and counting the peak afresh from what is live now.
pub fn take_peak() -> usize {
    let now = live();
    PEAK.swap(now, Ordering::Relaxed).max(now)
}
