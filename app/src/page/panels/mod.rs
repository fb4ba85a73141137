//! What the views show: the analyses ([`analyses`]: alignment, warnings, operations,
//! bandwidth, topology) with their charts ([`charts`]), the picked kernel ([`details`]), a time
//! window's aggregate ([`window`]), the rank-to-rank heat map ([`heatmap`]), a file's notes
//! ([`notes`]), a file's lines at an evidence line ([`file_lines`]), theory against observation
//! ([`theory`]), an aggregate file's views ([`aggregate`]), and the insights: diagnosis, steps,
//! patterns and identity ([`insights`]).

pub mod aggregate;
pub mod analyses;
pub mod charts;
pub mod details;
pub mod file_lines;
pub mod heatmap;
pub mod insights;
pub mod notes;
pub mod theory;
pub mod window;
