//! Analyses of an analysed session ([`pipeline::Analysis`]): one module per analysis, each
//! returning plain serde-serialisable values the command writes and the page draws as they are.
//! Portable: no I/O, no clocks, no threads (the page runs them in its worker).

pub mod patterns;
