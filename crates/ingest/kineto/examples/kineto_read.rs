//! Reads one trace as the command does (16 MiB pieces through `KinetoStream`) under a counting
//! allocator, and prints one JSON line: sizes, time, what was read, and the memory it took (the
//! most bytes live while reading, the bytes held by the result, the stream's own buffers at
//! their largest). The benchmark (`crates/bench/src/kineto.rs`) runs it as a child process: a
//! counting allocator is process-wide.
//!
//! ```text
//! cargo run --release -p ingest-kineto --example kineto_read -- FILE
//! ```

use ingest_kineto::KinetoStream;
use std::io::Read;
use std::time::Instant;

#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;

const PIECE: usize = 16 << 20;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: kineto_read FILE");
        std::process::exit(2);
    };
    let mut file = std::fs::File::open(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2);
    });
    let mut buf = vec![0u8; PIECE];
    let before = counting_alloc::live();
    counting_alloc::take_peak();
    let started = Instant::now();
    let mut stream = KinetoStream::new(&path);
    let (mut bytes, mut buffered) = (0u64, 0usize);
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(2);
            }
        };
        bytes += n as u64;
        stream.feed(&buf[..n]);
        buffered = buffered.max(stream.buffered_bytes());
    }
    let trace = stream.finish();
    let seconds = started.elapsed().as_secs_f64();
    let peak = counting_alloc::peak().saturating_sub(before);
    let held = counting_alloc::live().saturating_sub(before);
    println!(
        "{{\"file_bytes\": {bytes}, \"text_bytes\": {}, \"seconds\": {seconds:.6}, \
         \"events\": {}, \"nccl_kernels\": {}, \"comm_ops\": {}, \"steps\": {}, \
         \"peak_bytes\": {peak}, \"held_bytes\": {held}, \"buffered_bytes\": {buffered}, \
         \"diagnostics\": {}}}",
        trace.text_bytes,
        trace.counts.events,
        trace.kernels.len(),
        trace.counts.comm_ops,
        trace.steps.len(),
        trace.diagnostics.len()
    );
}
