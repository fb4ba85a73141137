//! Symmetric kernels (NCCL 2.27+, `RunConfig::symmetric`): single-node AllReduce, AllGather and
//! ReduceScatter run `ncclSymDevKernel_*` (2.27) / `ncclSymkDevKernel_*` (2.28) kernels, their
//! tuning lines are `[Symmetric]` lines the parser reads, and the truth still maps every kernel
//! to its log operation.

use model::{OpType, RedOp};
use std::collections::HashMap;
use synth::{generate, preset, RunConfig};

fn sym(version: &str) -> RunConfig {
    let mut c = preset("tp4-sym").unwrap().config;
    c.model.iterations = 1;
    c.nccl_version = version.into();
    c
}

/// NCCL's rule (`ncclSymImplemented`): AllGather of any type; AllReduce and ReduceScatter only
/// summing f32/f16/bf16/fp8.
fn runs_symmetric(op: &model::log::LogOp) -> bool {
    use model::DataType::*;
    let float = matches!(
        op.datatype,
        Some(Float32 | Float16 | Bfloat16 | Float8e4m3 | Float8e5m2)
    );
    match op.op {
        OpType::AllGather => true,
        OpType::AllReduce | OpType::ReduceScatter => float && op.red_op == RedOp::Sum,
        _ => false,
    }
}

/// Parsed operations by (pid, comm pointer, opCount).
type OpsByKey = HashMap<(u32, String, u64), model::log::LogOp>;

/// Parsed operations by (pid, comm pointer, opCount), and the parsed logs.
fn parse(run: &synth::Run) -> (OpsByKey, Vec<ingest_nccl::ParsedLog>) {
    let mut ops = HashMap::new();
    let mut logs = Vec::new();
    for (i, (name, bytes)) in run.files.iter().enumerate() {
        let p = ingest_nccl::parse_bytes(name, i as u32, bytes);
        for op in &p.ops {
            ops.insert(
                (op.process.pid, format!("0x{:x}", op.comm), op.op_count),
                op.clone(),
            );
        }
        logs.push(p);
    }
    (ops, logs)
}

#[test]
fn symmetric_kernels_decode_and_map_to_their_log_operations() {
    for (v, family) in [
        ("2.27.5", "ncclSymDevKernel_"),
        ("2.28.3", "ncclSymkDevKernel_"),
    ] {
        let run = generate(&sym(v));
        let (ops, _) = parse(&run);
        let names: HashMap<(u32, u32), (&str, &str, &str)> = run
            .reports
            .iter()
            .flat_map(|r| r.kernels.iter())
            .map(|k| {
                (
                    (k.pid, k.correlation_id),
                    (k.short.as_str(), k.demangled.as_str(), k.mangled.as_str()),
                )
            })
            .collect();
        let mut n_sym: HashMap<OpType, usize> = HashMap::new();
        for k in &run.truth.kernels {
            // The truth stays exact: the kernel of a log operation is still that operation's.
            let Some(lo) = &k.log_op else { continue };
            let op = &ops[&(k.pid, lo.comm.clone(), lo.op_count)];
            let (short, dem, mangled) = names[&(k.pid, k.correlation_id)];
            assert_eq!(short, k.name);
            let is_sym = short.starts_with(family);
            let want = runs_symmetric(op);
            assert_eq!(
                is_sym, want,
                "{v}: {short} for {:?} {:?} {:?}",
                op.op, op.datatype, op.red_op
            );
            if is_sym {
                for name in [short, dem, mangled] {
                    let d = ingest_nsys::decode_kernel_name(name).unwrap();
                    assert_eq!(d.op, Some(op.op), "{name}");
                    if op.op != OpType::AllGather {
                        assert_eq!(
                            (d.datatype, d.red_op),
                            (op.datatype, Some(RedOp::Sum)),
                            "{name}"
                        );
                    }
                }
                *n_sym.entry(op.op).or_default() += 1;
            }
        }
        // TP=4 without SP: bf16 AllReduce per layer and microbatch, AllGathers at start-up.
        assert!(
            n_sym.get(&OpType::AllReduce).copied().unwrap_or(0) > 100,
            "{v}: {n_sym:?}"
        );
        assert!(n_sym.contains_key(&OpType::AllGather), "{v}: {n_sym:?}");
    }
}

#[test]
fn symmetric_tuning_lines_parse_and_attach_to_their_operations() {
    for v in ["2.27.5", "2.28.3"] {
        let run = generate(&sym(v));
        let sym_lines: u64 = run
            .files
            .iter()
            .map(|(_, b)| {
                String::from_utf8_lossy(b)
                    .lines()
                    .filter(|l| l.contains(" [Symmetric]: ") && l.contains(" -> Kernel "))
                    .count() as u64
            })
            .sum();
        let (_, logs) = parse(&run);
        let mut attached_sym = 0u64;
        for p in &logs {
            assert_eq!(p.counters.garbled_lines, 0, "{v} {}", p.path);
            for op in &p.ops {
                if op.nchannels.is_none() {
                    continue;
                }
                // A symmetric line gives the channel count and no algorithm/protocol; a
                // regular one both.
                if op.algo.is_none() {
                    assert!(runs_symmetric(&op), "{v}: {:?} {:?}", op.op, op.datatype);
                    attached_sym += 1;
                } else {
                    assert!(
                        !runs_symmetric(&op) || op.op == OpType::Broadcast,
                        "{v}: {:?}",
                        op.op
                    );
                }
            }
        }
        assert!(sym_lines > 100, "{v}: {sym_lines} symmetric lines");
        assert_eq!(
            attached_sym, sym_lines,
            "{v}: every [Symmetric] line attached to its op"
        );
        if v == "2.28.3" {
            // 2.28 prints them on communicator rank 0 only: global rank 0 here.
            let printing = run
                .files
                .iter()
                .filter(|(_, b)| String::from_utf8_lossy(b).contains("[Symmetric]"))
                .count();
            assert_eq!(printing, 1, "{v}");
        }
    }
}

#[test]
fn symmetric_option_needs_2_27_and_one_node() {
    // 2.26: the option has no effect.
    let mut c = sym("2.26.2");
    let run = generate(&c);
    assert!(run.truth.kernels.iter().all(|k| !k.name.contains("Sym")));
    // The counts are those of plain tp4 (only kernel names and tuning lines change).
    c.nccl_version = "2.27.5".into();
    let with = generate(&c);
    c.symmetric = false;
    let without = generate(&c);
    for (a, b) in with.truth.ranks.iter().zip(&without.truth.ranks) {
        assert_eq!(a.ops_by_type, b.ops_by_type);
        assert_eq!(a.kernels, b.kernels);
        assert_eq!(a.matched_ops, b.matched_ops);
    }
}

/// Every generated symmetric kernel name is one `reference/kernel_names.txt` lists for its
/// version (the derived table of `src/device/symmetric/generate.py` names).
#[test]
fn symmetric_kernel_names_are_in_the_reference_list() {
    let path = std::env::var("NCCLSCOPE_REAL_FIXTURES")
        .map(|d| std::path::PathBuf::from(d).join("../../reference/kernel_names.txt"))
        .unwrap_or_else(|_| {
            std::path::PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../../shared/reference/kernel_names.txt"
            ))
        });
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!("NOTICE: {} absent; skipped", path.display());
        return;
    };
    // `ncclSymDevKernel_X_sum_<f32|f16|…>   [2.27]  -> ncclSymkDevKernel_X_sum_<...> [2.28+]`
    let mut pats: Vec<(String, String)> = Vec::new();
    for l in text
        .lines()
        .filter(|l| l.starts_with("ncclSymDevKernel_") && l.contains("->"))
    {
        let (old, new) = l.split_once("->").unwrap();
        let old = old.split_whitespace().next().unwrap();
        let new = new.split_whitespace().next().unwrap();
        let types = old
            .split_once('<')
            .map(|(_, t)| t.trim_end_matches('>').to_string());
        let re = |name: &str| -> String {
            match (&types, name.split_once('<')) {
                (Some(t), Some((head, _))) => format!("^{head}({t})$"),
                _ => format!("^{name}$"),
            }
        };
        pats.push((re(old), re(new)));
    }
    assert!(pats.len() >= 10, "{} patterns", pats.len());
    for (v, newer) in [("2.27.5", false), ("2.28.3", true)] {
        let run = generate(&sym(v));
        let res: Vec<regex::Regex> = pats
            .iter()
            .map(|(a, b)| regex::Regex::new(if newer { b } else { a }).unwrap())
            .collect();
        let mut seen = 0;
        for k in run.truth.kernels.iter().filter(|k| k.name.contains("Sym")) {
            assert!(res.iter().any(|r| r.is_match(&k.name)), "{v}: {}", k.name);
            seen += 1;
        }
        assert!(seen > 0);
    }
}
