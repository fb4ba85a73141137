//! A large gzip log loads in bounded memory beyond its records: the loader holds no growing
//! buffer (never the compressed or the decompressed file), so loading it costs what loading the
//! plain log costs, plus about a MiB. Its own test binary: the counting allocator below sees
//! every allocation of the process, and this is the only test in it.

use flate2::write::GzEncoder;
use flate2::Compression;
use load::LogLoader;
use std::io::Write;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// A made-up log of about `bytes` bytes: eight processes' operation lines.
fn log(bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes + 4096);
    out.extend_from_slice(b"node1:100:101 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n");
    let mut op = 0u64;
    // Buffers and counts vary as a training run's do, so that the text does not compress to
    // almost nothing.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    while out.len() < bytes {
        for rank in 0..8u64 {
            let pid = 100 + rank;
            let (send, recv, count) = (next() >> 24, next() >> 24, next() % 100_000_000);
            writeln!(
                out,
                "node1:{pid}:{pid} [{rank}] NCCL INFO AllReduce: opCount {op:x} sendbuff \
                 0x{send:x} recvbuff 0x{recv:x} count {count} datatype 7 op 0 root 0 comm \
                 0x55d0{pid} [nranks=8] stream 0x55e0{pid}",
            )
            .unwrap();
        }
        op += 1;
    }
    out
}

/// Loads `bytes` in 1 MiB chunks: (operations, the most allocated meanwhile beyond what was
/// allocated before, the most the loader held between feeds).
fn load(bytes: &[u8]) -> (usize, usize, usize) {
    let before = counting_alloc::live();
    counting_alloc::take_peak();
    let mut loader = LogLoader::new("big.log", 0);
    let mut held = 0;
    for chunk in bytes.chunks(1 << 20) {
        loader.feed(chunk);
        held = held.max(loader.buffered_bytes());
    }
    let log = loader.finish(bytes.len() as u64);
    let peak = counting_alloc::peak() - before;
    (log.parsed.ops.len(), peak, held)
}

#[test]
fn a_50_mb_gzip_log_loads_in_the_memory_of_its_records() {
    let plain = log(50 << 20);
    let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
    enc.write_all(&plain).unwrap();
    let gz = enc.finish().unwrap();
    let (plain_ops, plain_peak, _) = load(&plain);
    let (gz_ops, gz_peak, held) = load(&gz);
    eprintln!(
        "{} MB of text, {} MB gzipped: peak beyond the input {:.1} MB plain, {:.1} MB gzip; \
         the loader held at most {} KiB between feeds",
        plain.len() >> 20,
        gz.len() >> 20,
        plain_peak as f64 / 1e6,
        gz_peak as f64 / 1e6,
        held >> 10
    );
    assert_eq!(gz_ops, plain_ops);
    assert!(gz_ops > 250_000, "{gz_ops}");
    // Between feeds: the text waiting for the parser (at most a MiB), a partial 32 KiB block.
    assert!(held <= (1 << 20) + (96 << 10), "{held} bytes held");
    // Throughout: the parser's records and state, as for the plain log, plus the inflater and
    // those buffers; far less than the compressed file (which the loader used to gather).
    assert!(
        gz_peak <= plain_peak + (3 << 20),
        "gzip {gz_peak} B, plain {plain_peak} B"
    );
    assert!(gz.len() > 3 << 20, "{} bytes gzipped", gz.len());
}
