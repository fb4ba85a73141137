//! Light and dark themes. The stylesheet defines both as CSS variables and follows the system's
//! `prefers-color-scheme`; the header's toggle overrides it with `data-theme` on `<html>`,
//! remembered in localStorage (`www/index.html` applies it before the first paint). The canvas
//! has no stylesheet: it reads its colours from the same variables each time it draws, and
//! redraws when [`revision`] changes.

use leptos::prelude::*;
use wasm_bindgen::prelude::*;

const STORAGE_KEY: &str = "ncclscope-theme";

thread_local! {
    /// Bumped on every theme change (toggle or system), for whatever draws outside CSS.
    /// Reference-counted, not owned by whichever reactive scope first reads it (an arena
    /// signal would die with that scope, e.g. when an effect reading it re-runs).
    static REVISION: ArcRwSignal<u64> = ArcRwSignal::new(0);
}

/// A signal that changes whenever the theme does.
pub fn revision() -> ArcRwSignal<u64> {
    REVISION.with(ArcRwSignal::clone)
}

/// The timeline canvas's colours.
#[derive(Clone, Debug, PartialEq)]
pub struct CanvasColours {
    /// Plot background and every other row's stripe, as RGB for the pixel buffer.
    pub background: [u8; 3],
    pub stripe: [u8; 3],
    /// Row labels, ruler text and the selection outline.
    pub text: String,
    pub ruler: String,
    pub mark: String,
}

impl Default for CanvasColours {
    /// The light theme's, if the variables cannot be read.
    fn default() -> Self {
        CanvasColours {
            background: [0xff; 3],
            stripe: [0xf4; 3],
            text: "#222222".into(),
            ruler: "#555555".into(),
            mark: "#000000".into(),
        }
    }
}

/// `#rgb` or `#rrggbb`.
fn parse_hex(s: &str) -> Option<[u8; 3]> {
    let h = s.trim().strip_prefix('#')?;
    let byte = |i: usize, n: usize| u8::from_str_radix(h.get(i..i + n)?, 16).ok();
    match h.len() {
        6 => Some([byte(0, 2)?, byte(2, 2)?, byte(4, 2)?]),
        3 => Some([byte(0, 1)? * 17, byte(1, 1)? * 17, byte(2, 1)? * 17]),
        _ => None,
    }
}

thread_local! {
    /// The colours read at a revision: a frame does not recompute the page's style.
    static COLOURS: std::cell::RefCell<Option<(u64, CanvasColours)>> = const { std::cell::RefCell::new(None) };
}

/// The canvas colours of the theme in force (`--timeline-*` in style.css), read once per theme
/// change.
pub fn canvas_colours() -> CanvasColours {
    let rev = revision().get_untracked();
    if let Some(c) = COLOURS.with_borrow(|c| {
        c.as_ref()
            .filter(|(r, _)| *r == rev)
            .map(|(_, c)| c.clone())
    }) {
        return c;
    }
    let c = read_colours();
    COLOURS.with_borrow_mut(|slot| *slot = Some((rev, c.clone())));
    c
}

fn read_colours() -> CanvasColours {
    let mut c = CanvasColours::default();
    let Some(style) = web_sys::window().and_then(|w| {
        let root = w.document()?.document_element()?;
        w.get_computed_style(&root).ok().flatten()
    }) else {
        return c;
    };
    let var = |name: &str| {
        style
            .get_property_value(name)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if let Some(v) = var("--timeline-bg").as_deref().and_then(parse_hex) {
        c.background = v;
    }
    if let Some(v) = var("--timeline-stripe").as_deref().and_then(parse_hex) {
        c.stripe = v;
    }
    if let Some(v) = var("--timeline-text") {
        c.text = v;
    }
    if let Some(v) = var("--timeline-ruler") {
        c.ruler = v;
    }
    if let Some(v) = var("--timeline-mark") {
        c.mark = v;
    }
    c
}

fn system_dark() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .is_some_and(|m| m.matches())
}

/// Whether the page is dark now: the stored choice, else the system's.
fn is_dark() -> bool {
    let chosen = web_sys::window().and_then(|w| {
        w.document()?
            .document_element()?
            .get_attribute("data-theme")
    });
    match chosen.as_deref() {
        Some("dark") => true,
        Some("light") => false,
        _ => system_dark(),
    }
}

fn apply(dark: bool) {
    let Some(w) = web_sys::window() else { return };
    let theme = if dark { "dark" } else { "light" };
    if let Some(root) = w.document().and_then(|d| d.document_element()) {
        let _ = root.set_attribute("data-theme", theme);
    }
    if let Ok(Some(store)) = w.local_storage() {
        let _ = store.set_item(STORAGE_KEY, theme);
    }
    revision().update(|r| *r += 1);
}

/// Applies a stored choice (again: the inline script may be absent, as in a bundle) and
/// follows the system's changes while no choice is stored.
fn init() {
    let Some(w) = web_sys::window() else { return };
    let stored = w
        .local_storage()
        .ok()
        .flatten()
        .and_then(|s| s.get_item(STORAGE_KEY).ok().flatten());
    if let (Some(t @ ("dark" | "light")), Some(root)) = (
        stored.as_deref(),
        w.document().and_then(|d| d.document_element()),
    ) {
        let _ = root.set_attribute("data-theme", t);
    }
    if let Ok(Some(m)) = w.match_media("(prefers-color-scheme: dark)") {
        let on_change = Closure::<dyn Fn()>::new(|| revision().update(|r| *r += 1));
        let _ = m.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
        // The page lives as long as the listener.
        on_change.forget();
    }
}

/// The header's button: switches between light and dark and remembers the choice.
#[component]
pub fn ThemeToggle() -> impl IntoView {
    init();
    let dark = RwSignal::new(is_dark());
    // A system change moves the page while no choice is stored.
    Effect::new(move |_| {
        revision().track();
        dark.set(is_dark());
    });
    view! {
        <button data-testid="theme-toggle"
            title="Switch between the light and dark themes (remembered in this browser)"
            on:click=move |_| apply(!is_dark())>
            {move || if dark.get() { "Light theme" } else { "Dark theme" }}
        </button>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hex_colours() {
        assert_eq!(parse_hex(" #17181a"), Some([0x17, 0x18, 0x1a]));
        assert_eq!(parse_hex("#fff"), Some([255, 255, 255]));
        assert_eq!(parse_hex("rgb(1, 2, 3)"), None);
        assert_eq!(parse_hex("#12345"), None);
    }
}
