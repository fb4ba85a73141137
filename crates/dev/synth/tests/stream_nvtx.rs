//! The streaming writer against the in-memory one, the scale presets' sizes, and NCCL's NVTX
//! payloads decoded the way a reader of a real export must (by the schema entries' offsets).

use rusqlite::Connection;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use synth::{generate_named, preset, write_run, write_streaming};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("synth-stream-{}-{}", name, std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn truth(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("truth.json")).unwrap()).unwrap()
}

/// (globalPid, correlationId, start, end, shortName) of every kernel of a report.
fn kernels(path: &Path) -> BTreeSet<(i64, i64, i64, i64, String)> {
    let c = Connection::open(path).unwrap();
    let mut st = c
        .prepare("SELECT k.globalPid, k.correlationId, k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName")
        .unwrap();
    let rows = st
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

#[test]
fn streaming_writes_what_the_in_memory_path_writes() {
    // Two nodes, per-process logs, several imperfections.
    let mut cfg = preset("demo").unwrap().config;
    cfg.combined_log = false;
    cfg.model.iterations = 1;
    let (a, b) = (tmp("stream"), tmp("memory"));
    let st = write_streaming(&cfg, Some("demo"), &a).unwrap();
    let run = generate_named(&cfg, Some("demo"));
    write_run(&run, &b).unwrap();
    assert_eq!(st.ranks, 8);
    for (name, bytes) in &run.files {
        assert_eq!(&std::fs::read(a.join(name)).unwrap(), bytes, "{name}");
    }
    for h in ["node01", "node02"] {
        let f = format!("report_{h}.sqlite");
        let (ka, kb) = (kernels(&a.join(&f)), kernels(&b.join(&f)));
        assert!(!ka.is_empty());
        assert_eq!(ka, kb, "{f}");
    }
    let (ta, tb) = (truth(&a), truth(&b));
    for key in [
        "ranks",
        "communicators",
        "clocks",
        "files",
        "unmatched_log_ops",
        "unmatched_kernels",
        "layout",
        "model",
        "nccl_version",
    ] {
        assert_eq!(ta[key], tb[key], "{key}");
    }
    assert_eq!(ta["kernels_compact"], Value::Bool(true));
    // Compact kernels keep the contract fields.
    let contract = |k: &Value| {
        (
            k["pid"].as_u64().unwrap(),
            k["correlation_id"].as_u64().unwrap(),
            k["log_op"].to_string(),
        )
    };
    let ka: Vec<_> = ta["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(contract)
        .collect();
    let kb: Vec<_> = tb["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(contract)
        .collect();
    assert_eq!(ka.len() as u64, st.kernels);
    assert_eq!(ka, kb);
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn scale_presets_have_the_benchmark_sizes() {
    let p = preset("large-64").unwrap().config;
    assert_eq!(p.layout.world(), 64);
    let comms = synth::comms::Comms::build(&p.layout, p.seed);
    // Every rank: at least 10⁵ operations.
    for r in 0..64 {
        let ops: usize = synth::schedule::build(&p.layout, &p.model, &comms, r)
            .iter()
            .map(|c| c.ops.len())
            .sum();
        assert!((100_000..112_000).contains(&ops), "rank {r}: {ops} ops");
    }
    assert_eq!(preset("huge-1024").unwrap().config.layout.world(), 1024);
    // The largest layout: 1024 nodes × 8 GPUs.
    let h = preset("huge-8192").unwrap().config;
    assert_eq!(
        (h.layout.world(), h.nodes, h.gpus_per_node),
        (8192, 1024, 8)
    );
}

/// (type, name, offset) of a schema entry as the export lists it.
type SchemaEntry = (i64, String, usize);

fn le(b: &[u8], off: usize, n: usize) -> u64 {
    let mut v = [0u8; 8];
    v[..n].copy_from_slice(&b[off..off + n]);
    u64::from_le_bytes(v)
}

#[test]
fn nccl_nvtx_payloads_decode_by_their_schema_entries() {
    let mut cfg = preset("dp4-nvtx").unwrap().config;
    cfg.model.iterations = 1;
    assert!(cfg.emits_nccl_nvtx());
    let run = generate_named(&cfg, Some("dp4-nvtx"));
    let dir = tmp("nvtx");
    write_run(&run, &dir).unwrap();
    let c = Connection::open(dir.join("report_node01.sqlite")).unwrap();

    // Schema tables, one registration per process.
    let n_schemas: i64 = c
        .query_row(
            "SELECT count(*) FROM NVTX_PAYLOAD_SCHEMAS WHERE domainId = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n_schemas, 4 * synth::ncclnvtx::SCHEMAS.len() as i64);
    let domain: String = c
        .query_row(
            "SELECT text FROM NVTX_EVENTS WHERE eventType = 75 AND domainId = 1 LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(domain, "NCCL");
    // schemaId -> (payloadSize, [(type, name, offset)])
    let mut schemas: HashMap<i64, (usize, Vec<SchemaEntry>)> = HashMap::new();
    for row in c
        .prepare("SELECT DISTINCT schemaId, payloadSize FROM NVTX_PAYLOAD_SCHEMAS")
        .unwrap()
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
        .unwrap()
    {
        let (id, size) = row.unwrap();
        let entries = c
            .prepare("SELECT DISTINCT idx, type, name, COALESCE(offset, 0) FROM NVTX_PAYLOAD_SCHEMA_ENTRIES WHERE schemaId = ?1 ORDER BY idx")
            .unwrap()
            .query_map([id], |r| Ok((r.get::<_, i64>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)? as usize)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        schemas.insert(id, (size as usize, entries));
    }
    // AllReduce as in the real export: comm u64 at 0, size at 8, reduction enum at 16.
    let ar = &schemas[&(synth::ncclnvtx::schema_of("ncclAllReduce").unwrap().id as i64)];
    assert_eq!(ar.0, 24);
    assert_eq!(
        ar.1.iter().map(|e| (e.0, e.2)).collect::<Vec<_>>(),
        vec![(18, 0), (22, 8), (16777232, 16)]
    );

    let comm_ids: BTreeSet<u64> = run
        .truth
        .communicators
        .iter()
        .map(|c| u64::from_str_radix(c.id.trim_start_matches("0x"), 16).unwrap())
        .collect();
    let mut per_fn: HashMap<String, u64> = HashMap::new();
    let mut bytes_per_fn: HashMap<String, u64> = HashMap::new();
    let mut st = c
        .prepare("SELECT s.value, e.binaryData FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId WHERE e.domainId = 1 AND e.eventType = 59")
        .unwrap();
    let rows = st
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<Vec<u8>>>(1)?))
        })
        .unwrap();
    for row in rows {
        let (name, blob) = row.unwrap();
        *per_fn.entry(name.clone()).or_default() += 1;
        let Some(blob) = blob else {
            assert!(name.starts_with("ncclGroup"), "{name} without payload");
            continue;
        };
        let sc = synth::ncclnvtx::schema_of(&name).unwrap();
        let (size, entries) = &schemas[&(sc.id as i64)];
        assert_eq!(blob.len(), *size, "{name}");
        for (ty, field, off) in entries {
            let v = match ty {
                18 | 22 => le(&blob, *off, 8),
                _ => le(&blob, *off, 4),
            };
            match field.as_str() {
                "NCCL communicator ID" => assert!(comm_ids.contains(&v), "{name}: comm {v:x}"),
                "Message size [bytes]" => *bytes_per_fn.entry(name.clone()).or_default() += v,
                "Reduction operation" => assert!(v <= 4, "{name}: op {v}"),
                "No. of ranks" => assert!((1..=4).contains(&v)),
                _ => {}
            }
        }
    }
    // One range per logged operation (nothing dropped in dp4): counts and bytes match the truth.
    let node_ranks: Vec<_> = run.truth.ranks.iter().collect();
    for (op, f) in [
        ("AllReduce", "ncclAllReduce"),
        ("AllGather", "ncclAllGather"),
        ("Broadcast", "ncclBroadcast"),
    ] {
        let ops: u64 = node_ranks.iter().map(|r| r.ops_by_type[op]).sum();
        let bytes: u64 = node_ranks.iter().map(|r| r.bytes_by_type[op]).sum();
        assert_eq!(per_fn.get(f).copied().unwrap_or(0), ops, "{f}");
        assert_eq!(bytes_per_fn.get(f).copied().unwrap_or(0), bytes, "{f}");
    }
    assert!(per_fn["ncclCommInitRankConfig"] >= 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nccl_nvtx_is_off_by_default_and_where_the_export_lacks_it() {
    let mut cfg = preset("dp4").unwrap().config;
    assert!(!cfg.emits_nccl_nvtx());
    cfg.nccl_nvtx = true;
    cfg.schema = synth::Schema::V3_17;
    assert!(!cfg.emits_nccl_nvtx());
    cfg.model.iterations = 1;
    let run = synth::generate(&cfg);
    assert!(run.reports.iter().all(|r| r.nccl_nvtx.is_empty()));
}

/// `cargo test --release -p synth --test stream_nvtx -- --ignored --nocapture`: the benchmark
/// (large-64 streamed; run under `/usr/bin/time -v` for peak RSS).
#[test]
#[ignore]
fn benchmark_large_64() {
    let dir = tmp("large64");
    let st = synth::write_preset_streaming("large-64", &dir).unwrap();
    println!("{st:#?}");
    println!(
        "log text: {:.1} s per GB",
        st.generate_time.as_secs_f64() / (st.log_bytes as f64 / 1e9)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `huge-8192` streamed: one log per rank, one report per node, and a truth whose ranks and
/// communicators cover all 8192 ranks (about a minute and 1.7 GB of disk in release; ignored).
#[test]
#[ignore]
fn huge_8192_streams() {
    let dir = tmp("huge8192");
    let st = synth::write_preset_streaming("huge-8192", &dir).unwrap();
    println!("{st:#?}");
    assert_eq!(st.ranks, 8192);
    let t = truth(&dir);
    let ranks = t["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 8192);
    assert!(ranks
        .iter()
        .all(|r| r["ops_by_type"]["AllReduce"].as_u64().unwrap() > 0));
    let logs = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".log")
        })
        .count();
    assert_eq!(logs, 8192);
    assert!(dir.join("report_node1024.sqlite").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every NCCL minor version 2.18–2.28 generates, with its kernel-name family and tuning format.
#[test]
fn every_nccl_version_from_2_18_to_2_28_is_selectable() {
    assert_eq!(synth::logfmt::NCCL_VERSIONS.len(), 11);
    for ver in synth::logfmt::NCCL_VERSIONS {
        let minor: u32 = ver.split('.').nth(1).unwrap().parse().unwrap();
        let mut c = preset("dp4").unwrap().config;
        c.model.iterations = 1;
        c.nccl_version = ver.into();
        let run = synth::generate(&c);
        assert_eq!(run.truth.nccl_version, ver);
        let text = String::from_utf8_lossy(&run.files[0].1).to_string();
        assert!(text.contains(&format!("NCCL version {ver}+cuda")), "{ver}");
        let k = &run.reports[0].kernels;
        let nccl: Vec<_> = k.iter().filter(|k| k.short.starts_with("nccl")).collect();
        assert!(!nccl.is_empty());
        for k in &nccl {
            let family = if minor >= 19 {
                "ncclDevKernel_"
            } else {
                "ncclKernel_"
            };
            assert!(k.short.starts_with(family), "{ver}: {}", k.short);
            assert_eq!(
                k.demangled.contains("ncclDevKernelArgsStorage"),
                minor >= 22,
                "{ver}"
            );
        }
        let tuning = text.lines().find(|l| l.contains("Bytes -> Algo"));
        match minor {
            18 | 19 => assert!(tuning.is_none(), "{ver}"),
            20..=22 => assert!(
                tuning.unwrap().contains("INFO ") && tuning.unwrap().contains(" time "),
                "{ver}"
            ),
            23 => assert!(
                tuning.unwrap().contains(": ") && tuning.unwrap().contains(" time "),
                "{ver}"
            ),
            _ => assert!(tuning.unwrap().contains("channel{Lo..Hi}"), "{ver}"),
        }
        let init = text.lines().find(|l| l.contains("Init COMPLETE")).unwrap();
        assert_eq!(init.contains("ncclCommInitRank comm"), minor >= 22, "{ver}");
    }
}
