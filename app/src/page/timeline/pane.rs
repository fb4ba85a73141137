//! The timeline as a view's canvas: the filter and clock above it, the minimap, and the canvas
//! filling the rest of the view's height. In the Overview (`compact`) the legend and the filter's
//! help fold away. Logs without exports get what the timeline needs instead of an empty box.

use leptos::prelude::*;

use crate::page::app::state::app_state;
use crate::page::panels::window::Scope;
use crate::page::timeline::canvas::TimelineCanvas;
use crate::page::timeline::controls::TimelineControls;
use crate::page::timeline::minimap::Minimap;

#[component]
pub fn TimelinePane(#[prop(optional)] compact: bool) -> impl IntoView {
    let s = app_state();
    let empty =
        move || s.analysis_ms.with(Option::is_some) && s.timeline.with(|t| t.tracks.is_empty());
    let canvas = move || {
        view! {
            <Minimap timeline=s.timeline.into() view=s.window width=s.canvas_width.into() />
            <TimelineCanvas
                timeline=s.timeline.into()
                view=s.window
                selected=s.selected.into()
                flow=s.flow()
                on_pick=Callback::new(move |p| s.pick(p))
                selection=s.selection
                on_select=Callback::new(move |r| s.ask_range(r, Scope::Selection))
                hover=s.hover
                fill=true
                rows=s.rows_state
                width=s.canvas_width
            />
        }
    };
    view! {
        <section class="timeline-pane" class:compact=compact id="panel-timeline" data-testid="timeline-pane"
            aria-label="Timeline">
            <div class="pane-toolbar">
                <TimelineControls
                    applied=s.timeline_view.into()
                    status=s.view_status.into()
                    on_apply=Callback::new(move |v| s.ask_view(v))
                    compact=compact
                />
                <button data-testid="aggregate-window" hidden=s.is_bundle
                    title="Kernels, bytes, busy time and bandwidth of the visible window, per operation and per rank"
                    on:click=move |_| s.ask_window()>
                    "Aggregate the visible window"
                </button>
            </div>
            {move || s.overview.with(|o| {
                o.as_ref().filter(|o| o.captures.len() > 1 && !compact).map(|o| view! {
                    <p class="link-banner warn" data-testid="timeline-captures">
                        {format!("These kernels come from {} captures far apart in time (see the Overview): they are laid on one clock as recorded.", o.captures.len())}
                    </p>
                })
            })}
            <Show when=move || !empty() fallback=|| view! {
                <div class="timeline-needs" data-testid="timeline-needs">
                    <h3>"The timeline needs the Nsight Systems exports"</h3>
                    <p>"The logs say which collective each rank called; the exports (" <code>".sqlite"</code> ", from " <code>"nsys export --type sqlite"</code> ") say when each NCCL kernel ran on the GPU. Drop the exports of the same processes to see every operation on a per-rank timeline. Meanwhile the ranks, communicators, operations, warnings and topology views show what the logs tell."</p>
                </div>
            }>
                {canvas}
            </Show>
        </section>
    }
}
