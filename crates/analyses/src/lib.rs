//! Analyses of a loaded and analysed session, one module per analysis. Portable (wasm32): no I/O,
//! no clock, no threads; results are plain serde-serialisable types the page and the command
//! show as they are.

pub mod steps;
