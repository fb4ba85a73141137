//! The picked kernel: its own row, the log lines matched to it (file and line), the alignment's
//! confidence, the same collective on every rank (start relative to the first member,
//! duration, the arrival skew and the slowest rank), and every enriched field as people read
//! them (`page_logic::fields`: units per magnitude, efficiencies labelled).

use analyses::KernelDetails;
use leptos::prelude::*;
use ncclscope_app::page_logic::fields::readable_all;

fn ms(ns: i64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

fn us(ns: i64) -> String {
    format!("{:.1} µs", ns as f64 / 1e3)
}

/// Every string is shown as text. `fields` are the kernel's enriched fields.
pub fn details_view(d: &KernelDetails, fields: &[(String, String)]) -> impl IntoView {
    let facts = vec![
        ("rank", d.rank.to_string()),
        ("host", d.host.clone()),
        ("pid", d.pid.to_string()),
        ("GPU", d.device.to_string()),
        ("kernel", d.kernel_name.clone()),
        ("stream", d.stream.to_string()),
        ("correlation id", d.correlation_id.to_string()),
        ("grid", format!("{:?}", d.grid)),
        ("block", format!("{:?}", d.block)),
        ("duration", us(d.end_ns - d.start_ns)),
        ("start (synchronised)", ms(d.start_ns)),
        ("start (own clock)", ms(d.own_start_ns)),
        (
            "confidence",
            d.confidence
                .map_or("unmatched".to_string(), |c| format!("{c:.2}")),
        ),
        ("duplicated lines", d.duplicates.to_string()),
    ];
    let lines = d
        .lines
        .iter()
        .map(|l| {
            view! {
                <tr>
                    <td>{l.op.clone()}</td>
                    <td>{l.comm.clone()}</td>
                    <td class="num">{format!("{:x}", l.op_count)}</td>
                    <td class="num">{l.count}</td>
                    <td>{l.datatype.clone()}</td>
                    <td data-testid="detail-source">{format!("{}:{}", l.file, l.line)}</td>
                </tr>
            }
        })
        .collect_view();
    let instance = d.instance.as_ref().map(|i| {
        let first = i.members.iter().map(|m| m.start_ns).min().unwrap_or(0);
        let rows = i
            .members
            .iter()
            .map(|m| {
                view! {
                    <tr data-rank=m.rank class:slowest=m.rank == i.slowest_rank>
                        <td class="num">{m.rank}</td>
                        <td class="num">{us(m.start_ns - first)}</td>
                        <td class="num">{us(m.end_ns - m.start_ns)}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <h3>"The same collective on every rank"</h3>
            <p data-testid="detail-instance">
                {format!(
                    "communicator {} ({} ranks), opCount {:x}: {} members found, arrival skew {}, slowest rank {}",
                    i.comm_id,
                    i.comm_size,
                    i.op_count,
                    i.members.len(),
                    us(i.arrival_skew_ns),
                    i.slowest_rank
                )}
            </p>
            <table class="window-table" data-testid="detail-members">
                <thead><tr><th>"rank"</th><th>"start after first"</th><th>"duration"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
    });
    view! {
        <div class="details">
            <dl>
                {facts
                    .into_iter()
                    .map(|(k, v)| view! { <dt>{k}</dt><dd data-detail=k>{v}</dd> })
                    .collect_view()}
            </dl>
            <h3>"Log lines"</h3>
            <table class="window-table" data-testid="detail-lines">
                <thead>
                    <tr><th>"op"</th><th>"comm"</th><th>"opCount"</th><th>"count"</th><th>"datatype"</th><th>"file:line"</th></tr>
                </thead>
                <tbody>{lines}</tbody>
            </table>
            {instance}
            <h3>"Enriched fields"</h3>
            <dl data-testid="detail-fields">
                {readable_all(fields)
                    .into_iter()
                    .map(|f| view! {
                        <dt title=f.title.clone()>{f.label}</dt>
                        <dd data-field-name=f.name title=f.title>{f.text}</dd>
                    })
                    .collect_view()}
            </dl>
        </div>
    }
}
