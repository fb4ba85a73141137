//! What the page's main thread and its loading worker share, in three parts:
//!
//! - [`protocol`]: the messages between them (and the binary timeline beside them), and the view
//!   data the worker builds from the analysis for the page to show as it is;
//! - [`worker`]: the loading worker and its helpers (reading, parsing, querying sql.js,
//!   analysing), which the worker binary (`src/bin/ncclscope-worker.rs`) starts;
//! - [`page_logic`]: the page's logic that needs no browser (links, timeline arithmetic, table
//!   windows, the memory budget), here so that it is tested natively.
//!
//! The page itself (`src/main.rs`, `src/page/`) draws; it never reads a file.

pub mod page_logic;
pub mod protocol;
pub mod worker;
