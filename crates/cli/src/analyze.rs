//! `ncclscope analyze`.

use crate::{inputs, summary};
use clap::Args;
use load::Session;
use pipeline::{Analysis, UserSizes};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use theory::TheoryConfig;

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Write the analysis summary JSON here (`-` for standard output).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write a Chrome Trace Event Format JSON (loads in Perfetto and chrome://tracing).
    #[arg(long)]
    chrome_trace: Option<PathBuf>,
    /// Write the enriched operations as CSV, one row per NCCL kernel.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write the rank-to-rank matrix (the summary's `comm_matrix`) as CSV:
    /// `src,dst,parallelism,op,bytes,time_ns`, one row per entry.
    #[arg(long, value_name = "FILE")]
    matrix_csv: Option<PathBuf>,
    /// Write the enriched kernels as Apache Parquet (one row per NCCL kernel; for DuckDB, Dask,
    /// Spark). Run once per node for runs too large for one process: see docs/SCALE.md.
    #[arg(long)]
    parquet: Option<PathBuf>,
    /// Write the compact aggregate the page opens (every rank's overview and, per rank, its
    /// enriched kernels). Per-node jobs' aggregates combine with `ncclscope aggregate merge`.
    #[arg(long)]
    aggregate: Option<PathBuf>,
    /// Model and parallelism description (TOML, see CONTRACT.md); its `[parallel]` sizes label
    /// the communicators.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Tensor-parallel size (overrides the config file).
    #[arg(long)]
    tp: Option<u32>,
    /// Pipeline-parallel size.
    #[arg(long)]
    pp: Option<u32>,
    /// Data-parallel size.
    #[arg(long)]
    dp: Option<u32>,
    /// Expert-parallel size.
    #[arg(long)]
    ep: Option<u32>,
    /// Context-parallel size.
    #[arg(long)]
    cp: Option<u32>,
    /// Hardware of the time model (LBNL two-tier alpha-beta): `a100`, `h100`, `h200`, `b200`, or
    /// `topology` (the links the logs' topology dump printed; the default, falling back to a100).
    #[arg(long, default_value = "topology")]
    hardware: String,
    /// NVTX range names that mark a training iteration (repeatable; `*` and `?` glob the whole
    /// name, otherwise the pattern must appear as a word). Default: iteration, iter, step,
    /// train_step.
    #[arg(long = "iteration-pattern", value_name = "PATTERN")]
    iteration_patterns: Vec<String>,
    /// Add each input's `records_digest` (a fingerprint of every record read; the page shows the
    /// same one with `?digest` in its URL, so the two engines can be compared).
    #[arg(long)]
    digest: bool,
    /// Logs, exports, or directories (searched recursively).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

pub fn run(args: &AnalyzeArgs) -> Result<ExitCode, String> {
    let files = inputs::expand(&args.paths)?;
    let mut session = Session::default();
    session.digests = args.digest;
    if !args.iteration_patterns.is_empty() {
        session.read_options.iteration_patterns = args.iteration_patterns.clone();
    }
    let reports: Vec<_> = files
        .iter()
        .map(|f| inputs::load(&mut session, f))
        .collect();
    for r in &reports {
        if let Some(e) = &r.error {
            eprintln!("ncclscope: {}: {e}", r.name);
        }
    }
    let sizes = user_sizes(args)?;
    let theory = theory_config(args)?;
    let analysis = pipeline::analyse(&session, &sizes);
    let hardware = hardware(&args.hardware, &session)?;
    let volumes = analyses::observed_volumes(&session, &analysis.communicators, &analysis.layout);
    let mut summary = summary::build(&session, &reports, &analysis, &volumes, theory.as_ref());
    summary["time"] = summary::time_entry(&analysis, &volumes, &hardware);
    let patterns = analyses::patterns::patterns(
        &session,
        &analysis,
        &analyses::patterns::Options {
            hardware: &hardware,
            theory: theory.as_ref(),
            steps: analyses::patterns::StepSource::Nvtx,
        },
    );
    summary::add_patterns(&mut summary, &patterns);
    if let Some(path) = &args.matrix_csv {
        let mut csv = Vec::new();
        patterns
            .matrix
            .write_csv(&mut csv)
            .map_err(|e| e.to_string())?;
        write_output(path, &csv)?;
    }
    if let Some(cfg) = &theory {
        // Where the thesis' figure 5.30 marks the histogram: one microbatch's activation b·s·h·β.
        let m = &cfg.model;
        summary["time"]["tensor_bytes"] =
            (m.micro_batch * m.seq_len * m.hidden * m.bytes_per_element).into();
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())? + "\n";
        write_output(path, text.as_bytes())?;
    }
    write_exports(
        &session,
        &analysis,
        args,
        sizes.resolve(analysis.communicators.world_size),
    )?;
    let any_read = reports.iter().any(|r| r.error.is_none());
    Ok(if any_read {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// The parallel sizes: `--tp` and friends over the config file's `[parallel]` table.
fn user_sizes(args: &AnalyzeArgs) -> Result<UserSizes, String> {
    let mut sizes = UserSizes::default();
    if let Some(path) = &args.config {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let table: toml::Table = text
            .parse()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(parallel) = table.get("parallel").and_then(|p| p.as_table()) {
            let size = |key: &str| -> Result<Option<u32>, String> {
                match parallel.get(key) {
                    None => Ok(None),
                    Some(v) => v
                        .as_integer()
                        .and_then(|n| u32::try_from(n).ok())
                        .filter(|&n| n > 0)
                        .map(Some)
                        .ok_or_else(|| {
                            format!(
                                "{}: [parallel] {key} must be a positive integer",
                                path.display()
                            )
                        }),
                }
            };
            sizes = UserSizes {
                tp: size("tp")?,
                pp: size("pp")?,
                dp: size("dp")?,
                ep: size("ep")?,
                cp: size("cp")?,
            };
        }
    }
    sizes.tp = args.tp.or(sizes.tp);
    sizes.pp = args.pp.or(sizes.pp);
    sizes.dp = args.dp.or(sizes.dp);
    sizes.ep = args.ep.or(sizes.ep);
    sizes.cp = args.cp.or(sizes.cp);
    Ok(sizes)
}

/// The time model's hardware by name; `topology` reads it from the logs' topology dump.
fn hardware(name: &str, session: &Session) -> Result<theory::Hardware, String> {
    Ok(match name {
        "a100" => theory::Hardware::a100(),
        "h100" => theory::Hardware::h100(),
        "h200" => theory::Hardware::h200(),
        "b200" => theory::Hardware::b200(),
        "topology" => {
            analyses::hardware_from_topology(session).unwrap_or_else(theory::Hardware::a100)
        }
        other => {
            return Err(format!(
                "--hardware {other}: expected a100, h100, h200, b200 or topology"
            ))
        }
    })
}

/// The model and layout of the config file, for theory versus observed; `--tp` and friends
/// override its `[parallel]` sizes.
fn theory_config(args: &AnalyzeArgs) -> Result<Option<TheoryConfig>, String> {
    let Some(path) = &args.config else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cfg = TheoryConfig::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let p = &mut cfg.parallel;
    for (given, size) in [
        (args.tp, &mut p.tp),
        (args.pp, &mut p.pp),
        (args.dp, &mut p.dp),
        (args.ep, &mut p.ep),
        (args.cp, &mut p.cp),
    ] {
        if let Some(n) = given {
            *size = n as u64;
        }
    }
    cfg.validate()
        .map_err(|e| format!("{} with the command-line sizes: {e}", path.display()))?;
    Ok(Some(cfg))
}

/// Writes the exports of the enriched kernel records, rank by rank: the records are built once
/// for every export asked for, one rank's at a time (a record is a few KB; the run's would be
/// thousands of times its operations, and a per-node job must fit any node).
fn write_exports(
    session: &Session,
    analysis: &Analysis,
    args: &AnalyzeArgs,
    given: Option<pipeline::Sizes>,
) -> Result<(), String> {
    if args.chrome_trace.is_none()
        && args.csv.is_none()
        && args.parquet.is_none()
        && args.aggregate.is_none()
    {
        return Ok(());
    }
    let (hosts, nvtx) = match args.chrome_trace {
        Some(_) => (
            export::rank_hosts(session, analysis),
            export::nvtx_ranges(session, analysis),
        ),
        None => Default::default(),
    };
    let mut trace = match &args.chrome_trace {
        Some(p) => Some((
            p,
            export::TraceWriter::new(open_output(p)?, &hosts, &nvtx).map_err(at(p))?,
        )),
        None => None,
    };
    let mut csv = match &args.csv {
        Some(p) => Some((p, export::CsvWriter::new(open_output(p)?).map_err(at(p))?)),
        None => None,
    };
    let mut parquet = match &args.parquet {
        Some(p) => {
            let file = std::fs::File::create(p).map_err(at(p))?;
            let w = export_parquet::ParquetWriter::new(std::io::BufWriter::new(file));
            Some((p, w.map_err(at_text(p))?))
        }
        None => None,
    };
    let mut aggregate = args
        .aggregate
        .as_ref()
        .map(|p| (p, aggregate_file::Builder::new(session, analysis, given)));
    for batch in export::records_by_rank(session, analysis) {
        if let Some((p, w)) = &mut trace {
            w.write(&batch.kernels).map_err(at(p))?;
        }
        if let Some((p, w)) = &mut csv {
            w.write(&batch.kernels).map_err(at(p))?;
        }
        if let Some((p, w)) = &mut parquet {
            w.write(&batch.kernels).map_err(at_text(p))?;
        }
        if let Some((_, b)) = &mut aggregate {
            let kernels: Vec<&export::KernelRecord> = batch.kernels.iter().collect();
            b.add_rank(batch.rank, &kernels);
        }
    }
    if let Some((p, w)) = trace {
        w.finish().map_err(at(p))?;
    }
    if let Some((p, w)) = csv {
        w.finish().map_err(at(p))?;
    }
    if let Some((p, w)) = parquet {
        w.finish().map_err(at_text(p))?;
    }
    if let Some((p, b)) = aggregate {
        write_output(p, &b.finish())?;
    }
    Ok(())
}

/// An I/O error of writing `path`, as the message names it.
fn at(path: &Path) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{}: {e}", shown(path))
}

/// An error of writing `path` given as text (Parquet's), as the message names it.
fn at_text(path: &Path) -> impl Fn(String) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

/// An output file to write to, or standard output for `-`.
fn open_output(path: &Path) -> Result<Box<dyn Write>, String> {
    if path.as_os_str() == "-" {
        Ok(Box::new(std::io::BufWriter::new(std::io::stdout())))
    } else {
        let file = std::fs::File::create(path).map_err(at(path))?;
        Ok(Box::new(std::io::BufWriter::new(file)))
    }
}

/// A path as messages name it (`-` is standard output).
fn shown(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "standard output".to_string()
    } else {
        path.display().to_string()
    }
}

/// Writes an output file, or standard output for `-`.
fn write_output(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut out = open_output(path)?;
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(at(path))
}
