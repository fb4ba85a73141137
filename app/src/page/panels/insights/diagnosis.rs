//! What went wrong, from the logs alone: every finding most severe first, each with the lines
//! it rests on (each a button opening the file's view at that line), and where every member of
//! each communicator stopped. Without files, the findings a link carried (marked as such).

use super::{ranks, waiting, InsightsSignal};
use analyses::diagnosis::{CommStops, Diagnosis, Evidence, Finding, Severity};
use leptos::prelude::*;
use ncclscope_app::page_logic::link::SharedDiagnosis;

use crate::page::app::state::{app_state, AppState};
use crate::page::panels::file_lines::FileLinesView;
use crate::page::sharing::share::{self_contained_diagnosis_link, LinkState};

/// Where findings come from: the files dropped here, or a link.
#[derive(Clone, Copy, PartialEq)]
enum Source {
    Files,
    Link,
}

/// The findings a link carried, while the page waits for its files.
fn from_link(link: &LinkState) -> Option<SharedDiagnosis> {
    link.expected().and_then(|l| l.diagnosis)
}

#[component]
pub fn DiagnosisPanel(insights: InsightsSignal) -> impl IntoView {
    let s = app_state();
    move || match insights.get() {
        Some(i) => body(s, &i.diagnosis, Source::Files).into_any(),
        None => match s.link.with(from_link) {
            Some(d) => view! {
                <div data-testid="diagnosis-link">
                    {link_note(&d)}
                    {body(s, &d.to_diagnosis(), Source::Link)}
                </div>
            }
            .into_any(),
            None => waiting().into_any(),
        },
    }
}

/// Says the findings came with a link, and how many it left out.
fn link_note(d: &SharedDiagnosis) -> impl IntoView {
    let left = match d.left_out {
        0 => String::new(),
        1 => " (1 less severe finding was left out of the link)".into(),
        n => format!(" ({n} less severe findings were left out of the link)"),
    };
    view! {
        <p class="hint from-link" data-testid="diagnosis-from-link">
            {format!("These findings came with the link{left}; drop the run's files to see the analysis of the files themselves.")}
        </p>
    }
}

/// The link's findings above every view while the page waits for the link's files (a bug
/// report's reader sees them first, with no file); the Diagnosis view shows them whole.
#[component]
pub fn LinkDiagnosis(on_open: Callback<()>) -> impl IntoView {
    let s = app_state();
    move || {
        if s.insights.with(Option::is_some) {
            return None;
        }
        s.link.with(from_link).map(|d| {
            let items: Vec<_> = d
                .findings
                .iter()
                .map(|f| {
                    let severity = severity_name(f.severity);
                    view! {
                        <li data-testid="link-finding">
                            <span class=format!("badge sev-{severity}")>{severity}</span>" "
                            {f.message.clone()}
                        </li>
                    }
                })
                .collect();
            view! {
                <section class="link-banner" data-testid="link-diagnosis">
                    <h2>"Diagnosis carried by this link (no files needed)"</h2>
                    {link_note(&d)}
                    <ul>{items}</ul>
                    <p><button class="link" data-testid="link-diagnosis-open"
                        on:click=move |_| on_open.run(())>
                        "Open the Diagnosis view (evidence lines as the link carries them)"
                    </button></p>
                </section>
            }
        })
    }
}

fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Critical => "critical",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

fn findings_table(rows: Vec<AnyView>) -> impl IntoView {
    view! {
        <table class="data-table" data-testid="diagnosis-findings">
            <thead><tr>
                <th scope="col">"severity"</th><th scope="col">"kind"</th>
                <th scope="col">"ranks"</th><th scope="col">"communicator"</th>
                <th scope="col">"opCount"</th><th scope="col">"what"</th><th scope="col">"lines"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

fn body(s: AppState, d: &Diagnosis, source: Source) -> impl IntoView {
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
    let findings: Vec<_> = d
        .findings
        .iter()
        .map(|f| finding_row(s, f, source))
        .collect();
    let stopped = (!d.stopped.is_empty()).then(|| {
        let rows: Vec<_> = d.stopped.iter().flat_map(|c| stop_rows(s, c)).collect();
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
    let copy = (source == Source::Files && !s.is_bundle && !d.findings.is_empty()).then(|| {
        view! {
            <button data-testid="copy-diagnosis-link"
                title="A link that carries these findings (sentences and evidence lines) itself: it opens with no files."
                on:click=move |_| s.show_link(Some(self_contained_diagnosis_link(s.shared_diagnosis())))>
                "Copy self-contained link (these findings)"
            </button>
        }
    });
    view! {
        <section class="panel diagnosis" data-testid="diagnosis">
            <h2>"What went wrong"</h2>
            <p class="headline" data-testid="diagnosis-headline">{headline}</p>
            {first_error}
            {copy}
            {findings_table(findings)}
            <FileLinesView state=s.file_lines />
            {stopped}
        </section>
    }
}

/// A button naming `file:line` that opens the file's view at that line.
fn evidence_button(s: AppState, e: &Evidence, source: Source) -> AnyView {
    let label = format!("{}:{}", e.path, e.line);
    let e = e.clone();
    let title = e
        .text
        .clone()
        .unwrap_or_else(|| "Open the file at this line".into());
    view! {
        <button class="link evidence mono" data-testid="evidence" data-line=e.line title=title
            on:click=move |_| {
                let loaded = source == Source::Files && s.has_file(&e.path);
                s.file_lines.open(e.clone(), loaded, source == Source::Link);
            }>
            {label}
        </button>
    }
    .into_any()
}

fn finding_row(s: AppState, f: &Finding, source: Source) -> AnyView {
    let severity = severity_name(f.severity);
    let mut lines: Vec<AnyView> = f
        .evidence
        .iter()
        .take(3)
        .map(|e| evidence_button(s, e, source))
        .collect();
    let more = f.evidence.len().saturating_sub(3);
    if more > 0 {
        lines.push(view! { <span>{format!(" (+{more})")}</span> }.into_any());
    }
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
    .into_any()
}

/// One row per member of a communicator: where it stopped.
fn stop_rows(s: AppState, c: &CommStops) -> Vec<AnyView> {
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
                .map(|l| evidence_button(s, &l.evidence, Source::Files));
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
/// (or that nothing went wrong), a click away from the Diagnosis view; its evidence lines open
/// the Diagnosis view with the file's view at that line.
#[component]
pub fn DiagnosisCard(insights: InsightsSignal, on_open: Callback<()>) -> impl IntoView {
    let s = app_state();
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
            let evidence: Vec<AnyView> = d
                .findings
                .first()
                .map(|f| {
                    f.evidence
                        .iter()
                        .take(3)
                        .map(|e| {
                            let e = e.clone();
                            let label = format!("{}:{}", e.path, e.line);
                            view! {
                                <button class="link evidence mono small" data-testid="overview-evidence" data-line=e.line
                                    on:click=move |_| {
                                        // Before the view switch, which disposes this card.
                                        s.file_lines.open(e.clone(), s.has_file(&e.path), false);
                                        on_open.run(());
                                    }>
                                    {label}
                                </button>
                            }
                            .into_any()
                        })
                        .collect()
                })
                .unwrap_or_default();
            view! {
                <section class="card" class:warn=severe data-testid="overview-diagnosis">
                    <h3>"What went wrong"</h3>
                    <p><button class="link" data-go="diagnosis" on:click=move |_| on_open.run(())>{text}</button></p>
                    <p class="evidence-lines">{evidence}</p>
                </section>
            }
        })
    }
}
