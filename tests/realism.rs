//! The realism matrix (issue 28): runs shaped like real clusters' — host names the export spells
//! differently, stamps of every resolution and zone, launchers' combined logs, MoE all-to-all
//! with an unlogged second NCCL and warm-up lines outside the capture, one GPU per process,
//! pids repeated across nodes or from another namespace, per-rank exports with their own
//! sessions, schemas 3.16, 3.17 and 3.25 — each analysed by the command (`ncclscope analyze`,
//! through the cli crate's library) without its truth, then checked against the truth:
//! exact per-rank counts and kernels, every communicator grouped and labelled, alignment F1
//! (≥ 0.97 with stamps of 1 ms or finer, ≥ 0.95 otherwise) and clocks within 5 µs.
//!
//! `REALISM_ONLY=substring` runs the cases whose name contains it (all by default).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use synth::realism::{HostNaming, LogFiles, StampFormat};
use synth::{Launcher, Layout, Model, Realism, RunConfig, Schema};
use testkit::scratch_dir;

/// One run of the matrix.
struct Case {
    name: String,
    config: RunConfig,
}

impl Case {
    /// Whether the run's stamps resolve 1 ms or better (the F1 bar is higher then).
    fn fine_stamps(&self) -> bool {
        let r = &self.config.realism;
        r.stamp_format(self.config.timestamps)
            .resolution_ns(false)
            .is_some_and(|ns| ns <= 1_000_000)
    }
}

/// The families of layouts: each a config with none of the matrix's knobs set.
fn family(name: &str) -> RunConfig {
    let small = |layers: u32, iterations: u32| Model {
        layers,
        global_batch: 16,
        iterations,
        ..Model::thesis()
    };
    match name {
        // Two nodes, every kind of communicator of a dense run.
        "dense" => {
            let mut c = RunConfig::new(
                Layout {
                    tp: 2,
                    pp: 2,
                    dp: 2,
                    ..Layout::default()
                },
                small(4, 2),
            );
            c.nodes = 2;
            c.gpus_per_node = 4;
            c
        }
        // Two nodes of two GPUs, data parallelism across them.
        "dp" => {
            let mut c = RunConfig::new(
                Layout {
                    tp: 2,
                    dp: 2,
                    ..Layout::default()
                },
                small(4, 3),
            );
            c.nodes = 2;
            c.gpus_per_node = 2;
            c
        }
        // One node, MoE: expert parallelism over the data-parallel ranks, all-to-all fused
        // into one SendRecv kernel per group, a second NCCL without a log, warm-up lines before
        // the capture, one GPU per process.
        "moe" => {
            let model = Model {
                moe_experts: 4,
                moe_top_k: 1,
                moe_layers: 2,
                ..small(4, 2)
            };
            let mut c = RunConfig::new(
                Layout {
                    dp: 4,
                    ..Layout::default()
                },
                model,
            );
            c.realism.moe_over_dp = true;
            c.realism.moe_fused = true;
            c.realism.unlogged_kernels = 2;
            c.realism.warmup_ops = 20;
            c.realism.isolated_devices = true;
            c
        }
        _ => unreachable!("no family {name}"),
    }
}

/// How the logs are written: (label, launcher, files, foreign lines, interleaved writes).
const FILES: [(&str, Launcher, LogFiles, bool, u32); 8] = [
    ("own", Launcher::None, LogFiles::Inherit, false, 0),
    ("torchrun", Launcher::Torchrun, LogFiles::PerNode, true, 0),
    ("rank", Launcher::TorchrunRank, LogFiles::PerNode, true, 0),
    ("srun", Launcher::Srun, LogFiles::PerNode, true, 0),
    ("mpirun", Launcher::Mpirun, LogFiles::PerNode, false, 0),
    ("ray", Launcher::Ray, LogFiles::PerNode, true, 0),
    ("pdsh", Launcher::Pdsh, LogFiles::PerNode, false, 0),
    ("shared", Launcher::None, LogFiles::PerNode, true, 6),
];

/// The exports: (label, schema, per rank with its own session, system clock).
const EXPORTS: [(&str, Schema, bool, bool); 4] = [
    ("3.16", Schema::V3_16, false, false),
    ("3.17", Schema::V3_17, false, false),
    ("3.25", Schema::V3_25, false, true),
    ("rank", Schema::V3_17, true, false),
];

/// Every case: each family under every stamp format and host naming, the launchers, exports
/// and pid variations rotated through them so that each meets every other knob.
fn matrix() -> Vec<Case> {
    let stamps = [
        ("nostamp", StampFormat::None, 0),
        ("epoch", StampFormat::Epoch, 0),
        ("bracket", StampFormat::BracketLocal, 120),
        ("custom", StampFormat::Custom, -300),
    ];
    let hosts = [
        ("short", HostNaming::Short),
        ("fqdn", HostNaming::Fqdn),
        ("upper", HostNaming::FqdnUpper),
        ("container", HostNaming::Container),
    ];
    let mut out = Vec::new();
    let mut k = 0usize;
    for fam in ["dense", "dp", "moe"] {
        for (si, &(sname, stamp, zone)) in stamps.iter().enumerate() {
            for (hi, &(hname, naming)) in hosts.iter().enumerate() {
                k += 1;
                let mut c = family(fam);
                let multi_node = c.nodes > 1;
                // A container's host name ties none of its processes to a node: across nodes
                // the data cannot tell nodes of equal work apart (a case of its own below).
                if naming == HostNaming::Container && multi_node {
                    continue;
                }
                let (fname, launcher, files, foreign, cuts) = FILES[(si * 3 + hi + k) % 8];
                let (xname, schema, per_rank, system) = EXPORTS[(si + 2 * hi + k) % 4];
                c.seed = 1000 + k as u64;
                c.launcher = launcher;
                c.schema = schema;
                c.report_per_rank = per_rank;
                c.nccl_version = ["2.27.5", "2.23.4", "2.26.2", "2.21.5"][k % 4].into();
                let r: &mut Realism = &mut c.realism;
                r.hosts = naming;
                r.stamps = stamp;
                r.zone_offset_min = zone;
                r.log_files = files;
                r.foreign_lines = foreign;
                r.interleaved_writes = cuts;
                r.rank_session_starts = per_rank;
                r.system_clock = system;
                // Containers: their own pid namespace; elsewhere, every other case repeats the
                // pids on every node.
                r.pid_namespaces = naming == HostNaming::Container;
                r.pid_collisions = multi_node && k.is_multiple_of(2);
                let name = format!(
                    "{fam}-{sname}-{hname}-{fname}-{xname}{}",
                    if r.pid_collisions { "-samepids" } else { "" }
                );
                out.push(Case { name, config: c });
            }
        }
    }
    out
}

/// What the command wrote for a run.
struct Analyzed {
    summary: Value,
    /// (global rank, correlation id) → (communicator pointer, opCount) of the matched log line,
    /// from the Chrome trace (`None`: unmatched).
    matches: BTreeMap<(u64, u64), Option<(String, u64)>>,
    /// The longest time from a rank's first kernel start to its last kernel end, in its own
    /// clock (how long the clocks must hold).
    span_ns: i64,
}

fn analyze(dir: &std::path::Path) -> Analyzed {
    let out = dir.join("summary.json.out");
    let trace = dir.join("trace.json.out");
    let code = ncclscope_cli::run([
        "ncclscope",
        "analyze",
        "--json",
        out.to_str().unwrap(),
        "--chrome-trace",
        trace.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, ExitCode::SUCCESS, "{}", dir.display());
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(trace).unwrap()).unwrap();
    let mut matches = BTreeMap::new();
    let mut extent: BTreeMap<u64, (i64, i64)> = BTreeMap::new();
    for e in trace["traceEvents"].as_array().unwrap() {
        if e["cat"] != "nccl" {
            continue;
        }
        let a = &e["args"];
        let key = (
            a["Global Rank"].as_u64().unwrap(),
            a["CUDA Correlation ID"].as_u64().unwrap(),
        );
        let matched = (a["Match"] == "matched").then(|| {
            let comm = a["Communicator Ptr"].as_str().unwrap().to_string();
            let oc = u64::from_str_radix(a["Op Count (Hex)"].as_str().unwrap(), 16).unwrap();
            (comm, oc)
        });
        if let (Some(s), Some(e)) = (
            a["Own Clock Start (ns)"].as_i64(),
            a["Own Clock End (ns)"].as_i64(),
        ) {
            let x = extent.entry(key.0).or_insert((s, e));
            *x = (x.0.min(s), x.1.max(e));
        }
        matches.insert(key, matched);
    }
    Analyzed {
        summary,
        matches,
        span_ns: extent.values().map(|(s, e)| e - s).max().unwrap_or(0),
    }
}

/// What one case measured, and what failed.
struct Outcome {
    name: String,
    f1: f64,
    clock_ns: f64,
    failures: Vec<String>,
}

/// Alignment F1 over the truth's kernels: a kernel is right when it carries the truth's log
/// line (communicator pointer and opCount), or none when the truth has none.
fn f1(a: &Analyzed, truth: &Value) -> f64 {
    let (mut tp, mut fp, mut fnn) = (0u64, 0u64, 0u64);
    for k in truth["kernels"].as_array().unwrap() {
        let key = (
            k["global_rank"].as_u64().unwrap(),
            k["correlation_id"].as_u64().unwrap(),
        );
        let want = k["log_op"].as_object().map(|o| {
            (
                o["comm"].as_str().unwrap().to_string(),
                o["op_count"].as_u64().unwrap(),
            )
        });
        let got = a.matches.get(&key).cloned().flatten();
        match (&want, &got) {
            (Some(w), Some(g)) if w == g => tp += 1,
            (Some(_), Some(_)) => {
                fp += 1;
                fnn += 1;
            }
            (Some(_), None) => fnn += 1,
            (None, Some(_)) => fp += 1,
            (None, None) => {}
        }
    }
    if tp == 0 {
        return 0.0;
    }
    2.0 * tp as f64 / (2 * tp + fp + fnn) as f64
}

/// Per (host, pid): (global rank, non-zero operations by type, non-zero bytes by type).
fn counts(ranks: &Value) -> BTreeMap<(String, u64), (u64, Value, Value)> {
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
    ranks
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["ops_by_type"].as_object().is_some_and(|m| !m.is_empty()))
        .map(|r| {
            (
                (
                    r["host"].as_str().unwrap().to_string(),
                    r["pid"].as_u64().unwrap(),
                ),
                (
                    r["global_rank"].as_u64().unwrap(),
                    nonzero(&r["ops_by_type"]),
                    nonzero(&r["bytes_by_type"]),
                ),
            )
        })
        .collect()
}

/// Rank set → parallelism, of every communicator (rank sets are listed once per label).
fn comms(v: &Value) -> BTreeSet<(Vec<u64>, String)> {
    v.as_array()
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

/// The worst error (ns) of the summary's clocks over the run: each rank's report clock reads
/// its node's clock minus its capture's delay (`report_shift_ns`); the summary gives each rank
/// against the reference rank at `reference_ns`.
fn clock_error(a: &Analyzed, truth: &Value) -> Result<f64, String> {
    let clocks = &a.summary["clocks"];
    let rank = |g: u64| -> &Value {
        truth["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["global_rank"].as_u64() == Some(g))
            .unwrap()
    };
    // (offset, drift) of a rank's report clock against true time since the session start.
    let clock_of = |g: u64| -> (f64, f64) {
        let r = rank(g);
        let c = truth["clocks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["host"] == r["host"])
            .unwrap();
        let shift = r["report_shift_ns"].as_f64().unwrap_or(0.0);
        (
            c["offset_ns"].as_f64().unwrap() - shift,
            c["drift_ppm"].as_f64().unwrap(),
        )
    };
    let Some(reference) = clocks["reference_rank"].as_u64() else {
        return Err("no clocks".into());
    };
    let reference_ns = clocks["reference_ns"].as_f64().unwrap();
    let (off_a, drift_a) = clock_of(reference);
    let span = a.span_ns as f64;
    let mut worst = 0.0f64;
    let ranks = clocks["ranks"].as_array().unwrap();
    let world = truth["ranks"].as_array().unwrap().len();
    if ranks.len() != world {
        return Err(format!("clocks for {} of {world} ranks", ranks.len()));
    }
    for r in ranks {
        let (off_b, drift_b) = clock_of(r["global_rank"].as_u64().unwrap());
        let drift = drift_b - drift_a;
        let expect = off_b - off_a + drift * 1e-6 * (reference_ns - off_a);
        let off_err = (r["offset_ns"].as_f64().unwrap() - expect).abs();
        let drift_err = (r["drift_ppm"].as_f64().unwrap() - drift).abs();
        worst = worst.max(off_err + drift_err * 1e-6 * span);
    }
    Ok(worst)
}

/// Generates, writes and analyses one case and checks it against its truth.
fn run_case(case: &Case) -> Outcome {
    let dir = scratch_dir(&format!("realism-{}", case.name));
    let run = synth::generate(&case.config);
    synth::write_run(&run, &dir).unwrap();
    let truth: Value = serde_json::from_slice(&run.truth_json()).unwrap();
    std::fs::remove_file(dir.join("truth.json")).unwrap();
    let a = analyze(&dir);
    let mut failures = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            failures.push(what);
        }
    };
    let s = &a.summary;
    let got = counts(&s["ranks"]);
    let want = counts(&truth["ranks"]);
    check(
        got == want,
        format!("per-rank counts differ:\n  got  {got:?}\n  want {want:?}"),
    );
    // Kernels per rank, by type, summing to the rank's kernels.
    let mut kernels_want: BTreeMap<u64, u64> = BTreeMap::new();
    for k in truth["kernels"].as_array().unwrap() {
        *kernels_want
            .entry(k["global_rank"].as_u64().unwrap())
            .or_default() += 1;
    }
    let mut kernels_got: BTreeMap<u64, u64> = BTreeMap::new();
    for r in s["ranks"].as_array().unwrap() {
        let n = r["kernels"].as_u64().unwrap_or(0);
        let by_type: u64 = r["kernels_by_type"]
            .as_object()
            .map_or(u64::MAX, |m| m.values().filter_map(Value::as_u64).sum());
        check(
            by_type == n,
            format!(
                "rank {}: kernels_by_type sums to {by_type}, kernels {n}",
                r["global_rank"]
            ),
        );
        *kernels_got
            .entry(r["global_rank"].as_u64().unwrap())
            .or_default() += n;
    }
    check(
        kernels_got == kernels_want,
        format!("kernels per rank: got {kernels_got:?}, want {kernels_want:?}"),
    );
    // Every rank that has both log operations and kernels says how its two sides were paired:
    // surely where the export names its host (in full or in capitals), less where NCCL ran in
    // a container (its id, its pids), and then a warning names both hosts.
    let named = case.config.realism.hosts != HostNaming::Container;
    let bar = if named { 0.9 } else { 0.7 };
    if !named {
        let warned = s["warnings"].as_array().unwrap().iter().any(|w| {
            let m = w["message"].as_str().unwrap_or("");
            m.contains("named by no export") && m.contains(".cluster.example.com")
        });
        check(
            warned,
            "no warning names the container's host and the node's".into(),
        );
    }
    for r in s["ranks"].as_array().unwrap() {
        let logged = r["ops_by_type"]
            .as_object()
            .is_some_and(|m| m.values().any(|n| n.as_u64() > Some(0)));
        if !logged || r["kernels"].as_u64() == Some(0) {
            continue;
        }
        let id = &r["identity"];
        let by: Vec<&str> = id["matched_by"]
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let confidence = id["confidence"].as_f64().unwrap_or(0.0);
        check(
            !by.is_empty() && confidence >= bar,
            format!("rank {}: identity {id}", r["global_rank"]),
        );
    }
    // The stamps' resolution and zone as the data shows them, and whether they were used.
    let format = case.config.realism.stamp_format(case.config.timestamps);
    let (res, zone) = match format {
        StampFormat::None | StampFormat::Inherit => (None, None),
        StampFormat::Epoch => (Some(1_000), Some(0)),
        StampFormat::BracketLocal => (
            Some(1_000_000_000),
            Some(case.config.realism.zone_offset_min),
        ),
        StampFormat::Custom => (Some(1_000_000), Some(case.config.realism.zone_offset_min)),
    };
    for r in s["ranks"].as_array().unwrap() {
        let t = &r["time"];
        if t.is_null() {
            continue;
        }
        let got = (
            t["stamp_resolution_ns"].as_i64(),
            t["stamp_zone_offset_min"].as_i64().map(|m| m as i32),
            t["stamps_used_for_alignment"].as_bool(),
        );
        let used = res.is_some_and(|r| r < 10_000_000);
        check(
            got == (res, zone, Some(used)),
            format!(
                "rank {}: time {t}, want {res:?} {zone:?} {used}",
                r["global_rank"]
            ),
        );
    }
    let (cg, cw) = (comms(&s["communicators"]), comms(&truth["communicators"]));
    check(
        cg == cw,
        format!(
            "communicators differ: extra {:?}, missing {:?}",
            cg.difference(&cw).collect::<Vec<_>>(),
            cw.difference(&cg).collect::<Vec<_>>()
        ),
    );
    let f1 = f1(&a, &truth);
    let bar = if case.fine_stamps() { 0.97 } else { 0.95 };
    check(f1 >= bar, format!("alignment F1 {f1:.3} < {bar}"));
    let clock_ns = match clock_error(&a, &truth) {
        Ok(e) => e,
        Err(e) => {
            check(false, e);
            f64::NAN
        }
    };
    check(
        clock_ns < 5_000.0,
        format!("clocks off by {clock_ns:.0} ns over the run"),
    );
    if std::env::var_os("KEEP").is_none() {
        std::fs::remove_dir_all(&dir).ok();
    } else {
        std::fs::write(dir.join("truth.json.out"), run.truth_json()).unwrap();
    }
    Outcome {
        name: case.name.clone(),
        f1,
        clock_ns,
        failures,
    }
}

#[test]
fn realism_matrix() {
    let only = std::env::var("REALISM_ONLY").unwrap_or_default();
    let cases: Vec<Case> = matrix()
        .into_iter()
        .filter(|c| c.name.contains(&only))
        .collect();
    if only.is_empty() {
        assert!(cases.len() >= 40, "only {} cases", cases.len());
    }
    // Two workers: the cases are independent and the machine has two cores.
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let halves: Vec<_> = cases
            .chunks(cases.len().div_ceil(2).max(1))
            .map(|half| s.spawn(move || half.iter().map(run_case).collect::<Vec<_>>()))
            .collect();
        halves
            .into_iter()
            .flat_map(|h| h.join().expect("a case panicked"))
            .collect()
    });
    let mut report = String::new();
    for o in &outcomes {
        report.push_str(&format!(
            "{:<48} F1 {:.3}  clocks {:>8.0} ns  {}\n",
            o.name,
            o.f1,
            o.clock_ns,
            if o.failures.is_empty() {
                "ok"
            } else {
                "FAILED"
            }
        ));
    }
    println!("{report}");
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.failures.is_empty())
        .map(|o| format!("{}:\n  {}", o.name, o.failures.join("\n  ")))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n{}",
        failed.len(),
        outcomes.len(),
        failed.join("\n")
    );
}

/// The MoE family's knobs one at a time over its plain run (all-to-all fused, EP over the DP
/// ranks), without stamps: the harder case, where only the operations' order places them. Each
/// must hold alone before they can hold together. `MOE_KNOBS=a+b` runs one combination.
#[test]
fn moe_knobs_one_at_a_time() {
    let knobs: Vec<String> = match std::env::var("MOE_KNOBS") {
        Ok(k) => vec![k],
        Err(_) => ["plain", "unlogged", "warmup", "isolated"]
            .map(String::from)
            .to_vec(),
    };
    let mut cases = Vec::new();
    for knob in &knobs {
        let mut c = family("moe");
        let r = &mut c.realism;
        let has = |k: &str| knob.split('+').any(|x| x == k);
        r.unlogged_kernels = if has("unlogged") { 2 } else { 0 };
        r.warmup_ops = if has("warmup") { 20 } else { 0 };
        r.isolated_devices = has("isolated");
        cases.push(Case {
            name: format!("moe-only-{knob}"),
            config: c,
        });
    }
    let outcomes: Vec<Outcome> = cases.iter().map(run_case).collect();
    let mut failed = Vec::new();
    for o in &outcomes {
        println!(
            "{:<30} F1 {:.3}  clocks {:>8.0} ns",
            o.name, o.f1, o.clock_ns
        );
        if !o.failures.is_empty() {
            failed.push(format!("{}:\n  {}", o.name, o.failures.join("\n  ")));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Writes `config`'s run without its truth (and, with `drop_logs`, without its logs), analyses
/// it and returns (summary, truth).
fn analysed(name: &str, config: &RunConfig, drop_logs: bool) -> (Value, Value) {
    let dir = scratch_dir(&format!("realism-{name}"));
    let run = synth::generate(config);
    synth::write_run(&run, &dir).unwrap();
    std::fs::remove_file(dir.join("truth.json")).unwrap();
    if drop_logs {
        for (file, _) in &run.files {
            std::fs::remove_file(dir.join(file)).unwrap();
        }
    }
    let a = analyze(&dir);
    std::fs::remove_dir_all(&dir).ok();
    (
        a.summary,
        serde_json::from_slice(&run.truth_json()).unwrap(),
    )
}

/// The operation a kernel's name says (the names the generator writes).
fn kernel_type(name: &str) -> &'static str {
    [
        "ReduceScatter",
        "AllReduce",
        "AllGather",
        "SendRecv",
        "Broadcast",
        "Reduce",
    ]
    .into_iter()
    .find(|op| name.contains(op))
    .unwrap_or("unknown")
}

/// Exports alone (a common case): every process with NCCL kernels is a rank row with its
/// kernels, kernels by type, busy time and, where NCCL's NVTX payloads carry them, bytes.
#[test]
fn exports_alone_show_every_process() {
    for preset in ["dp4-nvtx", "demo"] {
        let config = synth::preset(preset).unwrap().config;
        let (s, truth) = analysed(&format!("exports-alone-{preset}"), &config, true);
        let rows = s["ranks"].as_array().unwrap();
        assert_eq!(
            rows.len(),
            truth["ranks"].as_array().unwrap().len(),
            "{preset}"
        );
        for t in truth["ranks"].as_array().unwrap() {
            let row = rows
                .iter()
                .find(|r| r["host"] == t["host"] && r["pid"] == t["pid"])
                .unwrap_or_else(|| panic!("{preset}: no row for {}:{}", t["host"], t["pid"]));
            let mut want: BTreeMap<String, u64> = BTreeMap::new();
            for k in truth["kernels"].as_array().unwrap() {
                if k["pid"] == t["pid"] && k["host"] == t["host"] {
                    *want
                        .entry(kernel_type(k["name"].as_str().unwrap()).into())
                        .or_default() += 1;
                }
            }
            let got: BTreeMap<String, u64> =
                serde_json::from_value(row["kernels_by_type"].clone()).unwrap();
            assert_eq!(got, want, "{preset} {}:{}", t["host"], t["pid"]);
            assert_eq!(row["kernels"].as_u64(), Some(want.values().sum()));
            assert!(row["kernel_busy_ns"].as_i64().unwrap() > 0);
            assert_eq!(row["identity"]["export_only"], true);
            if config.emits_nccl_nvtx() {
                // NCCL's payloads give each call's bytes: the log's, had there been one.
                let bytes: BTreeMap<String, u64> =
                    serde_json::from_value(row["nvtx_bytes_by_type"].clone()).unwrap();
                let logged = t["bytes_by_type"]["AllReduce"].as_u64().unwrap();
                assert_eq!(bytes.get("AllReduce").copied(), Some(logged), "{preset}");
            }
        }
    }
}

/// Every real export (shared/fixtures/real/nsys): every NCCL kernel is under a rank, with its
/// kernels by type summing to its kernels.
#[test]
fn real_exports_put_every_nccl_kernel_under_a_rank() {
    let Some(root) = testkit::fixtures::present() else {
        return;
    };
    let dir = root.join("nsys");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sqlite"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{} real exports", files.len());
    let mut with_nccl = 0;
    for f in &files {
        let conn = rusqlite::Connection::open(f).unwrap();
        // NCCL kernels counted on the file itself: a name containing `nccl`, any case.
        let nccl: u64 = conn
            .query_row(
                "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s \
                 ON s.id = k.demangledName WHERE lower(s.value) LIKE '%nccl%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let out = scratch_dir("real-export").join("summary.json");
        let code = ncclscope_cli::run([
            "ncclscope",
            "analyze",
            "--json",
            out.to_str().unwrap(),
            f.to_str().unwrap(),
        ]);
        assert_eq!(code, ExitCode::SUCCESS);
        let s: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let name = f.file_name().unwrap().to_string_lossy();
        let mut under_ranks = 0;
        for r in s["ranks"].as_array().unwrap() {
            let n = r["kernels"].as_u64().unwrap();
            let by_type: u64 = r["kernels_by_type"]
                .as_object()
                .unwrap_or_else(|| panic!("{name}: a rank without kernels_by_type"))
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum();
            assert_eq!(by_type, n, "{name}: rank {}", r["global_rank"]);
            under_ranks += n;
        }
        assert_eq!(under_ranks, nccl, "{name}: NCCL kernels under a rank");
        assert_eq!(s["alignment"]["kernels"].as_u64(), Some(nccl), "{name}");
        with_nccl += usize::from(nccl > 0);
    }
    assert!(
        with_nccl >= 2,
        "real exports with NCCL kernels: {with_nccl}"
    );
}

/// Bad input: one node's logs and the other node's export. Each side is reported with its
/// host and the closest host of the other side; nothing is dropped (the logged processes keep
/// their operations, the exported ones their kernels) and nothing is guessed.
#[test]
fn a_node_missing_on_either_side_is_named_with_the_closest_candidate() {
    let dir = scratch_dir("realism-missing-node");
    let mut config = family("dense");
    config.realism.hosts = HostNaming::Fqdn;
    let run = synth::generate(&config);
    synth::write_run(&run, &dir).unwrap();
    std::fs::remove_file(dir.join("truth.json")).unwrap();
    // node01's logs and node02's export go.
    for (file, _) in &run.files {
        let pid: u32 = file
            .trim_end_matches(".log")
            .rsplit('_')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let on_node01 = run
            .truth
            .ranks
            .iter()
            .any(|r| r.pid == pid && r.host == "node01");
        if on_node01 {
            std::fs::remove_file(dir.join(file)).unwrap();
        }
    }
    std::fs::remove_file(dir.join("report_node02.cluster.example.com.sqlite")).unwrap();
    let s = analyze(&dir).summary;
    std::fs::remove_dir_all(&dir).ok();
    let warnings: Vec<&str> = s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["message"].as_str())
        .collect();
    let text = warnings.join("\n");
    assert!(
        text.contains("log host node02")
            && text.contains("closest export host: node01.cluster.example.com"),
        "{text}"
    );
    assert!(
        text.contains("export host node01.cluster.example.com")
            && text.contains("closest log host: node02"),
        "{text}"
    );
    // node02's processes keep their operations, node01's their kernels; no pairing between.
    let rows = s["ranks"].as_array().unwrap();
    for t in &run.truth.ranks {
        let row = rows.iter().find(|r| {
            r["pid"] == t.pid
                && (r["host"] == t.host.as_str()
                    || r["host"] == format!("{}.cluster.example.com", t.host))
        });
        let row = row.unwrap_or_else(|| panic!("no row for {}:{}", t.host, t.pid));
        if t.host == "node02" {
            let ops: u64 = row["ops_by_type"]
                .as_object()
                .unwrap()
                .values()
                .filter_map(Value::as_u64)
                .sum();
            assert_eq!(
                ops,
                t.ops_by_type.values().sum::<u64>(),
                "{}:{}",
                t.host,
                t.pid
            );
            assert_eq!(row["kernels"], 0, "{}:{}", t.host, t.pid);
        } else {
            assert_eq!(
                row["kernels"].as_u64(),
                Some(t.kernels),
                "{}:{}",
                t.host,
                t.pid
            );
            assert_eq!(row["identity"]["export_only"], true);
        }
    }
}

/// NCCL in containers on two nodes of equal work, nsys on the hosts: container ids and pids
/// tie no log host to a node, and GPUs and steps are alike on both. The data cannot decide
/// which node's export is which log host's: that is said, and no pairing claims to be sure.
#[test]
fn containers_on_two_alike_nodes_are_not_guessed() {
    let mut config = family("dp");
    config.realism.hosts = HostNaming::Container;
    config.realism.pid_namespaces = true;
    config.realism.pid_collisions = true;
    let (s, _) = analysed("two-containers", &config, false);
    let warnings: Vec<&str> = s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["message"].as_str())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|m| m.contains("equally well") || m.contains("narrowly")),
        "{warnings:?}"
    );
    for r in s["ranks"].as_array().unwrap() {
        let c = r["identity"]["confidence"].as_f64().unwrap_or(0.0);
        assert!(c <= 0.5, "rank {}: {}", r["global_rank"], r["identity"]);
    }
}

/// Whatever the names, stamps and tags, the command reads what it can, says what it could not
/// and does not panic.
#[test]
fn hostile_names_stamps_and_tags_do_not_panic() {
    let dir = scratch_dir("realism-hostile");
    let run = synth::generate(&family("dp"));
    synth::write_run(&run, &dir).unwrap();
    let weird = [
        "[9999-99-99 99:99:99] nodé-01:12:34 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0x1 [nranks=2] stream 0x1",
        "[default0]:[rank1]:(RayTrainWorker pid=x, ip=) 99999999999999999999.9 ::12:34 [0] NCCL INFO Init COMPLETE",
        "[1,0]<stdout>:<script>alert(1)</script>:12:34 [0] NCCL INFO AllReduce: opCount ffffffffffffffffffff sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0x1 [nranks=2] stream 0x1",
        "node01: node01: node01:1:1 [0] NCCL INFO 2024-13-45 25:61:61.9999999999 x",
        "\u{0}\u{7f}\u{202e}host:4294967295:4294967295 [4294967295] NCCL WARN",
        "-1.5 h:1:1 [0] NCCL INFO Broadcast: opCount 1 sendbuff (nil) recvbuff (nil) count -1 datatype 99 op 99 root -7 comm (nil) [nranks=0] stream (nil)",
    ];
    let mut text = weird.join("\n");
    text.push('\n');
    std::fs::write(dir.join("hostile.log"), text).unwrap();
    let s = analyze(&dir).summary;
    std::fs::remove_dir_all(&dir).ok();
    assert!(!s["warnings"].as_array().unwrap().is_empty());
    assert!(s["ranks"].as_array().unwrap().len() >= run.truth.ranks.len());
}
