//! Benchmark inputs, made by the generator and kept in `target/bench-inputs/` so that a second
//! run measures instead of generating again.

use std::path::{Path, PathBuf};

/// Where inputs are kept: `<workspace>/target/bench-inputs`.
pub fn dir() -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-inputs");
    std::fs::create_dir_all(&d).expect("target/ is writable");
    d
}

/// A log of about `mb` megabytes: the `tp4` preset's rank logs concatenated, repeated (real
/// line shapes of NCCL 2.27, half of the lines per-collective or tuning lines).
pub fn log_of_size(mb: usize) -> PathBuf {
    let path = dir().join(format!("parse-{mb}MB.log"));
    if path.exists() {
        return path;
    }
    let preset = synth::preset("tp4").expect("the tp4 preset");
    let run = synth::generate(&preset.config);
    let one: Vec<u8> = run
        .files
        .iter()
        .flat_map(|(_, b)| b.iter().copied())
        .collect();
    let target = mb * 1_000_000;
    let mut out = Vec::with_capacity(target + one.len());
    while out.len() < target {
        out.extend_from_slice(&one);
    }
    std::fs::write(&path, &out).expect("write a bench log");
    path
}

/// A generated run (logs, exports, truth) of `config` under `label`, streamed to disk; returns
/// its directory.
pub fn run(label: &str, config: &synth::RunConfig) -> PathBuf {
    let path = dir().join(format!("run-{label}"));
    if path.join("truth.json").exists() {
        return path;
    }
    synth::write_streaming(config, Some(label), &path).expect("write a bench run");
    path
}

/// `config` with as many iterations as give about `ops_per_rank` operations on the busiest
/// rank (measured on a one-iteration run, in memory).
pub fn scaled(mut config: synth::RunConfig, ops_per_rank: u64) -> synth::RunConfig {
    config.model.iterations = 1;
    let one = synth::generate(&config);
    let per_iteration = one
        .truth
        .ranks
        .iter()
        .map(|r| r.ops_by_type.values().sum::<u64>())
        .max()
        .unwrap_or(1)
        .max(1);
    config.model.iterations = ops_per_rank.div_ceil(per_iteration).max(1) as u32;
    config
}

/// Every file directly in `dir` whose name ends with `suffix`, sorted.
pub fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a bench run directory")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}
