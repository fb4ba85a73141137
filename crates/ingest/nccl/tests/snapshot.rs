//! The parser's whole output, pinned: a digest of the full `Debug` dump of every real fixture's
//! parse and of generator logs in every shape the generator writes (NCCL 2.18–2.28, timestamps on
//! and off, one combined log, every launcher prefix, duplicates, garbled and truncated lines,
//! symmetric tuning lines). The digests in `tests/snapshot.digests` were made by the parser
//! before its per-line cost was cut; a speed-up must leave every record, diagnostic and count
//! as it was. After a deliberate change of output, regenerate them with
//! `NCCLSCOPE_UPDATE_SNAPSHOT=1 cargo test -p ingest-nccl --test snapshot` and say why in the
//! commit. `NCCLSCOPE_SNAPSHOT_DUMP=DIR` also writes the dumps there, to diff a mismatch.
// The generator (a native-only dev-dependency) makes half of the inputs.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use ingest_nccl::{parse_bytes, LogParser, ParsedLog};
use std::collections::BTreeMap;

const DIGESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshot.digests");

/// FNV-1a, 64 bits, twice with different offsets: stable across Rust releases (unlike std's
/// hasher) and plenty against accidental equality.
fn digest(text: &str) -> String {
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x6c62_272e_07bb_0142;
    for &c in text.as_bytes() {
        a = (a ^ u64::from(c)).wrapping_mul(0x0000_0100_0000_01b3);
        b = (b ^ u64::from(c)).wrapping_mul(0x0000_0100_0000_01b3);
        b = b.rotate_left(7);
    }
    format!("{a:016x}{b:016x}-{}", text.len())
}

/// The generator configurations: one per NCCL version (2.18–2.28), the other options rotated
/// through, plus the presets with imperfections.
fn generator_configs() -> Vec<(String, synth::RunConfig)> {
    let mut v = Vec::new();
    let base = synth::preset("align-nodrop").expect("preset").config;
    for (i, version) in synth::logfmt::NCCL_VERSIONS.iter().enumerate() {
        let mut c = base.clone();
        c.nccl_version = (*version).to_string();
        c.timestamps = i % 2 == 0;
        c.combined_log = i % 3 == 1;
        c.launcher = synth::Launcher::ALL[i % synth::Launcher::ALL.len()];
        c.seed = 100 + i as u64;
        let name = format!(
            "gen-{version}-ts{}-comb{}-{}",
            u8::from(c.timestamps),
            u8::from(c.combined_log),
            c.launcher.name()
        );
        v.push((name, c));
    }
    for launcher in synth::Launcher::ALL {
        let mut c = synth::preset("demo").expect("preset").config;
        c.launcher = launcher;
        v.push((format!("demo-{}", launcher.name()), c));
    }
    for preset in [
        "tp4",
        "tp4-sym",
        "tp2pp2",
        "dp4-distopt",
        "ep4-alltoall",
        "pp4",
    ] {
        let mut c = synth::preset(preset).expect("preset").config;
        c.timestamps = preset.len() % 2 == 0;
        v.push((preset.to_string(), c));
    }
    v
}

/// Every input's parse: (name, full Debug dump).
fn dumps() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut push = |name: String, log: ParsedLog| out.push((name, format!("{log:#?}")));
    for (name, bytes) in common::fixtures() {
        push(format!("real/{name}"), parse_bytes(&name, 1, &bytes));
    }
    for (label, cfg) in generator_configs() {
        let run = synth::generate(&cfg);
        for (i, (file, bytes)) in run.files.iter().enumerate() {
            // 1 MiB chunks on one thread, as the page feeds it (threads and chunking are
            // covered by tests/streaming.rs against this same path).
            let mut p = LogParser::new(file, i as u32).with_threads(1);
            for c in bytes.chunks(1 << 20) {
                p.feed(c);
            }
            push(format!("{label}/{file}"), p.finish());
        }
    }
    out
}

#[test]
fn output_matches_the_pinned_digests() {
    let dumps = dumps();
    if let Some(dir) = std::env::var_os("NCCLSCOPE_SNAPSHOT_DUMP") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("dump dir");
        for (name, text) in &dumps {
            let file = dir.join(name.replace('/', "__"));
            std::fs::write(file, text).expect("write dump");
        }
    }
    let got: BTreeMap<&str, String> = dumps.iter().map(|(n, t)| (n.as_str(), digest(t))).collect();
    if std::env::var_os("NCCLSCOPE_UPDATE_SNAPSHOT").is_some() {
        let text: String = got.iter().map(|(n, d)| format!("{n} {d}\n")).collect();
        std::fs::write(DIGESTS, text).expect("write digests");
        return;
    }
    let pinned = std::fs::read_to_string(DIGESTS).expect("tests/snapshot.digests");
    let want: BTreeMap<&str, &str> = pinned.lines().filter_map(|l| l.split_once(' ')).collect();
    let have_real = got.keys().any(|n| n.starts_with("real/"));
    let mut checked = 0;
    for (name, d) in &want {
        if name.starts_with("real/") && !have_real {
            continue; // fixtures absent on this machine (common::fixtures said so)
        }
        let g = got.get(name).map(String::as_str);
        assert_eq!(
            g,
            Some(*d),
            "{name}: parse output differs from the pinned one"
        );
        checked += 1;
    }
    for name in got.keys() {
        assert!(want.contains_key(name), "{name}: no pinned digest");
    }
    assert!(checked >= 30, "only {checked} inputs compared");
}
