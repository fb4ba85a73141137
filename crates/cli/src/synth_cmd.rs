//! `ncclscope synth`: writes a generator preset's run (logs, exports, truth.json).

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct SynthArgs {
    /// Preset name (see the list below).
    #[arg(long, required_unless_present = "list")]
    preset: Option<String>,
    /// Output directory.
    #[arg(long, required_unless_present = "list")]
    out: Option<PathBuf>,
    /// Seed of the deterministic generator.
    #[arg(long)]
    seed: Option<u64>,
    /// Launcher whose tag wraps every log line: none, torchrun, srun or mpirun.
    #[arg(long)]
    launcher: Option<String>,
    /// One Nsight Systems export per rank instead of one per node.
    #[arg(long)]
    report_per_rank: bool,
    /// Iterations instead of the preset's (operations grow with them).
    #[arg(long)]
    iterations: Option<u32>,
    /// List the presets and exit.
    #[arg(long)]
    list: bool,
}

pub fn run(args: &SynthArgs) -> Result<ExitCode, String> {
    if args.list {
        for p in synth::presets() {
            println!("{:<20} {}", p.name, p.description);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (Some(name), Some(out)) = (&args.preset, &args.out) else {
        return Err("synth needs --preset NAME and --out DIR".into());
    };
    let mut preset = synth::preset(name).ok_or_else(|| {
        let names: Vec<_> = synth::presets().into_iter().map(|p| p.name).collect();
        format!("unknown preset {name:?}; presets: {}", names.join(", "))
    })?;
    if let Some(seed) = args.seed {
        preset.config.seed = seed;
    }
    preset.config.report_per_rank |= args.report_per_rank;
    if let Some(n) = args.iterations {
        if n == 0 {
            return Err("--iterations must be at least 1".into());
        }
        preset.config.model.iterations = n;
    }
    if let Some(l) = &args.launcher {
        preset.config.launcher = synth::Launcher::parse(l).ok_or_else(|| {
            format!("unknown launcher {l:?}; launchers: none, torchrun, srun, mpirun")
        })?;
    }
    // Large runs are written rank by rank in bounded memory; small ones are built whole.
    let written = if preset.config.layout.world() >= synth::write::STREAMING_MIN_RANKS {
        synth::write_streaming(&preset.config, Some(preset.name), out).map(|_| ())
    } else {
        synth::write_run(
            &synth::generate_named(&preset.config, Some(preset.name)),
            out,
        )
    };
    written.map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("ncclscope: wrote preset {name} to {}", out.display());
    Ok(ExitCode::SUCCESS)
}
