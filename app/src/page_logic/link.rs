//! Shareable links: the view in the URL fragment, which browsers never send to a server.
//!
//! A link carries the timeline's time window, the theory form's values, and the name, size and
//! SHA-256 of every input file. The recipient's page asks for those files; once they are dropped
//! (under any name) their fingerprints are checked and the view restored.
//!
//! The fragment is untrusted text: [`decode`] bounds its length and every field, accepts only
//! well-formed values, ignores keys it does not know, and returns an error for anything else.
//! What it returns is plain data; the page shows it as text, never as markup.
//!
//! Format (`&`-separated, values percent-encoded, order free):
//! `v=1&w=START_NS_END_NS&s=RANK*COMM*OPCOUNT&q=FILTER&c=o&p=PANEL&f=NAME*SIZE*SHA256&t=FIELD*VALUE&sum=SUMMARY&k=KERNEL&src=URL,URL`
//! (`q` the timeline's filter query as typed, `c=o` the original clocks, `p` the panel open,
//! `pt=MODE*CELLS*PARALLELISM*OP*PICK` the Patterns view's state: [`super::patterns_state`])
//! with `f` and `t` repeated; `#src=URL[,URL...]` alone is a link too. A link to a comparison
//! (the Compare view, issue 35) names the other run's files too: `bf=NAME*SIZE*SHA256`, repeated
//! like `f`; `f` stays the loaded run's. `SUMMARY` is a self-contained
//! window aggregate, `KERNEL` a picked kernel's details; both JSON, deflated, base64url.
//! `dx=DIAGNOSIS` carries the diagnosis's findings (packed the same way, see [`SharedDiagnosis`]),
//! so that a bug report's link holds the finding itself.

pub use crate::protocol::messages::LinkFile;
use analyses::{KernelDetails, WindowSummary};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write};

use super::pct::{pct, shorten, unpct};

/// The fragment's format version.
const VERSION: &str = "1";
/// The longest fragment accepted (a link with this many files is already unwieldy).
pub const MAX_FRAGMENT_BYTES: usize = 64 * 1024;
const MAX_FILES: usize = 4096;
const MAX_NAME_BYTES: usize = 512;
const MAX_VALUE_BYTES: usize = 256;
const MAX_URL_BYTES: usize = 2048;
/// The longest `sum=` value (compressed, base64url).
pub const MAX_SUMMARY_BYTES: usize = 32 * 1024;
const MAX_SUMMARY_JSON_BYTES: usize = 4 << 20;
/// The longest filter query (the timeline filter's `MAX_QUERY_BYTES`).
const MAX_FILTER_BYTES: usize = 4096;
/// The page's Content-Security-Policy admits this many source origins (`www/index.html`).
pub const MAX_SOURCES: usize = 16;

/// What a self-contained link tells about a picked kernel: its details (log lines with file
/// and line, the collective on every rank) and its enriched fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedKernel {
    pub details: KernelDetails,
    pub fields: Vec<(String, String)>,
}

/// A selected kernel, by what identifies it across loads: the global rank, the logical
/// communicator's id and the opCount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    pub rank: u32,
    pub comm: String,
    pub op_count: u64,
}

/// The view a link restores.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewLink {
    /// The timeline's visible window, in trace nanoseconds.
    pub window: Option<(i64, i64)>,
    /// Theory form fields (`section.key` → value), only fields the form knows.
    pub theory: BTreeMap<String, String>,
    pub files: Vec<LinkFile>,
    /// `src=`: URLs to load the inputs from (the user's own artifact store; fetched only after
    /// the user confirms the hosts). A fragment may be `#src=URL[,URL...]` alone.
    pub sources: Vec<String>,
    /// `s=`: the selected kernel, as the collective instance it ran on one rank.
    pub selection: Option<Selection>,
    /// `k=`: a self-contained copy of a picked kernel's details, compressed like `sum=`.
    pub kernel: Option<SharedKernel>,
    /// `sum=`: a self-contained summary (a time window's aggregate), compressed; a recipient
    /// sees it without any file.
    pub summary: Option<WindowSummary>,
    /// `q=`: the timeline's filter query, as typed (read by `timeline::Filter` in the worker).
    pub filter: Option<String>,
    /// `c=o`: the timeline in each rank's original clock, not synchronised.
    pub original_clock: bool,
    /// `p=`: the panel the sender had open (a panel id: lower-case letters and `-`).
    pub panel: Option<String>,
    /// `st=`: the Steps view's state (θ, mapping edits, the step and rank picked).
    pub steps: Option<crate::page_logic::steps_link::StepsView>,
    /// `bf=`: the other run's files, when the link is to a comparison of two runs (`files`
    /// are the loaded run's). At most [`MAX_FILES`] of both together.
    pub other_files: Vec<LinkFile>,
    /// `pt=`: the Patterns view's state (mode, filter, cells, pick), when not the default
    /// ([`super::patterns_state`] has its format).
    pub patterns: Option<super::patterns_state::PatternsState>,
    /// `dx=`: the diagnosis's findings, compressed like `sum=` (see [`SharedDiagnosis`]).
    pub diagnosis: Option<SharedDiagnosis>,
}

/// The fragment (without `#`) for `link`.
pub fn encode(link: &ViewLink) -> String {
    let mut parts = vec![format!("v={VERSION}")];
    if let Some((a, b)) = link.window {
        parts.push(format!("w={a}_{b}"));
    }
    for f in &link.files {
        parts.push(format!("f={}*{}*{}", pct(&f.name), f.size, f.sha256));
    }
    for f in &link.other_files {
        parts.push(format!("bf={}*{}*{}", pct(&f.name), f.size, f.sha256));
    }
    for (k, v) in &link.theory {
        parts.push(format!("t={}*{}", pct(k), pct(v)));
    }
    if let Some(q) = link.filter.as_ref().filter(|q| !q.is_empty()) {
        parts.push(format!("q={}", pct(q)));
    }
    if link.original_clock {
        parts.push("c=o".into());
    }
    if let Some(p) = &link.panel {
        parts.push(format!("p={}", pct(p)));
    }
    if let Some(sel) = &link.selection {
        parts.push(format!(
            "s={}*{}*{:x}",
            sel.rank,
            pct(&sel.comm),
            sel.op_count
        ));
    }
    if let Some(pt) = link.patterns.as_ref().filter(|p| !p.is_default()) {
        parts.push(format!("pt={}", super::patterns_state::encode(pt)));
    }
    if let Some(packed) = link.summary.as_ref().and_then(|w| pack_summary(w).ok()) {
        parts.push(format!("sum={packed}"));
    }
    if let Some(packed) = link.kernel.as_ref().and_then(|k| pack_kernel(k).ok()) {
        parts.push(format!("k={packed}"));
    }
    if let Some(st) = link.steps.as_ref().filter(|st| !st.is_default()) {
        parts.push(format!("st={}", crate::page_logic::steps_link::encode(st)));
    }
    if let Some(packed) = link.diagnosis.as_ref().and_then(|d| pack_diagnosis(d).ok()) {
        parts.push(format!("dx={packed}"));
    }
    if !link.sources.is_empty() {
        let urls: Vec<String> = link.sources.iter().map(|u| pct(u)).collect();
        parts.push(format!("src={}", urls.join(",")));
    }
    parts.join("&")
}

/// Reads a fragment (with or without its `#`). `known_field` says which theory fields exist.
pub fn decode(fragment: &str, known_field: impl Fn(&str) -> bool) -> Result<ViewLink, String> {
    let fragment = fragment.strip_prefix('#').unwrap_or(fragment);
    if fragment.len() > MAX_FRAGMENT_BYTES {
        return Err(format!(
            "the link's fragment is {} bytes, more than the {MAX_FRAGMENT_BYTES} accepted",
            fragment.len()
        ));
    }
    let mut link = ViewLink::default();
    let mut version = None;
    for part in fragment.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("“{}” is not key=value", shorten(part)))?;
        match key {
            "v" => version = Some(value),
            "w" => link.window = Some(window(value)?),
            "f" | "bf" => {
                if link.files.len() + link.other_files.len() == MAX_FILES {
                    return Err(format!("more than {MAX_FILES} files"));
                }
                let list = match key {
                    "f" => &mut link.files,
                    _ => &mut link.other_files,
                };
                list.push(file(value)?);
            }
            "t" => {
                let (k, v) = value
                    .split_once('*')
                    .ok_or_else(|| format!("theory value “{}” has no field", shorten(value)))?;
                let (k, v) = (unpct(k, MAX_VALUE_BYTES)?, unpct(v, MAX_VALUE_BYTES)?);
                if known_field(&k) {
                    link.theory.insert(k, v);
                }
            }
            "src" => {
                for url in value.split(',').filter(|u| !u.is_empty()) {
                    if link.sources.len() == MAX_SOURCES {
                        return Err(format!("more than {MAX_SOURCES} source URLs"));
                    }
                    link.sources.push(source(url)?);
                }
            }
            "sum" => link.summary = Some(unpack(value)?),
            "k" => link.kernel = Some(unpack(value)?),
            "s" => link.selection = Some(selection(value)?),
            "q" => link.filter = Some(unpct(value, MAX_FILTER_BYTES)?),
            "c" => match value {
                "o" => link.original_clock = true,
                "s" => link.original_clock = false,
                _ => return Err(format!("clock “{}” is not o or s", shorten(value))),
            },
            "p" => link.panel = Some(panel(value)?),
            "pt" => link.patterns = Some(super::patterns_state::decode(value)?),
            "st" => link.steps = Some(crate::page_logic::steps_link::decode(value)?),
            "dx" => link.diagnosis = Some(unpack_diagnosis(value)?),
            // Keys of later versions (or of other tools) are not ours to refuse.
            _ => {}
        }
    }
    match version {
        Some(VERSION) => Ok(link),
        // `#src=URL,...` written by hand.
        None if !link.sources.is_empty() => Ok(link),
        Some(v) => Err(format!(
            "the link is of format version “{}”; this page reads version {VERSION}",
            shorten(v)
        )),
        None => Err("the fragment is not an ncclscope link (no v=)".into()),
    }
}

/// A summary as a fragment value: JSON, deflated, base64url. Errors when the result is longer
/// than [`MAX_SUMMARY_BYTES`] (the message says what to do instead).
pub fn pack_summary(w: &WindowSummary) -> Result<String, String> {
    pack(w, "narrow the time window")
}

/// A picked kernel (its details and enriched fields) as a fragment value, like [`pack_summary`].
pub fn pack_kernel(k: &SharedKernel) -> Result<String, String> {
    pack(k, "pick a kernel of a smaller collective")
}

fn pack<T: Serialize>(value: &T, instead: &str) -> Result<String, String> {
    let json = serde_json::to_vec(value).map_err(|e| e.to_string())?;
    let mut z = DeflateEncoder::new(Vec::new(), Compression::best());
    z.write_all(&json).map_err(|e| e.to_string())?;
    let packed = URL_SAFE_NO_PAD.encode(z.finish().map_err(|e| e.to_string())?);
    if packed.len() > MAX_SUMMARY_BYTES {
        return Err(format!(
            "the summary is {} KB compressed, more than the {} KB a link can carry: {instead}, \
             or share a link to the view (the recipient drops the files)",
            packed.len() / 1024,
            MAX_SUMMARY_BYTES / 1024
        ));
    }
    Ok(packed)
}

/// Reads a packed value, bounding the decompressed size (a small value must not inflate into a
/// huge one).
fn unpack<T: DeserializeOwned>(value: &str) -> Result<T, String> {
    if value.len() > MAX_SUMMARY_BYTES {
        return Err("the link's summary is too long".into());
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(value)
        .map_err(|_| "the link's summary is not base64url".to_string())?;
    let mut json = Vec::new();
    DeflateDecoder::new(&bytes[..])
        .take(MAX_SUMMARY_JSON_BYTES as u64 + 1)
        .read_to_end(&mut json)
        .map_err(|_| "the link's summary is not deflate data".to_string())?;
    if json.len() > MAX_SUMMARY_JSON_BYTES {
        return Err("the link's summary unpacks to more than 4 MB".into());
    }
    serde_json::from_slice(&json).map_err(|e| format!("the link's summary is malformed: {e}"))
}

/// An `http:`/`https:` URL (checked again by the browser's URL parser before any fetch).
fn source(value: &str) -> Result<String, String> {
    let url = unpct(value, MAX_URL_BYTES)?;
    let lower = url.to_ascii_lowercase();
    let scheme_ok = lower.starts_with("https://") || lower.starts_with("http://");
    if !scheme_ok || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("source “{}” is not an http(s) URL", shorten(&url)));
    }
    Ok(url)
}

fn selection(value: &str) -> Result<Selection, String> {
    let bad = || {
        format!(
            "selection “{}” is not RANK*COMMUNICATOR*OPCOUNT",
            shorten(value)
        )
    };
    let mut it = value.split('*');
    let (Some(rank), Some(comm), Some(oc), None) = (it.next(), it.next(), it.next(), it.next())
    else {
        return Err(bad());
    };
    Ok(Selection {
        rank: rank.parse().map_err(|_| bad())?,
        comm: unpct(comm, MAX_VALUE_BYTES)?,
        op_count: u64::from_str_radix(oc, 16).map_err(|_| bad())?,
    })
}

/// A panel id: short, lower-case letters and `-` (it names an element the page scrolls to).
fn panel(value: &str) -> Result<String, String> {
    let ok = !value.is_empty()
        && value.len() <= 32
        && value.bytes().all(|b| b.is_ascii_lowercase() || b == b'-');
    if !ok {
        return Err(format!("panel “{}” is not a panel name", shorten(value)));
    }
    Ok(value.to_string())
}

fn window(value: &str) -> Result<(i64, i64), String> {
    let bad = || format!("time window “{}” is not START_END in ns", shorten(value));
    let (a, b) = value.split_once('_').ok_or_else(bad)?;
    let (a, b): (i64, i64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a >= b {
        return Err(bad());
    }
    Ok((a, b))
}

fn file(value: &str) -> Result<LinkFile, String> {
    let bad = |why: &str| format!("file “{}”: {why}", shorten(value));
    let mut it = value.split('*');
    let (Some(name), Some(size), Some(sha), None) = (it.next(), it.next(), it.next(), it.next())
    else {
        return Err(bad("expected NAME*SIZE*SHA256"));
    };
    let name = unpct(name, MAX_NAME_BYTES)?;
    if name.is_empty() {
        return Err(bad("empty name"));
    }
    let size = size.parse().map_err(|_| bad("the size is not a number"))?;
    if sha.len() != 64 || !sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(bad("the fingerprint is not 64 lower-case hex digits"));
    }
    Ok(LinkFile {
        name,
        size,
        sha256: sha.to_string(),
    })
}

// The diagnosis a link carries (`dx=`).

/// The most findings a link carries (the most severe; the rest are counted in `left_out`).
pub const MAX_SHARED_FINDINGS: usize = 24;
/// The most evidence lines a finding carries in a link.
pub const MAX_SHARED_EVIDENCE: usize = 3;
/// The longest finding sentence and evidence text a link carries, in characters.
const MAX_SHARED_MESSAGE_CHARS: usize = 600;
const MAX_SHARED_TEXT_CHARS: usize = 300;
/// What `dx=` may take of a fragment, at most (the rest of a link must still fit).
pub const MAX_DIAGNOSIS_BYTES: usize = 16 * 1024;

/// The diagnosis as a link carries it: the most severe findings, each with its severity, kind,
/// ranks, sentence and evidence lines (file, line and, when known, the line's text), and how
/// many findings were left out to keep the link short.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SharedDiagnosis {
    pub findings: Vec<SharedFinding>,
    /// Findings of the diagnosis not carried (beyond [`MAX_SHARED_FINDINGS`] or the link's room).
    #[serde(default)]
    pub left_out: u32,
    /// How the first error was told (the diagnosis's `first_error.how`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error_how: Option<String>,
}

/// One finding in a link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedFinding {
    pub kind: analyses::diagnosis::Kind,
    pub severity: analyses::diagnosis::Severity,
    #[serde(default)]
    pub ranks: Vec<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub communicator: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op_count: Option<String>,
    pub message: String,
    #[serde(default)]
    pub evidence: Vec<analyses::diagnosis::Evidence>,
    /// The first error in time across all ranks.
    #[serde(default)]
    pub first: bool,
}

impl SharedDiagnosis {
    /// The findings of `d` a link carries: the first [`MAX_SHARED_FINDINGS`], each with at most
    /// [`MAX_SHARED_EVIDENCE`] evidence lines, sentences and texts clipped. `None` without
    /// findings.
    pub fn of(d: &analyses::diagnosis::Diagnosis) -> Option<SharedDiagnosis> {
        use analyses::diagnosis::clip_text;
        if d.findings.is_empty() {
            return None;
        }
        let findings: Vec<SharedFinding> = d
            .findings
            .iter()
            .take(MAX_SHARED_FINDINGS)
            .map(|f| SharedFinding {
                kind: f.kind,
                severity: f.severity,
                ranks: f.ranks.iter().copied().take(64).collect(),
                communicator: f.communicator.as_ref().map(|c| clip_text(c, 64)),
                op_count: f.op_count.as_ref().map(|c| clip_text(c, 32)),
                message: clip_text(&f.message, MAX_SHARED_MESSAGE_CHARS),
                evidence: f
                    .evidence
                    .iter()
                    .take(MAX_SHARED_EVIDENCE)
                    .map(|e| analyses::diagnosis::Evidence {
                        path: clip_text(&e.path, MAX_NAME_BYTES / 4),
                        line: e.line,
                        text: e.text.as_ref().map(|t| clip_text(t, MAX_SHARED_TEXT_CHARS)),
                    })
                    .collect(),
                first: f.first,
            })
            .collect();
        Some(SharedDiagnosis {
            left_out: (d.findings.len() - findings.len()) as u32,
            findings,
            first_error_how: d
                .first_error
                .as_ref()
                .map(|e| clip_text(&e.how, MAX_SHARED_MESSAGE_CHARS)),
        })
    }

    /// The findings as a diagnosis, to be shown as the page shows its own (with nothing of
    /// where members stopped: a link does not carry that).
    pub fn to_diagnosis(&self) -> analyses::diagnosis::Diagnosis {
        use analyses::diagnosis::{Finding, FirstError};
        let findings: Vec<Finding> = self
            .findings
            .iter()
            .map(|f| Finding {
                kind: f.kind,
                severity: f.severity,
                communicator: f.communicator.clone(),
                op_count: f.op_count.clone(),
                ranks: f.ranks.clone(),
                processes: Vec::new(),
                message: f.message.clone(),
                evidence: f.evidence.clone(),
                class: None,
                first: f.first,
                time_base: None,
                grouped_by: None,
                peer_ranks: Vec::new(),
                time: None,
            })
            .collect();
        let first_error = self.first_error_how.as_ref().map(|how| FirstError {
            finding: findings.iter().position(|f| f.first),
            how: how.clone(),
            time_base: None,
        });
        analyses::diagnosis::Diagnosis {
            findings,
            stopped: Vec::new(),
            first_error,
        }
    }

    /// Drops the least severe findings (counting them in `left_out`) until the packed value
    /// takes at most `room` bytes; `None` when not even one finding fits.
    pub fn fit(mut self, room: usize) -> Option<SharedDiagnosis> {
        let room = room.min(MAX_DIAGNOSIS_BYTES);
        loop {
            match pack_diagnosis(&self) {
                Ok(p) if p.len() <= room => return Some(self),
                _ if self.findings.len() <= 1 => return None,
                _ => {
                    let keep = self.findings.len() / 2;
                    self.left_out += (self.findings.len() - keep) as u32;
                    self.findings.truncate(keep);
                }
            }
        }
    }
}

/// The findings as a fragment value: JSON, deflated, base64url.
pub fn pack_diagnosis(d: &SharedDiagnosis) -> Result<String, String> {
    pack(d, "share fewer findings")
}

/// `link` with `diagnosis` added, as much of it as the fragment has room for (the least severe
/// findings are left out first, and counted).
pub fn with_diagnosis(link: ViewLink, diagnosis: Option<SharedDiagnosis>) -> ViewLink {
    let room = MAX_FRAGMENT_BYTES.saturating_sub(encode(&link).len() + "&dx=".len());
    ViewLink {
        diagnosis: diagnosis.and_then(|d| d.fit(room)),
        ..link
    }
}

/// Reads a `dx=` value: bounded like `sum=`, then every count and text checked.
fn unpack_diagnosis(value: &str) -> Result<SharedDiagnosis, String> {
    if value.len() > MAX_DIAGNOSIS_BYTES {
        return Err("the link's diagnosis is too long".into());
    }
    let d: SharedDiagnosis = unpack(value).map_err(|e| e.replace("summary", "diagnosis"))?;
    let too_long = |s: &str, max: usize| s.chars().count() > max + 1;
    let bad = d.findings.len() > MAX_SHARED_FINDINGS
        || d.first_error_how
            .as_ref()
            .is_some_and(|h| too_long(h, MAX_SHARED_MESSAGE_CHARS))
        || d.findings.iter().any(|f| {
            too_long(&f.message, MAX_SHARED_MESSAGE_CHARS)
                || f.ranks.len() > 64
                || f.evidence.len() > MAX_SHARED_EVIDENCE
                || f.evidence.iter().any(|e| {
                    too_long(&e.path, MAX_NAME_BYTES)
                        || e.text
                            .as_ref()
                            .is_some_and(|t| too_long(t, MAX_SHARED_TEXT_CHARS))
                })
        });
    if bad {
        return Err(
            "the link's diagnosis holds more findings or longer texts than a link carries".into(),
        );
    }
    Ok(d)
}

/// How dropped files answer a link's list: names and sizes may differ, fingerprints may not.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verification {
    /// The link's files whose fingerprint no loaded file has.
    pub missing: Vec<LinkFile>,
    /// Loaded files the link does not name.
    pub extra: Vec<LinkFile>,
}

impl Verification {
    pub fn complete(&self) -> bool {
        self.missing.is_empty()
    }
}

/// Compares the link's files with the loaded ones by fingerprint.
pub fn verify(expected: &[LinkFile], loaded: &[LinkFile]) -> Verification {
    let has = |list: &[LinkFile], f: &LinkFile| list.iter().any(|g| g.sha256 == f.sha256);
    Verification {
        missing: expected
            .iter()
            .filter(|f| !has(loaded, f))
            .cloned()
            .collect(),
        extra: loaded
            .iter()
            .filter(|f| !has(expected, f))
            .cloned()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(c: char) -> String {
        std::iter::repeat_n(c, 64).collect()
    }

    fn any_field(_: &str) -> bool {
        true
    }

    #[test]
    fn round_trips_a_view() {
        let link = ViewLink {
            window: Some((-5, 1_700_000_000_123)),
            theory: [
                ("model.layers".to_string(), "16".to_string()),
                ("ui.hardware".to_string(), "a100 & <nvlink>".to_string()),
            ]
            .into(),
            files: vec![
                LinkFile {
                    name: "nccl debug (node 1)*.log".into(),
                    size: 12,
                    sha256: sha('a'),
                },
                LinkFile {
                    name: "réport_&=#%.sqlite".into(),
                    size: 0,
                    sha256: sha('0'),
                },
            ],
            sources: Vec::new(),
            summary: None,
            filter: None,
            original_clock: false,
            panel: None,
            steps: None,
            other_files: Vec::new(),
            patterns: None,
            diagnosis: None,
            selection: Some(Selection {
                rank: 7,
                comm: "0x9f3c*&".into(),
                op_count: 0x1a2b,
            }),
            kernel: Some(SharedKernel {
                details: KernelDetails {
                    rank: 1,
                    host: "node<01>".into(),
                    pid: 42,
                    device: 3,
                    kernel_index: 9,
                    kernel_name: "ncclDevKernel_AllReduce_Sum_f32_RING_LL".into(),
                    stream: 7,
                    correlation_id: 1234,
                    grid: [2, 1, 1],
                    block: [512, 1, 1],
                    start_ns: 10,
                    end_ns: 20,
                    own_start_ns: 5_000_000_010,
                    own_end_ns: 5_000_000_020,
                    lines: vec![analyses::LineDetails {
                        op: "AllReduce".into(),
                        comm: "0x55f4294ab180".into(),
                        op_count: 0x13,
                        count: 1,
                        datatype: "float32".into(),
                        file: "nccl_debug_combined.log".into(),
                        line: 1234,
                    }],
                    duplicates: 0,
                    confidence: Some(0.97),
                    instance: Some(analyses::InstanceDetails {
                        comm_id: "0xabc".into(),
                        comm_size: 8,
                        op_count: 0x13,
                        members: vec![analyses::MemberTiming {
                            rank: 1,
                            start_ns: 10,
                            end_ns: 20,
                        }],
                        arrival_skew_ns: 0,
                        slowest_rank: 1,
                    }),
                },
                fields: vec![("Bus BW (GB/s)".into(), "12.5".into())],
            }),
        };
        let link = ViewLink {
            filter: Some("op:allreduce,p2p size:>=1MiB -rank:0-3 <b>&".into()),
            original_clock: true,
            panel: Some("bandwidth".into()),
            patterns: Some(super::super::patterns_state::PatternsState {
                mode: super::super::patterns_state::Mode::Difference,
                cells: super::super::patterns_state::Cells::Nodes,
                parallelism: Some("TP".into()),
                op: Some("AllReduce".into()),
                picked: Some((3, 12)),
            }),
            sources: vec![
                "https://store.example/run%201/a.log?x=1&y=2".into(),
                "http://127.0.0.1:9/b,c.sqlite".into(),
            ],
            ..link
        };
        let text = encode(&link);
        assert!(!text.contains(' ') && !text.contains('#') && !text.contains('<'));
        assert_eq!(decode(&format!("#{text}"), any_field).unwrap(), link);
    }

    fn summary(ranks: usize) -> WindowSummary {
        let row = |key: String, n: u64| analyses::WindowRow {
            key,
            kernels: n,
            bytes: n * 4_194_304 + 7,
            busy_ns: n as i64 * 12_345,
        };
        WindowSummary {
            start_ns: 1_000,
            end_ns: 9_000_000,
            per_op: vec![
                row("AllReduce".into(), 40),
                row("<b>SendRecv</b>".into(), 3),
            ],
            per_rank: (0..ranks)
                .map(|r| row(format!("rank {r}"), r as u64))
                .collect(),
            unmatched_kernels: 2,
        }
    }

    #[test]
    fn a_summary_travels_in_the_fragment() {
        let link = ViewLink {
            summary: Some(summary(64)),
            ..ViewLink::default()
        };
        let text = encode(&link);
        assert!(text.len() < 4096, "64 ranks fit in {} bytes", text.len());
        assert_eq!(decode(&text, any_field).unwrap(), link);
        // Too big for a link: a clear message, not a cut.
        let err = pack_summary(&WindowSummary {
            per_rank: (0..100_000)
                .map(|r| analyses::WindowRow {
                    key: format!("rank {r} {}", r * 7919 % 10007),
                    kernels: r * 31 % 977,
                    bytes: r * 104_729 % 1_000_003,
                    busy_ns: (r * 7 % 13) as i64,
                })
                .collect(),
            ..summary(0)
        })
        .unwrap_err();
        assert!(err.contains("narrow the"), "{err}");
        // Garbage and bombs are errors.
        for bad in ["v=1&sum=!!!", "v=1&sum=AAAA", "v=1&sum=eJzLSM3JyQcABiwCFQ"] {
            assert!(decode(bad, any_field).is_err(), "{bad}");
        }
        let zeros = {
            let mut z = DeflateEncoder::new(Vec::new(), Compression::best());
            z.write_all(&vec![b' '; (4 << 20) + 1024]).unwrap();
            URL_SAFE_NO_PAD.encode(z.finish().unwrap())
        };
        let e = decode(&format!("v=1&sum={zeros}"), any_field).unwrap_err();
        assert!(e.contains("4 MB"), "{e}");
    }

    #[test]
    fn a_hand_written_src_list_is_a_link() {
        let l = decode(
            "#src=https://a.example/x.log,http://127.0.0.1:8000/y.sqlite",
            any_field,
        )
        .unwrap();
        assert_eq!(
            l.sources,
            ["https://a.example/x.log", "http://127.0.0.1:8000/y.sqlite"]
        );
        for bad in [
            "src=javascript:alert(1)",
            "src=file:///etc/passwd",
            "src=https://a.example/x%20y%0A",
            "src=data:text/html,x",
        ] {
            assert!(decode(bad, any_field).is_err(), "{bad}");
        }
        let many = format!("src={}", ["https://a.example/f"; MAX_SOURCES + 1].join(","));
        assert!(decode(&many, any_field).is_err());
    }

    #[test]
    fn unknown_theory_fields_and_keys_are_ignored() {
        let l = decode("v=1&t=model.layers*4&t=evil*1&later=x", |f| {
            f == "model.layers"
        })
        .unwrap();
        assert_eq!(l.theory.len(), 1);
        assert_eq!(l.theory["model.layers"], "4");
    }

    #[test]
    fn the_steps_views_state_travels_in_the_link() {
        use crate::page_logic::steps_link::{StepsAsk, StepsView};
        let steps = StepsView {
            ask: StepsAsk {
                theta: Some(0.75),
                step_patterns: vec!["train step *".into()],
                stage_patterns: vec![("forward".into(), "fwd&*".into())],
            },
            step: Some(3),
            rank: Some(1),
        };
        let link = ViewLink {
            files: vec![LinkFile {
                name: "a.log".into(),
                size: 1,
                sha256: sha('d'),
            }],
            panel: Some("steps".into()),
            steps: Some(steps.clone()),
            ..ViewLink::default()
        };
        let text = encode(&link);
        assert!(text.contains("&st="), "{text}");
        assert_eq!(decode(&text, any_field).unwrap(), link);
        // Nothing set: no key.
        let plain = ViewLink {
            steps: Some(StepsView::default()),
            ..ViewLink::default()
        };
        assert!(!encode(&plain).contains("st="));
    }

    #[test]
    fn hostile_fragments_are_errors_not_panics() {
        let long = format!("v=1&f={}", "A".repeat(MAX_FRAGMENT_BYTES));
        let many = format!(
            "v=1{}",
            format!("&f=a*1*{}", sha('b')).repeat(MAX_FILES + 1)
        );
        let cases = [
            "",
            "#",
            "v=2",
            "nonsense",
            "v=1&w=5_5",
            "v=1&w=1_x",
            "v=1&w=99999999999999999999_1",
            "v=1&f=a*1",
            "v=1&f=a*1*XYZ",
            "v=1&f=%3Cscript%3E*1*0123",
            "v=1&f=a*-1*0000000000000000000000000000000000000000000000000000000000000000",
            "v=1&f=*1*0000000000000000000000000000000000000000000000000000000000000000",
            "v=1&t=model.layers*%ZZ",
            "v=1&t=model.layers*%",
            "v=1&t=model.layers*%FF%FE",
            "v=1&t=nostar",
            "v=1&s=1*0xab",
            "v=1&s=x*0xab*1",
            "v=1&s=1*0xab*zz",
            "v=1&c=x",
            "v=1&p=%3Cscript%3E",
            "v=1&p=Ranks",
            "v=1&q=%ZZ",
            "v=1&pt=d*n*TP*AllReduce",
            "v=1&pt=q*a***",
            "v=1&pt=d*a*%3Cb%3E**",
            "v=1&st=th:2",
            "v=1&st=zz:1",
            "v=1&st=gp:%3Cb%3E",
            long.as_str(),
            many.as_str(),
        ];
        for c in cases {
            assert!(decode(c, any_field).is_err(), "{c:.80}");
        }
        // Markup in names and values survives as text, to be shown as text.
        let l = decode(
            &format!(
                "v=1&f=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E*3*{}",
                sha('c')
            ),
            any_field,
        )
        .unwrap();
        assert_eq!(l.files[0].name, "<img src=x onerror=alert(1)>");
    }

    #[test]
    fn a_comparison_link_names_both_runs_files() {
        let f = |name: &str, c: char| LinkFile {
            name: name.into(),
            size: 7,
            sha256: sha(c),
        };
        let link = ViewLink {
            files: vec![f("base/rank0.log", '1'), f("base/node0.sqlite", '2')],
            other_files: vec![f("new/rank0 & <b>.log", '3')],
            panel: Some("compare".into()),
            ..ViewLink::default()
        };
        let text = encode(&link);
        assert!(
            text.contains("&bf=new%2Frank0%20%26%20%3Cb%3E.log*7*"),
            "{text}"
        );
        let back = decode(&text, any_field).unwrap();
        assert_eq!(back, link);
        // A link without `bf=` is one run's, as before.
        let one = decode(&format!("v=1&f=a*1*{}", sha('4')), any_field).unwrap();
        assert!(one.other_files.is_empty());
        // Bounded like `f=` (a name's length, the fragment's); malformed entries are errors.
        let long_name = format!("v=1&bf={}*1*{}", "n".repeat(MAX_NAME_BYTES + 1), sha('c'));
        let many = format!("v=1{}", format!("&bf=a*1*{}", sha('c')).repeat(1000));
        for bad in [
            "v=1&bf=a*1",
            "v=1&bf=*1*0123",
            "v=1&bf=a*x*0123",
            long_name.as_str(),
            many.as_str(),
        ] {
            assert!(decode(bad, any_field).is_err(), "{bad:.80}");
        }
    }

    #[test]
    fn verification_goes_by_fingerprint_not_name() {
        let f = |name: &str, c: char| LinkFile {
            name: name.into(),
            size: 1,
            sha256: sha(c),
        };
        let v = verify(
            &[f("a.log", '1'), f("b.sqlite", '2')],
            &[f("renamed.log", '1')],
        );
        assert!(!v.complete());
        assert_eq!(v.missing, vec![f("b.sqlite", '2')]);
        let v = verify(&[f("a.log", '1')], &[f("x", '1'), f("y", '3')]);
        assert!(v.complete());
        assert_eq!(v.extra, vec![f("y", '3')]);
    }
}

#[cfg(test)]
mod diagnosis_tests {
    use super::*;
    use analyses::diagnosis::{Diagnosis, Evidence, Finding, FirstError, Kind, Severity};

    fn finding(i: usize, severity: Severity) -> Finding {
        Finding {
            kind: if i == 0 { Kind::Behind } else { Kind::Error },
            severity,
            communicator: Some("0x7f3a<b>".into()),
            op_count: Some("1c".into()),
            ranks: vec![i as u32, 3],
            processes: Vec::new(),
            message: format!("Rank {i} stopped <script>alert({i})</script> & the others wait."),
            evidence: (0..5)
                .map(|l| Evidence {
                    path: format!("logs/rank {i}.log"),
                    line: 100 + l,
                    text: Some(format!(
                        "node{i}:{l} [0] NCCL WARN \"quoted\" <b>{}</b>",
                        noise(i as u64 * 8 + l, 50 + i * 37 % 200)
                    )),
                })
                .collect(),
            class: None,
            first: i == 1,
            time_base: None,
            grouped_by: None,
            peer_ranks: Vec::new(),
            time: None,
        }
    }

    /// `n` hex digits that do not compress much (as real log lines do not).
    fn noise(seed: u64, n: usize) -> String {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from_digit((x % 16) as u32, 16).unwrap()
            })
            .collect()
    }

    fn diagnosis(n: usize) -> Diagnosis {
        Diagnosis {
            findings: (0..n)
                .map(|i| {
                    finding(
                        i,
                        if i < 2 {
                            Severity::Critical
                        } else {
                            Severity::Info
                        },
                    )
                })
                .collect(),
            stopped: Vec::new(),
            first_error: Some(FirstError {
                finding: Some(1),
                how: "by the ranks' synchronised clocks".into(),
                time_base: Some("synchronised".into()),
            }),
        }
    }

    #[test]
    fn findings_round_trip_in_the_fragment() {
        let shared = SharedDiagnosis::of(&diagnosis(3)).expect("findings");
        assert_eq!(shared.findings.len(), 3);
        assert_eq!(shared.left_out, 0);
        assert!(shared
            .findings
            .iter()
            .all(|f| f.evidence.len() == MAX_SHARED_EVIDENCE));
        let link = with_diagnosis(ViewLink::default(), Some(shared.clone()));
        assert_eq!(link.diagnosis.as_ref(), Some(&shared));
        let text = encode(&link);
        assert!(text.contains("&dx=") && !text.contains('<'), "{text:.120}");
        let back = decode(&text, |_| true).unwrap();
        assert_eq!(back, link);
        // Markup stays text: the sentence is the one the diagnosis wrote.
        assert!(back.diagnosis.unwrap().findings[0]
            .message
            .contains("<script>"));
        // Shown as the page shows its own: the same sentences, the first error marked.
        let shown = shared.to_diagnosis();
        let original = diagnosis(3);
        for (a, b) in shown.findings.iter().zip(&original.findings) {
            assert_eq!(
                (a.kind, a.severity, &a.message, a.first),
                (b.kind, b.severity, &b.message, b.first)
            );
            assert_eq!(a.evidence[..], b.evidence[..MAX_SHARED_EVIDENCE]);
        }
        assert_eq!(shown.first_error.unwrap().finding, Some(1));
        // No findings, no key.
        assert_eq!(SharedDiagnosis::of(&diagnosis(0)), None);
        assert!(!encode(&with_diagnosis(ViewLink::default(), None)).contains("dx="));
    }

    #[test]
    fn many_findings_are_capped_and_counted() {
        let shared = SharedDiagnosis::of(&diagnosis(500)).unwrap();
        assert_eq!(shared.findings.len(), MAX_SHARED_FINDINGS);
        assert_eq!(shared.left_out as usize, 500 - MAX_SHARED_FINDINGS);
        // A fragment already nearly full: the least severe go first, and are counted.
        let files: Vec<LinkFile> = (0..560)
            .map(|i| LinkFile {
                name: format!("rank-{i:05}-of-a-long-run-name.log"),
                size: i,
                sha256: format!("{:064x}", i * 7919),
            })
            .collect();
        let base = ViewLink {
            files,
            ..ViewLink::default()
        };
        let room = MAX_FRAGMENT_BYTES - encode(&base).len();
        let link = with_diagnosis(base, Some(shared));
        let text = encode(&link);
        assert!(text.len() <= MAX_FRAGMENT_BYTES, "{} bytes", text.len());
        let d = link
            .diagnosis
            .unwrap_or_else(|| panic!("some findings fit in {room} bytes"));
        assert!(
            d.findings.len() < MAX_SHARED_FINDINGS,
            "{}",
            d.findings.len()
        );
        assert_eq!(d.findings.len() + d.left_out as usize, 500);
        assert_eq!(d.findings[0].severity, Severity::Critical);
        assert_eq!(decode(&text, |_| true).unwrap().diagnosis, Some(d));
        // No room at all: the link goes without.
        assert_eq!(SharedDiagnosis::of(&diagnosis(3)).unwrap().fit(10), None);
    }

    #[test]
    fn hostile_diagnosis_values_are_errors() {
        let packed = |json: &str| {
            let mut z = DeflateEncoder::new(Vec::new(), Compression::best());
            z.write_all(json.as_bytes()).unwrap();
            format!("v=1&dx={}", URL_SAFE_NO_PAD.encode(z.finish().unwrap()))
        };
        let one = |extra: &str| {
            format!(
                r#"{{"findings":[{{"kind":"error","severity":"critical","message":"m"{extra}}}]}}"#
            )
        };
        let long_evidence = format!(
            r#","evidence":[{{"path":"a","line":1,"text":"{}"}}]"#,
            "x".repeat(5000)
        );
        let too_many = format!(
            r#"{{"findings":[{}]}}"#,
            vec![r#"{"kind":"error","severity":"info","message":"m"}"#; MAX_SHARED_FINDINGS + 1]
                .join(",")
        );
        for bad in [
            "v=1&dx=!!!".to_string(),
            "v=1&dx=AAAA".to_string(),
            packed("not json"),
            packed(r#"{"findings":[{"kind":"meltdown","severity":"critical","message":"m"}]}"#),
            packed(r#"{"findings":[{"kind":"error","severity":"dire","message":"m"}]}"#),
            packed(&one(r#","evidence":[{"path":"a","line":-1}]"#)),
            packed(&one(&long_evidence)),
            packed(&too_many),
            format!("v=1&dx={}", "A".repeat(MAX_DIAGNOSIS_BYTES + 1)),
        ] {
            let e = decode(&bad, |_| true).unwrap_err();
            assert!(e.contains("diagnosis"), "{bad:.60}: {e}");
        }
        // A bomb: a few bytes that inflate past the bound.
        let mut z = DeflateEncoder::new(Vec::new(), Compression::best());
        z.write_all(&vec![b' '; (4 << 20) + 1024]).unwrap();
        let bomb = format!("v=1&dx={}", URL_SAFE_NO_PAD.encode(z.finish().unwrap()));
        assert!(decode(&bomb, |_| true).is_err());
        // A well-formed value from a later version with keys this page does not know reads.
        let later = packed(&one(r#","severity_score":3"#));
        assert_eq!(
            decode(&later, |_| true)
                .unwrap()
                .diagnosis
                .unwrap()
                .findings
                .len(),
            1
        );
    }
}
