//! The timeline view model: one track per GPU of the run's NCCL kernels ([`build`], in
//! synchronised time), each span marked with what the analysis knows of it ([`annotate_spans`],
//! [`SpanFact`]), level-of-detail summaries per track ([`Lod`]) so that drawing costs pixels ×
//! tracks, the filter language and clock choice ([`TimelineView`]), and the NVTX marker rows
//! ([`marker_rows`]). Portable: the page's worker builds it, the page draws it.

mod build;
mod filter;
mod markers;
mod span_facts;
mod tracks;

pub use build::{build, build_incremental};
pub use filter::{filter_timeline, Filter, FilterCounts, FilterError, TimelineView};
pub use markers::{marker_rows, MAX_MARKERS_PER_ROW};
pub use span_facts::{annotate_spans, walk_span_facts, SpanFact};
pub use tracks::{
    op_byte, par_byte, Lod, Mark, Marker, MarkerKind, MarkerRow, Span, Timeline, Track, LOD_NO_OP,
    LOW_CONFIDENCE, PARALLELISMS,
};
