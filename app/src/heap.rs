//! The loading worker's heap, counted: bytes live and the most live since the last look, for
//! the memory figures of docs/PERFORMANCE.md (issue 11). A wasm module's memory only grows, so
//! its size says where the heap peaked, not what is held or which stage put it there; these
//! counts say both. Counted bytes are the sizes asked for (the allocator's own overhead and its
//! fragmentation are the difference to the memory's size).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counted. The worker binary installs it as its global allocator.
pub struct Counting;

// SAFETY: every call forwards to the system allocator unchanged; only the sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new_size) };
        if !q.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            grew(new_size);
        }
        q
    }
}

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

/// Bytes live now.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The most bytes live since the last call (or the start), and starts counting afresh.
pub fn take_peak() -> usize {
    let now = live();
    PEAK.swap(now, Ordering::Relaxed).max(now)
}

/// One stage of a load: what it left live and the most it had live on the way.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HeapStage {
    pub stage: String,
    pub live_bytes: u64,
    pub peak_bytes: u64,
}

impl HeapStage {
    /// The stage that just ended: live now, and its peak (counting starts afresh for the next).
    pub fn ended(stage: &str) -> HeapStage {
        HeapStage {
            stage: stage.to_string(),
            peak_bytes: take_peak() as u64,
            live_bytes: live() as u64,
        }
    }
}
