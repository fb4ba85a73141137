//! StageFrontier on the paper's fixture, its identities on random matrices, and the labels where
//! the data cannot decide.

use analyses::steps::{frontier, MatrixBuilder, Settings, StageMatrix};

/// One rank's stages at one step: `(step, rank, [(stage, ms)])`.
type Row<'a> = (u64, u32, &'a [(&'a str, f64)]);

/// A matrix from rows.
fn matrix(rows: &[Row]) -> StageMatrix {
    let mut b = MatrixBuilder::new();
    for (step, rank, stages) in rows {
        for (name, ms) in stages.iter() {
            let id = b.stage(name);
            b.push(*step, *rank, id, *ms);
        }
    }
    b.finish()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn the_papers_fixture() {
    let m = matrix(&[
        (
            0,
            0,
            &[("data", 100.0), ("forward", 50.0), ("backward", 20.0)],
        ),
        (
            0,
            1,
            &[("data", 10.0), ("forward", 50.0), ("backward", 110.0)],
        ),
    ]);
    let f = frontier(&m, &Settings::default());
    let s = &f.per_step[0];
    assert_eq!(s.frontier_ms, [100.0, 150.0, 170.0]);
    assert_eq!(s.advance_ms, [100.0, 50.0, 20.0]);
    assert_eq!(s.ranks, 2);
    // 170 = 170 at the last boundary: both ranks are at the frontier, and both are listed.
    assert_eq!(s.leaders, vec![vec![0], vec![0], vec![0, 1]]);
    assert_eq!(s.lead_ms, [90.0, 90.0, 0.0]);
    let w = &f.window;
    assert_eq!(w.steps, 1);
    assert_eq!(w.frontier_ms, 170.0);
    assert_eq!(w.sum_of_max_ms, 260.0);
    assert_eq!(w.sum_of_mean_ms, 170.0);
    assert!(close(w.share.get("data").unwrap(), 100.0 / 170.0));
    assert!(close(w.share.get("forward").unwrap(), 50.0 / 170.0));
    assert!(close(w.share.get("backward").unwrap(), 20.0 / 170.0));
    assert_eq!(w.top1.as_deref(), Some("data"));
    assert_eq!(w.top2, ["data", "forward"]);
    assert_eq!(
        w.candidates,
        ["data", "forward"],
        "0.588 + 0.294 reach θ = 0.8"
    );
    assert_eq!(w.ambiguous, None);
    assert_eq!(w.top1_ranks, [0]);
    // The per-stage maximum would blame backward (110 > 100), the mean data.
    assert_eq!(w.max_top1.as_deref(), Some("backward"));
    // Slack: rank 1 is 90 behind after data and after forward, level at the end.
    assert_eq!(w.slack_ms[1], [90.0, 90.0, 0.0]);
    assert_eq!(w.slack_ms[0], [0.0, 0.0, 0.0]);
    // The contract's JSON shape.
    let json = serde_json::to_value(&f.window).unwrap();
    for key in [
        "steps",
        "frontier_ms",
        "sum_of_max_ms",
        "sum_of_mean_ms",
        "share",
        "theta",
        "top1",
        "top2",
        "ambiguous",
    ] {
        assert!(json.get(key).is_some(), "window.{key}");
    }
    assert!(json["ambiguous"].is_null());
    assert_eq!(json["share"]["data"], json!(100.0 / 170.0));
}

use serde_json::json;

/// A small deterministic generator (SplitMix64), so the identities are checked on many
/// matrices without a random crate.
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn ms(&mut self) -> f64 {
        // Some zeros, mostly spread over four decades.
        match self.next() % 10 {
            0 => 0.0,
            _ => (self.next() % 100_000) as f64 / 100.0,
        }
    }
}

#[test]
fn telescoping_slack_identity_and_bounds_on_random_matrices() {
    let mut rng = Mix(42);
    for case in 0..300 {
        let ranks = 1 + (rng.next() % 9) as u32;
        let stages = 1 + (rng.next() % 7) as usize;
        let names: Vec<String> = (0..stages).map(|s| format!("s{s}")).collect();
        let mut b = MatrixBuilder::new();
        let ids: Vec<u32> = names.iter().map(|n| b.stage(n)).collect();
        let mut d = vec![vec![0.0; stages]; ranks as usize];
        for (r, row) in d.iter_mut().enumerate() {
            for (s, cell) in row.iter_mut().enumerate() {
                *cell = rng.ms();
                b.push(0, r as u32, ids[s], *cell);
            }
        }
        let m = b.finish();
        let f = frontier(&m, &Settings::default());
        let step = &f.per_step[0];
        let w = &f.window;
        let totals: Vec<f64> = d.iter().map(|row| row.iter().sum()).collect();
        let makespan = totals.iter().cloned().fold(0.0, f64::max);
        // Σ advances = F_S = max_r T_r.
        let sum: f64 = step.advance_ms.iter().sum();
        assert!(close(sum, makespan), "case {case}: {sum} vs {makespan}");
        assert!(close(*step.frontier_ms.last().unwrap(), makespan));
        assert!(close(w.frontier_ms, makespan));
        // Shares sum to 1 when anything ran.
        let shares: f64 = w.share.0.iter().map(|(_, v)| v).sum();
        assert!(
            makespan == 0.0 || close(shares, 1.0),
            "case {case}: {shares}"
        );
        // a[s] = max_r (d[r][s] − σ[r][s−1]): an early rank's wait is not charged twice.
        for (s, advance) in step.advance_ms.iter().enumerate() {
            let via_slack = (0..ranks as usize)
                .map(|r| d[r][s] - if s == 0 { 0.0 } else { w.slack_ms[r][s - 1] })
                .fold(f64::NEG_INFINITY, f64::max);
            assert!(close(via_slack, *advance), "case {case} stage {s}");
        }
        // F_S ≤ M ≤ min(R, S)·F_S and F_S/R ≤ A ≤ F_S.
        let (fs, mm, aa) = (w.frontier_ms, w.sum_of_max_ms, w.sum_of_mean_ms);
        let k = ranks.min(stages as u32) as f64;
        let eps = 1e-9 * (1.0 + fs);
        assert!(fs <= mm + eps && mm <= k * fs + eps, "case {case}: M");
        assert!(
            fs / ranks as f64 <= aa + eps && aa <= fs + eps,
            "case {case}: A"
        );
        // Every leader is at the frontier.
        for (s, leaders) in step.leaders.iter().enumerate() {
            assert!(!leaders.is_empty());
            for &r in leaders {
                let p: f64 = d[r as usize][..=s].iter().sum();
                assert!(step.frontier_ms[s] - p <= 1e-6 + 0.002 * makespan);
            }
        }
    }
}

#[test]
fn a_data_stall_displaced_into_backward_is_charged_once_to_data() {
    // The paper's motivating case: rank 2's data stage stalls; the others reach the backward
    // synchronisation early and wait there. Eight steps, the stall in steps 2 and 5.
    type Owned<'a> = (u64, u32, Vec<(&'a str, f64)>);
    let mut rows: Vec<Owned> = Vec::new();
    for step in 0..8u64 {
        let stall = if step == 2 || step == 5 { 90.0 } else { 0.0 };
        for rank in 0..4u32 {
            let jitter = (rank as f64) * 0.01;
            let v = if rank == 2 {
                vec![
                    ("data", 10.0 + stall),
                    ("forward", 40.0),
                    ("backward", 60.0 + jitter),
                ]
            } else {
                vec![
                    ("data", 10.0 + jitter),
                    ("forward", 40.0),
                    ("backward", 60.0 + stall),
                ]
            };
            rows.push((step, rank, v));
        }
    }
    let refs: Vec<Row> = rows
        .iter()
        .map(|(s, r, v)| (*s, *r, v.as_slice()))
        .collect();
    let f = frontier(&matrix(&refs), &Settings::default());
    let w = &f.window;
    // The exposed makespan: 8 × 110 plus the two stalls, charged once.
    assert!(
        close(w.frontier_ms, 8.0 * 110.03 + 180.0),
        "{}",
        w.frontier_ms
    );
    assert!(close(
        w.advance_ms.get("data").unwrap(),
        6.0 * 10.03 + 200.0
    ));
    // Backward's usual time is the larger share; the excess over each stage's usual advance is
    // all data's, held by rank 2 alone.
    assert_eq!(w.top1.as_deref(), Some("backward"));
    assert_eq!(w.excess_top1.as_deref(), Some("data"));
    assert!(close(
        w.excess_ms.get("data").unwrap(),
        2.0 * (100.0 - 10.03)
    ));
    assert!(w.excess_ms.get("backward").unwrap() < 0.1);
    assert_eq!(w.excess_top1_ranks, [2], "{:?}", w.credits);
    // Backward's boundaries: every rank arrives together, none alone.
    assert_eq!(w.top1_ranks, [0, 1, 2, 3]);
    // The per-stage maximum counts the stall twice (rank 2's data, the others' wait).
    assert!(w.sum_of_max_ms > w.frontier_ms + 170.0);
    let stalled = &f.per_step[2];
    assert_eq!(stalled.leaders[0], [2]);
    assert!(
        close(stalled.advance_ms[2], 60.03),
        "{:?}",
        stalled.advance_ms
    );
}

#[test]
fn one_rank_is_labelled() {
    let f = frontier(
        &matrix(&[(0, 5, &[("data", 1.0), ("compute", 9.0)])]),
        &Settings::default(),
    );
    assert_eq!(f.window.ambiguous.as_deref(), Some("one_rank"));
    assert_eq!(f.windows[0].ambiguous.as_deref(), Some("one_rank"));
    assert_eq!(f.window.top1.as_deref(), Some("compute"));
}

#[test]
fn a_missing_stage_closes_the_window_and_is_left_out() {
    let full: &[(&str, f64)] = &[("data", 1.0), ("forward", 2.0), ("backward", 3.0)];
    let short: &[(&str, f64)] = &[("data", 50.0), ("forward", 2.0)];
    let f = frontier(
        &matrix(&[
            (0, 0, full),
            (0, 1, full),
            (1, 0, full),
            (1, 1, short),
            (2, 0, full),
            (2, 1, full),
        ]),
        &Settings::default(),
    );
    assert_eq!(f.per_step[1].incomplete.as_deref(), Some("missing_stage"));
    assert_eq!(f.window.steps, 2);
    assert_eq!(f.window.frontier_ms, 12.0);
    assert_eq!(f.window.ambiguous.as_deref(), Some("missing_stage"));
    assert_eq!(f.window.ambiguity[0].steps, [1]);
    assert_eq!(f.window.top1.as_deref(), Some("backward"));
    // Windows: step 0 and step 2, split by the incomplete step.
    let spans: Vec<(Option<u64>, Option<u64>)> = f
        .windows
        .iter()
        .map(|w| (w.first_step, w.last_step))
        .collect();
    assert_eq!(spans, [(Some(0), Some(0)), (Some(2), Some(2))]);
    assert!(f.windows.iter().all(|w| w.ambiguous.is_none()));
}

#[test]
fn a_changed_world_and_different_orders_are_labelled() {
    let v: &[(&str, f64)] = &[("data", 1.0), ("forward", 2.0)];
    let rev: &[(&str, f64)] = &[("forward", 2.0), ("data", 1.0)];
    let f = frontier(
        &matrix(&[
            (0, 0, v),
            (0, 1, v),
            (0, 2, v),
            (1, 0, v),
            (1, 1, v),
            (2, 0, v),
            (2, 1, rev),
        ]),
        &Settings::default(),
    );
    let labels: Vec<&str> = f
        .window
        .ambiguity
        .iter()
        .map(|a| a.label.as_str())
        .collect();
    assert_eq!(labels, ["role_aware_needed", "world_size_changed"]);
    assert_eq!(
        f.per_step[2].incomplete.as_deref(),
        Some("role_aware_needed")
    );
    assert_eq!(f.windows.len(), 2, "one window per world");
    assert_eq!(f.windows[0].ranks, 3);
    assert_eq!(f.windows[1].ranks, 2);
}

#[test]
fn theta_sets_the_candidates_and_near_ties_are_co_critical() {
    let m = matrix(&[
        (0, 0, &[("a", 40.0), ("b", 38.0), ("c", 12.0), ("d", 10.0)]),
        (0, 1, &[("a", 40.0), ("b", 38.0), ("c", 12.0), ("d", 10.0)]),
    ]);
    let at = |theta: f64| {
        frontier(
            &m,
            &Settings {
                theta,
                ..Settings::default()
            },
        )
        .window
    };
    assert_eq!(at(0.7).candidates, ["a", "b"]);
    assert_eq!(at(0.85).candidates, ["a", "b", "c"]);
    assert_eq!(at(0.9).candidates, ["a", "b", "c"]);
    // Outside 0.70–0.90 θ is clamped.
    assert_eq!(at(0.99).theta, 0.9);
    assert_eq!(at(0.1).candidates, ["a", "b"]);
    assert_eq!(at(0.8).co_critical, ["a", "b"]);
}

#[test]
fn accumulation_is_expanded_and_shares_are_reported_per_stage() {
    let mb: &[(&str, f64)] = &[
        ("forward", 2.0),
        ("backward", 4.0),
        ("forward", 2.0),
        ("backward", 4.0),
    ];
    let slow: &[(&str, f64)] = &[
        ("forward", 2.0),
        ("backward", 4.0),
        ("forward", 9.0),
        ("backward", 4.0),
    ];
    let f = frontier(&matrix(&[(0, 0, mb), (0, 1, slow)]), &Settings::default());
    assert_eq!(f.per_step[0].frontier_ms, [2.0, 6.0, 15.0, 19.0]);
    assert_eq!(f.window.share.0.len(), 2);
    assert!(close(f.window.share.get("forward").unwrap(), 11.0 / 19.0));
    let per_stage = f.window.stage_share.as_ref().unwrap();
    assert!(close(per_stage.get("forward#1").unwrap(), 9.0 / 19.0));
    assert_eq!(f.window.top1_ranks, [1]);
}
