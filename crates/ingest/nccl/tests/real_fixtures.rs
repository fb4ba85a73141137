//! Every real fixture against its own text read line by line with regular expressions
//! (`real_fixtures/by_regex.rs`), plus field checks for the quirky ones.

#[path = "real_fixtures/against_text.rs"]
mod against_text;
#[path = "real_fixtures/by_regex.rs"]
mod by_regex;
mod common;

use against_text::{
    mismatches, Mismatch, Text, CHANNELS, CONNECTION, INIT, INIT_START, OP, PROCESS, SKIPPED,
    TIMINGS, TOPOLOGY, TREE, TUNING, UNFINISHED, VERSION, WARN,
};
use ingest_nccl::{parse_bytes, LinkKind, NodeKind, ParsedLog, TopoHeader};
use model::log::LogOps;
use model::{Algo, DataType, OpType, Proto, Severity};
use regex::Regex;
use std::collections::BTreeMap;

fn parse(prefix: &str) -> Option<ParsedLog> {
    let (name, bytes) = common::fixture(prefix)?;
    Some(parse_bytes(&name, 0, &bytes))
}

/// Single lines the parser gets wrong, found by `every_fixture_matches_its_text_line_by_line`
/// and waived there while the parser is being fixed: (fixture name prefix, line, what). Each
/// entry must still fail (a fixed one is reported there, to be removed here), and comes with an
/// `#[ignore = "parser gap: ..."]` test that fails on it. None today.
const KNOWN_GAPS: &[(&str, u64, &str)] = &[];

fn is_known_gap(file: &str, m: &Mismatch) -> bool {
    KNOWN_GAPS
        .iter()
        .any(|(f, l, w)| file.starts_with(f) && *l == m.line && *w == m.what)
}

/// Every fixture's mismatches: (file name, mismatch).
fn all_mismatches() -> Vec<(String, Mismatch)> {
    let mut out = Vec::new();
    for (name, bytes) in common::fixtures() {
        let log = parse_bytes(&name, 3, &bytes);
        for m in mismatches(&bytes, 3, &log) {
            out.push((name.clone(), m));
        }
    }
    out
}

fn listing(ms: &[&(String, Mismatch)]) -> String {
    ms.iter()
        .map(|(f, m)| format!("  {f}:{m}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every line of every fixture, read with `by_regex`'s regular expressions, against the parser's
/// records: each per-collective, Init COMPLETE, Init START, Init timings, Destroy/Abort and WARN
/// line carried by exactly one record at that line with the text's fields (an Init COMPLETE's
/// with its thread's `nNodes` line), and no record on any other line; the never-completed
/// set-ups noted at exactly their Init START lines; tuning lines counted, and every tuned
/// operation's algorithm, protocol and channels (or `[Symmetric]` kernel) found on a tuning line
/// after it; the processes in order with their first line and NCCL version; each process's
/// first topology block (header line, nodes, links); every thread's ring orders, neighbours,
/// channel counts, trees and connections; the skipped lines exactly the text's foreign,
/// damaged and unattributable ones; the counters.
#[test]
fn every_fixture_matches_its_text_line_by_line() {
    let fixtures = common::fixtures();
    if fixtures.is_empty() {
        return;
    }
    let all = all_mismatches();
    let unexpected: Vec<_> = all.iter().filter(|(f, m)| !is_known_gap(f, m)).collect();
    assert!(
        unexpected.is_empty(),
        "{} lines where the parser and the text disagree:\n{}",
        unexpected.len(),
        listing(&unexpected)
    );
    for (f, l, w) in KNOWN_GAPS {
        assert!(
            all.iter()
                .any(|(file, m)| file.starts_with(f) && m.line == *l && m.what == *w),
            "{f}:{l} [{w}] is listed in KNOWN_GAPS but passes now: remove it from the list"
        );
    }
    // The reading itself found what the fixtures are known to hold (read by hand).
    let texts: Vec<Text> = fixtures.iter().map(|(_, b)| Text::read(b)).collect();
    let sum = |f: fn(&Text) -> usize| texts.iter().map(f).sum::<usize>();
    assert!(sum(|t| t.ops.len()) > 50);
    assert!(sum(|t| t.inits.len()) > 20);
    assert!(sum(|t| t.skipped.len()) > 20);
    assert!(sum(|t| t.warnings.len()) >= 5);
    assert!(sum(|t| t.timings.len()) >= 10);
    assert!(sum(|t| t.topology.len()) >= 2);
}

/// One family's mismatches over every fixture.
fn family(whats: &[&str]) -> Vec<(String, Mismatch)> {
    all_mismatches()
        .into_iter()
        .filter(|(_, m)| whats.contains(&m.what))
        .collect()
}

fn assert_none(ms: &[(String, Mismatch)]) {
    let refs: Vec<_> = ms.iter().collect();
    assert!(ms.is_empty(), "{} lines:\n{}", ms.len(), listing(&refs));
}

/// The text's reading of every fixture: (file name, reading).
fn texts() -> Vec<(String, Text)> {
    common::fixtures()
        .into_iter()
        .map(|(n, b)| (n, Text::read(&b)))
        .collect()
}

/// Every `Init START` line has its record (with the function that printed it, if printed), and
/// the set-ups that never complete are noted at exactly their start lines; the fixtures hold
/// both (read by hand: issue 1038's and issue 1267's single ranks never complete).
#[test]
fn init_start_lines_have_their_records() {
    let texts = texts();
    if texts.is_empty() {
        return;
    }
    assert_none(&family(&[INIT_START, UNFINISHED, INIT]));
    let starts: usize = texts.iter().map(|(_, t)| t.starts.len()).sum();
    let unfinished: Vec<(&str, u64)> = texts
        .iter()
        .flat_map(|(n, t)| t.unfinished.iter().map(move |l| (&n[..24], *l)))
        .collect();
    assert_eq!(starts, 2);
    assert_eq!(
        unfinished,
        [
            ("NVIDIA-nccl_issue1038_un", 15),
            ("NVIDIA-nccl_issue1267_so", 11)
        ]
    );
}

/// Every tree line (`Trees [c] ...`, split trees, the older `Tree c : ...`) is held, channel by
/// channel, by its thread's channel records.
#[test]
fn tree_lines_have_their_records() {
    let texts = texts();
    if texts.is_empty() {
        return;
    }
    assert_none(&family(&[TREE, CHANNELS]));
    // 26 tree lines in 6 fixtures, read by hand (`grep -c 'NCCL INFO Trees\? '`).
    let lines: BTreeMap<&str, usize> = texts
        .iter()
        .map(|(n, t)| (&n[..], t.tree_lines()))
        .filter(|(_, c)| *c > 0)
        .collect();
    assert_eq!(lines.values().sum::<usize>(), 26, "{lines:?}");
    assert_eq!(lines.len(), 6, "{lines:?}");
}

/// Every connection line (`Channel cc/nn : a[..] -> b[..] [dir] via T`, 2.4's `Channel cc : ...`
/// and 2.5's `Ring cc : ...`) is held by its thread's channel records.
#[test]
fn connection_lines_have_their_records() {
    let texts = texts();
    if texts.is_empty() {
        return;
    }
    assert_none(&family(&[CONNECTION, CHANNELS]));
    // 3 + 12 + 2 + 12 + 28 + 9 + 6 + 1 + 1 (`Channel`) and 3 (`Ring`) lines, read by hand.
    let n: usize = texts.iter().map(|(_, t)| t.connection_lines()).sum();
    assert_eq!(n, 77);
}

/// The line-by-line check is not fooled by a dropped per-collective line and a doubled one of
/// the same operation: the totals the old check compared stay equal, the lines do not.
#[test]
fn a_dropped_and_a_doubled_op_line_are_caught() {
    let Some((name, bytes)) = common::fixture("pytorch-torchtitan_issue1369") else {
        return;
    };
    let log = parse_bytes(&name, 0, &bytes);
    assert!(mismatches(&bytes, 0, &log).is_empty());
    // Lines 1 and 3 are both AllGather (read by hand).
    let mut bad = log.clone();
    bad.ops = LogOps::new();
    for op in log.ops.iter() {
        match op.source.line {
            1 => {}
            3 => {
                bad.ops.push(&op);
                bad.ops.push(&op);
            }
            _ => bad.ops.push(&op),
        }
    }
    assert_eq!(bad.ops.len(), log.ops.len());
    assert_eq!(bad.ops_by_type(), log.ops_by_type());
    let found = mismatches(&bytes, 0, &bad);
    let lines: Vec<(u64, &str)> = found.iter().map(|m| (m.line, m.what)).collect();
    assert_eq!(lines, [(1, OP), (3, OP)], "{found:?}");
    assert!(
        found[0].detail.contains("no record carries"),
        "{}",
        found[0]
    );
    assert!(found[1].detail.contains("2 records"), "{}", found[1]);
}

/// Each family's check bites: one changed record of each kind is reported, at its line.
#[test]
fn a_changed_record_of_each_family_is_caught() {
    type Change = fn(&mut ParsedLog);
    let cases: [(&str, &str, Change); 14] = [
        ("unknown-sglang-notes_tpgds-2node", TUNING, |l| {
            // The op at line 10 took `Algo TREE proto LL` from line 12; say SIMPLE instead.
            let i = l.ops.iter().position(|o| o.source.line == 10).unwrap();
            l.ops
                .set_tuning(i, Some(Algo::Tree), Some(Proto::Simple), Some(1));
        }),
        ("unknown-sglang-notes_tpgds-node0008", INIT, |l| {
            l.inits[3].bus_id = Some("1".into());
        }),
        ("unknown-sglang-notes_tpgds-node0008", TIMINGS, |l| {
            l.init_timings.remove(2);
        }),
        ("NVIDIA-nccl_issue214", WARN, |l| {
            l.warnings[1].source.line += 1
        }),
        ("NVIDIA-nccl-tests_issue350", TOPOLOGY, |l| {
            l.processes[0].topology.as_mut().unwrap().links.pop();
        }),
        ("NVIDIA-nccl-tests_issue350", CHANNELS, |l| {
            l.channels[0].ring_neighbors[1].next = 0;
        }),
        ("NVIDIA-nccl-tests_issue350", SKIPPED, |l| {
            let i = l.diagnostics.iter().position(|d| d.line == 76).unwrap();
            l.diagnostics.remove(i);
        }),
        ("NVIDIA-nccl_issue1646", VERSION, |l| {
            l.processes[2].nccl_version = None;
        }),
        ("huggingface-accelerate_issue1317", PROCESS, |l| {
            l.processes.swap(1, 2);
        }),
        ("NVIDIA-nccl-tests_issue350", TREE, |l| {
            // Line 48's `[1] -1/-1/-1->0->1`: say its parent is rank 0.
            let t = l.channels.iter_mut().flat_map(|c| &mut c.trees).nth(3);
            t.unwrap().up = 0;
        }),
        ("huggingface-accelerate_issue1317", TREE, |l| {
            // A split tree's channel dropped.
            let c = l.channels.iter_mut().find(|c| !c.trees.is_empty());
            c.unwrap().trees.pop();
        }),
        ("vllm-project-vllm_issue6201", CONNECTION, |l| {
            let c = l
                .channels
                .iter_mut()
                .flat_map(|c| &mut c.connections)
                .nth(2);
            c.unwrap().via = "SHM/direct/direct".into();
        }),
        ("NVIDIA-nccl_issue1267", INIT_START, |l| {
            l.init_starts[0].func = Some("ncclCommInitRank".into());
        }),
        ("NVIDIA-nccl_issue1038", UNFINISHED, |l| {
            l.diagnostics
                .retain(|d| !d.message.contains("no Init COMPLETE"));
        }),
    ];
    for (prefix, what, change) in cases {
        let Some((name, bytes)) = common::fixture(prefix) else {
            return;
        };
        let mut log = parse_bytes(&name, 0, &bytes);
        assert!(mismatches(&bytes, 0, &log)
            .iter()
            .all(|m| is_known_gap(&name, m)));
        change(&mut log);
        let found: Vec<_> = mismatches(&bytes, 0, &log)
            .into_iter()
            .filter(|m| !is_known_gap(&name, m))
            .collect();
        assert!(!found.is_empty(), "{name}: [{what}] change not caught");
        assert!(found.iter().all(|m| m.what == what), "{name}: {found:?}");
    }
}

/// Launcher prefixes, timestamps and line endings the fixtures have too few of, one line each
/// (written for this test from NCCL's format strings and the launchers' documented prefixes):
/// the regexes and the parser read them alike.
const PREFIXED: &str = "0: nodeA:100:101 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x7f00 recvbuff 0x7f80 count 4 datatype 7 op 0 root 0 comm 0xabc0 [nranks=2] stream 0x9a0\r
[1,1]<stdout>:nodeB:200:201 [1] NCCL INFO AllReduce: opCount 1 sendbuff 0x7e00 recvbuff 0x7e80 count 4 datatype 7 op 0 root 0 comm 0xdef0 [nranks=2] stream 0x9b0\r
(RayTrainWorker pid=300, ip=10.72.7.6) nodeC:300:301 [0] NCCL INFO Broadcast: opCount 2 sendbuff 0x1 recvbuff 0x1 count 8 datatype 1 op 0 root 1 comm 0x5550 [nranks=4] stream 0x0\r
(pid=400) nodeD:400:401 [2] NCCL INFO ReduceScatter: opCount a sendbuff 0x2 recvbuff 0x3 count 16 datatype 9 op 2 root 0 comm 0x6660 [nranks=4] stream 0x10\r
nodeE: nodeE:500:501 [3] NCCL INFO Recv: opCount 0 sendbuff (nil) recvbuff 0x4 count 1 datatype 0 op 0 root 2 comm 0x7770 [nranks=4] stream 0x20\r
[rank0]:nodeF:600:601 [0] NCCL INFO AllGather: opCount 0 sendbuff 0x5 recvbuff 0x6 count 2 datatype 4 op 0 root 0 comm 0x8880 [nranks=8] stream 0x30\r
> nodeG:700:701 [0] NCCL INFO Reduce: opCount 3 sendbuff 0x7 recvbuff 0x8 count 5 datatype 6 op 1 root 3 comm 0x9990 [nranks=8] stream 0x40\r
1712345678.123456 nodeA:100:101 [0] NCCL INFO AllReduce: opCount 2 sendbuff 0x7f00 recvbuff 0x7f80 count 4 datatype 7 op 0 root 0 comm 0xabc0 [nranks=2] stream 0x9a0\r
[1712345679.5] nodeA:100:101 [0] NCCL INFO AllReduce: opCount 3 sendbuff 0x7f00 recvbuff 0x7f80 count 4 datatype 7 op 0 root 0 comm 0xabc0 [nranks=2] stream 0x9a0\r
[2026-04-28 14:14:49] nodeA:100:102 [0] misc/socket.cc:50 NCCL WARN Net : Connection closed by remote peer\r
1712345680.000001 nodeA:100:102 [0] transport/net_ib.cc:1200 NCCL WARN NET/IB : Got completion with error 12\r
nodeA:100:101 [0] NCCL INFO ncclCommSplit comm 0xfed0 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 1b000 parent 0xabc0 color 1 key -1 commId 0x1234 - Init COMPLETE\r
nodeA:100:101 [0] NCCL INFO comm 0xfed0 rank 0 nRanks 1 cudaDev 0 busId 1b000 - Destroy COMPLETE\r
nodeA:100:101 [0] NCCL INFO comm 0xabc0 rank 0 nRanks 2 cudaDev 0 busId 1b000 - Abort COMPLETE\r
srun: error: nodeA: task 0: Exited with exit code 1\r
";

#[test]
fn prefixes_timestamps_and_crlf_read_alike() {
    let bytes = PREFIXED.as_bytes();
    let text = Text::read(bytes);
    // What the regexes must find (read by hand from the lines above).
    assert_eq!(text.ops.len(), 9);
    assert_eq!(text.processes.len(), 7);
    assert_eq!(text.ops[&5].process.host, "nodeE");
    assert_eq!(text.ops[&8].timestamp.as_deref(), Some("1712345678.123456"));
    assert_eq!(text.warnings.len(), 2);
    assert_eq!(
        text.warnings[&10].2.as_deref(),
        Some("[2026-04-28 14:14:49]")
    );
    assert_eq!(text.inits[&12].1.key, Some(-1));
    assert_eq!(text.destroys.len(), 2);
    assert_eq!(text.skipped.iter().copied().collect::<Vec<_>>(), [15]);
    let log = parse_bytes("prefixed", 1, bytes);
    let found = mismatches(bytes, 1, &log);
    assert!(
        found.is_empty(),
        "{}",
        found.iter().map(|m| format!("\n  {m}")).collect::<String>()
    );
}

/// Shapes the fixtures do not hold, or hold too few of, one or a few lines each (written for
/// this test from NCCL's and RCCL's format strings): 2.4 ring orders and connections, trees,
/// 2.5's `Ring` connections, the oldest topology headers, a damaged link inside a block and a
/// block another thread's line interrupts, a newer operation name and one not of NCCL's shape,
/// banners bare and behind a launcher prefix, damaged lines of each family, Init START with its
/// layout line and an unfinished split, a `[Symmetric]` kernel, grouped Sends and a repeat,
/// RCCL's `acc`, whole-second and unbracketed timestamps, and a merged write whose second
/// header is glued to the first writer's text. The regexes and the parser read them alike
/// (the values the parser gives them are `tests/line_shapes.rs`'s).
const SHAPES: &str = "nodeA:100:101 [0] NCCL INFO Channel 00 :    0   1
nodeA:100:101 [0] NCCL INFO Channel 01 :    0   1
nodeA:100:101 [0] NCCL INFO Ring 00 : 1 -> 0 -> 1
nodeA:100:101 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1
nodeA:100:101 [0] NCCL INFO Channel 00 : 0[1000] -> 1[2000] via P2P/IPC
nodeA:100:101 [0] NCCL INFO comm 0xabc0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE
nodeA:100:101 [0] NCCL INFO === System : maxWidth 24 ===
nodeA:100:101 [0] NCCL INFO CPU/0 (1/1/2)
nodeA:100:101 [0] NCCL INFO + PCI[12.0] - GPU/1000 (0)
nodeA:100:101 [0] NCCL INFO + PCI[12
nodeA:100:101 [0] NCCL INFO ==========================================
nodeA:100:101 [0] NCCL INFO AlltoAll: opCount 0 sendbuff 0x10 recvbuff 0x20 count 64 datatype 7 op 0 root 0 comm 0xabc0 [nranks=2] stream 0x9a0
RCCL version : 2.27.7-HEAD:0d2c4fd
nodeA:100:101 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x10 recvbuff
nodeA:100:101 [0] NCCL INFO comm 0xabc0 rank 0 nranks 2 cudaDev 0 bus
nodeA:100:101 [0] NCCL INFO AllReduce: 1048576 Byt
nodeA:100:101 [0] NCCL INFO Channel 02/04 :    0   1   2   3xx
nodeA:100:101 [0] NCCL INFO Trees [0] 1/-1/-1->0
nodeB:200:201 [1] NCCL INFO ncclCommInitRank comm 0xdef0 rank 1 nranks 8 cudaDev 1 nvmlDev 1 busId 1b000 commId 0x9 - Init START
nodeB:200:201 [1] NCCL INFO comm 0xdef0 rank 1 nRanks 8 nNodes 2 localRanks 4 localRank 1 MNNVL 0
nodeB:200:201 [1] NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7
nodeB:200:201 [1] NCCL INFO Channel 00/0 : 0[1a000] -> 1[1b000] via P2P/CUMEM/read
nodeB:200:201 [1] NCCL INFO Channel 01/0 : 5[2c000] -> 1[1b000] [receive] via NET/IB/0/GDRDMA
nodeB:200:201 [1] NCCL INFO Trees [0] 2/-1/-1->1->0|0->1->2/-1/-1 [1] 2/-1/-1->1->0|0->1->2/-1/-1
nodeB:200:201 [1] NCCL INFO 2 coll channels, 2 collnet channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer
nodeB:200:201 [1] NCCL INFO ncclCommInitRank comm 0xdef0 rank 1 nranks 8 cudaDev 1 nvmlDev 1 busId 1b000 commId 0x9 - Init COMPLETE
nodeB:200:202 [1] NCCL INFO ncclCommSplit comm 0xfed0 rank 0 nranks 4 cudaDev 1 nvmlDev 1 busId 1b000 parent 0xdef0 color 2 key 0 commId 0xa - Init START
nodeB:200:201 [1] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x1 count 1024 datatype 7 op 0 root 0 comm 0xdef0 [nranks=8] stream 0x6
nodeB:200:201 [1] NCCL INFO AllReduce [Symmetric]: 4096 Bytes -> Kernel ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_f32 nchannels 2 nthreads 512
nodeB:200:201 [1] NCCL INFO Send: opCount 5 sendbuff (nil) recvbuff 0x1000 count 1024 datatype 7 op 0 root 2 comm 0xdef0 [nranks=8] stream 0x6
nodeB:200:201 [1] NCCL INFO Send: opCount 5 sendbuff (nil) recvbuff 0x9000 count 2048 datatype 7 op 0 root 2 comm 0xdef0 [nranks=8] stream 0x6
nodeB:200:201 [1] NCCL INFO Send: opCount 5 sendbuff (nil) recvbuff 0x9000 count 2048 datatype 7 op 0 root 2 comm 0xdef0 [nranks=8] stream 0x6
nodeC:300:301 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7973d6e00400 recvbuff 0x7973d6e00400 acc 0x1234 count 1 datatype 7 op 0 root 0 comm 0x2bc1f840 [nranks=2] stream (nil) task 3 globalrank 1
[1,0]<stdout>:NCCL version 2.5.6+cuda10.2
nodeA:100:102 [0] NCCL INFO Ring 00 : 0[1000] -> 1[2000] via P2P/IPC
1712345678 nodeA:100:101 [0] NCCL INFO Broadcast: opCount 2 sendbuff 0x1 recvbuff 0x1 count 8 datatype 1 op 0 root 0 comm 0xabc0 [nranks=2] stream 0x0
2025-03-01 10:00:00 nodeA:100:101 [0] NCCL INFO Broadcast: opCount 3 sendbuff 0x1 recvbuff 0x1 count 8 datatype 1 op 0 root 0 comm 0xabc0 [nranks=2] stream 0x0
[2025-03-01 10:00:01.25] nodeA:100:101 [0] NCCL INFO Broadcast: opCount 4 sendbuff 0x1 recvbuff 0x1 count 8 datatype 1 op 0 root 0 comm 0xabc0 [nranks=2] stream 0x0
nodeA:100:101 [0] NCCL INFO allreduce: opCount 5 sendbuff 0x1 recvbuff 0x1 count 8 datatype 1 op 0 root 0 comm 0xabc0 [nranks=2] stream 0x0
learnfair062:32615:32615 [0] NCCL INFO Launch mode Parallellearnfair062:32629:32629 [7] NCCL INFO Broadcast: opCount 1 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 comm 0x5 [nranks=8] stream 0x6
nodeD:400:401 [0] NCCL INFO === System : maxWidth 24 maxSpeed 12 ===
nodeD:400:401 [0] NCCL INFO CPU/0 (1/1/2)
nodeD:400:402 [0] NCCL INFO Channel 00/02 :    0   1
nodeD:400:401 [0] NCCL INFO + PCI[12.0] - GPU/1b000 (0)
nodeD:400:401 [0] NCCL INFO ==========================================
";

#[test]
fn shapes_not_in_fixtures_read_alike() {
    let bytes = SHAPES.as_bytes();
    let text = Text::read(bytes);
    // What the regexes must find (read by hand from the lines above).
    let lines = |s: &std::collections::BTreeSet<u64>| s.iter().copied().collect::<Vec<_>>();
    assert_eq!(lines(&text.skipped), [10, 14, 15, 16, 17, 18, 39]);
    assert_eq!(text.garbled, 7);
    assert_eq!(
        text.ops.keys().copied().collect::<Vec<_>>(),
        [12, 28, 30, 31, 32, 33, 36, 37, 38, 40]
    );
    assert_eq!(text.duplicates, 1);
    assert_eq!(text.ops[&33].op.acc, Some(0x1234));
    assert_eq!(text.ops[&36].timestamp.as_deref(), Some("1712345678"));
    assert_eq!(
        text.ops[&37].timestamp.as_deref(),
        Some("2025-03-01 10:00:00")
    );
    assert_eq!(text.ops[&40].process.host, "learnfair062");
    assert_eq!(text.tunings[&29].1.kernel_channels, Some(2));
    assert_eq!(text.starts.keys().copied().collect::<Vec<_>>(), [19, 27]);
    assert_eq!(lines(&text.unfinished), [27]);
    assert_eq!(text.inits[&26].1.func.as_deref(), Some("ncclCommInitRank"));
    assert_eq!(
        text.inits[&26].2.as_ref().and_then(|l| l.local_ranks),
        Some(4)
    );
    assert_eq!(text.inits[&6].2, None);
    assert_eq!(text.tree_lines(), 2);
    assert_eq!(text.connection_lines(), 4);
    assert_eq!(text.first_version.as_deref(), Some("2.27.7-HEAD:0d2c4fd"));
    let log = parse_bytes("shapes", 0, bytes);
    let found = mismatches(bytes, 0, &log);
    assert!(
        found.is_empty(),
        "{}",
        found.iter().map(|m| format!("\n  {m}")).collect::<String>()
    );
}

/// The fields the newer shapes add bite too: one change each in the parser's reading of
/// [`SHAPES`] is reported, at its line and family.
#[test]
fn a_changed_field_of_the_shapes_is_caught() {
    type Change = fn(&mut ParsedLog);
    let cases: [(u64, &str, Change); 10] = [
        (26, INIT, |l| l.inits[1].n_nodes = Some(1)),
        (26, INIT, |l| l.inits[1].mnnvl = None),
        (19, INIT_START, |l| l.init_starts[0].local_rank = Some(1)),
        // 2.4's ring orders: the count is the number of channels printed.
        (1, CHANNELS, |l| l.channels[0].nchannels = Some(4)),
        (28, TUNING, |l| {
            let i = l.ops.iter().position(|o| o.source.line == 28).unwrap();
            l.ops
                .set_sym_kernel(i, "ncclSymDevKernel_AllReduce_LL_sum_f32");
        }),
        (33, OP, |l| {
            let i = l.ops.iter().position(|o| o.source.line == 33).unwrap();
            let mut o = l.ops.get(i).unwrap();
            o.rccl_acc = None;
            replace_op(l, i, &o);
        }),
        (37, OP, |l| {
            let i = l.ops.iter().position(|o| o.source.line == 37).unwrap();
            let mut o = l.ops.get(i).unwrap();
            o.timestamp_ns = o.timestamp_ns.map(|t| t + 3_600_000_000_000);
            replace_op(l, i, &o);
        }),
        (41, TOPOLOGY, |l| {
            let p = l.processes.iter_mut().find(|p| p.process.host == "nodeD");
            p.unwrap().topology.as_mut().unwrap().max_speed_gbps = None;
        }),
        (24, TREE, |l| l.channels[1].trees[1].down = vec![2, -1]),
        (23, CONNECTION, |l| {
            l.channels[1].connections[1].direction = None
        }),
    ];
    let bytes = SHAPES.as_bytes();
    for (line, what, change) in cases {
        let mut log = parse_bytes("shapes", 0, bytes);
        change(&mut log);
        let found = mismatches(bytes, 0, &log);
        let at: Vec<(u64, &str)> = found.iter().map(|m| (m.line, m.what)).collect();
        assert_eq!(at, [(line, what)], "{found:?}");
    }
}

/// `log.ops` with its `i`th operation replaced by `op`.
fn replace_op(log: &mut ParsedLog, i: usize, op: &model::log::LogOp) {
    let old = std::mem::replace(&mut log.ops, LogOps::new());
    for (j, o) in old.iter().enumerate() {
        log.ops.push(if i == j { op } else { &o });
    }
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

// The per-fixture tests below state facts read by hand from the fixtures. Counts of lines and
// records, and each record's line and fields, are the line-by-line test's: the counts these
// tests used to hard-code are gone from them.

#[test]
fn rccl_acc_task_globalrank() {
    let Some(log) = parse("ROCm-ROCm_issue6074") else {
        return;
    };
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
    assert_eq!(log.inits[0].comm, 0x2bc1f840);
    assert_eq!(log.inits[0].comm_id, Some(0xcde2ea451c75c2ba));
    assert_eq!(log.inits[1].bus_id.as_deref(), Some("d000"));
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
}

#[test]
fn markdown_quote_prefix_and_duplicates() {
    let Some(log) = parse("NVIDIA-nccl_issue1238") else {
        return;
    };
    assert!(log
        .ops
        .iter()
        .all(|o| o.process.host == "ip-172-31-54-74" && o.op_count == 0));
    assert_eq!(log.ops.get(0).unwrap().stream, 0x5631f0021140);
    assert_eq!(log.ops.get(0).unwrap().datatype, Some(DataType::Float32));
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
    let o = &log.ops.get(0).unwrap();
    assert_eq!(
        (o.process.host.as_str(), o.process.pid, o.op_count),
        ("node-3", 278, 0x1606)
    );
    assert_eq!(o.comm, 0x555e2c6387e0);
    assert_eq!(o.msg_bytes(), 2359808 * 4);
    assert_eq!(log.ops.last().unwrap().op_count, 0x1609);
    assert_eq!(log.ops.last().unwrap().datatype, Some(DataType::Uint8));
    // The only tuning line comes from node-0 before any op of that process: counted, not attached.
    assert_eq!(
        (log.counters.tuning_lines, log.counters.tuning_attached),
        (1, 0)
    );
}

#[test]
fn sglang_new_tuning_format() {
    let Some(log) = parse("unknown-sglang-notes_tpgds-2node") else {
        return;
    };
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
    assert_eq!(log.processes[0].process.host, "h100clust-worker-1");
    let Some(nohost) = parse("NVIDIA-nccl_issue1595") else {
        return;
    };
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
        (TopoHeader::MaxBw, 48.0, Some(370.8))
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
        (TopoHeader::MaxBw, 24.0, Some(24.0))
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
        assert_eq!(
            (
                log.inits[0].bus_id.as_deref(),
                log.inits[0].nvml_dev,
                log.inits[0].comm_id
            ),
            (None, Some(1), None)
        );
        assert!(log.warnings[0]
            .message
            .starts_with("Mismatched collective detected"));
        assert_eq!(log.warnings[0].cuda_dev, Some(3));
        assert_eq!(log.warnings[0].source.line, 1);
    }
    if let Some(log) = parse("NVIDIA-nccl_issue629") {
        assert_eq!(
            (log.inits[0].bus_id.as_deref(), log.inits[0].nvml_dev),
            (Some("e7000"), None)
        );
    }
    if let Some(log) = parse("NVIDIA-nccl-tests_issue273") {
        assert_eq!(log.init_timings[0].func, None);
        assert_eq!(
            log.init_timings[0].phases.first().map(|(n, _)| n.as_str()),
            Some("kernels")
        );
    }
    if let Some(log) = parse("NVIDIA-nccl_issue1038") {
        assert_eq!(
            log.processes[0].nccl_version.as_deref(),
            Some("2.18.3+cuda12.2")
        );
    }
    if let Some(log) = parse("NVIDIA-nccl_issue262") {
        assert_eq!(log.nccl_version.as_deref(), Some("2.4.8+cuda9.0"));
    }
}

#[test]
fn channels_and_prefixes() {
    if let Some(log) = parse("NVIDIA-nccl_issue1267") {
        let ch = &log.channels[0];
        assert_eq!((ch.comm, ch.nchannels), (Some(0x558ef922a470), Some(32)));
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
