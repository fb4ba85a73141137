//! The summary JSON of `analyze --json`; field names are the contract's.

use analyses::{compare_volumes, RankVolume};
use load::{FileReport, Session};
use model::OpType;
use pipeline::{Alignments, Analysis};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use theory::TheoryConfig;

/// The whole summary: one entry function per top-level field (ranks, communicators, layout,
/// alignment, clocks, theory, warnings), put together here in the contract's order.
pub fn build(
    session: &Session,
    reports: &[FileReport],
    analysis: &Analysis,
    volumes: &[RankVolume],
    theory: Option<&TheoryConfig>,
) -> Value {
    let inputs: Vec<Value> = reports.iter().map(input_entry).collect();
    let ranks: Vec<Value> = analysis
        .processes
        .iter()
        .map(|p| rank_entry(session, analysis, volumes, p))
        .collect();
    let communicators = communicator_entries(session, analysis);
    let layout = layout_entry(session, analysis);
    let alignment = alignment_entry(session, &analysis.alignments);
    let clocks = clocks_entry(analysis);
    let theory = match theory {
        Some(cfg) => theory_entries(cfg, analysis, volumes),
        None => observed_only_entries(volumes),
    };
    let warnings = warning_entries(session, reports, &analysis.alignments);
    let diagnosis = analyses::diagnosis::of_session(session, analysis);
    json!({
        "inputs": inputs,
        "ranks": ranks,
        "communicators": communicators,
        "layout": layout,
        "alignment": alignment,
        "iterations": analysis.iterations,
        "profiler_steps": analysis.profiler_steps.iter().map(|s| json!({
            "rank": s.rank, "step": s.step, "start_ns": s.start_ns, "end_ns": s.end_ns,
        })).collect::<Vec<_>>(),
        "clocks": clocks,
        "theory": theory,
        "warnings": warnings,
        "diagnosis": diagnosis.findings,
        "diagnosis_stopped": diagnosis.stopped,
        "diagnosis_first_error": diagnosis.first_error,
    })
}

/// One process's entry of `ranks`: its operations and kernels by type, volumes, identity and
/// time base.
fn rank_entry(
    session: &Session,
    analysis: &Analysis,
    volumes: &[RankVolume],
    p: &pipeline::ProcessSummary,
) -> Value {
    let mut by_type = Map::new();
    let mut bytes_by_type = Map::new();
    for op in OpType::CONTRACT {
        by_type.insert(op.name().into(), json!(0));
    }
    for (op, (n, b)) in &p.ops {
        by_type.insert(op.name().into(), json!(n));
        bytes_by_type.insert(op.name().into(), json!(b));
    }
    json!({
        "global_rank": p.global_rank,
        "host": p.process.host.as_str(),
        "pid": p.process.pid,
        "local_rank": p.local_rank,
        "nccl_version": p.nccl_version,
        "ops_by_type": by_type,
        "bytes_by_type": bytes_by_type,
        "kernels": p.kernels,
        "kernels_by_type": p.kernel_tally.by_type,
        "kernel_busy_ns": p.kernel_tally.busy_ns,
        "nvtx_bytes_by_type": p.kernel_tally.nvtx_bytes_by_type,
        "matched_ops": p.matched_kernels,
        "volume_by_parallelism": volume_of(volumes, p.global_rank),
        "identity": identity_entry(session, p),
        "time": rank_time_entry(session, analysis, p),
    })
}

/// The `communicators` entries: each logical communicator with its parallelism label, process
/// group, arrival skew and bandwidth.
fn communicator_entries(session: &Session, analysis: &Analysis) -> Vec<Value> {
    let labels = &analysis.layout.comms;
    let skews = analyses::arrival_skew(session, analysis);
    let stats = analyses::comm_stats(session, analysis);
    analysis
        .communicators
        .comms
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let label = labels.iter().find(|l| l.comm == i);
            json!({
                "id": c.id,
                "size": c.size,
                "global_ranks": c.global_ranks,
                "parallelism": label.map_or("unknown", |l| l.parallelism.name()),
                "parallelism_confidence": label.map(|l| l.confidence),
                "parallelism_evidence": label.map(|l| l.evidence.clone()),
                "process_group": analysis.process_groups.get(i).and_then(|g| g.as_ref()).map(|g| json!({
                    "name": g.name,
                    "description": g.description,
                    "parallelism": g.implies.map(|p| p.name()),
                    "agrees": pipeline::agrees(label, g),
                    "labels_the_communicator": g.labels,
                    "assumed_world": g.assumed_world,
                })),
                "arrival_skew": skews.iter().find(|s| s.comm == i).map(skew_entry),
                "bandwidth": stats.get(i).map(|s| json!({
                    "kernels": s.kernels,
                    "median_bus_bw_gbps": s.median_bus_bw_gbps,
                    "median_bus_efficiency": s.median_bus_efficiency,
                    "bottleneck": s.bottleneck.as_ref().map(|b| b.name.clone()),
                    "bottleneck_gbps": s.bottleneck.as_ref().map(|b| b.gbps),
                })),
            })
        })
        .collect()
}

/// The `layout` entry: the parallel sizes inferred, with evidence, and the logs' element size.
fn layout_entry(session: &Session, analysis: &Analysis) -> Value {
    let layout = &analysis.layout;
    json!({
        "sizes": layout.sizes.map(|s| json!({"tp": s.tp, "cp": s.cp, "ep": s.ep, "dp": s.dp, "pp": s.pp})),
        "evidence": layout.evidence,
        "confidence": layout.confidence,
        // The datatype size carrying most logged bytes: the model's β as the logs show it.
        "bytes_per_element": analyses::dominant_element_bytes(session),
    })
}

/// The `alignment` entry: operations and kernels in the session, how many were matched, and
/// the processes seen on one side only.
fn alignment_entry(session: &Session, alignments: &Alignments) -> Value {
    let log_ops: u64 = session
        .logs()
        .iter()
        .map(|l| l.parsed.ops.len() as u64)
        .sum();
    let kernels: u64 = session
        .exports()
        .iter()
        .map(|e| e.export.kernels.len() as u64)
        .sum();
    let matched: u64 = alignments
        .processes
        .iter()
        .map(|m| m.matched_kernels())
        .sum();
    // On a process seen on one side only, everything on the other side is unmatched.
    let unmatched_log_ops: u64 = alignments
        .processes
        .iter()
        .map(|m| m.unmatched_log_ops())
        .sum::<u64>()
        + log_ops
        - alignments
            .processes
            .iter()
            .map(|m| m.log_ops.len() as u64)
            .sum::<u64>();
    json!({
        "log_ops": log_ops,
        "kernels": kernels,
        "matched": matched,
        "unmatched_log_ops": unmatched_log_ops,
        "unmatched_kernels": kernels - matched,
        "processes_log_only": alignments.log_only.iter().map(|p| format!("{}:{}", p.host, p.pid)).collect::<Vec<_>>(),
        "processes_kernels_only": alignments.kernels_only.iter().map(|p| format!("{}:{}", p.host, p.pid)).collect::<Vec<_>>(),
    })
}

/// The `warnings`: one-sided processes (when both sides were given), identity notes, and every
/// file's error and diagnostics.
fn warning_entries(
    session: &Session,
    reports: &[FileReport],
    alignments: &Alignments,
) -> Vec<Value> {
    let mut warnings: Vec<Value> = Vec::new();
    if !alignments.processes.is_empty()
        || (!session.logs().is_empty() && !session.exports().is_empty())
    {
        for p in &alignments.log_only {
            warnings.push(json!({"path": "", "line": 0, "message": format!("process {}:{} has log operations but no kernels in any export", p.host, p.pid)}));
        }
        for p in &alignments.kernels_only {
            warnings.push(json!({"path": "", "line": 0, "message": format!("process {}:{} has NCCL kernels but no log operations", p.host, p.pid)}));
        }
    }
    for note in &session.identity().notes {
        warnings.push(json!({"path": "", "line": 0, "message": note}));
    }
    for r in reports {
        if let Some(e) = &r.error {
            warnings.push(json!({"path": r.name, "line": 0, "message": e}));
        }
        for d in &r.diagnostics {
            warnings.push(json!({"path": d.path, "line": d.line, "message": d.message}));
        }
    }
    warnings
}

/// The contract's `theory` entries for the config's model and layout: the theory crate's entry
/// with the observed mean over the ranks it holds for, plus each rank's observation.
fn theory_entries(cfg: &TheoryConfig, analysis: &Analysis, volumes: &[RankVolume]) -> Vec<Value> {
    compare_volumes(cfg, volumes)
        .iter()
        .map(|c| {
            let mut v = theory::entry_json(&c.entry, c.observed_mean());
            let obj = v.as_object_mut().expect("an entry is an object");
            obj.insert("observed_bytes_per_rank".into(), per_rank(&c.observed));
            obj.insert(
                "primary_discrepancy".into(),
                c.primary_discrepancy().map_or(Value::Null, |(op, d)| {
                    json!({"op": op.name(), "observed_minus_theoretical_bytes": d.round()})
                }),
            );
            if let Some(n) = analysis.iterations.filter(|&n| n > 0) {
                obj.insert("observed_iterations".into(), json!(n));
                obj.insert(
                    "observed_bytes_per_iteration".into(),
                    json!(c.observed_mean().map(|b| b / u64::from(n))),
                );
            }
            v
        })
        .collect()
}

/// With no config there is no theory: the observed volume per parallelism alone, so the
/// numbers are still there to compare by hand (`theoretical_bytes` and `ratio` are null).
fn observed_only_entries(volumes: &[RankVolume]) -> Vec<Value> {
    let mut per: BTreeMap<&'static str, Vec<(u32, u64)>> = BTreeMap::new();
    for v in volumes {
        for (p, &b) in &v.by_parallelism {
            per.entry(p.name()).or_default().push((v.global_rank, b));
        }
    }
    per.into_iter()
        .map(|(name, ranks)| {
            let mean = ranks.iter().map(|&(_, b)| b as f64).sum::<f64>() / ranks.len() as f64;
            json!({
                "parallelism": name,
                "scope": "per-rank",
                "theoretical_bytes": null,
                "observed_bytes": mean.round() as u64,
                "ratio": null,
                "observed_bytes_per_rank": per_rank(&ranks),
            })
        })
        .collect()
}

/// The contract's `comm_matrix` (the rank-to-rank matrix's entries) and, under `patterns`, the
/// rest of issue 34's analyses: the matrix's hosts, node matrix, routing and notes, the matrix
/// the layout predicts, the On-Off periodicity and the run's own performance model.
pub fn add_patterns(summary: &mut Value, p: &analyses::patterns::Patterns) {
    let value = |v: Result<Value, serde_json::Error>| v.unwrap_or(Value::Null);
    summary["comm_matrix"] = value(serde_json::to_value(&p.matrix.entries));
    summary["patterns"] = json!({
        "matrix": {
            "hosts": value(serde_json::to_value(&p.matrix.hosts)),
            "nodes": value(serde_json::to_value(&p.matrix.nodes)),
            "comms": value(serde_json::to_value(&p.matrix.comms)),
            "notes": value(serde_json::to_value(&p.matrix.notes)),
        },
        "predicted": value(serde_json::to_value(&p.predicted)),
        "periodicity": value(serde_json::to_value(&p.periodicity)),
        "model": value(serde_json::to_value(&p.model)),
    });
}

/// CONTRACT.md's `steps`: StageFrontier, the iteration-time breakdown and the baselines
/// (`analyses::steps`), when the inputs show steps.
pub fn steps_entry(
    session: &Session,
    analysis: &Analysis,
    opts: &analyses::steps::StepOptions,
    hw: &theory::Hardware,
) -> Option<Value> {
    let report = analyses::steps::analyse(session, analysis, opts, Some(hw))?;
    serde_json::to_value(&report).ok()
}

/// Observed kernel time beside the time model's, per operation type and size bucket, and the
/// message-size histogram per parallelism.
pub fn time_entry(analysis: &Analysis, volumes: &[RankVolume], hw: &theory::Hardware) -> Value {
    let rows: Vec<Value> = analyses::predicted_times(analysis, hw)
        .iter()
        .map(|r| {
            json!({
                "op": r.op.name(),
                "bucket_bytes": r.bucket_bytes,
                "kernels": r.kernels,
                "observed_mean_us": r.observed_mean_s * 1e6,
                "predicted_mean_us": r.predicted_mean_s * 1e6,
                "ratio": r.ratio(),
            })
        })
        .collect();
    let mut sizes: BTreeMap<&'static str, BTreeMap<u64, u64>> = BTreeMap::new();
    for v in volumes {
        for (p, hist) in &v.message_sizes {
            let h = sizes.entry(p.name()).or_default();
            for (b, n) in hist {
                *h.entry(*b).or_default() += n;
            }
        }
    }
    let sizes: Map<String, Value> = sizes
        .into_iter()
        .map(|(p, h)| {
            let buckets: Vec<Value> = h
                .into_iter()
                .map(|(b, n)| json!({"bucket_bytes": b, "operations": n}))
                .collect();
            (p.to_string(), json!(buckets))
        })
        .collect();
    json!({
        "hardware": hw.name,
        "efficiency": hw.efficiency,
        "by_op_and_size": rows,
        "message_sizes": sizes,
    })
}

/// How unevenly the members reached the communicator's collectives, and who was last.
fn skew_entry(s: &analyses::CommSkew) -> Value {
    let straggler = s.slowest.iter().max_by_key(|(_, n)| **n);
    json!({
        "instances": s.instances,
        "mean_us": s.mean_skew_ns / 1e3,
        "max_us": s.max_skew_ns as f64 / 1e3,
        "most_often_last_rank": straggler.map(|(r, _)| r),
        "last_rank_counts": s.slowest.iter().map(|(r, n)| (r.to_string(), json!(n))).collect::<Map<_, _>>(),
    })
}

/// One rank's observed link traffic per parallelism (bytes; `analyses::volumes`).
fn volume_of(volumes: &[RankVolume], rank: u32) -> Value {
    let v = volumes.iter().find(|v| v.global_rank == rank);
    Value::Object(
        v.map(|v| {
            v.by_parallelism
                .iter()
                .map(|(p, b)| (p.name().to_string(), json!(b)))
                .collect()
        })
        .unwrap_or_default(),
    )
}

fn per_rank(observed: &[(u32, u64)]) -> Value {
    Value::Object(
        observed
            .iter()
            .map(|(r, b)| (r.to_string(), json!(b)))
            .collect(),
    )
}

/// Every rank's clock against the reference rank's: `t_rank = t_ref + offset_ns +
/// drift_ppm·1e−6·(t_ref − reference_ns)`. Ranks with no shared collective are left out.
fn clocks_entry(analysis: &Analysis) -> Value {
    let c = &analysis.clocks;
    let ranks: Vec<Value> = c
        .ranks
        .iter()
        .map(|(rank, rc)| {
            let host = analysis
                .processes
                .iter()
                .find(|p| p.global_rank == *rank)
                .map(|p| p.process.host.as_str());
            json!({
                "global_rank": rank,
                "host": host,
                "offset_ns": rc.offset_ns,
                "drift_ppm": rc.drift_ppm,
                "samples": rc.samples,
            })
        })
        .collect();
    json!({
        "reference_rank": c.reference_rank,
        "reference_ns": c.reference_ns,
        "ranks": ranks,
    })
}

fn input_entry(r: &FileReport) -> Value {
    let mut v = json!({
        "path": r.name,
        "kind": if r.error.is_some() && r.kind == load::InputKind::Unknown { "unknown" } else { r.kind.label() },
        "bytes": r.bytes,
        "warnings": r.diagnostics.len() + usize::from(r.error.is_some()),
    });
    let obj = v
        .as_object_mut()
        .expect("json! of an object literal is an object");
    if let Some(d) = &r.digest {
        obj.insert("records_digest".into(), json!(d));
    }
    let fact_u64 = |k: &str| r.fact(k).and_then(|s| s.parse::<u64>().ok());
    match r.kind.label() {
        "nccl-log" => {
            obj.insert("nccl_version".into(), json!(r.version));
            obj.insert("lines".into(), json!(fact_u64("lines")));
            obj.insert("nccl_ops".into(), json!(fact_u64("NCCL operations")));
        }
        "nsys-sqlite" => {
            obj.insert("schema_version".into(), json!(r.version));
            obj.insert("nccl_kernels".into(), json!(fact_u64("NCCL kernels")));
        }
        "stage-file" => {
            obj.insert("lines".into(), json!(fact_u64("lines")));
            obj.insert("rows".into(), json!(fact_u64("rows")));
            obj.insert("steps".into(), json!(fact_u64("steps")));
            obj.insert("stage_ranks".into(), json!(fact_u64("ranks")));
        }
        "kineto" => {
            obj.insert("nccl_version".into(), json!(r.version));
            obj.insert("lines".into(), json!(fact_u64("lines")));
            obj.insert("events".into(), json!(fact_u64("events")));
            obj.insert("nccl_kernels".into(), json!(fact_u64("NCCL kernels")));
            obj.insert("nccl_ops".into(), json!(fact_u64("NCCL operations")));
            obj.insert("rank".into(), json!(fact_u64("rank")));
            obj.insert("world_size".into(), json!(fact_u64("world size")));
            obj.insert("process_groups".into(), json!(fact_u64("process groups")));
            obj.insert("profiler_steps".into(), json!(fact_u64("profiler steps")));
        }
        _ => {}
    }
    v
}

/// How a rank's log process and export process were paired (`ranks[].identity`): the clues and
/// the confidence, and which export process it is; `null` for a process with no kernels.
fn identity_entry(session: &Session, p: &pipeline::ProcessSummary) -> Value {
    let exports = session.exports();
    if let Some(pair) = session.identity().of_log(&p.process) {
        return json!({
            "matched_by": pair.matched_by.iter().map(|e| e.name()).collect::<Vec<_>>(),
            "confidence": pair.confidence,
            "export": exports.get(pair.export).map(|e| e.name.as_str()),
            "export_host": pair.export_host,
            "export_pid": pair.export_pid,
        });
    }
    if p.ops.is_empty() && p.kernels > 0 {
        // Seen in the exports alone: nothing to pair with.
        return json!({"matched_by": [], "confidence": 0.0, "export_only": true});
    }
    Value::Null
}

/// What the rank's log stamps are and how its export counts time (`ranks[].time`); `null` for a
/// process that was not aligned.
fn rank_time_entry(session: &Session, analysis: &Analysis, p: &pipeline::ProcessSummary) -> Value {
    let Some(pm) = analysis.alignments.get(&p.process) else {
        return Value::Null;
    };
    let f = analyses::time_facts(session, pm);
    json!({
        "stamp_format": analyses::stamp_format(&f),
        "stamp_resolution_ns": f.stamp_resolution_ns,
        "stamp_zone_offset_min": f.zone.map(|z| z.minutes),
        "stamp_zone_support": f.zone.map(|z| z.support),
        "stamps_used_for_alignment": f.stamps_used,
        "export_time_base": f.export_time_base,
    })
}
