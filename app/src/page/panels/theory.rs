//! The theory panel (thesis table 5.1, figure 5.30): the model and layout form, the table of
//! theoretical and observed volume per parallelism, the per-rank bars with each rank's
//! theoretical value marked, the message-size histogram with b·s·h·β marked, and observed kernel
//! time beside the alpha-beta model. The worker computes what it shows
//! (`ncclscope_app::protocol::theory`).
//!
//! The form's values are the contract's TOML ([`theory::form`]); they survive a reload
//! (`localStorage`). Values inferred from the trace (parallel sizes, iterations) fill the fields
//! the user has not set, marked "inferred".

use super::charts::{Bar, BarChart, Bucket, Histogram};
use leptos::prelude::*;
use ncclscope_app::protocol::format::human_bytes;
use ncclscope_app::protocol::theory::TheoryView;
use theory::form::{config_of, form_of, to_toml, Form, Kind, FIELDS};
use theory::TheoryConfig;

/// Where the form's TOML is kept between visits.
const STORAGE_KEY: &str = "ncclscope.theory.toml";
/// Where the chosen hardware is kept.
const HARDWARE_KEY: &str = "ncclscope.theory.hardware";
/// The form entry of the time model's hardware (not a TOML key: the config does not hold it).
pub const HARDWARE_FIELD: &str = "ui.hardware";
/// The hardware choices: the LBNL presets, and the links the logs' topology dump printed.
const HARDWARE: [(&str, &str); 5] = [
    ("topology", "the topology the logs printed"),
    ("a100", "A100"),
    ("h100", "H100"),
    ("h200", "H200"),
    ("b200", "B200"),
];

/// The form saved by the last visit, else the thesis' dense model.
pub fn saved_form() -> Form {
    let saved = storage()
        .and_then(|s| s.get_item(STORAGE_KEY).ok().flatten())
        .and_then(|toml| TheoryConfig::from_toml(&toml).ok());
    let mut form = form_of(&saved.unwrap_or_default());
    let hardware = storage()
        .and_then(|s| s.get_item(HARDWARE_KEY).ok().flatten())
        .filter(|h| HARDWARE.iter().any(|(k, _)| k == h))
        .unwrap_or_else(|| "topology".into());
    form.insert(HARDWARE_FIELD.into(), hardware);
    form
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.local_storage().ok().flatten())
}

fn save_form(form: &Form) {
    if let Some(s) = storage() {
        let _ = s.set_item(STORAGE_KEY, &to_toml(form));
        if let Some(h) = form.get(HARDWARE_FIELD) {
            let _ = s.set_item(HARDWARE_KEY, h);
        }
    }
}

/// Fills the fields the trace tells (sizes, iterations) unless the user typed them; returns the
/// names filled.
pub fn prefill(form: &mut Form, inferred: &[(String, String)], typed: &[String]) -> Vec<String> {
    let mut filled = Vec::new();
    for (name, value) in inferred {
        if !typed.contains(name) {
            form.insert(name.clone(), value.clone());
            filled.push(name.clone());
        }
    }
    filled
}

/// The form and the results. `on_apply` receives the validated config's TOML.
#[component]
pub fn TheoryPanel(
    form: RwSignal<Form>,
    /// Fields the user changed (the trace's values no longer replace them).
    typed: RwSignal<Vec<String>>,
    inferred: Signal<Vec<String>>,
    view: Signal<Option<TheoryView>>,
    error: RwSignal<Option<String>>,
    on_apply: Callback<String>,
) -> impl IntoView {
    let edit = move |name: String, value: String| {
        form.update(|m| {
            m.insert(name.clone(), value);
        });
        typed.update(|t| {
            if !t.contains(&name) {
                t.push(name);
            }
        });
    };
    let apply = move || {
        let f = form.get_untracked();
        match config_of(&f) {
            Ok(_) => {
                error.set(None);
                save_form(&f);
                on_apply.run(to_toml(&f));
            }
            Err(e) => error.set(Some(e)),
        }
    };
    let preset = move |cfg: TheoryConfig| {
        let hardware = form.with_untracked(|f| f.get(HARDWARE_FIELD).cloned());
        let mut new = form_of(&cfg);
        if let Some(h) = hardware {
            new.insert(HARDWARE_FIELD.into(), h);
        }
        form.set(new);
        // A chosen preset is the user's: the trace's values no longer replace it.
        typed.set(FIELDS.iter().map(|f| f.name()).collect());
        apply();
    };
    let sections = ["model", "parallel", "moe"].map(|section| {
        let fields = FIELDS
            .iter()
            .filter(|f| f.section == section)
            .map(|f| {
                let name = f.name();
                let name_for_value = name.clone();
                let name_for_input = name.clone();
                let name_for_mark = name.clone();
                let value = move || form.with(|m| m.get(&name_for_value).cloned().unwrap_or_default());
                let input = match f.kind {
                    Kind::Flag => view! {
                        <input type="checkbox" data-field=name.clone()
                            prop:checked=move || value() == "true"
                            on:change=move |ev| edit(name_for_input.clone(), event_target_checked(&ev).to_string()) />
                    }
                    .into_any(),
                    Kind::Choice(choices) => view! {
                        <select data-field=name.clone()
                            on:change=move |ev| edit(name_for_input.clone(), event_target_value(&ev))>
                            {choices.iter().map(|c| {
                                let c = c.to_string();
                                let value = value.clone();
                                let selected = { let c = c.clone(); move || value() == c };
                                view! { <option value=c.clone() selected=selected>{c.clone()}</option> }
                            }).collect_view()}
                        </select>
                    }
                    .into_any(),
                    Kind::Integer | Kind::Number => view! {
                        <input type="text" inputmode="decimal" size="8" data-field=name.clone()
                            prop:value=value
                            on:change=move |ev| edit(name_for_input.clone(), event_target_value(&ev)) />
                    }
                    .into_any(),
                };
                // Where the value came from: the run, the user, or nowhere (assumed).
                let mark = move || {
                    if inferred.with(|i| i.contains(&name_for_mark)) {
                        Some(view! { <span class="inferred" title="Read from the loaded run">" inferred"</span> }.into_any())
                    } else if typed.with(|t| t.contains(&name_for_mark)) {
                        None
                    } else {
                        Some(view! { <span class="assumed" title="The run does not tell it: the thesis' model's value (or the one kept from your last visit). Set it to your model's.">" assumed"</span> }.into_any())
                    }
                };
                view! { <label class="field">{f.label}" "{input}{mark}</label> }
            })
            .collect_view();
        view! { <fieldset><legend>{section}</legend>{fields}</fieldset> }
    });
    view! {
        <section class="panel theory" data-testid="theory-panel">
            <h2>"Theory versus observed"</h2>
            <p class="hint">
                "The thesis' volume formulas for your model and layout, beside what the logs show "
                "each rank moved (link traffic per parallelism). Values are kept in this browser."
            </p>
            <p class="theory-sources" data-testid="theory-sources">
                {move || {
                    let from_run = inferred.with(Vec::len);
                    let yours = typed.with(Vec::len);
                    let assumed = FIELDS.len().saturating_sub(from_run + yours);
                    format!(
                        "{from_run} of the form's values come from the run (marked inferred: the layout, the iterations, the bytes per element), {yours} are yours, {assumed} are assumed (marked: the thesis' model, which the run cannot tell — its layers, hidden size, sequence length, batch). Set the assumed ones to your model's before reading the ratios."
                    )
                }}
            </p>
            <form class="theory-form" on:submit=move |ev| { ev.prevent_default(); apply(); }>
                {sections}
                <label class="field">"time model hardware "
                    <select data-field=HARDWARE_FIELD
                        on:change=move |ev| edit(HARDWARE_FIELD.to_string(), event_target_value(&ev))>
                        {HARDWARE.iter().map(|&(key, label)| {
                            let selected = move || form.with(|f| f.get(HARDWARE_FIELD).map(String::as_str) == Some(key));
                            view! { <option value=key selected=selected>{label}</option> }
                        }).collect_view()}
                    </select>
                </label>
                <div class="actions-row">
                    <button type="submit" data-testid="theory-apply">"Compare"</button>
                    <button type="button" on:click=move |_| preset(TheoryConfig::thesis_dense())>"Thesis dense"</button>
                    <button type="button" on:click=move |_| preset(TheoryConfig::thesis_moe())>"Thesis MoE"</button>
                </div>
            </form>
            {move || error.get().map(|e| view! { <p class="error" data-testid="theory-error">{e}</p> })}
            {move || view.get().map(results)}
        </section>
    }
}

fn results(v: TheoryView) -> impl IntoView {
    let rows = v
        .rows
        .iter()
        .map(|r| {
            view! {
                <tr data-parallelism=r.parallelism.clone() data-role=r.role.clone()>
                    <td>{r.parallelism.clone()}</td>
                    <td>{r.role.clone()}</td>
                    <td class="num" data-testid="theory-theoretical">{r.theoretical.clone()}</td>
                    <td class="num" data-testid="theory-observed">{r.observed.clone()}</td>
                    <td class="num" data-testid="theory-ratio">{r.ratio.clone()}</td>
                    <td class="num" data-testid="theory-per-iteration">{r.per_iteration.clone()}</td>
                    <td>{r.discrepancy.clone()}</td>
                </tr>
            }
        })
        .collect_view();
    let charts = v
        .rows
        .iter()
        .filter(|r| r.parallelism != "all")
        .map(|r| {
            let bars = r
                .ranks
                .iter()
                .map(|&(rank, obs, theory)| Bar {
                    label: rank.to_string(),
                    value: obs,
                    reference: Some(theory),
                    title: format!(
                        "rank {rank}: {} observed, {} in theory",
                        human_bytes(obs as u64),
                        human_bytes(theory as u64)
                    ),
                })
                .collect();
            let id = format!("theory-bars-{}-{}", r.parallelism, r.role);
            view! {
                <figure>
                    <BarChart bars=bars test_id=id unit=super::charts::Unit::Bytes x_name="global rank" y_name="bytes" />
                    <figcaption>{format!("{} ({}) per rank; black ticks: theory", r.parallelism, r.role)}</figcaption>
                </figure>
            }
        })
        .collect_view();
    let buckets = v
        .message_sizes
        .iter()
        .map(|&(b, n)| Bucket {
            lower_bytes: b,
            count: n,
            label: human_bytes(b),
        })
        .collect();
    let times = v
        .times
        .iter()
        .map(|t| {
            view! {
                <tr>
                    <td>{t.op.clone()}</td>
                    <td class="num">{t.size.clone()}</td>
                    <td class="num">{t.kernels}</td>
                    <td class="num">{format!("{:.1}", t.observed_us)}</td>
                    <td class="num">{format!("{:.1}", t.predicted_us)}</td>
                    <td class="num">{t.ratio.clone()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="theory-table" data-testid="theory-table">
            <thead><tr><th>"strategy"</th><th>"ranks"</th><th>"theoretical"</th><th>"observed"</th><th>"ratio"</th><th>"per iteration (theory / observed)"</th><th>"primary discrepancy"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
        {charts}
        <figure>
            <Histogram buckets=buckets mark=Some(v.tensor_bytes) test_id="message-sizes" />
            <figcaption>{format!("Message sizes (log scale); outlined: b·s·h·β = {}", human_bytes(v.tensor_bytes))}</figcaption>
        </figure>
        <h3 data-testid="time-hardware">{format!("Kernel time beside the alpha-beta model ({})", v.hardware)}</h3>
        <table class="time-table" data-testid="time-table">
            <thead><tr><th>"operation"</th><th>"size ≥"</th><th>"kernels"</th><th>"observed µs"</th><th>"model µs"</th><th>"ratio"</th></tr></thead>
            <tbody>{times}</tbody>
        </table>
    }
}
