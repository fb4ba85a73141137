//! Lines of a dropped file by number, for a finding's evidence (`file:line`): which lines to
//! show around it ([`window`]), and a reader that collects the lines wanted from a file fed in
//! slices, in order ([`LineReader`]), plain or gzip-compressed. Nothing here holds more than
//! the slice fed and the lines wanted (each clipped to [`MAX_LINE_BYTES`]), so a file of any size
//! is read in bounded memory; [`Checkpoint`]s (where a line starts, every
//! [`CHECKPOINT_BYTES`] or so) let a later look-up in the same plain file start near its line
//! instead of at the file's start. Portable, tested natively; the worker does the reading.

use flate2::write::MultiGzDecoder;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

/// Lines shown before and after the evidence line.
pub const AROUND: u64 = 20;
/// The longest line kept (longer ones end in `…`).
pub const MAX_LINE_BYTES: usize = 2048;
/// A checkpoint is kept at the first line start after every this many bytes.
pub const CHECKPOINT_BYTES: u64 = 1 << 20;
/// The most lines one look-up collects (a window, or a diagnosis's evidence lines).
pub const MAX_WANTED: usize = 4096;

/// The first and last line numbers shown around `line` (1-based; the first is at least 1).
pub fn window(line: u64, around: u64) -> (u64, u64) {
    let line = line.max(1);
    (
        line.saturating_sub(around).max(1),
        line.saturating_add(around),
    )
}

/// Where a line starts: its byte offset in the (plain) file and its 1-based number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Checkpoint {
    pub offset: u64,
    pub line: u64,
}

impl Checkpoint {
    /// The file's start.
    pub const START: Checkpoint = Checkpoint { offset: 0, line: 1 };
}

/// The checkpoint to start from for a look-up whose first wanted line is `first`: the last
/// known one at or before it (the file's start when none is).
pub fn start_for(checkpoints: &[Checkpoint], first: u64) -> Checkpoint {
    checkpoints
        .iter()
        .copied()
        .filter(|c| c.line <= first)
        .max_by_key(|c| c.line)
        .unwrap_or(Checkpoint::START)
}

/// Adds `new` checkpoints to `known`, kept sorted and once each.
pub fn merge_checkpoints(known: &mut Vec<Checkpoint>, new: &[Checkpoint]) {
    known.extend_from_slice(new);
    known.sort_unstable();
    known.dedup_by_key(|c| c.line);
}

/// Collects the text of wanted lines from bytes fed in order, from a checkpoint on.
#[derive(Debug)]
pub struct LineCollector {
    wanted: BTreeSet<u64>,
    last_wanted: u64,
    /// The number of the line being read.
    line: u64,
    /// Bytes of the file consumed so far (of the decompressed text, for a gzip file).
    offset: u64,
    /// The current line's bytes, when it is wanted (clipped).
    current: Vec<u8>,
    clipped: bool,
    found: BTreeMap<u64, String>,
    checkpoints: Vec<Checkpoint>,
    next_checkpoint: u64,
}

impl LineCollector {
    /// Collects `wanted` (at most [`MAX_WANTED`] of them, the first) reading from `start`.
    pub fn new(wanted: impl IntoIterator<Item = u64>, start: Checkpoint) -> LineCollector {
        let wanted: BTreeSet<u64> = wanted
            .into_iter()
            .filter(|&l| l >= start.line)
            .take(MAX_WANTED)
            .collect();
        LineCollector {
            last_wanted: wanted.last().copied().unwrap_or(0),
            wanted,
            line: start.line,
            offset: start.offset,
            current: Vec::new(),
            clipped: false,
            found: BTreeMap::new(),
            checkpoints: Vec::new(),
            next_checkpoint: start.offset + CHECKPOINT_BYTES,
        }
    }

    /// Whether every wanted line was read (the rest of the file need not be).
    pub fn done(&self) -> bool {
        self.line > self.last_wanted
    }

    /// Reads `bytes`, the file's next ones.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && !self.done() {
            let wanted = self.wanted.contains(&self.line);
            match memchr::memchr(b'\n', bytes) {
                Some(at) => {
                    if wanted {
                        self.keep(&bytes[..at]);
                        self.end_line();
                    }
                    self.offset += at as u64 + 1;
                    self.line += 1;
                    bytes = &bytes[at + 1..];
                    if self.offset >= self.next_checkpoint {
                        self.checkpoints.push(Checkpoint {
                            offset: self.offset,
                            line: self.line,
                        });
                        self.next_checkpoint = self.offset + CHECKPOINT_BYTES;
                    }
                }
                None => {
                    if wanted {
                        self.keep(bytes);
                    }
                    self.offset += bytes.len() as u64;
                    bytes = &[];
                }
            }
        }
    }

    fn keep(&mut self, part: &[u8]) {
        let room = MAX_LINE_BYTES.saturating_sub(self.current.len());
        if part.len() > room {
            self.clipped = true;
        }
        self.current
            .extend_from_slice(&part[..part.len().min(room)]);
    }

    fn end_line(&mut self) {
        let bytes = std::mem::take(&mut self.current);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(&bytes);
        let mut text = String::from_utf8_lossy(bytes).into_owned();
        if std::mem::take(&mut self.clipped) {
            text.push('…');
        }
        self.found.insert(self.line, text);
    }

    /// The lines read (a last line without its newline included), the checkpoints passed, and
    /// whether the file ended before every wanted line.
    pub fn finish(mut self) -> Collected {
        let ended_early = !self.done();
        if ended_early && self.wanted.contains(&self.line) && !self.current.is_empty() {
            self.end_line();
        }
        Collected {
            lines: self.found,
            checkpoints: self.checkpoints,
            ended_early,
        }
    }
}

/// What a look-up read.
#[derive(Debug, Default, PartialEq)]
pub struct Collected {
    pub lines: BTreeMap<u64, String>,
    pub checkpoints: Vec<Checkpoint>,
    /// The file has fewer lines than the last wanted one.
    pub ended_early: bool,
}

/// A file's bytes, plain or gzip, into a [`LineCollector`].
pub struct LineReader {
    collector: LineCollector,
    gzip: Option<MultiGzDecoder<Vec<u8>>>,
}

impl LineReader {
    /// A reader of a file whose first bytes are `head` (gzip when they say so; a gzip file is
    /// always read from its start, so `start` must then be [`Checkpoint::START`]).
    pub fn new(collector: LineCollector, head: &[u8]) -> LineReader {
        let gzip = is_gzip(head).then(|| MultiGzDecoder::new(Vec::new()));
        LineReader { collector, gzip }
    }

    /// Whether the file is gzip-compressed (its checkpoints then mean nothing).
    pub fn compressed(&self) -> bool {
        self.gzip.is_some()
    }

    pub fn done(&self) -> bool {
        self.collector.done()
    }

    /// Reads the file's next `bytes`.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), String> {
        match &mut self.gzip {
            None => self.collector.feed(bytes),
            Some(z) => {
                // Inflated in pieces so that a small slice never becomes a huge buffer.
                for part in bytes.chunks(64 * 1024) {
                    z.write_all(part)
                        .map_err(|e| format!("the file's compressed data is damaged: {e}"))?;
                    let text = std::mem::take(z.get_mut());
                    self.collector.feed(&text);
                    if self.collector.done() {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    pub fn finish(mut self) -> Collected {
        if let Some(z) = self.gzip.as_mut() {
            let _ = z.flush();
            let text = std::mem::take(z.get_mut());
            self.collector.feed(&text);
        }
        let compressed = self.gzip.is_some();
        let mut c = self.collector.finish();
        if compressed {
            c.checkpoints.clear();
        }
        c
    }
}

pub fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}

/// Reads the wanted lines of an in-memory file, in slices of `slice` bytes from `start` (what
/// the worker does with a file's slices; here for tests and small inputs).
pub fn collect_from(
    file: &[u8],
    wanted: impl IntoIterator<Item = u64>,
    start: Checkpoint,
    slice: usize,
) -> Result<Collected, String> {
    let mut r = LineReader::new(LineCollector::new(wanted, start), file);
    let from = if r.compressed() {
        0
    } else {
        start.offset as usize
    };
    for part in file.get(from..).unwrap_or_default().chunks(slice.max(1)) {
        r.feed(part)?;
        if r.done() {
            break;
        }
    }
    Ok(r.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use flate2::Compression;

    fn file(n: u64) -> Vec<u8> {
        (1..=n)
            .map(|i| format!("node1:123:456 [0] NCCL INFO line {i} <b>&\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn the_window_around_a_line() {
        assert_eq!(window(100, 20), (80, 120));
        assert_eq!(window(3, 20), (1, 23));
        assert_eq!(window(0, 20), (1, 21));
        assert_eq!(window(u64::MAX, 20), (u64::MAX - 20, u64::MAX));
    }

    #[test]
    fn wanted_lines_from_any_slicing() {
        let f = file(500);
        for slice in [1, 7, 64, 4096, 1 << 20] {
            let c = collect_from(&f, [1, 250, 251, 500], Checkpoint::START, slice).unwrap();
            assert_eq!(c.lines.len(), 4, "slice {slice}");
            assert_eq!(c.lines[&250], "node1:123:456 [0] NCCL INFO line 250 <b>&");
            assert_eq!(c.lines[&500], "node1:123:456 [0] NCCL INFO line 500 <b>&");
            assert!(!c.ended_early);
        }
        // Past the end: what there is, and that the file ended.
        let c = collect_from(
            &f,
            window(495, 20).0..=window(495, 20).1,
            Checkpoint::START,
            100,
        )
        .unwrap();
        assert_eq!(
            c.lines.keys().copied().collect::<Vec<_>>(),
            (475..=500).collect::<Vec<_>>()
        );
        assert!(c.ended_early);
    }

    #[test]
    fn crlf_unterminated_long_and_invalid_lines() {
        let mut f = b"a\r\nb\n".to_vec();
        f.extend(vec![b'x'; MAX_LINE_BYTES * 3]);
        f.extend(b"\n\xff\xfe ok\nlast without newline");
        let c = collect_from(&f, 1..=5, Checkpoint::START, 3).unwrap();
        assert_eq!(c.lines[&1], "a");
        assert_eq!(c.lines[&2], "b");
        assert_eq!(c.lines[&3].chars().count(), MAX_LINE_BYTES + 1);
        assert!(c.lines[&3].ends_with('…'));
        assert_eq!(c.lines[&4], "\u{fffd}\u{fffd} ok");
        assert_eq!(c.lines[&5], "last without newline");
    }

    #[test]
    fn checkpoints_let_a_later_look_up_start_near_its_line() {
        let f = file(200_000); // ~8.6 MB
        let c = collect_from(&f, [150_000], Checkpoint::START, 1 << 20).unwrap();
        assert!(c.checkpoints.len() >= 5, "{}", c.checkpoints.len());
        for cp in &c.checkpoints {
            // Each is the start of its line.
            let text = format!("node1:123:456 [0] NCCL INFO line {} ", cp.line);
            assert!(
                f[cp.offset as usize..].starts_with(text.as_bytes()),
                "{cp:?}"
            );
        }
        let mut known = Vec::new();
        merge_checkpoints(&mut known, &c.checkpoints);
        merge_checkpoints(&mut known, &c.checkpoints);
        assert_eq!(known.len(), c.checkpoints.len());
        let start = start_for(&known, 140_000);
        assert!(start.line <= 140_000 && start.line > 100_000, "{start:?}");
        let again = collect_from(&f, 140_000..=140_002, start, 4096).unwrap();
        assert_eq!(
            again.lines[&140_001],
            "node1:123:456 [0] NCCL INFO line 140001 <b>&"
        );
        assert_eq!(start_for(&known, 5), Checkpoint::START);
    }

    #[test]
    fn gzip_files_are_read_too() {
        let f = file(3000);
        let mut z = GzEncoder::new(Vec::new(), Compression::fast());
        z.write_all(&f).unwrap();
        let gz = z.finish().unwrap();
        for slice in [5, 1000, 1 << 20] {
            let c = collect_from(&gz, [2999, 3000], Checkpoint::START, slice).unwrap();
            assert_eq!(c.lines[&3000], "node1:123:456 [0] NCCL INFO line 3000 <b>&");
            assert!(c.checkpoints.is_empty());
        }
        let mut bad = gz.clone();
        bad.truncate(bad.len() / 2);
        bad.extend(vec![0xAB; 5000]);
        let read = collect_from(&bad, [3000], Checkpoint::START, 1000);
        // Damaged data: an error, or the lines before the damage; never a panic.
        if let Ok(c) = read {
            assert!(!c.lines.contains_key(&3000) || c.lines[&3000].contains("line"));
        }
    }
}
