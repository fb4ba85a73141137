//! What the page's main thread and its loading worker share: the messages between them, the
//! formatted view data the worker sends, and (used only in the worker) the loading itself.
//!
//! The page (`src/main.rs`) draws; the worker (`src/bin/ncclscope-worker.rs`) reads, parses,
//! queries sql.js and analyses, so the main thread never blocks on a file.

pub mod aggregate_data;
pub mod aggregate_worker;
pub mod align_pool;
pub mod budget;
pub mod charts;
pub mod deferred;
pub mod export_read;
pub mod files;
pub mod heap;
pub mod link;
pub mod loader;
pub mod notes;
pub mod panel_data;
pub mod parse_jobs;
pub mod parse_pool;
pub mod table_window;
pub mod theory_panel;
pub mod timeline_math;
pub mod views;
pub mod warm_up;
pub mod wire;
pub mod worker_pool;
