//! Analyses over the parsed and enriched records, one module per analysis. Plain data in,
//! plain data out: no I/O, no threads, no clocks, so every analysis runs unchanged in the
//! browser (wasm32).

pub mod diagnosis;
