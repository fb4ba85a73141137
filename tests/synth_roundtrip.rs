//! The generator's runs, analysed by the command, give back exactly the generator's truth:
//! per-rank operation counts and bytes per type, kernels per rank, global ranks, the
//! communicator groups, and the parallelism inferred for each communicator.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use testkit::scratch_dir;

/// What `analyze` wrote for a run.
struct Analyzed {
    summary: Value,
    /// The latest kernel end, as its own clock read it (the end of the clocks' validity span).
    last_end_ns: i64,
}

/// Runs `analyze` on a run's directory; returns the summary, and checks the Chrome trace and
/// the CSV it writes: the trace against the Trace Event Format, the CSV one row per NCCL kernel.
fn analyze(dir: &std::path::Path) -> Analyzed {
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
    let csv = std::fs::read_to_string(csv).unwrap();
    let rows: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(
        rows.len(),
        kernels + 1,
        "{}: a CSV row per NCCL kernel, plus the header",
        dir.display()
    );
    Analyzed {
        summary,
        last_end_ns: last_own_clock_end(&rows),
    }
}

/// The largest `Own Clock End (ns)` of the CSV's rows (no quoted field precedes it that holds
/// a comma other than the kernel name, so the column is found from the header by position
/// after the name's cell).
fn last_own_clock_end(rows: &[&str]) -> i64 {
    let header: Vec<&str> = rows[0].split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "Own Clock End (ns)")
        .expect("CSV column Own Clock End (ns)");
    // Counted from the end: only the kernel name (an early column) may hold quoted commas.
    let from_end = header.len() - col;
    rows[1..]
        .iter()
        .filter_map(|r| {
            let cells: Vec<&str> = r.split(',').collect();
            cells[cells.len() - from_end].parse::<i64>().ok()
        })
        .max()
        .unwrap_or(0)
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

/// Per (host, pid): the non-zero volumes of `field` by parallelism.
fn volumes(ranks: &Value, field: &str) -> BTreeMap<(String, u64), BTreeMap<String, u64>> {
    ranks
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let key = (
                r["host"].as_str().unwrap().to_string(),
                r["pid"].as_u64().unwrap(),
            );
            let v = r[field]
                .as_object()
                .unwrap_or_else(|| panic!("{field} of {key:?}"))
                .iter()
                .filter_map(|(p, b)| Some((p.clone(), b.as_u64().filter(|&b| b > 0)?)))
                .collect();
            (key, v)
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

/// How far the recovered clocks map a time from the truth's, over the run: offset error at the
/// reference time plus drift error times the span after it, per rank; and the worst drift error.
struct ClockErrors {
    worst_mapping_ns: f64,
    worst_drift_ppm: f64,
}

/// Compares the summary's clocks with the truth's per-node clocks. The truth gives each node's
/// report clock as `s + offset_ns + drift_ppm·1e−6·s` (s = true time since capture start); the
/// summary gives each rank against the reference rank at `reference_ns` on the reference clock.
fn clock_errors(name: &str, a: &Analyzed, truth: &Value) -> ClockErrors {
    let clocks = &a.summary["clocks"];
    let node = |host: &str| -> (f64, f64) {
        let c = truth["clocks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["host"] == host)
            .unwrap_or_else(|| panic!("{name}: no truth clock for {host}"));
        (
            c["offset_ns"].as_f64().unwrap(),
            c["drift_ppm"].as_f64().unwrap(),
        )
    };
    let host_of = |rank: u64| -> String {
        let r = truth["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["global_rank"].as_u64() == Some(rank))
            .unwrap();
        r["host"].as_str().unwrap().to_string()
    };
    let reference_ns = clocks["reference_ns"].as_f64().unwrap();
    let (off_a, drift_a) = node(&host_of(clocks["reference_rank"].as_u64().unwrap()));
    let span = (a.last_end_ns as f64 - reference_ns).max(0.0);
    let mut errors = ClockErrors {
        worst_mapping_ns: 0.0,
        worst_drift_ppm: 0.0,
    };
    let ranks = clocks["ranks"].as_array().unwrap();
    assert!(!ranks.is_empty(), "{name}: no clock estimates");
    for r in ranks {
        let (off_b, drift_b) = node(&host_of(r["global_rank"].as_u64().unwrap()));
        let drift = drift_b - drift_a;
        let expect = off_b - off_a + drift * 1e-6 * (reference_ns - off_a);
        let off_err = (r["offset_ns"].as_f64().unwrap() - expect).abs();
        let drift_err = (r["drift_ppm"].as_f64().unwrap() - drift).abs();
        errors.worst_mapping_ns = errors
            .worst_mapping_ns
            .max(off_err + drift_err * 1e-6 * span);
        errors.worst_drift_ppm = errors.worst_drift_ppm.max(drift_err);
    }
    errors
}

/// Writes `config`'s run, analyses it without its truth, and checks the summary against the
/// truth; returns both.
fn round_trip(name: &str, config: &synth::RunConfig) -> (Analyzed, Value) {
    let dir = scratch_dir(&format!("roundtrip-{name}"));
    let run = synth::generate(config);
    synth::write_run(&run, &dir).unwrap();
    let truth: Value = serde_json::from_slice(&run.truth_json()).unwrap();
    std::fs::remove_file(dir.join("truth.json")).unwrap();
    let analyzed = analyze(&dir);
    check_summary(name, &analyzed.summary, &truth);
    if std::env::var_os("KEEP").is_none() {
        std::fs::remove_dir_all(&dir).ok();
    }
    (analyzed, truth)
}

fn check_summary(name: &str, summary: &Value, truth: &Value) {
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
    // Observed link traffic per rank and parallelism equals what the generator's log shows.
    assert_eq!(
        volumes(&summary["ranks"], "volume_by_parallelism"),
        volumes(&truth["ranks"], "log_volume_by_parallelism"),
        "{name}: observed volume per rank and parallelism"
    );
}

/// Every preset small enough to write in memory (the streamed benchmark presets have their own
/// test): counts, bytes, kernels, communicator groups, parallelism, and clocks that map every
/// rank's times onto the reference rank's within 1 µs over the run.
#[test]
fn every_preset_round_trips() {
    let presets: Vec<synth::Preset> = synth::presets()
        .into_iter()
        .filter(|p| p.config.layout.world() < synth::write::STREAMING_MIN_RANKS)
        .collect();
    assert!(presets.len() >= 15, "only {} presets", presets.len());
    // Two workers: the presets are independent and the machine has two cores.
    std::thread::scope(|s| {
        for half in presets.chunks(presets.len().div_ceil(2)) {
            s.spawn(move || {
                for preset in half {
                    let (analyzed, truth) = round_trip(preset.name, &preset.config);
                    let e = clock_errors(preset.name, &analyzed, &truth);
                    assert!(
                        e.worst_mapping_ns < 1_000.0,
                        "{}: clocks off by up to {:.0} ns over the run",
                        preset.name,
                        e.worst_mapping_ns
                    );
                }
            });
        }
    });
}

/// A two-node run long enough (~1 s, ~100 collectives per communicator) for drift to show above
/// the kernels' sub-µs end jitter: offsets within 1 µs and drift within 1 ppm of the truth.
#[test]
fn clocks_recovered_on_a_long_two_node_run() {
    let mut config = synth::preset("demo").unwrap().config;
    config.model.iterations = 100;
    let (analyzed, truth) = round_trip("demo-long", &config);
    let e = clock_errors("demo-long", &analyzed, &truth);
    assert!(
        e.worst_mapping_ns < 1_000.0 && e.worst_drift_ppm < 1.0,
        "offset/mapping error {:.0} ns, drift error {:.3} ppm",
        e.worst_mapping_ns,
        e.worst_drift_ppm
    );
}

/// The presets the generator streams (64 ranks and more): `huge-1024` whole, and `large-64`'s
/// layout (TP8 PP2 DP4 on 8 nodes) over two iterations instead of its benchmark's 590. Counts,
/// bytes, kernels, communicator groups and parallelism match the truth.
#[test]
fn streamed_presets_round_trip() {
    for (name, iterations) in [("huge-1024", None), ("large-64", Some(2))] {
        let mut config = synth::preset(name).unwrap().config;
        if let Some(n) = iterations {
            config.model.iterations = n;
        }
        let dir = scratch_dir(&format!("roundtrip-{name}"));
        synth::write_streaming(&config, Some(name), &dir).unwrap();
        let truth: Value =
            serde_json::from_slice(&std::fs::read(dir.join("truth.json")).unwrap()).unwrap();
        std::fs::remove_file(dir.join("truth.json")).unwrap();
        let analyzed = analyze(&dir);
        check_summary(name, &analyzed.summary, &truth);
        let alignment = &analyzed.summary["alignment"];
        assert_eq!(
            alignment["matched"], alignment["kernels"],
            "{name}: every kernel of a run without imperfections is matched"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// Arrival skew per communicator equals what the generator's true kernel starts give: each
/// kernel start read from its node's report, brought back to true time with the truth's clock
/// of that node, grouped into instances by the truth's (communicator pointer, opCount). The
/// summary's mean skew (from aligned kernels in synchronised time) is within 1 µs of it.
#[test]
fn arrival_skew_matches_the_true_start_times() {
    let config = synth::preset("demo").unwrap().config;
    let dir = scratch_dir("skew-demo");
    let run = synth::generate(&config);
    synth::write_run(&run, &dir).unwrap();
    std::fs::remove_file(dir.join("truth.json")).unwrap();
    let summary = analyze(&dir).summary;

    // (pid, correlation id) → true start, ns since capture start.
    let mut true_start: BTreeMap<(u32, u32), f64> = BTreeMap::new();
    for rep in &run.reports {
        let clock = run
            .truth
            .clocks
            .iter()
            .find(|c| c.host == rep.host)
            .unwrap();
        for k in &rep.kernels {
            let s = (k.start_ns - clock.offset_ns) as f64 / (1.0 + clock.drift_ppm * 1e-6);
            true_start.insert((k.pid, k.correlation_id), s);
        }
    }
    let mut checked = 0;
    for comm in &run.truth.communicators {
        // opCount → the members' true starts.
        let mut instances: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        for k in &run.truth.kernels {
            let Some(op) = &k.log_op else { continue };
            if k.name.contains("SendRecv") || !comm.pointers.contains(&op.comm) {
                continue;
            }
            if let Some(&t) = true_start.get(&(k.pid, k.correlation_id)) {
                instances.entry(op.op_count).or_default().push(t);
            }
        }
        let skews: Vec<f64> = instances
            .values()
            .filter(|v| v.len() >= 2)
            .map(|v| {
                v.iter().cloned().fold(f64::MIN, f64::max)
                    - v.iter().cloned().fold(f64::MAX, f64::min)
            })
            .collect();
        if skews.len() < 20 {
            continue;
        }
        let expect_us = skews.iter().sum::<f64>() / skews.len() as f64 / 1e3;
        let entry = summary["communicators"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == comm.id.as_str())
            .unwrap_or_else(|| panic!("communicator {} in the summary", comm.id));
        let got_us = entry["arrival_skew"]["mean_us"].as_f64().unwrap();
        assert!(
            (got_us - expect_us).abs() < 1.0,
            "{} {:?}: mean arrival skew {got_us:.3} µs, truth {expect_us:.3} µs",
            comm.parallelism,
            comm.global_ranks
        );
        checked += 1;
    }
    assert!(
        checked >= 4,
        "only {checked} communicators with enough instances"
    );
}

/// One export per rank (as per-process `nsys profile` runs write them) from two nodes: each
/// export names its host, and the summary still equals the truth.
#[test]
fn per_rank_exports_round_trip() {
    let mut config = synth::preset("demo").unwrap().config;
    config.report_per_rank = true;
    let dir = scratch_dir("per-rank-files");
    synth::write_run(&synth::generate(&config), &dir).unwrap();
    let reports = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sqlite")
        })
        .count();
    assert_eq!(reports as u32, config.layout.world(), "one export per rank");
    round_trip("demo-per-rank", &config);
}

/// Symmetric kernels (2.27) and launcher-tagged lines go through the whole command like the rest.
#[test]
fn symmetric_kernels_and_launcher_tags_round_trip() {
    let mut sym = synth::preset("tp4-sym").unwrap().config;
    sym.model.iterations = 1;
    // Not the preset's own name: `every_preset_round_trips` runs "tp4-sym" at the same time, and
    // the name is the scratch directory, which each run empties first.
    round_trip("tp4-sym-1it", &sym);
    let mut tagged = synth::preset("tp2pp2").unwrap().config;
    tagged.model.iterations = 2;
    for l in [
        synth::Launcher::Torchrun,
        synth::Launcher::Srun,
        synth::Launcher::Mpirun,
    ] {
        tagged.launcher = l;
        round_trip(&format!("tp2pp2-{}", l.name()), &tagged);
    }
}
