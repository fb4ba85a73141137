//! The `ncclscope` command, as `../shared/CONTRACT.md` fixes it.
//!
//! Exit status: 0 on success (even with warnings), 2 for unusable arguments or when no input
//! could be read at all. Errors name the file and, for text, the line.

mod aggregate_cmd;
mod align_scenarios_cmd;
mod analyze;
pub mod inputs;
mod summary;
mod synth_cmd;
mod theory_cmd;

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "ncclscope",
    version,
    about = "NCCL logs + Nsight Systems exports → per-operation timing, bandwidth and parallelism"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Analyse NCCL debug logs and Nsight Systems SQLite exports (files or directories).
    Analyze(analyze::AnalyzeArgs),
    /// Generate a synthetic training run (logs, exports, truth.json) from a preset.
    Synth(synth_cmd::SynthArgs),
    /// Merge per-node aggregates into the run's, or show one (see `analyze --aggregate`).
    Aggregate(aggregate_cmd::AggregateArgs),
    /// Theoretical communication volume of a model and parallel layout (no trace needed).
    Theory(theory_cmd::TheoryArgs),
    /// Developer tool: the thesis' table 4.5 alignment scenarios, generated and scored per seed.
    AlignScenarios(align_scenarios_cmd::AlignScenariosArgs),
}

/// Runs the command line `args` (including the program name) and returns the exit status.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let result = match cli.command {
        Command::Analyze(args) => analyze::run(&args),
        Command::Synth(args) => synth_cmd::run(&args),
        Command::Theory(args) => theory_cmd::run(&args),
        Command::Aggregate(args) => aggregate_cmd::run(&args),
        Command::AlignScenarios(args) => align_scenarios_cmd::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("ncclscope: {message}");
            ExitCode::from(2)
        }
    }
}
