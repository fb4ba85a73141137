//! `ncclscope analyze` on PyTorch profiler traces (issue 33): the summary's contract fields,
//! the exports, and bad traces (cut short, without NCCL kernels) reported with file and line.

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use testkit::fixtures::present as real_fixtures;
use testkit::scratch_dir;

/// Runs `analyze` with `extra` options on `paths`; its exit status and summary.
fn analyze(paths: &[PathBuf], name: &str, extra: &[&str]) -> (ExitCode, Value) {
    let out = scratch_dir(name).join("summary.json");
    let mut args: Vec<std::ffi::OsString> = vec![
        "ncclscope".into(),
        "analyze".into(),
        "--json".into(),
        out.clone().into(),
    ];
    args.extend(extra.iter().map(|a| a.into()));
    args.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
    let code = ncclscope_cli::run(args);
    let summary = std::fs::read_to_string(&out)
        .map(|t| serde_json::from_str(&t).expect("valid JSON"))
        .unwrap_or(Value::Null);
    (code, summary)
}

fn traces(fixtures: &Path, filter: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures.join("kineto"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "gz") && p.to_string_lossy().contains(filter)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn dlrm_traces_give_the_contracts_summary_and_exports() {
    let Some(fixtures) = real_fixtures() else {
        return;
    };
    let paths = traces(&fixtures, "dlrm");
    let dir = scratch_dir("kineto_dlrm_exports");
    let (trace, csv) = (dir.join("trace.json"), dir.join("kernels.csv"));
    let (code, s) = analyze(
        &paths,
        "kineto_dlrm",
        &[
            "--chrome-trace",
            trace.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ],
    );
    assert_eq!(code, ExitCode::SUCCESS);
    let inputs = s["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 8);
    for i in inputs {
        assert_eq!(i["kind"], "kineto");
        assert_eq!(i["nccl_kernels"], 8);
        assert_eq!(i["world_size"], 8);
    }
    let ranks = s["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 8);
    for (n, r) in ranks.iter().enumerate() {
        assert_eq!(r["global_rank"], n);
        assert_eq!(r["kernels"], 8);
        assert_eq!(r["matched_ops"], 8);
        let by_type = r["kernels_by_type"].as_object().unwrap();
        let sum: u64 = by_type.values().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(sum, 8, "kernels_by_type sums to kernels");
        assert_eq!(by_type["SendRecv"], 5);
        assert_eq!(r["ops_by_type"]["AllReduce"], 3);
        assert_eq!(r["ops_by_type"]["AllToAll"], 5);
    }
    let comms = s["communicators"].as_array().unwrap();
    assert_eq!(comms.len(), 1);
    assert_eq!(comms[0]["size"], 8);
    assert_eq!(comms[0]["process_group"]["assumed_world"], true);
    assert_eq!(s["alignment"]["matched"], 64);
    assert_eq!(s["alignment"]["unmatched_kernels"], 0);
    assert_eq!(s["profiler_steps"].as_array().unwrap().len(), 8);
    // The Chrome trace: one event per kernel, every one matched; the CSV one row each.
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    let kernels: Vec<&Value> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["args"]["CUDA Kernel"].is_string())
        .collect();
    assert_eq!(kernels.len(), 64);
    assert!(kernels.iter().all(|k| k["args"]["Match"] == "matched"));
    let rows = std::fs::read_to_string(&csv).unwrap().lines().count();
    assert_eq!(rows, 65, "a header and one row per kernel");
}

/// Every real trace at once: each read as a trace, nothing refused, the process groups named.
#[test]
fn every_real_trace_is_read() {
    let Some(fixtures) = real_fixtures() else {
        return;
    };
    let paths = traces(&fixtures, "");
    let (code, s) = analyze(&paths, "kineto_all", &[]);
    assert_eq!(code, ExitCode::SUCCESS);
    for i in s["inputs"].as_array().unwrap() {
        assert_eq!(i["kind"], "kineto", "{}", i["path"]);
        assert!(i["nccl_kernels"].as_u64().unwrap() > 0);
    }
    let named: Vec<&Value> = s["communicators"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["process_group"]["description"].as_str().map(|_| c))
        .collect();
    assert!(
        named
            .iter()
            .any(|c| c["process_group"]["description"] == "default_pg"),
        "HTA's default_pg is named"
    );
}

/// A trace cut short loads every whole event and says where it ends; one with no NCCL kernel
/// says so; neither stops the others.
#[test]
fn bad_traces_say_what_and_where() {
    let Some(fixtures) = real_fixtures() else {
        return;
    };
    let whole = traces(&fixtures, "worker5")[0].clone();
    let mut text = Vec::new();
    flate2_read(&whole, &mut text);
    let dir = scratch_dir("kineto_bad_inputs");
    let cut = dir.join("cut.pt.trace.json");
    let at = text.len() * 3 / 4;
    std::fs::write(&cut, &text[..at]).unwrap();
    let empty = dir.join("no-nccl.json");
    std::fs::write(
        &empty,
        br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {}}]}"#,
    )
    .unwrap();
    let other = traces(&fixtures, "worker6")[0].clone();
    let (code, s) = analyze(&[cut.clone(), empty.clone(), other], "kineto_bad", &[]);
    assert_eq!(code, ExitCode::SUCCESS);
    let warnings = s["warnings"].as_array().unwrap();
    let line = 1 + text[..at].iter().filter(|&&c| c == b'\n').count() as u64;
    let cut_said = warnings.iter().find(|w| {
        w["path"] == cut.display().to_string()
            && w["message"].as_str().unwrap().contains("cut short")
    });
    let cut_said = cut_said.expect("the cut is reported");
    assert_eq!(cut_said["line"], line);
    assert!(cut_said["message"]
        .as_str()
        .unwrap()
        .contains(&format!("byte {at} ")));
    assert!(warnings
        .iter()
        .any(|w| w["path"] == empty.display().to_string()
            && w["message"].as_str().unwrap().contains("no NCCL kernels")));
    let inputs = s["inputs"].as_array().unwrap();
    assert_eq!(inputs[0]["kind"], "kineto");
    let kept = inputs[0]["nccl_kernels"].as_u64().unwrap();
    assert!(kept <= 8);
    assert_eq!(
        inputs[2]["nccl_kernels"], 8,
        "the whole trace beside them loads whole"
    );
}

fn flate2_read(path: &Path, out: &mut Vec<u8>) {
    let gz = std::fs::read(path).unwrap();
    let mut d = flate2::read::GzDecoder::new(&gz[..]);
    d.read_to_end(out).unwrap();
}

/// `synth --kineto` writes a run's traces with their truth; analysed alone, their process
/// groups label the communicators the operations leave unknown, as the truth has them.
#[test]
fn synth_writes_traces_that_analyze_reads() {
    let dir = scratch_dir("kineto_synth_run");
    let args: Vec<std::ffi::OsString> = vec![
        "ncclscope".into(),
        "synth".into(),
        "--preset".into(),
        "tp2pp2".into(),
        "--out".into(),
        dir.clone().into(),
        "--kineto".into(),
        "modern".into(),
        "--iterations".into(),
        "1".into(),
    ];
    assert_eq!(ncclscope_cli::run(args), ExitCode::SUCCESS);
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("kineto/kineto_truth.json")).unwrap(),
    )
    .unwrap();
    let traces: Vec<PathBuf> = (0..4)
        .map(|r| dir.join(format!("kineto/rank{r}.pt.trace.json.gz")))
        .collect();
    let (code, s) = analyze(&traces, "kineto_synth_analyze", &[]);
    assert_eq!(code, ExitCode::SUCCESS);
    assert_eq!(s["ranks"].as_array().unwrap().len(), 4);
    let groups = truth["groups"].as_array().unwrap();
    for c in s["communicators"].as_array().unwrap() {
        let pg = &c["process_group"];
        let g = groups
            .iter()
            .find(|g| g["pg_name"] == pg["name"])
            .expect("a group of the truth");
        assert_eq!(pg["description"], g["pg_desc"]);
        if pg["parallelism"].is_string() {
            assert_eq!(
                c["parallelism"], g["parallelism"],
                "{}",
                c["parallelism_evidence"]
            );
        }
    }
}
