//! `ncclscope aggregate merge|show`: the run aggregate from the per-node jobs' aggregates
//! (`analyze --aggregate`), and a look inside one as JSON (docs/SCALE.md).
//!
//! The merge streams: it reads the inputs' headers, overviews and anchors, then copies each rank's
//! section from its input to the output once, so its memory is the overviews and one section.

use aggregate_file::format::{Block, HEADER_LEN};
use aggregate_file::{Aggregate, Header, Input, Merge, Overview, RankDetail};
use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct AggregateArgs {
    #[command(subcommand)]
    command: AggregateCommand,
}

#[derive(Subcommand, Debug)]
enum AggregateCommand {
    /// Merge aggregates (per-node jobs' `analyze --aggregate` files, or merged ones) into one
    /// run aggregate: communicators relabelled over the whole run, the nodes' clocks tied.
    Merge {
        /// The run aggregate to write.
        #[arg(long)]
        out: PathBuf,
        /// Aggregates, or directories holding them (other files there are skipped).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Print an aggregate's overview as JSON (totals, ranks, communicators, layout), or one
    /// rank's kernels with `--rank`.
    Show {
        file: PathBuf,
        /// Print this global rank's kernels instead.
        #[arg(long)]
        rank: Option<u32>,
    },
}

pub fn run(args: &AggregateArgs) -> Result<ExitCode, String> {
    match &args.command {
        AggregateCommand::Merge { out, paths } => merge(out, paths),
        AggregateCommand::Show { file, rank } => show(file, *rank),
    }
}

/// One input file, open, with its header and overview read.
struct Opened {
    path: PathBuf,
    file: File,
}

fn merge(out: &Path, paths: &[PathBuf]) -> Result<ExitCode, String> {
    let out_real = std::fs::canonicalize(out).ok();
    let mut opened = Vec::new();
    let mut inputs = Vec::new();
    for path in crate::inputs::expand(paths)? {
        // The output of an earlier merge into the same folder is not an input.
        if out_real.is_some() && std::fs::canonicalize(&path).ok() == out_real {
            continue;
        }
        let name = path.display().to_string();
        let mut file = File::open(&path).map_err(|e| format!("{name}: {e}"))?;
        let mut head = vec![0u8; HEADER_LEN];
        let n = read_up_to(&mut file, &mut head).map_err(|e| format!("{name}: {e}"))?;
        if !aggregate_file::is_aggregate(&head[..n]) {
            eprintln!("ncclscope: {name}: not an ncclscope aggregate; skipped");
            continue;
        }
        let len = file.metadata().map_err(|e| format!("{name}: {e}"))?.len();
        let header = Header::decode(&name, &head[..n], len).map_err(|e| e.to_string())?;
        let block = read_block(&mut file, header.overview).map_err(|e| format!("{name}: {e}"))?;
        let overview =
            aggregate_file::read_overview(&name, &header, &block).map_err(|e| e.to_string())?;
        let block = read_block(&mut file, header.anchors).map_err(|e| format!("{name}: {e}"))?;
        let anchors = aggregate_file::read_anchors(&name, &header, &overview, &block)
            .map_err(|e| e.to_string())?;
        let block = match header.matrix {
            Some(b) => read_block(&mut file, b).map_err(|e| format!("{name}: {e}"))?,
            None => Vec::new(),
        };
        let matrix = aggregate_file::read_matrix(&name, &header, &overview, &block)
            .map_err(|e| e.to_string())?;
        inputs.push(Input {
            file: name,
            header,
            overview,
            anchors,
            matrix,
        });
        opened.push(Opened { path, file });
    }
    if inputs.is_empty() {
        return Err(
            "no aggregate among the inputs (write them with `analyze --aggregate FILE`)".into(),
        );
    }
    let merge = Merge::new(inputs).map_err(|e| e.to_string())?;
    let written = write_merge(out, merge, &mut opened);
    if written.is_err() {
        // No half-written aggregate is left behind (its header would be zeros anyway).
        let _ = std::fs::remove_file(out);
    }
    written
}

/// Writes the merged file: zeros where the header goes, each section copied from its input, the
/// tail, then the header over the zeros.
fn write_merge(out: &Path, mut merge: Merge, opened: &mut [Opened]) -> Result<ExitCode, String> {
    let out_name = out.display().to_string();
    let failed = |e: std::io::Error| format!("{out_name}: {e}");
    let mut w = BufWriter::new(File::create(out).map_err(failed)?);
    w.write_all(&[0u8; HEADER_LEN]).map_err(failed)?;
    for (input, block) in merge.sections() {
        let o = &mut opened[input];
        let bytes =
            read_block(&mut o.file, block).map_err(|e| format!("{}: {e}", o.path.display()))?;
        merge.add_section(&bytes).map_err(|e| e.to_string())?;
        w.write_all(&bytes).map_err(failed)?;
    }
    let (header, tail) = merge.finish().map_err(|e| e.to_string())?;
    w.write_all(&tail).map_err(failed)?;
    let mut f = w.into_inner().map_err(|e| failed(e.into_error()))?;
    f.seek(SeekFrom::Start(0)).map_err(failed)?;
    f.write_all(&header.encode()).map_err(failed)?;
    Ok(ExitCode::SUCCESS)
}

/// A block's bytes, read from where the header or overview says (already checked against the
/// file's size).
fn read_block(file: &mut File, b: Block) -> std::io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(b.offset))?;
    let mut bytes = vec![0u8; b.len as usize];
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

fn show(path: &Path, rank: Option<u32>) -> Result<ExitCode, String> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("{name}: {e}"))?;
    let a = Aggregate::open(&name, &bytes).map_err(|e| e.to_string())?;
    let value = match rank {
        Some(r) => {
            let detail = a.rank(r).map_err(|e| e.to_string())?;
            json!({"global_rank": r, "kernels": kernels_json(&detail, &a.overview)})
        }
        None => {
            let mut v = overview_json(&a.overview);
            // The matrix as `analyze` names it (`comm_matrix`; hosts and the node matrix under
            // `matrix`), or `null` for a file written without one.
            let m = a.matrix().map_err(|e| e.to_string())?;
            let m = m.map(|m| m.comm_matrix(&a.overview));
            if let Some(o) = v.as_object_mut() {
                o.insert("comm_matrix".into(), json!(m.as_ref().map(|m| &m.entries)));
                o.insert(
                    "matrix".into(),
                    json!(m
                        .as_ref()
                        .map(|m| json!({"hosts": m.hosts, "nodes": m.nodes, "notes": m.notes}))),
                );
            }
            v
        }
    };
    let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The overview with the summary JSON's names (`ops_by_type`, `bytes_by_type`, `matched_ops`).
pub fn overview_json(o: &Overview) -> Value {
    let by_type = |ops: &[aggregate_file::overview::OpCount]| {
        let counts: Map<String, Value> =
            ops.iter().map(|x| (x.op.clone(), json!(x.count))).collect();
        let bytes: Map<String, Value> =
            ops.iter().map(|x| (x.op.clone(), json!(x.bytes))).collect();
        (counts, bytes)
    };
    let t = o.totals();
    let (ops, bytes) = by_type(&t.ops);
    let ranks: Vec<Value> = o
        .ranks
        .iter()
        .map(|r| {
            let (ops, bytes) = by_type(&r.ops);
            json!({
                "global_rank": r.global_rank,
                "rank_from_init": r.rank_from_init,
                "host": r.host,
                "pid": r.pid,
                "local_rank": r.local_rank,
                "ops_by_type": ops,
                "bytes_by_type": bytes,
                "kernels": r.kernels,
                "matched_ops": r.matched,
                "busy_ns": r.busy_ns,
                "median_bus_bw_gbps": r.median_bus_bw_gbps,
                "communicators": r.comms.len(),
                "detail_bytes": r.section.len,
            })
        })
        .collect();
    let comms: Vec<Value> = o
        .comms
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "size": c.size,
                "global_ranks": c.global_ranks,
                "parallelism": c.parallelism,
                "parallelism_confidence": c.confidence,
                "parallelism_evidence": c.evidence,
                "kernels": c.kernels,
                "median_bus_bw_gbps": c.bus_bw.median(),
                "bottleneck": c.bottleneck.as_ref().map(|b| &b.0),
            })
        })
        .collect();
    let sizes = |s: &Option<aggregate_file::overview::Sizes>| {
        s.map(|s| json!({"tp": s.tp, "cp": s.cp, "ep": s.ep, "dp": s.dp, "pp": s.pp}))
    };
    json!({
        "producer": o.producer,
        "totals": {
            "ranks": t.ranks,
            "hosts": t.hosts,
            "kernels": t.kernels,
            "matched_ops": t.matched,
            "ops_by_type": ops,
            "bytes_by_type": bytes,
            "detail_bytes": t.detail_bytes,
        },
        "sources": o.sources.iter().map(|s| json!({"hosts": s.hosts, "inputs": s.inputs, "input_bytes": s.input_bytes})).collect::<Vec<_>>(),
        "layout": {
            "sizes": sizes(&o.layout.sizes),
            "given": sizes(&o.layout.given),
            "evidence": o.layout.evidence,
            "confidence": o.layout.confidence,
            "world_size": o.layout.world_size,
            "iterations": o.layout.iterations,
        },
        "time": {"start_ns": o.heat.start_ns, "end_ns": o.heat.end_ns},
        "ranks": ranks,
        "communicators": comms,
        "notes": o.notes,
    })
}

/// One rank's kernels, in run time.
fn kernels_json(d: &RankDetail, o: &Overview) -> Vec<Value> {
    let text = |i: Option<u32>| i.map(|i| d.text(i).to_string());
    d.kernels
        .iter()
        .map(|k| {
            let comm = text(k.comm);
            let parallelism = comm
                .as_deref()
                .and_then(|id| o.comms.iter().find(|c| c.id == id))
                .map(|c| c.parallelism.clone());
            json!({
                "name": d.text(k.op),
                "kernel": d.text(k.kernel),
                "start_ns": k.start_ns,
                "end_ns": k.end_ns,
                "own_clock_start_ns": k.own_start_ns,
                "stream": k.stream,
                "correlation_id": k.correlation_id,
                "matched": k.matched,
                "confidence": k.confidence,
                "comm_id": comm,
                "parallelism": parallelism,
                "op_count": k.op_count,
                "element_count": k.count,
                "message_bytes": k.bytes,
                "data_type": text(k.datatype),
                "algorithm": text(k.algorithm),
                "protocol": text(k.protocol),
                "channels": k.channels,
                "algo_bw_gbps": k.algo_bw_gbps,
                "bus_bw_gbps": k.bus_bw_gbps,
                "bus_efficiency": k.bus_efficiency,
            })
        })
        .collect()
}
