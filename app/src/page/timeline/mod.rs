//! The timeline: its canvas ([`canvas`]), the controls above it (filter, clock, legend:
//! [`controls`]), the minimap ([`minimap`]), the NVTX rows ([`nvtx_rows`]) and the hover
//! tooltip ([`tooltip`]).

pub mod canvas;
pub mod controls;
pub mod minimap;
pub mod nvtx_rows;
pub mod tooltip;
