//! Line shapes found missing or misread in a review of the parser (issue 4): newer operation
//! names, damaged lines of the families the parser reads, merged writes, banners behind launcher
//! prefixes, the oldest topology and ring shapes, symmetric kernels, `Init START`, the
//! communicator's node layout, grouped Sends, and timestamps without a fraction.

use ingest_nccl::{parse_bytes, ParsedLog, TopoHeader, SKIPPED};
use model::OpType;

fn parse(text: &str) -> ParsedLog {
    parse_bytes("shapes.log", 0, text.as_bytes())
}

/// The lines listed as skipped, by line number.
fn skipped(log: &ParsedLog) -> Vec<u64> {
    log.diagnostics
        .iter()
        .filter(|d| d.message.starts_with(SKIPPED))
        .map(|d| d.line)
        .collect()
}

#[test]
fn newer_operation_names_are_operations() {
    let log = parse(
        "\
h:1:2 [0] NCCL INFO AlltoAll: opCount 3 sendbuff 0x7f0000 recvbuff 0x7f1000 count 1024 datatype 10 op 0 root 0 comm 0x5500 [nranks=8] stream 0x77
h:1:2 [0] NCCL INFO AlltoAll: opCount 4 sendbuff 0x7f0000 recvbuff 0x7f1000 count 1024 datatype 10 op 0 root 0 comm 0x5500 [nranks=8] stream 0x77
h:1:2 [0] NCCL INFO AllToAllPivot: opCount 5 sendbuff 0x7f0000 recvbuff 0x7f1000 count 16 datatype 7 op 0 root 0 comm 0x5500 [nranks=8] stream 0x77
h:1:2 [0] NCCL INFO AllGatherV: opCount 6 sendbuff 0x7f0000 recvbuff 0x7f1000 count 16 datatype 9 op 0 root 0 comm 0x5500 [nranks=8] stream 0x77
",
    );
    assert!(log.diagnostics.is_empty(), "{:?}", log.diagnostics);
    let names: Vec<&str> = log.ops.iter().map(|o| o.op.name()).collect();
    assert_eq!(
        names,
        ["AlltoAll", "AlltoAll", "AllToAllPivot", "AllGatherV"]
    );
    let by_type: Vec<(&str, u64)> = log
        .ops_by_type()
        .into_iter()
        .map(|(op, n)| (op.name(), n))
        .collect();
    // Ordered by name after the operations this build names (none here).
    assert_eq!(
        by_type,
        [("AllGatherV", 1), ("AllToAllPivot", 1), ("AlltoAll", 2)]
    );
    let a2a = log.ops.get(0).unwrap();
    assert!(matches!(a2a.op, OpType::Other(_)));
    assert_eq!((a2a.op_count, a2a.msg_bytes()), (3, 1024));
}

/// Lines of the families the parser reads, cut short or glued to other text: each is skipped,
/// counted as garbled and listed with its line number; the lines around them still load.
#[test]
fn damaged_lines_of_known_families_are_skipped_and_listed() {
    let text = "\
h:1:2 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 comm 0x5 [nranks=2] stream 0x6
h:1:2 [0] NCCL INFO AllReduce: opCo
h:1:2 [0] NCCL INFO AllReduce: opCount 2 sendbuff 0x1 recvbu
h:1:2 [0] NCCL INFO AllReduce: 1048576 Byt
h:1:2 [0] NCCL INFO AllReduce: 1048576 Bytes -> Alg
h:1:2 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x9 - Init COMPL
h:1:2 [0] NCCL INFO ncclCommInitRank comm 0x5 rank 0 nranks 2 cudaDev 0 nvmlDev 0 bu
h:1:2 [0] NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 2 tot
h:1:2 [0] NCCL INFO Channel 00/02 :    0   1   2   3xx
h:1:2 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 - Destroy COMPLE
h:1:2 [0] NCCL INFO === System : maxBw 24.0 totalBw 24.0 ===
h:1:2 [0] NCCL INFO CPU/0 (1/2/-1)
h:1:2 [0] NCCL INFO + PCI[24.0] - GPU/81000 (0)
h:1:2 [0] NCCL INFO + PCI[24
h:1:2 [0] NCCL INFO + PCI[24.0] - NIC/d1000
h:1:2 [0] NCCL INFO ==========================================
h:1:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
h:1:2 [0] NCCL INFO comm 0x5 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0
h:1:2 [0] NCCL INFO Channel 00/0 : 0[81000] -> 1[82000] via P2P/IPC/read
h:1:2 [0] NCCL INFO AllReduce: opCount 3 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 comm 0x5 [nranks=2] stream 0x6
";
    let log = parse(text);
    assert_eq!(skipped(&log), [2, 3, 4, 5, 6, 7, 8, 9, 10, 14]);
    assert_eq!(log.counters.skipped_lines, 10);
    assert_eq!(log.counters.garbled_lines, 10);
    // Each listed line quotes its text.
    for d in log.diagnostics.iter().filter(|d| d.line > 0) {
        assert!(d.message.contains("NCCL INFO"), "{}", d.message);
    }
    // What was whole still loads: the two operations, the topology around the bad link line,
    // and the other INFO lines stay silent.
    let counts: Vec<u64> = log.ops.iter().map(|o| o.op_count).collect();
    assert_eq!(counts, [1, 3]);
    let topo = log.processes[0].topology.as_ref().unwrap();
    assert_eq!(topo.nodes.len(), 3);
    assert_eq!(topo.links.len(), 2);
}

/// Two writes merged into one line, the second header glued to the first writer's text: the
/// second line goes to its own (known) process, not to a process named by the glued text.
#[test]
fn merged_lines_keep_their_writer() {
    let text = "\
learnfair062:32629:32629 [7] NCCL INFO Bootstrap : Using eth0
learnfair062:32615:32615 [0] NCCL INFO Launch mode Parallellearnfair062:32629:32629 [7] NCCL INFO Broadcast: opCount 1 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 comm 0x5 [nranks=8] stream 0x6
h:1:2 [0] NCCL INFO AllReduce: opCount 3 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 comm 0x5 [nranks=2] stream 0x6h:1:2 [0] NCCL INFO AllReduce: opCount 4 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 comm 0x5 [nranks=2] stream 0x6
";
    let log = parse(text);
    let hosts: Vec<String> = log
        .processes
        .iter()
        .map(|p| format!("{}:{}", p.process.host, p.process.pid))
        .collect();
    assert_eq!(hosts, ["learnfair062:32629", "h:1"]);
    let ops: Vec<(String, u64)> = log
        .ops
        .iter()
        .map(|o| (format!("{}:{}", o.process.host, o.process.pid), o.op_count))
        .collect();
    assert_eq!(ops, [("learnfair062:32629".into(), 1), ("h:1".into(), 4)]);
    assert_eq!(log.counters.garbled_lines, 2);
}

#[test]
fn banners_behind_prefixes_and_rccls() {
    for (text, want) in [
        (
            "[1,0]<stdout>:NCCL version 2.5.6+cuda10.2\n",
            "2.5.6+cuda10.2",
        ),
        (
            "[default0]:NCCL version 2.22.3+cuda12.4\n",
            "2.22.3+cuda12.4",
        ),
        (
            "TARS:829507:829507 [0] NCCL INFO RCCL version : 2.27.7-HEAD:0d2c4fd\n",
            "2.27.7-HEAD:0d2c4fd",
        ),
        (
            "RCCL version : 2.27.7-HEAD:0d2c4fd\n",
            "2.27.7-HEAD:0d2c4fd",
        ),
    ] {
        let log = parse(text);
        assert_eq!(log.nccl_version.as_deref(), Some(want), "{text}");
        assert_eq!(log.counters.skipped_lines, 0, "{text}");
    }
}

#[test]
fn the_oldest_topology_headers() {
    for (header, total, speed) in [
        ("=== System : maxWidth 24 ===", None, None),
        ("=== System : maxWidth 24 maxSpeed 12 ===", None, Some(12.0)),
        (
            "=== System : maxWidth 24.0 totalWidth 48.0 ===",
            Some(48.0),
            None,
        ),
    ] {
        let text = format!(
            "h:1:2 [0] NCCL INFO {header}\nh:1:2 [0] NCCL INFO CPU/0 (1/1/2)\nh:1:2 [0] NCCL INFO + PCI[12.0] - GPU/1b000 (0)\nh:1:2 [0] NCCL INFO ==========================================\n"
        );
        let log = parse(&text);
        let t = log.processes[0].topology.as_ref().expect(header);
        assert_eq!(
            (t.header, t.max_bw_gbps, t.total_bw_gbps, t.max_speed_gbps),
            (TopoHeader::MaxWidth, 24.0, total, speed),
            "{header}"
        );
        assert_eq!((t.nodes.len(), t.links.len()), (2, 1));
        assert!(
            log.diagnostics.is_empty(),
            "{header}: {:?}",
            log.diagnostics
        );
    }
}

/// NCCL 2.4's ring orders (`Channel 00 :` without the count) and the tree lines of every era.
#[test]
fn old_rings_and_trees() {
    let text = "\
aliyun:1:2 [0] NCCL INFO Channel 00 :    0   1
aliyun:1:2 [0] NCCL INFO Channel 01 :    0   1
aliyun:1:2 [0] NCCL INFO Ring 00 : 1 -> 0 -> 1
aliyun:1:2 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1
aliyun:1:2 [0] NCCL INFO comm 0x7f3fd4001980 rank 0 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE
";
    let log = parse(text);
    assert_eq!(log.channels.len(), 1);
    let ch = &log.channels[0];
    assert_eq!((ch.comm, ch.nchannels), (Some(0x7f3f_d400_1980), Some(2)));
    let orders: Vec<&[u32]> = ch.rings.iter().map(|r| r.order.as_slice()).collect();
    assert_eq!(orders, [&[0, 1][..], &[0, 1][..]]);
    let trees: Vec<(u32, i64, Vec<i64>)> = ch
        .trees
        .iter()
        .map(|t| (t.channel, t.up, t.down.clone()))
        .collect();
    assert_eq!(trees, [(0, -1, vec![1, -1, -1]), (1, 1, vec![-1, -1, -1])]);
}

/// A `[Symmetric]` line gives its operation the kernel it names; a grouped AllGather's tuning
/// lines go to the call whose whole buffer they print.
#[test]
fn symmetric_kernels_and_grouped_tuning() {
    let text = "\
h:1:2 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x1 count 1024 datatype 7 op 0 root 0 comm 0x5 [nranks=4] stream 0x6
h:1:2 [0] NCCL INFO AllReduce [Symmetric]: 4096 Bytes -> Kernel ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_f32 nchannels 2 nthreads 512
h:1:2 [0] NCCL INFO AllGather: opCount 2 sendbuff 0x1 recvbuff 0x2 count 1024 datatype 7 op 0 root 0 comm 0x5 [nranks=2] stream 0x6
h:1:2 [0] NCCL INFO AllGather: opCount 3 sendbuff 0x3 recvbuff 0x4 count 2048 datatype 9 op 0 root 0 comm 0x5 [nranks=2] stream 0x6
h:1:2 [0] NCCL INFO AllGather: 8192 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}
h:1:2 [0] NCCL INFO AllGather: 8192 Bytes -> Algo PAT proto LL channel{Lo..Hi}={0..0}
";
    let log = parse(text);
    let ar = log.ops.get(0).unwrap();
    assert_eq!(
        ar.sym_kernel.as_deref(),
        Some("ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_f32")
    );
    assert_eq!(ar.nchannels, Some(2));
    // Both AllGathers move 8192 bytes in all (4096 × 2 ranks); each line takes the latest
    // free one.
    let ag: Vec<_> = [1, 2]
        .iter()
        .map(|&i| log.ops.get(i).unwrap())
        .map(|o| (o.op_count, o.algo.map(|a| a.name()), o.nchannels))
        .collect();
    assert_eq!(ag, [(2, Some("PAT"), Some(1)), (3, Some("RING"), Some(2))]);
    assert_eq!(log.counters.tuning_attached, 3);
}

#[test]
fn init_start_and_the_communicators_layout() {
    let text = "\
h:1:2 [0] NCCL INFO ncclCommInitRank comm 0x5 rank 1 nranks 8 cudaDev 1 nvmlDev 1 busId 1b000 commId 0x9 - Init START
h:1:2 [0] NCCL INFO comm 0x5 rank 1 nRanks 8 nNodes 2 localRanks 4 localRank 1 MNNVL 0
h:1:2 [0] NCCL INFO ncclCommInitRank comm 0x5 rank 1 nranks 8 cudaDev 1 nvmlDev 1 busId 1b000 commId 0x9 - Init COMPLETE
h:1:3 [0] NCCL INFO ncclCommSplit comm 0x7 rank 0 nranks 4 cudaDev 1 nvmlDev 1 busId 1b000 parent 0x5 color 2 key 0 commId 0xa - Init START
";
    let log = parse(text);
    assert_eq!(log.init_starts.len(), 2);
    assert_eq!(log.inits.len(), 1);
    let done = &log.inits[0];
    assert_eq!(
        (
            done.func.as_deref(),
            done.n_nodes,
            done.local_ranks,
            done.local_rank,
            done.mnnvl
        ),
        (
            Some("ncclCommInitRank"),
            Some(2),
            Some(4),
            Some(1),
            Some(false)
        )
    );
    let split = &log.init_starts[1];
    assert_eq!(
        (
            split.func.as_deref(),
            split.comm,
            split.split_parent,
            split.source.line
        ),
        (Some("ncclCommSplit"), 0x7, Some(0x5), 4)
    );
    // The split never completed: noted at its start line, and not as a skipped line.
    let notes: Vec<(u64, &str)> = log
        .diagnostics
        .iter()
        .map(|d| (d.line, d.message.as_str()))
        .collect();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].0, 4);
    assert!(notes[0].1.contains("0x7") && notes[0].1.contains("no Init COMPLETE"));
    assert_eq!(log.counters.skipped_lines, 0);
}

#[test]
fn rccl_acc_is_kept() {
    let log = parse("TARS:829507:829507 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7973d6e00400 recvbuff 0x7973d6e00400 acc 0x1234 count 1 datatype 7 op 0 root 0 comm 0x2bc1f840 [nranks=2] stream (nil) task 3 globalrank 1\n");
    let o = log.ops.get(0).unwrap();
    assert_eq!(
        (o.rccl_acc, o.rccl_task, o.rccl_global_rank),
        (Some(0x1234), Some(3), Some(1))
    );
}

/// Two Sends to one peer in one group share an opCount but not their buffers: two operations,
/// not a line printed twice; the same line twice still is.
#[test]
fn grouped_sends_to_one_peer_are_not_repeats() {
    let text = "\
h:1:2 [0] NCCL INFO Send: opCount 5 sendbuff (nil) recvbuff 0x1000 count 1024 datatype 7 op 0 root 1 comm 0x5 [nranks=2] stream 0x6
h:1:2 [0] NCCL INFO Send: opCount 5 sendbuff (nil) recvbuff 0x9000 count 2048 datatype 7 op 0 root 1 comm 0x5 [nranks=2] stream 0x6
h:1:2 [0] NCCL INFO Send: opCount 5 sendbuff (nil) recvbuff 0x9000 count 2048 datatype 7 op 0 root 1 comm 0x5 [nranks=2] stream 0x6
";
    let log = parse(text);
    assert_eq!(log.ops.len(), 3);
    assert_eq!(log.counters.duplicate_ops, 1);
    let lines: Vec<u64> = log.diagnostics.iter().map(|d| d.line).collect();
    assert_eq!(lines, [3]);
}

#[test]
fn timestamps_without_a_fraction_or_brackets() {
    let text = "\
1712345678 h:1:2 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 comm 0x5 [nranks=2] stream 0x6
2025-03-01 10:00:00 h:1:2 [0] NCCL INFO AllReduce: opCount 2 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 comm 0x5 [nranks=2] stream 0x6
2025-03-01 10:00:01 h:1:2 [0] init.cc:12 NCCL WARN Cuda failure
";
    let log = parse(text);
    let ts: Vec<Option<i64>> = log.ops.iter().map(|o| o.timestamp_ns).collect();
    assert_eq!(
        ts,
        [
            Some(1_712_345_678_000_000_000),
            Some(1_740_823_200_000_000_000)
        ]
    );
    let w = &log.warnings[0];
    assert_eq!(w.timestamp.as_deref(), Some("2025-03-01 10:00:01"));
    assert_eq!(w.timestamp_ns, Some(1_740_823_201_000_000_000));
}

/// Found by the line-by-line fixture test's author on hand-written lines.
#[test]
fn review_findings() {
    // A cut-off 2.19+ Destroy line (capital `nRanks`) and a damaged topology header are
    // skipped and counted as garbled.
    let log = parse(
        "\
h:1:2 [0] NCCL INFO comm 0x5 rank 0 nRanks 2 cudaDev 0 busId 1000 - Destroy COMPLE
h:1:2 [0] NCCL INFO === System : max
",
    );
    assert_eq!(skipped(&log), [1, 2]);
    assert_eq!(log.counters.garbled_lines, 2);
    // A start after the last completion of a reused address did not finish.
    let log = parse(
        "\
h:1:2 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 - Init START
h:1:2 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE
h:1:2 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 - Destroy COMPLETE
h:1:2 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 - Init START
",
    );
    let notes: Vec<u64> = log.diagnostics.iter().map(|d| d.line).collect();
    assert_eq!(notes, [4]);
    // A cut-off line of an operation this file printed under a name this build does not know.
    let log = parse(
        "\
h:1:2 [0] NCCL INFO AlltoAll: opCount 3 sendbuff 0x1 recvbuff 0x2 count 4 datatype 7 op 0 root 0 comm 0x5 [nranks=2] stream 0x6
h:1:2 [0] NCCL INFO AlltoAll: opCo
",
    );
    assert_eq!(skipped(&log), [2]);
    // A tuning line naming an algorithm this build does not know is still a tuning line: its
    // operation gets the channels.
    let log = parse(
        "\
h:1:2 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x1 count 1024 datatype 7 op 0 root 0 comm 0x5 [nranks=4] stream 0x6
h:1:2 [0] NCCL INFO AllReduce: 4096 Bytes -> Algo FOO proto BAR channel{Lo..Hi}={0..3}
",
    );
    assert!(log.diagnostics.is_empty(), "{:?}", log.diagnostics);
    let o = log.ops.get(0).unwrap();
    assert_eq!((o.algo, o.proto, o.nchannels), (None, None, Some(4)));
    assert_eq!(log.counters.tuning_attached, 1);
}
