//! The exports on whole synthetic runs (`synth` presets): the trace validates, every NCCL kernel
//! of the exports is on track 1 exactly once, matched kernels are the aligner's, and the
//! figures of the thesis' figure 4.2 come out.

use export::chrome_trace::{CAT_KERNEL, TID_NCCL, TID_PARALLELISM};
use export::fields::*;
use load::Session;
use pipeline::{analyse, UserSizes};
use serde_json::Value;
use std::collections::BTreeMap;

fn session_of(preset: &str) -> Session {
    let run = synth::generate(&synth::preset(preset).expect("preset").config);
    let dir = std::env::temp_dir().join(format!("export-test-{preset}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // The run's logs and one SQLite report per node, as the command would find them.
    synth::write_run(&run, &dir).expect("write run");
    let (session, _) = testkit::sessions::load_paths(std::slice::from_ref(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    session
}

fn kernel_events(trace: &Value) -> Vec<&Value> {
    trace["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == TID_NCCL && e["cat"] == CAT_KERNEL)
        .collect()
}

/// Every check that holds for any preset; returns the kernel events' args for more.
fn check(preset: &str) -> (Session, Value) {
    let session = session_of(preset);
    let analysis = analyse(&session, &UserSizes::default());
    let trace = export::chrome_trace(&session, &analysis);
    export::validate_trace(&trace).unwrap_or_else(|e| panic!("{preset}: {e}"));

    let kernels: usize = session
        .exports()
        .iter()
        .map(|e| e.export.kernels.len())
        .sum();
    assert!(kernels > 0, "{preset}: no kernels");
    let events = kernel_events(&trace);
    assert_eq!(events.len(), kernels, "{preset}: one event per NCCL kernel");

    let matched: u64 = analysis
        .alignments
        .processes
        .iter()
        .map(|p| p.matched_kernels())
        .sum();
    let matched_events = events
        .iter()
        .filter(|e| e["args"][MATCH] == MATCHED)
        .count();
    assert_eq!(matched_events as u64, matched, "{preset}: matched kernels");
    let parallelism_events = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == TID_PARALLELISM)
        .count();
    assert_eq!(
        parallelism_events as u64, matched,
        "{preset}: parallelism track"
    );

    // Unmatched kernels keep their timing and have no log-derived field.
    for e in events.iter().filter(|e| e["args"][MATCH] == UNMATCHED) {
        assert!(e["dur"].as_f64().unwrap() >= 0.0);
        assert!(e["args"][ELEMENT_COUNT].is_null());
        assert!(e["args"][COMMUNICATOR_PTR].is_null());
    }

    // Message size = count × sizeof(datatype) of the matched (single) log op.
    let by_kernel: BTreeMap<(String, u64, u64), &Value> = events
        .iter()
        .map(|e| {
            let a = &e["args"];
            let key = (
                a[HOST].as_str().unwrap().to_string(),
                a[PROCESS_ID].as_u64().unwrap(),
                a[CUDA_CORRELATION_ID].as_u64().unwrap(),
            );
            (key, a)
        })
        .collect();
    let mut checked = 0;
    for pm in &analysis.alignments.processes {
        for (k, m) in pm.kernels.iter().zip(&pm.alignment.per_kernel) {
            let Some(m) = m else { continue };
            if m.log_ops.len() != 1 {
                continue;
            }
            let op = pm.log_ops.get(m.first_line()).expect("a matched line");
            let key = (
                pm.process.host.to_string(),
                pm.process.pid as u64,
                k.correlation_id as u64,
            );
            let a = by_kernel[&key];
            let size = op.datatype.expect("datatype").size_bytes();
            assert_eq!(a[MESSAGE_SIZE_BYTES].as_u64(), Some(op.count * size));
            assert_eq!(a[ELEMENT_COUNT].as_u64(), Some(op.count));
            assert_eq!(a[OP_COUNT_HEX], format!("{:x}", op.op_count));
            checked += 1;
        }
    }
    assert!(checked > 0, "{preset}: no single-op match checked");

    // The CSV: header plus one line per kernel, every line the header's width.
    let csv = export::enriched_csv(&session, &analysis);
    let rows = parse_csv(&csv);
    assert_eq!(rows.len(), kernels + 1, "{preset}: csv rows");
    assert!(rows.iter().all(|r| r.len() == rows[0].len()));
    for f in CONTRACT_FIELDS {
        assert!(rows[0].iter().any(|h| h == f), "csv header lacks {f}");
    }
    (session, trace)
}

/// A minimal RFC 4180 reader for the tests.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

#[test]
fn dp4_trace_and_figure_4_2_bus_factor() {
    let (_, trace) = check("dp4");
    let ring_allreduce: Vec<&Value> = kernel_events(&trace)
        .into_iter()
        .filter(|e| {
            e["name"] == "AllReduce"
                && e["args"][NCCL_ALGORITHM] == "RING"
                && e["args"][COMMUNICATOR_SIZE] == 4
        })
        .collect();
    assert!(!ring_allreduce.is_empty(), "no 4-rank ring AllReduce");
    for e in &ring_allreduce {
        assert_eq!(e["args"][BUS_FACTOR].as_f64(), Some(1.5));
        let (algo, bus) = (
            e["args"][ALGO_BW].as_f64().unwrap(),
            e["args"][BUS_BW].as_f64().unwrap(),
        );
        assert!((bus - 1.5 * algo).abs() <= 1e-9 * bus.max(1.0));
    }
}

#[test]
fn tp2pp2_trace() {
    check("tp2pp2");
}

#[test]
fn demo_trace() {
    let (session, trace) = check("demo");
    // Two nodes: ranks on both hosts, every rank named after its host.
    let hosts: std::collections::BTreeSet<&str> = kernel_events(&trace)
        .iter()
        .filter_map(|e| e["args"][HOST].as_str())
        .collect();
    assert!(hosts.len() >= 2, "{hosts:?}");
    let nvtx: usize = session.exports().iter().map(|e| e.export.nvtx.len()).sum();
    if nvtx > 0 {
        let on_tracks = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["tid"].as_u64().unwrap() >= 3 && e["ph"] != "M")
            .count();
        assert!(on_tracks > 0, "NVTX ranges missing");
    }
}

#[test]
fn csv_survives_a_hostile_kernel_name() {
    let hostile = "ncclDevKernel_X<int, \"q\">(a,\nb)";
    let line = [export::csv_field(hostile), export::csv_field("plain")].join(",");
    let rows = parse_csv(&format!("{line}\r\n"));
    assert_eq!(rows, vec![vec![hostile.to_string(), "plain".to_string()]]);
}

#[test]
fn csv_rows_keep_their_width_with_a_hostile_kernel() {
    let hostile = "ncclKernel<a, \"b\">(x,\ny)";
    let mut args = serde_json::Map::new();
    args.insert(CUDA_KERNEL.to_string(), Value::from(hostile));
    args.insert(HOST.to_string(), Value::from("node,01"));
    let records = export::Records {
        kernels: vec![export::KernelRecord {
            rank: 0,
            start_ns: 10,
            end_ns: 30,
            name: "Send, \"odd\"".into(),
            matched: false,
            parallelism: None,
            args,
        }],
        ..export::Records::default()
    };
    let rows = parse_csv(&export::csv::csv_of(&records));
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].len(), rows[1].len());
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    assert_eq!(rows[1][col(CUDA_KERNEL)], hostile);
    assert_eq!(rows[1][col(HOST)], "node,01");
    assert_eq!(rows[1][col(NAME)], "Send, \"odd\"");
    assert_eq!(rows[1][col(DURATION_NS)], "20");
}
