//! The page ↔ worker protocol: the messages ([`messages`]), the timeline's binary form
//! ([`timeline_codec`]), and the view data the worker builds for the page (the run's overview,
//! rank and communicator rows, panels, notes, theory, aggregates), already formatted
//! ([`format`]).

pub mod aggregate;
pub mod compare;
pub mod file_lines;
pub mod format;
pub mod groups;
pub mod insights;
pub mod messages;
pub mod notes;
pub mod overview;
pub mod panels;
pub mod stacked;
pub mod theory;
pub mod timeline_codec;
pub mod views;
