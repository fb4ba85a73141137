//! The timeline: its pane in a view ([`pane`]: the controls, the minimap and the canvas), the
//! canvas ([`canvas`]) and how it draws ([`draw`]), the controls above it (filter, clock, legend:
//! [`controls`]), the minimap ([`minimap`]) and the hover tooltip ([`tooltip`]). The NVTX rows
//! are rows of the canvas, folded under their rank.

pub mod canvas;
pub mod controls;
pub mod draw;
pub mod minimap;
pub mod pane;
pub mod tooltip;
