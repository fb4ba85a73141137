//! `ncclscope analyze --aggregate` and `ncclscope aggregate merge` on a generated two-node run:
//! the merged file labels every communicator as the generator's truth, and a garbled input is
//! refused (exit status 2) without leaving a half-written output.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use testkit::scratch_dir;

fn run(args: &[&str]) -> ExitCode {
    ncclscope_cli::run(std::iter::once("ncclscope").chain(args.iter().copied()))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A TP2 PP2 DP2 run on two nodes of four GPUs, analysed per node; returns the run folder and
/// the two aggregates.
fn per_node(name: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = scratch_dir(name);
    let runs = dir.join("run");
    let code = run(&[
        "synth",
        "--layout",
        "tp=2,pp=2,dp=2",
        "--gpus-per-node",
        "4",
        "--out",
        s(&runs),
    ]);
    assert_eq!(code, ExitCode::SUCCESS);
    let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in std::fs::read_dir(&runs).unwrap() {
        let p = e.unwrap().path();
        let n = p.file_name().unwrap().to_str().unwrap().to_string();
        let host = n
            .strip_prefix("nccl_debug_")
            .and_then(|r| r.rsplit_once('_'))
            .map(|(h, _)| h.to_string())
            .or_else(|| {
                Some(
                    n.strip_prefix("report_")?
                        .strip_suffix(".sqlite")?
                        .to_string(),
                )
            });
        if let Some(h) = host {
            files.entry(h).or_default().push(p.display().to_string());
        }
    }
    assert_eq!(files.len(), 2, "{files:?}");
    let out: Vec<PathBuf> = files
        .iter()
        .map(|(host, inputs)| {
            let agg = dir.join(format!("{host}.agg"));
            let mut args = vec!["analyze", "--aggregate", s(&agg)];
            args.extend(inputs.iter().map(String::as_str));
            assert_eq!(run(&args), ExitCode::SUCCESS, "{host}");
            agg
        })
        .collect();
    (dir, out)
}

#[test]
fn per_node_aggregates_merge_into_the_truths_communicators() {
    let (dir, parts) = per_node("agg-merge");
    let merged = dir.join("run.agg");
    let mut args = vec!["aggregate", "merge", "--out", s(&merged)];
    args.extend(parts.iter().map(|p| s(p)));
    assert_eq!(run(&args), ExitCode::SUCCESS);
    let bytes = std::fs::read(&merged).unwrap();
    let o = aggregate_file::Aggregate::open("run.agg", &bytes)
        .unwrap()
        .overview;
    let truth: Value =
        serde_json::from_slice(&std::fs::read(dir.join("run/truth.json")).unwrap()).unwrap();
    assert_eq!(o.ranks.len(), truth["ranks"].as_array().unwrap().len());
    for t in truth["communicators"].as_array().unwrap() {
        let c = o
            .comms
            .iter()
            .find(|c| c.id == t["id"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            c.parallelism,
            t["parallelism"].as_str().unwrap(),
            "{}",
            c.id
        );
    }
    // A node alone cannot tell its DP group (one member on each node).
    let alone = std::fs::read(&parts[0]).unwrap();
    let alone = aggregate_file::Aggregate::open("alone", &alone)
        .unwrap()
        .overview;
    assert!(alone.comms.iter().all(|c| c.parallelism != "DP"));
    assert!(o.comms.iter().any(|c| c.parallelism == "DP"));
    // It carries the run's rank-to-rank matrix: `analyze`'s `comm_matrix` of the whole run.
    let summary = dir.join("whole.json");
    let mut inputs: Vec<String> = std::fs::read_dir(dir.join("run"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".log") || p.ends_with(".sqlite"))
        .collect();
    inputs.sort();
    let mut args = vec!["analyze", "--json", s(&summary)];
    args.extend(inputs.iter().map(String::as_str));
    assert_eq!(run(&args), ExitCode::SUCCESS);
    let whole: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    let want = whole["comm_matrix"].as_array().unwrap();
    let m = aggregate_file::Aggregate::open("run.agg", &bytes)
        .unwrap()
        .matrix()
        .unwrap()
        .expect("a matrix")
        .comm_matrix(&o);
    assert!(!want.is_empty());
    assert_eq!(m.entries.len(), want.len());
    for (e, w) in m.entries.iter().zip(want) {
        assert_eq!(
            (
                u64::from(e.src),
                u64::from(e.dst),
                e.parallelism.as_str(),
                e.op.as_str()
            ),
            (
                w["src"].as_u64().unwrap(),
                w["dst"].as_u64().unwrap(),
                w["parallelism"].as_str().unwrap(),
                w["op"].as_str().unwrap()
            )
        );
        assert!(
            e.bytes.abs_diff(w["bytes"].as_u64().unwrap()) <= 1,
            "{e:?} vs {w}"
        );
    }
    // `show` reads it; a merge over the folder skips the merged file itself and other files.
    assert_eq!(run(&["aggregate", "show", s(&merged)]), ExitCode::SUCCESS);
    assert_eq!(
        run(&["aggregate", "show", s(&merged), "--rank", "3"]),
        ExitCode::SUCCESS
    );
    assert_eq!(
        run(&["aggregate", "merge", "--out", s(&merged), s(&dir)]),
        ExitCode::SUCCESS
    );
    let again = std::fs::read(&merged).unwrap();
    let again = aggregate_file::Aggregate::open("again", &again)
        .unwrap()
        .overview;
    assert_eq!(again.ranks, o.ranks);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_garbled_or_repeated_input_is_refused_and_leaves_no_output() {
    let (dir, parts) = per_node("agg-bad");
    let merged = dir.join("run.agg");
    let mut garbled = std::fs::read(&parts[0]).unwrap();
    let overview_at = u64::from_le_bytes(garbled[16..24].try_into().unwrap()) as usize;
    for b in &mut garbled[overview_at + 10..overview_at + 30] {
        *b ^= 0x5a;
    }
    let bad = dir.join("garbled.agg");
    std::fs::write(&bad, &garbled).unwrap();
    let code = run(&[
        "aggregate",
        "merge",
        "--out",
        s(&merged),
        s(&bad),
        s(&parts[1]),
    ]);
    assert_eq!(code, ExitCode::from(2));
    assert!(!merged.exists());
    // The same node twice.
    let code = run(&[
        "aggregate",
        "merge",
        "--out",
        s(&merged),
        s(&parts[0]),
        s(&parts[0]),
    ]);
    assert_eq!(code, ExitCode::from(2));
    assert!(!merged.exists());
    // Not an aggregate at all, and a cut one.
    assert_eq!(
        run(&["aggregate", "show", s(&dir.join("run/truth.json"))]),
        ExitCode::from(2)
    );
    let cut = dir.join("cut.agg");
    let whole = std::fs::read(&parts[1]).unwrap();
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    assert_eq!(run(&["aggregate", "show", s(&cut)]), ExitCode::from(2));
    std::fs::remove_dir_all(&dir).ok();
}
