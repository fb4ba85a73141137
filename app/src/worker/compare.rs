//! The loading worker's part in comparing two runs (docs/design/diff.md, "In the page"): it
//! sends its run's profile, or compares its run with the profile the page hands it.

use analyses::diff;

use crate::protocol::compare::CompareAsk;
use crate::protocol::messages::{LoadRequest, ToPage};
use crate::worker::post::post;

/// The worker's session and its last analysis, if any, given to a function (the loading
/// worker owns them: passed in, so that this module does not import the loader that calls it).
pub type WithAnalysed<'a> = &'a dyn Fn(&mut dyn FnMut(&load::Session, &pipeline::Analysis)) -> bool;

/// Answers `req`'s profile and comparison requests, if any.
pub fn serve(req: &LoadRequest, with_analysed: WithAnalysed<'_>) {
    if let Some(label) = &req.profile {
        let profile = own_profile(label, with_analysed);
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
                let own = own_profile(&ask.own_label, with_analysed);
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
fn own_profile(label: &str, with_analysed: WithAnalysed<'_>) -> Result<diff::RunProfile, String> {
    let mut out = Err("no run is loaded".to_string());
    with_analysed(&mut |session, analysis| {
        out = if session.logs().is_empty() && session.exports().is_empty() {
            Err("none of its files could be read".to_string())
        } else {
            Ok(diff::profile(session, analysis, label))
        };
    });
    out
}
