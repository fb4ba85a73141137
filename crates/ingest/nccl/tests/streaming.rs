//! Framing and robustness: chunking, CRLF, gzip, sniffing, arbitrary bytes.

mod common;

use ingest_nccl::{fuzz_parse, is_nccl_log, parse_bytes, LogParser, ParsedLog};
use std::io::Write;
use std::time::{Duration, Instant};

fn chunked(name: &str, bytes: &[u8], step: usize) -> ParsedLog {
    let mut p = LogParser::new(name, 1);
    for c in bytes.chunks(step) {
        p.feed(c);
    }
    p.finish()
}

#[test]
fn chunk_split_invariance() {
    for (name, bytes) in common::fixtures() {
        let whole = parse_bytes(&name, 1, &bytes);
        for step in [1, 7, 4096] {
            assert_eq!(
                chunked(&name, &bytes, step),
                whole,
                "{name} in {step}-byte chunks"
            );
        }
    }
}

fn with(name: &str, bytes: &[u8], threads: usize, window: usize, step: usize) -> ParsedLog {
    let mut p = LogParser::new(name, 1)
        .with_threads(threads)
        .with_window(window);
    for c in bytes.chunks(step) {
        p.feed(c);
    }
    p.finish()
}

/// Reading on several threads cuts the input into blocks at line boundaries; lines that attach
/// to an earlier line of their process (tuning after its op, topology blocks, channels before
/// `Init COMPLETE`, duplicates) must come out as on one thread wherever the cuts fall. Tiny
/// windows put a cut between almost every pair of lines.
#[test]
fn block_split_invariance() {
    // What crosses lines, counted so that the comparison below is not vacuous.
    let (mut attached, mut topologies, mut rings, mut files) = (0, 0, 0, 0);
    for (name, bytes) in common::fixtures() {
        let one = with(&name, &bytes, 1, 1 << 20, bytes.len().max(1));
        attached += one.counters.tuning_attached;
        topologies += one
            .processes
            .iter()
            .filter(|p| p.topology.is_some())
            .count();
        rings += one.channels.iter().filter(|c| !c.rings.is_empty()).count();
        files += 1;
        assert_eq!(
            one,
            parse_bytes(&name, 1, &bytes),
            "{name}: default threads"
        );
        for (threads, window, step) in [
            (2, 1, bytes.len().max(1)),
            (2, 97, bytes.len().max(1)),
            (3, 1000, 4096),
            (4, 4096, 1 << 20),
            (2, 1 << 20, 7),
        ] {
            assert_eq!(
                with(&name, &bytes, threads, window, step),
                one,
                "{name}: {threads} threads, {window}-byte windows, {step}-byte chunks"
            );
        }
    }
    // The real corpus is thin on these (1 tuning line attached, 2 topologies, 5 ring groups
    // when written); the generator's logs below carry thousands.
    if files > 0 {
        assert!(
            topologies > 0 && rings > 0,
            "{attached} tuning lines attached, {topologies} topologies, {rings} ring groups"
        );
    }
}

/// The same on the generator's logs: `tp4` (a tuning line after every operation, topology and
/// channels per rank) and `demo` (one combined log of 8 interleaved processes with duplicates,
/// garbled and truncated lines).
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn block_split_invariance_on_generator_logs() {
    for preset in ["tp4", "demo"] {
        let p = synth::preset(preset).expect("preset");
        let run = synth::generate(&p.config);
        let mut attached = 0;
        for (name, bytes) in &run.files {
            let one = with(name, bytes, 1, 1 << 20, bytes.len().max(1));
            attached += one.counters.tuning_attached;
            for (threads, window, step) in [
                (2, 997, 1 << 20),
                (3, 4096, 65_536),
                (3, 128 * 1024, 1 << 20),
            ] {
                assert_eq!(
                    with(name, bytes, threads, window, step),
                    one,
                    "{preset} {name}: {threads} threads, {window}-byte windows, {step}-byte chunks"
                );
            }
        }
        assert!(attached > 500, "{preset}: {attached} tuning lines attached");
    }
}

/// The fast path (headers remembered, NCCL's own line shapes read in one pass and applied by a
/// lean lane) changes nothing: every real fixture and generator logs in every shape (NCCL
/// versions, timestamps, launcher prefixes, combined logs, duplicates, drops, symmetric kernels)
/// parse to the same result with it off, in 1-byte to whole-file chunks and on threads; and it
/// does take most lines of the generator's logs.
#[test]
fn fast_path_changes_nothing() {
    let parse = |name: &str, bytes: &[u8], fast: bool, threads: usize, step: usize| {
        let mut p = LogParser::new(name, 1)
            .with_fast_path(fast)
            .with_threads(threads)
            .with_window(4096);
        for c in bytes.chunks(step) {
            p.feed(c);
        }
        let n = p.fast_lines();
        (p.finish(), n)
    };
    for (name, bytes) in common::fixtures() {
        let (slow, none) = parse(&name, &bytes, false, 1, bytes.len().max(1));
        assert_eq!(none, 0);
        for (threads, step) in [(1, bytes.len().max(1)), (1, 1), (3, 4096)] {
            assert_eq!(parse(&name, &bytes, true, threads, step).0, slow, "{name}");
        }
    }
    let (mut lines, mut fast) = (0, 0);
    for preset in [
        "tp4",
        "demo",
        "tp4-sym",
        "ep4-alltoall",
        "pp4",
        "dp4-distopt",
    ] {
        for (k, launcher) in synth::Launcher::ALL.iter().enumerate() {
            let mut c = synth::preset(preset).expect("preset").config;
            c.launcher = *launcher;
            c.timestamps = k % 2 == 0;
            c.combined_log = k % 3 == 1;
            let run = synth::generate(&c);
            for (name, bytes) in &run.files {
                let (slow, _) = parse(name, bytes, false, 1, bytes.len().max(1));
                let (quick, n) = parse(name, bytes, true, 1, 1 << 20);
                assert_eq!(quick, slow, "{preset} {launcher:?} {name}");
                assert_eq!(parse(name, bytes, true, 3, 65_536).0, slow, "{name}");
                lines += slow.counters.total_lines;
                fast += n;
            }
        }
    }
    // NCCL's own shapes of operation and tuning lines, after a bare host or a timestamp.
    assert!(
        fast * 3 > lines,
        "{fast} of {lines} lines took the fast path"
    );
}

/// The default window (128 KiB) on a file big enough to be read in parallel (all fixtures,
/// repeated).
#[test]
fn parallel_read_of_a_big_file() {
    let all: Vec<u8> = common::fixtures()
        .iter()
        .flat_map(|(_, b)| b.iter().copied())
        .collect();
    if all.is_empty() {
        return;
    }
    let big = all.repeat((3 << 20) / all.len() + 1);
    let one = with("big", &big, 1, 1 << 20, 1 << 20);
    assert!(one.counters.total_lines > 10_000);
    for (threads, step) in [(2, 1 << 20), (3, 1 << 20), (3, big.len())] {
        assert_eq!(
            with("big", &big, threads, 128 * 1024, step),
            one,
            "{threads} threads, {step}-byte chunks"
        );
    }
}

#[test]
fn crlf_and_missing_final_newline_change_nothing_but_bytes() {
    for (name, bytes) in common::fixtures() {
        let lf = parse_bytes(&name, 1, &bytes);
        let crlf_bytes: Vec<u8> = bytes
            .iter()
            .flat_map(|b| {
                if *b == b'\n' {
                    vec![b'\r', b'\n']
                } else {
                    vec![*b]
                }
            })
            .collect();
        let mut crlf = parse_bytes(&name, 1, &crlf_bytes);
        crlf.counters.bytes = lf.counters.bytes;
        assert_eq!(crlf, lf, "{name} with CRLF");
        let trimmed = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        let mut t = parse_bytes(&name, 1, trimmed);
        t.counters.bytes = lf.counters.bytes;
        // The one other fact about the bytes: the file ends inside its last line.
        assert_eq!(t.counters.unterminated_lines, 1, "{name}");
        t.counters.unterminated_lines = lf.counters.unterminated_lines;
        assert_eq!(t, lf, "{name} without final newline");
    }
}

#[test]
fn gzip_round_trip_and_sniff() {
    let all = common::fixtures();
    for (name, bytes) in &all {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(bytes).unwrap();
        let gz = enc.finish().unwrap();
        let plain = parse_bytes(name, 2, bytes);
        assert_eq!(parse_bytes(name, 2, &gz), plain, "{name} gzipped");
        assert!(is_nccl_log(bytes), "{name} sniffs as an NCCL log");
        assert!(is_nccl_log(&gz), "{name} gzipped sniffs as an NCCL log");
        if bytes.len() > 4000 {
            // The sniffer gets only the first bytes of a file: a cut gzip stream must do.
            assert!(is_nccl_log(&gz[..gz.len() / 2]), "{name} cut gzip sniffs");
        }
        // A damaged stream: keep what inflated, report the damage, never panic.
        let cut = &gz[..gz.len() / 2];
        let part = parse_bytes(name, 2, cut);
        assert!(
            part.diagnostics.iter().any(|d| d.message.contains("gzip")),
            "{name} cut gzip reported"
        );
        assert!(part.ops.len() <= plain.ops.len());
    }
    assert!(!is_nccl_log(b"SQLite format 3\0 whatever"));
    assert!(!is_nccl_log(b"hello\nworld\n"));
    assert!(!is_nccl_log(b""));
    assert!(is_nccl_log(
        b"noise\n3: node1:1:2 [0] NCCL INFO Bootstrap : Using eth0\n"
    ));
    assert!(is_nccl_log(
        b"[1,0]<stdout>:node1:1:2 [0] NCCL INFO comm 0x1 rank 0"
    ));
    assert!(is_nccl_log(b"node1:1:2 [0] init.cc:10 NCCL WARN oops"));
    assert!(is_nccl_log(b"NCCL version 2.18.3+cuda12.2\n"));
}

#[test]
fn synthetic_shapes() {
    let text = "\
1712345678.123456 n1:10:11 [0] NCCL INFO AllReduce: opCount 1a sendbuff 0x10 recvbuff 0x10 count 65536 datatype 7 op 0 root 0 comm 0xabc [nranks=4] stream 0x5
1712345678.200000 n1:10:11 [0] NCCL INFO AllReduce: 262144 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={2..5}
[1,0]<stdout>:n1:10:12 [1] NCCL INFO AllToAll: opCount 2 sendbuff 0x10 recvbuff 0x20 count 8 datatype 10 op 0 root 0 comm 0xdef [nranks=2] stream 0x6
(RayTrainWorker pid=615, ip=10.72.7.6) n1:10:12 [1] NCCL INFO AllToAll [Symmetric]: 16 Bytes -> Kernel ncclSymDevKernel_AllToAll nchannels 3 nthreads 256
n1:10:12 [1] NCCL INFO Gather: opCount 3 sendbuff 0x10 recvbuff 0x20 count 8 datatype 99 op 7 root 1 comm 0xdef [nranks=2] stream 0x6
n1:10:12 [1] NCCL INFO Frobnicate: opCount 4 sendbuff 0x10 recvbuff 0x20 count 8 datatype 0 op 0 root 1 comm 0xdef [nranks=2] stream 0x6
n1:10:12 [1] NCCL INFO ReduceScatter: opCount 5 sendbuff 0x10 recvbuff 0x20 count 8 datatype 0 op 0 root 1 comm 0xdef [nra
n1:10:11 [0] NCCL INFO ncclCommSplit comm 0x99 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 parent 0xabc color 5 key -1 commId 0x77 - Init COMPLETE
n1:10:11 [0] NCCL INFO comm 0x99 rank 1 nranks 2 cudaDev 0 busId 1b000 - Destroy COMPLETE
[2025-01-02 03:04:05] n1:10:11 [0] enqueue.cc:99 NCCL WARN Cuda failure 'out of memory'
";
    let log = parse_bytes("synthetic.log", 0, text.as_bytes());
    assert_eq!(log.ops.len(), 4);
    let ar = &log.ops.get(0).unwrap();
    assert_eq!(ar.timestamp_ns, Some(1_712_345_678_123_456_000));
    assert_eq!(
        (ar.op_count, ar.algo, ar.proto, ar.nchannels),
        (
            0x1a,
            Some(model::Algo::Ring),
            Some(model::Proto::Simple),
            Some(4)
        )
    );
    let a2a = &log.ops.get(1).unwrap();
    assert_eq!(
        (a2a.op, a2a.nchannels, a2a.algo, a2a.cuda_dev),
        (model::OpType::AllToAll, Some(3), None, 1)
    );
    assert_eq!(a2a.msg_bytes(), 8);
    assert_eq!(a2a.sym_kernel.as_deref(), Some("ncclSymDevKernel_AllToAll"));
    let g = &log.ops.get(2).unwrap();
    assert_eq!(
        (g.datatype, g.datatype_code, g.red_op, g.msg_bytes()),
        (None, 99, model::RedOp::Custom(7), 0)
    );
    // An operation name this build does not know, in the same shape: an operation of its own.
    let other = log.ops.get(3).unwrap();
    assert!(matches!(other.op, model::OpType::Other(_)));
    assert_eq!((other.op.name(), other.op_count), ("Frobnicate", 4));
    assert!(!log.diagnostics.iter().any(|d| d.line == 6));
    assert!(log
        .diagnostics
        .iter()
        .any(|d| d.line == 7 && d.message.contains("truncated")));
    let split = &log.inits[0];
    assert_eq!(
        (
            split.split_parent,
            split.split_color,
            split.split_key,
            split.comm_id
        ),
        (Some(0xabc), Some(5), Some(-1), Some(0x77))
    );
    assert_eq!(log.destroys.len(), 1);
    assert_eq!(log.destroys[0].comm, 0x99);
    let w = &log.warnings[0];
    assert_eq!(w.timestamp.as_deref(), Some("[2025-01-02 03:04:05]"));
    assert_eq!(w.message, "Cuda failure 'out of memory'");
    assert_eq!(w.source.line, 10);
    assert_eq!(log.counters.tuning_attached, 2);
}

#[test]
fn old_topology_header_and_headerless_lines() {
    let text = "\
h:5:6 [0] NCCL INFO === System : maxWidth 12.0 totalWidth 24.5 ===
h:5:6 [0] NCCL INFO CPU/0 (1/1/2)
h:5:6 [0] NCCL INFO + PCI[12.0] - PCI/1000
h:5:6 [0] NCCL INFO             + PCI[12.0] - GPU/1b000 (3)
h:5:6 [0] NCCL INFO                         + NVL[20.0] - GPU/1c000
h:5:6 [0] NCCL INFO             + PCI[12.0] - GPU/1c000 (4)
h:5:6 [0] NCCL INFO + PCI[12.0] - NIC/5000
h:5:6 [0] NCCL INFO ==========================================
h:5:6 [0] NCCL INFO === System : maxWidth 99.0 totalWidth 99.0 ===
[0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 2 datatype 7 op 0 root 0 comm 0x1 [nranks=1] stream 0x1
";
    let log = parse_bytes("old.log", 0, text.as_bytes());
    let t = log.processes[0].topology.as_ref().unwrap();
    assert_eq!(
        (t.header, t.max_bw_gbps, t.total_bw_gbps),
        (ingest_nccl::TopoHeader::MaxWidth, 12.0, Some(24.5))
    );
    let ids: Vec<_> = t.nodes.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, ["0", "1000", "1b000", "1c000", "5000"]);
    let g = &t.nodes[2];
    assert_eq!(
        (g.bus_id.as_deref(), g.local_rank),
        (Some("1b000"), Some(3))
    );
    assert_eq!(
        t.nodes[3].local_rank,
        Some(4),
        "rank learnt on the second mention"
    );
    let edges: Vec<_> = t
        .links
        .iter()
        .map(|l| (l.from, l.to, l.label.as_str()))
        .collect();
    assert_eq!(
        edges,
        [
            (0, 1, "PCI"),
            (1, 2, "PCI"),
            (2, 3, "NVL"),
            (1, 3, "PCI"),
            (0, 4, "PCI")
        ]
    );
    // Header-less line in a one-process log: attributed, with an Info diagnostic.
    assert_eq!(log.ops.len(), 1);
    assert_eq!(log.ops.get(0).unwrap().process.pid, 5);
    assert!(log
        .diagnostics
        .iter()
        .any(|d| d.line == 10 && d.severity == model::Severity::Info));
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const SPICE: &[&[u8]] = &[
    b" NCCL INFO ",
    b" NCCL WARN ",
    b"\n",
    b"\r",
    b"(nil)",
    b" opCount ",
    b" Bytes -> ",
    b"- Init COMPLETE",
    b"=== System : maxBw 1 totalBw 2 ===",
    b"+ NVL[1.0] - GPU/0-1000 (0)",
    b"\xff\xfe\xe2\x82",
    b"h:1:2 [0]",
    b"99999999999999999999999",
    b"channel{Lo..Hi}={9..0}",
];

fn mutate(rng: &mut Rng, src: &[u8]) -> Vec<u8> {
    let mut v = src.to_vec();
    for _ in 0..=rng.below(8) {
        let at = rng.below(v.len() + 1);
        match rng.below(6) {
            0 => {
                if let Some(b) = v.get_mut(at) {
                    *b = rng.next() as u8;
                }
            }
            1 => {
                let end = (at + rng.below(64)).min(v.len());
                v.drain(at..end);
            }
            2 => {
                let s = SPICE[rng.below(SPICE.len())];
                v.splice(at..at, s.iter().copied());
            }
            3 => {
                let end = (at + rng.below(200)).min(v.len());
                let dup = v[at..end].to_vec();
                v.splice(at..at, dup);
            }
            4 => v.truncate(at),
            _ => {
                let n = rng.below(32);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                v.splice(at..at, bytes);
            }
        }
    }
    v
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut corpus: Vec<Vec<u8>> = common::fixtures().into_iter().map(|(_, b)| b).collect();
    corpus.push(b"n:1:2 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0x1 [nranks=1] stream 0x1\n".to_vec());
    // NCCLSCOPE_FUZZ_MS / NCCLSCOPE_FUZZ_SEED let a longer, differently seeded run be done by hand.
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let mut rng = Rng(env("NCCLSCOPE_FUZZ_SEED", 0x9e37_79b9_7f4a_7c15) | 1);
    let deadline = Instant::now() + Duration::from_millis(env("NCCLSCOPE_FUZZ_MS", 1000));
    let mut runs = 0u32;
    while Instant::now() < deadline {
        let src = &corpus[rng.below(corpus.len())];
        let data = mutate(&mut rng, src);
        let (whole, chunks) = fuzz_parse(&data);
        assert_eq!(whole.ops.len(), chunks.ops.len());
        assert_eq!(whole.counters, chunks.counters);
        assert_eq!(whole.diagnostics, chunks.diagnostics);
        let _ = is_nccl_log(&data);
        runs += 1;
    }
    // Pure noise and edge cases too.
    for data in [
        &b""[..],
        b"\n\n\n",
        b"\x1f\x8b",
        b"\x1f\x8b\x08\x00garbage",
        b"NCCL INFO",
        b"[0] NCCL INFO",
        b":::: [0] NCCL INFO x",
    ] {
        let _ = fuzz_parse(data);
    }
    assert!(runs > 10, "only {runs} runs");
}

/// No cap on listed lines: past 100 000 findings the text goes, the line numbers stay.
#[test]
fn skipped_lines_are_all_listed_and_text_is_bounded() {
    let n = 100_050u64;
    let mut data = b"n:1:2 [0] NCCL INFO Bootstrap\n".to_vec();
    for i in 0..n {
        data.extend_from_slice(format!("python says {i} {}\n", "x".repeat(300)).as_bytes());
    }
    let log = parse_bytes("noise", 0, &data);
    assert_eq!(log.counters.skipped_lines, n);
    let listed: Vec<_> = log
        .diagnostics
        .iter()
        .filter(|d| d.message.starts_with(ingest_nccl::SKIPPED))
        .collect();
    assert_eq!(listed.len() as u64, n);
    assert!(listed
        .iter()
        .enumerate()
        .all(|(i, d)| d.line == i as u64 + 2));
    assert!(listed[0].message.contains("python says 0 xxx"));
    // The quote is bounded: a 300-byte line is cut.
    assert!(listed[0].message.len() < 260, "{}", listed[0].message);
    assert!(listed[0].message.ends_with('…'));
    let last = listed.last().unwrap();
    assert!(!last.message.contains("python"), "{}", last.message);
    assert!(log
        .diagnostics
        .iter()
        .any(|d| d.line == 0 && d.message.contains("50 findings")));
}

/// Truncated NCCL lines give nothing: each is garbled, skipped and listed, past the 200 notes
/// a kind of note about lines that were still read is capped at.
#[test]
fn every_truncated_line_is_listed() {
    let mut data = Vec::new();
    for i in 0..300 {
        data.extend_from_slice(
            format!("n:1:2 [0] NCCL INFO AllReduce: opCount {i:x} sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0x1 [nra\n").as_bytes(),
        );
    }
    let log = parse_bytes("cut", 0, &data);
    assert!(log.ops.is_empty());
    assert_eq!(log.counters.garbled_lines, 300);
    assert_eq!(log.counters.skipped_lines, 300);
    let lines: Vec<u64> = log
        .diagnostics
        .iter()
        .filter(|d| d.message.starts_with(ingest_nccl::SKIPPED) && d.message.contains("truncated"))
        .map(|d| d.line)
        .collect();
    assert_eq!(lines, (1..=300).collect::<Vec<u64>>());
}

#[test]
fn overlong_lines_are_skipped_in_any_chunking() {
    let mut data = b"n:1:2 [0] NCCL INFO Bootstrap\n".to_vec();
    data.extend(std::iter::repeat_n(b'x', 100_000));
    data.extend_from_slice(b"\nn:1:2 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0x1 [nranks=1] stream 0x1\n");
    let whole = parse_bytes("long", 0, &data);
    assert_eq!(whole.ops.len(), 1);
    assert_eq!(whole.ops.get(0).unwrap().source.line, 3);
    assert_eq!(whole.counters.total_lines, 3);
    assert!(whole
        .diagnostics
        .iter()
        .any(|d| d.line == 2 && d.message.contains("64 KiB")));
    for step in [1, 7, 4096, 70_000] {
        assert_eq!(
            chunked("long", &data, step).counters,
            parse_bytes("long", 1, &data).counters
        );
    }
}
