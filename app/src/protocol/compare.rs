//! Two runs compared in the page (issue 35; docs/design/diff.md, "In the page"). Each run lives
//! in a loading worker of its own; the worker of the run the user loaded second sends its run's
//! [`RunProfile`] (plain serde data), and the page hands it, in a [`CompareAsk`], to the other
//! worker, which profiles its own run and compares the two ([`CompareAsk::compare`]).

use analyses::diff::{self, RunDiff, RunProfile, Settings};
use serde::{Deserialize, Serialize};

/// Page → the worker that holds one run: compare it with the other run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareAsk {
    /// What this worker's run is called in the comparison.
    pub own_label: String,
    /// The other run's profile, or (its label, why it could not be read).
    pub other: Result<RunProfile, (String, String)>,
    /// This worker's run is the baseline (else the other one is: the user swapped them).
    pub own_is_base: bool,
}

impl CompareAsk {
    /// The request as it travels inside a `LoadRequest`: JSON, the form the page received the
    /// profile in (a structured clone of 10⁵ durations would gain nothing).
    pub fn to_json(&self) -> String {
        // Plain data (no map with non-string keys): serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> Result<CompareAsk, String> {
        serde_json::from_str(text).map_err(|e| format!("comparison request: {e}"))
    }

    /// The comparison, given this worker's run's profile (or why it has none): base and new as
    /// the user ordered them, either side failed or not (`diff::compare_loaded`).
    pub fn compare(&self, own: Result<&RunProfile, &str>) -> RunDiff {
        let own = own.map_err(|e| (self.own_label.as_str(), e));
        let other = self
            .other
            .as_ref()
            .map_err(|(label, e)| (label.as_str(), e.as_str()));
        let (base, new) = if self.own_is_base {
            (own, other)
        } else {
            (other, own)
        };
        diff::compare_loaded(base, new, &Settings::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use analyses::diff::ChangeKind;
    use pipeline::{analyse, UserSizes};
    use synth::variation::Variation;
    use synth::{Layout, Model, RunConfig};

    /// A small TP×DP run (the diff tests' own shape), its AllReduce slowed or not.
    fn run(label: &str, slow_allreduce: bool) -> RunProfile {
        let model = Model {
            layers: 4,
            global_batch: 16,
            iterations: 3,
            ..Model::thesis()
        };
        let layout = Layout {
            tp: 2,
            dp: 2,
            ..Layout::default()
        };
        let mut c = RunConfig::new(layout, model);
        c.gpus_per_node = 2;
        c.nodes = 2;
        if slow_allreduce {
            c.variation = Variation {
                op_bandwidth: Some(("AllReduce".into(), 0.5)),
                ..Variation::default()
            };
        }
        let session = testkit::sessions::of_run(&synth::generate(&c));
        let analysis = analyse(&session, &UserSizes::default());
        diff::profile(&session, &analysis, label)
    }

    /// The page's path: the second run's profile goes through JSON (worker → page → worker),
    /// the first worker compares; the known change comes first either way round, and swapping
    /// turns the ratio over.
    #[test]
    fn a_profile_sent_through_the_page_compares_like_the_command() {
        let (base, slow) = (run("base", false), run("slow", true));
        let ask = CompareAsk {
            own_label: "base".into(),
            other: Ok(slow.clone()),
            own_is_base: true,
        };
        let back = CompareAsk::from_json(&ask.to_json()).unwrap();
        let d = back.compare(Ok(&base));
        // As the command compares them (JSON keeps every figure but a float's last digit).
        let native = diff::compare(&base, &slow, &Settings::default());
        let listed = |d: &RunDiff| {
            d.changes
                .iter()
                .map(|c| (c.kind, c.signatures.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(listed(&d), listed(&native));
        let first = &d.changes[0];
        assert_eq!(first.kind, ChangeKind::Time, "{}", d.summary);
        assert_eq!(first.signatures[0].op, "AllReduce");
        assert!(first.impact_ns > 0.0);
        let ratio = |d: &RunDiff| {
            d.signatures
                .iter()
                .find(|s| s.key == first.signatures[0])
                .and_then(|s| s.time_ratio)
                .unwrap()
        };
        assert!(ratio(&d) > 1.5, "{}", ratio(&d));
        // Swapped: the slow run is the baseline, the same signature is now faster.
        let swapped = CompareAsk {
            own_is_base: false,
            ..back
        }
        .compare(Ok(&base));
        assert_eq!(swapped.base.label, "slow");
        assert!(ratio(&swapped) < 0.7, "{}", ratio(&swapped));
        assert!(swapped.changes[0].impact_ns < 0.0);
    }

    /// One run failing to load: the other is still summarised and the failure named.
    #[test]
    fn a_failed_run_is_named_and_the_other_kept() {
        let base = run("base", false);
        let ask = CompareAsk {
            own_label: "base".into(),
            other: Err(("broken".into(), "x.log: not an NCCL log".into())),
            own_is_base: true,
        };
        let d = ask.compare(Ok(&base));
        assert!(d.changes.is_empty());
        assert_eq!(d.base.size.world_size, 4);
        assert_eq!(d.new.error.as_deref(), Some("x.log: not an NCCL log"));
        assert!(d.summary.contains("broken"), "{}", d.summary);
        let own_failed = CompareAsk {
            own_is_base: false,
            ..ask
        }
        .compare(Err("no run loaded"));
        assert_eq!(own_failed.new.error.as_deref(), Some("no run loaded"));
    }
}
