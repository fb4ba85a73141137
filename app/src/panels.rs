//! The analysis panels (issue 9): per-rank alignment report, the run's NCCL warnings, operation
//! counts and volume per type, bandwidth versus message size with the link limits, the
//! efficiency distribution and the topology per host. Tables sort on a header click and save as
//! CSV; every plot saves as SVG. Everything from files is text (Leptos escapes it).

use leptos::prelude::*;
use ncclscope_app::charts::{Bar, BarChart, HLine, Point, Scatter, TopoBox, TopologyDiagram};
use ncclscope_app::panel_data::{csv, sort_order, Cell, Panels};
use ncclscope_app::wire::human_bytes;
use wasm_bindgen::JsCast;

use crate::client;

/// Saves `text` as a file through a blob URL.
fn save_text(file_name: &str, mime: &str, text: &str) {
    let bytes = js_sys::Uint8Array::from(text.as_bytes());
    if let Err(e) = client::download(file_name, mime, &bytes.buffer()) {
        web_sys::console::error_1(&e);
    }
}

/// Serialises the SVG element with `data-testid=test_id` and saves it.
fn save_svg(test_id: &str, file_name: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Ok(Some(el)) = doc.query_selector(&format!("svg[data-testid=\"{test_id}\"]")) else {
        return;
    };
    let Ok(serializer) = web_sys::XmlSerializer::new() else {
        return;
    };
    // A standalone file needs the namespace and its own look (the page's stylesheet stays behind).
    let Ok(clone) = el.clone_node_with_deep(true) else {
        return;
    };
    let Ok(clone) = clone.dyn_into::<web_sys::Element>() else {
        return;
    };
    let _ = clone.set_attribute("xmlns", "http://www.w3.org/2000/svg");
    let _ = clone.set_attribute("font-family", "sans-serif");
    let _ = clone.set_attribute("font-size", "10");
    if let Ok(text) = serializer.serialize_to_string(&clone) {
        save_text(file_name, "image/svg+xml", &text);
    }
}

/// The "SVG" button under a plot.
#[component]
fn SvgButton(#[prop(into)] target: String) -> impl IntoView {
    let file = format!("ncclscope-{target}.svg");
    view! {
        <button class="export-button" data-testid=format!("{target}-svg")
            on:click=move |_| save_svg(&target, &file)>
            "SVG"
        </button>
    }
}

/// A table that sorts on a header click (again: the other way) and saves as CSV.
#[component]
fn DataTable(
    #[prop(into)] test_id: String,
    headers: Vec<String>,
    rows: Vec<Vec<Cell>>,
) -> impl IntoView {
    let sort = RwSignal::new(None::<(usize, bool)>);
    let csv_text = {
        let rows: Vec<Vec<String>> = rows
            .iter()
            .map(|r| r.iter().map(|c| c.text.clone()).collect())
            .collect();
        csv(&headers, &rows)
    };
    let file = format!("ncclscope-{test_id}.csv");
    let head = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let mark = move || match sort.get() {
                Some((c, true)) if c == i => " ▲",
                Some((c, false)) if c == i => " ▼",
                _ => "",
            };
            view! {
                <th class="sortable" data-col=i on:click=move |_| {
                    sort.update(|s| {
                        *s = Some(match *s {
                            Some((c, asc)) if c == i => (i, !asc),
                            _ => (i, true),
                        })
                    })
                }>{h.clone()}{mark}</th>
            }
        })
        .collect_view();
    let rows = StoredValue::new(rows);
    let row_id = format!("{test_id}-row");
    let body = move || {
        rows.with_value(|rows| {
            let order = match sort.get() {
                Some((c, asc)) => sort_order(rows, c, asc),
                None => (0..rows.len()).collect(),
            };
            order
                .into_iter()
                .map(|r| {
                    let cells = rows[r]
                        .iter()
                        .enumerate()
                        .map(|(i, c)| view! { <td data-col=i>{c.text.clone()}</td> })
                        .collect_view();
                    view! { <tr data-testid=row_id.clone()>{cells}</tr> }
                })
                .collect_view()
        })
    };
    let table_id = test_id;
    view! {
        <div class="data-table">
            <button class="export-button" data-testid=format!("{table_id}-csv")
                on:click=move |_| save_text(&file, "text/csv", &csv_text)>
                "CSV"
            </button>
            <table class="files" data-testid=table_id>
                <thead><tr>{head}</tr></thead>
                <tbody>{body}</tbody>
            </table>
        </div>
    }
}

fn headers(h: &[&str]) -> Vec<String> {
    h.iter().map(|s| s.to_string()).collect()
}

#[component]
pub fn AnalysisPanels(panels: Signal<Panels>) -> impl IntoView {
    move || {
        let p = panels.get();
        view! {
            <section class="panels" data-testid="analysis-panels">
                {alignment(&p)}
                {warnings(&p)}
                {operations(&p)}
                {bandwidth(&p)}
                {topology(&p)}
            </section>
        }
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
                <DataTable test_id="warning-table" headers=headers(&["file", "line", "process", "message"]) rows=rows />
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
                <h3>"Count, all ranks"</h3>
                <BarChart bars=count_bars test_id="ops-count-chart" />
                <SvgButton target="ops-count-chart" />
                <h3>"Volume, all ranks"</h3>
                <BarChart bars=byte_bars test_id="ops-bytes-chart" />
                <SvgButton target="ops-bytes-chart" />
                <h3>"Operations per rank"</h3>
                <BarChart bars=rank_count_bars test_id="rank-count-chart" />
                <SvgButton target="rank-count-chart" />
                <h3>"Volume per rank"</h3>
                <BarChart bars=rank_byte_bars test_id="rank-bytes-chart" />
                <SvgButton target="rank-bytes-chart" />
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
                    {format!("{} kernels in {} points (bus bandwidth, log-log); lines: each communicator bottleneck's bus bandwidth", p.scatter_kernels, p.scatter.len())}
                </p>
                <Scatter points=points lines=lines x_unit=" B" y_unit="" test_id="bw-scatter" />
                <SvgButton target="bw-scatter" />
                <h3>"Bus efficiency"</h3>
                <p class="hint" data-testid="efficiency-summary">
                    {format!("{with_eff} kernels whose communicator's bottleneck link is known, per 10 % of its bus bandwidth")}
                </p>
                <BarChart bars=eff_bars test_id="efficiency-chart" />
                <SvgButton target="efficiency-chart" />
            </section>
        }
    })
}

fn topology(p: &Panels) -> impl IntoView {
    (!p.topology.is_empty()).then(|| {
        let hosts = p
            .topology
            .iter()
            .map(|h| {
                let boxes: Vec<TopoBox> = h
                    .nodes
                    .iter()
                    .map(|(kind, _, label)| TopoBox {
                        kind: kind.clone(),
                        label: label.clone(),
                    })
                    .collect();
                let id = format!("topology-{}", h.host.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
                view! {
                    <div class="topology-host" data-host=h.host.clone()>
                        <h3>{h.host.clone()}</h3>
                        <div class="topology-scroll">
                            <TopologyDiagram boxes=boxes links=h.links.clone() test_id=id.clone() />
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
