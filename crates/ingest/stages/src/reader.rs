//! [`StageReader`]: a stage file fed in chunks, checked line by line, then across ranks.

use crate::csv::Header;
use crate::{jsonl, Format, StageFile, StageRecord, MAX_NAMED_LINES};
use model::Diagnostic;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

/// The four cells of one row as text, before any check (`None`: absent or empty).
#[derive(Debug, Default)]
pub(crate) struct RawRow<'a> {
    pub step: Option<Cow<'a, str>>,
    pub rank: Option<Cow<'a, str>>,
    pub stage: Option<Cow<'a, str>>,
    pub duration: Option<Cow<'a, str>>,
}

/// A checked row.
struct Row<'a> {
    step: u64,
    rank: u32,
    stage: Cow<'a, str>,
    duration_ms: f64,
}

/// Why a row was refused, and its step when that much could be read.
struct Refusal {
    message: String,
    step: Option<u64>,
}

/// Reads one stage file fed in chunks of any size.
pub struct StageReader {
    out: StageFile,
    /// A line cut at the end of the last chunk.
    pending: Vec<u8>,
    header: Option<Header>,
    stage_ids: HashMap<String, u32>,
    incomplete: BTreeSet<u64>,
    /// Bad lines named so far (at most [`MAX_NAMED_LINES`]).
    named: u64,
}

impl StageReader {
    /// `path` only names the file in messages.
    pub fn new(path: &str) -> StageReader {
        StageReader {
            out: StageFile {
                path: path.to_string(),
                ..StageFile::default()
            },
            pending: Vec::new(),
            header: None,
            stage_ids: HashMap::new(),
            incomplete: BTreeSet::new(),
            named: 0,
        }
    }

    /// The next bytes of the file.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        if !self.pending.is_empty() {
            match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let mut line = std::mem::take(&mut self.pending);
                    line.extend_from_slice(&chunk[..i]);
                    self.line(&line);
                    chunk = &chunk[i + 1..];
                }
                None => {
                    self.pending.extend_from_slice(chunk);
                    return;
                }
            }
        }
        while let Some(i) = chunk.iter().position(|&b| b == b'\n') {
            self.line(&chunk[..i]);
            chunk = &chunk[i + 1..];
        }
        self.pending.extend_from_slice(chunk);
    }

    /// Ends the file: the last (newline-less) line, then the cross-rank check.
    pub fn finish(mut self) -> StageFile {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line);
        }
        if self.out.error.is_none() && self.out.records.is_empty() {
            self.out.error = Some(match self.out.format {
                None => "empty: no header and no rows".to_string(),
                Some(_) => "no usable row (every row is named in the warnings)".to_string(),
            });
        }
        self.check_missing_stages();
        let more = self.out.bad_lines.saturating_sub(self.named);
        if more > 0 {
            self.out.diagnostics.push(Diagnostic::warning(
                &self.out.path,
                0,
                format!("{more} more bad lines not named one by one"),
            ));
        }
        self.out.incomplete_steps = self.incomplete.into_iter().collect();
        self.out
    }

    fn line(&mut self, raw: &[u8]) {
        self.out.lines += 1;
        let n = self.out.lines;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let raw = if n == 1 {
            raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw)
        } else {
            raw
        };
        if raw.iter().all(u8::is_ascii_whitespace) || self.out.error.is_some() {
            return;
        }
        let Some(format) = self.out.format else {
            self.start(raw);
            return;
        };
        let Ok(text) = std::str::from_utf8(raw) else {
            self.refuse(n, "not UTF-8 text".into(), None);
            return;
        };
        let row = match format {
            Format::Csv => {
                let header = self.header.expect("a CSV file has its header");
                header.row(text)
            }
            Format::JsonLines => match jsonl::row(text) {
                Ok(r) => r,
                Err(why) => {
                    self.refuse(n, why, None);
                    return;
                }
            },
        };
        match check(row) {
            Ok(row) => self.keep(n, row),
            // A header again: files concatenated (one per rank, each with its header).
            Err(_) if format == Format::Csv && Header::parse(raw).is_some() => {}
            Err(r) => self.refuse(n, r.message, r.step),
        }
    }

    /// The first non-blank line decides the shape; a JSON object is also the first row.
    fn start(&mut self, raw: &[u8]) {
        if let Some(h) = Header::parse(raw) {
            self.header = Some(h);
            self.out.format = Some(Format::Csv);
        } else if jsonl::is_stage_object(raw) {
            self.out.format = Some(Format::JsonLines);
            self.out.lines -= 1;
            self.line(raw);
        } else {
            self.out.error = Some(
                "not a stage file: the first line is neither the CSV header \
                 step,rank,stage,duration_ms nor a JSON object with those keys"
                    .into(),
            );
        }
    }

    fn keep(&mut self, line: u64, row: Row) {
        let next = self.stage_ids.len() as u32;
        let stage = match self.stage_ids.get(row.stage.as_ref()) {
            Some(&id) => id,
            None => {
                self.stage_ids.insert(row.stage.to_string(), next);
                self.out.stage_names.push(row.stage.into_owned());
                next
            }
        };
        self.out.records.push(StageRecord {
            step: row.step,
            rank: row.rank,
            stage,
            duration_ms: row.duration_ms,
            line: u32::try_from(line).unwrap_or(u32::MAX),
        });
    }

    fn refuse(&mut self, line: u64, why: String, step: Option<u64>) {
        self.out.bad_lines += 1;
        let marked = step.or_else(|| self.out.records.last().map(|r| r.step));
        if let Some(s) = marked {
            self.incomplete.insert(s);
        }
        if self.named < MAX_NAMED_LINES {
            self.named += 1;
            let consequence = match (step, marked) {
                (Some(s), _) => format!("step {s} is incomplete"),
                (None, Some(s)) => {
                    format!("its step cannot be read; step {s} (the row before) is incomplete")
                }
                (None, None) => "its step cannot be read".to_string(),
            };
            self.out.diagnostics.push(Diagnostic::warning(
                &self.out.path,
                line,
                format!("row skipped: {why}; {consequence}"),
            ));
        }
    }

    /// Names every (step, rank) that lacks a stage its step's other ranks report, and marks the
    /// step incomplete.
    fn check_missing_stages(&mut self) {
        let stages = self.out.stage_names.len();
        if stages == 0 {
            return;
        }
        let words = stages.div_ceil(64);
        // Per (step, rank): its first line and which stages it has, as bits.
        let mut cells: HashMap<(u64, u32), usize> = HashMap::new();
        let mut first_line: Vec<u32> = Vec::new();
        let mut bits: Vec<u64> = Vec::new();
        for r in &self.out.records {
            let next = first_line.len();
            let c = *cells.entry((r.step, r.rank)).or_insert_with(|| {
                first_line.push(r.line);
                bits.extend(std::iter::repeat_n(0, words));
                next
            });
            bits[c * words + r.stage as usize / 64] |= 1 << (r.stage % 64);
        }
        let mut union: HashMap<u64, Vec<u64>> = HashMap::new();
        for (&(step, _), &c) in &cells {
            let u = union.entry(step).or_insert_with(|| vec![0; words]);
            for (w, b) in u.iter_mut().zip(&bits[c * words..(c + 1) * words]) {
                *w |= b;
            }
        }
        let mut missing: Vec<(u64, u32, u32, Vec<&str>)> = Vec::new();
        for (&(step, rank), &c) in &cells {
            let have = &bits[c * words..(c + 1) * words];
            let names: Vec<&str> = (0..stages)
                .filter(|&s| union[&step][s / 64] >> (s % 64) & 1 == 1)
                .filter(|&s| have[s / 64] >> (s % 64) & 1 == 0)
                .map(|s| self.out.stage_names[s].as_str())
                .collect();
            if !names.is_empty() {
                missing.push((step, rank, first_line[c], names));
            }
        }
        missing.sort_unstable_by_key(|m| (m.0, m.1));
        let mut named = 0u64;
        let total = missing.len();
        for (step, rank, line, names) in missing {
            self.incomplete.insert(step);
            if named < MAX_NAMED_LINES {
                named += 1;
                let list = names
                    .iter()
                    .map(|n| format!("\"{n}\""))
                    .collect::<Vec<_>>()
                    .join(", ");
                self.out.diagnostics.push(Diagnostic::warning(
                    &self.out.path,
                    u64::from(line),
                    format!(
                        "step {step} rank {rank} has no row for stage {list} (other ranks of \
                         step {step} have one); step {step} is incomplete"
                    ),
                ));
            }
        }
        if total as u64 > named {
            self.out.diagnostics.push(Diagnostic::warning(
                &self.out.path,
                0,
                format!(
                    "{} more ranks lack a stage their step's other ranks have",
                    total as u64 - named
                ),
            ));
        }
    }
}

/// Reads a whole stage file held in memory.
pub fn read_stage_file(path: &str, bytes: &[u8]) -> StageFile {
    let mut r = StageReader::new(path);
    r.feed(bytes);
    r.finish()
}

/// Checks one row's four values.
fn check(row: RawRow) -> Result<Row, Refusal> {
    let missing = |what: &str| Refusal {
        message: format!("no {what} value"),
        step: None,
    };
    let step_text = row.step.ok_or_else(|| missing("step"))?;
    let step = integer(&step_text, "step")?;
    let with_step = |mut r: Refusal| {
        r.step = Some(step);
        r
    };
    let rank_text = row.rank.ok_or_else(|| with_step(missing("rank")))?;
    let rank = integer(&rank_text, "rank").map_err(with_step)?;
    let rank = u32::try_from(rank).map_err(|_| {
        with_step(Refusal {
            message: format!("rank {rank} is too large"),
            step: None,
        })
    })?;
    let stage = row.stage.ok_or_else(|| with_step(missing("stage")))?;
    let d_text = row
        .duration
        .ok_or_else(|| with_step(missing("duration_ms")))?;
    let duration_ms = d_text.parse::<f64>().map_err(|_| {
        with_step(Refusal {
            message: format!("duration_ms {:?} is not a number", d_text.as_ref()),
            step: None,
        })
    })?;
    if !duration_ms.is_finite() {
        return Err(with_step(Refusal {
            message: format!("duration_ms {:?} is not a finite number", d_text.as_ref()),
            step: None,
        }));
    }
    if duration_ms < 0.0 {
        return Err(with_step(Refusal {
            message: format!("duration_ms {duration_ms} is negative"),
            step: None,
        }));
    }
    Ok(Row {
        step,
        rank,
        stage,
        duration_ms,
    })
}

/// A non-negative integer (`12`, `+12`, `12.0` as JSON writes floats); anything else refused.
fn integer(text: &str, what: &str) -> Result<u64, Refusal> {
    let t = text.trim().trim_start_matches('+');
    let t = t.strip_suffix(".0").unwrap_or(t);
    t.parse::<u64>().map_err(|_| {
        let message = if t.starts_with('-') && t[1..].parse::<u64>().is_ok() {
            format!("{what} {text} is negative")
        } else {
            format!("{what} {text:?} is not a non-negative integer")
        };
        Refusal {
            message,
            step: None,
        }
    })
}
