//! The bar that opens a panel: it scrolls the panel into view and marks it, and a link carries
//! which one was open (`p=`).

use leptos::prelude::*;

/// Panel ids (each panel's element is `panel-<id>`) and their names.
pub const PANELS: [(&str, &str); 11] = [
    ("notes", "File notes"),
    ("timeline", "Timeline"),
    ("ranks", "Ranks"),
    ("communicators", "Communicators"),
    ("alignment", "Alignment"),
    ("warnings", "Warnings"),
    ("operations", "Operations"),
    ("bandwidth", "Bandwidth"),
    ("topology", "Topology"),
    ("theory", "Theory"),
    ("window", "Window aggregate"),
];

/// Scrolls panel `id` into view and marks it open (the `open-panel` class), unmarking the rest.
pub fn show_panel(id: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    for (other, _) in PANELS {
        if let Some(el) = doc.get_element_by_id(&format!("panel-{other}")) {
            let _ = el.class_list().toggle_with_force("open-panel", other == id);
        }
    }
    if let Some(el) = doc.get_element_by_id(&format!("panel-{id}")) {
        el.scroll_into_view();
    }
}

#[component]
pub fn PanelNav(open: RwSignal<Option<String>>) -> impl IntoView {
    view! {
        <nav class="panel-nav" aria-label="Panels" data-testid="panel-nav">
            {PANELS.iter().map(|(id, name)| {
                let id = *id;
                view! {
                    <button
                        data-testid=format!("nav-{id}")
                        aria-current=move || open.with(|o| o.as_deref() == Some(id)).then_some("true")
                        on:click=move |_| {
                            open.set(Some(id.to_string()));
                            show_panel(id);
                        }
                    >
                        {*name}
                    </button>
                }
            }).collect_view()}
        </nav>
    }
}
