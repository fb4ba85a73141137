//! Throughput of the parser against a `wc -l`-equivalent line count on the same bytes, measured
//! interleaved in one run (the machine may be loaded, so only the ratio is meaningful):
//! `cargo run --release -p ingest-nccl --example parse_bench -- big.log [rounds]`.
//! Feeds the file in 1 MiB chunks, as the app does; prints the best round of each.

use ingest_nccl::LogParser;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: parse_bench <file> [rounds]");
        std::process::exit(2);
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let bytes = std::fs::read(&path).expect("read bench file");
    let mb = bytes.len() as f64 / 1e6;
    let (mut best_parse, mut best_count) = (f64::MAX, f64::MAX);
    let (mut lines, mut ops, mut counted) = (0u64, 0usize, 0usize);
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        counted = std::hint::black_box(memchr::memchr_iter(b'\n', &bytes).count());
        best_count = best_count.min(t.elapsed().as_secs_f64());

        let t = Instant::now();
        let mut p = LogParser::new("bench", 0);
        for c in bytes.chunks(1 << 20) {
            p.feed(c);
        }
        let log = std::hint::black_box(p.finish());
        best_parse = best_parse.min(t.elapsed().as_secs_f64());
        lines = log.counters.total_lines;
        ops = log.ops.len();
    }
    println!(
        "{path}: {mb:.1} MB, {lines} lines ({counted} newlines), {ops} ops\n\
         parser   {:8.0} MB/s  ({best_parse:.3} s)\n\
         wc -l    {:8.0} MB/s  ({best_count:.3} s, memchr count)\n\
         ratio    {:8.1} % of wc -l",
        mb / best_parse,
        mb / best_count,
        100.0 * best_count / best_parse
    );
}
