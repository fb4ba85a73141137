//! Two runs compared (issue 35; docs/design/diff.md, "In the page"). The run loaded first stays
//! in the first loading worker; "Compare with…" loads the other run's files into a second
//! worker of the same script ([`worker`]), which sends its run's profile once analysed; the page
//! hands that profile to the first worker, which compares (`analyses::diff`) and sends the
//! `RunDiff` the Compare view shows as it is. A run that cannot be read is compared as failed:
//! the other run stays summarised and the failure is named.

pub mod chooser;
pub mod stacked;
pub mod worker;

use analyses::diff::RunDiff;
use leptos::prelude::*;
use leptos::task::spawn_local;
use ncclscope_app::page_logic::compare::run_label;
use ncclscope_app::protocol::compare::CompareAsk;
use ncclscope_app::protocol::messages::{LoadItem, LoadRequest, ToPage};
use ncclscope_app::protocol::stacked::{StackedAsk, StackedInfo};
use std::rc::Rc;
use std::sync::Arc;
use web_sys::Blob;

pub use crate::page::app::state::Phase;
use crate::page::app::state::{AppState, Cut, Other, Row};
use crate::page::client;
use crate::page::folders::with_sizes;
use crate::page::url::page_options;
use worker::Event;

/// Compares the loaded run with the run of `items` (files, or a folder's files): a new
/// comparison replaces the one before. Opens the Compare view.
pub fn start(s: AppState, items: Vec<(String, Blob)>) {
    if items.is_empty() {
        return;
    }
    spawn_local(async move {
        let items = with_sizes(items).await;
        let c = s.compare;
        let names: Vec<String> = items.iter().map(|(n, _, _)| n.clone()).collect();
        let label = run_label(&names);
        c.label.set(label.clone());
        c.diff.set(None);
        c.other.set_value(None);
        c.files.set(Vec::new());
        clear_stacked(s);
        c.rows.set(
            items
                .iter()
                .map(|(name, _, size)| Row::new(name.clone(), *size))
                .collect(),
        );
        c.phase.set(Phase::Loading);
        // The app opens the Compare view when a comparison starts (the registry lists this
        // module's view: opening it from here would make an import cycle).
        c.started.update(|n| *n += 1);
        if let Err(e) = worker::start(Rc::new(move |ev| on_event(s, ev))) {
            return settle(
                s,
                Err((label, format!("could not start a loading worker: {e}"))),
            );
        }
        let files = items
            .into_iter()
            .enumerate()
            .map(|(id, (name, blob, _))| LoadItem { id, name, blob })
            .collect();
        worker::send(LoadRequest {
            options: page_options(),
            files,
            ..LoadRequest::default()
        });
    });
}

/// What the second worker says.
fn on_event(s: AppState, ev: Event) {
    match ev {
        Event::Message(msg) => on_message(s, *msg),
        Event::Stacked(info, timeline) => on_stacked(s, false, *info, timeline),
        Event::Analysed => analysed(s),
        Event::Crashed(why) => crashed(s, why),
    }
}

/// Its files' progress and reports (the Compare view lists them), and its profile.
fn on_message(s: AppState, msg: ToPage) {
    let c = s.compare;
    match msg {
        ToPage::Progress { id, read } => c.rows.update(|r| {
            if let Some(row) = r.get_mut(id) {
                row.read = read;
            }
        }),
        ToPage::Stage { id, stage } => c.rows.update(|r| {
            if let Some(row) = r.get_mut(id) {
                row.stage = Some(stage);
            }
        }),
        ToPage::Report { id, view, .. } => c.rows.update(|r| {
            if let Some(row) = r.get_mut(id) {
                row.read = row.size;
                row.report = Some(view);
            }
        }),
        ToPage::Profile { profile } => {
            let label = c.label.get_untracked();
            settle(s, (*profile).map_err(|e| (label, e)));
        }
        ToPage::Fingerprints { files } => {
            c.files.set(files);
            // A link naming both runs' files checks them again, the other run's now in; a link
            // already made is made again, naming them.
            if s.link.with_untracked(|l| l.waiting()) || s.share_url.with_untracked(Option::is_some)
            {
                s.ask_fingerprints();
            }
        }
        _ => {}
    }
}

/// Its analysis is done: ask for its profile, unless not one of its files could be read (the
/// run failed, named by its files' errors).
fn analysed(s: AppState) {
    let c = s.compare;
    match failures(&c.rows.get_untracked()) {
        Some(why) => settle(s, Err((c.label.get_untracked(), why))),
        None => {
            c.phase.set(Phase::Profiling);
            // Its fingerprints too (a link to the comparison names its files), after the profile:
            // they read its files again, which the comparison need not wait for.
            worker::send(LoadRequest {
                options: page_options(),
                profile: Some(c.label.get_untracked()),
                fingerprints: true,
                ..LoadRequest::default()
            });
        }
    }
}

/// The second worker died or could not start: the files it had not reported fail with it, and
/// the comparison names its failure.
fn crashed(s: AppState, why: String) {
    let c = s.compare;
    c.rows.update(|r| {
        for row in r.iter_mut().filter(|row| row.report.is_none()) {
            row.report = Some(ncclscope_app::protocol::views::FileView::failed(
                why.clone(),
            ));
        }
    });
    settle(s, Err((c.label.get_untracked(), why)));
}

/// When every file failed, their errors (`name: error`, joined); else `None`.
fn failures(rows: &[Row]) -> Option<String> {
    let errors: Vec<String> =
        rows.iter()
            .map(|r| {
                r.report.as_ref().and_then(|v| v.error.as_ref()).map(|e| {
                    match e.starts_with(&r.name) {
                        true => e.clone(),
                        false => format!("{}: {e}", r.name),
                    }
                })
            })
            .collect::<Option<Vec<_>>>()?;
    (!errors.is_empty()).then(|| errors.join("; "))
}

/// The other run is loaded (or failed): keep it, and compare.
fn settle(s: AppState, other: Other) {
    s.compare.other.set_value(Some(other));
    ask(s);
}

/// Asks the first worker to compare its run with the other (as the user ordered them); nothing
/// before the other run is in.
pub fn ask(s: AppState) {
    let c = s.compare;
    let Some(mut other) = c.other.get_value() else {
        return;
    };
    c.phase.set(Phase::Comparing);
    let mut own_label = s
        .rows
        .with_untracked(|r| run_label(&r.iter().map(|x| x.name.clone()).collect::<Vec<_>>()));
    // Two runs of files named alike (a generator's, a rerun's) are told apart.
    let other_label = match &mut other {
        Ok(p) => &mut p.label,
        Err((label, _)) => label,
    };
    if *other_label == own_label {
        own_label.push_str(" (loaded)");
        other_label.push_str(" (compared)");
    }
    let ask = CompareAsk {
        own_label,
        other,
        own_is_base: c.loaded_is_base.get_untracked(),
    };
    client::load(LoadRequest {
        options: page_options(),
        compare: Some(ask.to_json()),
        ..LoadRequest::default()
    });
}

/// The other run becomes the baseline (or back).
pub fn swap(s: AppState) {
    s.compare.loaded_is_base.update(|b| *b = !*b);
    ask(s);
}

/// The first worker's comparison: the stacked timelines are asked for once both runs are in.
pub fn on_diff(s: AppState, diff: RunDiff) {
    let both = diff.base.error.is_none() && diff.new.error.is_none();
    s.compare.diff.set(Some(Arc::new(diff)));
    s.compare.phase.set(Phase::Done);
    let st = s.compare.stacked;
    let missing =
        st.own.with_untracked(Option::is_none) || st.other.with_untracked(Option::is_none);
    if both && missing {
        ask_stacked(s, st.step.get_untracked());
    }
}

/// The loaded run was analysed again (files added to it): compare again, if comparing; its
/// stacked timeline is cut again once compared.
pub fn on_loaded_result(s: AppState) {
    if s.compare.phase.get_untracked() == Phase::Done {
        let st = s.compare.stacked;
        st.own.set(None);
        st.cache.update_value(|c| c.retain(|(own, _, _)| !own));
        ask(s);
    }
}

fn clear_stacked(s: AppState) {
    let st = s.compare.stacked;
    st.own.set(None);
    st.other.set(None);
    st.view.set(None);
    st.step.set(None);
    st.cache.set_value(Vec::new());
}

/// Shows step `step` (`None`: each run's first) of both runs stacked: from the cuts received
/// when both runs have it, else asked of each run's worker (a bundle has none: it says so).
pub fn ask_stacked(s: AppState, step: Option<u64>) {
    let st = s.compare.stacked;
    st.step.set(step);
    let cached = |own: bool| {
        st.cache.with_value(|c| {
            c.iter()
                .rev()
                .find(|(o, k, _)| *o == own && step.is_some() && *k == step)
                .map(|(_, _, cut)| cut.clone())
        })
    };
    if let (Some(own), Some(other)) = (cached(true), cached(false)) {
        st.own.set(Some(own));
        st.other.set(Some(other));
        return;
    }
    if s.is_bundle {
        return;
    }
    let req = || LoadRequest {
        options: page_options(),
        stacked: Some(StackedAsk { step }),
        ..LoadRequest::default()
    };
    client::load(req());
    worker::send(req());
}

/// Cuts kept per run (a bundle carries the recorded ones: the steps viewed before export).
const CUTS_KEPT: usize = 8;

/// A run's cut of a step, from its worker (`own`: the loaded run's).
pub fn on_stacked(s: AppState, own: bool, info: StackedInfo, timeline: Option<timeline::Timeline>) {
    let st = s.compare.stacked;
    let step = info.step;
    let cut: Cut = Arc::new((info, timeline.unwrap_or_default()));
    st.cache.update_value(|c| {
        c.retain(|(o, k, _)| !(*o == own && *k == step));
        c.push((own, step, cut.clone()));
        if c.iter().filter(|(o, _, _)| *o == own).count() > CUTS_KEPT {
            if let Some(i) = c.iter().position(|(o, _, _)| *o == own) {
                c.remove(i);
            }
        }
    });
    // A run without the asked step answers with its first: shown all the same.
    let shown = match st.step.get_untracked() {
        None => true,
        Some(k) => step == Some(k) || !cut.0.steps.contains(&k),
    };
    if !shown {
        return;
    }
    match own {
        true => st.own.set(Some(cut)),
        false => st.other.set(Some(cut)),
    }
}

/// A bundle's other run: its files, its files' reports and its cuts, as its worker sent them
/// (the comparison itself comes with the loaded run's messages).
pub fn replay(s: AppState, other: &crate::page::sharing::bundle::OtherRun) {
    let c = s.compare;
    c.label.set(other.label.clone());
    c.loaded_is_base.set(other.loaded_is_base);
    c.rows.set(
        other
            .files
            .iter()
            .map(|(name, size)| Row {
                read: *size,
                ..Row::new(name.clone(), *size)
            })
            .collect(),
    );
    for (json, bytes) in other.messages() {
        match serde_json::from_str::<ToPage>(&json) {
            Ok(ToPage::Stacked { info }) => {
                let timeline = bytes
                    .as_deref()
                    .and_then(|b| ncclscope_app::protocol::timeline_codec::decode_timeline(b).ok());
                on_stacked(s, false, info, timeline);
            }
            Ok(msg) => on_message(s, msg),
            Err(e) => web_sys::console::error_1(&format!("bundle: {e}").into()),
        }
    }
}
