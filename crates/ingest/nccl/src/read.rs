//! Reading one line without any parser state: framing helpers, the header split and the body
//! parsed into fields. Everything that depends on earlier lines happens afterwards, in file
//! order, in `parser.rs`; keeping this side stateless is what lets big chunks be read on
//! several threads with the same result as one.

use crate::fast::FastHeads;
use crate::prefix::{self, HeadCache, Level, Split};
use crate::repeats::Repeats;
use crate::rings::{self, RingLine};
use crate::{coll, init, tuning};

/// Longer lines are not NCCL output; refusing them bounds the carry buffer.
pub(crate) const MAX_LINE: usize = 64 * 1024;

/// What a reader remembers of the lines it read: headers, to read the next lines of the same
/// writers faster. Only speed depends on it, never the result.
pub(crate) struct LineCache {
    head: HeadCache,
    fast: FastHeads,
    seen: Repeats,
    /// Whether lines of known writers take the fast path (off only to test that it changes
    /// nothing).
    fast_path: bool,
}

impl Default for LineCache {
    fn default() -> Self {
        LineCache::new(true)
    }
}

impl LineCache {
    pub(crate) fn new(fast_path: bool) -> Self {
        LineCache {
            head: HeadCache::default(),
            fast: FastHeads::default(),
            seen: Repeats::default(),
            fast_path,
        }
    }

    /// An empty cache with the same settings (for another reading thread).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn like(&self) -> Self {
        LineCache::new(self.fast_path)
    }
}

/// One line read without any parser state, so that lines can be read on several threads and
/// applied in file order afterwards (`LogParser::apply`). Almost every line is `Nccl`, so
/// boxing it (as the lint suggests) would only add an allocation per line.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Read<'a> {
    Blank,
    Overlong,
    /// No `NCCL INFO`/`NCCL WARN` marker: a banner, a line that lost its header, or foreign text.
    Headerless(&'a [u8]),
    /// A line with an `NCCL INFO`/`NCCL WARN` marker read the general way. Boxed: the fast
    /// path's lines are most of a big log and travel between threads, so the enum stays their
    /// size.
    Nccl(Box<NcclLine<'a>>),
    /// An operation or tuning line of a known writer in NCCL's own shape, read by the fast path
    /// (`fast.rs`): what `Nccl` would hold, already digested for [`crate::LogParser`]'s lean lane.
    Fast(FastLine<'a>),
}

/// A line read the general way: the whole line (for findings), its parts, and its body parsed.
#[derive(Debug)]
pub(crate) struct NcclLine<'a> {
    pub line: &'a [u8],
    pub split: Split<'a>,
    pub body: Body<'a>,
}

impl<'a> Read<'a> {
    /// Asks the CPU to bring the writer's host (the only text of a fast read that applying
    /// compares) into this core's cache: a hint, which changes no result.
    #[inline]
    pub(crate) fn prefetch_host(&self) {
        #[cfg(target_arch = "x86_64")]
        if let Read::Fast(f) = self {
            let p = f.line.as_ptr().wrapping_add(usize::from(f.host_at));
            // SAFETY: a prefetch never faults and reads nothing into the program; any address
            // may be given.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
            };
        }
    }

    pub(crate) fn nccl(line: &'a [u8], split: Split<'a>, body: Body<'a>) -> Self {
        Read::Nccl(Box::new(NcclLine { line, split, body }))
    }
}

/// A line read by the fast path: an INFO line of one writer (`host:pid:tid [dev]`), with the
/// timestamp and the body read in NCCL's own shape. Compact (positions in the line instead of
/// slices, the numbers without the text): most lines of a big log travel between threads as
/// one of these.
#[derive(Debug)]
pub(crate) struct FastLine<'a> {
    pub line: &'a [u8],
    host_at: u16,
    host_len: u16,
    body_at: u16,
    pub pid: u32,
    pub tid: u32,
    pub dev: u32,
    /// The timestamp, or [`NO_TIME`]: an `Option` would take the struct past 128 bytes, where
    /// moving a read costs a `memcpy` call instead of a few stores (5 % of a parse).
    timestamp_ns: i64,
    pub what: FastBody,
}

/// [`FastLine`]'s missing timestamp (an epoch timestamp is never negative).
const NO_TIME: i64 = i64::MIN;

// Past 128 bytes, every move of a read becomes a `memcpy` call.
const _: () = assert!(std::mem::size_of::<Read<'static>>() <= 128);

#[derive(Debug, Clone, Copy)]
pub(crate) enum FastBody {
    /// A per-collective line of an operation this build knows.
    Op(model::OpType, coll::Values),
    Tuning(tuning::Facts),
}

impl<'a> FastLine<'a> {
    /// Writes `Read::Fast` of these parts into `out` and returns its body, for the caller to
    /// read the numbers into, when `host` and `body` are sub-slices of `line` (a line is at
    /// most 64 KiB, so their places fit 16 bits); otherwise leaves `out` as it is.
    #[allow(clippy::too_many_arguments)]
    // Always: an outlined call takes `what` through memory just written, and loading it back
    // stalls (store forwarding).
    #[inline(always)]
    pub(crate) fn write<'o>(
        out: &'o mut Read<'a>,
        line: &'a [u8],
        host: &[u8],
        body: &[u8],
        (pid, tid, dev): (u32, u32, u32),
        timestamp_ns: Option<i64>,
        what: FastBody,
    ) -> Option<&'o mut FastBody> {
        let at = |part: &[u8]| {
            let off = (part.as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
            (off + part.len() <= line.len()).then_some(u16::try_from(off).ok()?)
        };
        let (Some(host_at), Ok(host_len), Some(body_at)) =
            (at(host), u16::try_from(host.len()), at(body))
        else {
            return None;
        };
        // Swapped in, the old read dropped after: with `*out = …` the old read's drop (a call)
        // came between building the new one in a temporary and copying it over, and the copy
        // stalled on the temporary's just-written bytes.
        let old = std::mem::replace(
            out,
            Read::Fast(FastLine {
                line,
                host_at,
                host_len,
                body_at,
                pid,
                tid,
                dev,
                timestamp_ns: timestamp_ns.unwrap_or(NO_TIME),
                what,
            }),
        );
        drop(old);
        match out {
            Read::Fast(f) => Some(&mut f.what),
            _ => None,
        }
    }

    pub(crate) fn timestamp_ns(&self) -> Option<i64> {
        (self.timestamp_ns != NO_TIME).then_some(self.timestamp_ns)
    }

    pub(crate) fn host(&self) -> &'a [u8] {
        let start = usize::from(self.host_at);
        self.line
            .get(start..start + usize::from(self.host_len))
            .unwrap_or_default()
    }

    pub(crate) fn body(&self) -> &'a [u8] {
        self.line
            .get(usize::from(self.body_at)..)
            .unwrap_or_default()
    }
}

/// What an INFO body says, parsed (WARN bodies are kept as text: `Other`).
#[derive(Debug)]
pub(crate) enum Body<'a> {
    Coll(Result<coll::Coll<'a>, &'static str>),
    Tuning(Result<tuning::Tuning<'a>, &'static str>),
    Init(init::Event, Result<init::CommFields<'a>, &'static str>),
    Timings(Result<init::Timings<'a>, &'static str>),
    /// The version an `NCCL version ` / `RCCL version : ` line names.
    Version(&'a [u8]),
    TopoHeader,
    Ring(RingLine),
    /// A line of a family this parser reads, damaged past reading (cut short, glued to other
    /// text): counted and listed as skipped, never silently taken for another NCCL line.
    Garbled(&'static str),
    Other,
}

/// Reads one line (without its `\n`). Lines of a writer seen before take the fast path
/// (`fast.rs`), which gives what the general reader gives; the general reader's results teach
/// it the writers' headers.
///
/// The read is written into `out` (see `FastHeads::read_into` for why in place).
#[inline]
pub(crate) fn read_line_into<'a>(raw: &'a [u8], cache: &mut LineCache, out: &mut Read<'a>) {
    if raw.len() > MAX_LINE {
        *out = Read::Overlong;
        return;
    }
    let line = raw.trim_ascii_end();
    if line.is_empty() {
        *out = Read::Blank;
        return;
    }
    if cache.fast_path && cache.fast.read_into(line, &mut cache.seen, out) {
        return;
    }
    *out = match prefix::split_line_cached(line, Some(&mut cache.head)) {
        None => Read::Headerless(line),
        Some(s) => {
            if cache.fast_path {
                cache.fast.learn(line, &s);
            }
            nccl(line, s)
        }
    };
}

fn nccl<'a>(line: &'a [u8], s: Split<'a>) -> Read<'a> {
    let body = match s.level {
        Level::Info => read_body(s.body),
        Level::Warn => Body::Other,
    };
    Read::nccl(line, s, body)
}

/// [`read_line_into`] of an already trimmed, non-blank line without any cache: the reference the
/// fast path is tested against.
#[cfg(test)]
pub(crate) fn read_line_general(line: &[u8]) -> Read<'_> {
    match prefix::split_line(line) {
        None => Read::Headerless(line),
        Some(s) => nccl(line, s),
    }
}

/// Which line family a body belongs to (first match wins) and its fields.
pub(crate) fn read_body(body: &[u8]) -> Body<'_> {
    if let Some(c) = coll::parse_if(body) {
        Body::Coll(c)
    } else if let Some(arrow) = tuning::arrow(body) {
        Body::Tuning(tuning::parse_at(body, arrow))
    } else if let Some(ev) = init::classify(body) {
        Body::Init(ev, init::fields(body))
    } else if init::is_timings(body) {
        Body::Timings(init::timings(body))
    } else if let Some(v) = version_line(body) {
        Body::Version(v)
    } else if body.trim_ascii_start().starts_with(b"=== System") {
        Body::TopoHeader
    } else if let Some(r) = rings::parse(body) {
        match r {
            Ok(r) => Body::Ring(r),
            Err(why) => Body::Garbled(why),
        }
    } else if let Some(why) = damaged(body) {
        Body::Garbled(why)
    } else {
        Body::Other
    }
}

/// The version of an INFO body that is a version banner (it starts with one).
fn version_line(body: &[u8]) -> Option<&[u8]> {
    let b = body.trim_ascii_start();
    if b.starts_with(b"NCCL version ") || b.starts_with(b"RCCL version ") {
        crate::scan::banner_version(b)
    } else {
        None
    }
}

/// Why a body no family read is a damaged line of one of them: it starts like an operation or
/// tuning line (an operation's name and a colon) or like a communicator's life-cycle line
/// (`[ncclCommInitRank ]comm 0x.. rank N nranks N`, which always ends in `- Init COMPLETE`,
/// `- Init START`, `- Destroy COMPLETE` or `- Abort COMPLETE`, or `nRanks N` on 2.19+'s
/// Destroy lines and its `nNodes` summary line), but is not one. NCCL prints
/// hundreds of other INFO lines; none starts this way.
fn damaged(body: &[u8]) -> Option<&'static str> {
    let b = body.trim_ascii_start();
    // Operation names start with an upper-case letter, the communicator lines with `comm` or
    // `nccl`: most other lines are settled by their first byte.
    if !b
        .first()
        .is_some_and(|c| c.is_ascii_uppercase() || *c == b'c' || *c == b'n')
    {
        return None;
    }
    let word_end = b
        .iter()
        .position(|c| !c.is_ascii_alphanumeric() && *c != b'_')
        .unwrap_or(b.len());
    let (word, rest) = b.split_at(word_end);
    if (rest.starts_with(b":") || rest.starts_with(b" [Symmetric]"))
        && crate::scan::known_op_type(word).is_some()
    {
        return Some("truncated or garbled per-collective or tuning line");
    }
    let comm = if word.starts_with(b"nccl") {
        rest.trim_ascii_start()
    } else {
        b
    };
    let mut t = crate::scan::tokens(comm);
    let shaped = t.next() == Some(b"comm")
        && t.next().is_some_and(|p| p.starts_with(b"0x"))
        && t.next() == Some(b"rank")
        && t.next().and_then(crate::scan::dec_u32).is_some()
        && matches!(t.next(), Some(b"nranks" | b"nRanks"));
    shaped.then_some("truncated communicator line (no `- Init COMPLETE`, `- Init START` or `- Destroy COMPLETE` at its end)")
}

/// The lines of a block that ends with `\n` (or is empty), without their `\n`.
pub(crate) fn lines_of(block: &[u8]) -> impl Iterator<Item = &[u8]> {
    memchr::memchr_iter(b'\n', block).scan(0usize, move |start, nl| {
        let l = block.get(*start..nl);
        *start = nl + 1;
        l
    })
}

/// Length of the prefix of `b` (which ends with `\n`) that ends at the first newline at or
/// after `want` bytes: whole lines, at least `want` bytes unless `b` is shorter.
fn cut_after_newline(b: &[u8], want: usize) -> usize {
    if want >= b.len() {
        return b.len();
    }
    let from = want.saturating_sub(1);
    match b.get(from..).and_then(|t| memchr::memchr(b'\n', t)) {
        Some(i) => from + i + 1,
        None => b.len(),
    }
}

/// `block` (ending with a newline) cut into windows of whole lines, each at least `size` bytes
/// except the last.
pub(crate) fn windows(block: &[u8], size: usize) -> impl Iterator<Item = &[u8]> {
    let mut rest = block;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (w, after) = rest.split_at(cut_after_newline(rest, size));
        rest = after;
        Some(w)
    })
}
