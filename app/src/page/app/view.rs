//! The shell: the header with the actions, what a link or the memory budget asks of the user,
//! the status line, the view bar, the view shown and the details drawer beside it. The view
//! fills the window's height; only views of tables and charts scroll.

use leptos::prelude::*;
use leptos::task::spawn_local;
use web_sys::Blob;

use crate::page::app::intake::{load_all, load_sources};
use crate::page::app::state::AppState;
use crate::page::budget_dialog::BudgetDialog;
use crate::page::compare::chooser::CompareInputs;
use crate::page::folders::with_sizes;
use crate::page::sharing::share::LinkBanner;
use crate::page::shell::drawer::DetailsDrawer;
use crate::page::shell::header::Header;
use crate::page::shell::nav::ViewBar;
use crate::page::shell::status::{ShareBar, StatusLine};
use crate::page::views::registry;

#[allow(non_snake_case)]
pub fn Shell(s: AppState) -> impl IntoView {
    let slug = move || registry::slug(s.view.get());
    // A comparison that starts opens the Compare view (page::compare cannot: the registry lists
    // its view).
    Effect::new(move |seen: Option<u64>| {
        let started = s.compare.started.get();
        if seen.is_some_and(|n| n != started) {
            registry::open(&s, "compare");
        }
        started
    });
    let on_budget_load = Callback::new(move |items: Vec<(String, Blob)>| {
        spawn_local(async move { load_all(s, with_sizes(items).await) })
    });
    view! {
        <div
            class="page"
            class:dragging=move || s.dragging.get()
            class:drawer-open=move || s.drawer.with(Option::is_some)
            data-view=slug
            data-analysis-ms=move || s.analysis_ms.get().map(|ms| format!("{ms:.0}"))
            data-worker-memory=move || s.worker_memory.get().map(|b| format!("{b:.0}"))
            data-worker-heap=move || s.worker_heap.get()
            data-worker-warm-ms=move || s.warmed_up_ms.get().map(|ms| format!("{ms:.0}"))
            data-insights-ms=move || s.insights.with(|i| i.as_deref().map(insights_ms))
        >
            <Header />
            <LinkBanner state=s.link.into() on_sources=Callback::new(move |urls| load_sources(s, urls))
                other_inputs=ViewFn::from(|| view! { <CompareInputs /> }) />
            <crate::page::panels::insights::diagnosis::LinkDiagnosis
                on_open=Callback::new(move |()| { crate::page::views::registry::open(&s, "diagnosis"); }) />
            {move || s.over_budget.with(|o| o.is_some()).then(|| view! {
                <BudgetDialog
                    pending=s.over_budget
                    in_use=s.worker_memory.get_untracked().unwrap_or(0.0) as u64
                    on_load=on_budget_load
                />
            })}
            {s.is_bundle.then(|| view! {
                <p class="link-banner" data-testid="bundle-note">
                    "This is an ncclscope bundle: a snapshot of an analysed run, with no files. What needs the files (new drops, downloads, theory changes, window aggregates, new links) is not available here."
                </p>
            })}
            <ShareBar />
            <StatusLine />
            <Show when=move || s.has_files() || s.aggregate.is_open()>
                <ViewBar />
            </Show>
            <div class="workspace">
                <main id="view" class="view" data-testid="view" data-view=slug tabindex="-1"
                    aria-label=move || format!("{} view", registry::name(s.view.get()))>
                    // The body reads its own signals in its own closures: only a view change
                    // builds it again.
                    {move || {
                        let v = s.view.get();
                        untrack(|| registry::body(v))
                    }}
                </main>
                <DetailsDrawer />
            </div>
        </div>
    }
}

/// The insights' build time in the worker, in all and per analysis, as JSON
/// (`{"total": ms, "patterns": ms, ...}`), for the benchmarks (`load.mjs --insights`).
fn insights_ms(i: &ncclscope_app::protocol::insights::Insights) -> String {
    let mut m = serde_json::Map::new();
    m.insert("total".into(), i.ms.into());
    for (name, ms) in &i.ms_each {
        m.insert(name.clone(), (*ms).into());
    }
    serde_json::Value::Object(m).to_string()
}
