//! The app: its state ([`state`]: one context struct of signals, and the requests to the
//! worker), what it does with the worker's messages ([`dispatch`]), how files reach the worker
//! ([`intake`]: drops, the file inputs, the demo, a link's sources, the memory budget) and what it
//! shows ([`view`]: the shell of header, view bar, the view and the details drawer).

pub mod dispatch;
pub mod intake;
pub mod state;
pub mod view;

use leptos::prelude::*;

pub use state::{AppState, Row};

/// The page. A bundle (an exported HTML file) replays the messages it carries instead of
/// starting a worker.
#[component]
pub fn App() -> impl IntoView {
    crate::page::views::registry::check();
    let bundle = crate::page::sharing::bundle::embedded();
    let s = AppState::new(bundle.is_some());
    provide_context(s);
    dispatch::install(s);
    s.notes.set_first_page(Callback::new(move |id: usize| {
        s.rows.with_untracked(|r| {
            r.get(id)
                .and_then(|x| x.report.as_ref())
                .map(|v| v.notes.clone())
                .unwrap_or_default()
        })
    }));
    match bundle {
        Some(b) => {
            crate::page::client::disable_worker();
            s.notes.set_local_only();
            s.rows.set(
                b.files
                    .iter()
                    .map(|(name, size)| Row {
                        read: *size,
                        ..Row::new(name.clone(), *size)
                    })
                    .collect(),
            );
            crate::page::client::replay(b.messages());
            if let Some(other) = &b.other {
                crate::page::compare::replay(s, other);
            }
        }
        None => crate::page::client::prestart(),
    }
    intake::listen(s);
    view::Shell(s)
}
