//! `ncclscope analyze`'s `steps` (issue 32): generated runs with a known slow stage and rank,
//! stage files good and bad, pipeline layouts, and real exports without step ranges.

use serde_json::Value;
use std::path::Path;
use std::process::ExitCode;
use synth::step_stages::{DelayStage, StageKnob, StepDelay};
use synth::{Layout, Model, RunConfig};
use testkit::fixtures::present as real_fixtures;
use testkit::scratch_dir;

fn analyze(paths: &[&Path], extra: &[&str], name: &str) -> (ExitCode, Value) {
    let out = scratch_dir(name).join("summary.json");
    let mut args: Vec<std::ffi::OsString> = vec!["ncclscope".into(), "analyze".into()];
    args.extend(extra.iter().map(|a| (*a).into()));
    args.push("--json".into());
    args.push(out.clone().into_os_string());
    args.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
    let code = ncclscope_cli::run(args);
    let summary = std::fs::read_to_string(&out)
        .map(|t| serde_json::from_str(&t).expect("valid JSON"))
        .unwrap_or(Value::Null);
    (code, summary)
}

/// A small TP2 × DP2 run (two microbatches per step) with `knob`.
fn run_dir(name: &str, seed: u64, iterations: u32, knob: StageKnob) -> std::path::PathBuf {
    let model = Model {
        layers: 4,
        global_batch: 16,
        iterations,
        ..Model::thesis()
    };
    let mut cfg = RunConfig::new(Layout::parse("tp=2,dp=2").unwrap(), model);
    cfg.seed = seed;
    cfg.stages = knob;
    let dir = scratch_dir(name);
    synth::write_run(&synth::generate(&cfg), &dir).expect("write the run");
    dir
}

/// A small deterministic draw for the tests' choices.
fn pick(seed: u64, salt: u64, n: u64) -> u64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(salt.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z ^= z >> 31;
    z = z.wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 29)) % n
}

const STAGES: [DelayStage; 3] = [DelayStage::Data, DelayStage::Forward, DelayStage::Backward];

#[test]
fn a_persistent_straggler_is_named_by_stage_and_rank_on_many_seeds() {
    let mut named = 0;
    for seed in 1..=6u64 {
        for (s, &stage) in STAGES.iter().enumerate() {
            let rank = pick(seed, s as u64, 4) as u32;
            let ms = 12.0 + pick(seed, 10 + s as u64, 12) as f64;
            let delays = (0..3)
                .map(|step| StepDelay {
                    rank,
                    step,
                    stage,
                    ms,
                })
                .collect();
            let knob = StageKnob {
                delays,
                ..StageKnob::default()
            };
            let dir = run_dir(&format!("steps-persistent-{seed}-{s}"), seed, 3, knob);
            let (code, sum) = analyze(&[&dir], &[], &format!("steps-persistent-{seed}-{s}-out"));
            assert_eq!(code, ExitCode::SUCCESS);
            let steps = &sum["steps"];
            let w = &steps["window"];
            assert_eq!(steps["source"], "nvtx", "seed {seed}");
            assert_eq!(
                w["ambiguous"],
                Value::Null,
                "seed {seed} {stage:?}: {}",
                w["ambiguity"]
            );
            assert_eq!(
                w["top1"],
                stage.name(),
                "seed {seed} {stage:?}: share {}",
                w["share"]
            );
            assert_eq!(
                w["top1_rank"], rank,
                "seed {seed} {stage:?} {ms} ms: ranks {} ({})",
                w["top1_ranks"], w["rank_evidence"]
            );
            named += 1;
        }
    }
    assert_eq!(named, 18);
}

#[test]
fn a_rare_delay_is_the_stage_with_the_most_excess_on_many_seeds() {
    for seed in 11..=16u64 {
        for (s, &stage) in STAGES.iter().enumerate() {
            let rank = pick(seed, s as u64, 4) as u32;
            let step = pick(seed, 20 + s as u64, 4) as u32;
            let ms = 5.0 + pick(seed, 30 + s as u64, 10) as f64;
            let knob = StageKnob {
                delays: vec![StepDelay {
                    rank,
                    step,
                    stage,
                    ms,
                }],
                ..StageKnob::default()
            };
            let dir = run_dir(&format!("steps-rare-{seed}-{s}"), seed, 4, knob);
            let (_, sum) = analyze(&[&dir], &[], &format!("steps-rare-{seed}-{s}-out"));
            let steps = &sum["steps"];
            let w = &steps["window"];
            assert_eq!(
                w["excess_top1"],
                stage.name(),
                "seed {seed}: {}",
                w["excess_ms"]
            );
            assert_eq!(w["excess_top1_rank"], rank, "seed {seed} {stage:?}");
            // The delayed step's row: the stage's first run advanced by at least the delay, and
            // the rank is among its leaders.
            let names: Vec<&str> = steps["stage_names"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap())
                .collect();
            let at = names.iter().position(|n| *n == stage.name()).unwrap();
            let row = steps["per_step"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["step"] == step)
                .unwrap();
            assert!(
                row["advance_ms"][at].as_f64().unwrap() >= ms * 0.97,
                "{row}"
            );
            let leaders: Vec<u64> = row["leaders"][at]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_u64().unwrap())
                .collect();
            assert!(leaders.contains(&u64::from(rank)), "{leaders:?}");
        }
    }
}

#[test]
fn the_stage_file_and_the_nvtx_ranges_give_the_same_frontier() {
    let knob = StageKnob {
        delays: vec![StepDelay {
            rank: 2,
            step: 1,
            stage: DelayStage::Data,
            ms: 9.0,
        }],
        stage_file: true,
        ..StageKnob::default()
    };
    let dir = run_dir("steps-file-vs-nvtx", 4, 3, knob);
    let csv = dir.join("stages.csv");
    let (_, with_file) = analyze(&[&dir], &[], "steps-file-vs-nvtx-all");
    let (_, alone) = analyze(&[&csv], &[], "steps-file-alone");
    // Recognised by content, not name: out of the directory it goes.
    std::fs::rename(&csv, scratch_dir("steps-file-kept").join("stages.csv")).unwrap();
    let (_, nvtx) = analyze(&[&dir], &[], "steps-file-vs-nvtx-nvtx");
    assert_eq!(with_file["steps"]["source"], "stage-file");
    assert_eq!(alone["steps"]["source"], "stage-file");
    assert_eq!(nvtx["steps"]["source"], "nvtx");
    let kinds: Vec<&str> = alone["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["stage-file"]);
    assert_eq!(
        alone["inputs"][0]["rows"],
        4 * 3 * 6,
        "4 ranks × 3 steps × 6 stages"
    );
    assert_eq!(alone["inputs"][0]["lines"], 4 * 3 * 6 + 1);
    let f = |v: &Value| v["steps"]["window"]["frontier_ms"].as_f64().unwrap();
    assert!(
        (f(&alone) - f(&nvtx)).abs() < 1e-3 * 3.0,
        "{} vs {}",
        f(&alone),
        f(&nvtx)
    );
    assert_eq!(alone["steps"]["stage_names"], nvtx["steps"]["stage_names"]);
    assert_eq!(alone["steps"]["window"]["excess_top1_rank"], 2);
    // Alone, a stage file has no kernels: no breakdown; with the exports, the kernels' parts.
    assert_eq!(alone["steps"]["breakdown"], Value::Null);
    assert!(
        with_file["steps"]["breakdown"]["per_step"]
            .as_array()
            .unwrap()
            .len()
            == 3
    );
    // The contract's fields.
    for k in ["source", "stage_names", "per_step", "window"] {
        assert!(alone["steps"].get(k).is_some(), "steps.{k}");
    }
    for k in ["step", "ranks", "frontier_ms", "advance_ms", "leaders"] {
        assert!(
            alone["steps"]["per_step"][0].get(k).is_some(),
            "per_step.{k}"
        );
    }
}

#[test]
fn the_papers_fixture_through_the_command() {
    let dir = scratch_dir("steps-fixture");
    let path = dir.join("stages.csv");
    std::fs::write(
        &path,
        "step,rank,stage,duration_ms\n0,0,data,100\n0,0,forward,50\n0,0,backward,20\n\
         0,1,data,10\n0,1,forward,50\n0,1,backward,110\n",
    )
    .unwrap();
    let (code, sum) = analyze(&[&path], &[], "steps-fixture-out");
    assert_eq!(code, ExitCode::SUCCESS);
    let s = &sum["steps"];
    assert_eq!(s["source"], "stage-file");
    assert_eq!(
        s["stage_names"],
        serde_json::json!(["data", "forward", "backward"])
    );
    assert_eq!(
        s["per_step"][0]["frontier_ms"],
        serde_json::json!([100.0, 150.0, 170.0])
    );
    assert_eq!(
        s["per_step"][0]["advance_ms"],
        serde_json::json!([100.0, 50.0, 20.0])
    );
    assert_eq!(s["per_step"][0]["ranks"], 2);
    let w = &s["window"];
    assert_eq!(w["frontier_ms"], 170.0);
    assert_eq!(w["sum_of_max_ms"], 260.0);
    assert_eq!(w["sum_of_mean_ms"], 170.0);
    assert_eq!(w["top1"], "data");
    assert_eq!(w["top2"], serde_json::json!(["data", "forward"]));
    assert_eq!(w["theta"], 0.8);
    assert_eq!(w["ambiguous"], Value::Null);
    assert!((w["share"]["data"].as_f64().unwrap() - 0.588).abs() < 1e-3);
    // θ is settable, within 0.70–0.90.
    let (_, at9) = analyze(&[&path], &["--theta", "0.9"], "steps-fixture-theta");
    assert_eq!(at9["steps"]["window"]["theta"], 0.9);
    assert_eq!(
        at9["steps"]["window"]["candidates"],
        serde_json::json!(["data", "forward", "backward"])
    );
    let (code, _) = analyze(&[&path], &["--theta", "0.95"], "steps-fixture-theta-bad");
    assert_eq!(code, ExitCode::from(2));
}

#[test]
fn a_bad_stage_file_is_named_and_the_rest_loads() {
    let dir = scratch_dir("steps-bad-file");
    let path = dir.join("timers.jsonl");
    let mut text = String::new();
    for step in 0..4 {
        for rank in 0..2 {
            for (stage, ms) in [("data", 5.0), ("forward", 20.0), ("backward", 40.0)] {
                let v = match (step, rank, stage) {
                    (1, 1, "forward") => "\"n/a\"".to_string(),
                    (2, 0, "data") => "-3".to_string(),
                    _ => format!("{ms}"),
                };
                text.push_str(&format!(
                    "{{\"step\": {step}, \"rank\": {rank}, \"stage\": \"{stage}\", \"duration_ms\": {v}}}\n"
                ));
            }
        }
    }
    std::fs::write(&path, text).unwrap();
    let (code, sum) = analyze(&[&path], &[], "steps-bad-file-out");
    assert_eq!(code, ExitCode::SUCCESS);
    let name = path.display().to_string();
    let warned: Vec<(u64, &str)> = sum["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["path"] == name.as_str())
        .map(|w| (w["line"].as_u64().unwrap(), w["message"].as_str().unwrap()))
        .collect();
    // Line 11: step 1 rank 1 forward; line 13: step 2 rank 0 data.
    assert!(
        warned
            .iter()
            .any(|(l, m)| *l == 11 && m.contains("not a number")),
        "{warned:?}"
    );
    assert!(
        warned
            .iter()
            .any(|(l, m)| *l == 13 && m.contains("negative")),
        "{warned:?}"
    );
    let s = &sum["steps"];
    assert_eq!(s["window"]["steps"], 2, "steps 1 and 2 incomplete");
    assert_eq!(s["window"]["ambiguous"], "missing_stage");
    assert_eq!(s["per_step"][1]["incomplete"], "missing_stage");
    assert_eq!(s["per_step"][3]["incomplete"], Value::Null);
    assert_eq!(sum["inputs"][0]["kind"], "stage-file");
}

#[test]
fn pipeline_stages_run_other_orders_and_are_labelled_not_guessed() {
    let model = Model {
        layers: 4,
        global_batch: 16,
        iterations: 2,
        ..Model::thesis()
    };
    // TP issues calls in every forward and backward, so the generator's phase ranges follow
    // each microbatch.
    let cfg = RunConfig::new(Layout::parse("tp=2,pp=2").unwrap(), model);
    let dir = scratch_dir("steps-pp2");
    synth::write_run(&synth::generate(&cfg), &dir).unwrap();
    let (_, sum) = analyze(&[&dir], &[], "steps-pp2-out");
    let s = &sum["steps"];
    assert_eq!(s["source"], "nvtx");
    assert_eq!(
        s["window"]["ambiguous"], "role_aware_needed",
        "{}",
        s["window"]["ambiguity"]
    );
    let p = &s["pipeline"];
    assert_eq!(p["pp"], 2);
    assert_eq!(p["microbatches"], 4);
    assert_eq!(p["stages"].as_array().unwrap().len(), 2);
    let ratio = p["ratio"].as_f64().unwrap();
    assert!(
        (0.75..1.25).contains(&ratio),
        "1F1B predicted vs measured: {p}"
    );
    // The pipeline's waits are its bubble.
    assert!(s["breakdown"]["mean"]["bubble_ms"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_closed_forms_meet_the_generators_compute_model() {
    let dir = run_dir("steps-closed-form", 7, 3, StageKnob::default());
    let cfg = scratch_dir("steps-closed-form-cfg").join("model.toml");
    std::fs::write(
        &cfg,
        "[model]\nlayers = 4\nglobal_batch = 16\niterations = 3\n[parallel]\ntp = 2\ndp = 2\n",
    )
    .unwrap();
    // The generator computes at 60 TFLOP/s: peak 120 at μ = 0.5.
    let cfg_arg = cfg.display().to_string();
    let (_, sum) = analyze(
        &[&dir],
        &["--config", &cfg_arg, "--peak-tflops", "120"],
        "steps-closed-form-out",
    );
    let c = &sum["steps"]["breakdown"]["closed_form"];
    assert!(c.is_object(), "{}", sum["steps"]["breakdown"]);
    // The generator's layer FLOPs are 72·b·s·h²·(1 + s/6h) per layer (Megatron's count), the
    // closed form's 6·N·b·s with N ≈ 12·l·h²: the ratio is about 1 + s/6h = 1.33.
    let comp = c["ratio"]["comp_ms"].as_f64().unwrap();
    assert!((1.1..1.6).contains(&comp), "compute ratio {comp}: {c}");
    for term in ["tp_ms", "dp_ms"] {
        let r = c["ratio"][term].as_f64().unwrap();
        assert!(r.is_finite() && r > 0.0, "{term}: {c}");
    }
    assert!(c["inputs"]["c_tp_gbps"].as_f64().unwrap() > 0.0);
}

#[test]
fn real_exports_without_step_ranges_fall_back_to_the_collectives() {
    let Some(root) = real_fixtures() else { return };
    let path = root.join("nsys/GindaChen-nsys-ai_mfu_2gpu_before.sqlite");
    let (_, sum) = analyze(&[&path], &[], "steps-real-collectives");
    let s = &sum["steps"];
    assert_eq!(s["source"], "collectives");
    let note = s["notes"][0].as_str().unwrap();
    assert!(note.starts_with("no NVTX step ranges"), "{note}");
    // A pipeline's forward send and backward receive alternate: two kernels per step.
    let periods: Vec<u64> = s["collectives"]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["period"].as_u64().unwrap())
        .collect();
    assert_eq!(periods, [2, 2]);
    assert!(s["confidence"].as_f64().unwrap() > 0.8);
    assert_eq!(s["stage_names"], serde_json::json!(["step"]));
    // The compute kernels are read: the breakdown has compute time, the baselines kernels.
    assert!(s["breakdown"]["mean"]["compute_ms"].as_f64().unwrap() > 0.0);
    assert!(!s["baselines"]["kernels"].as_array().unwrap().is_empty());
}

#[test]
fn the_worst_outliers_carry_what_the_timeline_finds_them_by() {
    let knob = StageKnob {
        delays: vec![StepDelay {
            rank: 1,
            step: 2,
            stage: DelayStage::Backward,
            ms: 20.0,
        }],
        ..StageKnob::default()
    };
    let dir = run_dir("steps-outliers-located", 5, 4, knob);
    let mut session = load::Session::default();
    session.read_compute = true;
    for f in ncclscope_cli::inputs::expand(&[dir]).unwrap() {
        ncclscope_cli::inputs::load(&mut session, &f);
    }
    let analysis = pipeline::analyse(&session, &pipeline::UserSizes::default());
    let report =
        analyses::steps::analyse(&session, &analysis, &Default::default(), None).expect("steps");
    let worst = report.baselines.expect("baselines").worst;
    let nccl: Vec<_> = worst.iter().filter(|o| o.kind == "nccl").collect();
    assert!(!nccl.is_empty(), "no NCCL outlier");
    assert!(
        worst.iter().any(|o| o.kind == "compute"),
        "no compute outlier"
    );
    for o in &nccl {
        let rank = o.rank.expect("a ranked NCCL outlier");
        let comm = o.comm_id.as_deref().expect("its communicator");
        let op_count = o.op_count.expect("its opCount");
        // The timeline (synchronised clock) finds that collective's kernel at the outlier's
        // synchronised start, and in each rank's own clock at its start.
        let (_, _, at) = analyses::find_kernel(&analysis, rank, comm, op_count, &analysis.clocks)
            .expect("the kernel of the outlier's collective");
        assert_eq!(at, o.sync_start_ns, "{o:?}");
        let own = enrich::ClockSync::default();
        let (_, _, at) = analyses::find_kernel(&analysis, rank, comm, op_count, &own).unwrap();
        assert_eq!(at, o.start_ns, "{o:?}");
    }
    for o in &worst {
        let rank = o.rank.expect("a ranked outlier");
        assert_eq!(o.sync_start_ns, analysis.clocks.to_sync(rank, o.start_ns));
    }
}
