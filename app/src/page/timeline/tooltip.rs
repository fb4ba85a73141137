//! The hover tooltip: the headline enriched fields (the exports' columns, figure 4.2 of the
//! thesis, as `page_logic::fields` writes them) of the kernel under the mouse, two to a line so
//! that it covers little of the timeline; a click shows every field in the details drawer. The worker answers a hover as it answers a click (the pick path,
//! flagged `hover`), but the page keeps at most one hover request in flight and, when it
//! returns, asks again only for the kernel under the mouse then: the latest position wins and a
//! sweep across thousands of kernels never queues thousands of requests.

use analyses::KernelDetails;
use leptos::prelude::*;
use ncclscope_app::page_logic::fields::{headline, Field};

/// An answer older than this (a worker that died, or one busy loading) no longer blocks the next.
const STALE_MS: f64 = 1500.0;

/// What the tooltip shows for one kernel.
#[derive(Clone, Debug, PartialEq)]
struct Tip {
    key: (usize, usize),
    title: String,
    fields: Vec<Field>,
}

/// The hover state, shared by the timeline (which reports the mouse) and the page (which routes
/// the worker's answers here).
#[derive(Clone, Copy)]
pub struct Hover {
    /// The kernel under the mouse, as (track, span) of the timeline.
    target: RwSignal<Option<(usize, usize)>>,
    /// The mouse, in viewport pixels.
    at: RwSignal<(f64, f64)>,
    /// What the timeline itself says of the target (operation, track, duration): the title
    /// when the worker has no details (a kernel no log line matched, or no logs loaded).
    fallback: StoredValue<String>,
    shown: RwSignal<Option<Tip>>,
    /// When the request in flight was sent (`Date.now()`), if one is.
    in_flight: StoredValue<Option<f64>>,
    send: Callback<(usize, usize)>,
}

impl Hover {
    /// `send` asks the worker about a kernel (a pick request flagged as a hover).
    pub fn new(send: Callback<(usize, usize)>) -> Hover {
        Hover {
            target: RwSignal::new(None),
            at: RwSignal::new((0.0, 0.0)),
            fallback: StoredValue::new(String::new()),
            shown: RwSignal::new(None),
            in_flight: StoredValue::new(None),
            send,
        }
    }

    /// The mouse is at viewport point (x, y), over kernel `kernel` (or none), which the
    /// timeline describes as `fallback`.
    pub fn moved(self, kernel: Option<((usize, usize), String)>, x: f64, y: f64) {
        self.at.set((x, y));
        let (kernel, fallback) = kernel.map_or((None, String::new()), |(k, f)| (Some(k), f));
        if self.target.get_untracked() == kernel {
            return;
        }
        self.fallback.set_value(fallback);
        self.target.set(kernel);
        if let Some(k) = kernel {
            self.ask(k);
        }
    }

    /// The mouse left, a drag started or the timeline changed: nothing to show, and nothing
    /// kept (a new timeline's kernel at the same place is another kernel).
    pub fn hide(self) {
        if self.target.get_untracked().is_some() {
            self.target.set(None);
        }
        if self.shown.with_untracked(Option::is_some) {
            self.shown.set(None);
        }
    }

    /// The worker's answer about `key`.
    pub fn answer(
        self,
        key: (usize, usize),
        details: Option<KernelDetails>,
        fields: Vec<(String, String)>,
    ) {
        self.in_flight.set_value(None);
        let target = self.target.get_untracked();
        if target == Some(key) {
            let fields = headline(&fields);
            self.shown.set(Some(match details {
                Some(d) => Tip {
                    key,
                    title: title(&d),
                    fields,
                },
                None => Tip {
                    key,
                    title: format!("{} · no log line matched", self.fallback.get_value()),
                    fields: Vec::new(),
                },
            }));
        } else if let Some(k) = target {
            // The mouse moved on while the worker answered: ask about where it is now.
            self.ask(k);
        }
    }

    fn ask(self, k: (usize, usize)) {
        let now = js_sys::Date::now();
        if self.shown.with_untracked(|s| s.as_ref().map(|t| t.key)) == Some(k) {
            return;
        }
        if self
            .in_flight
            .get_value()
            .is_some_and(|t| now - t < STALE_MS)
        {
            // Its answer will ask for the latest target.
            return;
        }
        self.in_flight.set_value(Some(now));
        self.send.run(k);
    }
}

/// The log's operation, the rank and the kernel's duration, in one line.
fn title(d: &KernelDetails) -> String {
    let op = d
        .lines
        .first()
        .map_or("unmatched kernel", |l| l.op.as_str());
    format!(
        "{op} · rank {} · {:.1} µs",
        d.rank,
        (d.end_ns - d.start_ns) as f64 / 1e3
    )
}

/// The tooltip, near the mouse; every string is set as text.
#[component]
pub fn Tooltip(hover: Hover) -> impl IntoView {
    let tip = move || {
        let target = hover.target.get()?;
        hover.shown.with(|s| s.clone().filter(|t| t.key == target))
    };
    let style = move || {
        let (x, y) = hover.at.get();
        let (vw, vh) = web_sys::window()
            .map(|w| {
                let n = |v: Result<wasm_bindgen::JsValue, _>| {
                    v.ok().and_then(|v| v.as_f64()).unwrap_or(1e4)
                };
                (n(w.inner_width()), n(w.inner_height()))
            })
            .unwrap_or((1e4, 1e4));
        // Right of and below the cursor, flipped to the left near the viewport's right edge; never
        // so low that the list runs off the bottom.
        let left = if x + 500.0 > vw {
            (x - 496.0).max(0.0)
        } else {
            x + 16.0
        };
        let top = (y + 16.0).min(vh * 0.35).max(0.0);
        format!("left: {left:.0}px; top: {top:.0}px;")
    };
    view! {
        {move || tip().map(|t| view! {
            <div
                class="tooltip"
                role="tooltip"
                data-testid="tooltip"
                data-kernel=format!("{}_{}", t.key.0, t.key.1)
                style=style
            >
                <div class="tooltip-title" data-testid="tooltip-title">{t.title.clone()}</div>
                <dl>
                    {t.fields
                        .iter()
                        .map(|f| view! { <dt>{f.label.clone()}</dt><dd data-field-name=f.name.clone()>{f.text.clone()}</dd> })
                        .collect_view()}
                </dl>
                {(!t.fields.is_empty()).then(|| view! { <div class="tooltip-more">"Click for every field"</div> })}
            </div>
        })}
    }
}
