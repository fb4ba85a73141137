//! The facade the page and the `ncclscope` command share.
//!
//! Inputs are added one file at a time ([`Session::add_log`], [`Session::add_export`]); each
//! returns a [`FileReport`] for the file list, and the session keeps the parsed records for the
//! later stages ([`align_session`]) and the views ([`Session::timeline`]). No I/O happens here: the caller brings
//! bytes (logs) or an open [`sqlsource::SqlSource`] (exports), so the same code runs natively and
//! in the page.

mod alignment;
mod analysis;
mod clocks;
mod comm_setup;
mod comm_stats;
mod comparison;
mod details;
mod digest;
mod filter;
mod incremental;
mod kernel_bw;
mod kernel_tally;
mod markers;
mod predicted_times;
mod process_rows;
mod processes;
mod report;
mod session;
mod skew;
mod sniff;
mod span_facts;
mod time_facts;
mod timeline;
mod volumes;
mod window;

pub use alignment::{align_session, kernel_op, Alignments, KernelSpan, ProcessMatch};
pub use analysis::{analyse, analyse_incremental, analyse_incremental_with, Analysis, UserSizes};
pub use clocks::synchronise_clocks;
pub use comm_setup::{comm_setups, CommSetup};
pub use comm_stats::{comm_bottlenecks, comm_stats, CommStats};
pub use comparison::{compare_volumes, VolumeComparison};
pub use details::{
    find_kernel, kernel_details, InstanceDetails, KernelDetails, LineDetails, MemberTiming,
};
pub use digest::records_digest;
pub use enrich::Bottleneck;
pub use enrich::ClockSync;
pub use enrich::{Hints, Sizes};
pub use filter::{filter_timeline, Filter, FilterCounts, FilterError, TimelineView};
pub use incremental::{timeline_incremental, Rerun};
pub use ingest_nsys::ReadOptions;
pub use kernel_bw::{for_each_kernel_bandwidth, kernel_bandwidths, KernelBw};
pub use kernel_tally::KernelTally;
pub use markers::{marker_rows, MAX_MARKERS_PER_ROW};
pub use predicted_times::{hardware_from_topology, predicted_times, size_bucket, TimeRow};
pub use process_rows::{ProcessKernels, ProcessOps};
pub use processes::{process_summaries, CommView, ProcessSummary};
pub use report::FileReport;
pub use session::{read_export, LoadedExport, LoadedLog, LogLoader, Session};
pub use skew::{arrival_skew, CommSkew};
pub use sniff::{sniff, InputKind, SNIFF_BYTES};
pub use span_facts::{annotate_spans, walk_span_facts, SpanFact};
pub use time_facts::{stamp_format, time_facts, TimeFacts};
pub use timeline::{
    op_byte, par_byte, Lod, Mark, Marker, MarkerKind, MarkerRow, Span, Timeline, Track, LOD_NO_OP,
    LOW_CONFIDENCE, PARALLELISMS,
};
pub use volumes::{dominant_element_bytes, observed_volumes, traffic_bytes, RankVolume};
pub use window::{window_summary, WindowRow, WindowSummary};
