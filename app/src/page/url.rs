//! What the page's URL asks for: `?memory-limit-mb=N`, `?digest`, the worker counts and the
//! tests' switches.

use ncclscope_app::page_logic::budget::DEFAULT_LIMIT_BYTES;
use ncclscope_app::protocol::messages::{PageOptions, ParseFault};

/// The items of the page URL's query: `?digest&align-workers=2` gives `digest` and
/// `align-workers=2`.
pub fn query_items() -> Vec<String> {
    let query = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    query
        .trim_start_matches('?')
        .split('&')
        .map(str::to_string)
        .collect()
}

/// The worker's memory limit for the files it is given: `?memory-limit-mb=N` in the page's URL
/// (for tests and for machines with less memory), else [`DEFAULT_LIMIT_BYTES`].
pub fn memory_limit() -> u64 {
    query_items()
        .iter()
        .find_map(|kv| kv.strip_prefix("memory-limit-mb=")?.parse::<u64>().ok())
        .map_or(DEFAULT_LIMIT_BYTES, |mb| mb * 1_000_000)
}

/// The options of the page's URL the worker needs: `?digest` (each input's records digest, for
/// engine comparisons), `?align-workers=N` and `?parse-workers=N` with the tests' switches
/// (see [`PageOptions`]).
pub fn page_options() -> PageOptions {
    let mut options = PageOptions::default();
    for kv in query_items() {
        if kv == "digest" {
            options.digests = true;
        } else if kv == "align-fault" {
            options.align_fault = true;
        } else if let Some(n) = kv.strip_prefix("align-workers=") {
            options.align_workers = n.parse().ok();
        } else if let Some(n) = kv.strip_prefix("parse-workers=") {
            options.parse_workers = n.parse().ok();
        } else if kv == "parse-share" {
            options.parse_share = true;
        } else if kv == "parse-fault" {
            options.parse_fault = ParseFault::from_query("");
        } else if let Some(f) = kv.strip_prefix("parse-fault=") {
            options.parse_fault = ParseFault::from_query(f);
        }
    }
    options
}
