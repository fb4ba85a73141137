//! The page's side of shareable links ([`ncclscope_app::link`] has the format): making a link
//! of the current view, and restoring the view a link names once its files are dropped.

use crate::page::panels::theory::HARDWARE_FIELD;
use analyses::WindowSummary;
use leptos::prelude::*;
use ncclscope_app::page_logic::link::{
    decode, encode, pack_kernel, pack_summary, verify, with_diagnosis, LinkFile, SharedDiagnosis,
    SharedKernel, ViewLink,
};
use ncclscope_app::protocol::format::human_bytes;
use theory::form::{Form, FIELDS};

use crate::page::timeline::canvas::View;

/// Where the page's own link stands.
#[derive(Clone, Debug, PartialEq)]
pub enum LinkState {
    /// No link, or one this page made.
    None,
    /// The page was opened with a link; its files have not been verified yet.
    Waiting(ViewLink),
    /// The files are verified and the view restored.
    Restored { files: usize },
    /// The dropped files do not include all of the link's (by fingerprint): the loaded run's
    /// missing, and (a link to a comparison) the other run's.
    Mismatch {
        expected: ViewLink,
        missing: Vec<LinkFile>,
        other_missing: Vec<LinkFile>,
    },
    /// The fragment could not be read (hostile, cut short, another format).
    Unreadable(String),
}

impl LinkState {
    /// From the page's URL fragment.
    pub fn from_location() -> LinkState {
        let hash = web_sys::window()
            .and_then(|w| w.location().hash().ok())
            .unwrap_or_default();
        if hash.trim_start_matches('#').is_empty() {
            return LinkState::None;
        }
        match decode(&hash, known_field) {
            Ok(link) => LinkState::Waiting(link),
            Err(e) => LinkState::Unreadable(e),
        }
    }

    pub fn waiting(&self) -> bool {
        matches!(self, LinkState::Waiting(_) | LinkState::Mismatch { .. })
    }

    /// The link whose files are expected, if any.
    pub fn expected(&self) -> Option<ViewLink> {
        match self {
            LinkState::Waiting(l) | LinkState::Mismatch { expected: l, .. } => Some(l.clone()),
            _ => None,
        }
    }
}

fn known_field(name: &str) -> bool {
    name == HARDWARE_FIELD || FIELDS.iter().any(|f| f.name() == name)
}

/// Checks the loaded files (and, for a link to a comparison, the other run's: `other`) against
/// the link: the new state, and the view to restore when every file the link names is there,
/// each run's among its own run's files.
pub fn apply_link(
    expected: &ViewLink,
    loaded: &[LinkFile],
    other: &[LinkFile],
) -> (LinkState, Option<ViewLink>) {
    let v = verify(&expected.files, loaded);
    let o = verify(&expected.other_files, other);
    if v.complete() && o.complete() {
        (
            LinkState::Restored {
                files: expected.files.len() + expected.other_files.len(),
            },
            Some(expected.clone()),
        )
    } else {
        (
            LinkState::Mismatch {
                expected: expected.clone(),
                missing: v.missing,
                other_missing: o.missing,
            },
            None,
        )
    }
}

/// A self-contained link: the window and its aggregate, no files, and the diagnosis's findings
/// when there are any. Errors when the summary is too big for a link.
pub fn self_contained_link(
    summary: &WindowSummary,
    diagnosis: Option<SharedDiagnosis>,
) -> Result<String, String> {
    pack_summary(summary)?;
    let link = ViewLink {
        window: Some((summary.start_ns, summary.end_ns)),
        summary: Some(summary.clone()),
        ..ViewLink::default()
    };
    Ok(publish(&encode(&with_diagnosis(link, diagnosis))))
}

/// A self-contained link to a picked kernel: its details travel in the link (and the
/// diagnosis's findings, when there are any).
pub fn self_contained_kernel_link(
    kernel: SharedKernel,
    diagnosis: Option<SharedDiagnosis>,
) -> Result<String, String> {
    pack_kernel(&kernel)?;
    let link = ViewLink {
        kernel: Some(kernel),
        ..ViewLink::default()
    };
    Ok(publish(&encode(&with_diagnosis(link, diagnosis))))
}

/// A self-contained link to the diagnosis: its findings travel in the link, with the panel to
/// open. Errors when there is nothing to carry.
pub fn self_contained_diagnosis_link(diagnosis: Option<SharedDiagnosis>) -> Result<String, String> {
    let Some(d) = diagnosis else {
        return Err("the diagnosis has no findings to put in a link".into());
    };
    let link = ViewLink {
        panel: Some("diagnosis".into()),
        ..ViewLink::default()
    };
    let link = with_diagnosis(link, Some(d));
    if link.diagnosis.is_none() {
        return Err("not even one finding fits in a link".into());
    }
    Ok(publish(&encode(&link)))
}

/// Puts a link to the current view in the address bar (replacing the entry, so Back still
/// leaves the page), copies it to the clipboard where allowed, and returns it. `views` holds what
/// the views themselves contribute (files, selection, panel, each analysis view's state); the
/// window, the theory form's fields and the timeline's filter and clock are added here; the
/// diagnosis' findings (`views.diagnosis`) as far as the link has room for them.
pub fn link_from_page(
    window: Option<View>,
    form: &Form,
    timeline: &timeline::TimelineView,
    mut views: ViewLink,
) -> String {
    // The findings go last: they take what room the rest of the link leaves.
    let diagnosis = views.diagnosis.take();
    let link = ViewLink {
        window: window.map(|v| (v.start_ns as i64, v.end_ns as i64)),
        theory: form
            .iter()
            .filter(|(k, v)| !v.is_empty() && known_field(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        filter: Some(timeline.filter.clone()).filter(|q| !q.is_empty()),
        original_clock: timeline.original_clock,
        ..views
    };
    publish(&encode(&with_diagnosis(link, diagnosis)))
}

/// Shows `fragment` in the address bar (replacing the entry, so Back still leaves the page),
/// copies the link to the clipboard where allowed, and returns it.
fn publish(fragment: &str) -> String {
    let Some(w) = web_sys::window() else {
        return format!("#{fragment}");
    };
    let loc = w.location();
    let base = format!(
        "{}{}{}",
        loc.origin().unwrap_or_default(),
        loc.pathname().unwrap_or_default(),
        loc.search().unwrap_or_default()
    );
    let url = format!("{base}#{fragment}");
    if let Ok(h) = w.history() {
        let _ = h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url));
    }
    // Clipboard access needs a user gesture and permission; the link is shown either way.
    let _ = w.navigator().clipboard().write_text(&url);
    url
}

/// The other run's files a link to a comparison names (still missing), and the inputs that
/// take them.
fn other_run(files: &[LinkFile], inputs: &ViewFn) -> Option<AnyView> {
    (!files.is_empty()).then(|| {
        view! {
            <div data-testid="link-other-run">
                <p>"The run it is compared with: give these files (any names) here, or on the Compare view's zone."</p>
                <ul>
                    {files.iter().map(|f| view! { <li data-testid="link-other-file">{describe(f)}</li> }).collect_view()}
                </ul>
                <div class="actions">{inputs.run()}</div>
            </div>
        }
        .into_any()
    })
}

fn describe(f: &LinkFile) -> String {
    format!(
        "{} ({}, SHA-256 {}…)",
        f.name,
        human_bytes(f.size),
        &f.sha256[..12]
    )
}

/// The hosts (`host:port`) of a link's source URLs, as the browser parses them.
fn hosts_of(urls: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = urls
        .iter()
        .map(|u| web_sys::Url::new(u).map_or_else(|_| u.clone(), |p| p.host()))
        .collect();
    hosts.dedup();
    hosts
}

/// A name for a file fetched from `url`: its last path segment.
pub fn name_of_source(url: &str) -> String {
    web_sys::Url::new(url)
        .ok()
        .and_then(|p| {
            let path = p.pathname();
            let last = path.rsplit('/').next().unwrap_or_default().to_string();
            js_sys::decode_uri_component(&last)
                .ok()
                .and_then(|s| s.as_string())
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| url.to_string())
}

/// What the page's link asks of the user, or what became of it. Every string from the link is
/// shown as text. `on_sources` fetches a link's `src=` URLs, once the user has said yes.
/// `other_inputs` are the inputs that take the other run's files, for a link to a comparison.
#[component]
pub fn LinkBanner(
    state: Signal<LinkState>,
    on_sources: Callback<Vec<String>>,
    other_inputs: ViewFn,
) -> impl IntoView {
    move || {
        match state.get() {
        LinkState::None => None,
        LinkState::Waiting(l) => {
            let urls = l.sources.clone();
            let hosts = hosts_of(&urls).join(", ");
            let n = urls.len();
            let sources = (!urls.is_empty()).then(move || {
                view! {
                    <div data-testid="link-sources">
                        <p>
                            {format!("This link loads {n} files from {hosts}. Nothing is fetched until you say so; only these hosts are contacted, and nothing is sent to them.")}
                        </p>
                        <button data-testid="link-load-sources" on:click=move |_| on_sources.run(urls.clone())>
                            {format!("Load the files from {hosts}")}
                        </button>
                    </div>
                }
            });
            let compared = !l.other_files.is_empty();
            let files = (!l.files.is_empty()).then(|| view! {
                <p>
                    {if compared {
                        "This link shows a comparison of two runs. Drop the loaded run's files (any names) on the page; their SHA-256 fingerprints are checked here, nothing is uploaded."
                    } else {
                        "This link shows a view of the files below. Drop them (any names) to restore it; their SHA-256 fingerprints are checked here, nothing is uploaded."
                    }}
                </p>
                <ul>
                    {l.files.iter().map(|f| view! { <li data-testid="link-file">{describe(f)}</li> }).collect_view()}
                </ul>
            });
            let other = other_run(&l.other_files, &other_inputs);
            let summary = l.summary.as_ref().map(|w| {
                view! {
                    <div data-testid="link-summary">
                        <h2>"Summary carried by this link (no files needed)"</h2>
                        {crate::page::panels::window::summary_view(w)}
                    </div>
                }
            });
            let kernel = l.kernel.as_ref().map(|k| {
                view! {
                    <div data-testid="link-kernel">
                        <h2>"Kernel carried by this link (no files needed)"</h2>
                        {crate::page::panels::details::details_view(&k.details, &k.fields)}
                    </div>
                }
            });
            Some(
                view! {
                    <section class="link-banner" data-testid="link-waiting">
                        {kernel}
                        {summary}
                        {sources}
                        {files}
                        {other}
                    </section>
                }
                .into_any(),
            )
        }
        LinkState::Restored { files } => Some(
            view! {
                <p class="link-banner ok" data-testid="link-restored">
                    {if files == 0 {
                        "View restored from the link.".to_string()
                    } else {
                        format!("View restored from the link: {files} files verified by SHA-256.")
                    }}
                </p>
            }
            .into_any(),
        ),
        LinkState::Mismatch { missing, other_missing, .. } => Some(view! {
            <section class="link-banner warn" data-testid="link-mismatch">
                {(!missing.is_empty()).then(|| view! {
                    <p>"The files loaded so far do not include these files of the link (compared by SHA-256):"</p>
                    <ul>
                        {missing.iter().map(|f| view! { <li>{describe(f)}</li> }).collect_view()}
                    </ul>
                })}
                {other_run(&other_missing, &other_inputs)}
            </section>
        }
        .into_any()),
        LinkState::Unreadable(e) => Some(view! {
            <p class="link-banner warn" data-testid="link-unreadable">
                {format!("This page's link could not be read: {e}. The page works as usual.")}
            </p>
        }
        .into_any()),
    }
    }
}
