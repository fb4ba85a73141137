//! Test-only: a generator preset, run in memory, with its logs parsed.

use model::log::{CommInit, LogOp};

/// Generates preset `name` and parses every file it wrote as a log (exports give no lines),
/// returning the run (for its truth and reports), its init lines and its operations.
pub fn preset_logs(name: &str) -> (synth::Run, Vec<CommInit>, Vec<LogOp>) {
    let p = synth::preset(name).expect("preset");
    let run = synth::generate(&p.config);
    let mut ops = Vec::new();
    let mut inits = Vec::new();
    for (i, (file, bytes)) in run.files.iter().enumerate() {
        let log = ingest_nccl::parse_bytes(file, i as u32, bytes);
        ops.extend(log.ops);
        inits.extend(log.inits);
    }
    (run, inits, ops)
}
