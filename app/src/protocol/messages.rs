//! The messages between the page and its loading worker.
//!
//! Page → worker: a load request, a plain JS object holding the dropped `File`s themselves
//! (structured-cloned, never read on the main thread). Worker → page: `{json, timeline?}`, a
//! small JSON [`ToPage`] and, with the result, the timeline in a compact binary form whose
//! buffer is transferred, not copied.

use analyses::{KernelDetails, WindowSummary};
use js_sys::{Array, Object, Reflect};
use model::OpType;
use serde::{Deserialize, Serialize};
use timeline::{op_byte, Lod, Mark, Marker, MarkerRow, Span, Timeline, Track, LOD_NO_OP};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::Blob;

use crate::link::LinkFile;
use crate::notes::{NotePage, NoteQuery};
use crate::panel_data::Panels;
use crate::theory_panel::TheoryView;
use crate::views::{CommPanel, FileView, RankView};

/// What the worker tells the page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToPage {
    /// The worker's handler is installed: requests posted from now on are received.
    Ready,
    /// The worker's warm-up ([`crate::warm_up`]) ended after `ms` (or was cut short by a
    /// request): benchmarks drop their files after it, as a user would.
    WarmedUp { ms: f64 },
    /// Bytes of file `id` read so far (at most about ten a second per file).
    Progress { id: usize, read: u64 },
    /// File `id` is read and now in a slower stage (sql.js opening or querying an export).
    Stage { id: usize, stage: String },
    /// Every file of the request is loaded; the analysis of the whole session has started.
    Analysing,
    /// File `id` is loaded or has failed; the worker's wasm memory after it, for benchmarks.
    Report {
        id: usize,
        view: FileView,
        worker_memory_bytes: f64,
    },
    /// The analysis over everything loaded so far (the timeline travels beside, in binary).
    Result {
        ranks: Vec<RankView>,
        comms: CommPanel,
        /// Wall time of the analysis over the whole session, for benchmarks.
        analysis_ms: f64,
        /// The worker's wasm memory (it never shrinks: the peak so far), for benchmarks.
        worker_memory_bytes: f64,
        /// Theory form fields the trace tells (`parallel.tp`, `model.iterations`, ...) and
        /// their values.
        inferred: Vec<(String, String)>,
        /// The analysis panels' data (alignment report, warnings, plots, topology); absent from
        /// recordings made before the panels existed.
        #[serde(default)]
        panels: Panels,
        /// What this analysis re-ran, for the status line ("re-aligned 1 of 8 processes; ...");
        /// empty in recordings made before incremental analysis.
        #[serde(default)]
        rerun: String,
        /// The worker's heap after each stage of this load and at its peak in it, for
        /// benchmarks (empty where the heap is not counted).
        #[serde(default)]
        heap: Vec<crate::heap::HeapStage>,
    },
    /// Theory versus observed for the config last asked for (or why the config is unusable).
    Theory {
        view: Option<TheoryView>,
        error: Option<String>,
    },
    /// A download the page asked for (the bytes travel beside, in binary, under `data`).
    Export { file_name: String, mime: String },
    /// A page of a file's notes the page asked for ([`LoadRequest::notes`]).
    Notes { page: NotePage },
    /// Name, size and SHA-256 of every file loaded so far, for a shareable link.
    Fingerprints { files: Vec<LinkFile> },
    /// The aggregate of the time window the page asked about.
    Window { summary: WindowSummary },
    /// The kernel the page picked (`None`: the timeline changed under the pick).
    Details {
        track: usize,
        span: usize,
        details: Option<KernelDetails>,
        /// Its enriched fields (the exports' columns, figure 4.2 of the thesis), as text.
        fields: Vec<(String, String)>,
        /// The answer to a hover ([`LoadRequest::hover`]): for the tooltip, not the selection.
        #[serde(default)]
        hover: bool,
    },
    /// The timeline redrawn for a filter or clock the page asked for (the timeline travels
    /// beside when it changed; not when the query could not be read, or after a
    /// [`ToPage::Result`], which carries it).
    View {
        filter: String,
        original_clock: bool,
        /// Kernels the filter kept, of all; of the kept, those without a log line and those
        /// matched with low confidence.
        kept: u64,
        total: u64,
        unmatched: u64,
        low_confidence: u64,
        /// Why the query could not be read (the timeline is unchanged).
        error: Option<String>,
    },
    /// The worker hit a bug and stopped; the page starts a new one (the page's client also
    /// sends this to the views when the worker dies without a word).
    Crashed { message: String },
    /// An alignment helper's answer to the loading worker: job `job` is done, its result's
    /// bytes beside ([`crate::align_pool`]). Never sent to the page.
    Aligned { job: usize },
    /// An alignment helper could not read job `job`.
    AlignFailed { job: usize, message: String },
    /// A parsing helper's answer to the loading worker: the log of parse job `job` is parsed
    /// (in `ms`), its `wire::log` bytes beside ([`crate::parse_pool`]). Never sent to the page.
    Parsed { job: usize, ms: f64 },
    /// Bytes of parse job `job`'s file a parsing helper has read (at most about ten a second).
    ParseProgress { job: usize, read: u64 },
    /// A parsing helper could not read job `job`'s file.
    ParseFailed { job: usize, message: String },
    /// An aggregate (`ncclscope analyze --aggregate`) was opened: its overview
    /// ([`crate::aggregate_worker`]).
    Aggregate {
        view: crate::aggregate_data::AggregateView,
    },
    /// One rank of the open aggregate (its one-track timeline travels beside).
    AggregateRank {
        detail: crate::aggregate_data::RankDetailView,
    },
    /// The fields of kernel `index` of rank `rank` of the open aggregate.
    AggregateKernel {
        rank: u32,
        index: usize,
        fields: Vec<(String, String)>,
    },
}

/// One file to load: the page's row id, its name and its contents.
pub struct LoadItem {
    pub id: usize,
    pub name: String,
    pub blob: Blob,
}

/// Page → worker: load these files (into the session kept in the worker), then re-analyse;
/// and, with `theory` (the form's TOML), compare that model and layout with the analysis.
#[derive(Default)]
pub struct LoadRequest {
    /// The page's URL options every request carries.
    pub options: PageOptions,
    pub files: Vec<LoadItem>,
    pub theory: Option<String>,
    /// The time model's hardware for `theory`: `a100`, `h100`, `h200`, `b200` or `topology`.
    pub hardware: Option<String>,
    /// An export of the analysis to download: `chrome-trace` or `csv`.
    pub export: Option<String>,
    /// Fingerprint every file loaded so far ([`ToPage::Fingerprints`]).
    pub fingerprints: bool,
    /// A page of a file's notes ([`ToPage::Notes`]).
    pub notes: Option<NoteQuery>,
    /// All the notes of file (id) as CSV, a download ([`ToPage::Export`]).
    pub notes_csv: Option<usize>,
    /// Aggregate this window of the synchronised timeline, in ns ([`ToPage::Window`]).
    pub window: Option<(i64, i64)>,
    /// Details of the kernel at (track, span) of the last timeline ([`ToPage::Details`]).
    pub pick: Option<(usize, usize)>,
    /// `pick` is the kernel under the mouse: answered the same way, flagged for the tooltip.
    pub hover: bool,
    /// Details of the kernel with which a global rank ran an opCount of a communicator (by
    /// its id): a link's selection.
    pub pick_by: Option<(u32, String, u64)>,
    /// Redraw the timeline with this filter and clock ([`ToPage::View`]); later analyses keep
    /// them.
    pub view: Option<timeline::TimelineView>,
    /// Of the open aggregate: this rank's kernels ([`ToPage::AggregateRank`]) ...
    pub aggregate_rank: Option<u32>,
    /// ... and the fields of kernel (rank, index) ([`ToPage::AggregateKernel`]).
    pub aggregate_kernel: Option<(u32, usize)>,
}

/// Options the page's URL gives the worker.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PageOptions {
    /// `?digest`: each input's records digest (for engine comparisons).
    pub digests: bool,
    /// `?align-workers=N`: align on exactly N helper workers (0: in the loading worker);
    /// absent: as many as the cores, when the run is big enough to gain from them.
    pub align_workers: Option<usize>,
    /// `?align-fault`: the first alignment job of each batch is sent cut short, so that its
    /// helper fails and the fallback runs (tests).
    pub align_fault: bool,
    /// `?parse-workers=N`: parse the logs on exactly N helper workers (0: in the loading
    /// worker); absent: as many as the cores, when the logs are big enough to gain from them.
    pub parse_workers: Option<usize>,
    /// `?parse-share`: with `?parse-workers=N`, the loading worker parses too, as it does by
    /// default (what no helper has taken when its turn comes, and ahead while it waits), so
    /// the tests reach that path on any machine.
    pub parse_share: bool,
    /// `?parse-fault` (`=crash`, `=bytes`): the helper given the first log fails (tests).
    pub parse_fault: Option<ParseFault>,
}

/// How the helper given a load's first parse job fails, for the test of the fallback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseFault {
    /// It dies with an uncaught error after its first slice, without an answer.
    Crash,
    /// It answers with its log's bytes cut short.
    Bytes,
}

impl ParseFault {
    pub fn from_query(value: &str) -> Option<ParseFault> {
        match value {
            "" | "crash" => Some(ParseFault::Crash),
            "bytes" => Some(ParseFault::Bytes),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ParseFault::Crash => "crash",
            ParseFault::Bytes => "bytes",
        }
    }
}

impl LoadRequest {
    pub fn to_js(&self) -> JsValue {
        let files = Array::new();
        for f in &self.files {
            let o = Object::new();
            set(&o, "id", &JsValue::from_f64(f.id as f64));
            set(&o, "name", &JsValue::from_str(&f.name));
            set(&o, "blob", &f.blob);
            files.push(&o);
        }
        let msg = Object::new();
        set(&msg, "digests", &JsValue::from_bool(self.options.digests));
        set(
            &msg,
            "align_fault",
            &JsValue::from_bool(self.options.align_fault),
        );
        if let Some(n) = self.options.align_workers {
            set(&msg, "align_workers", &JsValue::from_f64(n as f64));
        }
        if let Some(n) = self.options.parse_workers {
            set(&msg, "parse_workers", &JsValue::from_f64(n as f64));
        }
        if self.options.parse_share {
            set(&msg, "parse_share", &JsValue::TRUE);
        }
        if let Some(f) = self.options.parse_fault {
            set(&msg, "parse_fault", &JsValue::from_str(f.name()));
        }
        set(&msg, "files", &files);
        if let Some(t) = &self.theory {
            set(&msg, "theory", &JsValue::from_str(t));
        }
        if let Some(h) = &self.hardware {
            set(&msg, "hardware", &JsValue::from_str(h));
        }
        if let Some(x) = &self.export {
            set(&msg, "export", &JsValue::from_str(x));
        }
        set(&msg, "fingerprints", &JsValue::from_bool(self.fingerprints));
        if let Some(q) = &self.notes {
            set(&msg, "notes_file", &JsValue::from_f64(q.file as f64));
            set(&msg, "notes_offset", &JsValue::from_f64(q.offset as f64));
            set(&msg, "notes_limit", &JsValue::from_f64(q.limit as f64));
            if let Some(r) = &q.reason {
                set(&msg, "notes_reason", &JsValue::from_str(r));
            }
        }
        if let Some(f) = self.notes_csv {
            set(&msg, "notes_csv", &JsValue::from_f64(f as f64));
        }
        if let Some((rank, comm, oc)) = &self.pick_by {
            set(&msg, "pick_rank", &JsValue::from_f64(f64::from(*rank)));
            set(&msg, "pick_comm", &JsValue::from_str(comm));
            // opCounts can exceed 2^53: hex text.
            set(
                &msg,
                "pick_op_count",
                &JsValue::from_str(&format!("{oc:x}")),
            );
        }
        if let Some((t, i)) = self.pick {
            set(&msg, "pick_track", &JsValue::from_f64(t as f64));
            set(&msg, "pick_span", &JsValue::from_f64(i as f64));
        }
        if self.hover {
            set(&msg, "hover", &JsValue::TRUE);
        }
        if let Some((a, b)) = self.window {
            set(&msg, "window_start", &JsValue::from_f64(a as f64));
            set(&msg, "window_end", &JsValue::from_f64(b as f64));
        }
        if let Some(r) = self.aggregate_rank {
            set(&msg, "aggregate_rank", &JsValue::from_f64(f64::from(r)));
        }
        if let Some((r, i)) = self.aggregate_kernel {
            set(
                &msg,
                "aggregate_kernel_rank",
                &JsValue::from_f64(f64::from(r)),
            );
            set(&msg, "aggregate_kernel_index", &JsValue::from_f64(i as f64));
        }
        if let Some(v) = &self.view {
            set(&msg, "view_filter", &JsValue::from_str(&v.filter));
            set(
                &msg,
                "view_original_clock",
                &JsValue::from_bool(v.original_clock),
            );
        }
        msg.into()
    }

    pub fn from_js(v: &JsValue) -> Result<Self, String> {
        let files: Array = get(v, "files")?
            .dyn_into()
            .map_err(|_| "load request: `files` is not an array".to_string())?;
        let mut items = Vec::new();
        for f in files.iter() {
            items.push(LoadItem {
                id: get(&f, "id")?.as_f64().ok_or("load request: bad id")? as usize,
                name: get(&f, "name")?
                    .as_string()
                    .ok_or("load request: bad name")?,
                blob: get(&f, "blob")?
                    .dyn_into()
                    .map_err(|_| "load request: not a Blob".to_string())?,
            });
        }
        Ok(LoadRequest {
            options: PageOptions {
                digests: get(v, "digests")?.as_bool().unwrap_or(false),
                align_workers: get(v, "align_workers")?.as_f64().map(|n| n as usize),
                align_fault: get(v, "align_fault")?.as_bool().unwrap_or(false),
                parse_workers: get(v, "parse_workers")?.as_f64().map(|n| n as usize),
                parse_share: get(v, "parse_share")?.as_bool().unwrap_or(false),
                parse_fault: get(v, "parse_fault")?
                    .as_string()
                    .and_then(|f| ParseFault::from_query(&f)),
            },
            files: items,
            theory: get(v, "theory")?.as_string(),
            hardware: get(v, "hardware")?.as_string(),
            export: get(v, "export")?.as_string(),
            fingerprints: get(v, "fingerprints")?.as_bool().unwrap_or(false),
            notes: match get(v, "notes_file")?.as_f64() {
                Some(file) => Some(NoteQuery {
                    file: file as usize,
                    reason: get(v, "notes_reason")?.as_string(),
                    offset: get(v, "notes_offset")?.as_f64().unwrap_or(0.0) as usize,
                    limit: get(v, "notes_limit")?.as_f64().unwrap_or(0.0) as usize,
                }),
                None => None,
            },
            notes_csv: get(v, "notes_csv")?.as_f64().map(|f| f as usize),
            window: get(v, "window_start")?
                .as_f64()
                .zip(get(v, "window_end")?.as_f64())
                .map(|(a, b)| (a as i64, b as i64)),
            pick: get(v, "pick_track")?
                .as_f64()
                .zip(get(v, "pick_span")?.as_f64())
                .map(|(t, i)| (t as usize, i as usize)),
            hover: get(v, "hover")?.as_bool().unwrap_or(false),
            pick_by: match (
                get(v, "pick_rank")?.as_f64(),
                get(v, "pick_comm")?.as_string(),
                get(v, "pick_op_count")?
                    .as_string()
                    .and_then(|h| u64::from_str_radix(&h, 16).ok()),
            ) {
                (Some(r), Some(c), Some(oc)) => Some((r as u32, c, oc)),
                _ => None,
            },
            aggregate_rank: get(v, "aggregate_rank")?.as_f64().map(|r| r as u32),
            aggregate_kernel: get(v, "aggregate_kernel_rank")?
                .as_f64()
                .zip(get(v, "aggregate_kernel_index")?.as_f64())
                .map(|(r, i)| (r as u32, i as usize)),
            view: get(v, "view_filter")?
                .as_string()
                .map(|filter| timeline::TimelineView {
                    filter,
                    original_clock: get(v, "view_original_clock")
                        .ok()
                        .and_then(|c| c.as_bool())
                        .unwrap_or(false),
                }),
        })
    }
}

fn set(o: &Object, key: &str, v: &JsValue) {
    // Setting a plain property on a fresh plain object cannot fail.
    let _ = Reflect::set(o, &JsValue::from_str(key), v);
}

fn get(o: &JsValue, key: &str) -> Result<JsValue, String> {
    Reflect::get(o, &JsValue::from_str(key)).map_err(|_| format!("message has no `{key}`"))
}

/// Format tag of [`encode_timeline`]'s output (v3: columns of spans with their match marks and
/// parallelisms, then both summaries).
const TIMELINE_MAGIC: &[u8; 4] = b"NST3";

/// The timeline as bytes: per track its label, its spans as five columns (starts, ends, op,
/// mark and parallelism bytes: 19 bytes a span, read back in one pass without per-field
/// checks), then its [`Lod`] summaries by operation and by parallelism, built in the worker so
/// the page never computes them.
pub fn encode_timeline(t: &Timeline) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_len(t));
    encode_timeline_in_parts(t, &mut |part| out.extend_from_slice(part));
    out
}

/// The length of [`encode_timeline`]'s output, without encoding (the loading worker sizes the
/// page's buffer with it; `timeline_round_trips` holds it to the encoder's).
pub fn encoded_len(t: &Timeline) -> usize {
    let text = |s: &str| 4 + s.len();
    let lod = |l: &Lod| 8 * 3 + 4 + l.levels.iter().map(|v| 4 + v.len()).sum::<usize>();
    let tracks: usize = t
        .tracks
        .iter()
        .map(|k| text(&k.label) + 4 + 19 * k.spans.len() + lod(&k.lod) + lod(&k.par_lod))
        .sum();
    let markers: usize = t
        .markers
        .iter()
        .map(|row| {
            let ranges: usize = row.ranges.iter().map(|m| 8 + 8 + 1 + text(&m.text)).sum();
            text(&row.label) + 4 + ranges
        })
        .sum();
    TIMELINE_MAGIC.len() + 8 + 8 + 4 + tracks + 4 + markers
}

/// [`encode_timeline`]'s output handed to `emit` in parts, a track at a time (its head, its
/// columns and summaries, one part each), so that a caller may write it anywhere without the
/// whole of it in memory at once: the loading worker writes it into the page's buffer.
pub fn encode_timeline_in_parts(t: &Timeline, emit: &mut dyn FnMut(&[u8])) {
    let mut out = Vec::new();
    out.extend_from_slice(TIMELINE_MAGIC);
    out.extend_from_slice(&t.start_ns.to_le_bytes());
    out.extend_from_slice(&t.end_ns.to_le_bytes());
    out.extend_from_slice(&(t.tracks.len() as u32).to_le_bytes());
    emit(&out);
    for track in &t.tracks {
        out.clear();
        out.extend_from_slice(&(track.label.len() as u32).to_le_bytes());
        out.extend_from_slice(track.label.as_bytes());
        out.extend_from_slice(&(track.spans.len() as u32).to_le_bytes());
        for s in &track.spans {
            out.extend_from_slice(&s.start_ns.to_le_bytes());
        }
        for s in &track.spans {
            out.extend_from_slice(&s.end_ns.to_le_bytes());
        }
        out.extend(track.spans.iter().map(|s| s.op.map_or(LOD_NO_OP, op_byte)));
        out.extend(track.spans.iter().map(|s| s.mark.byte()));
        out.extend(track.spans.iter().map(|s| s.par));
        encode_lod(&mut out, &track.lod);
        encode_lod(&mut out, &track.par_lod);
        emit(&out);
    }
    out.clear();
    out.extend_from_slice(&(t.markers.len() as u32).to_le_bytes());
    for row in &t.markers {
        put_text(&mut out, &row.label);
        out.extend_from_slice(&(row.ranges.len() as u32).to_le_bytes());
        for m in &row.ranges {
            out.extend_from_slice(&m.start_ns.to_le_bytes());
            out.extend_from_slice(&m.end_ns.to_le_bytes());
            out.push(m.kind);
            put_text(&mut out, &m.text);
        }
    }
    emit(&out);
}

fn put_text(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
}

fn text(r: &mut Reader) -> Result<String, String> {
    let len = r.u32()? as usize;
    String::from_utf8(r.take(len)?.to_vec()).map_err(|_| "timeline: a text is not UTF-8".into())
}

fn decode_markers(r: &mut Reader) -> Result<Vec<MarkerRow>, String> {
    let rows = r.u32()? as usize;
    let mut out = Vec::with_capacity(rows.min(16));
    for _ in 0..rows {
        let label = text(r)?;
        let n = r.u32()? as usize;
        let mut ranges = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let start_ns = r.i64()?;
            let end_ns = r.i64()?;
            let kind = r.take(1)?[0];
            ranges.push(Marker {
                start_ns,
                end_ns,
                kind,
                text: text(r)?,
            });
        }
        out.push(MarkerRow { label, ranges });
    }
    Ok(out)
}

fn encode_lod(out: &mut Vec<u8>, lod: &Lod) {
    out.extend_from_slice(&lod.origin_ns.to_le_bytes());
    out.extend_from_slice(&lod.bucket_ns.to_le_bytes());
    out.extend_from_slice(&lod.max_span_ns.to_le_bytes());
    out.extend_from_slice(&(lod.levels.len() as u32).to_le_bytes());
    for level in &lod.levels {
        out.extend_from_slice(&(level.len() as u32).to_le_bytes());
        out.extend_from_slice(level);
    }
}

fn decode_lod(r: &mut Reader) -> Result<Lod, String> {
    let origin_ns = r.i64()?;
    let bucket_ns = r.i64()?;
    let max_span_ns = r.i64()?;
    let n_levels = r.u32()? as usize;
    let mut levels = Vec::with_capacity(n_levels.min(64));
    for _ in 0..n_levels {
        let len = r.u32()? as usize;
        levels.push(r.take(len)?.to_vec());
    }
    if bucket_ns < 1 && !levels.is_empty() {
        return Err("timeline: a summary has no bucket width".into());
    }
    Ok(Lod {
        origin_ns,
        bucket_ns,
        max_span_ns,
        levels,
    })
}

/// Reads [`encode_timeline`]'s output back.
pub fn decode_timeline(bytes: &[u8]) -> Result<Timeline, String> {
    let mut d = TimelineDecoder::new(bytes)?;
    loop {
        if d.step(bytes, usize::MAX)? {
            return d.finish(bytes);
        }
    }
}

/// Decodes a timeline a slice of spans at a time, so that the page can decode millions of
/// spans over several short tasks instead of one long one. The bytes are passed to each step
/// (the decoder keeps only its place in them).
pub struct TimelineDecoder {
    at: usize,
    left: usize,
    /// The track being decoded, if its spans are not all read yet.
    partial: Option<PartialTrack>,
    timeline: Timeline,
}

/// A track whose header is read and whose spans are being decoded.
struct PartialTrack {
    label: String,
    n: usize,
    /// Where its five span columns start (starts, ends, ops, marks, parallelisms).
    columns: usize,
    spans: Vec<Span>,
}

impl TimelineDecoder {
    /// Reads the header.
    pub fn new(bytes: &[u8]) -> Result<TimelineDecoder, String> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(4)? != TIMELINE_MAGIC {
            return Err("timeline: bad format tag".into());
        }
        let start_ns = r.i64()?;
        let end_ns = r.i64()?;
        let left = r.u32()? as usize;
        Ok(TimelineDecoder {
            at: r.at,
            left,
            partial: None,
            timeline: Timeline {
                tracks: Vec::with_capacity(left.min(1 << 16)),
                start_ns,
                end_ns,
                markers: Vec::new(),
            },
        })
    }

    /// Decodes about `spans` more spans (whole tracks' headers and summaries around them);
    /// true once every track is read.
    pub fn step(&mut self, bytes: &[u8], spans: usize) -> Result<bool, String> {
        let mut budget = spans.max(1);
        while budget > 0 && (self.left > 0 || self.partial.is_some()) {
            let mut track = match self.partial.take() {
                Some(t) => t,
                None => {
                    let mut r = Reader { bytes, at: self.at };
                    let label = text(&mut r)?;
                    let n = r.u32()? as usize;
                    // 19 bytes a span; a 32-bit count times 19 can overflow wasm32's usize.
                    let size = n.checked_mul(19).ok_or("timeline: too many spans")?;
                    let columns = r.at;
                    r.take(size)?;
                    self.at = r.at;
                    self.left -= 1;
                    PartialTrack {
                        label,
                        n,
                        columns,
                        spans: Vec::with_capacity(n),
                    }
                }
            };
            let from = track.spans.len();
            let to = track.n.min(from.saturating_add(budget));
            decode_spans(bytes, &mut track, to);
            budget -= (to - from).max(1).min(budget);
            if track.spans.len() < track.n {
                self.partial = Some(track);
                break;
            }
            let mut r = Reader { bytes, at: self.at };
            let lod = decode_lod(&mut r)?;
            let par_lod = decode_lod(&mut r)?;
            self.at = r.at;
            self.timeline.tracks.push(Track {
                label: track.label,
                spans: track.spans,
                source: None,
                lod,
                par_lod,
            });
        }
        Ok(self.left == 0 && self.partial.is_none())
    }

    /// The timeline, once [`TimelineDecoder::step`] said it is complete.
    pub fn finish(mut self, bytes: &[u8]) -> Result<Timeline, String> {
        if self.left != 0 || self.partial.is_some() {
            return Err("timeline: not every track is decoded".into());
        }
        let mut r = Reader { bytes, at: self.at };
        self.timeline.markers = decode_markers(&mut r)?;
        if r.at != bytes.len() {
            return Err(format!("timeline: {} trailing bytes", bytes.len() - r.at));
        }
        Ok(self.timeline)
    }
}

/// Decodes `track`'s spans up to index `to` (its columns were bounds-checked with its header).
fn decode_spans(bytes: &[u8], track: &mut PartialTrack, to: usize) {
    let (n, from) = (track.n, track.spans.len());
    let column = |k: usize, width: usize| {
        let base = track.columns + k;
        &bytes[base + from * width..base + to * width]
    };
    let starts = column(0, 8);
    let ends = column(8 * n, 8);
    let ops = column(16 * n, 1);
    let marks = column(17 * n, 1);
    let pars = column(18 * n, 1);
    track.spans.extend(
        starts
            .chunks_exact(8)
            .zip(ends.chunks_exact(8))
            .zip(ops.iter().zip(marks).zip(pars))
            .map(|((a, z), ((&op, &mark), &par))| Span {
                start_ns: le_i64(a),
                end_ns: le_i64(z),
                op: OpType::ALL.get(op as usize).copied(),
                mark: Mark::from_byte(mark).unwrap_or(Mark::Unmatched),
                par,
            }),
    );
}

fn le_i64(b: &[u8]) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    i64::from_le_bytes(a)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("timeline: truncated at byte {}", self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(le_i64(self.take(8)?))
    }
}

/// A byte count for people: `1.50 MB` (decimal units, as NCCL's tools print them).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit < UNITS.len() - 1 {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.2} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A timeline shaped like a real one: several tracks, every operation and none, times
    /// at the range of a GPU clock.
    fn sample() -> Timeline {
        let base = 1_700_000_000_000_000_000i64;
        let tracks = (0..3)
            .map(|t| Track {
                label: format!("host{t} pid {} GPU {t} — ü", 1000 + t),
                spans: (0..40)
                    .map(|i| Span {
                        start_ns: base + i * 1_000 + t,
                        end_ns: base + i * 1_000 + 500 + t,
                        op: (i % 12 != 11).then(|| OpType::ALL[(i % 11) as usize]),
                        mark: Mark::ALL[(i % 3) as usize],
                        par: if i % 7 == 6 { LOD_NO_OP } else { (i % 5) as u8 },
                    })
                    .collect::<Vec<_>>(),
                source: None,
                lod: Lod::default(),
                par_lod: Lod::default(),
            })
            .map(|mut k| {
                k.lod = Lod::build(&k.spans);
                k.par_lod = Lod::build_by(&k.spans, |s| s.par);
                k
            })
            .collect();
        Timeline {
            tracks,
            start_ns: base,
            end_ns: base + 40_000,
            markers: vec![
                MarkerRow {
                    label: "NVTX iterations (rank 0)".into(),
                    ranges: vec![Marker {
                        start_ns: base,
                        end_ns: base + 20_000,
                        kind: 0,
                        text: "iteration 0 <b>é".into(),
                    }],
                },
                MarkerRow::default(),
            ],
        }
    }

    #[test]
    fn timeline_round_trips() {
        let t = sample();
        let bytes = encode_timeline(&t);
        assert_eq!(bytes.len(), encoded_len(&t));
        let empty = Timeline::default();
        assert_eq!(encode_timeline(&empty).len(), encoded_len(&empty));
        let mut parts = Vec::new();
        encode_timeline_in_parts(&t, &mut |p| parts.push(p.to_vec()));
        assert!(parts.len() > t.tracks.len(), "a part per track and more");
        assert_eq!(parts.concat(), bytes);
        assert_eq!(decode_timeline(&bytes), Ok(t));
        assert_eq!(
            decode_timeline(&encode_timeline(&Timeline::default())),
            Ok(Timeline::default())
        );
    }

    #[test]
    fn a_timeline_decodes_in_steps() {
        let t = sample();
        let bytes = encode_timeline(&t);
        let mut d = TimelineDecoder::new(&bytes).unwrap();
        let mut steps = 1;
        while !d.step(&bytes, 15).unwrap() {
            steps += 1;
        }
        // 3 tracks of 40 spans, 15 a step: tracks are split across steps.
        assert_eq!(steps, 8);
        assert_eq!(d.finish(&bytes), Ok(t));
    }

    #[test]
    fn every_truncation_of_a_timeline_is_an_error() {
        let bytes = encode_timeline(&sample());
        for len in 0..bytes.len() {
            assert!(
                decode_timeline(&bytes[..len]).is_err(),
                "prefix of {len} bytes"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_timeline(&longer).is_err());
    }

    #[test]
    fn messages_round_trip_through_json() {
        let msg = ToPage::Report {
            id: 3,
            view: FileView::failed("x.sqlite: not a database".into()),
            worker_memory_bytes: 1e9,
        };
        let json = serde_json::to_string(&msg).unwrap();
        assert_eq!(serde_json::from_str::<ToPage>(&json).unwrap(), msg);
    }
}
