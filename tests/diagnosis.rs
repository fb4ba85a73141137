//! `ncclscope analyze --json` carries the diagnosis exactly as CONTRACT.md's Additions describe
//! it: on a generated hang (logs and exports together) and on a real excerpt (a log alone).

use serde_json::Value;
use std::path::Path;
use std::process::ExitCode;
use synth::hang::{Hang, HangKind};
use synth::{Layout, Model, RunConfig};
use testkit::fixtures::present as real_fixtures;
use testkit::scratch_dir;

fn analyze(paths: &[&Path], name: &str) -> Value {
    let out = scratch_dir(name).join("summary.json");
    let mut args = vec![
        "ncclscope".into(),
        "analyze".into(),
        "--json".into(),
        out.clone().into_os_string(),
    ];
    args.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
    assert_eq!(ncclscope_cli::run(args), ExitCode::SUCCESS);
    serde_json::from_str(&std::fs::read_to_string(&out).expect("summary written")).expect("JSON")
}

const KINDS: [&str; 6] = [
    "mismatch", "behind", "missing", "error", "timeout", "config",
];
const SEVERITIES: [&str; 3] = ["critical", "warning", "info"];

/// Every entry has the contract's fields with their shapes; the list is most severe first.
fn check_shape(diagnosis: &Value) {
    let list = diagnosis.as_array().expect("diagnosis is a list");
    let mut last = 0;
    for f in list {
        assert!(KINDS.contains(&f["kind"].as_str().unwrap()), "{f}");
        let sev = f["severity"].as_str().unwrap();
        let at = SEVERITIES
            .iter()
            .position(|s| *s == sev)
            .expect("a severity");
        assert!(at >= last, "most severe first: {diagnosis}");
        last = at;
        assert!(
            f["communicator"].is_string() || f["communicator"].is_null(),
            "{f}"
        );
        match &f["op_count"] {
            Value::Null => {}
            Value::String(s) => assert!(u64::from_str_radix(s, 16).is_ok(), "hex: {f}"),
            other => panic!("op_count {other}"),
        }
        assert!(
            f["ranks"].as_array().unwrap().iter().all(Value::is_u64),
            "{f}"
        );
        for p in f["processes"].as_array().unwrap() {
            assert!(p["host"].is_string() && p["pid"].is_u64(), "{f}");
        }
        let m = f["message"].as_str().unwrap();
        assert!(
            !m.is_empty() && m.ends_with('.') && !m.contains('\n'),
            "one sentence: {m}"
        );
        for e in f["evidence"].as_array().unwrap() {
            assert!(
                e["path"].is_string() && e["line"].as_u64().is_some_and(|l| l >= 1),
                "{f}"
            );
        }
    }
}

/// Four ranks (TP 2 × DP 2), one short iteration: enough collectives for a hang to stop in.
fn one_step_tp2_dp2() -> RunConfig {
    RunConfig::new(
        Layout {
            tp: 2,
            dp: 2,
            ..Layout::default()
        },
        Model {
            layers: 2,
            global_batch: 8,
            micro_batch: 1,
            iterations: 1,
            ..Model::thesis()
        },
    )
}

#[test]
fn a_generated_hang_is_diagnosed_in_the_summary() {
    let mut cfg = one_step_tp2_dp2();
    cfg.hang = Some(Hang {
        rank: 3,
        call: 12,
        kind: HangKind::Stop,
        watchdog: true,
        errors: false,
    });
    let expected = synth::hang::expected(&cfg).expect("planted");
    let dir = scratch_dir("diagnosis_generated");
    synth::write_run(&synth::generate(&cfg), &dir).expect("written");
    let summary = analyze(&[&dir], "diagnosis_generated_summary");
    check_shape(&summary["diagnosis"]);
    let first = &summary["diagnosis"][0];
    assert_eq!(first["kind"], "behind", "{}", summary["diagnosis"]);
    assert_eq!(first["severity"], "critical");
    assert_eq!(first["ranks"], serde_json::json!([3]));
    assert_eq!(first["op_count"], format!("{:x}", expected.op_count - 1));
    // The communicator is one of the summary's, with the planted members.
    let id = first["communicator"].as_str().unwrap();
    let comm = summary["communicators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{id} among {}", summary["communicators"]));
    assert_eq!(comm["global_ranks"], serde_json::json!(expected.comm_ranks));
    // Its evidence opens rank 3's log at its last operation.
    let ev = &first["evidence"][0];
    let text = std::fs::read_to_string(ev["path"].as_str().unwrap()).unwrap();
    let line = text
        .lines()
        .nth(ev["line"].as_u64().unwrap() as usize - 1)
        .unwrap();
    assert!(
        line.contains(&format!("opCount {:x} ", expected.op_count - 1)),
        "{line}"
    );
    // Where every member stopped, and no error to order.
    assert!(summary["diagnosis_stopped"]
        .as_array()
        .is_some_and(|s| !s.is_empty()));
    assert!(summary["diagnosis_first_error"].is_null());
}

/// The first error across ranks, as the summary marks it: (its ranks, the time base that
/// decided, the summary's `diagnosis_first_error`).
fn first_error(summary: &Value) -> (Value, Value, Value) {
    let list = summary["diagnosis"].as_array().expect("a list");
    let first: Vec<&Value> = list.iter().filter(|f| f["first"] == true).collect();
    assert_eq!(first.len(), 1, "one first error: {}", summary["diagnosis"]);
    let how = summary["diagnosis_first_error"].clone();
    assert_eq!(
        list.iter().position(|f| f["first"] == true),
        how["finding"].as_u64().map(|i| i as usize),
        "{how}"
    );
    (
        first[0]["ranks"].clone(),
        first[0]["time_base"].clone(),
        how,
    )
}

#[test]
fn the_first_error_is_told_in_synchronised_time_where_clocks_are_known() {
    for seed in [1, 7] {
        let mut cfg = one_step_tp2_dp2();
        cfg.seed = seed;
        cfg.timestamps = true;
        cfg.nodes = 2;
        cfg.gpus_per_node = 2;
        // Rank 0 stops; the others block and then each prints a network error, 5 s apart in
        // rank order: the lowest blocked rank's comes first.
        cfg.hang = Some(Hang {
            rank: 0,
            call: 12,
            kind: HangKind::Stop,
            watchdog: false,
            errors: true,
        });
        // Node 1's clock (ranks 2 and 3) is a minute behind: by the stamps its errors come
        // first.
        cfg.realism.log_clock_skew_ms = -60_000;
        let expected = synth::hang::expected(&cfg).expect("planted");
        let truly_first = expected.first_error.expect("errors planted");
        let by_stamps = *expected
            .blocked
            .iter()
            .min_by_key(|&&r| {
                let nth = expected.blocked.iter().position(|&b| b == r).unwrap() as i64;
                nth * synth::hang::ERROR_GAP_NS - i64::from(r / 2) * 60_000_000_000
            })
            .unwrap();
        assert_ne!(
            truly_first, by_stamps,
            "seed {seed}: the stamps must disagree ({:?})",
            expected.blocked
        );
        let dir = scratch_dir(&format!("diagnosis_first_error_{seed}"));
        synth::write_run(&synth::generate(&cfg), &dir).expect("written");
        // Logs and exports: the alignment knows every rank's clock.
        let summary = analyze(&[&dir], &format!("diagnosis_first_error_{seed}_all"));
        check_shape(&summary["diagnosis"]);
        let (ranks, base, how) = first_error(&summary);
        assert_eq!(
            ranks,
            serde_json::json!([truly_first]),
            "seed {seed}: {how}"
        );
        assert_eq!(base, "synchronised", "{how}");
        assert_eq!(how["time_base"], "synchronised");
        // Logs alone: each host's own stamps, which put node 1's error first.
        let logs: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        let logs: Vec<&Path> = logs.iter().map(|p| p.as_path()).collect();
        let summary = analyze(&logs, &format!("diagnosis_first_error_{seed}_logs"));
        let (ranks, base, how) = first_error(&summary);
        assert_eq!(ranks, serde_json::json!([by_stamps]), "seed {seed}: {how}");
        assert_eq!(base, "log stamps", "{how}");
    }
}

#[test]
fn a_real_excerpt_alone_is_diagnosed() {
    let Some(root) = real_fixtures() else {
        return;
    };
    let dir = root.join("nccl");
    let path = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("issue147_"))
        .expect("the #147 excerpt");
    let summary = analyze(&[&path], "diagnosis_real");
    check_shape(&summary["diagnosis"]);
    let first = &summary["diagnosis"][0];
    assert_eq!(first["kind"], "mismatch");
    assert_eq!(first["ranks"], serde_json::json!([0]));
    assert_eq!(
        first["processes"],
        serde_json::json!([{"host": "learnfair062", "pid": 32615}])
    );
    assert_eq!(
        first["evidence"][0]["path"],
        path.to_string_lossy().as_ref()
    );
}

/// `synth --hang RANK:CALL` plants the hang the generator's knob plants: `analyze` names the
/// rank that stopped; `:mismatch` puts it among a mismatch's odd ones out; a bad spec is refused.
#[test]
fn synth_hang_flag_plants_a_diagnosable_hang() {
    for (spec, kind) in [("3:12", "behind"), ("3:12:mismatch", "mismatch")] {
        let dir = scratch_dir(&format!("diagnosis_flag_{}", kind));
        let args: Vec<std::ffi::OsString> = [
            "ncclscope",
            "synth",
            "--layout",
            "tp=2,dp=2",
            "--hang",
            spec,
            "--out",
        ]
        .iter()
        .map(std::ffi::OsString::from)
        .chain([dir.clone().into_os_string()])
        .collect();
        assert_eq!(ncclscope_cli::run(args), ExitCode::SUCCESS);
        let summary = analyze(&[&dir], &format!("diagnosis_flag_{kind}_summary"));
        let first = &summary["diagnosis"][0];
        assert_eq!(first["kind"], kind, "{}", summary["diagnosis"]);
        // A mismatch in a communicator of two cannot tell which side is wrong: both are named.
        let ranks = first["ranks"].as_array().expect("ranks");
        assert!(ranks.contains(&serde_json::json!(3)), "{first}");
        if kind == "behind" {
            assert_eq!(first["ranks"], serde_json::json!([3]), "{first}");
        }
    }
    let dir = scratch_dir("diagnosis_flag_bad");
    let args: Vec<std::ffi::OsString> = [
        "ncclscope",
        "synth",
        "--layout",
        "tp=2",
        "--hang",
        "3",
        "--out",
    ]
    .iter()
    .map(std::ffi::OsString::from)
    .chain([dir.into_os_string()])
    .collect();
    assert_ne!(ncclscope_cli::run(args), ExitCode::SUCCESS);
}
