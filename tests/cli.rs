//! The `ncclscope analyze` command on real inputs, checked against independent counts.

use ncclscope_tests::{real_fixtures, scratch_dir};
use regex::Regex;
use serde_json::Value;
use std::path::Path;
use std::process::ExitCode;

fn analyze(paths: &[&Path], name: &str) -> (ExitCode, Value) {
    let out = scratch_dir(name).join("summary.json");
    let mut args = vec![
        "ncclscope".into(),
        "analyze".into(),
        "--json".into(),
        out.clone().into_os_string(),
    ];
    args.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
    let code = ncclscope_cli::run(args);
    let summary = std::fs::read_to_string(&out)
        .map(|t| serde_json::from_str(&t).expect("valid JSON"))
        .unwrap_or(Value::Null);
    (code, summary)
}

#[test]
fn every_real_log_reports_the_per_collective_lines_an_independent_regex_counts() {
    let Some(fixtures) = real_fixtures() else {
        return;
    };
    // Independent count: `<Op>: opCount <hex> ` after an `NCCL INFO` marker.
    let coll = Regex::new(r"NCCL INFO [A-Za-z]+: opCount [0-9a-fA-F]+ ").unwrap();
    for entry in std::fs::read_dir(fixtures.join("nccl")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "log") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        let expected = text.lines().filter(|l| coll.is_match(l)).count() as u64;
        let (code, summary) = analyze(&[&path], "every_real_log");
        assert_eq!(code, ExitCode::SUCCESS, "{}", path.display());
        let input = &summary["inputs"][0];
        assert_eq!(input["kind"], "nccl-log", "{}", path.display());
        assert_eq!(
            input["nccl_ops"].as_u64(),
            Some(expected),
            "{}",
            path.display()
        );
        let by_ranks: u64 = summary["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["ops_by_type"].as_object().unwrap().values())
            .map(|v| v.as_u64().unwrap())
            .sum();
        // A line with no host:pid prefix cannot be attributed to a rank, so ranks may hold fewer.
        assert!(by_ranks <= expected, "{}", path.display());
    }
}

#[test]
fn every_real_export_reports_its_nccl_kernels() {
    let Some(fixtures) = real_fixtures() else {
        return;
    };
    for entry in std::fs::read_dir(fixtures.join("nsys")).unwrap() {
        let path = entry.unwrap().path();
        let (code, summary) = analyze(&[&path], "every_real_export");
        assert_eq!(code, ExitCode::SUCCESS, "{}", path.display());
        let input = &summary["inputs"][0];
        assert_eq!(input["kind"], "nsys-sqlite");
        assert!(
            input["nccl_kernels"].as_u64().is_some(),
            "{}",
            path.display()
        );
    }
}

#[test]
fn unusable_inputs_exit_2_and_are_named() {
    let dir = scratch_dir("unusable");
    let junk = dir.join("notes.txt");
    std::fs::write(&junk, "not a log\n").unwrap();
    let (code, summary) = analyze(&[&junk], "unusable_out");
    assert_eq!(code, ExitCode::from(2));
    assert_eq!(summary["inputs"][0]["kind"], "unknown");
    assert!(summary["warnings"][0]["path"]
        .as_str()
        .unwrap()
        .ends_with("notes.txt"));
    let (code, _) = analyze(&[&dir.join("missing.log")], "missing_out");
    assert_eq!(code, ExitCode::from(2));
}

#[test]
fn a_bad_file_beside_a_good_one_still_loads_the_good_one() {
    let Some(fixtures) = real_fixtures() else {
        return;
    };
    let dir = scratch_dir("mixed");
    let fake = dir.join("fake.sqlite");
    std::fs::write(&fake, b"SQLite format 3\0 but truncated right here").unwrap();
    let log = fixtures.join("nccl/pytorch-torchtitan_issue1369_tp-collectives_coll-2ranks.log");
    let (code, summary) = analyze(&[&fake, &log], "mixed_out");
    assert_eq!(code, ExitCode::SUCCESS);
    assert!(summary["inputs"][1]["nccl_ops"].as_u64().unwrap() > 0);
    assert!(summary["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["path"].as_str().unwrap().ends_with("fake.sqlite")));
}

#[test]
fn theory_reproduces_the_thesis_pipeline_volumes_from_a_config_file() {
    let dir = scratch_dir("theory");
    let config = dir.join("pp4.toml");
    // The contract's config shape; model keys left out take the thesis' dense defaults.
    std::fs::write(
        &config,
        "[model]\nmicro_batch = 4\n\n[parallel]\ndp = 1\npp = 4\n",
    )
    .unwrap();
    let out = dir.join("theory.json");
    let code = ncclscope_cli::run([
        "ncclscope",
        "theory",
        "--config",
        config.to_str().unwrap(),
        "--json",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, ExitCode::SUCCESS);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let pp: Vec<&Value> = v["theory"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["parallelism"] == "PP")
        .collect();
    let gb = |role: &str| {
        let e = pp
            .iter()
            .find(|e| e["rank_role"] == role)
            .expect("an entry per pipeline role");
        (e["theoretical_bytes"].as_f64().unwrap() / 1e9 * 100.0).round() / 100.0
    };
    // Thesis §5.3.5: 1.34 GB for an edge stage, 2.68 GB for a middle stage over 10 iterations.
    assert_eq!(gb("edge"), 1.34);
    assert_eq!(gb("middle"), 2.68);

    std::fs::write(&config, "[parallel]\ntp = \"four\"\n").unwrap();
    let code = ncclscope_cli::run(["ncclscope", "theory", "--config", config.to_str().unwrap()]);
    assert_eq!(
        code,
        ExitCode::from(2),
        "an invalid config is an unusable argument"
    );
}
