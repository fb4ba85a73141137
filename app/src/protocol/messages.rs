//! The messages between the page and its loading worker.
//!
//! Page → worker: a load request, a plain JS object holding the dropped `File`s themselves
//! (structured-cloned, never read on the main thread). Worker → page: `{json, timeline?}`, a
//! small JSON [`ToPage`] and, with the result, the timeline in a compact binary form whose
//! buffer is transferred, not copied.

use analyses::{KernelDetails, WindowSummary};
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use web_sys::Blob;

use crate::protocol::notes::{NotePage, NoteQuery};
use crate::protocol::panels::Panels;
use crate::protocol::theory::TheoryView;
use crate::protocol::views::{CommPanel, FileView, RankView};

/// What the worker tells the page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToPage {
    /// The worker's handler is installed: requests posted from now on are received.
    Ready,
    /// The worker's warm-up ([`crate::worker::warm_up`]) ended after `ms` (or was cut short by a
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
        heap: Vec<HeapStage>,
        /// The run's overview; absent from recordings made before it existed. (Boxed: the
        /// message's other variants are much smaller.)
        #[serde(default)]
        overview: Box<crate::protocol::overview::OverviewView>,
    },
    /// What went wrong, why steps are slow, where traffic flows, who is who: sent after each
    /// [`ToPage::Result`] (its timeline shows first), for the same analysis.
    Insights {
        insights: Box<crate::protocol::insights::Insights>,
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
    /// A file's lines around an evidence line ([`LoadRequest::file_lines`]).
    FileLines {
        lines: crate::protocol::file_lines::FileLines,
    },
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
    /// This run's comparison profile ([`LoadRequest::profile`]), or why it has none.
    Profile {
        profile: Box<Result<analyses::diff::RunProfile, String>>,
    },
    /// This run compared with the other ([`LoadRequest::compare`]).
    Diff { diff: Box<analyses::diff::RunDiff> },
    /// This run's timeline cut to one step for the Compare view's stacked timelines
    /// ([`LoadRequest::stacked`]; the cut timeline travels beside, in binary).
    Stacked {
        info: crate::protocol::stacked::StackedInfo,
    },
    /// The worker hit a bug and stopped; the page starts a new one (the page's client also
    /// sends this to the views when the worker dies without a word).
    Crashed { message: String },
    /// An alignment helper's answer to the loading worker: job `job` is done, its result's
    /// bytes beside ([`crate::worker::align_pool`]). Never sent to the page.
    Aligned { job: usize },
    /// An alignment helper could not read job `job`.
    AlignFailed { job: usize, message: String },
    /// A parsing helper's answer to the loading worker: the log of parse job `job` is parsed
    /// (in `ms`), its `wire::log` bytes beside ([`crate::worker::parse_pool`]). Never sent to the page.
    Parsed { job: usize, ms: f64 },
    /// Bytes of parse job `job`'s file a parsing helper has read (at most about ten a second).
    ParseProgress { job: usize, read: u64 },
    /// A parsing helper could not read job `job`'s file.
    ParseFailed { job: usize, message: String },
    /// An aggregate (`ncclscope analyze --aggregate`) was opened: its overview
    /// ([`crate::aggregate_worker`]).
    Aggregate {
        view: crate::protocol::aggregate::AggregateView,
    },
    /// One rank of the open aggregate (its one-track timeline travels beside).
    AggregateRank {
        detail: crate::protocol::aggregate::RankDetailView,
    },
    /// The fields of kernel `index` of rank `rank` of the open aggregate.
    AggregateKernel {
        rank: u32,
        index: usize,
        fields: Vec<(String, String)>,
    },
}

/// One file to load: the page's row id, its name and its contents.
#[derive(Serialize, Deserialize)]
pub struct LoadItem {
    pub id: usize,
    pub name: String,
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub blob: Blob,
}

/// Page → worker: load these files (into the session kept in the worker), then re-analyse;
/// and, with `theory` (the form's TOML), compare that model and layout with the analysis.
#[derive(Default, Serialize, Deserialize)]
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
    /// Send this run's comparison profile under this name ([`ToPage::Profile`]).
    #[serde(default)]
    pub profile: Option<String>,
    /// Compare this run with another: a [`crate::protocol::compare::CompareAsk`] as JSON
    /// ([`ToPage::Diff`]).
    #[serde(default)]
    pub compare: Option<String>,
    /// Run the step analysis with these settings from now on, and send the insights again
    /// ([`ToPage::Insights`]).
    #[serde(default)]
    pub steps: Option<crate::protocol::insights::StepsAsk>,
    /// This run's timeline cut to a step, for the stacked timelines ([`ToPage::Stacked`]).
    #[serde(default)]
    pub stacked: Option<crate::protocol::stacked::StackedAsk>,
    /// The lines of a file around an evidence line ([`ToPage::FileLines`]).
    #[serde(default)]
    pub file_lines: Option<crate::protocol::file_lines::FileLinesAsk>,
}

/// Options the page's URL gives the worker.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The request as a JavaScript object for `postMessage` (serde-wasm-bindgen): the files'
    /// `Blob`s go as they are (structured-cloned, never read here), numbers past 2^53 (times in
    /// ns, opCounts) as BigInts.
    pub fn to_js(&self) -> JsValue {
        let to_js =
            serde_wasm_bindgen::Serializer::new().serialize_large_number_types_as_bigints(true);
        // Plain data, strings and Blobs: nothing here fails to serialise.
        self.serialize(&to_js).unwrap_or(JsValue::NULL)
    }

    /// The request `v` holds (the worker's side of [`LoadRequest::to_js`]).
    pub fn from_js(v: &JsValue) -> Result<Self, String> {
        serde_wasm_bindgen::from_value(v.clone()).map_err(|e| format!("load request: {e}"))
    }
}

/// One stage of a load: what it left live and the most it had live on the way.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HeapStage {
    pub stage: String,
    pub live_bytes: u64,
    pub peak_bytes: u64,
}

/// One input file as a link names it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LinkFile {
    pub name: String,
    pub size: u64,
    /// Lower-case hex, 64 digits.
    pub sha256: String,
}

#[cfg(test)]
mod tests {
    use super::*;

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
