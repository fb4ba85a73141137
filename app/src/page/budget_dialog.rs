//! The choice offered when dropped files would not fit in the worker's memory: load a subset
//! (for instance the ranks of interest), or analyse everything with the native command.

use leptos::prelude::*;
use ncclscope_app::page_logic::budget::{fits, FileEstimate};
use ncclscope_app::protocol::format::human_bytes;
use web_sys::Blob;

/// A dropped file waiting for the user's choice.
pub struct Pending {
    pub name: String,
    pub blob: Blob,
    pub estimate: FileEstimate,
    pub checked: bool,
}

/// The dialog closes by emptying `pending`.
#[component]
pub fn BudgetDialog(
    pending: RwSignal<Option<Vec<Pending>>, LocalStorage>,
    in_use: u64,
    on_load: Callback<Vec<(String, Blob)>>,
) -> impl IntoView {
    let limit = crate::page::url::memory_limit();
    let checked_needs = move || {
        pending.with(|p| {
            p.iter()
                .flatten()
                .filter(|f| f.checked)
                .map(|f| f.estimate.needs)
                .sum::<u64>()
        })
    };
    let total_needs =
        move || pending.with(|p| p.iter().flatten().map(|f| f.estimate.needs).sum::<u64>());
    let names = move || {
        pending.with(|p| {
            p.iter()
                .flatten()
                .map(|f| f.name.clone())
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    let rows = move || {
        pending.with(|p| {
            p.iter()
                .flatten()
                .enumerate()
                .map(|(i, f)| {
                    let (name, e, on) = (&f.name, &f.estimate, f.checked);
                    view! {
                        <li data-testid="budget-file" data-file=name.clone()>
                            <label>
                                <input
                                    type="checkbox"
                                    prop:checked=on
                                    on:change=move |_| pending.update(|p| {
                                        if let Some(f) = p.as_mut().and_then(|p| p.get_mut(i)) {
                                            f.checked = !f.checked;
                                        }
                                    })
                                />
                                {format!("{name}: {} on disk, about {} in memory", human_bytes(e.size), human_bytes(e.needs))}
                            </label>
                            {e.basis().map(|b| view! { <span class="hint" data-testid="budget-basis">{format!(" ({b})")}</span> })}
                        </li>
                    }
                })
                .collect_view()
        })
    };
    let load = move |_| {
        let chosen: Vec<(String, Blob)> = pending
            .try_update(|p| p.take())
            .flatten()
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f.checked)
            .map(|f| (f.name, f.blob))
            .collect();
        if !chosen.is_empty() {
            on_load.run(chosen);
        }
    };
    view! {
        <section class="link-banner warn" data-testid="budget">
            <p data-testid="budget-summary">
                {move || format!(
                    "These files need about {} of memory in this tab's worker{}, more than the {} it can hold. Load a subset (the ranks you are after, say), or analyse everything with the command, which has no such limit.",
                    human_bytes(total_needs()),
                    if in_use > 0 { format!(" beside the {} already in use", human_bytes(in_use)) } else { String::new() },
                    human_bytes(limit),
                )}
            </p>
            <ul>{rows}</ul>
            <p>
                <code data-testid="budget-command">{move || format!("ncclscope analyze {} --json summary.json", names())}</code>
            </p>
            <button
                data-testid="budget-load"
                disabled=move || checked_needs() == 0 || !fits(checked_needs(), in_use, limit)
                on:click=load
            >
                {move || format!("Load the checked files (about {})", human_bytes(checked_needs()))}
            </button>
            <button data-testid="budget-cancel" on:click=move |_| pending.set(None)>"Cancel"</button>
        </section>
    }
}
