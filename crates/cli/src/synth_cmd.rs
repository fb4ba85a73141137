//! `ncclscope synth`: writes a generator preset's run (logs, exports, truth.json).

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct SynthArgs {
    /// Preset name (see the list below).
    #[arg(long, required_unless_present_any = ["list", "layout"], conflicts_with = "layout")]
    preset: Option<String>,
    /// A layout of your own instead of a preset, e.g. `tp=2,pp=2,dp=2` (sizes tp cp ep dp pp
    /// vpp, flags sp and distopt, dispatcher=alltoall|allgather), on the thesis' model (with
    /// experts when ep > 1).
    #[arg(long)]
    layout: Option<String>,
    /// GPUs per node (with --layout; default 4, at most 8).
    #[arg(long, requires = "layout")]
    gpus_per_node: Option<u32>,
    /// NCCL version whose line formats and kernel names are written (with --layout; default
    /// 2.21.5).
    #[arg(long, requires = "layout")]
    nccl_version: Option<String>,
    /// Epoch timestamps on every log line (with --layout).
    #[arg(long, requires = "layout")]
    timestamps: bool,
    /// One combined, interleaved log instead of one per process (with --layout).
    #[arg(long, requires = "layout")]
    combined_log: bool,
    /// Export schema, 3.16, 3.17 or 3.25 (with --layout; default 3.25).
    #[arg(long, requires = "layout")]
    schema: Option<String>,
    /// Output directory.
    #[arg(long, required_unless_present = "list")]
    out: Option<PathBuf>,
    /// Seed of the deterministic generator.
    #[arg(long)]
    seed: Option<u64>,
    /// Launcher whose tag wraps every log line: none, torchrun, srun, mpirun, torchrun-rank
    /// (`[rankN]:`), ray or pdsh.
    #[arg(long)]
    launcher: Option<String>,
    /// One Nsight Systems export per rank instead of one per node.
    #[arg(long)]
    report_per_rank: bool,
    /// Iterations instead of the preset's (operations grow with them).
    #[arg(long)]
    iterations: Option<u32>,
    /// A slow stage: RANK:STEP:STAGE:MS adds MS milliseconds to STAGE (data, forward or
    /// backward) of global rank RANK at iteration STEP (repeatable; needs a layout whose forward
    /// and backward issue NCCL calls, e.g. TP or PP). Turns on `data` NVTX ranges.
    #[arg(long = "delay", value_name = "RANK:STEP:STAGE:MS")]
    delays: Vec<String>,
    /// Also write `stages.csv` (step,rank,stage,duration_ms from the same NVTX ranges); runs of
    /// 64 ranks or more are streamed and get none.
    #[arg(long)]
    stage_file: bool,
    /// Also write the run as PyTorch profiler traces, one per rank (gzip), into OUT/kineto/
    /// with their truth (kineto_truth.json): `modern` (PyTorch 2.4+: the NCCL fields on the
    /// kernels) or `legacy` (CUPTI fields only, the collectives on the CPU side).
    #[arg(long, value_name = "STYLE")]
    kineto: Option<String>,
    /// The variations of real clusters, as JSON (`synth::Realism`'s fields, e.g.
    /// `{"hosts":"fqdn","stamps":"bracket-local","zone_offset_min":120,"log_files":"per-node"}`;
    /// see docs/design/identity-and-time.md).
    #[arg(long, value_name = "JSON")]
    realism: Option<String>,
    /// A hang: RANK:CALL[:mismatch] makes global rank RANK stop logging at its CALL-th call
    /// (the next collective from there), or with `:mismatch` call another collective there;
    /// the other ranks block where a hung job would (docs/design/diagnosis.md).
    #[arg(long, value_name = "RANK:CALL[:mismatch]")]
    hang: Option<String>,
    /// One known difference from the otherwise equal run (issue 35), as JSON
    /// (`synth::variation::Variation`'s fields, e.g. `{"op_bandwidth":["AllReduce",0.5]}`).
    #[arg(long, value_name = "JSON")]
    variation: Option<String>,
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
    let Some(out) = &args.out else {
        return Err("synth needs --out DIR".into());
    };
    let mut preset = match (&args.preset, &args.layout) {
        (Some(name), _) => synth::preset(name).ok_or_else(|| {
            let names: Vec<_> = synth::presets().into_iter().map(|p| p.name).collect();
            format!("unknown preset {name:?}; presets: {}", names.join(", "))
        })?,
        (None, Some(spec)) => custom(args, spec)?,
        (None, None) => return Err("synth needs --preset NAME or --layout SPEC".into()),
    };
    let name = preset.name;
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
    for d in &args.delays {
        let delay = synth::step_stages::StepDelay::parse(d).map_err(|e| format!("--delay {e}"))?;
        preset.config.stages.delays.push(delay);
    }
    preset.config.stages.stage_file |= args.stage_file;
    if let Some(l) = &args.launcher {
        preset.config.launcher = synth::Launcher::parse(l).ok_or_else(|| {
            format!("unknown launcher {l:?}; launchers: none, torchrun, srun, mpirun, torchrun-rank, ray, pdsh")
        })?;
    }
    if let Some(spec) = &args.hang {
        preset.config.hang = Some(parse_hang(spec)?);
    }
    if let Some(json) = &args.realism {
        preset.config.realism =
            serde_json::from_str(json).map_err(|e| format!("--realism: {e}"))?;
    }
    if let Some(json) = &args.variation {
        preset.config.variation =
            serde_json::from_str(json).map_err(|e| format!("--variation: {e}"))?;
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
    if let Some(style) = &args.kineto {
        let style = match style.as_str() {
            "modern" => synth::kineto::KinetoStyle::modern(),
            "legacy" => synth::kineto::KinetoStyle::legacy(),
            other => return Err(format!("--kineto {other}: expected modern or legacy")),
        };
        let dir = out.join("kineto");
        synth::kineto::write_kineto(&preset.config, &style, &dir, true)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    eprintln!("ncclscope: wrote {name} run to {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// A run of the user's layout on the thesis' model.
fn custom(args: &SynthArgs, spec: &str) -> Result<synth::Preset, String> {
    let layout = synth::Layout::parse(spec).map_err(|e| format!("--layout: {e}"))?;
    let mut model = synth::Model::thesis();
    if layout.ep > 1 {
        // Experts spread over the expert-parallel ranks, every fourth layer an MoE layer.
        model.moe_experts = layout.ep;
        model.moe_top_k = 1;
        model.moe_layers = (model.layers / 4).max(1);
    }
    let mut config = synth::RunConfig::new(layout, model);
    let gpus = args.gpus_per_node.unwrap_or(4);
    if !(1..=8).contains(&gpus) {
        return Err(format!("--gpus-per-node {gpus}: expected 1 to 8"));
    }
    config.gpus_per_node = gpus;
    config.nodes = config.layout.world().div_ceil(gpus);
    let version = args.nccl_version.clone().unwrap_or_else(|| "2.21.5".into());
    let minor = version
        .strip_prefix("2.")
        .and_then(|rest| rest.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    if !minor.is_some_and(|m| (18..=28).contains(&m)) || version.split('.').count() != 3 {
        return Err(format!(
            "--nccl-version {version}: the generator writes NCCL 2.18.x to 2.28.x"
        ));
    }
    config.nccl_version = version;
    config.timestamps = args.timestamps;
    config.combined_log = args.combined_log;
    config.schema = match args.schema.as_deref() {
        None | Some("3.25") => synth::Schema::V3_25,
        Some("3.17") => synth::Schema::V3_17,
        Some("3.16") => synth::Schema::V3_16,
        Some(other) => return Err(format!("--schema {other}: expected 3.16, 3.17 or 3.25")),
    };
    Ok(synth::Preset {
        name: "custom",
        description: "a layout given on the command line",
        config,
    })
}

/// `RANK:CALL[:mismatch]` → the generator's hang knob.
fn parse_hang(spec: &str) -> Result<synth::hang::Hang, String> {
    let bad = || format!("--hang {spec:?}: expected RANK:CALL or RANK:CALL:mismatch");
    let mut parts = spec.split(':');
    let rank = parts.next().and_then(|r| r.parse().ok()).ok_or_else(bad)?;
    let call = parts.next().and_then(|c| c.parse().ok()).ok_or_else(bad)?;
    let kind = match parts.next() {
        None | Some("stop") => synth::hang::HangKind::Stop,
        Some("mismatch") => synth::hang::HangKind::Mismatch,
        Some(_) => return Err(bad()),
    };
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(synth::hang::Hang {
        rank,
        call,
        kind,
        watchdog: false,
        errors: false,
    })
}
