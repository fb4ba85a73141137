//! The analysis panels (issue 9): per-rank alignment report, the run's NCCL warnings, operation
//! counts and volume per type, bandwidth versus message size with the link limits, the
//! efficiency distribution and the topology per host. Tables sort on a header click and save as
//! CSV; every plot saves as SVG or PNG. Everything from files is text (Leptos escapes it).

use crate::page::panels::charts::{
    Bar, BarChart, HLine, Point, Scatter, TopoBox, TopologyDiagram, Unit,
};
use leptos::prelude::*;
use leptos::task::spawn_local;
use ncclscope_app::protocol::format::human_bytes;
use ncclscope_app::protocol::panels::{topology_batches, Cell, Panels};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::page::client;
use crate::page::tables::table::{save_text, VirtualTable};

/// The SVG element with `data-testid=test_id`, as a standalone file: a deep clone with the
/// namespace, each element's computed look inlined (the page's stylesheet and theme stay
/// behind) and a background, plus its size in CSS pixels.
fn standalone_svg(test_id: &str) -> Option<(String, f64, f64)> {
    let window = web_sys::window()?;
    let doc = window.document()?;
    let el = doc
        .query_selector(&format!("svg[data-testid=\"{test_id}\"]"))
        .ok()??;
    let clone: web_sys::Element = el.clone_node_with_deep(true).ok()?.dyn_into().ok()?;
    // Both trees list their elements in the same document order.
    let (from, to) = (
        el.query_selector_all("*").ok()?,
        clone.query_selector_all("*").ok()?,
    );
    for i in 0..from.length().min(to.length()) {
        let (Some(a), Some(b)) = (from.item(i), to.item(i)) else {
            continue;
        };
        let (Ok(a), Ok(b)) = (
            a.dyn_into::<web_sys::Element>(),
            b.dyn_into::<web_sys::Element>(),
        ) else {
            continue;
        };
        let Ok(Some(style)) = window.get_computed_style(&a) else {
            continue;
        };
        let inline: String = INLINED
            .iter()
            .filter_map(|p| {
                let v = style.get_property_value(p).ok()?;
                (!v.is_empty()).then(|| format!("{p}:{v};"))
            })
            .collect();
        let _ = b.set_attribute("style", &inline);
    }
    let bg = window
        .get_computed_style(&el)
        .ok()
        .flatten()
        .and_then(|s| s.get_property_value("background-color").ok())
        .unwrap_or_else(|| "#ffffff".to_string());
    let rect = el.get_bounding_client_rect();
    let (w, h) = (rect.width().max(1.0), rect.height().max(1.0));
    let back = doc
        .create_element_ns(Some("http://www.w3.org/2000/svg"), "rect")
        .ok()?;
    for (k, v) in [
        ("x", "-10000"),
        ("y", "-10000"),
        ("width", "20000"),
        ("height", "20000"),
    ] {
        let _ = back.set_attribute(k, v);
    }
    let _ = back.set_attribute("fill", &bg);
    let _ = clone.insert_before(&back, clone.first_child().as_ref());
    let _ = clone.set_attribute("xmlns", "http://www.w3.org/2000/svg");
    let _ = clone.set_attribute("font-family", "sans-serif");
    let _ = clone.set_attribute("font-size", "10");
    let _ = clone.set_attribute("width", &format!("{w:.0}"));
    let _ = clone.set_attribute("height", &format!("{h:.0}"));
    let _ = clone.remove_attribute("style");
    let text = web_sys::XmlSerializer::new()
        .ok()?
        .serialize_to_string(&clone)
        .ok()?;
    Some((text, w, h))
}

/// The properties that make a chart look as it does on the page.
const INLINED: &[&str] = &[
    "fill",
    "fill-opacity",
    "stroke",
    "stroke-width",
    "stroke-opacity",
    "stroke-dasharray",
    "opacity",
    "font-size",
    "font-weight",
];

fn save_svg(test_id: &str, file_name: &str) {
    if let Some((text, _, _)) = standalone_svg(test_id) {
        save_text(file_name, "image/svg+xml", &text);
    }
}

/// Draws the plot's SVG onto a canvas at twice its size and saves the canvas as PNG: all in
/// the tab, no server.
async fn save_png(test_id: String, file_name: String) -> Result<(), JsValue> {
    let (text, w, h) = standalone_svg(&test_id).ok_or("no such plot")?;
    let window = web_sys::window().ok_or("no window")?;
    let doc = window.document().ok_or("no document")?;
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("image/svg+xml");
    let svg = web_sys::Blob::new_with_str_sequence_and_options(
        &js_sys::Array::of1(&JsValue::from_str(&text)),
        &options,
    )?;
    let url = web_sys::Url::create_object_url_with_blob(&svg)?;
    let img = web_sys::HtmlImageElement::new()?;
    img.set_src(&url);
    let decoded = JsFuture::from(img.decode()).await;
    let _ = web_sys::Url::revoke_object_url(&url);
    decoded?;
    const SCALE: f64 = 2.0;
    let canvas: web_sys::HtmlCanvasElement = doc.create_element("canvas")?.dyn_into()?;
    canvas.set_width((w * SCALE) as u32);
    canvas.set_height((h * SCALE) as u32);
    let ctx: web_sys::CanvasRenderingContext2d = canvas
        .get_context("2d")?
        .ok_or("no 2d context")?
        .dyn_into()?;
    ctx.draw_image_with_html_image_element_and_dw_and_dh(&img, 0.0, 0.0, w * SCALE, h * SCALE)?;
    let png = js_sys::Promise::new(&mut |resolve, _reject| {
        let _ = canvas.to_blob_with_type(&resolve, "image/png");
    });
    let blob: web_sys::Blob = JsFuture::from(png).await?.dyn_into()?;
    let buffer = JsFuture::from(blob.array_buffer()).await?;
    client::download(&file_name, "image/png", &buffer)
}

/// The "SVG" and "PNG" buttons under a plot.
#[component]
fn SvgButton(#[prop(into)] target: String) -> impl IntoView {
    let svg_file = format!("ncclscope-{target}.svg");
    let png_file = format!("ncclscope-{target}.png");
    let svg_target = target.clone();
    let png_target = target.clone();
    view! {
        <span class="export-buttons">
            <button class="export-button" data-testid=format!("{target}-svg")
                title="Save this plot as SVG"
                on:click=move |_| save_svg(&svg_target, &svg_file)>
                "SVG"
            </button>
            <button class="export-button" data-testid=format!("{target}-png")
                title="Save this plot as PNG"
                on:click=move |_| {
                    let (t, f) = (png_target.clone(), png_file.clone());
                    spawn_local(async move {
                        if let Err(e) = save_png(t, f).await {
                            web_sys::console::error_1(&e);
                        }
                    });
                }>
                "PNG"
            </button>
        </span>
    }
}

/// A table that sorts on a header click (again: the other way), filters and saves as CSV;
/// only the rows in its scroll box are in the document.
#[component]
fn DataTable(
    #[prop(into)] test_id: String,
    headers: Vec<String>,
    rows: Vec<Vec<Cell>>,
) -> impl IntoView {
    let keys = Signal::stored(rows);
    let row_id = format!("{test_id}-row");
    let row = move |i: usize| {
        keys.with_untracked(|k| {
            k.get(i).map(|r| {
                let cells = r
                    .iter()
                    .enumerate()
                    .map(|(c, cell)| view! { <td data-col=c>{cell.text.clone()}</td> })
                    .collect_view();
                view! { <tr data-testid=row_id.clone()>{cells}</tr> }
            })
        })
    };
    view! { <VirtualTable test_id=test_id headers=headers keys=keys row=row /> }
}

fn headers(h: &[&str]) -> Vec<String> {
    h.iter().map(|s| s.to_string()).collect()
}

/// The panels' sections, in page order: each is drawn in its own animation frame when a new
/// analysis arrives, the topology's hosts a few per frame ([`PanelStages::steps`]), so that no
/// frame builds them all.
pub const PANEL_SECTIONS: usize = 5;
/// Nodes and links of topology diagrams drawn per frame (a 8-GPU host with its switches, NICs
/// and NVLink pairs is about 50).
const TOPOLOGY_PER_FRAME: usize = 120;

/// The panels' data and, per section, when it was last drawn from it: a section is redrawn when
/// its stage moves, and shows the previous analysis until then.
#[derive(Clone, Copy)]
pub struct PanelStages {
    panels: RwSignal<Panels>,
    drawn: [RwSignal<u64>; PANEL_SECTIONS],
    /// How many hosts' topology diagrams are drawn.
    hosts: RwSignal<usize>,
    /// After each of the topology's steps, how many hosts are drawn.
    batches: StoredValue<Vec<usize>>,
}

impl PanelStages {
    pub fn new() -> PanelStages {
        PanelStages {
            panels: RwSignal::new(Panels::default()),
            drawn: std::array::from_fn(|_| RwSignal::new(0)),
            hosts: RwSignal::new(0),
            batches: StoredValue::new(Vec::new()),
        }
    }

    /// A new analysis's panels; no section shows them yet.
    pub fn set(&self, panels: Panels) {
        self.batches
            .set_value(topology_batches(&panels.topology, TOPOLOGY_PER_FRAME));
        self.panels.set(panels);
    }

    /// How many steps draw the panels last set ([`PanelStages::draw`] each, in order).
    pub fn steps(&self) -> usize {
        PANEL_SECTIONS + self.batches.with_value(Vec::len).saturating_sub(1)
    }

    /// Step `k`: a section (the topology with its first batch of hosts), then the topology's
    /// other hosts a batch at a time.
    pub fn draw(&self, k: usize) {
        let batch = |i: usize| self.batches.with_value(|b| b.get(i).copied());
        if k == PANEL_SECTIONS - 1 {
            self.hosts.set(batch(0).unwrap_or(0));
        }
        if let Some(d) = self.drawn.get(k) {
            d.update(|n| *n += 1);
        } else if let Some(n) = batch(k + 1 - PANEL_SECTIONS) {
            self.hosts.set(n);
        }
    }
}

impl PanelStages {
    /// Whether section `k` has anything to show (tracked): the alignment, the warnings, the
    /// operations, the bandwidth scatter, the topology.
    pub fn ready(&self, k: usize) -> bool {
        self.panels.with(|p| match k {
            0 => !p.alignment.is_empty(),
            1 => p.warning_count > 0,
            2 => !p.op_totals.is_empty(),
            3 => !p.scatter.is_empty(),
            4 => !p.topology.is_empty(),
            _ => false,
        })
    }
}

/// The sections in their order, each drawing one analysis of the panels' data.
const SECTIONS: [fn(&Panels, RwSignal<usize>) -> AnyView; PANEL_SECTIONS] = [
    |p, _| alignment(p).into_any(),
    |p, _| warnings(p).into_any(),
    |p, _| operations(p).into_any(),
    |p, _| bandwidth(p).into_any(),
    |p, hosts| topology(p, hosts).into_any(),
];

/// Section `section` of the panels (a view of its own), drawn again when its stage moves.
#[component]
pub fn AnalysisSection(stages: PanelStages, section: usize) -> impl IntoView {
    let f = SECTIONS[section.min(PANEL_SECTIONS - 1)];
    move || {
        stages.drawn[section.min(PANEL_SECTIONS - 1)].track();
        stages.panels.with_untracked(|p| f(p, stages.hosts))
    }
}

fn alignment(p: &Panels) -> impl IntoView {
    (!p.alignment.is_empty()).then(|| {
        let rows: Vec<Vec<Cell>> = p
            .alignment
            .iter()
            .map(|r| {
                let rank = if r.global_rank == u32::MAX {
                    Cell::text("")
                } else {
                    Cell::count(r.global_rank.into())
                };
                vec![
                    rank,
                    Cell::text(format!("{}:{}", r.host, r.pid)),
                    Cell::count(r.kernels as u64),
                    Cell::count(r.log_ops as u64),
                    Cell::count(r.matched as u64),
                    Cell::count(r.mismatched as u64),
                    Cell::count(r.fused_kernels as u64),
                    Cell::count(r.fused_lines as u64),
                    Cell::count(r.duplicate_lines as u64),
                    Cell::count(r.orphan_lines as u64),
                    Cell::count(r.orphan_kernels as u64),
                    Cell::text(if r.duplication_2to1 { "yes" } else { "no" }),
                    r.mean_confidence
                        .map_or(Cell::text(""), |c| Cell::num(c, format!("{c:.3}"))),
                ]
            })
            .collect();
        view! {
            <section class="panel" id="panel-alignment">
                <h2>"Alignment per rank"</h2>
                <p class="hint">"NCCL kernels of the exports against the log's operation lines: fused kernels absorbed several Send/Recv lines; duplicated lines repeat an earlier line; orphans found no partner; 2:1 marks a rank that logged most operations twice."</p>
                <DataTable test_id="alignment-table" headers=headers(&["rank", "process", "NCCL kernels", "log lines", "matched", "op mismatches", "fused kernels", "fused lines", "duplicated lines", "orphan lines", "orphan kernels", "2:1 duplication", "mean confidence"]) rows=rows />
            </section>
        }
    })
}

fn warnings(p: &Panels) -> impl IntoView {
    let rows: Vec<Vec<Cell>> = p
        .warnings
        .iter()
        .map(|w| {
            vec![
                Cell::text(w.file.clone()),
                Cell::count(w.line),
                // Sorted by the time it stands for; shown as printed.
                match w.timestamp_ns {
                    Some(ns) => Cell::num(ns as f64, w.timestamp.clone()),
                    None => Cell::text(w.timestamp.clone()),
                },
                Cell::text(w.process.clone()),
                Cell::text(w.message.clone()),
            ]
        })
        .collect();
    let count = p.warning_count;
    let shown = p.warnings.len();
    view! {
        <section class="panel" id="panel-warnings">
            <h2>"NCCL warnings"</h2>
            <p class="hint" data-testid="warning-count">
                {if count == 0 {
                    "The logs hold no NCCL WARN line.".to_string()
                } else if shown < count {
                    format!("{count} NCCL WARN lines (the first {shown} listed)")
                } else {
                    format!("{count} NCCL WARN lines")
                }}
            </p>
            {(count > 0).then(|| view! {
                <DataTable test_id="warning-table" headers=headers(&["file", "line", "time", "process", "message"]) rows=rows />
            })}
        </section>
    }
}

fn operations(p: &Panels) -> impl IntoView {
    (!p.op_totals.is_empty()).then(|| {
        let count_bars: Vec<Bar> = p
            .op_totals
            .iter()
            .map(|o| Bar {
                label: o.op.clone(),
                value: o.count as f64,
                reference: None,
                title: format!("{}: {} operations", o.op, o.count),
            })
            .collect();
        let byte_bars: Vec<Bar> = p
            .op_totals
            .iter()
            .map(|o| Bar {
                label: o.op.clone(),
                value: o.bytes as f64,
                reference: None,
                title: format!("{}: {}", o.op, human_bytes(o.bytes)),
            })
            .collect();
        let rank_bars = |bytes: bool| -> Vec<Bar> {
            p.rank_ops
                .iter()
                .map(|r| {
                    let v: u64 = r
                        .ops
                        .iter()
                        .map(|o| if bytes { o.bytes } else { o.count })
                        .sum();
                    Bar {
                        label: r.global_rank.to_string(),
                        value: v as f64,
                        reference: None,
                        title: if bytes {
                            format!("rank {}: {}", r.global_rank, human_bytes(v))
                        } else {
                            format!("rank {}: {v} operations", r.global_rank)
                        },
                    }
                })
                .collect()
        };
        let rank_count_bars = rank_bars(false);
        let rank_byte_bars = rank_bars(true);
        let ops: Vec<String> = p.op_totals.iter().map(|o| o.op.clone()).collect();
        let mut table_headers = vec!["rank".to_string()];
        for o in &ops {
            table_headers.push(format!("{o} count"));
            table_headers.push(format!("{o} bytes"));
        }
        let mut rows: Vec<Vec<Cell>> = p
            .rank_ops
            .iter()
            .map(|r| {
                let mut row = vec![Cell::count(r.global_rank.into())];
                for o in &ops {
                    let t = r.ops.iter().find(|x| &x.op == o);
                    let (n, b) = t.map_or((0, 0), |t| (t.count, t.bytes));
                    row.push(Cell::count(n));
                    row.push(Cell::num(b as f64, b.to_string()));
                }
                row
            })
            .collect();
        let mut total = vec![Cell::text("total")];
        for o in &p.op_totals {
            total.push(Cell::count(o.count));
            total.push(Cell::num(o.bytes as f64, o.bytes.to_string()));
        }
        rows.push(total);
        view! {
            <section class="panel" id="panel-operations">
                <h2>"Operations per type"</h2>
                <div class="chart-grid-2">
                    <figure>
                        <figcaption>"Count, all ranks"</figcaption>
                        <BarChart bars=count_bars test_id="ops-count-chart" x_name="operation" y_name="operations" />
                        <SvgButton target="ops-count-chart" />
                    </figure>
                    <figure>
                        <figcaption>"Volume, all ranks (count × datatype size)"</figcaption>
                        <BarChart bars=byte_bars test_id="ops-bytes-chart" unit=Unit::Bytes x_name="operation" y_name="bytes" />
                        <SvgButton target="ops-bytes-chart" />
                    </figure>
                    <figure>
                        <figcaption>"Operations per rank"</figcaption>
                        <BarChart bars=rank_count_bars test_id="rank-count-chart" x_name="global rank" y_name="operations" />
                        <SvgButton target="rank-count-chart" />
                    </figure>
                    <figure>
                        <figcaption>"Volume per rank"</figcaption>
                        <BarChart bars=rank_byte_bars test_id="rank-bytes-chart" unit=Unit::Bytes x_name="global rank" y_name="bytes" />
                        <SvgButton target="rank-bytes-chart" />
                    </figure>
                </div>
                <DataTable test_id="ops-table" headers=table_headers rows=rows />
            </section>
        }
    })
}

fn bandwidth(p: &Panels) -> impl IntoView {
    (!p.scatter.is_empty()).then(|| {
        let points: Vec<Point> = p
            .scatter
            .iter()
            .map(|s| Point {
                x: s.bytes,
                y: s.bus_bw_gbps,
                weight: s.kernels,
                rgb: crate::page::timeline::draw::op_colour(&s.op),
                group: if s.op.is_empty() { "kernels".to_string() } else { s.op.clone() },
            })
            .collect();
        let lines: Vec<HLine> = p
            .limits
            .iter()
            .map(|l| HLine {
                label: l.class.clone(),
                y: l.gbps,
            })
            .collect();
        let with_eff: u64 = p.efficiency.iter().sum();
        let eff_bars: Vec<Bar> = p
            .efficiency
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let label = if i + 1 == p.efficiency.len() {
                    format!("≥{}%", i * 10)
                } else {
                    format!("{}%", i * 10)
                };
                Bar {
                    title: format!("{label}: {n} kernels"),
                    label,
                    value: *n as f64,
                    reference: None,
                }
            })
            .collect();
        view! {
            <section class="panel" id="panel-bandwidth">
                <h2>"Bandwidth versus message size"</h2>
                <p class="hint" data-testid="scatter-summary">
                    {format!("{} kernels in {} points, coloured by operation (a point stands for the kernels of one operation whose size and bus bandwidth fall in its bin; its size grows with them). Bus bandwidth is nccl-tests' (algorithm bandwidth × the operation's bus factor); the lines are each communicator bottleneck link's bandwidth.", p.scatter_kernels, p.scatter.len())}
                </p>
                <Scatter points=points lines=lines test_id="bw-scatter" />
                <SvgButton target="bw-scatter" />
                <h3>"Bus efficiency"</h3>
                <p class="hint" data-testid="efficiency-summary">
                    {format!("{with_eff} kernels whose communicator's bottleneck link is known, per 10 % of bus efficiency: their bus bandwidth over the bottleneck link's bandwidth")}
                </p>
                <BarChart bars=eff_bars test_id="efficiency-chart" x_name="bus efficiency" y_name="kernels" />
                <SvgButton target="efficiency-chart" />
            </section>
        }
    })
}

/// Each host's first topology dump as a diagram; the diagrams appear as `drawn` counts them
/// (a few hosts per frame: 32 hosts are thousands of SVG elements).
fn topology(p: &Panels, drawn: RwSignal<usize>) -> impl IntoView {
    (!p.topology.is_empty()).then(|| {
        let hosts = p
            .topology
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let boxes: Vec<TopoBox> = h
                    .nodes
                    .iter()
                    .map(|(kind, _, label)| TopoBox {
                        kind: kind.clone(),
                        label: label.clone(),
                    })
                    .collect();
                let links = h.links.clone();
                let id = format!("topology-{}", h.host.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
                let diagram_id = id.clone();
                let shown = Memo::new(move |_| drawn.get() > i);
                view! {
                    <div class="topology-host" data-host=h.host.clone()>
                        <h3>{h.host.clone()}</h3>
                        <div class="topology-scroll">
                            {move || shown.get().then(|| view! {
                                <TopologyDiagram boxes=boxes.clone() links=links.clone() test_id=diagram_id.clone() />
                            })}
                        </div>
                        <SvgButton target=id />
                    </div>
                }
            })
            .collect_view();
        view! {
            <section class="panel" id="panel-topology">
                <h2>"Topology"</h2>
                <p class="hint">"Each host's first topology dump: GPUs, switches, CPUs and NICs, with the links' class and bandwidth."</p>
                {hosts}
            </section>
        }
    })
}
