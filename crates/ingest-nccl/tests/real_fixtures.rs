//! Every real fixture against an independent regex count, plus field checks for the quirky ones.

mod common;

use ingest_nccl::{parse_bytes, LinkKind, NodeKind, ParsedLog, TopoHeader};
use model::{Algo, DataType, OpType, Proto, Severity};
use regex::Regex;
use std::collections::BTreeMap;

fn parse(prefix: &str) -> Option<ParsedLog> {
    let (name, bytes) = common::fixture(prefix)?;
    Some(parse_bytes(&name, 0, &bytes))
}

struct Independent {
    ops_by_type: BTreeMap<String, u64>,
    inits: u64,
    tuning: u64,
}

/// Counts done without the crate: one regex per line family, at most one match per line.
fn independent(text: &str) -> Independent {
    let op = Regex::new(
        r"\S+:\d+:\d+ \[\d+\] NCCL INFO ([A-Za-z]+): opCount [0-9a-f]+ sendbuff \S+ recvbuff \S+ (?:acc \S+ )?count \d+ datatype \d+ op \d+ root -?\d+ comm \S+ \[nranks=\d+\] stream \S+",
    )
    .unwrap();
    let init = Regex::new(r"\S+:\d+:\d+ \[\d+\] NCCL INFO (?:\S+ )?comm 0x[0-9a-f]+ rank \d+ nranks \d+ .*- Init COMPLETE\s*$").unwrap();
    let tuning = Regex::new(
        r"\[\d+\] NCCL INFO (?:[A-Za-z]+(?: \[Symmetric\])?: )?\d+ Bytes -> (?:Algo|Kernel) \S+",
    )
    .unwrap();
    let mut ind = Independent {
        ops_by_type: BTreeMap::new(),
        inits: 0,
        tuning: 0,
    };
    for line in text.lines() {
        if let Some(c) = op.captures(line) {
            *ind.ops_by_type.entry(c[1].to_string()).or_insert(0) += 1;
        }
        ind.inits += u64::from(init.is_match(line));
        ind.tuning += u64::from(tuning.is_match(line));
    }
    ind
}

#[test]
fn every_fixture_matches_independent_counts() {
    let all = common::fixtures();
    if all.is_empty() {
        return;
    }
    let mut total_ops = 0;
    for (name, bytes) in &all {
        let log = parse_bytes(name, 3, bytes);
        let ind = independent(&String::from_utf8_lossy(bytes));
        let mine: BTreeMap<String, u64> = log
            .ops_by_type()
            .into_iter()
            .map(|(k, v)| (k.name().to_string(), v))
            .collect();
        assert_eq!(mine, ind.ops_by_type, "{name}: ops by type");
        assert_eq!(log.ops.len() as u64, log.counters.op_lines, "{name}");
        assert_eq!(log.inits.len() as u64, ind.inits, "{name}: inits");
        assert_eq!(
            log.counters.tuning_lines, ind.tuning,
            "{name}: tuning lines"
        );
        assert_eq!(
            log.counters.total_lines,
            bytes.iter().filter(|b| **b == b'\n').count() as u64
                + u64::from(!bytes.ends_with(b"\n") && !bytes.is_empty()),
            "{name}: lines"
        );
        for d in &log.diagnostics {
            assert_eq!(d.path, *name);
        }
        for op in &log.ops {
            assert_eq!(op.source.file, 3);
            assert!(op.source.line >= 1);
        }
        total_ops += log.ops.len();
    }
    assert!(total_ops > 50, "fixtures hold many ops, got {total_ops}");
}

/// Every skipped line is listed (not capped): one finding per skipped line, at that line, quoting
/// it; and every line an independent check calls foreign text (no `NCCL INFO`/`NCCL WARN`
/// marker, no `NCCL version`, no per-collective body) is among them.
#[test]
fn every_skipped_line_is_listed_with_its_text() {
    let marker = Regex::new(r"NCCL (INFO|WARN)|NCCL version |: opCount ").unwrap();
    let mut total_foreign = 0;
    for (name, bytes) in common::fixtures() {
        let log = parse_bytes(&name, 0, &bytes);
        let skipped: BTreeMap<u64, &str> = log
            .diagnostics
            .iter()
            .filter(|d| d.message.starts_with(ingest_nccl::SKIPPED))
            .map(|d| (d.line, d.message.as_str()))
            .collect();
        assert_eq!(
            skipped.len() as u64,
            log.counters.skipped_lines,
            "{name}: one finding per skipped line"
        );
        let text = String::from_utf8_lossy(&bytes);
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() || marker.is_match(line) {
                continue;
            }
            total_foreign += 1;
            let no = i as u64 + 1;
            let msg = skipped
                .get(&no)
                .unwrap_or_else(|| panic!("{name}:{no} not listed as skipped: {line}"));
            let start: String = line.chars().take(40).collect();
            let quoted = format!("{start:?}");
            assert!(
                msg.contains(quoted.trim_end_matches('"')),
                "{name}:{no}: {msg} does not quote {line}"
            );
        }
    }
    assert!(
        total_foreign > 20,
        "fixtures hold foreign text, got {total_foreign}"
    );
}

#[test]
fn rccl_acc_task_globalrank() {
    let Some(log) = parse("ROCm-ROCm_issue6074") else {
        return;
    };
    assert_eq!(log.ops.len(), 6);
    assert!(log
        .ops
        .iter()
        .all(|o| o.op == OpType::AllReduce && o.rccl_task == Some(0) && o.stream == 0));
    let ranks: Vec<_> = log
        .ops
        .iter()
        .map(|o| o.rccl_global_rank.unwrap())
        .collect();
    assert_eq!(ranks, [0, 1, 1, 0, 0, 1]);
    assert_eq!(log.ops.get(0).unwrap().sendbuff, 0x7973d6e00400);
    assert_eq!(log.ops.get(0).unwrap().msg_bytes(), 4);
    assert_eq!(log.inits.len(), 2);
    assert_eq!(log.inits[0].comm, 0x2bc1f840);
    assert_eq!(log.inits[0].comm_id, Some(0xcde2ea451c75c2ba));
    assert_eq!(log.inits[1].bus_id.as_deref(), Some("d000"));
    assert_eq!(log.init_timings.len(), 2);
    assert_eq!(
        log.init_timings[0].func.as_deref(),
        Some("ncclCommInitRankConfig_impl")
    );
    assert_eq!(log.init_timings[0].total_s, 4.66);
    let ch = log
        .channels
        .iter()
        .find(|c| c.comm == Some(0x2bc1f840))
        .expect("RCCL channel summary");
    assert_eq!(
        (ch.coll_channels, ch.nvls_channels, ch.p2p_channels, ch.rank),
        (Some(2), Some(0), Some(2), Some(0))
    );
}

#[test]
fn send_with_nil_sendbuff() {
    let Some(log) = parse("NVIDIA-nccl_issue1593") else {
        return;
    };
    assert_eq!(log.nccl_version.as_deref(), Some("2.21.5+cuda12.4"));
    assert_eq!(log.ops.len(), 4);
    let s = &log.ops.get(0).unwrap();
    assert_eq!(
        (s.op, s.sendbuff, s.recvbuff, s.root),
        (OpType::Send, 0, 0x7c29d4000000, 0)
    );
    assert_eq!(s.datatype, Some(DataType::Bfloat16));
    assert_eq!(s.msg_bytes(), 7077888 * 2);
    assert_eq!(log.ops.get(3).unwrap().count, 0);
    assert_eq!(log.ops.get(3).unwrap().root, 1);
    // Same comm and opCount but another peer: a grouped p2p, not a duplicate.
    assert_eq!(log.counters.duplicate_ops, 0);
    assert_eq!(
        log.processes[0].nccl_version.as_deref(),
        Some("2.21.5+cuda12.4")
    );
}

#[test]
fn garbled_merged_lines() {
    let Some(log) = parse("NVIDIA-nccl_issue147") else {
        return;
    };
    assert_eq!(log.ops.len(), 5);
    let first = &log.ops.get(0).unwrap();
    assert_eq!(
        (first.process.pid, first.tid, first.cuda_dev),
        (32629, 32629, 7)
    );
    assert_eq!(first.op, OpType::Broadcast);
    assert_eq!(first.datatype, Some(DataType::Int64));
    let merged = log
        .diagnostics
        .iter()
        .find(|d| d.line == 1)
        .expect("merged line reported");
    assert!(merged.message.contains("merged"), "{merged}");
    let orphan = log
        .diagnostics
        .iter()
        .find(|d| d.line == 6)
        .expect("header-less line reported");
    assert_eq!(orphan.severity, Severity::Warning);
    assert!(log.counters.garbled_lines >= 2);
    assert_eq!(log.counters.skipped_lines, 1);
}

#[test]
fn markdown_quote_prefix_and_duplicates() {
    let Some(log) = parse("NVIDIA-nccl_issue1238") else {
        return;
    };
    assert_eq!(log.ops.len(), 4, "duplicates still count");
    assert!(log
        .ops
        .iter()
        .all(|o| o.process.host == "ip-172-31-54-74" && o.op_count == 0));
    assert_eq!(log.ops.get(0).unwrap().stream, 0x5631f0021140);
    assert_eq!(log.ops.get(0).unwrap().datatype, Some(DataType::Float32));
    assert_eq!(log.counters.duplicate_ops, 3);
    let dups: Vec<_> = log
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("printed twice"))
        .collect();
    assert_eq!(dups.len(), 3);
    assert!(dups.iter().all(|d| d.severity == Severity::Warning));
    assert_eq!(dups.iter().map(|d| d.line).collect::<Vec<_>>(), [2, 3, 4]);
}

#[test]
fn srun_prefix_and_hex_opcount() {
    let Some(log) = parse("awslabs-ai-on-eks") else {
        return;
    };
    assert_eq!(log.ops.len(), 9);
    let o = &log.ops.get(0).unwrap();
    assert_eq!(
        (o.process.host.as_str(), o.process.pid, o.op_count),
        ("node-3", 278, 0x1606)
    );
    assert_eq!(o.comm, 0x555e2c6387e0);
    assert_eq!(o.msg_bytes(), 2359808 * 4);
    let counts = log.ops_by_type();
    assert_eq!(counts.get(&OpType::AllGather), Some(&6));
    assert_eq!(counts.get(&OpType::Broadcast), Some(&3));
    assert_eq!(log.ops.last().unwrap().op_count, 0x1609);
    assert_eq!(log.ops.last().unwrap().datatype, Some(DataType::Uint8));
    // The only tuning line comes from node-0 before any op of that process: counted, not attached.
    assert_eq!(
        (log.counters.tuning_lines, log.counters.tuning_attached),
        (1, 0)
    );
    assert_eq!(log.processes.len(), 4);
}

#[test]
fn sglang_new_tuning_format() {
    let Some(log) = parse("unknown-sglang-notes_tpgds-2node") else {
        return;
    };
    assert_eq!(log.counters.tuning_lines, 1);
    assert_eq!(log.counters.tuning_attached, 1);
    let tuned: Vec<_> = log.ops.iter().filter(|o| o.algo.is_some()).collect();
    assert_eq!(tuned.len(), 1);
    assert_eq!(tuned[0].process.pid, 177787);
    assert_eq!(
        (tuned[0].algo, tuned[0].proto, tuned[0].nchannels),
        (Some(Algo::Tree), Some(Proto::LL), Some(1))
    );
    assert!(!log.init_timings.is_empty());
}

#[test]
fn sglang_subsys_all_inits() {
    let Some(log) = parse("unknown-sglang-notes_tpgds-node0008") else {
        return;
    };
    assert_eq!(log.inits.len(), 8);
    assert_eq!(log.init_timings.len(), 8);
    assert_eq!(log.ops.len(), 8);
    let i = &log.inits[0];
    assert_eq!(
        (i.rank, i.nranks, i.cuda_dev, i.nvml_dev),
        (15, 16, Some(7), Some(7))
    );
    assert_eq!(i.bus_id.as_deref(), Some("db000"));
    assert!(log
        .inits
        .iter()
        .all(|i| i.comm_id == Some(0xabaf8d8e9c0f4614)));
    // Every op's comm was initialised in the same log.
    for op in &log.ops {
        assert!(log
            .inits
            .iter()
            .any(|i| i.comm == op.comm && i.process == op.process));
    }
    assert!(log
        .init_timings
        .iter()
        .all(|t| t.func.as_deref() == Some("ncclCommInitRank")));
}

#[test]
fn old_numeric_tuning_format() {
    let Some(log) = parse("NVIDIA-nccl_issue1453") else {
        return;
    };
    assert_eq!(log.counters.tuning_lines, 14);
    assert_eq!(log.processes.len(), 1);
    assert_eq!(log.processes[0].process.host, "h100clust-worker-1");
    let Some(nohost) = parse("NVIDIA-nccl_issue1595") else {
        return;
    };
    assert_eq!(nohost.counters.tuning_lines, 21);
    assert!(nohost.processes.is_empty());
}

#[test]
fn topology_new_ids_with_nvswitch() {
    let Some(log) = parse("NVIDIA-nccl-tests_issue256") else {
        return;
    };
    let t = log.processes[0].topology.as_ref().expect("topology");
    assert_eq!(log.processes[0].process.host, "node_2");
    assert_eq!(
        (t.header, t.max_bw_gbps, t.total_bw_gbps),
        (TopoHeader::MaxBw, 48.0, 370.8)
    );
    let gpus: Vec<_> = t
        .gpus()
        .map(|g| (g.id.as_str(), g.bus_id.as_deref(), g.local_rank))
        .collect();
    assert_eq!(
        gpus,
        [
            ("0-68000", Some("68000"), Some(8)),
            ("0-6b000", Some("6b000"), Some(9)),
            ("0-70000", Some("70000"), Some(10))
        ]
    );
    let idx = |kind: NodeKind, id: &str| {
        t.nodes
            .iter()
            .position(|n| n.kind == kind && n.id == id)
            .unwrap()
    };
    let nvs = idx(NodeKind::Nvs, "0-0");
    let gpu = idx(NodeKind::Gpu, "0-68000");
    assert!(t
        .links
        .iter()
        .any(|l| l.from == gpu && l.to == nvs && l.kind == LinkKind::Nvl && l.bw_gbps == 370.8));
    let nic = idx(NodeKind::Nic, "0-67000");
    let net = idx(NodeKind::Net, "0-c");
    assert!(t
        .links
        .iter()
        .any(|l| l.from == nic && l.to == net && l.kind == LinkKind::Net && l.bw_gbps == 50.0));
    assert_eq!(
        t.nodes[net].attrs.as_deref(),
        Some("0/d4f9fc0003ae6d94/1/50.000000")
    );
    let pci = idx(NodeKind::Pci, "0-65000");
    let cpu = idx(NodeKind::Cpu, "0-0");
    assert!(t
        .links
        .iter()
        .any(|l| l.from == cpu && l.to == pci && l.kind == LinkKind::Pci && l.bw_gbps == 0.2));
    assert!(t
        .links
        .iter()
        .any(|l| l.from == pci && l.to == gpu && l.bw_gbps == 48.0));
    assert_eq!(t.nodes[idx(NodeKind::Cpu, "0-1")].system, Some(0));
}

#[test]
fn topology_old_ids_and_channels() {
    let Some(log) = parse("NVIDIA-nccl-tests_issue350") else {
        return;
    };
    assert_eq!(log.nccl_version.as_deref(), Some("2.16.5+cuda11.8"));
    let p = &log.processes[0];
    assert_eq!((p.process.host.as_str(), p.process.pid), ("n013", 101855));
    assert_eq!(p.nccl_version.as_deref(), Some("2.16.5+cuda11.8"));
    let t = p.topology.as_ref().expect("topology");
    assert_eq!(
        (t.header, t.max_bw_gbps, t.total_bw_gbps),
        (TopoHeader::MaxBw, 24.0, 24.0)
    );
    let gpu = t.gpus().next().unwrap();
    assert_eq!(
        (
            gpu.id.as_str(),
            gpu.bus_id.as_deref(),
            gpu.local_rank,
            gpu.system
        ),
        ("81000", Some("81000"), Some(0), None)
    );
    let idx = |kind: NodeKind, id: &str| {
        t.nodes
            .iter()
            .position(|n| n.kind == kind && n.id == id)
            .unwrap()
    };
    let (cpu1, cpu0) = (idx(NodeKind::Cpu, "1"), idx(NodeKind::Cpu, "0"));
    assert!(t
        .links
        .iter()
        .any(|l| l.from == cpu1 && l.to == cpu0 && l.kind == LinkKind::Sys && l.bw_gbps == 5000.0));
    assert!(t
        .links
        .iter()
        .any(|l| l.from == cpu0 && l.to == cpu1 && l.kind == LinkKind::Sys));
    let nic = idx(NodeKind::Nic, "D1000");
    assert_eq!(t.nodes[nic].local_id, Some(0xd1000));
    assert!(t
        .links
        .iter()
        .any(|l| l.from == nic && l.to == idx(NodeKind::Net, "1") && l.bw_gbps == 25.0));
    assert_eq!(t.nodes.len(), 7, "{:?}", t.nodes);
    assert_eq!(log.inits.len(), 1);
    assert_eq!(log.inits[0].comm_id, Some(0xb2f794396f6d0bd1));
    assert_eq!(log.inits[0].nvml_dev, None);
    let ch = log
        .channels
        .iter()
        .find(|c| c.comm == Some(0x72a6b00))
        .expect("channels tied to comm");
    assert_eq!(ch.nchannels, Some(2));
    assert_eq!(
        ch.rings
            .iter()
            .map(|r| (r.channel, r.order.clone()))
            .collect::<Vec<_>>(),
        [(0, vec![0, 1]), (1, vec![0, 1])]
    );
    assert_eq!(ch.ring_neighbors.len(), 2);
    assert_eq!(ch.coll_channels, Some(2));
}

#[test]
fn init_shapes_across_versions() {
    if let Some(log) = parse("NVIDIA-nccl_issue214") {
        assert_eq!(log.inits.len(), 2);
        assert_eq!(
            (
                log.inits[0].bus_id.as_deref(),
                log.inits[0].nvml_dev,
                log.inits[0].comm_id
            ),
            (None, Some(1), None)
        );
        assert_eq!(log.warnings.len(), 4);
        assert!(log.warnings[0]
            .message
            .starts_with("Mismatched collective detected"));
        assert_eq!(log.warnings[0].cuda_dev, Some(3));
        assert_eq!(log.warnings[0].source.line, 1);
    }
    if let Some(log) = parse("NVIDIA-nccl_issue629") {
        assert_eq!(log.inits.len(), 8);
        assert_eq!(
            (log.inits[0].bus_id.as_deref(), log.inits[0].nvml_dev),
            (Some("e7000"), None)
        );
    }
    if let Some(log) = parse("NVIDIA-nccl-tests_issue273") {
        assert_eq!(log.inits.len(), 6);
        assert_eq!(log.init_timings[0].func, None);
        assert_eq!(
            log.init_timings[0].phases.first().map(|(n, _)| n.as_str()),
            Some("kernels")
        );
    }
    if let Some(log) = parse("NVIDIA-nccl_issue1038") {
        assert_eq!(log.inits.len(), 0, "Init START is not an init");
        assert_eq!(
            log.processes[0].nccl_version.as_deref(),
            Some("2.18.3+cuda12.2")
        );
    }
    if let Some(log) = parse("NVIDIA-nccl_issue262") {
        assert_eq!(log.nccl_version.as_deref(), Some("2.4.8+cuda9.0"));
        assert_eq!(log.warnings.len(), 1);
        assert!(log.counters.blank_lines >= 17);
    }
    if let Some(log) = parse("NVIDIA-nccl_issue1646") {
        assert_eq!(
            log.processes
                .iter()
                .filter(|p| p.nccl_version.as_deref() == Some("2.25.1+cuda12.2"))
                .count(),
            2
        );
    }
}

#[test]
fn channels_and_prefixes() {
    if let Some(log) = parse("NVIDIA-nccl_issue1267") {
        let ch = &log.channels[0];
        assert_eq!(
            (ch.comm, ch.nchannels, ch.rings.len()),
            (Some(0x558ef922a470), Some(32), 3)
        );
    }
    if let Some(log) = parse("NVIDIA-nccl_issue1644") {
        assert_eq!(
            log.channels[0].ring_neighbors[0],
            ingest_nccl::RingNeighbors {
                channel: 0,
                prev: 6,
                rank: 7,
                next: 0
            }
        );
    }
    if let Some(log) = parse("huggingface-accelerate_issue1317") {
        assert_eq!(log.processes[0].process.host, "lambda-scalar02");
        assert!(log
            .processes
            .iter()
            .any(|p| p.process.host == "lambda-scalar03"));
        let ch = log.channels.iter().find(|c| !c.rings.is_empty()).unwrap();
        assert_eq!(ch.rings[0].order, (0..16).collect::<Vec<u32>>());
    }
    if let Some(log) = parse("huggingface-transformers_issue22363") {
        assert_eq!(
            log.processes
                .iter()
                .map(|p| p.process.host.as_str())
                .collect::<Vec<_>>(),
            ["gpu1505", "gpu1504"]
        );
    }
    if let Some(log) = parse("NVIDIA-nccl_issue302") {
        assert_eq!(
            log.processes[0].process.host,
            "crow-ib-new-nccl-256-info-19"
        );
        assert!(log.channels.is_empty() || log.channels.iter().all(|c| c.rings.is_empty()));
    }
    if let Some(log) = parse("unknown-grpo-notes") {
        assert_eq!(
            log.processes[0].process.host,
            "t-20260428141043-cmz7n-worker-0"
        );
        assert!(log.counters.blank_lines > 50);
        assert_eq!(log.counters.skipped_lines, 0);
    }
}

/// Every note about a line of a real fixture gives back, through `split_note`, the start of that
/// very line (as the page lists it), read here from the fixture's own bytes.
#[test]
fn every_note_quotes_its_line() {
    let mut quoted = 0;
    for (name, bytes) in &common::fixtures() {
        if ingest_nccl::is_gzip(bytes) {
            continue;
        }
        let log = parse_bytes(name, 0, bytes);
        let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
        for d in &log.diagnostics {
            let parts = ingest_nccl::split_note(d);
            let Some(text) = parts.text() else { continue };
            let line = lines[d.line as usize - 1].trim_ascii_end();
            let start = line.get(..160).unwrap_or(line);
            assert_eq!(text, String::from_utf8_lossy(start), "{name}: {d:?}");
            assert_eq!(parts.cut, line.len() > 160, "{name}: {d:?}");
            assert!(
                !parts.reason.is_empty() && !parts.reason.ends_with(':'),
                "{d:?}"
            );
            quoted += 1;
        }
    }
    if !common::fixtures().is_empty() {
        assert!(quoted > 0, "some fixture has notes about its lines");
    }
}
