//! `ncclscope analyze`.

use crate::{inputs, summary};
use clap::Args;
use pipeline::Session;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Write the analysis summary JSON here (`-` for standard output).
    #[arg(long)]
    json: Option<PathBuf>,
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
    let reports: Vec<_> = files
        .iter()
        .map(|f| inputs::load(&mut session, f))
        .collect();
    for r in &reports {
        if let Some(e) = &r.error {
            eprintln!("ncclscope: {}: {e}", r.name);
        }
    }
    let alignments = pipeline::align_session(&session, &align::AlignConfig::rich());
    let summary = summary::build(&session, &reports, &alignments);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())? + "\n";
        if path.as_os_str() == "-" {
            std::io::stdout()
                .write_all(text.as_bytes())
                .map_err(|e| format!("standard output: {e}"))?;
        } else {
            std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    let any_read = reports.iter().any(|r| r.error.is_none());
    Ok(if any_read {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}
