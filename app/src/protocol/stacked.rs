//! The Compare view's stacked timelines (issue 35; docs/design/diff.md, "Stacked timelines"):
//! each run's timeline cut to one step and drawn on "time since the step's start", the base run
//! above the new one, so that step k starts at the same x in both and a slower step simply ends
//! further right. Each run's worker cuts its own timeline ([`stacked`]) and sends it in the
//! timeline's binary form: one step's kernels, never the whole run twice, with the summaries
//! (level of detail) rebuilt for the cut so a 64-rank step draws in pixels × tracks.
//!
//! A step's start is the earliest of its ranks' starts in the run's synchronised clock, its end
//! the latest end: the ranks keep their skew. A run without steps is aligned on its start.

use serde::{Deserialize, Serialize};
use timeline::{Lod, Marker, MarkerRow, Timeline, Track};

/// Page → worker: the stacked timeline of this step (`None`: the run's first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackedAsk {
    pub step: Option<u64>,
}

/// One step of a run over all its ranks, in the run's synchronised clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepSpan {
    pub step: u64,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// Worker → page, beside a timeline (binary) whose times are relative to `origin_ns`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StackedInfo {
    /// Where the steps came from (`nvtx`, `collectives`); `None`: the run shows no steps and is
    /// aligned on its start.
    pub source: Option<String>,
    /// Every step of the run, in order (what the step selector lists).
    pub steps: Vec<u64>,
    /// The step shown (`None`: the whole run, from its start).
    pub step: Option<u64>,
    /// Its start in the run's synchronised clock: time 0 of the timeline beside.
    pub origin_ns: i64,
    /// Its length: its end (where the next step starts) is at this time.
    pub length_ns: i64,
    /// Kernels in the cut sent.
    pub spans: u64,
}

/// Each step's span over the ranks, from per-rank windows `(rank, step, start, end)` already
/// in the synchronised clock, in step order.
pub fn step_spans(windows: &[(u32, u64, i64, i64)]) -> Vec<StepSpan> {
    let mut by_step: std::collections::BTreeMap<u64, (i64, i64)> = Default::default();
    for &(_, step, a, b) in windows {
        let (a, b) = (a.min(b), a.max(b));
        let e = by_step.entry(step).or_insert((a, b));
        e.0 = e.0.min(a);
        e.1 = e.1.max(b);
    }
    by_step
        .into_iter()
        .map(|(step, (start_ns, end_ns))| StepSpan {
            step,
            start_ns,
            end_ns,
        })
        .collect()
}

/// Room shown on each side of the step, as a fraction of its length: the neighbouring steps'
/// edges are in view, so the boundaries read as boundaries.
pub const MARGIN: f64 = 0.05;

/// `t` cut to step `asked` of `steps` (the first step when it is `None` or not among them), its
/// times made relative to the step's start; without steps, the whole run from its start.
pub fn stacked(
    t: &Timeline,
    steps: &[StepSpan],
    source: Option<&str>,
    asked: Option<u64>,
) -> (StackedInfo, Timeline) {
    let chosen = asked
        .and_then(|k| steps.iter().find(|s| s.step == k))
        .or_else(|| steps.first())
        .filter(|_| source.is_some());
    let (origin, length, step) = match chosen {
        Some(s) => (s.start_ns, (s.end_ns - s.start_ns).max(1), Some(s.step)),
        None => (t.start_ns, (t.end_ns - t.start_ns).max(1), None),
    };
    let margin = (length as f64 * MARGIN) as i64;
    let mut cut_t = cut(t, origin - margin, origin + length + margin, origin);
    // Its range is the step itself (the margins' spans lie outside it): the ruler counts from
    // the step's start.
    cut_t.start_ns = 0;
    cut_t.end_ns = length;
    let info = StackedInfo {
        source: chosen.and(source).map(str::to_string),
        steps: if chosen.is_some() {
            steps.iter().map(|s| s.step).collect()
        } else {
            Vec::new()
        },
        step,
        origin_ns: origin,
        length_ns: length,
        spans: cut_t.tracks.iter().map(|k| k.spans.len() as u64).sum(),
    };
    (info, cut_t)
}

/// The spans and marker ranges of `t` that overlap `[from, to)`, shifted by `-origin`, each
/// track's summaries rebuilt for them.
pub fn cut(t: &Timeline, from: i64, to: i64, origin: i64) -> Timeline {
    let tracks = t
        .tracks
        .iter()
        .map(|track| {
            // Spans are sorted by start: the ones starting from `to` on are out; before `from`,
            // only those that reach into it are in.
            let last = track.spans.partition_point(|s| s.start_ns < to);
            let spans: Vec<_> = track.spans[..last]
                .iter()
                .filter(|s| s.end_ns > from)
                .map(|s| timeline::Span {
                    start_ns: s.start_ns - origin,
                    end_ns: s.end_ns - origin,
                    ..*s
                })
                .collect();
            Track {
                label: track.label.clone(),
                lod: Lod::build(&spans),
                par_lod: Lod::build_by(&spans, |s| s.par),
                spans,
                source: None,
            }
        })
        .collect();
    let markers = t
        .markers
        .iter()
        .map(|row| MarkerRow {
            label: row.label.clone(),
            ranges: row
                .ranges
                .iter()
                .filter(|m| m.start_ns < to && m.end_ns > from)
                .map(|m| Marker {
                    start_ns: m.start_ns - origin,
                    end_ns: m.end_ns - origin,
                    ..m.clone()
                })
                .collect(),
        })
        .collect();
    Timeline {
        tracks,
        start_ns: from - origin,
        end_ns: to - origin,
        markers,
    }
}

/// Where base and new start and end on the shared axis (relative ns): the view that shows the
/// longer of the two steps with its margins.
pub fn shared_window(a: &StackedInfo, b: &StackedInfo) -> (f64, f64) {
    let longest = a.length_ns.max(b.length_ns).max(1) as f64;
    (-longest * MARGIN, longest * (1.0 + MARGIN))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::timeline_codec::{decode_timeline, encode_timeline};
    use model::OpType;
    use timeline::Span;

    fn track(label: &str, spans: &[(i64, i64)]) -> Track {
        let spans: Vec<Span> = spans
            .iter()
            .map(|&(a, b)| Span::new(a, b, Some(OpType::AllReduce)))
            .collect();
        Track {
            label: label.into(),
            lod: Lod::build(&spans),
            par_lod: Lod::build_by(&spans, |s| s.par),
            spans,
            source: None,
        }
    }

    /// Two ranks, three steps of 1000 ns from 10 000, rank 1 a little late each step.
    fn run() -> (Timeline, Vec<StepSpan>) {
        let t = Timeline {
            tracks: vec![
                track(
                    "rank 0",
                    &[(10_100, 10_200), (11_100, 11_300), (12_100, 12_900)],
                ),
                track(
                    "rank 1",
                    &[(10_150, 10_250), (10_990, 11_350), (12_150, 12_950)],
                ),
            ],
            start_ns: 10_000,
            end_ns: 13_000,
            markers: vec![MarkerRow {
                label: "iterations".into(),
                ranges: (0..3)
                    .map(|k| Marker {
                        start_ns: 10_000 + k * 1000,
                        end_ns: 11_000 + k * 1000,
                        kind: 0,
                        text: format!("iteration {k}"),
                    })
                    .collect(),
            }],
        };
        let windows: Vec<(u32, u64, i64, i64)> = (0..3u64)
            .flat_map(|k| {
                let a = 10_000 + k as i64 * 1000;
                [(0, k, a, a + 1000), (1, k, a + 20, a + 1020)]
            })
            .collect();
        (t, step_spans(&windows))
    }

    #[test]
    fn a_step_is_its_ranks_earliest_start_to_latest_end() {
        let (_, steps) = run();
        assert_eq!(steps.len(), 3);
        assert_eq!(
            steps[1],
            StepSpan {
                step: 1,
                start_ns: 11_000,
                end_ns: 12_020
            }
        );
    }

    #[test]
    fn the_cut_starts_the_step_at_zero_and_keeps_what_reaches_in() {
        let (t, steps) = run();
        let (info, cut) = stacked(&t, &steps, Some("nvtx"), Some(1));
        assert_eq!(info.step, Some(1));
        assert_eq!((info.origin_ns, info.length_ns), (11_000, 1020));
        assert_eq!(info.steps, vec![0, 1, 2]);
        // The range is the step; 5 % of 1020 ns = 51 ns each side are cut with it.
        assert_eq!((cut.start_ns, cut.end_ns), (0, 1020));
        let starts = |k: usize| {
            cut.tracks[k]
                .spans
                .iter()
                .map(|s| s.start_ns)
                .collect::<Vec<_>>()
        };
        assert_eq!(starts(0), vec![100]);
        // Rank 1's kernel starting 10 ns before the step reaches into it: kept, at -10.
        assert_eq!(starts(1), vec![-10]);
        assert_eq!(info.spans, 2);
        assert!(!cut.tracks[0].lod.levels.is_empty());
        // The iteration markers overlapping the window, shifted too.
        let m: Vec<i64> = cut.markers[0].ranges.iter().map(|m| m.start_ns).collect();
        assert_eq!(m, vec![-1000, 0, 1000]);
        // It travels in the timeline's binary form unchanged.
        assert_eq!(decode_timeline(&encode_timeline(&cut)).unwrap(), cut);
        // A step the run does not have: its first.
        assert_eq!(stacked(&t, &steps, Some("nvtx"), Some(9)).0.step, Some(0));
    }

    #[test]
    fn without_steps_the_run_is_aligned_on_its_start() {
        let (t, _) = run();
        let (info, cut) = stacked(&t, &[], None, Some(1));
        assert_eq!((info.step, info.source.as_deref()), (None, None));
        assert!(info.steps.is_empty());
        assert_eq!((info.origin_ns, info.length_ns), (10_000, 3000));
        assert_eq!(cut.tracks[0].spans[0].start_ns, 100);
        assert_eq!(info.spans, 6);
        let other = StackedInfo {
            length_ns: 4000,
            ..info.clone()
        };
        assert_eq!(shared_window(&info, &other), (-200.0, 4200.0));
    }
}
