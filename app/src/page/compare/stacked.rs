//! The Compare view's two timelines stacked (issue 35; docs/design/diff.md, "Stacked
//! timelines"): the base run's above the new run's, each cut to the same step by its own worker
//! and drawn on "time since the step's start" (the earliest rank's), so that step k starts at
//! the same x in both and a slower step visibly ends further right — real durations, never
//! stretched. A step selector picks k; zoom (wheel) and pan (drag) move both canvases together.
//! Runs without steps are aligned on their starts, and the note says so. The rows are drawn by
//! the timeline's own code ([`crate::page::timeline::draw`]).

use leptos::html::Canvas;
use leptos::prelude::*;
use ncclscope_app::page_logic::timeline_math::{pan, zoom};
use ncclscope_app::page_logic::track_rows::layout;
use ncclscope_app::protocol::format::human_duration;
use ncclscope_app::protocol::stacked::{shared_window, StackedInfo};
use std::collections::BTreeSet;

use crate::page::app::state::{app_state, AppState, Cut};
use crate::page::compare::ask_stacked;
use crate::page::timeline::draw::{context_2d, draw, Frame, Geometry, View, LABEL_WIDTH};

/// Rows are this tall (canvas pixels), less for many ranks, down to [`ROW_LEAST`].
const ROW_MOST: f64 = 22.0;
const ROW_LEAST: f64 = 12.0;
/// The rows of one run fill about this much height before they shrink.
const ROWS_HEIGHT: f64 = 260.0;
/// One wheel notch zooms by this factor.
const WHEEL_ZOOM: f64 = 1.25;

/// Both runs stacked, with the step selector and what the alignment is.
#[component]
pub fn Stacked() -> impl IntoView {
    let s = app_state();
    let c = s.compare;
    let st = c.stacked;
    let side = move |base: bool| {
        Signal::derive(move || {
            if base == c.loaded_is_base.get() {
                st.own.get()
            } else {
                st.other.get()
            }
        })
    };
    let (base, new) = (side(true), side(false));
    let window = Signal::derive(move || {
        st.view.get().or_else(|| {
            let (a, b) = (base.get()?, new.get()?);
            Some(View::from(shared_window(&a.0, &b.0)))
        })
    });
    let steps = move || {
        let mut all: Vec<u64> = [base.get(), new.get()]
            .iter()
            .flatten()
            .flat_map(|c| c.0.steps.clone())
            .collect();
        all.sort_unstable();
        all.dedup();
        if s.is_bundle {
            // A bundle has no worker to cut another step: it offers the steps it carries.
            all.retain(|k| bundled_step(s, *k));
        }
        all
    };
    let shown_step = move || base.get().and_then(|c| c.0.step);
    let options = move || {
        let current = shown_step();
        steps()
            .into_iter()
            .map(|k| view! { <option value=k.to_string() selected=current == Some(k)>{format!("step {k}")}</option> })
            .collect_view()
    };
    let waiting = move || base.with(Option::is_none) || new.with(Option::is_none);
    view! {
        <section class="compare-stacked" data-testid="compare-stacked">
            <h3>"Both timelines, aligned on a step's start"</h3>
            <Show when=move || !waiting() fallback=move || view! {
                <p class="hint" data-testid="compare-stacked-waiting">"Cutting both runs' timelines to a step…"</p>
            }>
                <p class="hint" data-testid="compare-stacked-note">{move || note(base.get(), new.get())}</p>
                <div class="compare-stacked-controls">
                    <label>"Step "
                        <select data-testid="compare-step" disabled=move || steps().is_empty()
                            on:change=move |e| {
                                let k = event_target_value(&e).parse::<u64>().ok();
                                st.view.set(None);
                                ask_stacked(s, k);
                            }>
                            {options}
                        </select>
                    </label>
                    <button data-testid="compare-stacked-whole" on:click=move |_| st.view.set(None)>"Whole step"</button>
                    <Show when=move || s.is_bundle>
                        <span class="hint" data-testid="compare-stacked-bundled">"This bundle holds the steps viewed before it was exported."</span>
                    </Show>
                    <span class="hint">"Wheel: zoom both · drag: pan both · double click the loaded run's: its step in the Timeline view"</span>
                </div>
                <RunCanvas which="base" cut=base window=window />
                <RunCanvas which="new" cut=new window=window />
            </Show>
        </section>
    }
}

/// Whether a bundle carries both runs' cuts of step `k`.
fn bundled_step(s: AppState, k: u64) -> bool {
    s.compare.stacked.cache.with_value(|c| {
        [true, false]
            .iter()
            .all(|own| c.iter().any(|(o, step, _)| o == own && *step == Some(k)))
    })
}

/// What the alignment is, plainly: the step, its two lengths, where the steps came from; or
/// that a run has no steps and both are aligned on their starts.
fn note(base: Option<Cut>, new: Option<Cut>) -> String {
    let (Some(b), Some(n)) = (base, new) else {
        return String::new();
    };
    let (b, n) = (&b.0, &n.0);
    let length = |i: &StackedInfo| human_duration(i.length_ns as f64);
    match (b.step, n.step) {
        (Some(kb), Some(kn)) => {
            let which = if kb == kn {
                format!("Step {kb}")
            } else {
                format!("Step {kb} of the base, {kn} of the new run (it has no step {kb})")
            };
            format!(
                "{which}: {} in the base, {} in the new run (×{:.2}). Each run is drawn from the step's start (its earliest rank's), so the step starts at the same x in both and the slower one ends further right; the dashed lines are each run's step boundaries. Steps from {} (base) and {} (new).",
                length(b),
                length(n),
                n.length_ns as f64 / b.length_ns.max(1) as f64,
                b.source.as_deref().unwrap_or("?"),
                n.source.as_deref().unwrap_or("?"),
            )
        }
        _ => {
            let without: Vec<&str> = [("the base", b), ("the new run", n)]
                .iter()
                .filter(|(_, i)| i.step.is_none())
                .map(|(w, _)| *w)
                .collect();
            format!(
                "{} shows no steps (no NVTX or profiler step ranges, no period in its collectives): both runs are aligned on their starts instead, each drawn whole ({} and {}).",
                capitalised(&without.join(" and ")),
                length(b),
                length(n)
            )
        }
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The canvas x of relative time `ns` in window `v` on a canvas `width` wide.
fn x_of(ns: f64, v: View, width: f64) -> f64 {
    let plot_w = (width - LABEL_WIDTH).max(1.0);
    LABEL_WIDTH + (ns - v.start_ns) / (v.end_ns - v.start_ns).max(1.0) * plot_w
}

/// One run's cut, drawn by the timeline's code in the shared window, with its step's start and
/// end marked. Its attributes say where they are drawn, for the tests (`data-step-x`,
/// `data-step-end-x`: canvas x of the step's start and end).
#[component]
fn RunCanvas(
    which: &'static str,
    cut: Signal<Option<Cut>>,
    window: Signal<Option<View>>,
) -> impl IntoView {
    let s = app_state();
    let st = s.compare.stacked;
    let canvas = NodeRef::<Canvas>::new();
    // A double click on the loaded run's canvas opens its step in the Timeline view (the other
    // run has no timeline of its own in this page).
    let own = move || (which == "base") == s.compare.loaded_is_base.get_untracked();
    let open = move |_| {
        if let Some(c) = cut.get_untracked().filter(|_| own()) {
            let a = c.0.origin_ns;
            s.open_on_timeline((a, a + c.0.length_ns), None);
        }
    };
    let drag = StoredValue::new(None::<(f64, View)>);
    Effect::new(move |_| {
        crate::page::theme::revision().track();
        let (Some(el), Some(cut), Some(v)) = (canvas.get(), cut.get(), window.get()) else {
            return;
        };
        paint(&el, &cut, v);
    });
    let width = move || {
        canvas
            .get_untracked()
            .map_or(1200.0, |el| f64::from(el.width()))
    };
    let wheel = move |e: web_sys::WheelEvent| {
        let Some(v) = window.get_untracked() else {
            return;
        };
        e.prevent_default();
        let plot_w = (width() - LABEL_WIDTH).max(1.0);
        let at = (f64::from(e.offset_x()) - LABEL_WIDTH) / plot_w;
        let factor = if e.delta_y() > 0.0 {
            WHEEL_ZOOM
        } else {
            1.0 / WHEEL_ZOOM
        };
        st.view
            .set(Some(zoom((v.start_ns, v.end_ns), at, factor).into()));
    };
    let moved = move |e: web_sys::MouseEvent| {
        let Some((x0, v)) = drag.get_value() else {
            return;
        };
        let plot_w = (width() - LABEL_WIDTH).max(1.0);
        let windows = -(f64::from(e.offset_x()) - x0) / plot_w;
        st.view
            .set(Some(pan((v.start_ns, v.end_ns), windows).into()));
    };
    view! {
        <figure class="compare-run">
            <figcaption>{move || caption(which, cut.get())}</figcaption>
            <canvas node_ref=canvas data-testid="compare-stacked-run" data-run=which
                data-step=move || cut.get().and_then(|c| c.0.step).map(|k| k.to_string()).unwrap_or_default()
                data-length-ns=move || cut.get().map(|c| c.0.length_ns.to_string()).unwrap_or_default()
                data-spans=move || cut.get().map(|c| c.0.spans.to_string()).unwrap_or_default()
                data-window=move || window.get().map(|v| format!("{}_{}", v.start_ns as i64, v.end_ns as i64))
                width="1200"
                aria-label=format!("The {which} run's kernels per rank, time since the step's start")
                on:wheel=wheel
                on:mousedown=move |e| {
                    if let Some(v) = window.get_untracked() {
                        drag.set_value(Some((f64::from(e.offset_x()), v)));
                    }
                }
                on:mousemove=moved
                on:mouseup=move |_| drag.set_value(None)
                on:mouseleave=move |_| drag.set_value(None)
                on:dblclick=open
            ></canvas>
        </figure>
    }
}

fn caption(which: &str, cut: Option<Cut>) -> String {
    let Some(c) = cut else {
        return which.to_string();
    };
    let (info, t) = (&c.0, &c.1);
    format!(
        "{}: {} tracks, {} kernels in view of {}",
        if which == "base" { "Base" } else { "New" },
        t.tracks.len(),
        info.spans,
        info.step
            .map_or_else(|| "the whole run".to_string(), |k| format!("step {k}"))
    )
}

/// Draws `cut` in window `v`: the rows as the Timeline view draws them, then the step's start
/// and end as dashed lines; records where they are.
fn paint(el: &web_sys::HtmlCanvasElement, cut: &Cut, v: View) {
    let (info, t) = (&cut.0, &cut.1);
    let labels: Vec<&str> = t.tracks.iter().map(|k| k.label.as_str()).collect();
    let markers: Vec<&str> = t.markers.iter().map(|m| m.label.as_str()).collect();
    let l = layout(&labels, &markers, &BTreeSet::new(), false);
    let rows = l.rows.len().max(1) as f64;
    let row_px = (ROWS_HEIGHT / rows).clamp(ROW_LEAST, ROW_MOST).floor();
    let width = el
        .parent_element()
        .map(|p| f64::from(p.client_width()))
        .filter(|w| *w >= 400.0)
        .unwrap_or(1200.0);
    let height = crate::page::timeline::draw::RULER_HEIGHT + rows * row_px;
    if el.width() != width as u32 {
        el.set_width(width as u32);
    }
    if el.height() != height as u32 {
        el.set_height(height as u32);
    }
    let colours = crate::page::theme::canvas_colours();
    let frame = Frame {
        t,
        layout: &l,
        view: v,
        g: Geometry {
            row_px,
            offset_px: 0.0,
        },
        colours: &colours,
        markers_folded: false,
    };
    draw(el, &frame);
    let (x0, x1) = (x_of(0.0, v, width), x_of(info.length_ns as f64, v, width));
    if let Some(ctx) = context_2d(el) {
        ctx.set_stroke_style_str(&colours.text);
        ctx.set_line_width(1.5);
        let dash = js_sys::Array::of2(&6.0.into(), &4.0.into());
        let _ = ctx.set_line_dash(&dash);
        for x in [x0, x1] {
            if x >= LABEL_WIDTH && x <= width {
                ctx.begin_path();
                ctx.move_to(x, 0.0);
                ctx.line_to(x, height);
                ctx.stroke();
            }
        }
        let _ = ctx.set_line_dash(&js_sys::Array::new());
    }
    let _ = el.set_attribute("data-step-x", &format!("{x0:.1}"));
    let _ = el.set_attribute("data-step-end-x", &format!("{x1:.1}"));
    let _ = el.set_attribute("data-tracks", &t.tracks.len().to_string());
}
