//! Throughput check, run by hand: `NCCLSCOPE_BENCH_FILE=big.log cargo test --release -p ingest-nccl
//! --test throughput -- --ignored --nocapture`. Feeds the file in 1 MiB chunks, as the app does.

use ingest_nccl::LogParser;
use std::time::Instant;

#[test]
#[ignore = "manual benchmark; needs NCCLSCOPE_BENCH_FILE"]
fn throughput() {
    let Some(path) = std::env::var_os("NCCLSCOPE_BENCH_FILE") else {
        eprintln!("notice: NCCLSCOPE_BENCH_FILE not set; skipping");
        return;
    };
    let bytes = std::fs::read(&path).expect("read bench file");
    // The `wc -l` yardstick on the same bytes, in the same run (see examples/parse_bench.rs for
    // the interleaved best-of-N version).
    let t = Instant::now();
    let newlines = memchr::memchr_iter(b'\n', &bytes).count();
    let wc = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut p = LogParser::new("bench", 0);
    for c in bytes.chunks(1 << 20) {
        p.feed(c);
    }
    let log = p.finish();
    let s = t.elapsed().as_secs_f64();
    println!(
        "{} bytes, {} lines, {} ops in {s:.3} s: {:.0} MB/s, {:.1} M lines/s",
        bytes.len(),
        log.counters.total_lines,
        log.ops.len(),
        bytes.len() as f64 / s / 1e6,
        log.counters.total_lines as f64 / s / 1e6
    );
    println!(
        "memchr line count ({newlines} newlines): {:.0} MB/s; parser at {:.1} % of it",
        bytes.len() as f64 / wc / 1e6,
        100.0 * wc / s
    );
}
