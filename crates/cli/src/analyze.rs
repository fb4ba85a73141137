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
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Hardware of the time model (LBNL two-tier alpha-beta): `a100`, `h100`, `h200`, `b200`, or
    /// `topology` (the links the logs' topology dump printed; the default, falling back to a100).
    #[arg(long, default_value = "topology")]
    hardware: String,
    /// NVTX range names that mark a training iteration (repeatable; `*` and `?` glob the whole
    /// name, otherwise the pattern must appear as a word). Default: iteration, iter, step,
    /// train_step.
    #[arg(long = "iteration-pattern", value_name = "PATTERN")]
    iteration_patterns: Vec<String>,
    /// Routing threshold θ of the step analysis (StageFrontier's candidates: the smallest set of
    /// stages whose shares reach θ), 0.70 to 0.90.
    #[arg(long, default_value_t = 0.8)]
    theta: f64,
    /// NVTX range names that delimit one training step for the step analysis (repeatable; globs
    /// over the whole name, case-insensitive; replaces the defaults: ProfilerStep#*,
    /// iteration*, train_step*, run_training_batch*, ...).
    #[arg(long = "step-pattern", value_name = "GLOB")]
    step_patterns: Vec<String>,
    /// An NVTX range name mapped to a stage, STAGE=GLOB (repeatable; tried before the default
    /// mapping, e.g. `--stage-pattern data=fetch_*`).
    #[arg(long = "stage-pattern", value_name = "STAGE=GLOB")]
    stage_patterns: Vec<String>,
    /// Peak FLOP/s per GPU in TFLOP/s for the closed forms of the iteration time (default: the
    /// hardware preset's dense FP16 figure).
    #[arg(long)]
    peak_tflops: Option<f64>,
    /// GPU utilisation μ of the closed forms' compute term.
    #[arg(long, default_value_t = 0.5)]
    utilisation: f64,
    /// The run recomputes activations (ConfigTuner's assumption: 8 FLOPs per parameter and
    /// token, 6 TP AllReduce per layer).
    #[arg(long)]
    recompute: bool,
    /// Add each input's `records_digest` (a fingerprint of every record read; the page shows the
    /// same one with `?digest` in its URL, so the two engines can be compared).
    #[arg(long)]
    digest: bool,
    /// Logs, exports, or directories (searched recursively).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// The model and parallel layout given on the command line (`analyze` and `diff` share them).
#[derive(Args, Debug)]
pub struct LayoutArgs {
    /// Model and parallelism description (TOML, see CONTRACT.md); its `[parallel]` sizes label
    /// the communicators.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Tensor-parallel size (overrides the config file).
    #[arg(long)]
    pub tp: Option<u32>,
    /// Pipeline-parallel size.
    #[arg(long)]
    pub pp: Option<u32>,
    /// Data-parallel size.
    #[arg(long)]
    pub dp: Option<u32>,
    /// Expert-parallel size.
    #[arg(long)]
    pub ep: Option<u32>,
    /// Context-parallel size.
    #[arg(long)]
    pub cp: Option<u32>,
}

impl LayoutArgs {
    /// The sizes given, in (tp, pp, dp, ep, cp) order.
    pub fn given(&self) -> [Option<u32>; 5] {
        [self.tp, self.pp, self.dp, self.ep, self.cp]
    }
}

pub fn run(args: &AnalyzeArgs) -> Result<ExitCode, String> {
    let files = inputs::expand(&args.paths)?;
    let mut session = Session::default();
    session.digests = args.digest;
    // The step analysis's breakdown and baselines need the compute kernels.
    session.read_compute = true;
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
    let steps = step_options(args, theory.as_ref())?;
    if let Some(s) = summary::steps_entry(&session, &analysis, &steps, &hardware) {
        summary["steps"] = s;
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

/// What the step analysis is asked for: θ, the NVTX mapping, the closed forms' inputs.
fn step_options(
    args: &AnalyzeArgs,
    theory: Option<&TheoryConfig>,
) -> Result<analyses::steps::StepOptions, String> {
    let mut opts = analyses::steps::StepOptions::default();
    if !(0.7..=0.9).contains(&args.theta) {
        return Err(format!("--theta {}: expected 0.70 to 0.90", args.theta));
    }
    opts.settings.theta = args.theta;
    if !args.step_patterns.is_empty() {
        opts.mapping.steps = args.step_patterns.clone();
    }
    for (k, spec) in args.stage_patterns.iter().enumerate() {
        let (stage, glob) = spec
            .split_once('=')
            .filter(|(s, g)| !s.trim().is_empty() && !g.is_empty())
            .ok_or_else(|| format!("--stage-pattern {spec:?}: expected STAGE=GLOB"))?;
        opts.mapping.stages.insert(
            k,
            analyses::steps::StagePattern {
                pattern: glob.to_string(),
                stage: stage.trim().to_string(),
            },
        );
    }
    opts.model = theory.cloned();
    opts.peak_tflops = args.peak_tflops;
    opts.utilisation = args.utilisation;
    opts.recompute = args.recompute;
    Ok(opts)
}

/// The parallel sizes: `--tp` and friends over the config file's `[parallel]` table.
fn user_sizes(args: &AnalyzeArgs) -> Result<UserSizes, String> {
    sizes_given(args.layout.config.as_deref(), args.layout.given())
}

/// The parallel sizes `given` on the command line (tp, pp, dp, ep, cp) over the `[parallel]`
/// table of the `config` file: what `analyze` and `diff` label communicators with.
pub(crate) fn sizes_given(
    config: Option<&Path>,
    given: [Option<u32>; 5],
) -> Result<UserSizes, String> {
    let mut sizes = UserSizes::default();
    if let Some(path) = config {
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
    let [tp, pp, dp, ep, cp] = given;
    sizes.tp = tp.or(sizes.tp);
    sizes.pp = pp.or(sizes.pp);
    sizes.dp = dp.or(sizes.dp);
    sizes.ep = ep.or(sizes.ep);
    sizes.cp = cp.or(sizes.cp);
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
    let Some(path) = &args.layout.config else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cfg = TheoryConfig::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let p = &mut cfg.parallel;
    for (given, size) in [
        (args.layout.tp, &mut p.tp),
        (args.layout.pp, &mut p.pp),
        (args.layout.dp, &mut p.dp),
        (args.layout.ep, &mut p.ep),
        (args.layout.cp, &mut p.cp),
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
pub(crate) fn write_output(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut out = open_output(path)?;
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(at(path))
}
