//! Throughput of the parser against `wc -l` on the same file, measured interleaved in one run
//! (the machine may be loaded, so the ratios are the meaningful numbers):
//! `cargo run --release -p ingest-nccl --example parse_bench -- big.log [rounds]`.
//!
//! Each round runs, on the same bytes: `wc -l FILE` itself (a child process; the file is in the
//! page cache after the first read), a memchr newline count in this process, and the parser fed
//! in 16 MiB chunks as the app does (`CHUNK_MB` sets another size), once on one thread and once with the default threads.
//! Prints the best round of each. A third argument `N` runs only the parser on N threads (for
//! profiling: `perf record ... parse_bench big.log 3 1`).

use ingest_nccl::LogParser;
use std::process::Command;
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
    let only: Option<usize> = args.next().and_then(|r| r.parse().ok());
    let chunk: usize = std::env::var("CHUNK_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
        << 20;
    if let Some(n) = only {
        let mut s = f64::MAX;
        for _ in 0..rounds.max(1) {
            let t = Instant::now();
            let mut p = LogParser::new("bench", 0).with_threads(n);
            for c in bytes.chunks(chunk) {
                p.feed(c);
            }
            let log = std::hint::black_box(p.finish());
            s = s.min(t.elapsed().as_secs_f64());
            // Freeing the result is not parsing: outside the time, as in the rounds below.
            drop(log);
        }
        println!(
            "parser, native, {n} thread(s)  {:.0} MB/s  ({s:.3} s)",
            mb / s
        );
        return;
    }
    let threads = LogParser::new("bench", 0).threads();
    let mut best = [f64::MAX; 4];
    let (mut lines, mut ops, mut counted, mut wc_out) = (0u64, 0usize, 0usize, String::new());
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        let out = Command::new("wc")
            .arg("-l")
            .arg(&path)
            .output()
            .expect("run wc -l");
        best[0] = best[0].min(t.elapsed().as_secs_f64());
        wc_out = String::from_utf8_lossy(&out.stdout).trim().to_string();

        let t = Instant::now();
        counted = std::hint::black_box(memchr::memchr_iter(b'\n', &bytes).count());
        best[1] = best[1].min(t.elapsed().as_secs_f64());

        for (slot, n) in [(2, 1), (3, threads)] {
            let t = Instant::now();
            let mut p = LogParser::new("bench", 0).with_threads(n);
            for c in bytes.chunks(chunk) {
                p.feed(c);
            }
            let log = std::hint::black_box(p.finish());
            best[slot] = best[slot].min(t.elapsed().as_secs_f64());
            lines = log.counters.total_lines;
            ops = log.ops.len();
        }
    }
    let [wc, count, one, many] = best;
    println!(
        "{path}: {mb:.1} MB, {lines} lines ({counted} newlines; wc: {wc_out}), {ops} ops\n\
         wc -l               {:6.0} MB/s  ({wc:.3} s)\n\
         memchr count        {:6.0} MB/s  ({count:.3} s)\n\
         parser, 1 thread    {:6.0} MB/s  ({one:.3} s)  {:5.1} % of wc -l\n\
         parser, {threads} threads   {:6.0} MB/s  ({many:.3} s)  {:5.1} % of wc -l",
        mb / wc,
        mb / count,
        mb / one,
        100.0 * wc / one,
        mb / many,
        100.0 * wc / many,
    );
}
