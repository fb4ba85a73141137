//! The loading worker's part in comparing two runs (docs/design/diff.md, "In the page"): it
//! sends its run's profile, or compares its run with the profile the page hands it.

use analyses::diff;

use crate::protocol::compare::CompareAsk;
use crate::protocol::messages::{LoadRequest, ToPage};
use crate::worker::loader::with_analysed;
use crate::worker::post::post;

/// Answers `req`'s profile and comparison requests, if any.
pub fn serve(req: &LoadRequest) {
    if let Some(label) = &req.profile {
        let profile = own_profile(label);
        post(
            &ToPage::Profile {
                profile: Box::new(profile),
            },
            None,
        );
    }
    if let Some(json) = &req.compare {
        match CompareAsk::from_json(json) {
            Ok(ask) => {
                let own = own_profile(&ask.own_label);
                let diff = ask.compare(own.as_ref().map_err(String::as_str));
                post(
                    &ToPage::Diff {
                        diff: Box::new(diff),
                    },
                    None,
                );
            }
            // The page wrote it: a bug, said on the console.
            Err(e) => web_sys::console::error_1(&e.into()),
        }
    }
}

/// This worker's run as the comparison reads it, or why there is none.
fn own_profile(label: &str) -> Result<diff::RunProfile, String> {
    with_analysed(|session, analysis| {
        if session.logs().is_empty() && session.exports().is_empty() {
            Err("none of its files could be read".to_string())
        } else {
            Ok(diff::profile(session, analysis, label))
        }
    })
    .unwrap_or_else(|| Err("no run is loaded".into()))
}
