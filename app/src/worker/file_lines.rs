//! The worker's side of evidence lines: the lines of a dropped file around a finding's
//! `file:line` ([`answer`]), and the text of every evidence line of a diagnosis
//! ([`fill_evidence`], so that the finding carries it to a link or a bundle). The file is read
//! here, off the page's thread, in slices from the nearest known line start
//! ([`crate::page_logic::file_lines`]), never whole into memory.

use analyses::diagnosis::Diagnosis;
use js_sys::Uint8Array;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use wasm_bindgen_futures::JsFuture;
use web_sys::Blob;

use crate::page_logic::file_lines::{
    merge_checkpoints, start_for, window, Checkpoint, Collected, LineCollector, LineReader, AROUND,
};
use crate::page_logic::files::{js_msg, read_head};
use crate::protocol::file_lines::{FileLines, FileLinesAsk};

/// Bytes read per slice of a look-up (small: a look-up usually needs one).
const READ_BYTES: f64 = 4.0 * 1024.0 * 1024.0;

thread_local! {
/// Line starts found in each input (by its index among the loaded files) by earlier look-ups.
static CHECKPOINTS: RefCell<BTreeMap<usize, Vec<Checkpoint>>> = const { RefCell::new(BTreeMap::new()) };
}

/// A loaded file by the name the session gives it: its index among the loaded files and its
/// handle (the loading worker's).
pub type Inputs<'a> = &'a dyn Fn(&str) -> Option<(usize, Blob)>;

/// The lines of the file `ask` names around its line.
pub async fn answer(ask: &FileLinesAsk, inputs: Inputs<'_>) -> FileLines {
    let (first, last) = window(ask.line, AROUND);
    let mut out = FileLines {
        path: ask.path.clone(),
        line: ask.line,
        first,
        ..FileLines::default()
    };
    let Some((index, blob)) = inputs(&ask.path) else {
        out.error = Some("the file is not among the loaded files".into());
        return out;
    };
    match read_lines(index, &blob, (first..=last).collect()).await {
        Ok(c) => {
            if !c.lines.contains_key(&ask.line) {
                out.error = Some(format!("the file has fewer than {} lines", ask.line));
            }
            out.first = c.lines.keys().next().copied().unwrap_or(first);
            out.lines = c.lines.into_values().collect();
        }
        Err(e) => out.error = Some(e),
    }
    out
}

/// Fills the text of every evidence line of `d` from the loaded files; whether any was filled.
pub async fn fill_evidence(d: &mut Diagnosis, inputs: Inputs<'_>) -> bool {
    let mut by_file: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for (path, line) in d.evidence_lines() {
        by_file.entry(path).or_default().insert(line);
    }
    let mut texts: BTreeMap<(String, u64), String> = BTreeMap::new();
    for (path, lines) in by_file {
        let Some((index, blob)) = inputs(&path) else {
            continue;
        };
        if let Ok(c) = read_lines(index, &blob, lines).await {
            texts.extend(c.lines.into_iter().map(|(l, t)| ((path.clone(), l), t)));
        }
    }
    if texts.is_empty() {
        return false;
    }
    d.fill_evidence_text(|path, line| texts.get(&(path.to_string(), line)).cloned());
    true
}

/// Reads `wanted` lines of input `index` (`blob`), from the nearest line start known before
/// the first; remembers the line starts passed.
async fn read_lines(index: usize, blob: &Blob, wanted: BTreeSet<u64>) -> Result<Collected, String> {
    let first = wanted.first().copied().unwrap_or(1);
    let head = read_head(blob, 2).await;
    let known = CHECKPOINTS.with(|c| c.borrow().get(&index).cloned().unwrap_or_default());
    let probe = LineReader::new(LineCollector::new([], Checkpoint::START), &head);
    let start = if probe.compressed() {
        Checkpoint::START
    } else {
        start_for(&known, first)
    };
    let mut reader = LineReader::new(LineCollector::new(wanted, start), &head);
    let size = blob.size();
    let mut offset = start.offset as f64;
    while offset < size && !reader.done() {
        let end = (offset + READ_BYTES).min(size);
        let part = blob.slice_with_f64_and_f64(offset, end).map_err(js_msg)?;
        let buffer = JsFuture::from(part.array_buffer()).await.map_err(js_msg)?;
        reader.feed(&Uint8Array::new(&buffer).to_vec())?;
        offset = end;
    }
    let collected = reader.finish();
    CHECKPOINTS.with(|c| {
        merge_checkpoints(
            c.borrow_mut().entry(index).or_default(),
            &collected.checkpoints,
        )
    });
    Ok(collected)
}
