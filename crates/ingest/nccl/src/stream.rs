//! A log streamed in as it arrives, plain or gzip-compressed, with memory bounded by the
//! records kept: [`LogStream`].
//!
//! gzip input (`1f 8b`, any number of members, as `gzip -c a b > ab.gz` writes) is inflated
//! chunk by chunk as it is fed, and the text goes to the [`LogParser`] a MiB at a time: no
//! compressed or decompressed file is ever held whole. Compressed bytes are inflated in blocks
//! of [`GZIP_BLOCK`] at fixed offsets of the file, so what comes out, up to a damaged spot, does
//! not depend on how the caller cut the input (the fuzz target compares whole and chunked
//! parses). A stream that is damaged or cut short keeps every line inflated before the damage
//! and ends with one diagnostic naming the file and what went wrong.
//!
//! Beside the parser, [`LogStream`] watches the text for the first line that is NCCL output by
//! the test [`crate::is_nccl_log`] applies to a file's head, so that a caller can tell a log
//! whose first NCCL line comes late (after pip output, a traceback, a config dump) from text
//! that holds none ([`LogStream::finish_sniffed`]).

use crate::parser::LogParser;
use crate::read::MAX_LINE;
use crate::records::ParsedLog;
use flate2::{Crc, Decompress, FlushDecompress, Status};
use model::Diagnostic;

/// Compressed bytes inflated per call, at fixed offsets of the file.
const GZIP_BLOCK: usize = 32 * 1024;
/// Inflated text handed to the parser at a time (natively it reads a chunk's lines on every
/// core, its threads meeting at the chunk's end).
const TEXT_FEED: usize = 1 << 20;
/// The inflater is called only with at least this much room for its output (more than its
/// 32 KiB window).
const INFLATE_ROOM: usize = 64 * 1024;
/// Longest gzip member header read (its optional name, comment and extra field included).
const MAX_GZIP_HEADER: usize = 256 * 1024;

/// Streams one log into a [`LogParser`]: feed chunks as they come (cut anywhere), then
/// [`LogStream::finish`]. The first bytes decide between plain text and gzip.
pub struct LogStream {
    path: String,
    parser: LogParser,
    seen: NcclLineSeen,
    input: Input,
    /// Compressed bytes inflated per call (tests make it small to cut headers and trailers).
    block: usize,
}

enum Input {
    /// Nothing decided yet; a lone first byte waits for the second.
    Start(Option<u8>),
    Plain,
    Gzip(Box<Gunzip>),
}

impl LogStream {
    pub fn new(path: &str, file_index: u32) -> Self {
        LogStream::with_parser(path, LogParser::new(path, file_index))
    }

    /// A stream into `parser` (made with the same `path`), e.g. one with other threads.
    pub fn with_parser(path: &str, parser: LogParser) -> Self {
        LogStream {
            path: path.to_string(),
            parser,
            seen: NcclLineSeen::default(),
            input: Input::Start(None),
            block: GZIP_BLOCK,
        }
    }

    /// Compressed bytes inflated per call (default 32 KiB): small values exist to test cuts
    /// through gzip headers and trailers.
    #[doc(hidden)]
    pub fn with_gzip_block(mut self, bytes: usize) -> Self {
        self.block = bytes.max(1);
        self
    }

    /// Pushes the next bytes of the file.
    pub fn feed(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        if let Input::Start(first) = self.input {
            let mut head = [0u8; 2];
            let n = match first {
                Some(b) => {
                    head[0] = b;
                    head[1] = chunk[0];
                    2
                }
                None => {
                    let n = chunk.len().min(2);
                    head[..n].copy_from_slice(&chunk[..n]);
                    n
                }
            };
            if n < 2 {
                self.input = Input::Start(Some(head[0]));
                return;
            }
            self.input = if crate::is_gzip(&head) {
                Input::Gzip(Box::new(Gunzip::new(self.block)))
            } else {
                Input::Plain
            };
            if let Some(b) = first {
                // The byte held back goes first, as text or as the gzip magic's first byte.
                self.push(&[b]);
            }
        }
        self.push(chunk);
    }

    fn push(&mut self, bytes: &[u8]) {
        let LogStream {
            parser,
            seen,
            input,
            ..
        } = self;
        match input {
            Input::Plain => {
                seen.feed(bytes);
                parser.feed(bytes);
            }
            Input::Gzip(gz) => gz.feed(bytes, seen, &mut |text| parser.feed(text)),
            Input::Start(_) => {}
        }
    }

    /// Whether the input is gzip-compressed (known after its first two bytes).
    pub fn is_gzip(&self) -> bool {
        matches!(self.input, Input::Gzip(_))
    }

    /// Bytes this stream holds between feeds besides the parser's own state and the inflater's
    /// fixed one (its 32 KiB window): the inflated text waiting for the parser, a cut gzip
    /// header or trailer, and the line the NCCL-line watch carries over. Bounded, whatever the
    /// input's size.
    pub fn buffered_bytes(&self) -> usize {
        let gz = match &self.input {
            Input::Gzip(gz) => gz.buffered_bytes(),
            _ => 0,
        };
        gz + self.seen.carry.capacity()
    }

    /// Ends the input: the parsed log, with a diagnostic at its end when a gzip stream was
    /// damaged or cut short (the lines inflated before it are kept).
    pub fn finish(self) -> ParsedLog {
        self.finish_sniffed().0
    }

    /// [`LogStream::finish`], and whether some line of the (decompressed) text is NCCL output
    /// by the test [`crate::is_nccl_log`] applies to a file's head: a line with an
    /// `NCCL INFO`/`NCCL WARN` marker after a `[dev]`, or a bare `NCCL version` banner (only the
    /// lines up to the first such one are looked at).
    pub fn finish_sniffed(self) -> (ParsedLog, bool) {
        let LogStream {
            path,
            mut parser,
            mut seen,
            input,
            ..
        } = self;
        let damage = match input {
            Input::Start(Some(b)) => {
                // A one-byte file: text.
                seen.feed(&[b]);
                parser.feed(&[b]);
                None
            }
            Input::Start(None) | Input::Plain => None,
            Input::Gzip(mut gz) => {
                let damage = gz.finish(&mut seen, &mut |text| parser.feed(text));
                damage.map(|d| (d, gz.text_bytes))
            }
        };
        let mut out = parser.finish();
        if let Some((damage, text)) = damage {
            out.diagnostics.push(damage.diagnostic(&path, text));
        }
        let nccl = seen.found || seen.last_line_is_nccl();
        (out, nccl)
    }
}

/// Where a gzip member's reading is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Reading a member's header (the file's first, or one after a trailer).
    Header,
    /// Inflating a member's compressed data.
    Deflate,
    /// Reading a member's 8-byte trailer (CRC-32 and length).
    Trailer,
    /// After a member's trailer: the end of the file, or the next member.
    Between,
    /// Stopped: the rest of the file is not read.
    Stopped,
}

/// What stopped a gzip stream.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Damage {
    /// The file ends inside a member: in its header, its compressed data or its trailer.
    CutShort(Stage),
    /// Something unreadable at about this offset of the file.
    Corrupt { at: u64, what: String },
    /// Bytes after the last complete member that do not start another one.
    Trailing { at: u64, bytes: u64 },
}

impl Damage {
    /// The finding about it in the log of `path`, of which `text` bytes were inflated.
    fn diagnostic(&self, path: &str, text: u64) -> Diagnostic {
        let kept = format!("the {text} bytes of text inflated before it are loaded");
        match self {
            Damage::CutShort(stage) => {
                let inside = match stage {
                    Stage::Header => "a member's header",
                    Stage::Trailer => "a member's trailer",
                    _ => "a member's compressed data",
                };
                let msg = format!("gzip stream cut short: {path} ends inside {inside}; {kept}");
                Diagnostic::error(path, 0, msg)
            }
            Damage::Corrupt { at, what } => {
                let msg = format!(
                    "gzip stream damaged near byte {at} of {path} ({what}); {kept}, the rest \
                     of the file is not read"
                );
                Diagnostic::error(path, 0, msg)
            }
            Damage::Trailing { at, bytes } => {
                let msg = format!(
                    "{bytes} bytes after the last gzip member of {path} (from byte {at}) are not \
                     gzip; ignored"
                );
                Diagnostic::warning(path, 0, msg)
            }
        }
    }
}

/// A multi-member gzip decoder fed compressed bytes and handing out inflated text.
struct Gunzip {
    stage: Stage,
    /// A member header read so far, or a trailer.
    head: Vec<u8>,
    inflate: Decompress,
    crc: Crc,
    /// Inflated text not yet handed out (capacity [`TEXT_FEED`]).
    text: Vec<u8>,
    /// Compressed bytes waiting to make a whole block.
    pending: Vec<u8>,
    block: usize,
    /// Compressed bytes of the file handled so far (the offset of the next block's start).
    at: u64,
    /// Where the header or trailer being read started (what a damage in it is reported at,
    /// whatever the blocks).
    unit_start: u64,
    /// Inflated bytes handed out.
    text_bytes: u64,
    /// What stopped the stream (trailing bytes keep being counted in it).
    damage: Option<Damage>,
}

impl Gunzip {
    fn new(block: usize) -> Self {
        Gunzip {
            stage: Stage::Header,
            head: Vec::new(),
            inflate: Decompress::new(false),
            crc: Crc::new(),
            text: Vec::new(),
            pending: Vec::new(),
            block,
            at: 0,
            unit_start: 0,
            text_bytes: 0,
            damage: None,
        }
    }

    fn buffered_bytes(&self) -> usize {
        self.head.capacity() + self.text.capacity() + self.pending.capacity()
    }

    /// Takes compressed bytes; whole blocks are inflated at once, a partial one waits. The
    /// text goes to `seen` as it is inflated and to `out` a MiB at a time.
    fn feed(&mut self, mut bytes: &[u8], seen: &mut NcclLineSeen, out: &mut dyn FnMut(&[u8])) {
        if self.stage == Stage::Stopped {
            self.count_trailing(bytes.len());
            return;
        }
        if !self.pending.is_empty() {
            let want = self.block - self.pending.len();
            let (now, rest) = bytes.split_at(want.min(bytes.len()));
            self.pending.extend_from_slice(now);
            bytes = rest;
            if self.pending.len() < self.block {
                return;
            }
            let block = std::mem::take(&mut self.pending);
            self.block_in(&block, seen, out);
            self.pending = block;
            self.pending.clear();
        }
        let whole = bytes.len() - bytes.len() % self.block;
        let (blocks, tail) = bytes.split_at(whole);
        for block in blocks.chunks(self.block) {
            self.block_in(block, seen, out);
        }
        self.pending.extend_from_slice(tail);
    }

    /// Ends the input: inflates the last partial block, hands out the rest of the text, and
    /// says what went wrong, if anything.
    fn finish(&mut self, seen: &mut NcclLineSeen, out: &mut dyn FnMut(&[u8])) -> Option<Damage> {
        let block = std::mem::take(&mut self.pending);
        if !block.is_empty() {
            self.block_in(&block, seen, out);
        }
        self.hand_out(out);
        if self.damage.is_none() {
            match self.stage {
                Stage::Between | Stage::Stopped => {}
                // `1f 8b` alone is a header cut short, like any other.
                stage => self.damage = Some(Damage::CutShort(stage)),
            }
        }
        self.damage.clone()
    }

    fn count_trailing(&mut self, n: usize) {
        if let Some(Damage::Trailing { bytes, .. }) = &mut self.damage {
            *bytes += n as u64;
        }
    }

    /// One block of compressed bytes (the file's bytes from `self.at`).
    fn block_in(&mut self, mut b: &[u8], seen: &mut NcclLineSeen, out: &mut dyn FnMut(&[u8])) {
        while !b.is_empty() {
            let stage = self.stage;
            if self.head.is_empty() {
                self.unit_start = self.at;
            }
            let used = match stage {
                Stage::Header => self.header_in(b),
                Stage::Deflate => self.deflate_in(b, seen, out),
                Stage::Trailer => self.trailer_in(b),
                Stage::Between => {
                    if b[0] == 0x1f {
                        self.stage = Stage::Header;
                        Ok(0)
                    } else {
                        self.damage = Some(Damage::Trailing {
                            at: self.at,
                            bytes: 0,
                        });
                        self.stage = Stage::Stopped;
                        Ok(0)
                    }
                }
                Stage::Stopped => {
                    self.count_trailing(b.len());
                    return;
                }
            };
            let used = match used {
                Ok(0) if self.stage == stage => Err("the inflater took no input".to_string()),
                used => used,
            };
            match used {
                Ok(n) => {
                    self.at += n as u64;
                    b = b.get(n..).unwrap_or_default();
                }
                Err(what) => {
                    self.hand_out(out);
                    let at = match stage {
                        Stage::Deflate => self.at,
                        _ => self.unit_start,
                    };
                    self.damage = Some(Damage::Corrupt { at, what });
                    self.stage = Stage::Stopped;
                    return;
                }
            }
        }
    }

    /// Reads a member header from `b`'s start: the bytes used.
    fn header_in(&mut self, b: &[u8]) -> Result<usize, String> {
        let had = self.head.len();
        // Small steps: a header is mostly 10 to 30 bytes, and the rest of `b` is compressed.
        let mut used = 0;
        while used < b.len() {
            let step = (b.len() - used).min(self.head.len().max(512));
            self.head
                .extend_from_slice(b.get(used..used + step).unwrap_or_default());
            used += step;
            match gzip_header_len(&self.head)? {
                Some(len) => {
                    self.head.clear();
                    self.stage = Stage::Deflate;
                    self.inflate.reset(false);
                    self.crc.reset();
                    return Ok(len - had);
                }
                None if self.head.len() > MAX_GZIP_HEADER => {
                    return Err(format!(
                        "a gzip member header longer than {} KiB",
                        MAX_GZIP_HEADER / 1024
                    ));
                }
                None => {}
            }
        }
        Ok(used)
    }

    /// Inflates from `b`'s start: the bytes used.
    fn deflate_in(
        &mut self,
        b: &[u8],
        seen: &mut NcclLineSeen,
        out: &mut dyn FnMut(&[u8]),
    ) -> Result<usize, String> {
        let mut used = 0;
        loop {
            if self.text.capacity() - self.text.len() < INFLATE_ROOM {
                self.hand_out(out);
                if self.text.capacity() < TEXT_FEED {
                    self.text.reserve_exact(TEXT_FEED);
                }
            }
            let before_in = self.inflate.total_in();
            let before_out = self.text.len();
            let input = b.get(used..).unwrap_or_default();
            let status = self
                .inflate
                .decompress_vec(input, &mut self.text, FlushDecompress::None);
            let took = (self.inflate.total_in() - before_in) as usize;
            used += took;
            let made = self.text.get(before_out..).unwrap_or_default();
            self.crc.update(made);
            seen.feed(made);
            let made = made.len();
            match status {
                Ok(Status::StreamEnd) => {
                    self.stage = Stage::Trailer;
                    return Ok(used);
                }
                Ok(Status::Ok | Status::BufError) => {
                    if took == 0 && made == 0 {
                        // Everything given is taken in: more input needed.
                        return Ok(used);
                    }
                    if used >= b.len() && made == 0 {
                        return Ok(used);
                    }
                }
                Err(e) => {
                    self.at += used as u64;
                    return Err(format!("corrupt compressed data: {e}"));
                }
            }
        }
    }

    /// Reads a member's trailer from `b`'s start: the bytes used.
    fn trailer_in(&mut self, b: &[u8]) -> Result<usize, String> {
        let take = (8 - self.head.len()).min(b.len());
        self.head
            .extend_from_slice(b.get(..take).unwrap_or_default());
        if self.head.len() < 8 {
            return Ok(take);
        }
        let word = |i: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(self.head.get(i..i + 4).unwrap_or(&[0; 4]));
            u32::from_le_bytes(w)
        };
        let (crc, len) = (word(0), word(4));
        self.head.clear();
        if crc != self.crc.sum() || len != self.crc.amount() {
            return Err(format!(
                "a gzip member's check does not match its data (CRC-32 {crc:08x}, length {len} \
                 recorded; {:08x}, {} inflated)",
                self.crc.sum(),
                self.crc.amount()
            ));
        }
        self.stage = Stage::Between;
        Ok(take)
    }

    fn hand_out(&mut self, out: &mut dyn FnMut(&[u8])) {
        if !self.text.is_empty() {
            out(&self.text);
            self.text_bytes += self.text.len() as u64;
            self.text.clear();
        }
    }
}

/// The length of the gzip member header at `h`'s start (RFC 1952), `None` while `h` is too
/// short to say, or why it is not one.
fn gzip_header_len(h: &[u8]) -> Result<Option<usize>, String> {
    let byte = |i: usize| h.get(i).copied();
    if byte(0).is_some_and(|b| b != 0x1f) || byte(1).is_some_and(|b| b != 0x8b) {
        return Err("a gzip member does not start with 1f 8b".into());
    }
    let (Some(method), Some(flags)) = (byte(2), byte(3)) else {
        return Ok(None);
    };
    if method != 8 {
        return Err(format!("unknown gzip compression method {method}"));
    }
    if flags & 0xe0 != 0 {
        return Err(format!("reserved gzip header flags set ({flags:#04x})"));
    }
    let mut at = 10;
    if flags & 0x04 != 0 {
        // FEXTRA: a 2-byte length, then that many bytes.
        let (Some(lo), Some(hi)) = (byte(at), byte(at + 1)) else {
            return Ok(None);
        };
        at += 2 + usize::from(u16::from_le_bytes([lo, hi]));
    }
    for flag in [0x08, 0x10] {
        // FNAME, FCOMMENT: zero-terminated.
        if flags & flag != 0 {
            match h.get(at..).and_then(|r| memchr::memchr(0, r)) {
                Some(i) => at += i + 1,
                None => return Ok(None),
            }
        }
    }
    if flags & 0x02 != 0 {
        // FHCRC: a 2-byte check of the header, not verified.
        at += 2;
    }
    Ok((h.len() >= at).then_some(at))
}

/// Watches text fed in pieces for the first line [`sniff_line`] accepts.
#[derive(Default)]
struct NcclLineSeen {
    found: bool,
    /// The line the last piece ended inside of.
    carry: Vec<u8>,
    /// That line is longer than any NCCL line ([`MAX_LINE`]): not looked at.
    overlong: bool,
}

impl NcclLineSeen {
    fn feed(&mut self, mut text: &[u8]) {
        if self.found {
            return;
        }
        if !self.carry.is_empty() || self.overlong {
            match memchr::memchr(b'\n', text) {
                Some(i) => {
                    self.carry_on(text.get(..i).unwrap_or_default());
                    if self.last_line_is_nccl() {
                        return self.found_one();
                    }
                    self.carry.clear();
                    self.overlong = false;
                    text = text.get(i + 1..).unwrap_or_default();
                }
                None => return self.carry_on(text),
            }
        }
        let end = memchr::memrchr(b'\n', text).map_or(0, |i| i + 1);
        let (lines, tail) = text.split_at(end);
        if lines.split(|c| *c == b'\n').any(sniff_line) {
            return self.found_one();
        }
        self.carry_on(tail);
    }

    fn carry_on(&mut self, b: &[u8]) {
        if self.overlong {
            return;
        }
        if self.carry.len() + b.len() > MAX_LINE {
            self.overlong = true;
            self.carry = Vec::new();
        } else {
            self.carry.extend_from_slice(b);
        }
    }

    /// Whether the line carried over (unterminated so far) is an NCCL line.
    fn last_line_is_nccl(&self) -> bool {
        !self.overlong && !self.carry.is_empty() && sniff_line(&self.carry)
    }

    fn found_one(&mut self) {
        self.found = true;
        self.carry = Vec::new();
        self.overlong = false;
    }
}

/// Whether one line is NCCL output: an `NCCL INFO`/`NCCL WARN` marker after a `[dev]` (any
/// prefix before the `host:pid:tid`), or a bare `NCCL version` banner.
pub(crate) fn sniff_line(line: &[u8]) -> bool {
    if let Some(s) = crate::prefix::split_line(line) {
        return s.dev.is_some();
    }
    crate::scan::banner_version(line).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lengths() {
        let base = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
        assert_eq!(gzip_header_len(&base[..9]), Ok(None));
        assert_eq!(gzip_header_len(&base), Ok(Some(10)));
        let mut named = base.to_vec();
        named[3] = 0x08 | 0x10 | 0x02;
        named.extend_from_slice(b"a.log\0comment\0");
        assert_eq!(
            gzip_header_len(&named),
            Ok(None),
            "the header check is missing"
        );
        named.extend_from_slice(&[1, 2]);
        assert_eq!(gzip_header_len(&named), Ok(Some(named.len())));
        let mut extra = base.to_vec();
        extra[3] = 0x04;
        extra.extend_from_slice(&[3, 0, 9, 9]);
        assert_eq!(gzip_header_len(&extra), Ok(None));
        extra.push(9);
        assert_eq!(gzip_header_len(&extra), Ok(Some(15)));
        assert!(gzip_header_len(&[0x1f, 0x8c]).is_err());
        assert!(gzip_header_len(&[0x1f, 0x8b, 7, 0]).is_err());
        assert!(gzip_header_len(&[0x1f, 0x8b, 8, 0x20]).is_err());
    }

    #[test]
    fn nccl_line_watch_across_pieces() {
        let text = b"pip says hi\nnode1:1:2 [0] NCCL INFO Bootstrap\nmore\n";
        for step in 1..text.len() {
            let mut seen = NcclLineSeen::default();
            for piece in text.chunks(step) {
                seen.feed(piece);
            }
            assert!(seen.found, "{step}-byte pieces");
        }
        let mut seen = NcclLineSeen::default();
        seen.feed(b"pip says hi\nnode1:1:2 [0] NCCL INFO last line unterminated");
        assert!(!seen.found && seen.last_line_is_nccl());
        let mut seen = NcclLineSeen::default();
        seen.feed(b"text that mentions NCCL INFO without a device\nnothing else\n");
        assert!(!seen.found && !seen.last_line_is_nccl());
        let mut long = NcclLineSeen::default();
        long.feed(&vec![b'x'; MAX_LINE + 1]);
        long.feed(b" node1:1:2 [0] NCCL INFO inside an overlong line\n");
        assert!(!long.found && long.carry.is_empty());
        long.feed(b"NCCL version 2.18.3+cuda12.2\n");
        assert!(long.found);
    }
}
