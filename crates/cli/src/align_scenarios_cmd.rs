//! `ncclscope align-scenarios`: the thesis' table 4.5 experiment, regenerated and scored (not
//! part of the contract's commands; a developer tool behind the alignment figures).

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct AlignScenariosArgs {
    /// Number of seeds per scenario.
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// The first seed (seeds are consecutive).
    #[arg(long, default_value_t = 1)]
    first_seed: u64,
    /// Also write every figure, per seed, as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

pub fn run(args: &AlignScenariosArgs) -> Result<ExitCode, String> {
    if args.seeds == 0 {
        return Err("--seeds must be at least 1".into());
    }
    let results = accuracy::sweep(args.seeds, args.first_seed)?;
    print!("{}", accuracy::markdown(&results));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&results).map_err(|e| e.to_string())? + "\n";
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
