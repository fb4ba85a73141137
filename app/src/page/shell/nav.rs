//! The view bar: one tab per view, each a click and a key away (its key is on the tab). A view
//! with nothing to show for the files loaded stays reachable but dimmed, and says what it needs.
//! Keys are read unless the user is typing, the focused timeline took the key, or a modifier is
//! held; the left and right arrows move between focused tabs.

use leptos::ev;
use leptos::prelude::*;
use ncclscope_app::page_logic::views::of_key;

use crate::page::app::state::app_state;
use crate::page::views::registry::{self, VIEWS};

/// Whether a key event's target takes text (the key is the user's typing, not a view's).
fn typing(e: &web_sys::KeyboardEvent) -> bool {
    use wasm_bindgen::JsCast;
    let Some(el) = e
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
    else {
        return false;
    };
    let tag = el.tag_name().to_ascii_lowercase();
    matches!(tag.as_str(), "input" | "select" | "textarea")
        || el.get_attribute("contenteditable").is_some()
}

/// Focuses the tab of view `i`.
fn focus_tab(i: usize) {
    use wasm_bindgen::JsCast;
    let tab = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| {
            d.query_selector(&format!("[data-testid=view-{}]", registry::slug(i)))
                .ok()
                .flatten()
        })
        .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok());
    if let Some(tab) = tab {
        let _ = tab.focus();
    }
}

#[component]
pub fn ViewBar() -> impl IntoView {
    let s = app_state();
    let keys = window_event_listener(ev::keydown, move |e| {
        if e.default_prevented() || e.ctrl_key() || e.meta_key() || e.alt_key() || typing(&e) {
            return;
        }
        let specs: Vec<_> = VIEWS.iter().map(|v| v.spec).collect();
        if let Some(i) = of_key(&specs, &e.key()) {
            if registry::listed(&s, i) {
                e.prevent_default();
                s.view.set(i);
            }
        }
    });
    on_cleanup(move || keys.remove());
    let tabs = VIEWS
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let spec = v.spec;
            let listed = move || registry::listed(&s, i);
            let ready = move || registry::ready(&s, i);
            let title = move || {
                if ready() {
                    format!("{} (key {})", spec.about, spec.key.to_ascii_uppercase())
                } else {
                    format!(
                        "{} (key {}). Needs {}.",
                        spec.about,
                        spec.key.to_ascii_uppercase(),
                        spec.needs
                    )
                }
            };
            view! {
                <Show when=listed>
                    <button
                        class="view-tab"
                        class:empty=move || !ready()
                        data-testid=format!("view-{}", spec.slug)
                        data-view=spec.slug
                        aria-current=move || (s.view.get() == i).then_some("page")
                        aria-keyshortcuts=spec.key.to_ascii_uppercase().to_string()
                        title=title
                        on:click=move |_| s.view.set(i)
                        on:keydown=move |e: web_sys::KeyboardEvent| {
                            let step: isize = match e.key().as_str() {
                                "ArrowRight" => 1,
                                "ArrowLeft" => -1,
                                _ => return,
                            };
                            e.prevent_default();
                            let n = VIEWS.len() as isize;
                            let mut j = i as isize;
                            for _ in 0..n {
                                j = (j + step).rem_euclid(n);
                                if registry::listed(&s, j as usize) {
                                    break;
                                }
                            }
                            focus_tab(j as usize);
                        }
                    >
                        {spec.name}
                        <kbd aria-hidden="true">{spec.key.to_ascii_uppercase().to_string()}</kbd>
                    </button>
                </Show>
            }
        })
        .collect_view();
    view! {
        <nav class="view-bar" aria-label="Views" data-testid="view-bar">
            {tabs}
        </nav>
    }
}
