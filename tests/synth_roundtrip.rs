//! The generator's runs, analysed by the command, give back exactly the generator's truth:
//! per-rank operation counts and bytes per type, kernels per rank, global ranks, the
//! communicator groups, and the parallelism inferred for each communicator.

use ncclscope_tests::scratch_dir;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

/// Runs `analyze` on a run's directory; returns the summary, and checks the Chrome trace and
/// the CSV it writes: the trace against the Trace Event Format, the CSV one row per NCCL kernel.
fn analyze(dir: &std::path::Path) -> Value {
    let out = dir.join("summary.json");
    let trace = dir.join("trace.json.out");
    let csv = dir.join("ops.csv.out");
    let code = ncclscope_cli::run([
        "ncclscope",
        "analyze",
        "--json",
        out.to_str().unwrap(),
        "--chrome-trace",
        trace.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, ExitCode::SUCCESS);
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(trace).unwrap()).unwrap();
    export::validate_trace(&trace)
        .unwrap_or_else(|e| panic!("{}: invalid Chrome trace: {e}", dir.display()));
    let kernel_events = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "nccl")
        .count();
    let kernels = summary["alignment"]["kernels"].as_u64().unwrap() as usize;
    assert_eq!(
        kernel_events,
        kernels,
        "{}: one trace event per NCCL kernel",
        dir.display()
    );
    let rows = std::fs::read_to_string(csv)
        .unwrap()
        .split("\r\n")
        .filter(|l| !l.is_empty())
        .count();
    assert_eq!(
        rows,
        kernels + 1,
        "{}: a CSV row per NCCL kernel, plus the header",
        dir.display()
    );
    summary
}

/// Per (host, pid): the fields both sides must agree on.
fn by_process(ranks: &Value) -> BTreeMap<(String, u64), (u64, Value, Value)> {
    ranks
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            // Zero counts are written by one side and left out by the other: compare non-zero ones.
            let nonzero = |v: &Value| -> Value {
                v.as_object()
                    .map(|m| {
                        m.iter()
                            .filter(|(_, n)| n.as_u64() != Some(0))
                            .map(|(k, n)| (k.clone(), n.clone()))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let key = (
                r["host"].as_str().unwrap().to_string(),
                r["pid"].as_u64().unwrap(),
            );
            (
                key,
                (
                    r["global_rank"].as_u64().unwrap(),
                    nonzero(&r["ops_by_type"]),
                    nonzero(&r["bytes_by_type"]),
                ),
            )
        })
        .collect()
}

fn comm_groups(comms: &Value) -> BTreeSet<Vec<u64>> {
    comms
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["global_ranks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_u64().unwrap())
                .collect()
        })
        .collect()
}

/// Communicator rank set → its parallelism label.
fn comm_labels(comms: &Value) -> BTreeMap<Vec<u64>, String> {
    comms
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let ranks = c["global_ranks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_u64().unwrap())
                .collect();
            (ranks, c["parallelism"].as_str().unwrap().to_string())
        })
        .collect()
}

fn check_preset(name: &str) {
    let preset = synth::preset(name).unwrap_or_else(|| panic!("preset {name}"));
    check_config(name, &preset.config);
}

fn check_config(name: &str, config: &synth::RunConfig) {
    let dir = scratch_dir(&format!("roundtrip-{name}"));
    let run = synth::generate(config);
    synth::write_run(&run, &dir).unwrap();
    let truth: Value = serde_json::from_slice(&run.truth_json()).unwrap();
    std::fs::remove_file(dir.join("truth.json")).unwrap();
    let summary = analyze(&dir);

    assert_eq!(
        by_process(&summary["ranks"]),
        by_process(&truth["ranks"]),
        "{name}: per-rank counts and bytes"
    );
    let kernels_truth: u64 = truth["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kernels"].as_u64().unwrap())
        .sum();
    assert_eq!(
        summary["alignment"]["kernels"].as_u64(),
        Some(kernels_truth),
        "{name}: NCCL kernels"
    );
    assert_eq!(
        comm_groups(&summary["communicators"]),
        comm_groups(&truth["communicators"]),
        "{name}: communicator groups"
    );
    // The layout is inferred from the trace alone: no sizes were given.
    assert_eq!(
        comm_labels(&summary["communicators"]),
        comm_labels(&truth["communicators"]),
        "{name}: parallelism"
    );
}

#[test]
fn thesis_presets_round_trip() {
    for name in [
        "dp4",
        "dp4-distopt",
        "pp4",
        "tp2pp2",
        "ep4-alltoall",
        "ep4-allgather",
    ] {
        check_preset(name);
    }
}

#[test]
fn alignment_scenario_presets_round_trip() {
    for name in ["align-nodrop", "align-bothdrop20"] {
        check_preset(name);
    }
}

#[test]
fn demo_round_trips() {
    check_preset("demo");
}

/// Symmetric kernels (2.27) and launcher-tagged lines go through the whole command like the rest.
#[test]
fn symmetric_kernels_and_launcher_tags_round_trip() {
    let mut sym = synth::preset("tp4-sym").unwrap().config;
    sym.model.iterations = 1;
    check_config("tp4-sym", &sym);
    let mut tagged = synth::preset("tp2pp2").unwrap().config;
    tagged.model.iterations = 2;
    for l in [
        synth::Launcher::Torchrun,
        synth::Launcher::Srun,
        synth::Launcher::Mpirun,
    ] {
        tagged.launcher = l;
        check_config(&format!("tp2pp2-{}", l.name()), &tagged);
    }
}
