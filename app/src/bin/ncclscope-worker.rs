//! The page's loading worker (see `ncclscope_app::loader`): every file is read, parsed, queried
//! and analysed here, off the page's main thread.

/// Counted, for the per-stage memory figures the worker reports with each result.
#[global_allocator]
static HEAP: counting_alloc::Counting = counting_alloc::Counting;

fn main() {
    ncclscope_app::worker::loader::start();
}
