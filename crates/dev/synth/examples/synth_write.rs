//! `cargo run -p synth --example synth_write -- PRESET OUT_DIR [ITERATIONS]`: writes a preset's run
//! (streamed from 64 ranks on).
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 && args.len() != 4 {
        eprintln!("usage: synth_write PRESET OUT_DIR [ITERATIONS]");
        for p in synth::presets() {
            eprintln!("  {:18} {}", p.name, p.description);
        }
        std::process::exit(2);
    }
    let Some(mut p) = synth::preset(&args[1]) else {
        eprintln!("unknown preset {}", args[1]);
        std::process::exit(2);
    };
    if let Some(it) = args.get(3).and_then(|s| s.parse().ok()) {
        p.config.model.iterations = it;
    }
    let t = std::time::Instant::now();
    if p.config.layout.world() >= synth::write::STREAMING_MIN_RANKS {
        // Too big for memory: one rank at a time.
        let dir = std::path::Path::new(&args[2]);
        synth::write_streaming(&p.config, Some(p.name), dir).expect("write");
        eprintln!("streamed in {:?}", t.elapsed());
        return;
    }
    let run = synth::generate_named(&p.config, Some(p.name));
    eprintln!("generated in {:?}", t.elapsed());
    synth::write_run(&run, std::path::Path::new(&args[2])).expect("write");
    eprintln!("written in {:?}", t.elapsed());
}
