//! `ncclscope diff BASE NEW`: what changed between a baseline run and a new one
//! (`analyses::diff`). Each run is a file or a directory, loaded as `analyze` loads its inputs.
//! Without `--json -` a short report goes to standard output: the ranked changes and the
//! signatures with the largest impact.
//!
//! Exit status: 0 when both runs were read (whatever changed); 2 for unusable arguments or when
//! either run has no input that could be read (the other is still summarised, in the JSON too,
//! and the failure named).

use crate::{analyze, inputs};
use analyses::diff::{self, RunDiff, RunProfile, Settings, Test, TestSettings};
use clap::Args;
use load::Session;
use pipeline::UserSizes;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// Write the comparison as JSON here (`-` for standard output): `{"diff": {...}}`.
    #[arg(long)]
    json: Option<PathBuf>,
    /// The model and layout, for both runs.
    #[command(flatten)]
    layout: analyze::LayoutArgs,
    /// How a time change is called significant: `bootstrap` (an interval of the ratio of
    /// medians from 2000 resamples with a fixed seed) or `rank-sum` (the Mann–Whitney U test).
    #[arg(long, default_value = "bootstrap")]
    test: String,
    /// The smallest change of a median time called a change (0.05: 5 %).
    #[arg(long, default_value_t = 0.05)]
    min_effect: f64,
    /// NVTX range names that mark a training iteration (as for `analyze`).
    #[arg(long = "iteration-pattern", value_name = "PATTERN")]
    iteration_patterns: Vec<String>,
    /// The baseline run: a file or a directory of its logs and exports.
    base: PathBuf,
    /// The new run.
    new: PathBuf,
}

pub fn run(args: &DiffArgs) -> Result<ExitCode, String> {
    let method = Test::from_name(&args.test)
        .ok_or_else(|| format!("--test {}: expected bootstrap or rank-sum", args.test))?;
    if !(0.0..10.0).contains(&args.min_effect) {
        return Err(format!(
            "--min-effect {}: expected a fraction such as 0.05",
            args.min_effect
        ));
    }
    let sizes = analyze::sizes_given(args.layout.config.as_deref(), args.layout.given())?;
    let settings = Settings {
        test: TestSettings {
            method,
            min_effect: args.min_effect,
            ..TestSettings::default()
        },
        ..Settings::default()
    };
    let base = load_run(&args.base, &sizes, &args.iteration_patterns);
    let new = load_run(&args.new, &sizes, &args.iteration_patterns);
    let (lb, ln) = (
        args.base.display().to_string(),
        args.new.display().to_string(),
    );
    let d = diff::compare_loaded(
        base.as_ref().map_err(|e| (lb.as_str(), e.as_str())),
        new.as_ref().map_err(|e| (ln.as_str(), e.as_str())),
        &settings,
    );
    let to_stdout = args.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if let Some(path) = &args.json {
        let json = serde_json::json!({ "diff": d });
        let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n";
        analyze::write_output(path, text.as_bytes())?;
    }
    if !to_stdout {
        print!("{}", report(&d));
    }
    Ok(if base.is_ok() && new.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// One run loaded, analysed and profiled; `Err` when none of its inputs could be read. The
/// files that could not be read are named on standard error, as `analyze` names them.
fn load_run(path: &Path, sizes: &UserSizes, patterns: &[String]) -> Result<RunProfile, String> {
    let files = inputs::expand(std::slice::from_ref(&path.to_path_buf()))?;
    let mut session = Session::default();
    if !patterns.is_empty() {
        session.read_options.iteration_patterns = patterns.to_vec();
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
    if !reports.iter().any(|r| r.error.is_none()) {
        let why = match reports.first() {
            Some(r) if reports.len() == 1 => r.error.clone().unwrap_or_default(),
            Some(_) => format!("none of its {} files could be read", reports.len()),
            None => "no files".to_string(),
        };
        return Err(why);
    }
    let analysis = pipeline::analyse(&session, sizes);
    Ok(diff::profile(
        &session,
        &analysis,
        &path.display().to_string(),
    ))
}

/// The text report: the summary, the ranked changes, the signatures with the largest impact.
fn report(d: &RunDiff) -> String {
    let mut out = format!(
        "base: {}\nnew:  {}\n\n{}\n",
        side_text(&d.base),
        side_text(&d.new),
        d.summary
    );
    if !d.changes.is_empty() {
        out.push_str(&format!("\nWhat changed (impact per {}):\n", d.basis.per));
        for (i, c) in d.changes.iter().take(20).enumerate() {
            out.push_str(&format!(
                "{:>3}. {:>11}  {}\n",
                i + 1,
                diff::changes::time_text(c.impact_ns),
                c.what
            ));
        }
    }
    let rows: Vec<_> = d.signatures.iter().take(12).collect();
    if !rows.is_empty() {
        out.push_str(&format!(
            "\nSignatures, largest impact first ({} test):\n",
            d.test.method.name()
        ));
        // As wide as the longest signature shown, so the columns stay aligned.
        let w = rows
            .iter()
            .map(|s| s.key.text().chars().count())
            .max()
            .unwrap_or(0)
            .max(40);
        out.push_str(&format!(
            "  {:<w$} {:>15} {:>21} {:>7} {:>11}\n",
            "signature", "count", "median ms", "ratio", "impact"
        ));
        for s in rows {
            let ms = |v: Option<f64>| v.map_or("—".into(), |v| format!("{:.3}", v / 1e6));
            out.push_str(&format!(
                "  {:<w$} {:>15} {:>21} {:>7} {:>11}\n",
                s.key.text(),
                format!("{} → {}", s.base.count, s.new.count),
                format!("{} → {}", ms(s.base.median_ns), ms(s.new.median_ns)),
                s.time_ratio.map_or("—".into(), |r| format!(
                    "{r:.2}{}",
                    if s.significant { "*" } else { "" }
                )),
                diff::changes::time_text(s.impact_ns)
            ));
        }
        out.push_str("  (* significant)\n");
    }
    if let Some(step) = &d.steps.step {
        let ms = |v: Option<f64>| v.map_or("—".into(), |v| format!("{v:.2} ms"));
        out.push_str(&format!(
            "\nStep time (median over steps): {} → {}{}\n",
            ms(step.base_ms),
            ms(step.new_ms),
            if step.significant {
                " (significant)"
            } else {
                ""
            }
        ));
        for s in &d.steps.stages {
            out.push_str(&format!(
                "  {:<12} {} → {}{}\n",
                s.stage,
                ms(s.base_ms),
                ms(s.new_ms),
                if s.significant { " *" } else { "" }
            ));
        }
    }
    out
}

fn side_text(s: &diff::RunSide) -> String {
    if let Some(e) = &s.error {
        return format!("{} — could not be read: {e}", s.label);
    }
    format!(
        "{} — {}, {} operations ({} timed), {} signatures, NCCL {}",
        s.label,
        s.size.ranks_text(),
        s.size.operations,
        s.size.timed_operations,
        s.signatures,
        if s.nccl_versions.is_empty() {
            "?".to_string()
        } else {
            s.nccl_versions.join(" + ")
        }
    )
}
