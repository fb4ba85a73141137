//! The lines the diagnosis reads besides operations (issue 31): PyTorch's watchdog and error
//! lines in the same file (kept as framework records, attributed, not skipped), `NCCL_*`
//! settings, networks, addresses and failed calls; through the whole parser, chunked anywhere.

use ingest_nccl::{
    parse_bytes, ConfigFact, FrameworkEvent, LogParser, ParsedLog, WorkCause, SKIPPED,
};

fn parse(text: &str) -> ParsedLog {
    parse_bytes("diag.log", 0, text.as_bytes())
}

fn skipped(log: &ParsedLog) -> Vec<u64> {
    log.diagnostics
        .iter()
        .filter(|d| d.message.starts_with(SKIPPED))
        .map(|d| d.line)
        .collect()
}

const ONE_RANK: &str = "\
node1:4242:4242 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.
node1:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>
node1:4242:4300 [0] NCCL INFO Using network Socket
node1:4242:4242 [0] NCCL INFO AllReduce: opCount 5 sendbuff 0x7f00 recvbuff 0x7f00 count 1 datatype 7 op 0 root 0 comm 0x55 [nranks=2] stream 0x66
Traceback (most recent call last):
[rank1]:[E1016 12:00:01.000000001 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.
[rank1]:[E1016 12:00:01.000000002 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID 0(default_pg) Rank 1] Timeout at NCCL work: 6, last enqueued NCCL work: 6, last completed NCCL work: 5.
node1:4242:4350 [0] transport/net_socket.cc:540 NCCL WARN NET/Socket : socket progress error
node1:4242:4350 [0] NCCL INFO transport/net.cc:1008 -> 6
node1:4242:4350 [0] NCCL INFO proxy.cc:858 -> 6 [Proxy Thread]
[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.20.5
[rank1]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.
[rank1]: Last error:
[rank1]: socketProgress: Connection closed by remote peer node2<35711>
";

#[test]
fn framework_lines_are_records_of_the_files_process() {
    let log = parse(ONE_RANK);
    let lines: Vec<u64> = log.framework.iter().map(|f| f.source.line).collect();
    // The `Last error:` line (13) and the line after it (14) make one record.
    assert_eq!(lines, [6, 7, 11, 12, 13]);
    assert!(log
        .framework
        .iter()
        .all(|f| f.process.as_ref().is_some_and(|p| p.pid == 4242) && f.rank == Some(1)));
    assert!(matches!(
        log.framework[0].event,
        FrameworkEvent::WatchdogTimeout {
            seq: 6,
            ran_ms: Some(600_042),
            ..
        }
    ));
    assert!(matches!(
        log.framework[1].event,
        FrameworkEvent::WorkStatus {
            cause: WorkCause::Timeout,
            work: Some(6),
            last_enqueued: Some(6),
            last_completed: Some(5)
        }
    ));
    match &log.framework[4].event {
        FrameworkEvent::Error { message } => assert_eq!(
            message,
            "Last error: socketProgress: Connection closed by remote peer node2<35711>"
        ),
        other => panic!("{other:?}"),
    }
    // Only the traceback header is foreign text now.
    assert_eq!(skipped(&log), [5]);
    // Line 11 names `NCCL version 2.20.5`: it counts as a banner (an NCCL line) as before.
    assert_eq!(log.counters.framework_lines, 5);
    assert_eq!(log.nccl_version.as_deref(), Some("2.20.5"));
}

#[test]
fn settings_networks_addresses_and_failed_calls() {
    let log = parse(ONE_RANK);
    let facts: Vec<(u64, &ConfigFact)> = log
        .config
        .iter()
        .map(|c| (c.source.line, &c.fact))
        .collect();
    assert_eq!(
        facts,
        [
            (
                1,
                &ConfigFact::Setting {
                    name: "NCCL_IB_DISABLE".into(),
                    value: "1".into()
                }
            ),
            (
                2,
                &ConfigFact::Address {
                    iface: "eth0".into(),
                    ip: "10.0.0.7".into()
                }
            ),
            (3, &ConfigFact::Network("Socket".into())),
        ]
    );
    let calls: Vec<(u64, &str, i32, Option<&str>)> = log
        .failed_calls
        .iter()
        .map(|c| (c.source.line, c.site.as_str(), c.code, c.thread.as_deref()))
        .collect();
    assert_eq!(
        calls,
        [
            (9, "transport/net.cc:1008", 6, None),
            (10, "proxy.cc:858", 6, Some("Proxy Thread"))
        ]
    );
    assert!(log.failed_calls.iter().all(|c| c.tid == 4350));
}

/// Chunked at every size, threads or not: the same records (the continuation of `Last error:`
/// spans a chunk boundary at some cut).
#[test]
fn chunking_changes_nothing() {
    let whole = parse(ONE_RANK);
    for step in 1..40 {
        let mut p = LogParser::new("diag.log", 0).with_threads(1);
        for c in ONE_RANK.as_bytes().chunks(step) {
            p.feed(c);
        }
        assert_eq!(p.finish(), whole, "step {step}");
    }
}

/// With several processes in the file a framework line belongs to none of them (unless a Ray
/// prefix names its pid); with no NCCL process yet, to none either.
#[test]
fn attribution_needs_a_single_process_or_a_pid() {
    let log = parse(
        "\
a:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0x5 [nranks=2] stream 0x6
b:2:2 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0x7 [nranks=2] stream 0x6
[rank0]:[E1016 12:00:01.1 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1000) ran for 1001 milliseconds before timing out.
(RayWorkerWrapper pid=2, ip=10.0.0.2) [rank1]:[E1016 12:00:01.2 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1000) ran for 1002 milliseconds before timing out.
",
    );
    let who: Vec<Option<u32>> = log
        .framework
        .iter()
        .map(|f| f.process.as_ref().map(|p| p.pid))
        .collect();
    assert_eq!(who, [None, Some(2)]);
    let pre = parse("[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=158, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800872 milliseconds before timing out.\n");
    assert_eq!(pre.framework.len(), 1);
    assert_eq!(pre.framework[0].process, None);
}
