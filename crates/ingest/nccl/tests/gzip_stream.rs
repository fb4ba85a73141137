//! gzip logs stream: inflated chunk by chunk as they are fed ([`LogStream`]), multi-member
//! files read whole, damaged or cut streams keep what inflated before the damage and say so.

mod common;

use flate2::write::GzEncoder;
use flate2::{Compression, GzBuilder};
use ingest_nccl::{fuzz_parse, parse_bytes, LogStream, ParsedLog};
use model::Severity;
use std::io::Write;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// `bytes` in a member whose header carries a name, a comment, an extra field and a header
/// check (what `gzip` and other writers may put there).
fn gzip_with_header(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzBuilder::new()
        .filename("rank0.log")
        .comment("from a test")
        .extra(vec![7u8; 300])
        .mtime(1_700_000_000)
        .write(Vec::new(), Compression::fast());
    enc.write_all(bytes).unwrap();
    let mut gz = enc.finish().unwrap();
    // flate2 writes no header check; set FHCRC and put two bytes after the header's fields.
    let end = 10 + 2 + 300 + "rank0.log\0from a test\0".len();
    gz[3] |= 0x02;
    gz.splice(end..end, [0xab, 0xcd]);
    gz
}

fn streamed(name: &str, bytes: &[u8], step: usize, block: Option<usize>) -> ParsedLog {
    let mut s = LogStream::new(name, 0);
    if let Some(b) = block {
        s = s.with_gzip_block(b);
    }
    for c in bytes.chunks(step.max(1)) {
        s.feed(c);
    }
    s.finish()
}

/// A generated log of about `bytes` bytes: an init line, then operation and tuning lines of two
/// processes with varied counts.
fn generated(bytes: usize) -> Vec<u8> {
    let mut out = String::from(
        "noise before the log\nnode1:100:101 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n",
    );
    let mut op = 0u64;
    while out.len() < bytes {
        for (pid, dev) in [(100, 0), (200, 1)] {
            out.push_str(&format!(
                "node1:{pid}:{tid} [{dev}] NCCL INFO AllReduce: opCount {op:x} sendbuff 0x7f{a:08x} \
                 recvbuff 0x7f{a:08x} count {count} datatype 7 op 0 root 0 comm 0x55d0{pid} \
                 [nranks=2] stream 0x55e0{pid}\n",
                tid = pid + 1,
                a = op * 4096,
                count = 1 + (op * 7919) % 1_000_000,
            ));
            out.push_str(&format!(
                "node1:{pid}:{tid} [{dev}] NCCL INFO {count} Bytes -> Algo 1 proto 2 time 12.5\n",
                tid = pid + 1,
                count = (1 + (op * 7919) % 1_000_000) * 4,
            ));
        }
        op += 1;
    }
    out.into_bytes()
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut all = common::fixtures();
    all.push(("generated.log".into(), generated(300_000)));
    all
}

#[test]
fn gzip_fed_in_chunks_equals_the_plain_log() {
    for (name, plain) in corpus() {
        let want = streamed(&name, &plain, plain.len(), None);
        for gz in [gzip(&plain), gzip_with_header(&plain)] {
            for step in [1, 2, 7, 4096, 1 << 20, gz.len()] {
                assert!(
                    streamed(&name, &gz, step, None) == want,
                    "{name} gzipped, {step}-byte chunks"
                );
            }
            // Inflated a few bytes at a time: cuts through every header field and trailer.
            for block in [1, 3, 10, 11, 313] {
                assert!(
                    streamed(&name, &gz, 4096, Some(block)) == want,
                    "{name} gzipped, {block}-byte blocks"
                );
            }
            let (whole, chunked) = fuzz_parse(&gz);
            assert!(whole == chunked, "{name}: fuzz_parse on gzip");
        }
    }
}

/// `gzip -c a b > ab.gz`: two members, read as the text of both.
#[test]
fn multi_member_gzip() {
    let text = generated(200_000);
    let (a, b) = text.split_at(text.len() / 3);
    let want = parse_bytes("ab.log", 0, &text);
    let mut ab = gzip(a);
    ab.extend(gzip_with_header(b));
    // A third member that holds nothing, as `gzip -c a /dev/null` adds.
    ab.extend(gzip(b""));
    for step in [1, 13, 65536, ab.len()] {
        assert!(
            streamed("ab.log", &ab, step, None) == want,
            "{step}-byte chunks"
        );
    }
    for block in [1, 9, 4096] {
        assert!(
            streamed("ab.log", &ab, 1000, Some(block)) == want,
            "{block}"
        );
    }
    assert!(want.diagnostics.iter().all(|d| !d.message.contains("gzip")));
    // With the system's gzip where there is one: its own multi-member output.
    if let Some(system) = system_gzip(&[a, b]) {
        assert!(parse_bytes("ab.log", 0, &system) == want, "gzip -c a b");
    }
}

/// `gzip -c a b` by the system's gzip, when it has one.
fn system_gzip(parts: &[&[u8]]) -> Option<Vec<u8>> {
    let dir = std::env::temp_dir().join(format!("ncclscope-gzip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let mut names = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let f = dir.join(format!("part{i}.log"));
        std::fs::write(&f, p).ok()?;
        names.push(f);
    }
    let out = std::process::Command::new("gzip")
        .arg("-c")
        .args(&names)
        .output()
        .ok();
    let _ = std::fs::remove_dir_all(&dir);
    out.filter(|o| o.status.success()).map(|o| o.stdout)
}

fn errors(log: &ParsedLog) -> Vec<&str> {
    log.diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.message.as_str())
        .collect()
}

/// A cut stream keeps every line inflated before the cut and ends with an error naming the file.
#[test]
fn truncated_gzip_keeps_what_inflated_and_says_so() {
    let text = generated(400_000);
    let gz = gzip(&text);
    let full = parse_bytes("run/rank3.log.gz", 0, &text);
    for keep in [gz.len() / 2, gz.len() - 9, gz.len() - 1, 11, 5] {
        let cut = &gz[..keep];
        let got = parse_bytes("run/rank3.log.gz", 0, cut);
        let errs = errors(&got);
        assert_eq!(errs.len(), 1, "{keep}: {errs:?}");
        assert!(
            errs[0].contains("run/rank3.log.gz") && errs[0].contains("cut short"),
            "{keep}: {errs:?}"
        );
        // Exactly the lines of the text that came out before the cut.
        let inflated = got.counters.bytes as usize;
        let prefix = parse_bytes("run/rank3.log.gz", 0, &text[..inflated]);
        assert!(got.ops == prefix.ops, "{keep}");
        if keep >= gz.len() - 9 {
            // Only the trailer is missing: every line is there.
            assert!(got.ops == full.ops, "{keep}");
        }
        if keep == gz.len() / 2 {
            assert!(
                got.ops.len() > full.ops.len() / 4,
                "{keep}: {}",
                got.ops.len()
            );
        }
        for step in [1, 17, 4096] {
            assert!(
                streamed("run/rank3.log.gz", cut, step, None) == got,
                "{keep}/{step}"
            );
        }
    }
    // Only the magic bytes: a header cut short.
    let magic = parse_bytes("m.gz", 0, &[0x1f, 0x8b]);
    assert!(errors(&magic)[0].contains("header"), "{:?}", errors(&magic));
}

/// Corrupt compressed data or a wrong check: an error, the lines before it kept, whole and
/// chunked equal.
#[test]
fn damaged_gzip_keeps_what_inflated_and_says_so() {
    let text = generated(300_000);
    let gz = gzip(&text);
    let mut bad = gz.clone();
    for b in &mut bad[gz.len() / 2..gz.len() / 2 + 64] {
        *b = 0xff;
    }
    let got = parse_bytes("bad.gz", 0, &bad);
    let errs = errors(&got);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("bad.gz"), "{errs:?}");
    // Garbage may still inflate into some text before the damage is found (or only the
    // check then fails): every line before the damaged spot is there.
    let before = parse_bytes("bad.gz", 0, &gz[..gz.len() / 2]);
    let n = before.ops.len() - 1;
    assert!(n > 100, "{n}");
    let first = |log: &ParsedLog| log.ops.iter().take(n).collect::<Vec<_>>();
    assert!(first(&got) == first(&before), "the first {n} operations");
    for step in [1, 7, 1000, 65536] {
        assert!(
            streamed("bad.gz", &bad, step, None) == got,
            "{step}-byte chunks"
        );
    }
    // A second member whose first block has the reserved type 11: damaged at once, the first
    // member's lines all there.
    let mut junk = gz.clone();
    junk.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x07, 0, 0, 0]);
    let got = parse_bytes("junk.gz", 0, &junk);
    let errs = errors(&got);
    assert!(
        errs[0].contains("junk.gz") && errs[0].contains("damaged"),
        "{errs:?}"
    );
    assert!(got.ops == parse_bytes("junk.gz", 0, &text).ops);
    for step in [1, 7, 1000] {
        assert!(
            streamed("junk.gz", &junk, step, None) == got,
            "{step}-byte chunks"
        );
    }
    // The trailer's CRC changed: every line inflated, then the mismatch reported.
    let mut crc = gz.clone();
    let at = crc.len() - 8;
    crc[at] ^= 1;
    let got = parse_bytes("crc.gz", 0, &crc);
    assert!(got.ops == parse_bytes("crc.gz", 0, &text).ops);
    assert!(
        errors(&got)[0].contains("check does not match"),
        "{:?}",
        errors(&got)
    );
}

/// Zeros after the last member (padding some tools add) are a warning, not damage.
#[test]
fn bytes_after_the_last_member() {
    let text = generated(50_000);
    let mut gz = gzip(&text);
    gz.extend(vec![0u8; 1000]);
    let got = parse_bytes("pad.gz", 0, &gz);
    assert!(got.ops == parse_bytes("pad.gz", 0, &text).ops);
    assert!(errors(&got).is_empty());
    let warned: Vec<_> = got
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("after the last gzip member"))
        .collect();
    assert_eq!(warned.len(), 1);
    assert!(
        warned[0].message.starts_with("1000 bytes"),
        "{}",
        warned[0].message
    );
    for step in [1, 999, 4096] {
        assert!(streamed("pad.gz", &gz, step, None) == got, "{step}");
    }
}

/// What the stream holds between feeds stays bounded while a large gzip log goes through.
#[test]
fn gzip_stream_holds_no_growing_buffer() {
    let text = generated(8 << 20);
    let gz = gzip(&text);
    let mut s = LogStream::new("big.gz", 0);
    let mut most = 0;
    for c in gz.chunks(64 * 1024) {
        s.feed(c);
        most = most.max(s.buffered_bytes());
    }
    let (got, nccl) = s.finish_sniffed();
    assert!(nccl);
    assert_eq!(got.ops.len(), parse_bytes("big.gz", 0, &text).ops.len());
    // The text handed to the parser a MiB at a time, a partial block, a header.
    assert!(most <= (1 << 20) + 64 * 1024, "{most} bytes held");
}

/// The stream tells text with an NCCL line anywhere from text with none.
#[test]
fn nccl_line_seen_late() {
    let mut text = Vec::new();
    while text.len() < 200 * 1024 {
        text.extend_from_slice(
            b"Collecting torch==2.4.0\n  Downloading torch-2.4.0.whl (797 MB)\n",
        );
    }
    let preamble_only = text.clone();
    text.extend(generated(20_000));
    for (bytes, want) in [(&text, true), (&preamble_only, false)] {
        for input in [bytes.clone(), gzip(bytes)] {
            for step in [1, 4096, input.len()] {
                let mut s = LogStream::new("late.log", 0);
                for c in input.chunks(step) {
                    s.feed(c);
                }
                assert_eq!(s.finish_sniffed().1, want, "{step}");
            }
        }
    }
}
