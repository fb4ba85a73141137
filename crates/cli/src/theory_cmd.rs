//! `ncclscope theory`: the theoretical communication volume of a model and layout, no trace needed.

use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use theory::TheoryConfig;

#[derive(Args, Debug)]
pub struct TheoryArgs {
    /// Model and parallel layout (TOML, see CONTRACT.md); the thesis' dense model when absent.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Write the result here (`-` or absent: standard output).
    #[arg(long)]
    json: Option<PathBuf>,
}

pub fn run(args: &TheoryArgs) -> Result<ExitCode, String> {
    let cfg = match &args.config {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            TheoryConfig::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => TheoryConfig::thesis_dense(),
    };
    let text =
        serde_json::to_string_pretty(&theory::theory_json(&cfg)).map_err(|e| e.to_string())? + "\n";
    match &args.json {
        Some(path) if path.as_os_str() != "-" => {
            std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?
        }
        _ => std::io::stdout()
            .write_all(text.as_bytes())
            .map_err(|e| format!("standard output: {e}"))?,
    }
    Ok(ExitCode::SUCCESS)
}
