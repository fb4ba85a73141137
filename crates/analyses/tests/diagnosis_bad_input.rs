//! Bad input never makes a false finding: a line cut anywhere (a finding needs two complete
//! lines that disagree; a cut line is named as such), lines printed twice, writes of several
//! processes interleaved differently; and fragments with launcher prefixes, markdown quoting or
//! indentation, or prose between the lines still give their finding.
#![cfg(not(target_arch = "wasm32"))]

use analyses::diagnosis::{diagnose, Context, Diagnosis, Kind, Severity};
use ingest_nccl::{parse_bytes, ParsedLog};
use synth::hang::{Hang, HangKind};
use synth::{Layout, Model, RunConfig};

fn diagnose_files(files: &[(String, Vec<u8>)]) -> Diagnosis {
    let logs: Vec<ParsedLog> = files
        .iter()
        .enumerate()
        .map(|(i, (n, b))| parse_bytes(n, i as u32, b))
        .collect();
    let refs: Vec<&ParsedLog> = logs.iter().collect();
    diagnose(&refs, Context::default())
}

fn op_line(pid: u32, dev: u32, op_count: u32, comm: u64) -> String {
    format!(
        "h:{pid}:{pid} [{dev}] NCCL INFO AllReduce: opCount {op_count:x} sendbuff 0x7f0000001000 recvbuff 0x7f0000001000 count 1048576 datatype 7 op 0 root 0 comm 0x{comm:x} [nranks=3] stream 0x5500\n"
    )
}

/// Three ranks, one file each, AllReduce at opCounts 0–5.
fn three_ranks() -> Vec<(String, Vec<u8>)> {
    (0..3u32)
        .map(|r| {
            let pid = 100 + r;
            let text: String = (0..6)
                .map(|oc| op_line(pid, r, oc, 0xa000 + u64::from(r)))
                .collect();
            (format!("rank{r}.log"), text.into_bytes())
        })
        .collect()
}

/// Rank 2's last line cut at every byte: never a mismatch; when the cut line no longer reads
/// as an operation, rank 2 is behind, and the finding says its log ends in a cut line (info).
#[test]
fn a_line_cut_anywhere_is_named_and_never_a_mismatch() {
    let whole = three_ranks();
    let text = &whole[2].1;
    let last_start = text[..text.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    let (mut whole_reads, mut cut_reads) = (0, 0);
    for cut in last_start + 1..text.len() {
        let mut files = whole.clone();
        files[2].1.truncate(cut);
        let d = diagnose_files(&files);
        let why = format!("cut at {}: {:#?}", cut - last_start, d.findings);
        assert!(d.findings.iter().all(|f| f.kind != Kind::Mismatch), "{why}");
        let rank2 = d.stopped[0]
            .members
            .iter()
            .find(|m| m.rank == Some(2))
            .unwrap();
        let read_whole = rank2.last.as_ref().is_some_and(|l| l.op_count == "5");
        if read_whole {
            // Cut inside the stream's digits: a complete operation line still.
            assert!(d.findings.iter().all(|f| f.kind != Kind::Behind), "{why}");
            whole_reads += 1;
            continue;
        }
        cut_reads += 1;
        assert_eq!(rank2.cut_line.as_ref().map(|e| e.line), Some(6), "{why}");
        let behind: Vec<_> = d
            .findings
            .iter()
            .filter(|f| f.kind == Kind::Behind)
            .collect();
        assert_eq!(behind.len(), 1, "{why}");
        assert_eq!(behind[0].ranks, [2], "{why}");
        assert_eq!(behind[0].severity, Severity::Info, "{why}");
        assert!(behind[0].message.contains("cut short"), "{why}");
        assert!(
            behind[0]
                .evidence
                .iter()
                .any(|e| e.path == "rank2.log" && e.line == 6),
            "{why}"
        );
    }
    assert!(
        whole_reads > 0 && cut_reads > 100,
        "{whole_reads} {cut_reads}"
    );
}

/// Without the cut, the same three ranks hold nothing above info; one member's line at
/// opCount 3 changed to another count is the one mismatch.
#[test]
fn only_complete_lines_that_disagree_make_a_mismatch() {
    let clean = diagnose_files(&three_ranks());
    assert!(
        clean.findings.iter().all(|f| f.severity == Severity::Info),
        "{:#?}",
        clean.findings
    );
    let mut files = three_ranks();
    let text = String::from_utf8(files[1].1.clone()).unwrap();
    let changed = text.replacen(
        "opCount 3 sendbuff 0x7f0000001000 recvbuff 0x7f0000001000 count 1048576",
        "opCount 3 sendbuff 0x7f0000001000 recvbuff 0x7f0000001000 count 524288",
        1,
    );
    files[1].1 = changed.into_bytes();
    let d = diagnose_files(&files);
    let m: Vec<_> = d
        .findings
        .iter()
        .filter(|f| f.kind == Kind::Mismatch)
        .collect();
    assert_eq!(m.len(), 1, "{:#?}", d.findings);
    assert_eq!(m[0].ranks, [1]);
    assert_eq!(m[0].op_count.as_deref(), Some("3"));
    assert!(m[0].message.contains("count 524288"), "{}", m[0].message);
}

/// A generated mismatch, and the same logs with every line printed twice and with the combined
/// log's writers interleaved another way: the same findings.
#[test]
fn repeats_and_interleaving_change_nothing() {
    let mut cfg = RunConfig::new(
        Layout {
            tp: 4,
            dp: 2,
            ..Layout::default()
        },
        Model {
            layers: 2,
            global_batch: 8,
            micro_batch: 1,
            iterations: 1,
            ..Model::thesis()
        },
    );
    cfg.gpus_per_node = 4;
    cfg.nodes = 2;
    cfg.combined_log = true;
    cfg.hang = Some(Hang {
        rank: 2,
        call: 9,
        kind: HangKind::Mismatch,
        watchdog: true,
        errors: false,
    });
    let run = synth::generate(&cfg);
    let files: Vec<(String, Vec<u8>)> = run.files.clone();
    let base = diagnose_files(&files);
    // The findings as a set: without timestamps, file order decides which stop is listed first.
    let key = |d: &Diagnosis| -> Vec<(Kind, Severity, Vec<u32>, Option<String>)> {
        let mut k: Vec<_> = d
            .findings
            .iter()
            .filter(|f| f.severity > Severity::Info)
            .map(|f| (f.kind, f.severity, f.ranks.clone(), f.op_count.clone()))
            .collect();
        k.sort();
        k
    };
    assert!(base
        .findings
        .iter()
        .any(|f| f.kind == Kind::Mismatch && f.ranks == [2]));
    let text = String::from_utf8(files[0].1.clone()).unwrap();
    let twice: String = text.split_inclusive('\n').flat_map(|l| [l, l]).collect();
    let doubled = diagnose_files(&[(files[0].0.clone(), twice.into_bytes())]);
    assert_eq!(key(&doubled), key(&base), "every line twice");
    // Writers interleaved otherwise: each process's lines keep their order (its threads write
    // to one stream), the processes take turns in reverse.
    let mut by_writer: Vec<(String, Vec<&str>)> = Vec::new();
    for l in text.split_inclusive('\n') {
        let writer = l
            .split(' ')
            .find(|w| w.matches(':').count() >= 2)
            .and_then(|w| w.rsplit_once(':'))
            .map_or("", |(host_pid, _)| host_pid)
            .to_string();
        match by_writer.iter_mut().find(|(w, _)| *w == writer) {
            Some((_, v)) => v.push(l),
            None => by_writer.push((writer, vec![l])),
        }
    }
    by_writer.reverse();
    let longest = by_writer.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    let mut mixed = String::new();
    for i in 0..longest {
        for (_, v) in &by_writer {
            if let Some(l) = v.get(i) {
                mixed.push_str(l);
            }
        }
    }
    let shuffled = diagnose_files(&[(files[0].0.clone(), mixed.into_bytes())]);
    assert_eq!(key(&shuffled), key(&base), "writers interleaved otherwise");
}

/// NVIDIA/nccl#147's excerpt (its mismatch at opCount 0 by rank 0) as people paste it: behind a
/// launcher's prefix, quoted or indented in markdown, with prose between the lines.
#[test]
fn pasted_fragments_still_give_their_finding() {
    let Some(path) = testkit::fixtures::files("nccl", "log")
        .into_iter()
        .find(|p| p.to_string_lossy().contains("issue147_"))
    else {
        return;
    };
    let text = std::fs::read_to_string(&path).expect("read fixture");
    type Shape = (&'static str, fn(usize, &str) -> String);
    let shapes: [Shape; 5] = [
        ("srun -l", |i, l| format!("{}: {l}", i % 3)),
        ("pdsh", |_, l| format!("learnfair062: {l}")),
        ("markdown quote", |_, l| format!("> {l} ")),
        ("markdown indent", |_, l| format!("    {l}")),
        ("prose between", |i, l| {
            format!("{l}\nand then rank {i} printed this, see above:")
        }),
    ];
    for (name, shape) in shapes {
        let pasted: String = text
            .lines()
            .enumerate()
            .map(|(i, l)| shape(i, l) + "\n")
            .collect();
        let d = diagnose_files(&[("pasted.log".into(), pasted.into_bytes())]);
        let m: Vec<_> = d
            .findings
            .iter()
            .filter(|f| f.kind == Kind::Mismatch)
            .collect();
        assert_eq!(m.len(), 1, "{name}: {:#?}", d.findings);
        assert_eq!(m[0].ranks, [0], "{name}");
        assert_eq!(m[0].op_count.as_deref(), Some("0"), "{name}");
        assert_eq!(m[0].severity, Severity::Critical, "{name}");
    }
}
