//! The page's state: every signal the views read, in one context struct ([`AppState`], provided
//! to every component by the app), and the requests to the worker that change them.

use analyses::diff::{RunDiff, RunProfile};
use analyses::{KernelDetails, WindowSummary};
use leptos::prelude::*;
use ncclscope_app::page_logic::link::{LinkFile, Selection, SharedDiagnosis};
use ncclscope_app::page_logic::patterns_state::PatternsState;
use ncclscope_app::page_logic::steps_link::{StepsAsk, StepsView};
use ncclscope_app::protocol::messages::LoadRequest;
use ncclscope_app::protocol::notes::NoteRow;
use ncclscope_app::protocol::overview::OverviewView;
use ncclscope_app::protocol::stacked::StackedInfo;
use ncclscope_app::protocol::theory::TheoryView;
use ncclscope_app::protocol::views::{CommPanel, FileView, RankView};
use std::sync::Arc;
use theory::form::Form;
use timeline::{Timeline, TimelineView};

use crate::page::budget_dialog::Pending;
use crate::page::client;
use crate::page::panels::aggregate::AggregateState;
use crate::page::panels::analyses::PanelStages;
use crate::page::panels::file_lines::FileLinesState;
use crate::page::panels::notes::NotesState;
use crate::page::panels::theory::{saved_form, HARDWARE_FIELD};
use crate::page::panels::window::Scope;
use crate::page::sharing::share::LinkState;
use crate::page::timeline::canvas::{RowsState, View};
use crate::page::timeline::controls::ViewStatus;
use crate::page::timeline::tooltip::Hover;
use crate::page::url::page_options;

/// A file in the list: its report once loaded, and bytes read so far while loading.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub name: String,
    pub size: u64,
    pub read: u64,
    /// What the worker is doing with the file once it is read (exports only).
    pub stage: Option<String>,
    pub report: Option<FileView>,
}

impl Row {
    /// A row for a file about to be handed to the worker.
    pub fn new(name: String, size: u64) -> Row {
        Row {
            name,
            size,
            read: 0,
            stage: None,
            report: None,
        }
    }

    /// A row for something that could not be loaded at all (a folder, a URL, the demo).
    pub fn failed(name: String, error: String) -> Row {
        Row {
            report: Some(FileView::failed(error)),
            ..Row::new(name, 0)
        }
    }
}

/// A picked kernel's details and its enriched fields (name, value as the exports write it).
pub type Picked = (KernelDetails, Vec<(String, String)>);

/// What the drawer shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drawer {
    /// The kernel picked on the timeline.
    Kernel,
    /// The aggregate of the visible window or of a selected range.
    Range,
    /// A note picked in a file's notes.
    Note,
}

/// The theory comparison: the form (kept between visits), which fields the trace filled, which
/// the user typed, and the worker's answer.
#[derive(Clone, Copy)]
pub struct TheoryState {
    pub form: RwSignal<Form>,
    pub inferred: RwSignal<Vec<String>>,
    pub typed: RwSignal<Vec<String>>,
    pub view: RwSignal<Option<TheoryView>>,
    pub error: RwSignal<Option<String>>,
}

/// Every signal of the page. Copy: each is a handle.
#[derive(Clone, Copy)]
pub struct AppState {
    // The files and the worker.
    pub rows: RwSignal<Vec<Row>>,
    pub dragging: RwSignal<bool>,
    pub analysing: RwSignal<bool>,
    /// The last analysis's wall time in the worker, and what it re-ran (read by benchmarks and
    /// the status line).
    pub analysis_ms: RwSignal<Option<f64>>,
    pub rerun: RwSignal<String>,
    pub worker_memory: RwSignal<Option<f64>>,
    pub warmed_up_ms: RwSignal<Option<f64>>,
    /// The worker's heap per stage of the last load (JSON), for benchmarks.
    pub worker_heap: RwSignal<Option<String>>,
    /// Files that would not fit in the worker's memory, waiting for the user's choice.
    pub over_budget: RwSignal<Option<Vec<Pending>>, LocalStorage>,
    /// The demo's deliberate imperfections, when the demo is what was loaded.
    pub demo: RwSignal<Option<Vec<String>>>,
    // The analysis.
    pub timeline: RwSignal<Timeline>,
    pub ranks: RwSignal<Vec<RankView>>,
    pub comms: RwSignal<CommPanel>,
    pub panels: PanelStages,
    pub overview: RwSignal<Option<OverviewView>>,
    /// What went wrong, why steps are slow, where traffic flows, who is who: the worker sends
    /// them after each result (`None` until then).
    pub insights: crate::page::panels::insights::InsightsSignal,
    /// What the user set in the Steps view (θ, mapping edits, the step and rank picked): in
    /// share links (`st=`) and bundles.
    pub steps_view: RwSignal<StepsView>,
    /// Each result is shown over several animation frames; a newer one stops an older one's.
    pub result_stage: StoredValue<u64>,
    pub theory: TheoryState,
    /// The Patterns view's state (mode, filter, cells, pick): links and bundles carry it.
    pub patterns: RwSignal<PatternsState>,
    pub aggregate: AggregateState,
    pub notes: NotesState,
    /// A file's view at an evidence line (the Diagnosis view's).
    pub file_lines: FileLinesState,
    /// The loaded run compared with another (the Compare view).
    pub compare: CompareState,
    // The timeline's view.
    /// The visible window (owned here so that a link can set it).
    pub window: RwSignal<Option<View>>,
    /// The filter and clock as the worker last applied them, what it kept, and a link's window
    /// waiting for the view it belongs to.
    pub timeline_view: RwSignal<TimelineView>,
    pub view_status: RwSignal<Option<ViewStatus>>,
    pub pending_window: RwSignal<Option<View>>,
    pub rows_state: RowsState,
    /// The canvas's width, which the minimap follows.
    pub canvas_width: RwSignal<f64>,
    // Picks.
    /// The kernel picked on the timeline, and what the worker says about it.
    pub selected: RwSignal<Option<(usize, usize)>>,
    pub details: RwSignal<Option<Picked>>,
    pub awaiting_selection: RwSignal<bool>,
    /// The worker answered the pick with nothing to show (no log for the kernel's process).
    pub no_details: RwSignal<bool>,
    pub hover: Hover,
    /// A range selected on the timeline (ns), the aggregate shown, and which range it is of.
    pub selection: RwSignal<Option<(f64, f64)>>,
    pub window_summary: RwSignal<Option<WindowSummary>>,
    pub window_scope: RwSignal<Scope>,
    /// The worker answers in order: the next aggregate is of the range last asked about.
    pub asked_scope: StoredValue<Scope>,
    pub picked_note: RwSignal<Option<(String, usize, NoteRow)>>,
    // Links.
    pub link: RwSignal<LinkState>,
    pub share_url: RwSignal<Option<String>>,
    pub share_error: RwSignal<Option<String>>,
    pub bundle_error: RwSignal<Option<String>>,
    // The shell.
    /// The view shown (an index into `page::views::registry::VIEWS`).
    pub view: RwSignal<usize>,
    pub drawer: RwSignal<Option<Drawer>>,
    /// The page is an exported bundle: no worker, no intake.
    pub is_bundle: bool,
}

impl AppState {
    pub fn new(is_bundle: bool) -> AppState {
        let hover = Hover::new(Callback::new(move |p: (usize, usize)| {
            client::load(LoadRequest {
                options: page_options(),
                pick: Some(p),
                hover: true,
                ..LoadRequest::default()
            })
        }));
        AppState {
            rows: RwSignal::new(Vec::new()),
            dragging: RwSignal::new(false),
            analysing: RwSignal::new(false),
            analysis_ms: RwSignal::new(None),
            rerun: RwSignal::new(String::new()),
            worker_memory: RwSignal::new(None),
            warmed_up_ms: RwSignal::new(None),
            worker_heap: RwSignal::new(None),
            over_budget: RwSignal::new_local(None),
            demo: RwSignal::new(None),
            timeline: RwSignal::new(Timeline::default()),
            ranks: RwSignal::new(Vec::new()),
            comms: RwSignal::new(CommPanel::default()),
            panels: PanelStages::new(),
            overview: RwSignal::new(None),
            insights: RwSignal::new(None),
            steps_view: RwSignal::new(StepsView::default()),
            result_stage: StoredValue::new(0),
            theory: TheoryState {
                form: RwSignal::new(saved_form()),
                inferred: RwSignal::new(Vec::new()),
                typed: RwSignal::new(Vec::new()),
                view: RwSignal::new(None),
                error: RwSignal::new(None),
            },
            patterns: RwSignal::new(PatternsState::default()),
            aggregate: AggregateState::new(),
            notes: NotesState::new(),
            file_lines: FileLinesState::new(),
            compare: CompareState::new(),
            window: RwSignal::new(None),
            timeline_view: RwSignal::new(TimelineView::default()),
            view_status: RwSignal::new(None),
            pending_window: RwSignal::new(None),
            rows_state: RowsState::new(),
            canvas_width: RwSignal::new(1200.0),
            selected: RwSignal::new(None),
            details: RwSignal::new(None),
            awaiting_selection: RwSignal::new(false),
            no_details: RwSignal::new(false),
            hover,
            selection: RwSignal::new(None),
            window_summary: RwSignal::new(None),
            window_scope: RwSignal::new(Scope::Visible),
            asked_scope: StoredValue::new(Scope::Visible),
            picked_note: RwSignal::new(None),
            link: RwSignal::new(LinkState::from_location()),
            share_url: RwSignal::new(None),
            share_error: RwSignal::new(None),
            bundle_error: RwSignal::new(None),
            view: RwSignal::new(0),
            drawer: RwSignal::new(None),
            is_bundle,
        }
    }

    /// Whether any file was dropped (tracked).
    pub fn has_files(&self) -> bool {
        self.rows.with(|r| !r.is_empty())
    }

    /// The members of the picked kernel's collective: (rank, synchronised start).
    pub fn flow(&self) -> Signal<Vec<(u32, i64)>> {
        let details = self.details;
        Signal::derive(move || {
            details.with(|d| {
                d.as_ref()
                    .and_then(|(d, _)| d.instance.as_ref())
                    .map(|i| i.members.iter().map(|m| (m.rank, m.start_ns)).collect())
                    .unwrap_or_default()
            })
        })
    }

    /// The picked kernel as the collective instance it ran on its rank (what a link carries).
    pub fn picked_instance(&self) -> Option<Selection> {
        self.details.with_untracked(|d| {
            d.as_ref().and_then(|(d, _)| {
                d.instance.as_ref().map(|i| Selection {
                    rank: d.rank,
                    comm: i.comm_id.clone(),
                    op_count: i.op_count,
                })
            })
        })
    }

    // Requests to the worker.

    /// Compares the theory of the form's TOML `toml` with the analysis.
    pub fn ask_theory(&self, toml: String) {
        client::load(LoadRequest {
            options: page_options(),
            theory: Some(toml),
            hardware: self
                .theory
                .form
                .with_untracked(|f| f.get(HARDWARE_FIELD).cloned()),
            ..LoadRequest::default()
        })
    }

    /// Asks for every file's fingerprint (a link is made, or checked, from them).
    pub fn ask_fingerprints(&self) {
        client::load(LoadRequest {
            options: page_options(),
            fingerprints: true,
            ..LoadRequest::default()
        })
    }

    /// Asks for the timeline with this filter and clock.
    pub fn ask_view(&self, v: TimelineView) {
        client::load(LoadRequest {
            options: page_options(),
            view: Some(v),
            ..LoadRequest::default()
        })
    }

    /// Sets the Steps view's state; a change of what the analysis runs with asks the worker to
    /// run the step analysis again (a bundle has no worker: its steps stay as recorded).
    pub fn set_steps_view(&self, v: StepsView) {
        let ask_changed = self.steps_view.with_untracked(|old| old.ask != v.ask);
        let ask: StepsAsk = v.ask.clone();
        self.steps_view.set(v);
        if ask_changed && !self.is_bundle {
            client::load(LoadRequest {
                options: page_options(),
                steps: Some(ask),
                ..LoadRequest::default()
            })
        }
    }

    /// Picks a kernel by what identifies it across loads (a link's selection).
    pub fn select_by(&self, sel: Selection) {
        self.awaiting_selection.set(true);
        client::load(LoadRequest {
            options: page_options(),
            pick_by: Some((sel.rank, sel.comm, sel.op_count)),
            ..LoadRequest::default()
        })
    }

    /// Shows the Timeline view around `window` (trace ns, in the clock the timeline shows), with
    /// the collective instance `sel` picked when given: what a row of any analysis (an outlier, a
    /// finding, a departure) does when clicked. The window is widened by half its length on each
    /// side (at least a microsecond) so that what came before and after is in view too.
    pub fn open_on_timeline(&self, window: (i64, i64), sel: Option<Selection>) {
        let (a, b) = (window.0.min(window.1), window.0.max(window.1));
        let pad = ((b - a) / 2).max(1_000);
        self.window.set(Some(View {
            start_ns: (a - pad) as f64,
            end_ns: (b + pad) as f64,
        }));
        self.view
            .set(ncclscope_app::page_logic::views::TIMELINE_VIEW);
        if let Some(sel) = sel {
            self.select_by(sel);
        }
    }

    /// Picks the kernel at (track, span) of the timeline: the drawer shows it.
    pub fn pick(&self, p: (usize, usize)) {
        self.selected.set(Some(p));
        self.no_details.set(false);
        self.drawer.set(Some(Drawer::Kernel));
        client::load(LoadRequest {
            options: page_options(),
            pick: Some(p),
            ..LoadRequest::default()
        })
    }

    /// Asks for the aggregate of range `(a, b)` (ns), of `scope`: the drawer shows it.
    pub fn ask_range(&self, (a, b): (f64, f64), scope: Scope) {
        self.asked_scope.set_value(scope);
        self.drawer.set(Some(Drawer::Range));
        client::load(LoadRequest {
            options: page_options(),
            window: Some((a as i64, b as i64)),
            ..LoadRequest::default()
        })
    }

    /// Asks for the aggregate of the visible window.
    pub fn ask_window(&self) {
        if let Some(v) = self.window.get_untracked() {
            self.ask_range((v.start_ns, v.end_ns), Scope::Visible)
        }
    }

    /// Asks for a download: `chrome-trace` or `csv`.
    pub fn ask_export(&self, kind: &str) {
        client::load(LoadRequest {
            options: page_options(),
            export: Some(kind.to_string()),
            ..LoadRequest::default()
        })
    }

    /// Shows a self-contained link just made (it is in the address bar too), or why it could
    /// not be made.
    /// Whether the file an evidence line names is loaded here (a worker holds it): its view
    /// then reads the file, else it shows the line as the finding carries it.
    pub fn has_file(&self, path: &str) -> bool {
        !self.is_bundle
            && self
                .rows
                .with_untracked(|r| r.iter().any(|row| row.name == path))
    }

    /// The diagnosis's findings as a link carries them (`None` without findings).
    pub fn shared_diagnosis(&self) -> Option<SharedDiagnosis> {
        self.insights
            .with_untracked(|i| i.as_ref().and_then(|i| SharedDiagnosis::of(&i.diagnosis)))
    }

    pub fn show_link(&self, made: Option<Result<String, String>>) {
        match made {
            Some(Ok(url)) => {
                self.share_error.set(None);
                self.share_url.set(Some(url));
            }
            Some(Err(e)) => self.share_error.set(Some(e)),
            None => {}
        }
    }
}

/// The app's state, from any component under the app.
pub fn app_state() -> AppState {
    expect_context::<AppState>()
}

/// Where the comparison is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Nothing to compare with yet.
    Idle,
    /// The other run's files are being read and analysed.
    Loading,
    /// Its profile is being built.
    Profiling,
    /// The first worker compares.
    Comparing,
    Done,
}

/// The other run's profile, or (its label, why it has none).
pub(crate) type Other = Result<RunProfile, (String, String)>;

/// The comparison's signals (a field of [`AppState`]; the flow is `page::compare`'s).
#[derive(Clone, Copy)]
pub struct CompareState {
    /// The other run's files, as they load.
    pub rows: RwSignal<Vec<Row>>,
    pub label: RwSignal<String>,
    pub phase: RwSignal<Phase>,
    pub diff: RwSignal<Option<Arc<RunDiff>>>,
    /// The run loaded first is the baseline (false: the user swapped the two).
    pub loaded_is_base: RwSignal<bool>,
    pub(crate) other: StoredValue<Option<Other>>,
    /// Bumped when a comparison starts: the app opens the Compare view.
    pub started: RwSignal<u64>,
    /// The other run's files' fingerprints (its worker's, once it is analysed): a link to the
    /// comparison names them (`bf=`).
    pub files: RwSignal<Vec<LinkFile>>,
    /// The two timelines stacked, aligned on a step's start.
    pub stacked: StackedState,
}

/// A run's timeline cut to one step ([`ncclscope_app::protocol::stacked`]), times relative to
/// the step's start.
pub type Cut = Arc<(StackedInfo, Timeline)>;

/// The Compare view's stacked timelines: each run's cut, from its own worker, and the window
/// both are drawn in (shared: zoom and pan move both).
#[derive(Clone, Copy)]
pub struct StackedState {
    /// The step asked for (`None`: each run's first).
    pub step: RwSignal<Option<u64>>,
    /// The loaded run's cut and the other run's.
    pub own: RwSignal<Option<Cut>>,
    pub other: RwSignal<Option<Cut>>,
    /// The shared window, ns since the step's start (`None`: the longer step whole).
    pub view: RwSignal<Option<View>>,
    /// Cuts received, by (the loaded run's, step): a bundle switches steps among them.
    pub(crate) cache: StoredValue<Vec<(bool, Option<u64>, Cut)>>,
}

impl StackedState {
    fn new() -> StackedState {
        StackedState {
            step: RwSignal::new(None),
            own: RwSignal::new(None),
            other: RwSignal::new(None),
            view: RwSignal::new(None),
            cache: StoredValue::new(Vec::new()),
        }
    }
}

impl CompareState {
    pub fn new() -> CompareState {
        CompareState {
            rows: RwSignal::new(Vec::new()),
            label: RwSignal::new(String::new()),
            phase: RwSignal::new(Phase::Idle),
            diff: RwSignal::new(None),
            loaded_is_base: RwSignal::new(true),
            other: StoredValue::new(None),
            started: RwSignal::new(0),
            files: RwSignal::new(Vec::new()),
            stacked: StackedState::new(),
        }
    }
}

impl Default for CompareState {
    fn default() -> Self {
        CompareState::new()
    }
}
