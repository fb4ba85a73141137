//! The generator's logs parse back to exactly its truth, for every NCCL version it writes
//! (2.18–2.28), with timestamps on and off, one file per process or one combined log, and every
//! launcher prefix: per process, the operation lines by type and their bytes, the lines printed
//! twice, one `Init COMPLETE` per communicator the rank belongs to (its pointer and size), the
//! version the log names, and the log line of every kernel the truth pairs with one.

use std::collections::{BTreeMap, BTreeSet};
use synth::logfmt::NCCL_VERSIONS;

/// What one process's log says, gathered over every file of a run.
#[derive(Default)]
struct Process {
    ops_by_type: BTreeMap<String, u64>,
    bytes_by_type: BTreeMap<String, u64>,
    /// Every operation line (communicator pointer, opCount, operation, root or peer, count),
    /// with how often it was printed: the Send and Recv lines of one group share an opCount.
    lines: BTreeMap<(u64, u64, &'static str, i64, u64), u64>,
    /// (communicator pointer, opCount) of every operation line.
    calls: BTreeSet<(u64, u64)>,
    /// (communicator pointer, nranks) of every `Init COMPLETE` line.
    inits: BTreeSet<(u64, u32)>,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("a hex pointer")
}

/// The run's logs parsed, per process (host, pid); every file must name `version`.
fn parse(run: &synth::Run, version: &str) -> BTreeMap<(String, u32), Process> {
    let mut out: BTreeMap<(String, u32), Process> = BTreeMap::new();
    let logs = run.files.iter().filter(|(name, _)| name.ends_with(".log"));
    for (i, (name, bytes)) in logs.enumerate() {
        let parsed = ingest_nccl::parse_bytes(name, i as u32, bytes);
        // The banner's version, before its `+cuda` build suffix.
        let named = parsed
            .nccl_version
            .as_deref()
            .and_then(|v| v.split('+').next());
        assert_eq!(named, Some(version), "{name}");
        for op in &parsed.ops {
            let p = out
                .entry((op.process.host.to_string(), op.process.pid))
                .or_default();
            *p.ops_by_type.entry(op.op.name().into()).or_default() += 1;
            *p.bytes_by_type.entry(op.op.name().into()).or_default() += op.msg_bytes();
            let line = (op.comm, op.op_count, op.op.name(), op.root, op.count);
            *p.lines.entry(line).or_default() += 1;
            p.calls.insert((op.comm, op.op_count));
        }
        for init in &parsed.inits {
            out.entry((init.process.host.to_string(), init.process.pid))
                .or_default()
                .inits
                .insert((init.comm, init.nranks));
        }
    }
    out
}

/// The truth's non-zero entries (it lists every operation type, most with 0).
fn nonzero(m: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    m.iter()
        .filter(|(_, &v)| v > 0)
        .map(|(k, &v)| (k.clone(), v))
        .collect()
}

/// Checks one run; returns how many lines its logs print twice.
fn check(name: &str, config: &synth::RunConfig) -> u64 {
    let run = synth::generate(config);
    let truth = &run.truth;
    let parsed = parse(&run, &config.nccl_version);
    assert_eq!(parsed.len(), truth.ranks.len(), "{name}: processes");
    for rank in &truth.ranks {
        let p = &parsed[&(rank.host.clone(), rank.pid)];
        let who = format!("{name}: rank {}", rank.global_rank);
        assert_eq!(
            p.ops_by_type,
            nonzero(&rank.ops_by_type),
            "{who}: operations"
        );
        assert_eq!(
            p.bytes_by_type,
            nonzero(&rank.bytes_by_type),
            "{who}: bytes"
        );
        let twice: u64 = p.lines.values().map(|&n| n - 1).sum();
        assert_eq!(twice, rank.duplicated_lines, "{who}: lines printed twice");
        let inits: BTreeSet<(u64, u32)> = truth
            .communicators
            .iter()
            .filter_map(|c| {
                let at = c.global_ranks.iter().position(|&g| g == rank.global_rank)?;
                Some((hex(&c.pointers[at]), c.size))
            })
            .collect();
        assert_eq!(p.inits, inits, "{who}: communicator inits");
    }
    let mut paired = 0;
    for k in &truth.kernels {
        let Some(line) = &k.log_op else { continue };
        let p = &parsed[&(k.host.clone(), k.pid)];
        assert!(
            p.calls.contains(&(hex(&line.comm), line.op_count)),
            "{name}: kernel {} of rank {}: no line {} opCount {}",
            k.correlation_id,
            k.global_rank,
            line.comm,
            line.op_count
        );
        paired += 1;
    }
    assert!(paired > 0, "{name}: no kernel paired with a line");
    truth.ranks.iter().map(|r| r.duplicated_lines).sum()
}

/// Every version with timestamps on and off, one file per process or one combined log, every
/// launcher prefix; nothing dropped, and a fifth of the lines dropped.
#[test]
fn every_version_parses_back_to_the_truth() {
    assert_eq!(NCCL_VERSIONS.len(), 11);
    for preset in ["align-nodrop", "align-ldrop20"] {
        let base = synth::preset(preset).expect("preset").config;
        for (i, version) in NCCL_VERSIONS.iter().enumerate() {
            let mut c = base.clone();
            c.nccl_version = (*version).to_string();
            c.timestamps = i % 2 == 0;
            c.combined_log = i % 3 == 1;
            c.launcher = synth::Launcher::ALL[i % synth::Launcher::ALL.len()];
            check(&format!("{preset}, {version}, {}", c.launcher.name()), &c);
        }
    }
}

/// The demo run (one combined timestamped log; dropped kernels, orphan lines, garbled lines, a
/// truncated last line) with each TP group's first rank printing every line twice, in each NCCL
/// version. No dropped lines here: the truth counts a line as printed twice even when its first
/// copy was dropped, which no parse of the log can tell (the test above drops lines).
#[test]
fn every_version_with_imperfections_parses_back_to_the_truth() {
    let base = synth::preset("demo").expect("preset").config;
    for version in NCCL_VERSIONS {
        let mut c = base.clone();
        c.nccl_version = version.to_string();
        c.model.iterations = 2;
        c.imperfections.duplicate_logging_rank_per_tp_group = true;
        c.imperfections.drop_log_pct = 0.0;
        let twice = check(&format!("demo, {version}"), &c);
        assert!(twice > 0, "demo, {version}: no line printed twice");
    }
}
