//! The `NCCL_DEBUG_SUBSYS=ALL` chatter (module `chatter`): every line shape the generator prints
//! outside the per-operation lines exists in a real NCCL log, and the version-specific ones in a
//! log of that version (or the nearest one we have).

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

mod common;
use common::fixtures;
use std::sync::OnceLock;
use synth::{generate, preset, RunConfig};

/// Shape of a line's body: pointers → P, numbers (decimal or hex, inside tokens too) → N,
/// interface-like names (`eth0`, `bond0`, `enp179s0f0`) → ID, whitespace runs collapsed (one
/// real log has them collapsed by its collector).
fn shape(line: &str) -> String {
    let body = match line.find("NCCL INFO ") {
        Some(i) => &line[i + 10..],
        None => line,
    };
    static RE: OnceLock<[Regex; 3]> = OnceLock::new();
    let [ptr, ident, num] = RE.get_or_init(|| {
        [
            Regex::new(r"0x[0-9a-f]+|\(nil\)").unwrap(),
            // `eth0`, `ens7`, `ibp209s0f0`, alone or before `:address`.
            Regex::new(r"^[a-z]*[g-z][a-z]*[0-9][a-z0-9]*(:|$)").unwrap(),
            Regex::new(r"[0-9a-f]*[0-9][0-9a-f]*").unwrap(),
        ]
    });
    body.split_whitespace()
        .map(|t| {
            let t = ptr.replace_all(t, "P");
            let t = ident.replace(&t, "ID$1");
            num.replace_all(&t, "N").into_owned()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Lines tested elsewhere (`generate.rs`: per-operation and tuning lines, banner, init) or
/// that are the topology dump / ring summary the chatter does not touch.
fn is_chatter(body_shape: &str) -> bool {
    let skip = [
        ": opCount ",
        "Bytes -> ",
        "NCCL version",
        "Init START",
        "Init COMPLETE",
        "Destroy COMPLETE",
    ];
    !skip.iter().any(|s| body_shape.contains(s))
}

fn small(name: &str, version: &str) -> RunConfig {
    let mut c = preset(name).unwrap().config;
    c.model.iterations = 1;
    c.nccl_version = version.into();
    c.timestamps = false;
    c.combined_log = false;
    c.imperfections.garbled_lines = 0;
    c.imperfections.truncated_last_line = false;
    c
}

/// Every real line's shape, with the files it occurs in.
fn real_shapes(dir: &PathBuf) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("log") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for l in text.lines().filter(|l| l.contains("NCCL INFO ")) {
            out.entry(shape(l)).or_default().insert(name.clone());
        }
    }
    out
}

/// Shapes (chatter only) of a generated run: shape → one example line.
fn generated_shapes(cfg: &RunConfig) -> BTreeMap<String, String> {
    let run = generate(cfg);
    let mut out = BTreeMap::new();
    for (_, bytes) in &run.files {
        for l in String::from_utf8_lossy(bytes).lines() {
            let s = shape(l);
            if is_chatter(&s) {
                out.entry(s).or_insert_with(|| l.to_string());
            }
        }
    }
    out
}

/// Shapes that predate the chatter and have no real example line for line (kept as they were;
/// the parser's own tests cover them): the topology dump as the generator abbreviates it and
/// the ring lines. Listed so that a new shape cannot slip in unnoticed.
fn known_unmatched(s: &str) -> bool {
    s.starts_with("+ ")
        || s.starts_with("CPU/")
        || s.starts_with("=== System")
        || s.starts_with("==========")
        || s.starts_with("Ring N : ")
        || s.starts_with("Trees ")
        || s.starts_with("Channel N/N : N N")
        || s == "Using network IB"
        || s == "Using network Socket"
}

#[test]
fn every_chatter_shape_exists_in_a_real_log() {
    let Some(dir) = fixtures() else { return };
    let real = real_shapes(&dir);
    let mut missing = Vec::new();
    let mut checked = 0;
    for v in ["2.18.3", "2.21.5", "2.22.3", "2.23.4", "2.27.5", "2.28.3"] {
        // Multi-node (network connections) and single-node (P2P) communicators.
        for name in ["demo", "tp2pp2"] {
            for (s, example) in generated_shapes(&small(name, v)) {
                if known_unmatched(&s) {
                    continue;
                }
                checked += 1;
                if !real.contains_key(&s) {
                    missing.push(format!("{v} {name}: {example}\n    shape: {s}"));
                }
            }
        }
    }
    assert!(checked > 40, "only {checked} shapes checked");
    assert!(
        missing.is_empty(),
        "generated shapes with no real example:\n{}",
        missing.join("\n")
    );
}

/// Version-gated chatter: (generated version, line pattern, the real log of that version or the
/// nearest one that prints it). The generated line's shape must occur in that file.
#[test]
fn version_specific_chatter_matches_the_log_of_its_version() {
    let Some(dir) = fixtures() else { return };
    let sglang = "unknown-sglang-notes_tpgds-node0008-ranks8-15_subsysALL-init-coll_2.27.5_c.log";
    let cases: &[(&str, &str, &str)] = &[
        ("2.27.5", "proxyProgressAsync", sglang),
        ("2.27.5", "ncclPollProxyResponse", sglang),
        ("2.27.5", "resp.opId=", sglang),
        ("2.27.5", "Received and initiated operation=Init", sglang),
        (
            "2.27.5",
            "Received and initiated operation=SharedInit",
            sglang,
        ),
        ("2.27.5", "Allocated shareable buffer", sglang),
        ("2.27.5", "Connected to proxy", sglang),
        ("2.27.5", "New proxy send connection", sglang),
        ("2.27.5", "Cuda Host Alloc", sglang),
        ("2.27.5", "memory stack hunk", sglang),
        ("2.27.5", "TUNER/Plugin", sglang),
        ("2.27.5", "Init timings", sglang),
        ("2.27.5", "threadThresholds", sglang),
        ("2.27.5", "coll channels", sglang),
        (
            "2.27.5",
            "CC Off",
            "ROCm-ROCm_issue6074_rccl-2x7900xtx_init-coll-acc-task-globalrank_rccl2.27.7.log",
        ),
        (
            "2.22.3",
            "Init timings",
            "NVIDIA-nccl-tests_issue273_special-topology_init-timings-8ranks_2.22_b.log",
        ),
        (
            "2.18.3",
            "New proxy recv connection",
            "NVIDIA-nccl-tests_issue350_gather_2.16.5_2node.log",
        ),
        (
            "2.18.3",
            "set by environment to",
            "NVIDIA-nccl_issue1038_uniqueid-reinit_init_2.18.3.log",
        ),
        (
            "2.18.3",
            "[receive] via NET/IB",
            "NVIDIA-nccl-tests_issue350_gather_2.16.5_2node.log",
        ),
        (
            "2.21.5",
            "nNodes",
            "NVIDIA-nccl_issue1410_h100-k8s-pod_init-8ranks.log",
        ),
    ];
    for (v, pat, file) in cases {
        let Ok(text) = std::fs::read_to_string(dir.join(file)) else {
            println!("NOTICE: {file} absent; skipped");
            continue;
        };
        let real: BTreeSet<String> = text
            .lines()
            .filter(|l| l.contains(pat))
            .map(shape)
            .collect();
        assert!(!real.is_empty(), "{file} has no {pat}");
        let gen = generated_shapes(&small("demo", v));
        let ours: Vec<(&String, &String)> = gen.iter().filter(|(_, l)| l.contains(pat)).collect();
        assert!(!ours.is_empty(), "{v}: no {pat} line generated");
        for (s, l) in ours {
            assert!(
                real.contains(s),
                "{v} {pat}: {l}\n  shape {s}\n  real shapes {real:?}"
            );
        }
    }
}

/// Lines of one version that real logs of other eras do not have are not printed there.
#[test]
fn old_versions_print_no_2_27_chatter() {
    let gen = generated_shapes(&small("demo", "2.18.3"));
    for pat in [
        "Allocated shareable",
        "TUNER/Plugin",
        "Init timings",
        "nNodes",
        "CC Off",
    ] {
        assert!(
            !gen.values().any(|l| l.contains(pat)),
            "2.18.3 prints {pat}"
        );
    }
}

/// Proxy lines come from another thread than the init lines, interleaved with them in time.
#[test]
fn proxy_chatter_is_interleaved_on_its_own_thread() {
    let run = generate(&small("tp2pp2", "2.27.5"));
    let text = String::from_utf8_lossy(&run.files[0].1).into_owned();
    let tid = |l: &str| -> u32 {
        let head = l.split(' ').next().unwrap();
        head.rsplit(':').next().unwrap().parse().unwrap()
    };
    let lines: Vec<&str> = text.lines().collect();
    let proxy: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("New proxy ") || lines[i].contains("proxyProgressAsync"))
        .collect();
    let polls: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("ncclPollProxyResponse"))
        .collect();
    assert!(!proxy.is_empty() && !polls.is_empty());
    let proxy_tids: BTreeSet<u32> = proxy.iter().map(|&i| tid(lines[i])).collect();
    let poll_tids: BTreeSet<u32> = polls.iter().map(|&i| tid(lines[i])).collect();
    assert!(proxy_tids.is_disjoint(&poll_tids), "same thread");
    // Interleaved: some poll line sits between two proxy lines.
    assert!(polls
        .iter()
        .any(|&q| proxy.iter().any(|&a| a < q) && proxy.iter().any(|&b| b > q)));
}

/// Connection lines name a rank's peer by busId up to 2.18 (`1[81000]`, issue350 at 2.16.5) and
/// by device from 2.19 (`8[0] -> 0[0]`, the 2.19–2.23 grpo notes; `1[1] -> 0[0]`, vLLM at 2.20).
#[test]
fn connection_lines_name_bus_ids_then_devices() {
    let re = Regex::new(r"Channel \d+/0 : \d+\[([0-9a-f]+)\] -> \d+\[([0-9a-f]+)\]").unwrap();
    for (v, devices) in [("2.18.3", false), ("2.21.5", true), ("2.27.5", true)] {
        let run = generate(&small("demo", v));
        let text = String::from_utf8_lossy(&run.files[0].1).into_owned();
        let mut n = 0;
        for c in text.lines().filter_map(|l| re.captures(l)) {
            for g in [&c[1], &c[2]] {
                if devices {
                    assert!(g.parse::<u32>().is_ok_and(|d| d < 8), "{v}: {g}");
                } else {
                    assert!(g.len() >= 5 && g.ends_with("000"), "{v}: {g}");
                }
            }
            n += 1;
        }
        assert!(n > 10, "{v}: {n} connection lines");
    }
}
