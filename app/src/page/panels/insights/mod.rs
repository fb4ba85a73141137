//! The insights' views: what went wrong ([`diagnosis`]), why steps are slow ([`steps`]), where
//! traffic flows ([`patterns`]) and who is who ([`identity`]). Each draws the worker's
//! [`Insights`] as they are (the command's JSON under the same names), and says so when the
//! loaded files cannot answer its question.

pub mod diagnosis;
pub mod identity;
pub mod patterns;
pub mod steps;

use leptos::prelude::*;
use ncclscope_app::protocol::insights::Insights;

/// The insights as the views read them: `None` until the worker sent them.
pub type InsightsSignal = RwSignal<Option<std::sync::Arc<Insights>>>;

/// Milliseconds, readably.
pub(crate) fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else if v >= 1.0 {
        format!("{v:.1} ms")
    } else {
        format!("{:.0} µs", v * 1000.0)
    }
}

/// A share as a percentage.
pub(crate) fn pct(v: f64) -> String {
    format!("{:.0} %", v * 100.0)
}

/// A list of ranks, shortened past a dozen.
pub(crate) fn ranks(r: &[u32]) -> String {
    let shown: Vec<String> = r.iter().take(12).map(u32::to_string).collect();
    match r.len() {
        0 => "—".into(),
        n if n > 12 => format!("{} … ({n} ranks)", shown.join(", ")),
        _ => shown.join(", "),
    }
}

/// What a view shows while the insights are on their way.
pub(crate) fn waiting() -> impl IntoView {
    view! { <p class="hint" data-testid="insights-waiting">"Computing…"</p> }
}
