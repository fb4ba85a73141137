//! A file's notes (its diagnostics: every skipped line with its reason, lines printed twice or
//! attributed by guess, problems of the whole file), however many there are. The loading worker
//! keeps them ([`NoteStore`], over the session's own parsed logs and exports: nothing is copied)
//! and sends the page the first [`FIRST_PAGE`] with the file's report, a count per reason
//! ([`NoteKind`]), and any further [`PAGE`] of them, of every reason or of one, when the page's
//! list scrolls there; a download of all of them (CSV) is built here too. Portable, tested
//! natively; the page's list is `notes_view.rs`.

use ingest_nccl::split_note;
use load::{LoadedExport, LoadedLog};
use model::{Diagnostic, Severity};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::panel_data::csv_line;

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

/// Where a file's notes are held: in the session's parsed log or read export (the report's
/// first notes are a copy of those), plus the notes the session added about it.
enum Base {
    None,
    Log(Arc<LoadedLog>),
    Export(Arc<LoadedExport>),
}

impl Base {
    fn notes(&self) -> &[Diagnostic] {
        match self {
            Base::None => &[],
            Base::Log(l) => &l.parsed.diagnostics,
            Base::Export(e) => &e.export.diagnostics,
        }
    }
}

/// One file's notes, kept in the loading worker.
pub struct FileNotes {
    name: String,
    base: Base,
    extra: Vec<Diagnostic>,
    /// The positions of the notes of the reason last filtered by.
    filtered: Option<(String, Vec<u32>)>,
}

impl FileNotes {
    fn len(&self) -> usize {
        self.base.notes().len() + self.extra.len()
    }

    fn get(&self, i: usize) -> Option<&Diagnostic> {
        let base = self.base.notes();
        base.get(i).or_else(|| self.extra.get(i - base.len()))
    }

    fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.base.notes().iter().chain(&self.extra)
    }

    /// `limit` notes of `reason` (or all) from `offset`, and how many there are.
    fn page(&mut self, reason: Option<&str>, offset: usize, limit: usize) -> (usize, Vec<NoteRow>) {
        let limit = limit.min(MAX_PAGE);
        let Some(reason) = reason else {
            let end = offset.saturating_add(limit).min(self.len());
            let rows = (offset.min(end)..end)
                .filter_map(|i| self.get(i))
                .map(NoteRow::of)
                .collect();
            return (self.len(), rows);
        };
        if self.filtered.as_ref().is_none_or(|(r, _)| r != reason) {
            let at: Vec<u32> = self
                .iter()
                .enumerate()
                .filter(|(_, d)| split_note(d).reason == reason)
                .map(|(i, _)| i as u32)
                .collect();
            self.filtered = Some((reason.to_string(), at));
        }
        let at = self
            .filtered
            .as_ref()
            .map_or(&[][..], |(_, a)| a.as_slice());
        let rows = at
            .iter()
            .skip(offset)
            .take(limit)
            .filter_map(|&i| self.get(i as usize))
            .map(NoteRow::of)
            .collect();
        (at.len(), rows)
    }

    /// Every note as CSV: `file,line,severity,reason,text`, each column as the page's list
    /// shows it.
    pub fn csv(&self) -> String {
        let mut out = String::new();
        csv_line(&mut out, ["file", "line", "severity", "reason", "text"]);
        for d in self.iter() {
            let row = NoteRow::of(d);
            csv_line(
                &mut out,
                [
                    self.name.as_str(),
                    &row.line_shown(),
                    &row.severity,
                    &row.reason_shown(),
                    &row.text_shown(),
                ],
            );
        }
        out
    }

    /// The download's file name: the file's own name (any folder path flattened) and `.notes.csv`.
    pub fn csv_name(&self) -> String {
        let base: String = self
            .name
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("{base}.notes.csv")
    }
}

/// Every loaded file's notes, by the page's file id.
#[derive(Default)]
pub struct NoteStore {
    files: BTreeMap<usize, FileNotes>,
}

impl NoteStore {
    /// Keeps file `id`'s `notes` (its report's): those that are a copy of `log`'s or `export`'s
    /// own (what the session kept of the file, if anything) are read from there.
    pub fn keep(
        &mut self,
        id: usize,
        name: &str,
        log: Option<Arc<LoadedLog>>,
        export: Option<Arc<LoadedExport>>,
        mut notes: Vec<Diagnostic>,
    ) {
        let mut base = match (log, export) {
            (Some(l), _) => Base::Log(l),
            (None, Some(e)) => Base::Export(e),
            (None, None) => Base::None,
        };
        let own = base.notes();
        let copied = notes.len() >= own.len()
            && notes.first() == own.first()
            && own.last() == own.len().checked_sub(1).and_then(|i| notes.get(i));
        if !copied {
            base = Base::None;
        }
        let extra = notes.split_off(base.notes().len());
        self.files.insert(
            id,
            FileNotes {
                name: name.to_string(),
                base,
                extra,
                filtered: None,
            },
        );
    }

    pub fn file(&self, id: usize) -> Option<&FileNotes> {
        self.files.get(&id)
    }

    /// The answer to `q`.
    pub fn page(&mut self, q: &NoteQuery) -> NotePage {
        let (total, rows, error) = match self.files.get_mut(&q.file) {
            Some(f) => {
                let (total, rows) = f.page(q.reason.as_deref(), q.offset, q.limit);
                (total, rows, None)
            }
            None => (
                0,
                Vec::new(),
                Some("this file's notes are no longer in the loading worker (it restarted); drop the file again".to_string()),
            ),
        };
        NotePage {
            file: q.file,
            reason: q.reason.clone(),
            offset: q.offset,
            total,
            rows,
            error,
        }
    }
}

/// Which rows of a list of `total` rows of `row_px` to render when its scroll box shows
/// `view_px` from `scroll_px`, and the padding above and below them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ListWindow {
    pub first: usize,
    pub last: usize,
    pub pad_top: f64,
    pub pad_bottom: f64,
}

/// The tallest a list's scroll box is made: browsers cap an element's height (Firefox near
/// 17.9 million pixels), so a longer list scrolls by share instead of by pixel.
pub const MAX_LIST_PX: f64 = 8_000_000.0;
/// Rows rendered beyond the visible ones, above and below.
pub const LIST_OVERSCAN: usize = 8;

/// The rows to render (see [`ListWindow`]). Up to [`MAX_LIST_PX`] of rows, each row is at its
/// own place and a margin is rendered around the visible ones; past it, the box scrolls
/// [`MAX_LIST_PX`], its position picks the rows by share (the end shows the last rows) and they
/// are rendered where the box looks.
pub fn list_window(total: usize, scroll_px: f64, view_px: f64, row_px: f64) -> ListWindow {
    let row = if row_px.is_finite() && row_px >= 1.0 {
        row_px
    } else {
        22.0
    };
    let view = if view_px.is_finite() {
        view_px.clamp(0.0, 1e5)
    } else {
        480.0
    };
    let scroll = if scroll_px.is_finite() {
        scroll_px.max(0.0)
    } else {
        0.0
    };
    let visible = (view / row).ceil() as usize + 1;
    if total as f64 * row <= MAX_LIST_PX {
        let top = ((scroll / row).floor() as usize).min(total);
        let first = top.saturating_sub(LIST_OVERSCAN);
        let last = top.saturating_add(visible + LIST_OVERSCAN).min(total);
        return ListWindow {
            first,
            last,
            pad_top: first as f64 * row,
            pad_bottom: (total - last) as f64 * row,
        };
    }
    let range = (MAX_LIST_PX - view).max(1.0);
    let share = (scroll / range).clamp(0.0, 1.0);
    let top = ((total + 1 - visible) as f64 * share).floor() as usize;
    let last = (top + visible).min(total);
    let first = top.min(last);
    let block = (last - first) as f64 * row;
    let pad_top = scroll.min(MAX_LIST_PX - block).max(0.0);
    ListWindow {
        first,
        last,
        pad_top,
        pad_bottom: (MAX_LIST_PX - pad_top - block).max(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(line: u64, m: &str) -> Diagnostic {
        Diagnostic::new("a.log", line, Severity::Info, m)
    }

    /// A log of 3 000 lines of foreign text around a few NCCL lines, two printed twice.
    fn log() -> LoadedLog {
        let mut text = String::new();
        for i in 0..3000 {
            text.push_str(&format!("foreign <b>{i}</b>, \"quoted\"\n"));
            if i % 1000 == 0 {
                text.push_str("host:1:1 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x2 count 8 datatype 7 op 0 root 0 comm 0xa [nranks=2] stream 0x3\n");
            }
        }
        let mut loader = load::LogLoader::new("dir/a b.log", 0);
        loader.feed(text.as_bytes());
        loader.finish(text.len() as u64)
    }

    #[test]
    fn pages_and_filters_every_note_from_the_session() {
        let mut session = load::Session::default();
        let report = session.add_log(log());
        let kept = session.logs().last().cloned();
        let total = report.diagnostics.len();
        let kinds = summarise(&report.diagnostics);
        assert_eq!(kinds[0].reason, "line skipped: not an NCCL line");
        assert_eq!(kinds[0].count, 3000);
        assert_eq!(kinds.iter().map(|k| k.count).sum::<usize>(), total);
        let twice = kinds
            .iter()
            .find(|k| k.reason == "per-collective line printed twice (counted twice)")
            .expect("printed twice");
        assert_eq!(twice.count, 2);
        assert!(summary_line(&kinds).starts_with("line skipped: not an NCCL line ×3000; "));

        let mut store = NoteStore::default();
        store.keep(4, "dir/a b.log", kept, None, report.diagnostics.clone());
        // The store reads the session's copy: nothing is kept twice.
        assert!(matches!(store.file(4).map(|f| &f.base), Some(Base::Log(_))));
        let mut all = Vec::new();
        let mut offset = 0;
        loop {
            let q = NoteQuery {
                file: 4,
                reason: None,
                offset,
                limit: PAGE,
            };
            let p = store.page(&q);
            assert_eq!(p.total, total);
            if p.rows.is_empty() {
                break;
            }
            offset += p.rows.len();
            all.extend(p.rows);
        }
        let want: Vec<NoteRow> = report.diagnostics.iter().map(NoteRow::of).collect();
        assert_eq!(all, want);
        let first = &all[0];
        assert_eq!(first.line, 1);
        assert_eq!(first.text.as_deref(), Some("foreign <b>0</b>, \"quoted\""));

        let q = NoteQuery {
            file: 4,
            reason: Some(twice.reason.clone()),
            offset: 1,
            limit: 10,
        };
        let p = store.page(&q);
        assert_eq!(p.total, 2);
        assert_eq!(p.rows.len(), 1);
        assert_eq!(p.rows[0].reason, twice.reason);
        assert!(p.rows[0].detail.as_deref().unwrap().contains("opCount 1"));

        let csv = store.file(4).unwrap().csv();
        let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len(), total + 1);
        assert_eq!(lines[0], "file,line,severity,reason,text");
        assert_eq!(
            lines[1],
            "dir/a b.log,1,info,line skipped: not an NCCL line,\"foreign <b>0</b>, \"\"quoted\"\"\""
        );
        assert_eq!(store.file(4).unwrap().csv_name(), "a_b.log.notes.csv");

        let gone = store.page(&NoteQuery {
            file: 9,
            reason: None,
            offset: 0,
            limit: 5,
        });
        assert!(gone.error.is_some() && gone.rows.is_empty());
    }

    #[test]
    fn notes_not_copied_from_the_session_are_kept_whole() {
        let mut store = NoteStore::default();
        let notes = vec![note(0, "no NCCL kernels"), note(0, "other")];
        store.keep(0, "x.sqlite", None, None, notes.clone());
        let p = store.page(&NoteQuery {
            file: 0,
            reason: None,
            offset: 0,
            limit: 10,
        });
        assert_eq!(p.rows, notes.iter().map(NoteRow::of).collect::<Vec<_>>());
    }

    #[test]
    fn counts_lines_not_listed_and_shows_control_characters() {
        let kinds = summarise(&[
            note(
                3,
                "per-collective line printed twice (counted twice): x: \"a\"",
            ),
            note(
                0,
                "12 more lines: per-collective line printed twice (counted twice)",
            ),
        ]);
        assert_eq!(kinds[0].unlisted, 12);
        assert_eq!(kinds[1].count, 1);
        let row = NoteRow::of(&note(5, "line skipped: not an NCCL line: \"a\\tb\\0\""));
        assert_eq!(row.text.as_deref(), Some("a\tb\0"));
        assert_eq!(row.text_shown(), "a\u{2409}b\u{2400}");
        assert_eq!(NoteRow::of(&note(0, "whole file")).line_shown(), "");
    }

    #[test]
    fn list_window_covers_the_box_and_reaches_the_end() {
        // Short enough for a box: rows at their places, a margin around.
        let w = list_window(1000, 220.0, 440.0, 22.0);
        assert_eq!(
            (w.first, w.last),
            (10 - LIST_OVERSCAN, 10 + 21 + LIST_OVERSCAN)
        );
        assert_eq!(w.pad_top, w.first as f64 * 22.0);
        assert_eq!(
            w.pad_top + (w.last - w.first) as f64 * 22.0 + w.pad_bottom,
            22_000.0
        );
        let end = list_window(1000, 22_000.0 - 440.0, 440.0, 22.0);
        assert_eq!(end.last, 1000);
        // Ten million rows: the box stays MAX_LIST_PX tall; wherever it is scrolled the rows
        // rendered cover what it shows, and its end shows the last row.
        for scroll in [
            0.0,
            1.0,
            123_456.7,
            MAX_LIST_PX / 2.0,
            MAX_LIST_PX - 441.0,
            MAX_LIST_PX - 440.0,
        ] {
            let w = list_window(10_000_000, scroll, 440.0, 22.0);
            let block = (w.last - w.first) as f64 * 22.0;
            assert!(
                w.pad_top <= scroll && w.pad_top + block >= scroll + 440.0,
                "{w:?}"
            );
            assert!(
                (w.pad_top + block + w.pad_bottom - MAX_LIST_PX).abs() < 1e-6,
                "{w:?}"
            );
        }
        assert_eq!(list_window(10_000_000, 0.0, 440.0, 22.0).first, 0);
        assert_eq!(
            list_window(10_000_000, MAX_LIST_PX - 440.0, 440.0, 22.0).last,
            10_000_000
        );
        assert_eq!(
            list_window(0, 100.0, 440.0, 22.0),
            ListWindow {
                first: 0,
                last: 0,
                pad_top: 0.0,
                pad_bottom: 0.0
            }
        );
    }
}
