//! `cargo run --release -p synth --example synth_stream -- PRESET OUT_DIR [ITERATIONS]`: writes a
//! preset with the streaming writer and prints the scale figures (run under `/usr/bin/time -v`
//! for peak RSS).
use std::path::Path;

fn mb(b: u64) -> f64 {
    b as f64 / 1e6
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 && args.len() != 4 {
        eprintln!("usage: synth_stream PRESET OUT_DIR [ITERATIONS]");
        std::process::exit(2);
    }
    let Some(mut p) = synth::preset(&args[1]) else {
        eprintln!("unknown preset {}", args[1]);
        std::process::exit(2);
    };
    if let Some(it) = args.get(3).and_then(|s| s.parse().ok()) {
        p.config.model.iterations = it;
    }
    let st = synth::write_streaming(&p.config, Some(p.name), Path::new(&args[2])).expect("write");
    let gen = st.generate_time.as_secs_f64();
    println!(
        "preset {} ranks {} ops {} ({:.0}/rank) kernels {}",
        p.name,
        st.ranks,
        st.ops,
        st.ops as f64 / st.ranks.max(1) as f64,
        st.kernels
    );
    println!(
        "logs {:.1} MB, reports {:.1} MB, truth {:.1} MB",
        mb(st.log_bytes),
        mb(st.report_bytes),
        mb(st.truth_bytes)
    );
    println!(
        "plan {:.1} s, log text {:.1} s ({:.0} MB/s, {:.1} s per GB), total {:.1} s",
        st.plan_time.as_secs_f64(),
        gen,
        mb(st.log_bytes) / gen.max(1e-9),
        gen / (st.log_bytes as f64 / 1e9).max(1e-12),
        st.total_time.as_secs_f64()
    );
}
