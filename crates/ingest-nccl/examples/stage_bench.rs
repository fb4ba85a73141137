use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let lines = memchr::memchr_iter(b'\n', &bytes).count();
    println!(
        "sizes read split body coll tuning logop {:?}",
        ingest_nccl::bench_sizes()
    );
    for _ in 0..3 {
        let t = Instant::now();
        let n = ingest_nccl::bench_read_only(&bytes);
        let a = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut p = ingest_nccl::LogParser::new("b", 0).with_threads(1);
        for c in bytes.chunks(1 << 20) {
            p.feed(c);
        }
        let log = p.finish();
        let b = t.elapsed().as_secs_f64();
        let ops = log.ops.len();
        let t = Instant::now();
        drop(log);
        let c = t.elapsed().as_secs_f64();
        println!("read only {:.1} ns/line ({n}); full parse {:.1} ns/line (ops {ops}); drop {:.1} ns/line", a*1e9/lines as f64, b*1e9/lines as f64, c*1e9/lines as f64);
    }
}
