//! `ncclscope analyze`.

use crate::{inputs, summary};
use clap::Args;
use pipeline::{Session, UserSizes};
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
    let mut summary = summary::build(&session, &reports, &analysis, theory.as_ref());
    summary["time"] = summary::time_entry(&analysis, &hardware);
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
    // The enriched kernel records behind every export, built once for all of them.
    let wants_records = args.chrome_trace.is_some()
        || args.csv.is_some()
        || args.parquet.is_some()
        || args.aggregate.is_some();
    let records = wants_records.then(|| export::kernel_records(&session, &analysis));
    if let (Some(path), Some(records)) = (&args.chrome_trace, &records) {
        let text = serde_json::to_string(&export::trace_of(records)).map_err(|e| e.to_string())?;
        write_output(path, text.as_bytes())?;
    }
    if let (Some(path), Some(records)) = (&args.csv, &records) {
        write_output(path, export::csv_of(records).as_bytes())?;
    }
    if let (Some(path), Some(records)) = (&args.parquet, &records) {
        let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        export_parquet::write_parquet(records, std::io::BufWriter::new(file))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let (Some(path), Some(records)) = (&args.aggregate, &records) {
        let given = sizes.resolve(analysis.communicators.world_size);
        write_output(path, &aggregate::build(&session, &analysis, records, given))?;
    }
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
            pipeline::hardware_from_topology(session).unwrap_or_else(theory::Hardware::a100)
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

/// Writes an output file, or standard output for `-`.
fn write_output(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if path.as_os_str() == "-" {
        std::io::stdout()
            .write_all(bytes)
            .map_err(|e| format!("standard output: {e}"))
    } else {
        std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    }
}
