//! The step anatomy knob: data ranges, delays where they were asked, the stage file.

use synth::step_stages::{stage_file, DelayStage, StageKnob, StepDelay};
use synth::{generate, Layout, Model, RunConfig};

fn config(knob: StageKnob, seed: u64) -> RunConfig {
    let model = Model {
        layers: 4,
        global_batch: 16,
        iterations: 4,
        ..Model::thesis()
    };
    let mut c = RunConfig::new(Layout::parse("tp=2,dp=2").unwrap(), model);
    c.seed = seed;
    c.stages = knob;
    c
}

/// (step, rank, stage, ms) rows of a stage file.
fn rows(csv: &str) -> Vec<(u64, u32, String, f64)> {
    csv.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].to_string(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn off_by_default_and_unchanged() {
    let run = generate(&config(StageKnob::default(), 3));
    assert!(run
        .reports
        .iter()
        .all(|r| r.nvtx.iter().all(|n| n.text != "data")));
    assert!(run.truth.step_delays.is_empty());
    assert!(!String::from_utf8(run.truth_json())
        .unwrap()
        .contains("step_delays"));
}

#[test]
fn data_ranges_and_the_stage_file_close_each_iteration() {
    let knob = StageKnob {
        data_ranges: true,
        stage_file: true,
        ..StageKnob::default()
    };
    let run = generate(&config(knob, 5));
    let csv = stage_file(&run);
    let rows = rows(&csv);
    // 4 ranks × 4 iterations, each: data, then forward/backward per microbatch (2), optimizer.
    for step in 0..4u64 {
        for rank in 0..4u32 {
            let stages: Vec<&str> = rows
                .iter()
                .filter(|r| r.0 == step && r.1 == rank)
                .map(|r| r.2.as_str())
                .collect();
            assert_eq!(
                stages,
                [
                    "data",
                    "forward",
                    "backward",
                    "forward",
                    "backward",
                    "optimizer"
                ],
                "step {step} rank {rank}"
            );
        }
    }
    // The stages tile the iteration: their sum is the iteration range, to the µs.
    for rep in &run.reports {
        for it in rep.nvtx.iter().filter(|n| n.text.starts_with("iteration ")) {
            let inside: i64 = rep
                .nvtx
                .iter()
                .filter(|n| n.pid == it.pid && !n.text.starts_with("iteration"))
                .filter(|n| n.start_ns >= it.start_ns && n.end_ns <= it.end_ns)
                .map(|n| n.end_ns - n.start_ns)
                .sum();
            assert!(
                (it.end_ns - it.start_ns - inside).abs() < 2_000,
                "{}",
                it.text
            );
        }
    }
    // The data stage is the iteration's first compute: 150 µs ± 2 %.
    for r in rows.iter().filter(|r| r.2 == "data") {
        assert!((0.145..0.16).contains(&r.3), "{r:?}");
    }
}

#[test]
fn a_delay_lands_in_its_stage_on_its_rank() {
    for (stage, rank, step) in [
        (DelayStage::Data, 3, 1),
        (DelayStage::Forward, 0, 2),
        (DelayStage::Backward, 2, 0),
    ] {
        let delay = StepDelay {
            rank,
            step,
            stage,
            ms: 20.0,
        };
        let knob = StageKnob {
            delays: vec![delay],
            ..StageKnob::default()
        };
        let base = rows(&stage_file(&generate(&config(
            StageKnob {
                data_ranges: true,
                ..StageKnob::default()
            },
            9,
        ))));
        let run = generate(&config(knob, 9));
        assert_eq!(run.truth.step_delays, [delay]);
        let slow = rows(&stage_file(&run));
        let first = |rows: &[(u64, u32, String, f64)], r: u32| {
            rows.iter()
                .find(|x| x.0 == u64::from(step) && x.1 == r && x.2 == stage.name())
                .unwrap()
                .3
        };
        let grew = first(&slow, rank) - first(&base, rank);
        assert!((19.5..20.6).contains(&grew), "{stage:?}: grew {grew}");
    }
}
