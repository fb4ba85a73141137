//! Reads PyTorch profiler traces (Kineto's Chrome-trace JSON, `*.pt.trace.json[.gz]`, any
//! name), streamed: [`KinetoStream`] is fed the file in pieces, plain or gzip-compressed, and
//! never holds it whole; [`KinetoStream::finish`] gives a [`KinetoTrace`].
//!
//! Kept: `distributedInfo` (rank, world size, every process group's ranks and description, the
//! NCCL version); every NCCL/RCCL kernel with its timing in nanoseconds and its meaning
//! (operation, element counts, datatype, process group: from its own arguments, else from the
//! `record_param_comms`/`nccl:*` CPU ranges that launched it, else from its name);
//! `ProfilerStep#N` ranges; a count of everything else. What cannot be read is
//! counted and named with its line, never a panic: a trace cut short (the job died mid-write)
//! keeps every complete event and says where the file ends.
//!
//! [`records`] turns a trace into the records the rest of ncclscope reads (log operations,
//! communicator inits, kernels). Portable: no I/O, no clock, no thread.

mod collect;
mod distributed;
mod join;
mod lines;
pub mod meta;
pub mod number;
mod reader;
pub mod records;
pub mod scan;
mod stream;
mod trace;

pub use records::{records, GroupRecord, TraceRecords};
pub use stream::KinetoStream;
pub use trace::{
    Annotation, Collective, DistributedInfo, EventCounts, KinetoTrace, Launch, MetaSource,
    NcclKernel, PgConfig, Problem, ProfilerStep, MAX_ANNOTATIONS,
};

/// Reads a whole trace held in memory (plain or gzip), as [`KinetoStream`] would.
pub fn parse_bytes(path: &str, bytes: &[u8]) -> KinetoTrace {
    let mut s = KinetoStream::new(path);
    s.feed(bytes);
    s.finish()
}

/// Whether a text's head (a file's first bytes, inflated if it was gzip) is a Chrome-trace
/// JSON document: an object, first, whose head names `traceEvents` or Kineto's own top-level
/// members (`schemaVersion` with `deviceProperties` or `distributedInfo`). Recognised by
/// content, whatever the file's name.
pub fn looks_like_trace(head: &[u8]) -> bool {
    let head = head.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(head);
    let i = scan::skip_ws(head, 0);
    if head.get(i) != Some(&b'{') {
        return false;
    }
    let j = scan::skip_ws(head, i + 1);
    if head.get(j) != Some(&b'"') {
        return false;
    }
    let has = |s: &[u8]| memchr::memmem::find(head, s).is_some();
    has(b"\"traceEvents\"")
        || (has(b"\"schemaVersion\"")
            && (has(b"\"deviceProperties\"") || has(b"\"distributedInfo\"")))
}

/// Whether a gzip file's first bytes inflate to the head of a trace ([`looks_like_trace`]).
pub fn gzip_holds_trace(gz_head: &[u8]) -> bool {
    use std::io::Write;
    let mut d = flate2::write::MultiGzDecoder::new(Vec::new());
    // A head cut anywhere inflates as far as it goes; errors only mean it is cut.
    for piece in gz_head.chunks(4096) {
        if d.write_all(piece).is_err() || d.get_ref().len() >= 64 * 1024 {
            break;
        }
    }
    looks_like_trace(d.get_ref())
}
