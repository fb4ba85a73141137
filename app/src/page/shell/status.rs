//! Two thin lines under the header: the load's progress and the analysis's status, and the
//! link last made (or why it could not be).

use leptos::prelude::*;
use ncclscope_app::protocol::format::human_bytes;

use crate::page::app::state::app_state;

/// `read` of `size` as a whole percentage (`100 %` for an empty file).
pub fn percent_read(read: u64, size: u64) -> String {
    let pct = (read.min(size) * 100).checked_div(size).unwrap_or(100);
    format!("{pct} %")
}

/// Every file still loading, as one bar; then what the analysis is doing or did.
#[component]
pub fn StatusLine() -> impl IntoView {
    let s = app_state();
    let totals = move || {
        s.rows.with(|r| {
            let loading = r.iter().filter(|x| x.report.is_none()).count();
            let size: u64 = r.iter().map(|x| x.size).sum();
            let read: u64 = r.iter().map(|x| x.read.min(x.size)).sum();
            (loading, read, size)
        })
    };
    view! {
        <div class="status-line" role="status">
            <Show when=move || totals().0 != 0>
                <div class="overall" data-testid="overall-progress">
                    <progress
                        aria-label="Bytes read of the files loading"
                        max=move || totals().2.max(1) as f64
                        value=move || totals().1 as f64
                    ></progress>
                    <span>
                        {move || {
                            let (loading, read, size) = totals();
                            format!(
                                "loading {loading} file(s): {} / {} ({})",
                                human_bytes(read),
                                human_bytes(size),
                                percent_read(read, size)
                            )
                        }}
                    </span>
                </div>
            </Show>
            <Show when=move || s.analysing.get()>
                <span class="hint" data-testid="analysing">"Analysing every file loaded so far…"</span>
            </Show>
            <Show when=move || !s.analysing.get() && !s.rerun.with(String::is_empty)>
                <span class="hint" data-testid="analysis-status">
                    {move || format!("Analysed in {:.0} ms: {}", s.analysis_ms.get().unwrap_or(0.0), s.rerun.get())}
                </span>
            </Show>
            <span class="privacy" data-testid="privacy">
                "Files are read in this tab only; nothing is uploaded. After the first visit the page also works offline."
            </span>
        </div>
    }
}

/// The link just made, in a field to copy from (it is in the address bar and, where allowed, on
/// the clipboard too), or why it could not be made; a bundle's export error.
#[component]
pub fn ShareBar() -> impl IntoView {
    let s = app_state();
    view! {
        <Show when=move || s.share_url.with(Option::is_some) || s.share_error.with(Option::is_some) || s.bundle_error.with(Option::is_some)>
            <div class="share" role="status">
                {move || s.share_url.get().map(|u| view! {
                    <label class="share-label">"Link "
                        <input readonly class="share-url" data-testid="share-link" value=u />
                    </label>
                })}
                {move || s.share_error.get().map(|e| view! { <span class="error" data-testid="share-error">{e}</span> })}
                {move || s.bundle_error.get().map(|e| view! { <span class="error" data-testid="bundle-error">{e}</span> })}
                <button class="close" aria-label="Close the link line" title="Close"
                    on:click=move |_| {
                        s.share_url.set(None);
                        s.share_error.set(None);
                        s.bundle_error.set(None);
                    }>"×"</button>
            </div>
        </Show>
    }
}
