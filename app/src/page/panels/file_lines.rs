//! A file's view at an evidence line (`file:line`): the lines around it, the line itself marked
//! and scrolled into view. The worker reads them from the dropped file ([`FileLinesAsk`]); where
//! the file is not here (a bundle, a link's recipient) the view shows the line's own text as the
//! finding carries it, and says so. Every line is set as text, never as markup.

use analyses::diagnosis::Evidence;
use leptos::html::Div;
use leptos::prelude::*;
use ncclscope_app::page_logic::file_lines::{window, AROUND};
use ncclscope_app::protocol::file_lines::{FileLines, FileLinesAsk};
use ncclscope_app::protocol::messages::LoadRequest;

use crate::page::client;
use crate::page::url::page_options;

/// What the file view holds.
#[derive(Clone, Debug, PartialEq)]
enum Status {
    /// Asked the worker.
    Reading,
    Lines(FileLines),
    /// The file is not loaded here: the evidence's own text is all there is.
    NotLoaded,
}

#[derive(Clone, Debug, PartialEq)]
struct Shown {
    evidence: Evidence,
    /// The evidence came with a link, not from the files dropped here.
    from_link: bool,
    status: Status,
}

/// The file view's state: which evidence line is shown, and its lines once read.
#[derive(Clone, Copy)]
pub struct FileLinesState {
    shown: RwSignal<Option<Shown>>,
}

impl Default for FileLinesState {
    fn default() -> Self {
        Self::new()
    }
}

impl FileLinesState {
    pub fn new() -> FileLinesState {
        FileLinesState {
            shown: RwSignal::new(None),
        }
    }

    /// Opens the view at `e`: read from the file when it is `loaded` (a worker holds it), else
    /// the line's own text as the finding carries it.
    pub fn open(&self, e: Evidence, loaded: bool, from_link: bool) {
        let status = if loaded {
            client::load(LoadRequest {
                options: page_options(),
                file_lines: Some(FileLinesAsk {
                    path: e.path.clone(),
                    line: e.line,
                }),
                ..LoadRequest::default()
            });
            Status::Reading
        } else {
            Status::NotLoaded
        };
        self.shown.set(Some(Shown {
            evidence: e,
            from_link,
            status,
        }));
    }

    /// The worker's answer: kept if it is of the line shown.
    pub fn receive(&self, lines: FileLines) {
        self.shown.update(|s| {
            if let Some(s) = s.as_mut().filter(|s| {
                s.evidence.path == lines.path
                    && s.evidence.line == lines.line
                    && s.status == Status::Reading
            }) {
                s.status = Status::Lines(lines);
            }
        });
    }

    pub fn close(&self) {
        self.shown.set(None);
    }
}

/// The file view, when a line is shown.
#[component]
pub fn FileLinesView(state: FileLinesState) -> impl IntoView {
    let scroller = NodeRef::<Div>::new();
    // Once the lines are drawn, the marked one is brought to the middle of the box.
    Effect::new(move |_| {
        state.shown.track();
        request_animation_frame(move || {
            // The view may be gone by the next frame (another view opened, or the Diagnosis view
            // redrawn as a late analysis arrives): its node reference is disposed then.
            let Some(boxed) = scroller.try_get_untracked().flatten() else {
                return;
            };
            if let Some(hit) = boxed.query_selector(".hit").ok().flatten() {
                // Where the line is within the box's content, from the two boxes on screen.
                let (line, frame) = (
                    hit.get_bounding_client_rect(),
                    boxed.get_bounding_client_rect(),
                );
                let top = line.top() - frame.top() + f64::from(boxed.scroll_top());
                let middle = top - (frame.height() - line.height()) / 2.0;
                boxed.set_scroll_top(middle.max(0.0) as i32);
            }
        });
    });
    move || {
        state.shown.get().map(|s| {
            let e = &s.evidence;
            let title = format!("{}:{}", e.path, e.line);
            let (note, rows) = body(&s);
            view! {
                <section class="file-lines" data-testid="file-lines" data-path=e.path.clone() data-line=e.line>
                    <header>
                        <h3 class="mono">{title}</h3>
                        <button class="close" data-testid="file-lines-close" aria-label="Close the file view" title="Close"
                            on:click=move |_| state.close()>"×"</button>
                    </header>
                    {note.map(|n| view! { <p class="hint" data-testid="file-lines-note">{n}</p> })}
                    <div class="file-lines-box" node_ref=scroller>
                        <ol class="file-lines-list">{rows}</ol>
                    </div>
                </section>
            }
        })
    }
}

/// The note above the lines (if any) and the lines' rows.
fn body(s: &Shown) -> (Option<String>, Vec<AnyView>) {
    let e = &s.evidence;
    match &s.status {
        Status::Reading => (Some("Reading the file…".into()), Vec::new()),
        Status::Lines(l) => {
            let rows = l
                .lines
                .iter()
                .enumerate()
                .map(|(i, text)| row(l.first + i as u64, text, l.first + i as u64 == e.line))
                .collect();
            (l.error.clone(), rows)
        }
        Status::NotLoaded => {
            let whence = if s.from_link {
                "This finding came with the link"
            } else {
                "The file is not loaded on this page"
            };
            let (first, last) = window(e.line, AROUND);
            let note = match &e.text {
                Some(_) => format!("{whence}: the file is not loaded, so only its line {} is shown, as the finding carries it (drop the file to see lines {first}–{last}).", e.line),
                None => format!("{whence}: the file is not loaded, and the finding does not carry the line's text (drop the file to see it)."),
            };
            let rows = e
                .text
                .as_ref()
                .map(|t| vec![row(e.line, t, true)])
                .unwrap_or_default();
            (Some(note), rows)
        }
    }
}

fn row(n: u64, text: &str, hit: bool) -> AnyView {
    view! {
        <li class:hit=hit data-testid=if hit { "file-line-hit" } else { "file-line" } data-line=n>
            <span class="ln">{n}</span>
            <code>{text.to_string()}</code>
        </li>
    }
    .into_any()
}
