//! What a PyTorch profiler (Kineto) trace costs the page's worker, per byte of trace: the heap's
//! peak and what stays live after loading, analysing and building the timeline (a counting
//! allocator), for the page's budget estimate (`app/src/page_logic/budget.rs`, issue 33).
//!
//! `cargo run -p ncclscope-bench --example trace_memory -- FILE...` loads the given traces (plain
//! or gzip) as the worker does (streamed in 16 MiB pieces), analyses them and builds the timeline,
//! then prints one JSON line: the files' bytes on disk and expanded, the peak and held bytes,
//! and both per byte. `--make MB [--filler N]` first writes a generated trace of about MB
//! megabytes (the benchmark's `tp2pp2` rank 0, modern style, N unrelated events per collective,
//! 40 unless told) to `target/bench-inputs/` and measures that.

use load::Session;
use pipeline::{analyse, UserSizes};
use std::io::Read;
use std::path::{Path, PathBuf};
use synth::kineto::KinetoStyle;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filler: u32 = match args.iter().position(|a| a == "--filler") {
        Some(i) => args[i + 1].parse().expect("--filler N"),
        None => KinetoStyle::modern().filler,
    };
    let files: Vec<PathBuf> = match args.iter().position(|a| a == "--make") {
        Some(i) => vec![generated(args[i + 1].parse().expect("--make MB"), filler)],
        None => args.iter().map(PathBuf::from).collect(),
    };
    let (mut disk, mut expanded) = (0u64, 0u64);
    for f in &files {
        disk += std::fs::metadata(f).expect("a trace").len();
        expanded += expanded_size(f);
    }
    let before = counting_alloc::live();
    let mut session = Session::default();
    for f in &files {
        ncclscope_cli::inputs::load(&mut session, f);
    }
    let kernels: usize = session
        .exports()
        .iter()
        .map(|e| e.export.kernels.len())
        .sum();
    let loaded = counting_alloc::live() - before;
    let load_peak = counting_alloc::peak() - before;
    let analysis = analyse(&session, &UserSizes::default());
    let tl = timeline::build(&session, &analysis.processes, &analysis.clocks);
    let held = counting_alloc::live() - before;
    let peak = counting_alloc::peak() - before;
    println!(
        "{{\"files\":{},\"disk_bytes\":{disk},\"expanded_bytes\":{expanded},\"nccl_kernels\":{kernels},\
         \"tracks\":{},\"loaded_bytes\":{loaded},\"load_peak_bytes\":{load_peak},\"held_bytes\":{held},\"peak_bytes\":{peak},\
         \"peak_per_expanded_byte\":{:.4},\"peak_per_disk_byte\":{:.4},\"kernels_per_mb\":{:.1}}}",
        files.len(),
        tl.tracks.len(),
        peak as f64 / expanded.max(1) as f64,
        peak as f64 / disk.max(1) as f64,
        kernels as f64 / (expanded.max(1) as f64 / 1e6),
    );
}

/// The bytes of `f` once decompressed (its size if it is not gzip).
fn expanded_size(f: &Path) -> u64 {
    let mut head = [0u8; 2];
    let mut file = std::fs::File::open(f).expect("a trace");
    if file.read_exact(&mut head).is_err() || head != [0x1f, 0x8b] {
        return std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
    }
    let file = std::fs::File::open(f).expect("a trace");
    let mut gz = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file));
    std::io::copy(&mut gz, &mut std::io::sink()).expect("a gzip trace")
}

/// A generated trace of about `mb` megabytes, as the `kineto` benchmark makes them (cached),
/// with `filler` unrelated events per collective (the benchmark's 40; 0 for the densest trace
/// in NCCL kernels, the worst case per byte).
fn generated(mb: usize, filler: u32) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../target/bench-inputs");
    std::fs::create_dir_all(&dir).expect("target/ is writable");
    let path = match filler {
        40 => dir.join(format!("kineto-{mb}MB.pt.trace.json")),
        f => dir.join(format!("kineto-{mb}MB-filler{f}.pt.trace.json")),
    };
    if path.exists() {
        return path;
    }
    let mut cfg = synth::preset("tp2pp2").expect("the tp2pp2 preset").config;
    let style = KinetoStyle {
        filler,
        ..KinetoStyle::modern()
    };
    cfg.model.iterations = 1;
    let mut one = Vec::new();
    synth::kineto::KinetoRun::new(&cfg)
        .write_rank(0, &style, &mut one)
        .expect("a trace");
    cfg.model.iterations =
        ((mb as u64 * 1_000_000).div_ceil(one.len().max(1) as u64)).max(1) as u32;
    let part = path.with_extension("part");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&part).expect("writable"));
    synth::kineto::KinetoRun::new(&cfg)
        .write_rank(0, &style, &mut out)
        .expect("write a trace");
    std::io::Write::flush(&mut out).expect("write a trace");
    drop(out);
    std::fs::rename(&part, &path).expect("rename into place");
    path
}
