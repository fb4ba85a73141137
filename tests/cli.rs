//! The `ncclscope analyze` command on real inputs, checked against independent counts.

use regex::Regex;
use serde_json::Value;
use std::path::Path;
use std::process::ExitCode;
use testkit::fixtures::present as real_fixtures;
use testkit::scratch_dir;

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

/// What a job prints before NCCL does, `bytes` of it: pip's progress, a config dump, a traceback.
fn preamble(bytes: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&format!(
            "Collecting package-{i}==1.{i}.0\n  Downloading package_{i}-1.{i}.0.whl (1.2 MB)\n\
             config.model.layers.{i}.hidden_size: 4096\n\
             Traceback (most recent call last):\n  File \"train.py\", line {i}, in <module>\n"
        ));
        i += 1;
    }
    out
}

/// A log whose first NCCL line follows 200 KiB of other output loads with all its operations;
/// 200 KiB of text without an NCCL line, and binary junk, are refused as before.
#[test]
fn a_log_after_a_long_preamble_loads_and_text_without_nccl_lines_is_refused() {
    let Some(fixtures) = real_fixtures() else {
        return;
    };
    let dir = scratch_dir("late_first_line");
    let log = fixtures.join("nccl/pytorch-torchtitan_issue1369_tp-collectives_coll-2ranks.log");
    let (code, alone) = analyze(&[&log], "late_alone");
    assert_eq!(code, ExitCode::SUCCESS);
    let ops = alone["inputs"][0]["nccl_ops"].as_u64().unwrap();
    assert!(ops > 0);
    let late = dir.join("train-stdout.txt");
    let mut text = preamble(200 * 1024).into_bytes();
    text.extend(std::fs::read(&log).unwrap());
    std::fs::write(&late, &text).unwrap();
    let (code, summary) = analyze(&[&late], "late_out");
    assert_eq!(code, ExitCode::SUCCESS);
    let input = &summary["inputs"][0];
    assert_eq!(input["kind"], "nccl-log");
    assert_eq!(input["nccl_ops"].as_u64(), Some(ops));
    assert_eq!(summary["ranks"], alone["ranks"]);
    assert_eq!(summary["communicators"], alone["communicators"]);

    // Refused exactly as a short text file is: the same kind, exit status and message.
    let (_, short) = analyze(&[&write(&dir, "notes.txt", b"not a log\n")], "short_out");
    let refusal = &short["warnings"][0]["message"];
    assert_eq!(
        refusal,
        "neither an NCCL debug log nor an Nsight Systems SQLite export; skipped"
    );
    let plain = write(&dir, "pip.txt", preamble(200 * 1024).as_bytes());
    let mut binary = b"\x7fELF\x02\x01\x01\0".to_vec();
    binary.extend(std::iter::repeat_n(b'x', 200 * 1024));
    let binary = write(&dir, "a.out", &binary);
    for junk in [&plain, &binary] {
        let (code, summary) = analyze(&[junk], "junk_out");
        assert_eq!(code, ExitCode::from(2), "{}", junk.display());
        assert_eq!(summary["inputs"][0]["kind"], "unknown");
        assert_eq!(&summary["warnings"][0]["message"], refusal);
        assert_eq!(summary["warnings"].as_array().unwrap().len(), 1);
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
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

/// The thesis' TP run (figure 5.30, table 5.1): with the model and layout as a config file, the
/// summary compares the TP volume with the formula, and the message-size histogram of the TP
/// communicator peaks at one microbatch's activation b·s·h·β, which the summary marks; every
/// row of the time model has a positive prediction.
#[test]
fn theory_and_time_beside_the_observed_tp_run() {
    let dir = scratch_dir("theory-tp4");
    let preset = synth::preset("tp4").unwrap();
    synth::write_run(&synth::generate(&preset.config), &dir).unwrap();
    std::fs::remove_file(dir.join("truth.json")).unwrap();
    let m = &preset.config.model;
    let config = dir.join("model.toml");
    std::fs::write(
        &config,
        format!(
            "[model]\nlayers = {}\nhidden = {}\nseq_len = {}\nmicro_batch = {}\nglobal_batch = {}\niterations = {}\n[parallel]\ntp = 4\ndp = 1\n",
            m.layers, m.hidden, m.seq_len, m.micro_batch, m.global_batch, m.iterations
        ),
    )
    .unwrap();
    let out = dir.join("summary.json");
    let code = ncclscope_cli::run([
        "ncclscope",
        "analyze",
        "--config",
        config.to_str().unwrap(),
        "--json",
        out.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, ExitCode::SUCCESS);
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();

    let tp = s["theory"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["parallelism"] == "TP")
        .expect("a TP theory entry");
    let theory = tp["theoretical_bytes"].as_f64().unwrap();
    let observed = tp["observed_bytes"].as_f64().unwrap();
    assert!(theory > 0.0 && observed > 0.0);
    assert_eq!(tp["ratio"].as_f64().unwrap(), observed / theory);
    assert_eq!(tp["observed_bytes_per_rank"].as_object().unwrap().len(), 4);
    // The discrepancy names the operation type that makes up the difference.
    let d = &tp["primary_discrepancy"];
    let op = d["op"].as_str().unwrap();
    assert!(
        s["ranks"][0]["ops_by_type"][op].as_u64().unwrap_or(0) > 0,
        "{op} is an operation the ranks logged"
    );
    assert!(d["observed_minus_theoretical_bytes"].as_f64().unwrap() != 0.0);

    let tensor = (m.micro_batch * m.seq_len * m.hidden * 2) as u64;
    assert_eq!(s["time"]["tensor_bytes"].as_u64(), Some(tensor));
    let peak = s["time"]["message_sizes"]["TP"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|b| b["operations"].as_u64().unwrap())
        .unwrap();
    assert_eq!(peak["bucket_bytes"].as_u64(), Some(tensor));

    let rows = s["time"]["by_op_and_size"].as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        assert!(r["predicted_mean_us"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["observed_mean_us"].as_f64().unwrap() > 0.0, "{r}");
    }
}

#[test]
fn an_unknown_hardware_name_is_refused() {
    let dir = scratch_dir("bad-hardware");
    let log = dir.join("rank0.log");
    std::fs::write(
        &log,
        "node1:100:100 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 comm 0x5 [nranks=2] stream 0x9\n",
    )
    .unwrap();
    let with = |hw: &str| {
        ncclscope_cli::run([
            "ncclscope",
            "analyze",
            "--hardware",
            hw,
            log.to_str().unwrap(),
        ])
    };
    assert_eq!(with("h100"), ExitCode::SUCCESS);
    assert_eq!(with("tpu9"), ExitCode::from(2));
}

/// The same process in two files of one kind (a log loaded under two names, an export beside a
/// copy of itself) is reported against the second file, naming the process and the first file.
#[test]
fn two_files_claiming_the_same_process_are_reported() {
    let Some(fixtures) = real_fixtures() else {
        return;
    };
    let dir = scratch_dir("claimed-twice");
    let log = fixtures.join("nccl/pytorch-torchtitan_issue1369_tp-collectives_coll-2ranks.log");
    let export = std::fs::read_dir(fixtures.join("nsys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("mfu_2gpu_before"))
        .expect("the mfu_2gpu_before export");
    let log_copy = dir.join("again.log");
    let export_copy = dir.join("again.sqlite");
    std::fs::copy(&log, &log_copy).unwrap();
    std::fs::copy(&export, &export_copy).unwrap();
    let (code, summary) = analyze(&[&log, &export, &log_copy, &export_copy], "claimed_out");
    assert_eq!(code, ExitCode::SUCCESS);
    let warnings = summary["warnings"].as_array().unwrap();
    for (copy, first) in [(&log_copy, &log), (&export_copy, &export)] {
        let first_name = first.display().to_string();
        let about_copy: Vec<&Value> = warnings
            .iter()
            .filter(|w| w["path"].as_str() == Some(&copy.display().to_string()))
            .filter(|w| w["message"].as_str().unwrap().contains(&first_name))
            .collect();
        assert!(
            !about_copy.is_empty(),
            "{}: no warning naming {first_name}",
            copy.display()
        );
        assert!(about_copy
            .iter()
            .all(|w| w["message"].as_str().unwrap().starts_with("process ")));
    }
    // The first files themselves are not blamed.
    assert!(!warnings
        .iter()
        .any(|w| w["path"].as_str() == Some(&log.display().to_string())
            && w["message"].as_str().unwrap().contains("also in")));
}

/// Iterations are counted from the exports' NVTX ranges whose names match the patterns; the
/// user's patterns replace the defaults.
#[test]
fn iteration_patterns_choose_the_nvtx_ranges_that_count() {
    let dir = scratch_dir("iterations");
    let preset = synth::preset("dp4").unwrap();
    synth::write_run(&synth::generate(&preset.config), &dir).unwrap();
    std::fs::remove_file(dir.join("truth.json")).unwrap();
    let iterations = |patterns: &[&str]| -> Value {
        let out = dir.join("summary.json");
        let mut args = vec!["ncclscope", "analyze", "--json", out.to_str().unwrap()];
        for p in patterns {
            args.extend(["--iteration-pattern", p]);
        }
        args.push(dir.to_str().unwrap());
        assert_eq!(ncclscope_cli::run(args), ExitCode::SUCCESS);
        let s: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        s["iterations"].clone()
    };
    let expected = u64::from(preset.config.model.iterations);
    assert_eq!(iterations(&[]).as_u64(), Some(expected));
    // The logs' dominant datatype gives the model's bytes per element (bf16 gradients: 2).
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        s["layout"]["bytes_per_element"].as_u64(),
        Some(preset.config.model.bytes_per_element)
    );
    assert_eq!(iterations(&["iter*"]).as_u64(), Some(expected));
    assert!(iterations(&["optimizer_step"]).is_null());
}

/// `synth --layout` writes a run of the user's layout that the analysis labels back: every
/// communicator's parallelism and the sizes; bad specs are refused naming the problem.
#[test]
fn synth_writes_a_layout_of_the_users_choice() {
    let dir = scratch_dir("synth-layout");
    let code = ncclscope_cli::run([
        "ncclscope",
        "synth",
        "--layout",
        "tp=2,pp=2,dp=2",
        "--gpus-per-node",
        "4",
        "--nccl-version",
        "2.27.5",
        "--timestamps",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, ExitCode::SUCCESS);
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap();
    assert_eq!(truth["ranks"].as_array().unwrap().len(), 8);
    assert_eq!(truth["nccl_version"], "2.27.5");
    std::fs::remove_file(dir.join("truth.json")).unwrap();
    let (code, summary) = analyze(&[&dir], "synth-layout-summary");
    assert_eq!(code, ExitCode::SUCCESS);
    let sizes = &summary["layout"]["sizes"];
    assert_eq!(
        (
            sizes["tp"].as_u64(),
            sizes["pp"].as_u64(),
            sizes["dp"].as_u64()
        ),
        (Some(2), Some(2), Some(2))
    );
    let labels: Vec<(&Value, &Value)> = truth["communicators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (&c["global_ranks"], &c["parallelism"]))
        .collect();
    for c in summary["communicators"].as_array().unwrap() {
        assert!(
            labels.contains(&(&c["global_ranks"], &c["parallelism"])),
            "{c}"
        );
    }
    for bad in ["tp=0", "tp=2,xp=2"] {
        let code = ncclscope_cli::run([
            "ncclscope",
            "synth",
            "--layout",
            bad,
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(code, ExitCode::from(2), "{bad}");
    }
    let code = ncclscope_cli::run([
        "ncclscope",
        "synth",
        "--layout",
        "dp=2",
        "--nccl-version",
        "2.10.3",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, ExitCode::from(2));
}

/// Each communicator's median bus bandwidth in the summary is the median of the per-kernel bus
/// bandwidths the CSV export gives for that communicator (single-line kernels).
#[test]
fn communicator_bandwidth_summarises_the_enriched_kernels() {
    let dir = scratch_dir("comm-bandwidth");
    let preset = synth::preset("demo").unwrap();
    synth::write_run(&synth::generate(&preset.config), &dir).unwrap();
    std::fs::remove_file(dir.join("truth.json")).unwrap();
    let (out, csv) = (dir.join("s.json"), dir.join("k.csv"));
    let code = ncclscope_cli::run([
        "ncclscope",
        "analyze",
        "--json",
        out.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, ExitCode::SUCCESS);
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    // Parse the CSV with its quoting (kernel names hold commas).
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<String>> = text
        .split("\r\n")
        .filter(|l| !l.is_empty())
        .map(csv_cells)
        .collect();
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let (id, bus, op) = (col("Communicator ID"), col("Bus BW (GB/s)"), col("Name"));
    let mut per_comm: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for r in &rows[1..] {
        // Fused Send/Recv kernels (named SendRecv) carry several lines: not summarised.
        if let (Ok(b), false) = (r[bus].parse::<f64>(), r[op] == "SendRecv") {
            per_comm.entry(r[id].clone()).or_default().push(b);
        }
    }
    let mut checked = 0;
    for c in s["communicators"].as_array().unwrap() {
        let Some(median) = c["bandwidth"]["median_bus_bw_gbps"].as_f64() else {
            continue;
        };
        let mut v = per_comm
            .remove(c["id"].as_str().unwrap())
            .expect("kernels of the communicator");
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let expect = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        assert!(
            (median - expect).abs() <= 1e-9 * expect.abs().max(1.0),
            "{}: {median} vs {expect}",
            c["id"]
        );
        assert_eq!(c["bandwidth"]["kernels"].as_u64(), Some(n as u64));
        checked += 1;
    }
    assert!(checked >= 4);
}

/// One CSV line's cells (RFC 4180 quoting).
fn csv_cells(line: &str) -> Vec<String> {
    let (mut cells, mut cur, mut quoted, mut chars) =
        (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    cells.push(cur);
    cells
}

/// `comm_matrix` as the contract shapes it (one entry per (src, dst, parallelism, op) with
/// bytes > 0, each with bytes and time), the same rows in `--matrix-csv`, and the rest of the
/// patterns beside it.
#[test]
fn the_rank_to_rank_matrix_in_the_summary_and_as_csv() {
    let dir = scratch_dir("matrix-demo");
    let preset = synth::preset("demo").unwrap();
    synth::write_run(&synth::generate(&preset.config), &dir).unwrap();
    std::fs::remove_file(dir.join("truth.json")).unwrap();
    let out = dir.join("summary.json");
    let csv = dir.join("matrix.csv");
    let code = ncclscope_cli::run([
        "ncclscope",
        "analyze",
        "--json",
        out.to_str().unwrap(),
        "--matrix-csv",
        csv.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, ExitCode::SUCCESS);
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let entries = s["comm_matrix"].as_array().unwrap();
    assert!(!entries.is_empty());
    let mut keys = std::collections::BTreeSet::new();
    for e in entries {
        let o = e.as_object().unwrap();
        for k in ["src", "dst", "parallelism", "op", "bytes", "time_ns"] {
            assert!(o.contains_key(k), "{e}");
        }
        assert!(e["bytes"].as_u64().unwrap() > 0, "{e}");
        assert_ne!(e["src"], e["dst"]);
        let key = (
            e["src"].as_u64().unwrap(),
            e["dst"].as_u64().unwrap(),
            e["parallelism"].as_str().unwrap().to_string(),
            e["op"].as_str().unwrap().to_string(),
        );
        assert!(keys.insert(key), "{e} twice");
        let par = e["parallelism"].as_str().unwrap();
        assert!(
            ["TP", "PP", "DP", "EP", "CP", "unknown"].contains(&par),
            "{e}"
        );
    }
    // The demo's pipeline stages sit on two nodes: rank 0 sends its activations to rank 4.
    assert!(entries
        .iter()
        .any(|e| e["src"] == 0 && e["dst"] == 4 && e["parallelism"] == "PP" && e["op"] == "Send"));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("src,dst,parallelism,op,bytes,time_ns"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), entries.len());
    for (row, e) in rows.iter().zip(entries) {
        let want = format!(
            "{},{},{},{},{},{}",
            e["src"],
            e["dst"],
            e["parallelism"].as_str().unwrap(),
            e["op"].as_str().unwrap(),
            e["bytes"],
            e["time_ns"]
        );
        assert_eq!(*row, want);
    }
    let p = &s["patterns"];
    assert_eq!(p["matrix"]["hosts"].as_array().unwrap().len(), 2);
    assert!(!p["matrix"]["nodes"].as_array().unwrap().is_empty());
    assert_eq!(p["periodicity"]["step_source"], "nvtx");
    assert!(!p["model"]["groups"].as_array().unwrap().is_empty());
    assert!(p["model"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["link_class"] == "network"));
    assert_eq!(p["predicted"]["sizes"]["pp"], 2);
}
