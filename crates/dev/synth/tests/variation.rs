//! The knobs of one known difference (`RunConfig::variation`, for the run comparison's tests):
//! off or neutral, a run is byte for byte the same; on, they change what they say and nothing
//! else.

use synth::variation::{ForcedAlgorithm, Variation};
use synth::{generate, Layout, Model, RunConfig};

/// TP2 × DP2 on 2-GPU nodes: tensor parallelism inside a node, data parallelism across.
fn config(variation: Variation) -> RunConfig {
    let model = Model {
        layers: 4,
        global_batch: 16,
        iterations: 2,
        ..Model::thesis()
    };
    let mut c = RunConfig::new(
        Layout {
            tp: 2,
            dp: 2,
            ..Layout::default()
        },
        model,
    );
    c.gpus_per_node = 2;
    c.nodes = 2;
    c.variation = variation;
    c
}

/// Median duration of the NCCL kernels whose name contains `part`.
fn median_kernel(run: &synth::Run, part: &str) -> f64 {
    let mut d: Vec<i64> = run
        .reports
        .iter()
        .flat_map(|r| &r.kernels)
        .filter(|k| k.short.contains("nccl") && k.short.contains(part))
        .map(|k| k.end_ns - k.start_ns)
        .collect();
    assert!(!d.is_empty(), "kernels named {part}");
    d.sort_unstable();
    d[d.len() / 2] as f64
}

#[test]
fn neutral_knobs_change_nothing() {
    let plain = generate(&config(Variation::default()));
    let neutral = generate(&config(Variation {
        op_bandwidth: Some(("AllReduce".into(), 1.0)),
        rank_link: Some((1, 1.0)),
        algorithm: None,
    }));
    assert_eq!(plain.files, neutral.files);
    for (a, b) in plain.reports.iter().zip(&neutral.reports) {
        let times = |r: &synth::nsysdb::NodeReport| -> Vec<(i64, i64)> {
            r.kernels.iter().map(|k| (k.start_ns, k.end_ns)).collect()
        };
        assert_eq!(times(a), times(b));
    }
}

#[test]
fn a_slower_operation_is_slower_and_the_others_are_not() {
    let plain = generate(&config(Variation::default()));
    let slow = generate(&config(Variation {
        op_bandwidth: Some(("AllReduce".into(), 0.5)),
        ..Variation::default()
    }));
    let ratio = |part: &str| median_kernel(&slow, part) / median_kernel(&plain, part);
    assert!(ratio("AllReduce") > 1.4, "{}", ratio("AllReduce"));
    let others = ratio("Broadcast");
    assert!((others - 1.0).abs() < 0.1, "{others}");
    // Its log lines are the same: only the clock saw the change.
    let lines = |r: &synth::Run| -> usize {
        r.files
            .iter()
            .map(|(_, b)| {
                String::from_utf8_lossy(b)
                    .matches("AllReduce: opCount")
                    .count()
            })
            .sum()
    };
    assert_eq!(lines(&plain), lines(&slow));
}

#[test]
fn a_forced_algorithm_shows_in_tuning_lines_and_kernel_names() {
    let run = generate(&config(Variation {
        algorithm: Some(ForcedAlgorithm {
            op: "AllReduce".into(),
            algo: "TREE".into(),
            time_factor: 1.0,
        }),
        ..Variation::default()
    }));
    let text: String = run
        .files
        .iter()
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    let tuning: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("AllReduce: ") && l.contains("-> Algo"))
        .collect();
    assert!(!tuning.is_empty());
    assert!(
        tuning.iter().all(|l| l.contains("Algo TREE")),
        "{:?}",
        tuning[0]
    );
    // Other collectives keep the generator's choice.
    assert!(text
        .lines()
        .any(|l| l.contains("Broadcast: ") && l.contains("Algo RING")));
    let ar_kernels: Vec<&str> = run
        .reports
        .iter()
        .flat_map(|r| &r.kernels)
        .map(|k| k.short.as_str())
        .filter(|n| n.contains("AllReduce"))
        .collect();
    assert!(
        ar_kernels.iter().all(|n| n.contains("TREE")),
        "{:?}",
        ar_kernels[0]
    );
    // Without the knob, tensor-parallel AllReduces inside a node run Ring.
    let plain = generate(&config(Variation::default()));
    assert!(plain
        .reports
        .iter()
        .flat_map(|r| &r.kernels)
        .any(|k| k.short.contains("AllReduce") && k.short.contains("RING")));
}
