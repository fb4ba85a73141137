//! An opened aggregate: the run's totals, its activity strip (one pixel row per rank, so 1024 or
//! 8192 ranks fit one picture), every rank in a sortable table and the communicators with their
//! parallelism; a click on a rank (in the strip or the table) asks the worker for that rank's
//! section alone and shows its kernels on a timeline and in a table; the file's rank-to-rank
//! matrix is a heat map (or a line says the file has none). Every text comes from the file and
//! is set as text.

use leptos::html::Canvas;
use leptos::prelude::*;
use ncclscope_app::protocol::aggregate::{AggRank, AggregateView, KernelRow, RankDetailView};
use ncclscope_app::protocol::format::human_bytes;
use ncclscope_app::protocol::messages::{LoadRequest, ToPage};
use ncclscope_app::protocol::panels::Cell;
use timeline::Timeline;
use wasm_bindgen::Clamped;

use crate::page::client;
use crate::page::panels::heatmap::HeatMap;
use crate::page::tables::table::VirtualTable;
use crate::page::timeline::canvas::{context_2d, TimelineCanvas, View};
use ncclscope_app::page_logic::heat_grid::grid;
use ncclscope_app::page_logic::patterns_state::{Cells, Mode, PatternsState};
use std::sync::Arc;

/// What the page holds of the open aggregate.
#[derive(Clone, Copy)]
pub struct AggregateState {
    view: RwSignal<Option<AggregateView>>,
    /// The rank asked for, and when (for the status line).
    asked: RwSignal<Option<u32>>,
    rank: RwSignal<Option<RankDetailView>>,
    timeline: RwSignal<Timeline>,
    window: RwSignal<Option<View>>,
    picked: RwSignal<Option<(usize, usize)>>,
    fields: RwSignal<Option<Vec<(String, String)>>>,
    selection: RwSignal<Option<(f64, f64)>>,
}

impl AggregateState {
    pub fn new() -> AggregateState {
        AggregateState {
            view: RwSignal::new(None),
            asked: RwSignal::new(None),
            rank: RwSignal::new(None),
            timeline: RwSignal::new(Timeline::default()),
            window: RwSignal::new(None),
            picked: RwSignal::new(None),
            fields: RwSignal::new(None),
            selection: RwSignal::new(None),
        }
    }

    /// Whether an aggregate is open (tracked).
    pub fn is_open(&self) -> bool {
        self.view.with(Option::is_some)
    }

    /// The worker's messages about aggregates.
    pub fn receive(&self, msg: ToPage, timeline: Option<Timeline>) {
        match msg {
            ToPage::Aggregate { view } => {
                self.asked.set(None);
                self.rank.set(None);
                self.fields.set(None);
                self.picked.set(None);
                self.timeline.set(Timeline::default());
                self.view.set(Some(view));
            }
            // An answer about a rank no longer asked for is dropped.
            ToPage::AggregateRank { detail }
                if self.asked.get_untracked() == Some(detail.global_rank) =>
            {
                self.picked.set(None);
                self.fields.set(None);
                self.timeline.set(timeline.unwrap_or_default());
                self.rank.set(Some(detail));
            }
            ToPage::AggregateKernel {
                rank,
                index,
                fields,
            } if self.asked.get_untracked() == Some(rank)
                && self.picked.get_untracked() == Some((0, index)) =>
            {
                self.fields.set(Some(fields));
            }
            _ => {}
        }
    }

    fn open_rank(&self, rank: u32) {
        self.asked.set(Some(rank));
        client::load(LoadRequest {
            aggregate_rank: Some(rank),
            ..LoadRequest::default()
        });
    }

    fn pick(&self, (track, index): (usize, usize)) {
        let Some(rank) = self.asked.get_untracked() else {
            return;
        };
        self.picked.set(Some((track, index)));
        self.fields.set(None);
        client::load(LoadRequest {
            aggregate_kernel: Some((rank, index)),
            ..LoadRequest::default()
        });
    }
}

#[component]
pub fn AggregatePanel(state: AggregateState) -> impl IntoView {
    move || {
        state.view.get().map(|v| {
            let ranks = StoredValue::new(v.ranks.clone());
            let comms: Signal<_> = Memo::new(move |_| {
                state.view.with(|v| v.as_ref().map(|v| v.comms.clone()).unwrap_or_default())
            })
            .into();
            view! {
                <section class="aggregate" id="panel-aggregate" data-testid="aggregate"
                    data-ranks=v.ranks.len() data-load-ms=format!("{:.0}", v.load_ms)>
                    <h2>"Run aggregate: "{v.file.clone()}</h2>
                    <dl class="agg-totals" data-testid="agg-totals">
                        {v.totals.iter().map(|(k, val)| view! {
                            <div data-total=k.clone()><dt>{k.clone()}</dt><dd>{val.clone()}</dd></div>
                        }).collect_view()}
                    </dl>
                    <table class="files agg-ops" data-testid="agg-ops">
                        <thead><tr><th>"operation"</th><th>"operations"</th><th>"bytes"</th></tr></thead>
                        <tbody>
                            {v.ops.iter().map(|o| view! {
                                <tr data-testid="agg-op-row" data-op=o.op.clone() data-count=o.count data-bytes=o.bytes>
                                    <td>{o.op.clone()}</td><td>{o.count}</td><td>{human_bytes(o.bytes)}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                    {(!v.notes.is_empty()).then(|| view! {
                        <ul class="agg-notes" data-testid="agg-notes">
                            {v.notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}
                        </ul>
                    })}
                    <HeatStrip view=v.clone() on_rank=Callback::new(move |r| state.open_rank(r)) />
                    <AggMatrix view=v.clone() />
                    <RankDetail state=state />
                    <AggRankTable ranks=ranks on_rank=Callback::new(move |r| state.open_rank(r)) />
                    <crate::page::tables::communicators::Communicators panel=comms />
                </section>
            }
        })
    }
}

/// The file's rank-to-rank matrix as a heat map (on a canvas: 1 024 ranks are a few thousand
/// filled squares), a cell per node or per rank; or why the file has none.
#[component]
fn AggMatrix(view: AggregateView) -> impl IntoView {
    let Some(m) = view.matrix else {
        let why = view.matrix_absent.unwrap_or_default();
        return view! { <p class="hint" data-testid="agg-matrix-absent">{why}</p> }.into_any();
    };
    let m = Arc::new(m);
    let state = RwSignal::new(PatternsState::default());
    let grid = {
        let m = m.clone();
        Memo::new(move |_| Arc::new(grid(&m, &[], &state.get())))
    };
    let caption = Signal::derive(move || {
        grid.with(|g| {
            let unit = g.unit;
            format!(
                "Bytes sent, {unit} (row) to {unit} (column), {} in all, from the file's matrix; darker is more (log scale).",
                human_bytes(g.cells.iter().map(|c| c.observed).sum())
            )
        })
    });
    let notes = m
        .notes
        .iter()
        .map(|n| view! { <li>{n.message.clone()}</li> })
        .collect_view();
    view! {
        <section class="agg-matrix" data-testid="agg-matrix">
            <h3>"Where traffic flows"</h3>
            <label class="field">"cells "
                <select data-testid="agg-matrix-cells" on:change=move |e| {
                    let c = match event_target_value(&e).as_str() {
                        "r" => Cells::Ranks,
                        "n" => Cells::Nodes,
                        _ => Cells::Auto,
                    };
                    state.update(|s| { s.cells = c; s.picked = None; });
                }>
                    <option value="a">"automatic"</option>
                    <option value="r">"ranks"</option>
                    <option value="n">"nodes"</option>
                </select>
            </label>
            <HeatMap grid=grid.into() mode=Signal::derive(|| Mode::Observed)
                picked=Signal::derive(move || state.with(|s| s.picked))
                on_pick=Callback::new(move |at| state.update(|s| s.picked = at))
                test_id="agg-matrix-heatmap" caption=caption />
            <ul class="notes">{notes}</ul>
        </section>
    }
    .into_any()
}

/// Left of the strip: each rank's median bus bandwidth, as a band this many pixels wide.
const BAND: u32 = 10;
const GAP: u32 = 2;

/// The whole run at once: per rank a pixel row, per time bin a pixel, shaded by the share of the
/// bin the GPU ran NCCL kernels; the band at the left is the rank's median bus bandwidth against
/// the best rank's. A click opens the rank under the mouse.
#[component]
fn HeatStrip(view: AggregateView, on_rank: Callback<u32>) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    let busy = view.heat.bytes();
    let bins = view.heat.bins.max(1);
    let n = view.ranks.len() as u32;
    let width = BAND + GAP + bins;
    let best_bw = view
        .ranks
        .iter()
        .filter_map(|r| r.median_bus_bw_gbps)
        .fold(0.0f64, f64::max);
    let bw: Vec<f64> = view
        .ranks
        .iter()
        .map(|r| {
            r.median_bus_bw_gbps
                .map_or(0.0, |b| b / best_bw.max(f64::MIN_POSITIVE))
        })
        .collect();
    let ranks: Vec<u32> = view.ranks.iter().map(|r| r.global_rank).collect();
    let ranks = StoredValue::new(ranks);
    Effect::new(move |_| {
        let Some(el) = canvas.get() else { return };
        draw_heat(&el, &busy, &bw, bins, n);
    });
    let hover = RwSignal::new(String::new());
    let span_ms = (view.heat.end_ns - view.heat.start_ns) as f64 / 1e6;
    let rank_at = move |e: &web_sys::MouseEvent| -> Option<u32> {
        let el = canvas.get_untracked()?;
        let h = f64::from(el.client_height().max(1));
        let i = (e.offset_y() as f64 / h * f64::from(n)).floor() as usize;
        ranks.with_value(|r| r.get(i).copied())
    };
    let css_height = n.clamp(64, 600);
    view! {
        <figure class="agg-heat">
            <figcaption>
                "Activity of every rank (rows, rank 0 at the top) over the run (left to right, "
                {format!("{span_ms:.3} ms")}
                "): darker is busier. The band at the left is each rank's median bus bandwidth. Click a rank to open it."
            </figcaption>
            <canvas
                node_ref=canvas
                data-testid="agg-heat"
                data-ranks=n
                data-bins=bins
                width=width.to_string()
                height=n.max(1).to_string()
                style=format!("height: {css_height}px")
                title=move || hover.get()
                aria-label="Activity strip of every rank; the rank table below lists the same ranks"
                on:mousemove=move |e| {
                    let text = rank_at(&e).map(|r| format!("rank {r}: click to open")).unwrap_or_default();
                    hover.set(text);
                }
                on:click=move |e| {
                    if let Some(r) = rank_at(&e) {
                        on_rank.run(r);
                    }
                }
            ></canvas>
            <div class="agg-heat-axis"><span>"0 ms"</span><span>{format!("{span_ms:.3} ms")}</span></div>
        </figure>
    }
}

fn draw_heat(canvas: &web_sys::HtmlCanvasElement, busy: &[u8], bw: &[f64], bins: u32, n: u32) {
    let Some(ctx) = context_2d(canvas) else {
        return;
    };
    let width = BAND + GAP + bins;
    let mut px = vec![0u8; (width * n.max(1) * 4) as usize];
    for r in 0..n as usize {
        let row = r * width as usize * 4;
        let b = bw.get(r).copied().unwrap_or(0.0);
        for x in 0..BAND as usize {
            let at = row + x * 4;
            px[at..at + 4].copy_from_slice(&[230, 120, 20, (b * 255.0) as u8]);
        }
        for x in 0..bins as usize {
            let share = busy.get(r * bins as usize + x).copied().unwrap_or(0);
            let at = row + (BAND + GAP) as usize * 4 + x * 4;
            px[at..at + 4].copy_from_slice(&[40, 100, 220, share]);
        }
    }
    ctx.clear_rect(0.0, 0.0, f64::from(width), f64::from(n));
    if let Ok(img) =
        web_sys::ImageData::new_with_u8_clamped_array_and_sh(Clamped(&px), width, n.max(1))
    {
        let _ = ctx.put_image_data(&img, 0.0, 0.0);
    }
}

/// Brings a rank's detail, just opened, into view: from the strip above it the top half of the
/// screen keeps the strip; from the table below it, it comes to the top.
fn reveal(el: &web_sys::Element) {
    let Some(w) = web_sys::window() else { return };
    let height = w
        .inner_height()
        .ok()
        .and_then(|h| h.as_f64())
        .unwrap_or(800.0);
    let top = el.get_bounding_client_rect().top();
    if top > height - 120.0 {
        w.scroll_by_with_x_and_y(0.0, top - height * 0.5);
    } else if top < 0.0 {
        w.scroll_by_with_x_and_y(0.0, top - 8.0);
    }
}

/// The rank asked for: its status line, its timeline, its kernels and the picked kernel's fields.
#[component]
fn RankDetail(state: AggregateState) -> impl IntoView {
    let no_hover =
        crate::page::timeline::tooltip::Hover::new(Callback::new(|_: (usize, usize)| {}));
    let flow = Signal::derive(Vec::new);
    let anchor = NodeRef::<leptos::html::Div>::new();
    // Once per answer: the rank's section has arrived.
    Effect::new(move |_| {
        if state.rank.with(Option::is_some) {
            if let Some(el) = anchor.get() {
                reveal(&el);
            }
        }
    });
    let body = move || {
        let asked = state.asked.get()?;
        let loaded = state.rank.get().filter(|d| d.global_rank == asked);
        Some(match loaded {
            None => view! {
                <section class="agg-rank" data-testid="agg-rank" data-rank=asked>
                    <p class="hint" data-testid="agg-rank-loading">{format!("Reading rank {asked}'s section…")}</p>
                </section>
            }
            .into_any(),
            Some(d) if d.error.is_some() => view! {
                <section class="agg-rank" data-testid="agg-rank" data-rank=asked>
                    <p class="error" data-testid="agg-rank-error">{d.error.clone().unwrap_or_default()}</p>
                </section>
            }
            .into_any(),
            Some(d) => {
                let shown = d.rows.len();
                let keys = d.rows.iter().map(kernel_cells).collect::<Vec<_>>();
                let rows_kept = StoredValue::new(d.rows.clone());
                view! {
                    <section class="agg-rank" data-testid="agg-rank" data-rank=asked data-kernels=d.kernels>
                        <h3 data-testid="agg-rank-title">{d.title.clone()}</h3>
                        <p class="hint" data-testid="agg-rank-status">
                            {format!(
                                "{} kernels ({} matched) · its section, {}, read and decoded in {:.0} ms",
                                d.kernels, d.matched, human_bytes(d.section_bytes), d.load_ms
                            )}
                        </p>
                        <TimelineCanvas
                            timeline=state.timeline.into()
                            view=state.window
                            selected=state.picked.into()
                            flow=flow
                            on_pick=Callback::new(move |p| state.pick(p))
                            selection=state.selection
                            on_select=Callback::new(|_: (f64, f64)| {})
                            hover=no_hover
                        />
                        {move || state.fields.get().map(|f| view! {
                            <dl class="agg-kernel-fields" data-testid="agg-kernel-fields">
                                {f.into_iter().map(|(k, v)| view! { <dt>{k.clone()}</dt><dd data-field-name=k>{v}</dd> }).collect_view()}
                            </dl>
                        })}
                        <table class="files" data-testid="agg-rank-ops">
                            <thead><tr><th>"operation"</th><th>"kernels"</th><th>"bytes"</th><th>"kernel time"</th></tr></thead>
                            <tbody>
                                {d.ops.iter().map(|(op, k, b, ns)| view! {
                                    <tr data-op=op.clone() data-kernels=*k>
                                        <td>{op.clone()}</td><td>{*k}</td><td>{human_bytes(*b)}</td>
                                        <td>{format!("{:.1} µs", *ns as f64 / 1e3)}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                        <p class="hint">{if (shown as u64) < d.kernels {
                            format!("The first {shown} of {} kernels; pick any on the timeline.", d.kernels)
                        } else {
                            format!("All {shown} kernels; click one for its fields.")
                        }}</p>
                        <VirtualTable test_id="agg-kernel-table" class="agg-kernels"
                            headers=KERNEL_HEADERS.map(String::from).to_vec()
                            keys=Signal::stored(keys)
                            row=move |i: usize| rows_kept.with_value(|r| r.get(i).cloned()).map(|r| kernel_row(state, r)) />
                    </section>
                }
                .into_any()
            }
        })
    };
    view! { <div node_ref=anchor>{body}</div> }
}

const KERNEL_HEADERS: [&str; 9] = [
    "start (µs)",
    "duration (µs)",
    "operation",
    "communicator",
    "parallelism",
    "opCount",
    "bytes",
    "bus BW",
    "match",
];

/// A kernel row's sort keys, filter text and CSV fields: the texts its row shows.
fn kernel_cells(r: &KernelRow) -> Vec<Cell> {
    vec![
        Cell::num(r.start_us, format!("{:.3}", r.start_us)),
        Cell::num(r.duration_us, format!("{:.3}", r.duration_us)),
        Cell::text(r.op.clone()),
        Cell::text(r.comm.clone()),
        Cell::text(r.parallelism.clone()),
        r.op_count.map_or(Cell::text(""), Cell::count),
        r.bytes
            .map_or(Cell::text(""), |b| Cell::num(b as f64, human_bytes(b))),
        Cell::parsed(r.bus_bw.clone()),
        Cell::text(if r.matched { "matched" } else { "unmatched" }),
    ]
}

fn kernel_row(state: AggregateState, r: KernelRow) -> impl IntoView {
    let index = r.index;
    view! {
        <tr data-testid="agg-kernel-row" data-index=index
            class:picked=move || state.picked.get() == Some((0, index))
            on:click=move |_| state.pick((0, index))>
            <td>{format!("{:.3}", r.start_us)}</td>
            <td>{format!("{:.3}", r.duration_us)}</td>
            <td>{r.op}</td>
            <td><code>{r.comm}</code></td>
            <td>{r.parallelism}</td>
            <td>{r.op_count.map(|c| c.to_string()).unwrap_or_default()}</td>
            <td>{r.bytes.map(human_bytes).unwrap_or_default()}</td>
            <td>{r.bus_bw}</td>
            <td>{if r.matched { "matched" } else { "unmatched" }}</td>
        </tr>
    }
}

const RANK_HEADERS: [&str; 12] = [
    "rank",
    "host",
    "pid",
    "GPU",
    "kernels",
    "matched",
    "operations (bytes)",
    "bytes",
    "busy",
    "busy share",
    "median bus BW",
    "communicators",
];

fn rank_cells(r: &AggRank) -> Vec<Cell> {
    let ops: Vec<String> = r
        .ops
        .iter()
        .map(|o| format!("{}: {} ({})", o.op, o.count, o.bytes))
        .collect();
    vec![
        Cell::count(r.global_rank.into()),
        Cell::text(r.host.clone()),
        Cell::count(r.pid.into()),
        r.local_rank
            .map_or(Cell::text(""), |d| Cell::count(d.into())),
        Cell::count(r.kernels),
        Cell::count(r.matched),
        Cell::num(r.op_count as f64, ops.join("; ")),
        Cell::num(r.op_bytes as f64, human_bytes(r.op_bytes)),
        Cell::num(
            r.busy_ns as f64,
            format!("{:.3} ms", r.busy_ns as f64 / 1e6),
        ),
        Cell::num(r.busy_share, format!("{:.1} %", r.busy_share * 100.0)),
        r.median_bus_bw_gbps
            .map_or(Cell::text(""), |b| Cell::num(b, format!("{b:.2} GB/s"))),
        Cell::count(r.comms as u64),
    ]
}

/// Every rank, sortable and filterable; a rank's button opens it.
#[component]
fn AggRankTable(ranks: StoredValue<Vec<AggRank>>, on_rank: Callback<u32>) -> impl IntoView {
    let keys = ranks.with_value(|r| r.iter().map(rank_cells).collect::<Vec<_>>());
    let row = move |i: usize| ranks.with_value(|r| r.get(i).map(|r| rank_row(r, on_rank)));
    view! {
        <section class="ranks">
            <h3>"Ranks"</h3>
            <VirtualTable test_id="agg-rank-table" headers=RANK_HEADERS.map(String::from).to_vec()
                keys=Signal::stored(keys) row=row />
        </section>
    }
}

fn rank_row(r: &AggRank, on_rank: Callback<u32>) -> impl IntoView {
    let rank = r.global_rank;
    let title = if r.rank_from_init {
        "from the communicator init lines"
    } else {
        "numbered by the job (no init line)"
    };
    view! {
        <tr data-testid="agg-rank-row" data-rank=rank data-kernels=r.kernels data-matched=r.matched
            data-busy-ns=r.busy_ns>
            <td title=title>
                <button class="link" data-testid="agg-open-rank" on:click=move |_| on_rank.run(rank)>{rank}</button>
            </td>
            <td>{r.host.clone()}</td>
            <td>{r.pid}</td>
            <td>{r.local_rank.map(|d| d.to_string()).unwrap_or_default()}</td>
            <td>{r.kernels}</td>
            <td>{r.matched}</td>
            <td>
                {r.ops.iter().map(|o| view! {
                    <span class="fact" data-op=o.op.clone() data-count=o.count data-bytes=o.bytes>
                        {o.op.clone()}": "<b>{format!("{} ({})", o.count, human_bytes(o.bytes))}</b>
                    </span>
                }).collect_view()}
            </td>
            <td>{human_bytes(r.op_bytes)}</td>
            <td>{format!("{:.3} ms", r.busy_ns as f64 / 1e6)}</td>
            <td>{format!("{:.1} %", r.busy_share * 100.0)}</td>
            <td>{r.median_bus_bw_gbps.map(|b| format!("{b:.2} GB/s")).unwrap_or_default()}</td>
            <td>{r.comms}</td>
        </tr>
    }
}
