//! Streaming parser of NCCL debug logs (`NCCL_DEBUG=INFO`), every version since 2.4, RCCL, and
//! the prefixes launchers and log collectors put in front of NCCL's own lines.
//!
//! The main type is [`LogParser`]: push bytes with [`LogParser::feed`] (chunks may split lines,
//! even UTF-8 sequences), then [`LogParser::finish`] returns a [`ParsedLog`]: per-collective
//! operations and communicator inits as [`model::log`] records, per-process NCCL version and
//! topology, channels/rings, init timings, destroys, the run's `NCCL WARN` lines, diagnostics
//! about the log itself (with line numbers) and counters. [`LogStream`] puts a gzip decoder in
//! front of it when the first bytes say gzip (inflating chunk by chunk as they are fed);
//! [`parse_bytes`] does the same for a whole buffer; [`is_nccl_log`] sniffs content.
//!
//! No file I/O, no clocks: the crate builds for `wasm32-unknown-unknown`. Natively, big chunks are
//! read on other threads while the caller's thread applies the lines in order (same result as
//! one thread); where no thread can be spawned (wasm) everything runs on the caller's thread.
//! A bad line is a diagnostic, never a panic: every skipped line is listed with its reason and
//! text ([`SKIPPED`]; [`split_note`] takes a note apart into reason, detail and the line's text
//! again). Memory grows with the records kept, not with the input.
//!
//! Modules, one per line family (each starts with the exact shapes it reads): `prefix` (who
//! printed the line), `coll` (per-collective lines), `tuning`, `init`, `topo`, `rings`; then
//! `read` (one line read without state) and `parser` (framing, threads and the state that spans
//! lines).

mod coll;
mod facts;
mod fast;
mod framework;
mod init;
mod note;
mod parser;
mod prefix;
mod read;
mod records;
mod repeats;
mod rings;
mod scan;
mod shared_read;
mod stream;
pub mod topo;
mod tuning;

pub use facts::{ConfigFact, ConfigLine, FailedCall};
pub use framework::{FrameworkEvent, FrameworkLine, ProcessGroup, WorkCause};
pub use note::{split_note, NoteParts};
pub use parser::{LogParser, SKIPPED};
pub use records::{
    CommChannels, CommDestroy, Counters, InitTiming, ParsedLog, ProcessInfo, RingNeighbors,
    RingOrder, RunWarning, TreeLinks,
};
pub use stream::LogStream;
pub use topo::{LinkKind, NodeKind, TopoHeader, TopoLink, TopoNode, Topology};

use std::io::Read;

/// `1f 8b`: gzip.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// How much of a gzip stream the sniffer inflates.
const SNIFF_INFLATE: usize = 64 * 1024;

/// Whether these first bytes of a file look like an NCCL debug log: some line has an
/// `NCCL INFO`/`NCCL WARN` marker after a `[dev]` (with any launcher prefix before the
/// `host:pid:tid`), or is a bare `NCCL version` banner. Gzip is looked through.
pub fn is_nccl_log(first_bytes: &[u8]) -> bool {
    if is_gzip(first_bytes) {
        let mut out = Vec::with_capacity(SNIFF_INFLATE);
        let mut dec = flate2::read::MultiGzDecoder::new(first_bytes).take(SNIFF_INFLATE as u64);
        // A cut-off stream is expected here: use whatever inflated before the error.
        let mut buf = [0u8; 8192];
        loop {
            match dec.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(buf.get(..n).unwrap_or_default()),
            }
        }
        return sniff_text(&out);
    }
    sniff_text(first_bytes)
}

fn sniff_text(b: &[u8]) -> bool {
    b.split(|c| *c == b'\n').any(stream::sniff_line)
}

/// Parses a whole buffer (plain or gzip: [`LogStream`]) in one call.
pub fn parse_bytes(path: &str, file_index: u32, bytes: &[u8]) -> ParsedLog {
    let mut s = LogStream::new(path, file_index);
    s.feed(bytes);
    s.finish()
}

/// Fuzzing entry (for `cargo fuzz`): parses `data` whole and again in chunks whose size the
/// first byte chooses, and returns both results (they must be equal; neither may panic). gzip
/// input is chunked too: the stream inflates it as it comes.
pub fn fuzz_parse(data: &[u8]) -> (ParsedLog, ParsedLog) {
    let whole = parse_bytes("fuzz", 0, data);
    // gzip's first bytes are always the same: there the sum of all bytes picks the size.
    let pick = match is_gzip(data) {
        true => data.iter().fold(0u8, |a, b| a.wrapping_add(*b)),
        false => data.first().copied().unwrap_or(0),
    };
    let step = usize::from(pick % 61) + 1;
    let mut s = LogStream::new("fuzz", 0);
    for c in data.chunks(step) {
        s.feed(c);
    }
    (whole, s.finish())
}
