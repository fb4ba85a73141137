//! The loading worker's heap per stage of a load, for the memory figures of
//! docs/PERFORMANCE.md (issue 11). A wasm module's memory only grows, so its size says where the
//! heap peaked, not what is held or which stage put it there: the worker binary installs
//! `counting_alloc::Counting` as its allocator, and these figures say both. Counted bytes are
//! the sizes asked for (the allocator's overhead and fragmentation make up the difference to the
//! memory's size).

use crate::protocol::messages::HeapStage;

/// The stage that just ended: live now, and its peak (counting starts afresh for the next).
pub fn ended(stage: &str) -> HeapStage {
    HeapStage {
        stage: stage.to_string(),
        peak_bytes: counting_alloc::take_peak() as u64,
        live_bytes: counting_alloc::live() as u64,
    }
}
