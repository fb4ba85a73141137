//! What went wrong, from the logs alone: every finding most severe first, each with the lines
//! it rests on, and where every member of each communicator stopped.

use super::{ranks, waiting, InsightsSignal};
use analyses::diagnosis::{CommStops, Diagnosis, Finding, Severity};
use leptos::prelude::*;

#[component]
pub fn DiagnosisPanel(insights: InsightsSignal) -> impl IntoView {
    move || match insights.get() {
        None => waiting().into_any(),
        Some(i) => body(&i.diagnosis).into_any(),
    }
}

fn body(d: &Diagnosis) -> impl IntoView {
    let headline = match d.findings.first() {
        None => "Nothing went wrong that the logs show: every communicator's members logged the same collectives to the same point, and no error or timeout was printed.".to_string(),
        Some(f) => f.message.clone(),
    };
    let first_error = d.first_error.as_ref().map(|e| {
        let what = e
            .finding
            .and_then(|i| d.findings.get(i))
            .map_or_else(|| "cannot be told".to_string(), |f| f.message.clone());
        view! {
            <p class="hint" data-testid="diagnosis-first-error">
                {format!("First error: {what} ({})", e.how)}
            </p>
        }
    });
    let findings: Vec<_> = d.findings.iter().map(finding_row).collect();
    let stopped = (!d.stopped.is_empty()).then(|| {
        let rows: Vec<_> = d.stopped.iter().flat_map(stop_rows).collect();
        view! {
            <details class="stopped" data-testid="diagnosis-stopped">
                <summary>{format!("Where every member stopped ({} communicators)", d.stopped.len())}</summary>
                <table class="data-table">
                    <thead><tr>
                        <th scope="col">"communicator"</th><th scope="col">"rank"</th>
                        <th scope="col">"process"</th><th scope="col">"last operation"</th>
                        <th scope="col">"behind by"</th><th scope="col">"line"</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </details>
        }
    });
    view! {
        <section class="panel diagnosis" data-testid="diagnosis">
            <h2>"What went wrong"</h2>
            <p class="headline" data-testid="diagnosis-headline">{headline}</p>
            {first_error}
            <table class="data-table" data-testid="diagnosis-findings">
                <thead><tr>
                    <th scope="col">"severity"</th><th scope="col">"kind"</th>
                    <th scope="col">"ranks"</th><th scope="col">"communicator"</th>
                    <th scope="col">"opCount"</th><th scope="col">"what"</th><th scope="col">"lines"</th>
                </tr></thead>
                <tbody>{findings}</tbody>
            </table>
            {stopped}
        </section>
    }
}

fn finding_row(f: &Finding) -> impl IntoView {
    let severity = match f.severity {
        Severity::Critical => "critical",
        Severity::Warning => "warning",
        Severity::Info => "info",
    };
    let lines: Vec<String> = f
        .evidence
        .iter()
        .take(3)
        .map(|e| format!("{}:{}", e.path, e.line))
        .collect();
    let more = f.evidence.len().saturating_sub(3);
    let lines = if more > 0 {
        format!("{} (+{more})", lines.join(" "))
    } else {
        lines.join(" ")
    };
    let first = f.first.then_some(" (first)");
    view! {
        <tr data-testid="diagnosis-finding" data-kind=f.kind.name()>
            <td><span class=format!("badge sev-{severity}")>{severity}</span></td>
            <td>{f.kind.name()}{first}</td>
            <td class="num">{ranks(&f.ranks)}</td>
            <td class="mono">{f.communicator.clone().unwrap_or_default()}</td>
            <td class="mono">{f.op_count.clone().unwrap_or_default()}</td>
            <td>{f.message.clone()}</td>
            <td class="mono small">{lines}</td>
        </tr>
    }
}

/// One row per member of a communicator: where it stopped.
fn stop_rows(c: &CommStops) -> Vec<AnyView> {
    c.members
        .iter()
        .map(|m| {
            let last = m.last.as_ref().map_or_else(
                || {
                    if m.init_unfinished {
                        "set-up not finished".to_string()
                    } else {
                        "none logged".to_string()
                    }
                },
                |l| {
                    format!(
                        "{} opCount {} ({} × {})",
                        l.op, l.op_count, l.count, l.datatype
                    )
                },
            );
            let line = m
                .last
                .as_ref()
                .map(|l| format!("{}:{}", l.evidence.path, l.evidence.line))
                .unwrap_or_default();
            let behind = m.behind_by > 0;
            view! {
                <tr class:behind=behind>
                    <td class="mono">{c.communicator.clone()}</td>
                    <td class="num">{m.rank.map(|r| r.to_string()).unwrap_or_default()}</td>
                    <td class="mono">{format!("{}:{}", m.host, m.pid)}</td>
                    <td>{last}</td>
                    <td class="num">{m.behind_by}</td>
                    <td class="mono small">{line}</td>
                </tr>
            }
            .into_any()
        })
        .collect()
}

/// The overview's first card once the insights are in: the most severe finding in one sentence
/// (or that nothing went wrong), a click away from the Diagnosis view.
#[component]
pub fn DiagnosisCard(insights: InsightsSignal, on_open: Callback<()>) -> impl IntoView {
    move || {
        insights.get().map(|i| {
            let d = &i.diagnosis;
            let severe = d
                .findings
                .first()
                .is_some_and(|f| f.severity >= Severity::Warning);
            let text = match d.findings.first() {
                None => "The logs show nothing wrong: no hang, mismatch, error or timeout.".to_string(),
                Some(f) if d.findings.len() == 1 => f.message.clone(),
                Some(f) => format!("{} (and {} more findings)", f.message, d.findings.len() - 1),
            };
            view! {
                <section class="card" class:warn=severe data-testid="overview-diagnosis">
                    <h3>"What went wrong"</h3>
                    <p><button class="link" data-go="diagnosis" on:click=move |_| on_open.run(())>{text}</button></p>
                </section>
            }
        })
    }
}
