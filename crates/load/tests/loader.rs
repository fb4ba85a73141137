//! Loading logs: gzip streamed through `LogLoader` as it is fed, and logs recognised by their
//! NCCL lines wherever the first one is (a long preamble before it), while text without one and
//! binary files are refused as before.

use flate2::write::GzEncoder;
use flate2::Compression;
use load::{sniff, InputKind, LoadedLog, LogLoader, Session, SNIFF_BYTES};
use std::io::Write;

/// A made-up log of about `bytes` bytes: two processes' operation and tuning lines.
fn log(bytes: usize) -> Vec<u8> {
    let mut out = String::from("node1:100:101 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n");
    let mut op = 0u64;
    while out.len() < bytes {
        for (pid, dev) in [(100, 0), (200, 1)] {
            let count = 1 + (op * 7919) % 1_000_000;
            out.push_str(&format!(
                "node1:{pid}:{tid} [{dev}] NCCL INFO AllReduce: opCount {op:x} sendbuff \
                 0x7f{a:08x} recvbuff 0x7f{a:08x} count {count} datatype 7 op 0 root 0 comm \
                 0x55d0{pid} [nranks=2] stream 0x55e0{pid}\n\
                 node1:{pid}:{tid} [{dev}] NCCL INFO {b} Bytes -> Algo 1 proto 2 time 12.5\n",
                tid = pid + 1,
                a = op * 4096,
                b = count * 4,
            ));
        }
        op += 1;
    }
    out.into_bytes()
}

/// `bytes` of what a job prints before NCCL does: pip's progress, a config dump, a warning's
/// traceback.
fn preamble(bytes: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < bytes {
        out.extend_from_slice(
            format!(
                "Collecting package-{i}==1.{i}.0\n  Downloading package_{i}-1.{i}.0-py3-none-any.whl (1.2 MB)\n\
                 \x1b[2K   \u{2501}\u{2501}\u{2501}\u{2501} 1.2/1.2 MB 10.1 MB/s eta 0:00:00\r\n\
                 config.model.layers.{i}.hidden_size: 4096\n\
                 Traceback (most recent call last):\n  File \"train.py\", line {i}, in <module>\n",
            )
            .as_bytes(),
        );
        i += 1;
    }
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn load(name: &str, bytes: &[u8], step: usize) -> (LoadedLog, bool) {
    let mut loader = LogLoader::new(name, 0);
    for c in bytes.chunks(step.max(1)) {
        loader.feed(c);
    }
    loader.finish_sniffed(bytes.len() as u64)
}

fn head(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.len().min(SNIFF_BYTES)]
}

#[test]
fn gzip_fed_in_chunks_loads_the_plain_log() {
    let plain = log(2 << 20);
    let gz = gzip(&plain);
    assert_eq!(sniff(head(&gz)), InputKind::Gzip);
    let (want, nccl) = load("a.log", &plain, plain.len());
    assert!(nccl);
    for step in [1, 1000, 1 << 20] {
        let (got, nccl) = load("a.log", &gz, step);
        assert!(nccl);
        assert!(got.parsed == want.parsed, "{step}-byte chunks");
    }
    // Two members, as `gzip -c a b` writes.
    let (a, b) = plain.split_at(plain.len() / 2);
    let mut ab = gzip(a);
    ab.extend(gzip(b));
    assert!(
        load("a.log", &ab, 4096).0.parsed == want.parsed,
        "two members"
    );
}

/// A cut gzip log loads every line inflated before the cut; its report names the file.
#[test]
fn truncated_gzip_loads_what_came_before() {
    let plain = log(1 << 20);
    let gz = gzip(&plain);
    let (log, _) = load("runs/rank1.log.gz", &gz[..gz.len() / 2], 64 * 1024);
    let ops = log.parsed.ops.len();
    let mut session = Session::default();
    let report = session.add_log(log);
    assert!(report.error.is_none());
    assert!(ops > 1000, "{ops} operations kept");
    assert_eq!(
        report.fact("NCCL operations"),
        Some(ops.to_string().as_str())
    );
    let cut: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("cut short"))
        .collect();
    assert_eq!(cut.len(), 1);
    assert_eq!(cut[0].path, "runs/rank1.log.gz");
    assert!(cut[0].message.contains("runs/rank1.log.gz"));
}

/// The first NCCL line after 200 KiB of preamble: the head sniffs as text, the whole file is a
/// log with every operation (gzip-compressed too).
#[test]
fn a_log_after_a_long_preamble_loads_whole() {
    let body = log(300_000);
    let mut late = preamble(200 * 1024);
    assert!(late.len() >= SNIFF_BYTES * 3);
    late.extend_from_slice(&body);
    assert_eq!(sniff(head(&late)), InputKind::Text);
    let (want, _) = load("late.log", &body, body.len());
    for step in [4096, 1 << 20] {
        let (got, nccl) = load("late.log", &late, step);
        assert!(nccl, "{step}");
        assert_eq!(got.parsed.ops.len(), want.parsed.ops.len(), "{step}");
        assert!(got
            .parsed
            .ops
            .iter()
            .eq(want.parsed.ops.iter().map(|mut op| {
                // The same operations, numbered after the preamble's lines.
                op.source.line +=
                    got.parsed.counters.total_lines - want.parsed.counters.total_lines;
                op
            })));
        let mut session = Session::default();
        let report = session.add_log(got);
        assert!(report.error.is_none());
        assert_eq!(
            report.fact("NCCL operations"),
            Some(want.parsed.ops.len().to_string().as_str())
        );
    }
    let (got, nccl) = load("late.log.gz", &gzip(&late), 1 << 20);
    assert!(nccl);
    assert_eq!(got.parsed.ops.len(), want.parsed.ops.len());
}

/// 200 KiB of text without an NCCL line: text from its head, not a log once read. Binary junk
/// is refused from its head alone.
#[test]
fn text_without_nccl_lines_and_binary_are_not_logs() {
    let text = preamble(200 * 1024);
    assert_eq!(sniff(head(&text)), InputKind::Text);
    for step in [1, 4096, text.len()] {
        assert!(!load("notes.txt", &text, step).1, "{step}");
    }
    // A line that merely mentions NCCL INFO (no device, no host:pid:tid) is no NCCL line.
    let mut mention = text.clone();
    mention.extend_from_slice(b"grep 'NCCL INFO' found nothing\n");
    assert!(!load("notes.txt", &mention, 4096).1);
    // Binary: a NUL in the head.
    let mut binary = vec![0x7fu8, b'E', b'L', b'F', 2, 1, 1, 0];
    binary.extend(std::iter::repeat_n(b'x', 100_000));
    assert_eq!(sniff(head(&binary)), InputKind::Unknown);
}
