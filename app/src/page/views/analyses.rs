//! The analyses' views, each the panel or table it shows, reading the app's state: the file
//! notes, the communicators, the ranks, one section of the analysis panels (alignment,
//! warnings, operations, bandwidth, topology) and the theory comparison.

use leptos::prelude::*;

use crate::page::app::state::app_state;
use crate::page::panels::analyses::AnalysisSection;
use crate::page::panels::notes::{NotedFile, NotesPanel};
use crate::page::panels::theory::TheoryPanel;
use crate::page::tables::communicators::Communicators as CommTable;
use crate::page::tables::ranks::RankTable;

/// Every file with notes, and the notes of the one chosen.
#[component]
pub fn Notes() -> impl IntoView {
    let s = app_state();
    let reported = Memo::new(move |_| {
        s.rows.with(|r| {
            r.iter()
                .filter(|x| x.report.as_ref().is_some_and(|v| v.diagnostic_count > 0))
                .count()
        })
    });
    let noted = Memo::new(move |_| {
        // (`get`, not `track`: a memo computes, and so follows the rows, only when read.)
        reported.get();
        s.rows.with_untracked(|r| {
            r.iter()
                .enumerate()
                .filter_map(|(id, x)| {
                    let v = x.report.as_ref().filter(|v| v.diagnostic_count > 0)?;
                    Some(NotedFile {
                        id,
                        name: x.name.clone(),
                        count: v.diagnostic_count,
                        kinds: v.note_kinds.clone(),
                    })
                })
                .collect::<Vec<_>>()
        })
    });
    let on_pick = Callback::new(move |picked| {
        s.picked_note.set(Some(picked));
        s.drawer.set(Some(crate::page::app::state::Drawer::Note));
    });
    view! {
        <div class="view-page">
            <NotesPanel state=s.notes files=noted.into() is_bundle=s.is_bundle on_pick=on_pick />
        </div>
    }
}

#[component]
pub fn Communicators() -> impl IntoView {
    let s = app_state();
    view! { <div id="panel-communicators" class="view-page"><CommTable panel=s.comms.into() /></div> }
}

#[component]
pub fn Ranks() -> impl IntoView {
    let s = app_state();
    view! { <div id="panel-ranks" class="view-page"><RankTable ranks=s.ranks.into() /></div> }
}

/// Section `section` of the analysis panels.
#[component]
pub fn Section(section: usize) -> impl IntoView {
    let s = app_state();
    view! { <div class="view-page panels"><AnalysisSection stages=s.panels section=section /></div> }
}

#[component]
pub fn Theory() -> impl IntoView {
    let s = app_state();
    view! {
        <div id="panel-theory" class="view-page">
            <TheoryPanel
                form=s.theory.form
                typed=s.theory.typed
                inferred=s.theory.inferred.into()
                view=s.theory.view.into()
                error=s.theory.error
                on_apply=Callback::new(move |toml| s.ask_theory(toml))
            />
        </div>
    }
}
