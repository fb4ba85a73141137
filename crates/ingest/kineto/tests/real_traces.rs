//! The reader against an independent one on every real trace: the same file read whole as a
//! `serde_json::Value` (the plain way, nothing shared with the reader), and the NCCL kernels,
//! their meaning, the process groups, the steps and the event counts compared.

use ingest_kineto::{parse_bytes, KinetoStream, KinetoTrace, MetaSource};
use model::{DataType, OpType};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

fn traces() -> Vec<PathBuf> {
    testkit::fixtures::files("kineto", "gz")
}

fn inflate(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("the fixtures are whole gzip files");
    out
}

struct Both {
    name: String,
    mine: KinetoTrace,
    doc: Value,
}

fn read(path: &Path) -> Both {
    let gz = std::fs::read(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let mine = parse_bytes(&name, &gz);
    let doc: Value = serde_json::from_slice(&inflate(&gz)).unwrap();
    Both { name, mine, doc }
}

fn events(doc: &Value) -> &Vec<Value> {
    doc["traceEvents"].as_array().unwrap()
}

/// The independent reader's NCCL kernels: events of `cat` "kernel" whose name contains `nccl`.
fn nccl_kernels(doc: &Value) -> Vec<&Value> {
    events(doc)
        .iter()
        .filter(|e| {
            e["cat"] == "kernel"
                && e["name"]
                    .as_str()
                    .is_some_and(|n| n.to_lowercase().contains("nccl"))
        })
        .collect()
}

#[test]
fn every_nccl_kernel_per_name_as_an_independent_reader_counts() {
    let paths = traces();
    if paths.is_empty() {
        return;
    }
    assert_eq!(paths.len(), 12, "the fixtures SOURCES.md lists");
    for path in paths {
        let b = read(&path);
        let mut want: BTreeMap<String, u64> = BTreeMap::new();
        for k in nccl_kernels(&b.doc) {
            *want
                .entry(k["name"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
        let mut got: BTreeMap<String, u64> = BTreeMap::new();
        for k in &b.mine.kernels {
            *got.entry(k.name.to_string()).or_default() += 1;
        }
        assert_eq!(got, want, "{}", b.name);
        assert!(
            !want.is_empty(),
            "{}: every fixture has NCCL kernels",
            b.name
        );
        assert_eq!(
            b.mine.counts.nccl_kernels,
            want.values().sum::<u64>(),
            "{}",
            b.name
        );
        assert!(b.mine.complete, "{}: {:?}", b.name, b.mine.diagnostics);
        assert!(
            b.mine.diagnostics.is_empty(),
            "{}: a whole real trace reads without a finding: {:?}",
            b.name,
            b.mine.diagnostics
        );
    }
}

/// Times in nanoseconds as the digits say (the independent reader's f64 is within a
/// nanosecond), devices, streams, correlation ids.
#[test]
fn kernel_timing_and_identity_match() {
    for path in traces() {
        let b = read(&path);
        let base = b.doc["baseTimeNanoseconds"].as_i64().unwrap_or(0);
        let mut want: Vec<(u64, i64, i64, u64, u64)> = nccl_kernels(&b.doc)
            .iter()
            .map(|k| {
                // Whole microseconds are exact in the independent reader; fractions are f64.
                let ns = |v: &Value| match v.as_i64() {
                    Some(us) => us * 1000,
                    None => (v.as_f64().unwrap() * 1000.0).round() as i64,
                };
                let (ts, dur) = (ns(&k["ts"]), ns(&k["dur"]));
                let a = &k["args"];
                (
                    a["correlation"].as_u64().unwrap(),
                    base + ts,
                    base + ts + dur,
                    a["device"].as_u64().unwrap(),
                    a["stream"].as_u64().unwrap(),
                )
            })
            .collect();
        want.sort();
        let mut got: Vec<(u64, i64, i64, u64, u64)> = b
            .mine
            .kernels
            .iter()
            .map(|k| {
                (
                    k.correlation,
                    k.start_ns,
                    k.end_ns,
                    u64::from(k.device),
                    u64::from(k.stream),
                )
            })
            .collect();
        got.sort();
        assert_eq!(got.len(), want.len(), "{}", b.name);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((g.0, g.3, g.4), (w.0, w.3, w.4), "{}", b.name);
            // Within the f64's last place where the independent reader went through one.
            let ulp = |t: i64| ((t - base) as f64 * f64::EPSILON).ceil() as i64 + 1;
            assert!(
                (g.1 - w.1).abs() <= ulp(w.1) && (g.2 - w.2).abs() <= 2 * ulp(w.2),
                "{}: {g:?} {w:?}",
                b.name
            );
        }
        // Start order.
        assert!(b
            .mine
            .kernels
            .windows(2)
            .all(|w| w[0].start_ns <= w[1].start_ns));
    }
}

/// `distributedInfo` as the document has it, every process group included.
#[test]
fn distributed_info_and_process_groups_match() {
    for path in traces() {
        let b = read(&path);
        let want = &b.doc["distributedInfo"];
        let d = b
            .mine
            .distributed
            .as_ref()
            .expect("every fixture has distributedInfo");
        assert_eq!(d.rank.map(u64::from), want["rank"].as_u64(), "{}", b.name);
        assert_eq!(
            d.world_size.map(u64::from),
            want["world_size"].as_u64(),
            "{}",
            b.name
        );
        assert_eq!(d.backend.as_deref(), want["backend"].as_str(), "{}", b.name);
        assert_eq!(
            d.nccl_version.as_deref(),
            want["nccl_version"].as_str(),
            "{}",
            b.name
        );
        let groups = want["pg_config"].as_array().cloned().unwrap_or_default();
        assert_eq!(d.pg_config.len(), groups.len(), "{}", b.name);
        for (g, w) in d.pg_config.iter().zip(&groups) {
            assert_eq!(Some(g.name.as_str()), w["pg_name"].as_str());
            assert_eq!(g.desc.as_deref(), w["pg_desc"].as_str());
            assert_eq!(g.size.map(u64::from), w["pg_size"].as_u64());
            let ranks: Vec<u32> = w["ranks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_u64().unwrap() as u32)
                .collect();
            assert_eq!(g.ranks, ranks);
        }
    }
}

/// Where a kernel carries every NCCL argument (HTA's and TraceLens' single ranks), the reader
/// takes them from the kernel, exactly.
#[test]
fn kernels_with_every_argument_keep_them() {
    for path in traces() {
        let b = read(&path);
        let with_args: Vec<&Value> = nccl_kernels(&b.doc)
            .into_iter()
            .filter(|k| k["args"]["Collective name"].is_string())
            .collect();
        if with_args.is_empty() {
            continue;
        }
        assert_eq!(
            with_args.len(),
            b.mine.kernels.len(),
            "{}: all or none",
            b.name
        );
        for w in with_args {
            let a = &w["args"];
            let corr = a["correlation"].as_u64().unwrap();
            let k = b
                .mine
                .kernels
                .iter()
                .find(|k| k.correlation == corr)
                .unwrap();
            let c = &k.coll;
            assert_eq!(c.source, Some(MetaSource::KernelArgs));
            assert_eq!(c.name.as_deref(), a["Collective name"].as_str());
            assert_eq!(c.in_nelems, a["In msg nelems"].as_u64());
            assert_eq!(c.out_nelems, a["Out msg nelems"].as_u64());
            assert_eq!(c.group_size.map(u64::from), a["Group size"].as_u64());
            assert_eq!(c.dtype_name.as_deref(), a["dtype"].as_str());
            assert_eq!(c.pg_name.as_deref(), a["Process Group Name"].as_str());
            assert_eq!(
                c.pg_desc.as_deref(),
                a["Process Group Description"].as_str()
            );
            let ranks: Vec<u32> =
                serde_json::from_str(a["Process Group Ranks"].as_str().unwrap()).unwrap();
            assert_eq!(c.pg_ranks.as_deref(), Some(&ranks[..]));
            let op = match a["Collective name"].as_str().unwrap() {
                "allreduce" => OpType::AllReduce,
                "broadcast" => OpType::Broadcast,
                "_allgather_base" => OpType::AllGather,
                other => panic!("{}: a collective this test does not know: {other}", b.name),
            };
            assert_eq!(c.op, Some(op));
            let dtype = match a["dtype"].as_str().unwrap() {
                "Float" => DataType::Float32,
                "BFloat16" => DataType::Bfloat16,
                "Long" => DataType::Int64,
                "Int" => DataType::Int32,
                "Half" => DataType::Float16,
                "Byte" => DataType::Uint8,
                other => panic!("{other}"),
            };
            assert_eq!(c.datatype, Some(dtype));
        }
    }
}

/// The independent join: a kernel's launch (same correlation id, a runtime or driver call),
/// then the innermost `record_param_comms` and `nccl:*` ranges of that thread holding it; the
/// operation from the `nccl:*` name, the elements and type from the first tensor that has a
/// shape.
fn independent_join(doc: &Value, kernel: &Value) -> Option<(OpType, u64, String)> {
    let corr = kernel["args"]["correlation"].as_u64()?;
    let evs = events(doc);
    let launch = evs.iter().find(|e| {
        matches!(e["cat"].as_str(), Some("cuda_runtime" | "cuda_driver"))
            && e["args"]["correlation"].as_u64() == Some(corr)
    })?;
    let (tid, t) = (launch["tid"].as_u64()?, launch["ts"].as_f64()?);
    let holding = |name_ok: &dyn Fn(&str) -> bool| {
        evs.iter()
            .filter(|e| {
                e["tid"].as_u64() == Some(tid)
                    && e["name"].as_str().is_some_and(name_ok)
                    && e["ts"].as_f64().is_some_and(|s| s <= t)
                    && e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap_or(0.0) >= t
            })
            .max_by(|a, b| a["ts"].as_f64().partial_cmp(&b["ts"].as_f64()).unwrap())
    };
    let record = holding(&|n| n == "record_param_comms")?;
    let range = holding(&|n| n.starts_with("nccl:"))?;
    let op = match range["name"].as_str()? {
        "nccl:all_reduce" => OpType::AllReduce,
        "nccl:all_to_all" => OpType::AllToAll,
        "nccl:_all_gather_base" => OpType::AllGather,
        "nccl:broadcast" => OpType::Broadcast,
        other => panic!("a range this test does not know: {other}"),
    };
    let first = |e: &Value| -> Option<(u64, String)> {
        let dims = e["args"]["Input Dims"].as_array()?.first()?.as_array()?;
        if dims.is_empty() {
            return None;
        }
        let n = dims.iter().map(|d| d.as_u64().unwrap()).product();
        Some((n, e["args"]["Input type"][0].as_str()?.to_string()))
    };
    let (n, t) = first(record).or_else(|| first(range))?;
    Some((op, n, t))
}

/// DLRM's eight ranks carry only CUPTI fields on their kernels: the meaning comes from the
/// CPU ranges, through the launches, as the independent join finds it.
#[test]
fn kernels_without_arguments_take_the_cpu_side() {
    let paths: Vec<PathBuf> = traces()
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("dlrm"))
        .collect();
    if paths.is_empty() {
        return;
    }
    assert_eq!(paths.len(), 8);
    for path in paths {
        let b = read(&path);
        let ops: BTreeMap<String, u64> = b.mine.kernels.iter().fold(BTreeMap::new(), |mut m, k| {
            *m.entry(format!("{:?}", k.coll.op)).or_default() += 1;
            m
        });
        assert_eq!(
            ops,
            BTreeMap::from([("Some(AllReduce)".into(), 3), ("Some(AllToAll)".into(), 5)]),
            "{}: five all-to-all (SendRecv kernels) and three all-reduce, as SOURCES.md says",
            b.name
        );
        for w in nccl_kernels(&b.doc) {
            let corr = w["args"]["correlation"].as_u64().unwrap();
            let k = b
                .mine
                .kernels
                .iter()
                .find(|k| k.correlation == corr)
                .unwrap();
            let (op, n, t) = independent_join(&b.doc, w).expect("every DLRM kernel joins");
            assert_eq!(k.coll.source, Some(MetaSource::CpuOp), "{}", b.name);
            assert_eq!(k.coll.op, Some(op), "{}", b.name);
            assert_eq!(k.coll.in_nelems, Some(n), "{} kernel {corr}", b.name);
            assert_eq!(k.coll.dtype_name.as_deref(), Some(t.as_str()), "{}", b.name);
            assert!(k.coll.datatype.is_some(), "{}: {t}", b.name);
            assert!(k.launch.is_some());
        }
    }
}

/// Kernels the CPU side does not reach (the sampled 128-rank traces lost some of their CPU
/// ranges) still get an operation, from their name.
#[test]
fn every_kernel_gets_an_operation() {
    for path in traces() {
        let b = read(&path);
        for k in &b.mine.kernels {
            assert!(k.coll.op.is_some(), "{}: {}", b.name, k.name);
            let by_name = ingest_nsys::decode_kernel_name(&k.name).and_then(|n| n.op);
            if k.coll.source == Some(MetaSource::KernelName) {
                assert_eq!(k.coll.op, by_name);
            }
        }
    }
}

#[test]
fn steps_and_event_counts_match() {
    for path in traces() {
        let b = read(&path);
        let evs = events(&b.doc);
        assert_eq!(b.mine.counts.events, evs.len() as u64, "{}", b.name);
        let mut cats: BTreeMap<String, u64> = BTreeMap::new();
        for e in evs {
            let c = e["cat"].as_str().unwrap_or("(none)").to_string();
            *cats.entry(c).or_default() += 1;
        }
        let got: BTreeMap<String, u64> = b.mine.counts.by_category.iter().cloned().collect();
        assert_eq!(got, cats, "{}", b.name);
        assert_eq!(
            b.mine.counts.kernels,
            cats.get("kernel").copied().unwrap_or(0)
        );
        let mut steps: Vec<u64> = evs
            .iter()
            .filter(|e| {
                e["cat"] == "user_annotation"
                    && e["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("ProfilerStep#"))
            })
            .map(|e| e["name"].as_str().unwrap()[13..].parse().unwrap())
            .collect();
        steps.sort();
        let mut got: Vec<u64> = b.mine.steps.iter().map(|s| s.step).collect();
        got.sort();
        assert_eq!(got, steps, "{}", b.name);
        let pids: Vec<u64> = evs
            .iter()
            .filter(|e| e["cat"] == "cpu_op")
            .filter_map(|e| e["pid"].as_u64())
            .take(1)
            .collect();
        assert_eq!(
            b.mine.cpu_pid.map(u64::from),
            pids.first().copied(),
            "{}",
            b.name
        );
    }
}

/// Fed in pieces of any size, plain or gzip, the reader reads the same trace.
#[test]
fn pieces_of_any_size_read_the_same() {
    let Some(path) = traces()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("worker3"))
    else {
        return;
    };
    let gz = std::fs::read(&path).unwrap();
    let plain = inflate(&gz);
    let whole = parse_bytes("t", &gz);
    assert_eq!(parse_bytes("t", &plain).kernels, whole.kernels);
    for piece in [1, 2, 3, 61, 4096, 65_537, 1 << 20] {
        for bytes in [&gz, &plain] {
            let mut s = KinetoStream::new("t");
            for c in bytes.chunks(piece) {
                s.feed(c);
            }
            let t = s.finish();
            assert_eq!(t.kernels, whole.kernels, "pieces of {piece}");
            assert_eq!(t.steps, whole.steps, "pieces of {piece}");
            assert_eq!(t.counts, whole.counts, "pieces of {piece}");
            assert_eq!(t.distributed, whole.distributed, "pieces of {piece}");
            assert_eq!(t.lines, whole.lines, "pieces of {piece}");
            assert!(t.diagnostics.is_empty());
        }
    }
}
