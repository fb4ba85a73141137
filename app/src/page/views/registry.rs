//! The views the view bar lists, in its order. A view is one entry here (what
//! `page_logic::views::ViewSpec` says of it, the component that draws it, and whether the files
//! loaded give it something to show) and one component. Adding an analysis view: write its
//! component (a file in `page/views/`, reading `app_state()`), then add its entry below with a
//! slug, a name, a key the timeline does not take and what it needs; the bar, its key, links
//! (`p=`) and the "needs" message follow. The catalogue is checked when the page starts.

use leptos::prelude::*;
use ncclscope_app::page_logic::views::{check as check_specs, of_link, ViewSpec};

use crate::page::app::state::{app_state, AppState};
use crate::page::panels::insights::diagnosis::DiagnosisPanel;
use crate::page::panels::insights::identity::IdentityPanel;
use crate::page::panels::insights::patterns::PatternsPanel;
use crate::page::panels::insights::steps::{StepsControls, StepsPanel};
use crate::page::views::{analyses, inputs, overview};

/// The Patterns view: its state and the theory's predicted matrix from the app; an outlier
/// opens on the timeline in the clock the timeline shows.
fn patterns_view() -> AnyView {
    let s = app_state();
    let theory = s.theory.view;
    let predicted = Signal::derive(move || {
        theory.with(|v| {
            v.as_ref()
                .and_then(|v| v.predicted.clone())
                .map(std::sync::Arc::new)
        })
    });
    let on_outlier = Callback::new(move |o: ::analyses::patterns::model::Outlier| {
        let own_clock = s.timeline_view.with_untracked(|v| v.original_clock);
        let window = if own_clock {
            (o.start_ns, o.end_ns)
        } else {
            (o.sync_start_ns, o.sync_end_ns)
        };
        let sel = u64::from_str_radix(&o.op_count, 16).ok().map(|op_count| {
            ncclscope_app::page_logic::link::Selection {
                rank: o.rank,
                comm: o.comm.clone(),
                op_count,
            }
        });
        s.open_on_timeline(window, sel);
    });
    view! { <PatternsPanel insights=s.insights state=s.patterns predicted=predicted on_outlier=on_outlier /> }
        .into_any()
}

/// One view: its spec, its component, and whether it has something to show.
pub struct ViewDef {
    pub spec: ViewSpec,
    pub body: fn() -> AnyView,
    /// Whether the files loaded give it something to show; else it says what it needs
    /// (`spec.needs`). Tracked.
    pub ready: fn(&AppState) -> bool,
    /// Listed only while it is ready (the view of an opened aggregate).
    pub optional: bool,
}

const fn spec(
    slug: &'static str,
    name: &'static str,
    key: char,
    legacy: &'static [&'static str],
    about: &'static str,
    needs: &'static str,
) -> ViewSpec {
    ViewSpec {
        slug,
        name,
        key,
        legacy,
        about,
        needs,
    }
}

const LOGS: &str = "NCCL logs (NCCL_DEBUG=INFO)";
const LOGS_AND_EXPORTS: &str =
    "NCCL logs and the Nsight Systems exports (.sqlite) of the same processes";

fn has_logs(s: &AppState) -> bool {
    s.ranks.with(|r| !r.is_empty())
}

pub const VIEWS: [ViewDef; 18] = [
    ViewDef {
        spec: spec("overview", "Overview", 'o', &[], "What was loaded, how well it fused, the layout and the communication per parallelism, beside the timeline", "files"),
        body: || view! { <overview::Overview /> }.into_any(),
        ready: |_| true,
        optional: false,
    },
    ViewDef {
        spec: spec("timeline", "Timeline", 't', &["window"], "Every rank's NCCL kernels in synchronised time, the whole view's height", "Nsight Systems exports (.sqlite)"),
        body: || view! { <crate::page::timeline::pane::TimelinePane /> }.into_any(),
        ready: |s| s.timeline.with(|t| !t.tracks.is_empty()),
        optional: false,
    },
    ViewDef {
        spec: spec("inputs", "Inputs", 'i', &["files"], "Every file with its kind, version, contents and problems", "files"),
        body: || view! { <inputs::Inputs /> }.into_any(),
        ready: |s| s.rows.with(|r| !r.is_empty()),
        optional: false,
    },
    ViewDef {
        spec: spec("notes", "Notes", 'n', &[], "Every skipped line of each file with its reason and text", "files with notes"),
        body: || view! { <analyses::Notes /> }.into_any(),
        ready: |s| s.rows.with(|r| r.iter().any(|x| x.report.as_ref().is_some_and(|v| v.diagnostic_count > 0))),
        optional: false,
    },
    ViewDef {
        spec: spec("communicators", "Communicators", 'c', &[], "Each communicator, its parallelism with the evidence, its bandwidth and set-up", LOGS),
        body: || view! { <analyses::Communicators /> }.into_any(),
        ready: |s| s.comms.with(|c| !c.rows.is_empty()),
        optional: false,
    },
    ViewDef {
        spec: spec("ranks", "Ranks", 'r', &[], "What each rank's log says it did, its communicators and topology", LOGS),
        body: || view! { <analyses::Ranks /> }.into_any(),
        ready: has_logs,
        optional: false,
    },
    ViewDef {
        spec: spec("alignment", "Alignment", 'l', &[], "Per rank, how the log's lines matched the exports' kernels", LOGS_AND_EXPORTS),
        body: || view! { <analyses::Section section=0 /> }.into_any(),
        ready: |s| s.panels.ready(0),
        optional: false,
    },
    ViewDef {
        spec: spec("warnings", "Warnings", 'g', &[], "The logs' NCCL WARN lines with file, line and time", LOGS),
        body: || view! { <analyses::Section section=1 /> }.into_any(),
        ready: |s| has_logs(s) || s.panels.ready(1),
        optional: false,
    },
    ViewDef {
        spec: spec("operations", "Operations", 'p', &[], "Operations and bytes per type, in all and per rank", LOGS),
        body: || view! { <analyses::Section section=2 /> }.into_any(),
        ready: |s| s.panels.ready(2),
        optional: false,
    },
    ViewDef {
        spec: spec("bandwidth", "Bandwidth", 'b', &[], "Bus bandwidth against message size with the links' limits, and the bus efficiency", LOGS_AND_EXPORTS),
        body: || view! { <analyses::Section section=3 /> }.into_any(),
        ready: |s| s.panels.ready(3),
        optional: false,
    },
    ViewDef {
        spec: spec("topology", "Topology", 'y', &[], "Each node's GPUs, switches, CPUs and NICs with their links", "NCCL logs with the topology (NCCL_DEBUG_SUBSYS=GRAPH)"),
        body: || view! { <analyses::Section section=4 /> }.into_any(),
        ready: |s| s.panels.ready(4),
        optional: false,
    },
    ViewDef {
        spec: spec("theory", "Theory", 'h', &[], "Your model and layout's communication volume beside the run's, and kernel times beside the alpha-beta model", LOGS),
        body: || view! { <analyses::Theory /> }.into_any(),
        ready: has_logs,
        optional: false,
    },
    ViewDef {
        spec: spec("diagnosis", "Diagnosis", 'x', &[], "What went wrong, from the logs alone: hangs, mismatched collectives, the first error, settings that differ", LOGS),
        body: || view! { <DiagnosisPanel insights=app_state().insights /> }.into_any(),
        // Also with a link's findings and no file.
        ready: |s| has_logs(s) || s.link.with(|l| l.expected().is_some_and(|l| l.diagnosis.is_some())),
        optional: false,
    },
    ViewDef {
        spec: spec("steps", "Steps", 'u', &[], "Why a step is slow: which stage and rank hold each step's time, and operations slower than their baseline", "a stage file, exports with NVTX step ranges, or kernels of several steps"),
        body: || view! { <StepsPanel insights=app_state().insights controls=steps_controls(app_state()) /> }.into_any(),
        ready: |s| s.insights.with(|i| i.as_ref().is_some_and(|i| i.steps.is_some())),
        optional: false,
    },
    ViewDef {
        spec: spec("patterns", "Patterns", 'm', &["matrix"], "Where traffic flows: the rank-to-rank matrix, each communicator's rhythm, the run's own α-β model", LOGS),
        body: patterns_view,
        ready: has_logs,
        optional: false,
    },
    ViewDef {
        spec: spec("identity", "Identity", 'k', &[], "How each rank's log was paired with its export's process, how sure that is, and its log's stamps", LOGS_AND_EXPORTS),
        body: || view! { <IdentityPanel insights=app_state().insights /> }.into_any(),
        ready: |s| s.insights.with(|i| i.as_ref().is_some_and(|i| !i.identity.is_empty())),
        optional: false,
    },
    ViewDef {
        spec: spec("compare", "Compare", 'v', &["diff"], "The loaded run against another: what changed, ranked by impact, like matched with like", "a run loaded first (then the other run's files, with \"Compare with…\")"),
        body: || view! { <crate::page::views::compare::Compare /> }.into_any(),
        ready: |s| s.analysis_ms.with(Option::is_some),
        optional: false,
    },
    ViewDef {
        spec: spec("aggregate", "Aggregate", 'e', &[], "An aggregate file (ncclscope analyze --aggregate): every rank's figures, the activity strip, the communicators", "an aggregate file (.agg)"),
        body: || view! { <crate::page::panels::aggregate::AggregatePanel state=app_state().aggregate /> }.into_any(),
        ready: |s| s.aggregate.is_open(),
        optional: true,
    },
];

/// Says on the console (and so fails every browser test) when the catalogue is not one: two
/// views with one key, a key the timeline takes, ...
pub fn check() {
    let specs: Vec<ViewSpec> = VIEWS.iter().map(|v| v.spec).collect();
    if let Err(e) = check_specs(&specs) {
        web_sys::console::error_1(&format!("ncclscope: the views: {e}").into());
    }
    if slug(ncclscope_app::page_logic::views::TIMELINE_VIEW) != "timeline" {
        web_sys::console::error_1(
            &"ncclscope: the views: TIMELINE_VIEW is not the timeline".into(),
        );
    }
}

pub fn slug(i: usize) -> &'static str {
    VIEWS.get(i).map_or("overview", |v| v.spec.slug)
}

pub fn name(i: usize) -> &'static str {
    VIEWS.get(i).map_or("Overview", |v| v.spec.name)
}

/// The view a link's `p=` names (a slug, or a panel id of the page before views).
pub fn index_of_link(p: &str) -> Option<usize> {
    let specs: Vec<ViewSpec> = VIEWS.iter().map(|v| v.spec).collect();
    of_link(&specs, p)
}

/// Shows the view named `slug` (or a panel id of the previous layout); false when none has that
/// name.
pub fn open(s: &AppState, slug: &str) -> bool {
    match index_of_link(slug) {
        Some(i) => {
            s.view.set(i);
            true
        }
        None => false,
    }
}

/// Whether view `i` has something to show (tracked).
pub fn ready(s: &AppState, i: usize) -> bool {
    VIEWS.get(i).is_some_and(|v| (v.ready)(s))
}

/// Whether view `i` is in the bar (tracked).
pub fn listed(s: &AppState, i: usize) -> bool {
    VIEWS.get(i).is_some_and(|v| !v.optional || (v.ready)(s))
}

/// View `i`: its component once it has something to show, until then what it needs.
pub fn body(i: usize) -> AnyView {
    let s = app_state();
    let Some(def) = VIEWS.get(i) else {
        return ().into_any();
    };
    let ready = Memo::new(move |_| (def.ready)(&s));
    (move || {
        if ready.get() {
            untrack(def.body)
        } else {
            needs(&s, def).into_any()
        }
    })
    .into_any()
}

/// What an empty view says.
fn needs(s: &AppState, def: &'static ViewDef) -> impl IntoView {
    let s = *s;
    let loading =
        move || s.analysing.get() || (s.has_files() && s.analysis_ms.with(Option::is_none));
    view! {
        <section class="view-needs" data-testid="view-needs">
            <h2>{def.spec.name}</h2>
            <p>{def.spec.about}"."</p>
            <p class="hint">
                {move || if loading() {
                    "The files are being read and analysed…".to_string()
                } else {
                    format!("This view needs {}: the files loaded so far have none.", def.spec.needs)
                }}
            </p>
        </section>
    }
}

/// The Steps view's state and what its choices do: settings go through
/// [`AppState::set_steps_view`]; an outlier opens on the timeline in the clock it shows.
fn steps_controls(s: AppState) -> StepsControls {
    StepsControls {
        state: s.steps_view,
        on_set: Callback::new(move |v| s.set_steps_view(v)),
        on_open: Callback::new(move |o: ::analyses::steps::baselines::Outlier| {
            let original = s.timeline_view.with_untracked(|v| v.original_clock);
            let (window, sel) =
                ncclscope_app::page_logic::steps_target::outlier_target(&o, original);
            s.open_on_timeline(window, sel);
        }),
    }
}
