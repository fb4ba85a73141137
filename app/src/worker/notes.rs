//! A file's notes, however many there are. The loading worker keeps them ([`NoteStore`], over
//! the session's own parsed logs and exports: nothing is copied) and sends the page the first
//! [`FIRST_PAGE`] with the file's report, a count per reason ([`NoteKind`]), and any further
//! [`PAGE`] of them, of every reason or of one, when the page's list scrolls there; a download of
//! all of them (CSV) is built here too. Portable, tested natively.

use ingest_nccl::split_note;
use load::{LoadedExport, LoadedLog};
use model::Diagnostic;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::protocol::notes::{NotePage, NoteQuery, NoteRow, MAX_PAGE};
use crate::protocol::panels::csv_line;

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

thread_local! {
    /// Every loaded file's notes, by the page's file id, for the pages of its list the page
    /// asks for and for their download.
    static NOTES: std::cell::RefCell<NoteStore> = std::cell::RefCell::new(NoteStore::default());
}

/// `f` with the loading worker's note store.
pub fn with_store<T>(f: impl FnOnce(&mut NoteStore) -> T) -> T {
    NOTES.with(|n| f(&mut n.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::notes::{summarise, summary_line, PAGE};
    use model::Severity;

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
}
