//! The timeline's view model: tracks of time spans, no DOM. The page draws what is here.

use model::log::ProcessKey;
use model::OpType;

/// One kernel on a track, in the reference rank's clock (synchronised across nodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start_ns: i64,
    pub end_ns: i64,
    /// The operation the kernel's name says, when it says one.
    pub op: Option<OpType>,
}

/// One row of the timeline (one GPU of one process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Track {
    pub label: String,
    pub spans: Vec<Span>,
    /// The process and GPU whose kernels these are (kept where the analysis runs; the page's
    /// copy of a timeline does not carry it).
    pub source: Option<(ProcessKey, u32)>,
}

/// Every track, with the time range that covers them all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Timeline {
    pub tracks: Vec<Track>,
    pub start_ns: i64,
    pub end_ns: i64,
}
