//! The streaming push parser: bytes in (split anywhere), records out.
//!
//! Line shapes are handled by the sibling modules; this one does line framing (`\n`, `\r\n`, a
//! partial last line carried to the next chunk), attribution to processes (interned hosts),
//! the cross-line state (tuning → op, channels → communicator via the printing thread, topology
//! blocks, duplicates) and the diagnostics. Lines are never turned into `String`s; only kept
//! records allocate.
//!
//! Each line is handled in two steps: [`read_line_into`] splits and parses it without any state
//! (so it can run on any thread), then [`LogParser::apply`] does everything that depends on earlier
//! lines, strictly in file order. Big chunks are read by other threads window by window while the
//! caller's thread applies, so the result never depends on the thread count or on where chunks
//! and windows are cut.
//! ```text
//! <any line>\n   — see prefix.rs for the header, coll.rs / tuning.rs / init.rs / topo.rs / rings.rs for bodies
//! NCCL version 2.16.5+cuda11.8                        (bare banner, no header: goes to the last process)
//! ```

use crate::note::{excerpt, PRINTED_TWICE, UNKNOWN_OP};
use crate::prefix::{Level, Origin, Split};
use crate::read::{
    lines_of, read_body, read_line_into, windows, Body, FastBody, FastLine, LineCache, Read,
    MAX_LINE,
};
use crate::records::{
    CommChannels, CommDestroy, InitTiming, ParsedLog, ProcessInfo, RingNeighbors, RingOrder,
    RunWarning,
};
use crate::rings::RingLine;
use crate::topo::{self, Builder, Step};
use crate::{coll, facts, framework, init, scan, shared_read, tuning};
use model::log::{Call, CallSite, CommInit, Host, LogOp, ProcessKey, SourceLine};
use model::{DataType, Diagnostic, OpType, RedOp, Severity};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash (rustc's): the duplicate set is hashed once per op and SipHash showed in profiles.
/// Keys are numbers from the log, so flooding it only slows a hostile file down.
#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut v = [0u8; 8];
            v.iter_mut().zip(chunk).for_each(|(d, s)| *d = *s);
            self.write_u64(u64::from_le_bytes(v));
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type FxBuild = BuildHasherDefault<FxHasher>;

/// Which (process, comm, op, peer, opCount) were seen, for duplicate detection. opCounts of one
/// communicator are mostly consecutive, so each (process, comm, op, peer) keeps a bitmap from its
/// first opCount up; values the bitmap would have to grow too far for (sparse or going back) go
/// to a hash set. The bitmap never exceeds a word per value plus a few, and lookups stay in cache.
#[derive(Default)]
struct SeenOps {
    slots: Vec<SeenSlot>,
    index: HashMap<(usize, u64, OpType, i64), usize, FxBuild>,
    last: Option<((usize, u64, OpType, i64), usize)>,
}

#[derive(Default)]
struct SeenSlot {
    base: u64,
    bits: Vec<u64>,
    n: usize,
    extra: HashSet<u64, FxBuild>,
    /// The slot's latest operation: its row and opCount.
    last_row: Option<u32>,
    last_op_count: u64,
}

/// What [`SeenOps::insert`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    New,
    /// Seen before; `last` is the row of the slot's previous operation when it had the same
    /// opCount (a repeat printed right after, or another call of the same group).
    Again {
        last: Option<u32>,
    },
}

impl SeenOps {
    /// Records that the operation at `row` has `key` and `op_count`.
    fn insert(&mut self, key: (usize, u64, OpType, i64), op_count: u64, row: u32) -> Seen {
        let slot = match self.last {
            Some((k, i)) if k == key => i,
            _ => {
                let next = self.slots.len();
                let i = *self.index.entry(key).or_insert(next);
                if i == next {
                    self.slots.push(SeenSlot {
                        base: op_count,
                        ..SeenSlot::default()
                    });
                }
                self.last = Some((key, i));
                i
            }
        };
        let Some(s) = self.slots.get_mut(slot) else {
            return Seen::New;
        };
        let before = s.last_row.filter(|_| s.last_op_count == op_count);
        s.last_row = Some(row);
        s.last_op_count = op_count;
        if s.insert(op_count) {
            Seen::New
        } else {
            Seen::Again { last: before }
        }
    }
}

impl SeenSlot {
    fn insert(&mut self, v: u64) -> bool {
        let Some(off) = v.checked_sub(self.base) else {
            return self.extra.insert(v);
        };
        let word = usize::try_from(off / 64).unwrap_or(usize::MAX);
        if word >= self.bits.len() {
            // Grow only while the bitmap stays within a word per value (plus a little).
            if word > self.n.saturating_add(64) {
                return self.extra.insert(v);
            }
            self.bits.resize(word + 1, 0);
        }
        let mask = 1u64 << (off % 64);
        let Some(w) = self.bits.get_mut(word) else {
            return self.extra.insert(v);
        };
        if *w & mask != 0 {
            return false;
        }
        // Stored in the set while it was out of the bitmap's range.
        if !self.extra.is_empty() && self.extra.contains(&v) {
            return false;
        }
        *w |= mask;
        self.n += 1;
        true
    }
}

/// Notes of one kind about lines that were still read (attributed to the only process, merged,
/// printed twice) beyond this are counted, not listed. Skipped lines are always all listed.
const DIAG_CAP: u64 = 200;
/// Findings beyond this many keep their line number and reason but not the line's text.
const EXCERPT_LINES: u64 = 100_000;
/// How every skipped line's finding starts (the app and tests can pick them out by it).
pub const SKIPPED: &str = "line skipped";
/// Blocks of complete lines at least this big are read on several threads.
const PAR_MIN: usize = 64 * 1024;
/// Bytes read per parallel round: small enough that applying starts soon after a chunk arrives
/// and that the reads waiting to be applied stay small, big enough to pay for the hand-over.
const WINDOW: usize = 128 * 1024;
/// How many recent ops per process a tuning line may attach to.
const RECENT_OPS: usize = 64;

enum TopoState {
    Waiting,
    Building(Box<Builder>),
    Done,
}

struct ProcState {
    recent_ops: VecDeque<usize>,
    /// This process's index in the log's [`model::log::LogOps`], once it printed an operation.
    ops_process: Option<u32>,
    topo: TopoState,
    last_dev: u32,
}

/// Push parser for one NCCL debug log. Feed chunks, then [`LogParser::finish`].
pub struct LogParser {
    out: ParsedLog,
    carry: Vec<u8>,
    carry_overlong: bool,
    line_no: u64,
    hosts: HashMap<Vec<u8>, u32, FxBuild>,
    host_names: Vec<Host>,
    proc_ids: HashMap<(u32, u32), usize, FxBuild>,
    procs: Vec<ProcState>,
    /// (process, comm, opCount, op, peer): p2p ops of one group share an opCount, so the peer is
    /// part of the key; for collectives it is 0.
    seen_ops: SeenOps,
    diag_counts: BTreeMap<&'static str, u64>,
    /// Findings about lines so far (for [`EXCERPT_LINES`]).
    excerpts: u64,
    /// Channel lines waiting for the `Init COMPLETE` of their thread.
    pending_channels: HashMap<(usize, u32), CommChannels>,
    /// Keeps `pending_channels` flush order deterministic.
    pending_order: Vec<(usize, u32)>,
    pending_banner: Option<String>,
    /// The last `comm .. nRanks .. nNodes ..` line of each (process, thread), for the
    /// `Init COMPLETE` of its communicator that follows.
    pending_shape: HashMap<(usize, u32), init::CommFields<'static>>,
    /// The operations of names this build does not know that the file printed, for
    /// [`LogParser::names_other_op`].
    other_ops: Vec<OpType>,
    last_proc: Option<usize>,
    /// A framework error ending in `Last error:` (its index and line), whose next line is
    /// NCCL's last warning.
    last_error_open: Option<(usize, u64)>,
    /// (host, pid, process index) of the previous header.
    last_origin: Option<(Vec<u8>, u32, usize)>,
    head_cache: LineCache,
    /// Threads reading big blocks (1: everything on the caller's thread).
    threads: usize,
    /// Lines applied through the lean lane (the fast path's reads), for tests.
    fast_lines: u64,
    window: usize,
}

impl LogParser {
    pub fn new(path: &str, file_index: u32) -> Self {
        LogParser {
            out: ParsedLog {
                path: path.to_string(),
                file_index,
                ..ParsedLog::default()
            },
            carry: Vec::new(),
            carry_overlong: false,
            line_no: 0,
            hosts: HashMap::default(),
            host_names: Vec::new(),
            proc_ids: HashMap::default(),
            procs: Vec::new(),
            seen_ops: SeenOps::default(),
            diag_counts: BTreeMap::new(),
            excerpts: 0,
            pending_channels: HashMap::new(),
            pending_order: Vec::new(),
            pending_banner: None,
            pending_shape: HashMap::new(),
            other_ops: Vec::new(),
            last_proc: None,
            last_error_open: None,
            last_origin: None,
            head_cache: LineCache::default(),
            threads: default_threads(),
            fast_lines: 0,
            window: WINDOW,
        }
    }

    /// Threads for big chunks (at least 1): with `n > 1`, `n - 1` helper threads read lines
    /// while the caller's thread applies them in order (and reads too, rather than wait). The
    /// result does not depend on it.
    pub fn with_threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }

    /// Whether lines of writers seen before are read and applied by the fast path (default:
    /// yes). Off, every line goes the general way: the same result, slower (for tests).
    pub fn with_fast_path(mut self, on: bool) -> Self {
        self.head_cache = LineCache::new(on);
        self
    }

    /// Bytes read per parallel round (default 128 KiB); small values exist to test block splits.
    pub fn with_window(mut self, bytes: usize) -> Self {
        self.window = bytes.max(1);
        self
    }

    /// How many lines so far went through the fast path (read and applied): for tests that
    /// check it is taken.
    #[doc(hidden)]
    pub fn fast_lines(&self) -> u64 {
        self.fast_lines
    }

    /// How many threads read big chunks.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Pushes the next bytes of the file; chunk boundaries may fall anywhere. With threads, a
    /// chunk's lines are read on every core and the threads meet at its end: chunks of several
    /// MiB (the page and the command feed 16 MiB) keep them busy in between.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.out.counters.bytes += chunk.len() as u64;
        let mut rest = chunk;
        if !self.carry.is_empty() || self.carry_overlong {
            match memchr::memchr(b'\n', rest) {
                Some(i) => {
                    self.push_carry(&rest[..i]);
                    let line = std::mem::take(&mut self.carry);
                    let overlong = std::mem::replace(&mut self.carry_overlong, false);
                    self.end_line(&line, overlong);
                    self.carry = line;
                    self.carry.clear();
                    rest = &rest[i + 1..];
                }
                None => {
                    self.push_carry(rest);
                    return;
                }
            }
        }
        let tail_start = memchr::memrchr(b'\n', rest).map_or(0, |i| i + 1);
        let (complete, tail) = rest.split_at(tail_start);
        self.lines(complete);
        self.push_carry(tail);
    }

    fn push_carry(&mut self, b: &[u8]) {
        if self.carry_overlong {
            return;
        }
        if self.carry.len() + b.len() > MAX_LINE {
            self.carry_overlong = true;
            self.carry.clear();
        } else {
            self.carry.extend_from_slice(b);
        }
    }

    fn end_line(&mut self, line: &[u8], overlong: bool) {
        let mut r = Read::Overlong;
        if !overlong {
            read_line_into(line, &mut self.head_cache, &mut r);
        }
        self.apply(&mut r);
    }

    /// The complete lines of a chunk (`block` ends with `\n`): read on several threads when it
    /// is big enough, applied in file order either way.
    fn lines(&mut self, block: &[u8]) {
        if self.threads > 1 && block.len() >= PAR_MIN.min(self.window) {
            self.lines_parallel(block);
            return;
        }
        for line in lines_of(block) {
            self.end_line(line, false);
        }
    }

    /// Reads `block` on other threads while this one applies it in order (`shared_read.rs`).
    /// Reading holds no state, so the result is the single-thread one.
    fn lines_parallel(&mut self, block: &[u8]) {
        let windows: Vec<&[u8]> = windows(block, self.window).collect();
        let mut cache = std::mem::take(&mut self.head_cache);
        shared_read::read_and_apply(&windows, self.threads - 1, &mut cache, |r| self.apply(r));
        self.head_cache = cache;
    }

    /// Applies one line, read by [`read_line_into`], in file order: everything that depends on
    /// the lines before it (line numbers, processes, attachments, duplicates) happens here.
    fn apply(&mut self, r: &mut Read<'_>) {
        self.line_no += 1;
        self.out.counters.total_lines += 1;
        match r {
            Read::Overlong => {
                self.skip(Severity::Warning, "longer than 64 KiB (not NCCL output)");
            }
            Read::Blank => self.out.counters.blank_lines += 1,
            Read::Headerless(line) => {
                let line: &[u8] = line;
                let before = self.out.diagnostics.len();
                self.headerless(line);
                self.add_excerpts(before, line);
            }
            Read::Nccl(n) => {
                let before = self.out.diagnostics.len();
                self.nccl_line(&n.split, &mut n.body);
                self.add_excerpts(before, n.line);
            }
            Read::Fast(f) => {
                let before = self.out.diagnostics.len();
                self.fast_line(f);
                self.add_excerpts(before, f.line);
            }
        }
    }

    /// The lean lane for a line the fast path read (an operation or tuning line of a known
    /// writer, `fast.rs`): what [`LogParser::nccl_line`] does for such a line, without its
    /// generic dispatch. `tests/streaming.rs` checks that turning the lane off changes nothing.
    fn fast_line(&mut self, f: &FastLine<'_>) {
        self.fast_lines += 1;
        self.out.counters.nccl_lines += 1;
        let origin = Origin {
            host: f.host(),
            pid: f.pid,
            tid: f.tid,
        };
        let p = self.intern(origin, Some(f.dev));
        self.last_proc = Some(p);
        if matches!(
            self.procs.get(p).map(|st| &st.topo),
            Some(TopoState::Building(_))
        ) {
            // A topology block in progress reads its process's lines first: the general way.
            let body = f.body();
            let mut read = read_body(body);
            self.body(
                Some(p),
                f.tid,
                Some(f.dev),
                f.timestamp_ns(),
                body,
                &mut read,
            );
            return;
        }
        match &f.what {
            FastBody::Op(op, v) => self.coll_of(
                p,
                *op,
                f.tid,
                Some(f.dev),
                f.timestamp_ns(),
                v,
                (None, None, None),
            ),
            FastBody::Tuning(t) => self.tuning(Some(p), f.tid, Ok(*t), None),
        }
    }

    /// Appends the line's text (its first [`crate::note::EXCERPT`] bytes) to the findings about
    /// it, so the user sees what was skipped; after [`EXCERPT_LINES`] findings only reasons and
    /// line numbers are kept, which bounds the text stored for a file of garbage.
    #[inline]
    fn add_excerpts(&mut self, from: usize, line: &[u8]) {
        // Almost every line adds no finding: settled inline.
        if self.out.diagnostics.len() == from {
            return;
        }
        self.quote_findings(from, line);
    }

    fn quote_findings(&mut self, from: usize, line: &[u8]) {
        let Some(new) = self.out.diagnostics.get_mut(from..) else {
            return;
        };
        for d in new {
            self.excerpts += 1;
            if self.excerpts > EXCERPT_LINES {
                continue;
            }
            d.message.push_str(": ");
            d.message.push_str(&excerpt(line));
        }
    }

    /// Ends the input: the unterminated last line counts as a line.
    pub fn finish(mut self) -> ParsedLog {
        if !self.carry.is_empty() || self.carry_overlong {
            let line = std::mem::take(&mut self.carry);
            let overlong = self.carry_overlong;
            self.end_line(&line, overlong);
            // What a write cut mid-line leaves (or a file saved without a final newline): the
            // diagnosis names such a line as possibly cut.
            self.out.counters.unterminated_lines = 1;
        }
        let order = std::mem::take(&mut self.pending_order);
        for key in order {
            self.flush_channels(key);
        }
        for (i, st) in self.procs.iter_mut().enumerate() {
            if let TopoState::Building(b) = std::mem::replace(&mut st.topo, TopoState::Done) {
                if let Some(p) = self.out.processes.get_mut(i) {
                    p.topology = Some(b.topo);
                }
            }
        }
        if let (Some(v), None) = (self.pending_banner.take(), &self.out.nccl_version) {
            self.out.nccl_version = Some(v);
        }
        self.note_unfinished_inits();
        for (reason, n) in &self.diag_counts {
            if *n > DIAG_CAP {
                let msg = format!("{} more lines: {reason}", n - DIAG_CAP);
                self.out.diagnostics.push(Diagnostic::new(
                    &self.out.path,
                    0,
                    Severity::Warning,
                    msg,
                ));
            }
        }
        if self.excerpts > EXCERPT_LINES {
            let msg = format!(
                "{} findings about lines are listed without the line's text (the first {EXCERPT_LINES} quote it)",
                self.excerpts - EXCERPT_LINES
            );
            self.out
                .diagnostics
                .push(Diagnostic::new(&self.out.path, 0, Severity::Info, msg));
        }
        // Kept as long as the run is open: without the room the rows grew into (a third more
        // on average).
        self.out.ops.shrink_to_fit();
        self.out
    }

    /// A communicator that printed `Init START` and never `Init COMPLETE` (a hang or a crash
    /// during set-up): noted at its start line.
    fn note_unfinished_inits(&mut self) {
        // The last Init COMPLETE line of each (process, communicator): a start after it (the
        // address reused by a later communicator) did not finish either.
        let mut done: HashMap<(&ProcessKey, u64), u64> = HashMap::new();
        for i in &self.out.inits {
            let last = done.entry((&i.process, i.comm)).or_insert(0);
            *last = (*last).max(i.source.line);
        }
        let notes: Vec<Diagnostic> = self
            .out
            .init_starts
            .iter()
            .filter(|s| {
                done.get(&(&s.process, s.comm))
                    .is_none_or(|&line| line < s.source.line)
            })
            .map(|s| {
                let msg = format!(
                    "communicator 0x{:x} (rank {} of {}) printed Init START and no Init COMPLETE: its set-up did not finish in this log",
                    s.comm, s.rank, s.nranks
                );
                Diagnostic::new(&self.out.path, s.source.line, Severity::Warning, msg)
            })
            .collect();
        self.out.diagnostics.extend(notes);
    }

    fn src(&self) -> SourceLine {
        SourceLine {
            file: self.out.file_index,
            line: self.line_no,
        }
    }

    fn diag(&mut self, severity: Severity, reason: &'static str) {
        self.diag_msg(severity, reason, || None);
    }

    /// Records a note about the current line, `reason: detail` (the first [`DIAG_CAP`] of each
    /// kind); [`LogParser::apply`] adds the line's text.
    fn diag_msg(
        &mut self,
        severity: Severity,
        reason: &'static str,
        detail: impl FnOnce() -> Option<String>,
    ) {
        let n = self.diag_counts.entry(reason).or_insert(0);
        *n += 1;
        if *n > DIAG_CAP {
            return;
        }
        let msg = match detail() {
            Some(d) => format!("{reason}: {d}"),
            None => reason.to_string(),
        };
        self.out
            .diagnostics
            .push(Diagnostic::new(&self.out.path, self.line_no, severity, msg));
    }

    fn intern(&mut self, o: Origin<'_>, dev: Option<u32>) -> usize {
        // Consecutive lines mostly come from the same process: skip both hash lookups then.
        if let Some((host, pid, idx)) = &self.last_origin {
            if *pid == o.pid && scan::same(host, o.host) {
                let idx = *idx;
                if let (Some(d), Some(st)) = (dev, self.procs.get_mut(idx)) {
                    st.last_dev = d;
                }
                return idx;
            }
        }
        let idx = self.intern_slow(o, dev);
        match &mut self.last_origin {
            Some((host, pid, i)) => {
                host.clear();
                host.extend_from_slice(o.host);
                *pid = o.pid;
                *i = idx;
            }
            None => self.last_origin = Some((o.host.to_vec(), o.pid, idx)),
        }
        idx
    }

    fn intern_slow(&mut self, o: Origin<'_>, dev: Option<u32>) -> usize {
        let host = match self.hosts.get(o.host) {
            Some(h) => *h,
            None => {
                let h = self.host_names.len() as u32;
                self.host_names.push(Host::from(scan::text(o.host)));
                self.hosts.insert(o.host.to_vec(), h);
                h
            }
        };
        let idx = match self.proc_ids.get(&(host, o.pid)) {
            Some(i) => *i,
            None => {
                let i = self.procs.len();
                self.proc_ids.insert((host, o.pid), i);
                self.procs.push(ProcState {
                    recent_ops: VecDeque::new(),
                    ops_process: None,
                    topo: TopoState::Waiting,
                    last_dev: dev.unwrap_or(0),
                });
                let host = self
                    .host_names
                    .get(host as usize)
                    .cloned()
                    .unwrap_or_default();
                self.out.processes.push(ProcessInfo {
                    process: ProcessKey { host, pid: o.pid },
                    // A bare banner printed before any process line belongs to the first one.
                    nccl_version: self.pending_banner.take(),
                    topology: None,
                    first_line: self.src(),
                });
                i
            }
        };
        if let (Some(d), Some(st)) = (dev, self.procs.get_mut(idx)) {
            st.last_dev = d;
        }
        idx
    }

    /// `o` with its host cut to the longest host it ends with, of the file's or the line's
    /// first writer (`first`), when it is not a host of the file itself (the first writer's
    /// text glued in front of it); as it is otherwise (a writer whose first line this is).
    fn unglued<'a>(&self, o: Origin<'a>, first: Option<&[u8]>) -> Origin<'a> {
        if self.hosts.contains_key(o.host) {
            return o;
        }
        let known = self
            .hosts
            .keys()
            .map(Vec::as_slice)
            .chain(first)
            .filter(|h| !h.is_empty() && h.len() < o.host.len() && o.host.ends_with(h))
            .map(<[u8]>::len)
            .max();
        match known {
            Some(n) => Origin {
                host: o.host.get(o.host.len() - n..).unwrap_or(o.host),
                ..o
            },
            None => o,
        }
    }

    fn key(&self, p: usize) -> ProcessKey {
        self.out
            .processes
            .get(p)
            .map(|p| p.process.clone())
            .unwrap_or(ProcessKey {
                host: Host::default(),
                pid: 0,
            })
    }

    /// The only process of the file so far, for lines that lost their header.
    fn only_process(&self) -> Option<usize> {
        (self.procs.len() == 1).then_some(0)
    }

    fn nccl_line(&mut self, s: &Split<'_>, parsed: &mut Body<'_>) {
        self.out.counters.nccl_lines += 1;
        if s.merged {
            self.out.counters.garbled_lines += 1;
            self.diag(
                Severity::Warning,
                "two log lines merged into one; the first writer's text is lost",
            );
        }
        // In a merged line the second header may be glued to the first writer's text
        // (`Launch mode Parallelnode1:12:34`): its host is a known host's name with a prefix.
        let origin = match s.origin {
            Some(o) if s.merged => Some(self.unglued(o, s.first_host)),
            o => o,
        };
        let (proc, tid) = match origin {
            Some(o) => (Some(self.intern(o, s.dev)), o.tid),
            None => match self.only_process() {
                Some(p) => {
                    self.diag(
                        Severity::Info,
                        "no host:pid:tid before NCCL INFO; attributed to the only process",
                    );
                    (Some(p), 0)
                }
                None => {
                    self.diag(
                        Severity::Info,
                        "no host:pid:tid before NCCL INFO/WARN; not attributed to a process",
                    );
                    (None, 0)
                }
            },
        };
        if let Some(p) = proc {
            self.last_proc = Some(p);
        }
        if s.level == Level::Warn {
            self.out.counters.warn_lines += 1;
            let w = RunWarning {
                process: proc.map(|p| self.key(p)),
                cuda_dev: s.dev,
                timestamp: s.timestamp_text.map(scan::text),
                timestamp_ns: s.timestamp_ns,
                message: scan::text(s.body.trim_ascii_start()),
                source: self.src(),
            };
            self.out.warnings.push(w);
            return;
        }
        self.body(proc, tid, s.dev, s.timestamp_ns, s.body, parsed);
    }

    /// A line without `NCCL INFO`/`NCCL WARN`: a bare banner, a header-less NCCL line, a
    /// framework's line (`framework.rs`), or foreign text.
    fn headerless(&mut self, line: &[u8]) {
        let framework = framework::read(line);
        if let Some(v) = scan::banner_version(line) {
            self.out.counters.nccl_lines += 1;
            self.set_version(self.last_proc, scan::text(v));
            if let Some(f) = framework {
                self.framework_line(f);
            }
            return;
        }
        if let Some(f) = framework {
            self.out.counters.framework_lines += 1;
            self.framework_line(f);
            return;
        }
        if self.continues_last_error(line) {
            self.out.counters.framework_lines += 1;
            return;
        }
        // Body of a per-collective or tuning line whose header was lost (garbled writes).
        let body = match memchr::memchr(b':', line) {
            Some(_) if coll::looks_like(line) => Some(line),
            _ => scan::find(line, b"] ")
                .and_then(|i| line.get(i + 2..))
                .filter(|b| coll::looks_like(b)),
        };
        if let Some(body) = body {
            self.out.counters.garbled_lines += 1;
            match self.only_process() {
                Some(p) => {
                    self.diag(
                        Severity::Warning,
                        "per-collective line without header; attributed to the only process",
                    );
                    let dev = self.procs.get(p).map(|s| s.last_dev);
                    self.body(Some(p), 0, dev, None, body, &mut read_body(body));
                }
                None => {
                    self.skip(
                        Severity::Warning,
                        "per-collective line without host:pid:tid header (several processes)",
                    );
                }
            }
            return;
        }
        // A header cut short (`NCCL INF`), or a body shape of ours without one.
        if scan::contains(line, b"NCCL INF")
            || scan::contains(line, b"NCCL WAR")
            || tuning::looks_like(line)
            || scan::contains(line, b"- Init COMPLETE")
        {
            self.skip(
                Severity::Warning,
                "NCCL-looking line without NCCL INFO/WARN header",
            );
        } else {
            self.skip(Severity::Info, "not an NCCL line");
        }
    }

    /// Keeps a framework line, attributed to the file's only process or to the one a Ray
    /// prefix names by pid.
    fn framework_line(&mut self, mut f: framework::FrameworkLine) {
        let by_pid = f
            .pid
            .and_then(|pid| self.out.processes.iter().position(|p| p.process.pid == pid));
        f.process = by_pid.or(self.only_process()).map(|p| self.key(p));
        f.source = self.src();
        let opens = matches!(&f.event, framework::FrameworkEvent::Error { message } if message.ends_with("Last error:"));
        self.last_error_open = opens.then_some((self.out.framework.len(), self.line_no));
        self.out.framework.push(f);
    }

    /// The line right after a framework error's `Last error:` is NCCL's last warning without
    /// its header: it completes that error's message.
    fn continues_last_error(&mut self, line: &[u8]) -> bool {
        let Some((i, at)) = self.last_error_open.take() else {
            return false;
        };
        let Some(framework::FrameworkEvent::Error { message }) = (at + 1 == self.line_no)
            .then(|| self.out.framework.get_mut(i).map(|f| &mut f.event))
            .flatten()
        else {
            return false;
        };
        let text = String::from_utf8_lossy(line);
        // torchrun's `[rank0]:` prefix repeats on every line of a traceback.
        let text = match text.trim().strip_prefix("[rank") {
            Some(r) => r.split_once("]:").map_or(text.trim(), |(_, t)| t.trim()),
            None => text.trim(),
        };
        message.push(' ');
        message.extend(text.chars().take(400));
        true
    }

    /// An INFO body no family read: a set-up fact or a failed call (`facts.rs`), if it is one.
    fn fact(&mut self, proc: Option<usize>, tid: u32, ts: Option<i64>, body: &[u8]) {
        let Some(fact) = facts::read(body) else {
            return;
        };
        let process = proc.map(|p| self.key(p));
        let source = self.src();
        match fact {
            facts::Fact::Config(list) => {
                for fact in list {
                    self.out.config.push(facts::ConfigLine {
                        process: process.clone(),
                        fact,
                        source,
                    });
                }
            }
            facts::Fact::Failed { site, code, thread } => {
                self.out.failed_calls.push(facts::FailedCall {
                    process,
                    tid,
                    site,
                    code,
                    thread,
                    timestamp_ns: ts,
                    source,
                });
            }
        }
    }

    /// A line that gave nothing: counted and listed with its reason, however many there are.
    fn skip(&mut self, severity: Severity, reason: &str) {
        self.out.counters.skipped_lines += 1;
        let msg = format!("{SKIPPED}: {reason}");
        self.out
            .diagnostics
            .push(Diagnostic::new(&self.out.path, self.line_no, severity, msg));
    }

    /// An NCCL line too damaged to read: garbled, and skipped.
    fn garbled(&mut self, why: &str) {
        self.out.counters.garbled_lines += 1;
        self.skip(Severity::Warning, why);
    }

    fn set_version(&mut self, proc: Option<usize>, v: String) {
        if self.out.nccl_version.is_none() {
            self.out.nccl_version = Some(v.clone());
        }
        match proc.and_then(|p| self.out.processes.get_mut(p)) {
            Some(p) => {
                if p.nccl_version.is_none() {
                    p.nccl_version = Some(v);
                }
            }
            None => self.pending_banner = Some(v),
        }
    }

    fn body(
        &mut self,
        proc: Option<usize>,
        tid: u32,
        dev: Option<u32>,
        ts: Option<i64>,
        body: &[u8],
        parsed: &mut Body<'_>,
    ) {
        // A topology block in progress takes its process's lines first.
        if let Some(p) = proc {
            if let Some(TopoState::Building(b)) = self.procs.get_mut(p).map(|s| &mut s.topo) {
                match b.line(body) {
                    Step::Consumed => return,
                    Step::Garbled => {
                        self.garbled("garbled topology link line");
                        return;
                    }
                    Step::End => {
                        if let Some(st) = self.procs.get_mut(p) {
                            if let TopoState::Building(b) =
                                std::mem::replace(&mut st.topo, TopoState::Done)
                            {
                                if let Some(info) = self.out.processes.get_mut(p) {
                                    info.topology = Some(b.topo);
                                }
                            }
                        }
                        return;
                    }
                    Step::NotTopo => {}
                }
            }
        }
        match parsed {
            Body::Coll(c) => self.coll(proc, tid, dev, ts, *c),
            Body::Tuning(t) => {
                let kernel = t.as_ref().ok().and_then(|t| t.kernel);
                self.tuning(proc, tid, t.map(|t| t.facts()), kernel)
            }
            Body::Init(ev, f) => self.init_event(proc, tid, *ev, *f),
            Body::Timings(t) => self.timings(proc, tid, t.as_ref()),
            Body::Version(v) => self.set_version(proc, scan::text(v)),
            Body::TopoHeader => self.topo_header(proc, body),
            Body::Ring(r) => {
                if let Some(p) = proc {
                    // Taken (each read is applied once): the ring order moves into the record.
                    let r = std::mem::replace(r, RingLine::EMPTY);
                    self.ring_line(p, tid, r);
                }
            }
            Body::Garbled(why) => self.garbled(why),
            Body::Other => {
                if self.names_other_op(body) {
                    self.garbled("truncated or garbled per-collective or tuning line");
                } else {
                    self.fact(proc, tid, ts, body);
                }
            }
        }
    }

    fn coll(
        &mut self,
        proc: Option<usize>,
        tid: u32,
        dev: Option<u32>,
        ts: Option<i64>,
        parsed: Result<coll::Coll<'_>, &'static str>,
    ) {
        let c = match parsed {
            Ok(c) => c,
            Err(why) => {
                self.garbled(why);
                return;
            }
        };
        let Some(op) = scan::op_type(c.name) else {
            let name = scan::text(c.name);
            self.skip(Severity::Warning, &format!("{UNKNOWN_OP}: {name}"));
            return;
        };
        let Some(p) = proc else {
            self.skip(
                Severity::Warning,
                "per-collective line without host:pid:tid (several processes)",
            );
            return;
        };
        self.coll_of(
            p,
            op,
            tid,
            dev,
            ts,
            &c.values(),
            (c.rccl_task, c.rccl_global_rank, c.rccl_acc),
        );
    }

    /// Whether `body` starts like an operation or tuning line of an operation this build does
    /// not name that this file printed before (`AlltoAll: opCo`): the read side, which keeps
    /// nothing, can only tell the named ones.
    fn names_other_op(&self, body: &[u8]) -> bool {
        if self.other_ops.is_empty() {
            return false;
        }
        let b = body.trim_ascii_start();
        let end = b
            .iter()
            .position(|c| !c.is_ascii_alphanumeric() && *c != b'_')
            .unwrap_or(b.len());
        let (word, rest) = b.split_at(end);
        (rest.starts_with(b":") || rest.starts_with(b" [Symmetric]"))
            && self.other_ops.iter().any(|o| o.name().as_bytes() == word)
    }

    /// A per-collective line of process `p` and a known operation: counted, checked for a
    /// repeat, kept.
    #[allow(clippy::too_many_arguments)]
    fn coll_of(
        &mut self,
        p: usize,
        op: OpType,
        tid: u32,
        dev: Option<u32>,
        ts: Option<i64>,
        c: &coll::Values,
        rccl: (Option<u64>, Option<u32>, Option<u64>),
    ) {
        if matches!(op, OpType::Other(_)) && !self.other_ops.contains(&op) {
            self.other_ops.push(op);
        }
        let peer = if op.is_p2p() { c.root } else { 0 };
        let row = u32::try_from(self.out.ops.len()).unwrap_or(u32::MAX);
        let seen = self.seen_ops.insert((p, c.comm, op, peer), c.op_count, row);
        if self.printed_twice(seen, c) {
            self.out.counters.duplicate_ops += 1;
            self.diag_msg(Severity::Warning, PRINTED_TWICE, || {
                Some(format!(
                    "{} opCount {:x} comm 0x{:x}",
                    op.name(),
                    c.op_count,
                    c.comm
                ))
            });
        }
        self.out.counters.op_lines += 1;
        let cuda_dev = dev
            .or_else(|| self.procs.get(p).map(|s| s.last_dev))
            .unwrap_or(0);
        let ops_process = match self.procs.get(p).and_then(|st| st.ops_process) {
            Some(id) => id,
            None => {
                let id = self.out.ops.intern_process(&self.key(p));
                if let Some(st) = self.procs.get_mut(p) {
                    st.ops_process = Some(id);
                }
                id
            }
        };
        let site = CallSite {
            process: ops_process,
            tid,
            cuda_dev,
            op,
            datatype: DataType::from_code(c.datatype),
            datatype_code: c.datatype,
            red_op: RedOp::from_code(c.red_op),
            root: c.root,
            comm: c.comm,
            nranks: c.nranks,
            stream: c.stream,
            file: self.out.file_index,
        };
        let call = Call {
            op_count: c.op_count,
            sendbuff: c.sendbuff,
            recvbuff: c.recvbuff,
            count: c.count,
            timestamp_ns: ts,
            line: self.line_no,
        };
        let idx = if rccl == (None, None, None) {
            self.out.ops.push_call(site, &call)
        } else {
            self.push_rccl(site, &call, rccl)
        };
        if let Some(st) = self.procs.get_mut(p) {
            if st.recent_ops.len() == RECENT_OPS {
                st.recent_ops.pop_front();
            }
            st.recent_ops.push_back(idx);
        }
    }

    /// Whether an operation line repeats an earlier one. Grouped operations share an opCount,
    /// so two Sends to one peer in one group come one after the other with the same
    /// (communicator, operation, peer, opCount) but other buffers or counts: not a repeat. A line
    /// printed twice is the same in every field; and a (communicator, operation, peer, opCount)
    /// seen before but not right before is a repeat, as NCCL never reuses an opCount otherwise.
    fn printed_twice(&self, seen: Seen, c: &coll::Values) -> bool {
        let last = match seen {
            Seen::New => return false,
            Seen::Again { last: None } => return true,
            Seen::Again { last: Some(row) } => row as usize,
        };
        let ops = &self.out.ops;
        let Some(o) = ops.get(last) else {
            return true;
        };
        (o.sendbuff, o.recvbuff, o.count, o.datatype_code, o.stream)
            == (c.sendbuff, c.recvbuff, c.count, c.datatype, c.stream)
    }

    /// An RCCL operation line (with `task`/`globalrank`): kept whole.
    fn push_rccl(
        &mut self,
        site: CallSite,
        call: &Call,
        rccl: (Option<u64>, Option<u32>, Option<u64>),
    ) -> usize {
        let op = LogOp {
            // `push_for` takes the process from `site`.
            process: ProcessKey {
                host: Host::default(),
                pid: 0,
            },
            tid: site.tid,
            cuda_dev: site.cuda_dev,
            op: site.op,
            op_count: call.op_count,
            sendbuff: call.sendbuff,
            recvbuff: call.recvbuff,
            count: call.count,
            datatype: site.datatype,
            datatype_code: site.datatype_code,
            red_op: site.red_op,
            root: site.root,
            comm: site.comm,
            nranks: site.nranks,
            stream: site.stream,
            timestamp_ns: call.timestamp_ns,
            algo: None,
            proto: None,
            nchannels: None,
            sym_kernel: None,
            rccl_task: rccl.0,
            rccl_global_rank: rccl.1,
            rccl_acc: rccl.2,
            source: self.src(),
        };
        self.out.ops.push_for(site.process, &op);
        self.out.ops.len() - 1
    }

    /// A tuning line: given to the operation it describes, the most recent free one of its
    /// process with its operation and byte count (on the same thread first). NCCL's byte count
    /// ([`tuning::Facts::expects`]) is tried before the other reading (per-rank for AllGather and
    /// ReduceScatter, or the reverse), which older or other builds may print, and a line that
    /// matches no size goes to the last free operation, as before.
    fn tuning(
        &mut self,
        proc: Option<usize>,
        tid: u32,
        parsed: Result<tuning::Facts, &'static str>,
        kernel: Option<&[u8]>,
    ) {
        let t = match parsed {
            Ok(t) => t,
            Err(why) => {
                self.garbled(why);
                return;
            }
        };
        self.out.counters.tuning_lines += 1;
        let Some(p) = proc else { return };
        let want_op = t.op;
        let Some(st) = self.procs.get(p) else { return };
        let ops = &self.out.ops;
        // How well each recent op fits: free for this line's operation; its size as NCCL
        // prints it (2) or the other reading (1); the same thread. Read once per op looked at.
        let fits = |i: usize| {
            let f = ops.tuning_facts(i)?;
            let free = !f.tuned && want_op.is_none_or(|w| w == f.op);
            let size = if t.expects(f.op, f.msg_bytes, f.nranks) {
                2
            } else if f.msg_bytes == t.bytes
                || f.msg_bytes.saturating_mul(u64::from(f.nranks)) == t.bytes
            {
                1
            } else {
                0
            };
            Some((free, size, f.tid == tid))
        };
        let recent = &st.recent_ops;
        let find = |ok: &dyn Fn((bool, u8, bool)) -> bool| {
            recent
                .iter()
                .rev()
                .copied()
                .find(|&i| fits(i).is_some_and(ok))
        };
        let target = find(&|(free, size, same)| free && size == 2 && same)
            .or_else(|| find(&|(free, size, _)| free && size == 2))
            .or_else(|| find(&|(free, size, same)| free && size == 1 && same))
            .or_else(|| find(&|(free, size, _)| free && size == 1))
            .or_else(|| {
                recent
                    .back()
                    .copied()
                    .filter(|&i| fits(i).is_some_and(|(free, _, _)| free))
            });
        if let Some(i) = target {
            self.out.ops.set_tuning(i, t.algo, t.proto, t.nchannels);
            if let Some(k) = kernel {
                self.out.ops.set_sym_kernel(i, &scan::text(k));
            }
            self.out.counters.tuning_attached += 1;
        }
    }

    fn init_event(
        &mut self,
        proc: Option<usize>,
        tid: u32,
        ev: init::Event,
        parsed: Result<init::CommFields<'_>, &'static str>,
    ) {
        let f = match parsed {
            Ok(f) => f,
            Err(why) => {
                self.garbled(why);
                return;
            }
        };
        let Some(p) = proc else {
            self.skip(Severity::Warning, "communicator line without host:pid:tid");
            return;
        };
        let (comm, rank, nranks) = (
            f.comm.unwrap_or(0),
            f.rank.unwrap_or(0),
            f.nranks.unwrap_or(0),
        );
        let record = |me: &Self, shape: Option<init::CommFields<'_>>| CommInit {
            process: me.key(p),
            func: f.func.map(scan::text),
            comm,
            rank,
            nranks,
            cuda_dev: f.cuda_dev,
            nvml_dev: f.nvml_dev,
            bus_id: f.bus_id.map(scan::text),
            comm_id: f.comm_id,
            split_parent: f.parent,
            split_color: f.color,
            split_key: f.key,
            n_nodes: shape.and_then(|s| s.n_nodes),
            local_ranks: shape.and_then(|s| s.local_ranks),
            local_rank: shape.and_then(|s| s.local_rank),
            mnnvl: shape.and_then(|s| s.mnnvl).map(|m| m != 0),
            source: me.src(),
        };
        match ev {
            init::Event::InitComplete => {
                self.out.counters.init_lines += 1;
                let shape = self
                    .pending_shape
                    .remove(&(p, tid))
                    .filter(|s| s.comm == Some(comm));
                let rec = record(self, shape);
                self.out.inits.push(rec);
                if let Some(ch) = self.pending_channels.get_mut(&(p, tid)) {
                    if ch.comm.is_none_or(|c| c == comm) {
                        ch.comm = Some(comm);
                        ch.rank = Some(rank);
                        ch.nranks = Some(nranks);
                        self.flush_channels((p, tid));
                    }
                }
            }
            init::Event::InitStart | init::Event::Summary => {
                if ev == init::Event::InitStart {
                    let rec = record(self, None);
                    self.out.init_starts.push(rec);
                } else {
                    // Only its numbers are kept: no text outlives the line.
                    let shape = init::CommFields {
                        comm: f.comm,
                        n_nodes: f.n_nodes,
                        local_ranks: f.local_ranks,
                        local_rank: f.local_rank,
                        mnnvl: f.mnnvl,
                        ..init::CommFields::default()
                    };
                    self.pending_shape.insert((p, tid), shape);
                }
                let key = (p, tid);
                if self
                    .pending_channels
                    .get(&key)
                    .is_some_and(|c| c.comm.is_some_and(|c| c != comm))
                {
                    self.flush_channels(key);
                }
                if let Some(ch) = self.channels_for(p, tid) {
                    ch.comm = Some(comm);
                    ch.rank = Some(rank);
                    ch.nranks = Some(nranks);
                }
            }
            init::Event::Destroy | init::Event::Abort => {
                let rec = CommDestroy {
                    process: self.key(p),
                    comm,
                    rank: f.rank,
                    abort: ev == init::Event::Abort,
                    source: self.src(),
                };
                self.out.destroys.push(rec);
            }
        }
    }

    fn timings(
        &mut self,
        proc: Option<usize>,
        tid: u32,
        parsed: Result<&init::Timings<'_>, &&'static str>,
    ) {
        let t = match parsed {
            Ok(t) => t,
            Err(why) => {
                self.garbled(why);
                return;
            }
        };
        let Some(p) = proc else { return };
        let rec = InitTiming {
            process: self.key(p),
            tid,
            func: t.func.map(scan::text),
            rank: t.rank,
            nranks: t.nranks,
            total_s: t.total_s,
            phases: t.phases.iter().map(|(n, v)| (scan::text(n), *v)).collect(),
            source: self.src(),
        };
        self.out.init_timings.push(rec);
    }

    fn topo_header(&mut self, proc: Option<usize>, body: &[u8]) {
        let Some(p) = proc else { return };
        let src = self.src();
        let Some(t) = topo::header(body, src) else {
            self.garbled("garbled topology header");
            return;
        };
        if let Some(st) = self.procs.get_mut(p) {
            if matches!(st.topo, TopoState::Waiting) {
                st.topo = TopoState::Building(Box::new(Builder::new(t)));
            }
        }
    }

    fn channels_for(&mut self, p: usize, tid: u32) -> Option<&mut CommChannels> {
        let key = (p, tid);
        if !self.pending_channels.contains_key(&key) {
            let ch = CommChannels {
                process: self.key(p),
                tid,
                comm: None,
                rank: None,
                nranks: None,
                nchannels: None,
                coll_channels: None,
                nvls_channels: None,
                p2p_channels: None,
                rings: Vec::new(),
                ring_neighbors: Vec::new(),
                trees: Vec::new(),
                connections: Vec::new(),
                source: self.src(),
            };
            self.pending_channels.insert(key, ch);
            self.pending_order.push(key);
        }
        self.pending_channels.get_mut(&key)
    }

    fn flush_channels(&mut self, key: (usize, u32)) {
        if let Some(mut ch) = self.pending_channels.remove(&key) {
            self.pending_order.retain(|k| *k != key);
            if ch.nchannels.is_none() {
                ch.nchannels = ch.coll_channels;
            }
            if ch.nchannels.is_none() && !ch.rings.is_empty() {
                // 2.4 prints `Channel cc : ranks` without the count: one such line per channel.
                let distinct: std::collections::BTreeSet<u32> =
                    ch.rings.iter().map(|r| r.channel).collect();
                ch.nchannels = Some(distinct.len() as u32);
            }
            let empty = ch.rings.is_empty()
                && ch.ring_neighbors.is_empty()
                && ch.trees.is_empty()
                && ch.connections.is_empty()
                && ch.coll_channels.is_none();
            if !empty {
                self.out.channels.push(ch);
            }
        }
    }

    fn ring_line(&mut self, p: usize, tid: u32, r: RingLine) {
        let key = (p, tid);
        // Channel 0 again on the same thread: a new communicator is being set up.
        let restart = match &r {
            RingLine::Order { channel, .. } => self
                .pending_channels
                .get(&key)
                .is_some_and(|c| c.rings.iter().any(|o| o.channel == *channel)),
            _ => false,
        };
        if restart {
            self.flush_channels(key);
        }
        let Some(ch) = self.channels_for(p, tid) else {
            return;
        };
        match r {
            RingLine::Order {
                channel,
                nchannels,
                order,
            } => {
                if nchannels.is_some() {
                    ch.nchannels = nchannels;
                }
                ch.rings.push(RingOrder { channel, order });
            }
            RingLine::Trees(trees) => ch.trees.extend(trees),
            RingLine::Connection(c) => ch.connections.push(c),
            RingLine::Neighbors {
                channel,
                prev,
                rank,
                next,
            } => {
                ch.ring_neighbors.push(RingNeighbors {
                    channel,
                    prev,
                    rank,
                    next,
                });
            }
            RingLine::Summary {
                comm,
                coll,
                nvls,
                p2p,
            } => {
                if comm.is_some() {
                    ch.comm = comm;
                }
                ch.coll_channels = coll.or(ch.coll_channels);
                ch.nvls_channels = nvls.or(ch.nvls_channels);
                ch.p2p_channels = p2p.or(ch.p2p_channels);
            }
        }
    }
}

/// One thread per core (at most 8): the calling thread applies and reads, the others read.
/// 1 where threads are not available (wasm).
fn default_threads() -> usize {
    if cfg!(target_arch = "wasm32") {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bitmap-backed set answers exactly like a hash set of the whole key, for consecutive,
    /// repeated, backwards, sparse and huge opCounts.
    #[test]
    fn seen_ops_matches_hash_set() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut fast = SeenOps::default();
        let mut slow: HashSet<(usize, u64, OpType, i64, u64)> = HashSet::new();
        let mut next = [0u64; 4];
        for i in 0..200_000u32 {
            let p = (rnd() % 2) as usize;
            let comm = rnd() % 2;
            let op = if rnd() % 3 == 0 {
                OpType::Send
            } else {
                OpType::AllReduce
            };
            let peer = (rnd() % 2) as i64;
            let lane = (p * 2 + comm as usize) % 4;
            let v = match rnd() % 10 {
                0 => rnd(),
                1 => rnd() % 5000,
                2 => next[lane].saturating_sub(rnd() % 300),
                3 => next[lane] + rnd() % 10_000,
                4 => u64::MAX - rnd() % 3,
                _ => {
                    next[lane] += 1;
                    next[lane]
                }
            };
            let key = (p, comm, op, peer);
            assert_eq!(
                fast.insert(key, v, i) == Seen::New,
                slow.insert((p, comm, op, peer, v)),
                "step {i}: {key:?} {v}"
            );
        }
    }
}
