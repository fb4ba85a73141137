//! Stage files: the always-on signal of StageFrontier (seed `stagefrontier.txt`), one row per
//! training step, rank and stage with the stage's wall-clock duration, written by the training
//! loop itself with no profiler (`/work/shared/CONTRACT.md`, "Stage file").
//!
//! Two shapes, recognised by content, never by name ([`is_stage_file`]):
//! - CSV with the header `step,rank,stage,duration_ms` (any column order, extra columns ignored,
//!   `"quoted"` fields with commas allowed);
//! - JSON Lines, one object per line with the keys `step`, `rank`, `stage`, `duration_ms`.
//!
//! Bad input never stops the read: a line with a missing, negative or non-numeric value is named
//! (a [`model::Diagnostic`] with the path and the 1-based line), its step is marked incomplete
//! ([`StageFile::incomplete_steps`]) when the step can be read, and the rest loads. After the last
//! line, a rank that lacks a stage its step's other ranks have is named too (the line of that rank's
//! first row in the step) and its step marked incomplete.
//!
//! Stage order is the order of first appearance ([`StageFile::stage_names`]). A stage a rank reports
//! twice in one step (gradient accumulation: `forward`, `backward`, `forward`, `backward`, ...) is
//! kept as two rows in file order; the analysis expands such repeats per microbatch.
//!
//! Streaming: [`StageReader::feed`] takes the file in chunks of any size (the page reads slices),
//! [`StageReader::finish`] returns the [`StageFile`]. Portable (wasm32): no I/O here.

mod csv;
mod jsonl;
mod reader;
mod sniff;

pub use reader::{read_stage_file, StageReader};
pub use sniff::is_stage_file;

/// Which of the two shapes a stage file has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Csv,
    JsonLines,
}

/// One row: a stage's duration on one rank in one step.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StageRecord {
    pub step: u64,
    pub rank: u32,
    /// Index into [`StageFile::stage_names`].
    pub stage: u32,
    pub duration_ms: f64,
    /// 1-based line of the row in its file.
    pub line: u32,
}

/// Everything read from one stage file.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StageFile {
    pub path: String,
    /// `None` when no header or first object could be recognised (the file's error says why).
    pub format: Option<Format>,
    /// Stage names in order of first appearance.
    pub stage_names: Vec<String>,
    /// Good rows, in file order.
    pub records: Vec<StageRecord>,
    /// Lines read, blank ones included.
    pub lines: u64,
    /// Lines that were not a usable row (named in `diagnostics`, up to [`MAX_NAMED_LINES`]).
    pub bad_lines: u64,
    /// Steps a bad line or a missing stage touched, sorted: the windows that hold them are
    /// incomplete.
    pub incomplete_steps: Vec<u64>,
    pub diagnostics: Vec<model::Diagnostic>,
    /// Set when the file cannot be used at all (no header, not a stage file).
    pub error: Option<String>,
}

impl StageFile {
    /// Distinct ranks of the good rows, sorted.
    pub fn ranks(&self) -> Vec<u32> {
        let mut r: Vec<u32> = self.records.iter().map(|r| r.rank).collect();
        r.sort_unstable();
        r.dedup();
        r
    }

    /// Distinct steps of the good rows, sorted.
    pub fn steps(&self) -> Vec<u64> {
        let mut s: Vec<u64> = self.records.iter().map(|r| r.step).collect();
        s.sort_unstable();
        s.dedup();
        s
    }
}

/// Bad lines named one by one; past this many, one diagnostic counts the rest (a file of a
/// million bad lines must not become a million messages).
pub const MAX_NAMED_LINES: u64 = 200;

/// The four columns (keys) every row has.
pub const COLUMNS: [&str; 4] = ["step", "rank", "stage", "duration_ms"];
