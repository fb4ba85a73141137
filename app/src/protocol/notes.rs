//! A file's notes as the page lists them (its diagnostics: every skipped line with its reason,
//! lines printed twice or attributed by guess, problems of the whole file): the rows, the count
//! per reason, and the page's queries for more. The loading worker keeps the notes themselves
//! (`worker::notes`); the page's list is `page::panels::notes`.

use ingest_nccl::split_note;
use model::{Diagnostic, Severity};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Notes sent with a file's report (the first page of its list).
pub const FIRST_PAGE: usize = PAGE;
/// Notes per request of the page's list.
pub const PAGE: usize = 200;
/// The most notes one request may ask for.
pub const MAX_PAGE: usize = 2_000;

/// One note as the page lists it: every string is the user's text, shown as text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteRow {
    /// 1-based line; 0 for a note about the whole file.
    pub line: u64,
    /// `info`, `warning` or `error`.
    pub severity: String,
    /// The kind of note, equal for every note of its kind (what the filter picks).
    pub reason: String,
    /// What it says about this line in particular (`AllReduce opCount 5 comm 0x1`).
    pub detail: Option<String>,
    /// The line's text (its first 160 bytes), when the note quotes it.
    pub text: Option<String>,
    /// The text is the start of a longer line.
    pub cut: bool,
}

impl NoteRow {
    pub fn of(d: &Diagnostic) -> Self {
        let p = split_note(d);
        NoteRow {
            line: d.line,
            severity: severity_name(d.severity).to_string(),
            reason: p.reason.to_string(),
            detail: p.detail.map(str::to_string),
            text: p.text(),
            cut: p.cut,
        }
    }

    /// The line column: empty for a note about the whole file.
    pub fn line_shown(&self) -> String {
        if self.line == 0 {
            String::new()
        } else {
            self.line.to_string()
        }
    }

    /// The reason column: the reason, and the detail after it.
    pub fn reason_shown(&self) -> String {
        match &self.detail {
            Some(d) => format!("{}: {d}", self.reason),
            None => self.reason.clone(),
        }
    }

    /// The text column: the line's text with its control characters shown as their symbols
    /// (`␀`, `␉`, …: a tab or a NUL would otherwise show as nothing), `…` after a cut one.
    pub fn text_shown(&self) -> String {
        let mut out: String = self
            .text
            .as_deref()
            .unwrap_or_default()
            .chars()
            .map(visible)
            .collect();
        if self.cut {
            out.push('…');
        }
        out
    }
}

/// A control character as its Control Pictures symbol; any other character as itself.
fn visible(c: char) -> char {
    match c {
        '\0'..='\x1f' => char::from_u32(0x2400 + c as u32).unwrap_or(c),
        '\x7f' => '\u{2421}',
        c => c,
    }
}

pub fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Info => "info",
        Severity::Warning => "warning",
        Severity::Error => "error",
    }
}

/// How many notes of one reason a file has.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteKind {
    pub reason: String,
    /// The severity of its first note.
    pub severity: String,
    /// Notes of this reason in the file's list.
    pub count: usize,
    /// Lines of this reason the parser counted but did not list (a note `N more lines: reason`
    /// stands for them: notes about lines that were still read are listed up to 200 of a kind).
    #[serde(default)]
    pub unlisted: u64,
}

/// The notes per reason, the most frequent first (ties: the first seen first).
pub fn summarise<'a>(notes: impl IntoIterator<Item = &'a Diagnostic>) -> Vec<NoteKind> {
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut kinds: Vec<NoteKind> = Vec::new();
    let mut unlisted: BTreeMap<String, u64> = BTreeMap::new();
    for d in notes {
        if d.line == 0 {
            if let Some((n, reason)) = more_lines(&d.message) {
                *unlisted.entry(reason.to_string()).or_default() += n;
            }
        }
        let reason = split_note(d).reason;
        match at.get(reason) {
            Some(&i) => kinds[i].count += 1,
            None => {
                at.insert(reason.to_string(), kinds.len());
                kinds.push(NoteKind {
                    reason: reason.to_string(),
                    severity: severity_name(d.severity).to_string(),
                    count: 1,
                    unlisted: 0,
                });
            }
        }
    }
    for k in &mut kinds {
        k.unlisted = unlisted.get(&k.reason).copied().unwrap_or(0);
    }
    // Stable: equal counts keep the order they were first seen in.
    kinds.sort_by_key(|k| std::cmp::Reverse(k.count));
    kinds
}

/// `N more lines: reason` (the parser's note for lines of a kind past the listed ones).
fn more_lines(m: &str) -> Option<(u64, &str)> {
    let (n, reason) = m.split_once(" more lines: ")?;
    Some((n.parse().ok()?, reason))
}

/// The summary as one line: `line skipped: not an NCCL line ×1234; … ×12 (+34 not listed)`.
pub fn summary_line(kinds: &[NoteKind]) -> String {
    kinds
        .iter()
        .map(|k| {
            let more = if k.unlisted > 0 {
                format!(" (+{} not listed)", k.unlisted)
            } else {
                String::new()
            };
            format!("{} ×{}{more}", k.reason, k.count)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// What the page asks of a file's notes: `limit` of them from `offset`, of one reason or all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteQuery {
    /// The file's id (its row on the page).
    pub file: usize,
    pub reason: Option<String>,
    pub offset: usize,
    pub limit: usize,
}

/// The worker's answer to a [`NoteQuery`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotePage {
    pub file: usize,
    pub reason: Option<String>,
    pub offset: usize,
    /// Notes of that reason (or all) in the file.
    pub total: usize,
    pub rows: Vec<NoteRow>,
    /// Why there are none: the worker no longer has the file (it restarted).
    pub error: Option<String>,
}
