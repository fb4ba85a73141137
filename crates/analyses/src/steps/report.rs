//! The step analysis's whole result: CONTRACT.md's `steps` and what stands beside it.

use super::baselines::Baselines;
use super::breakdown::Breakdown;
use super::collectives::PeriodFindings;
use super::frontier::{frontier, Frontier};
use super::mapping::StageMapping;
use super::matrix::StageMatrix;
use super::nvtx::NvtxFindings;
use super::pipeline::PipelineCheck;
use super::types::{Settings, StepRow, Window};
use serde::{Deserialize, Serialize};

/// Where the steps came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Source {
    #[serde(rename = "nvtx")]
    Nvtx,
    #[serde(rename = "stage-file")]
    StageFile,
    #[serde(rename = "collectives")]
    Collectives,
}

impl Source {
    /// Where the steps came from, in words (`Steps from …`).
    pub fn text(self) -> &'static str {
        match self {
            Source::Nvtx => "the NVTX or record_function ranges",
            Source::StageFile => "the stage file",
            Source::Collectives => "the collectives' period",
        }
    }
}

/// CONTRACT.md's `steps`, with additions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepsReport {
    pub source: Source,
    /// How far the steps can be trusted: 1 for a stage file or NVTX step ranges on every rank,
    /// the period's score for the collectives.
    pub confidence: f64,
    /// Plain sentences on how the steps were found and what was left out.
    pub notes: Vec<String>,
    /// The stages in the order they run, expanded per microbatch (`forward#1`) where a stage ran
    /// more than once in a step: what `per_step`'s arrays index.
    pub stage_names: Vec<String>,
    /// Per stage of `stage_names`, the stage it is a run of (shares are reported by these).
    pub stage_groups: Vec<String>,
    /// The ranks, ascending (what `window.slack_ms` rows index).
    pub ranks: Vec<u32>,
    pub per_step: Vec<StepRow>,
    /// Every complete step.
    pub window: Window,
    /// The paper's windows: runs of complete steps with one world.
    pub windows: Vec<Window>,
    pub settings: Settings,
    /// The NVTX mapping used (source `nvtx`).
    pub mapping: Option<StageMapping>,
    pub nvtx: Option<NvtxFindings>,
    pub collectives: Option<PeriodFindings>,
    /// Per step and rank, where the time went on the GPU (needs exports with compute kernels).
    pub breakdown: Option<Breakdown>,
    /// Per-operation and per-kernel baselines and the worst instances.
    pub baselines: Option<Baselines>,
    /// Pipeline-stage imbalance and the 1F1B runtime against the measured step time.
    pub pipeline: Option<PipelineCheck>,
}

impl StepsReport {
    /// The frontier of `m` with the source's facts; the kernel-based parts are filled later.
    pub fn of_matrix(m: &StageMatrix, source: Source, settings: &Settings) -> StepsReport {
        let Frontier {
            per_step,
            window,
            windows,
        } = frontier(m, settings);
        StepsReport {
            source,
            confidence: 1.0,
            notes: Vec::new(),
            stage_names: m.stage_names.clone(),
            stage_groups: m
                .stage_group
                .iter()
                .map(|&g| m.groups[g as usize].clone())
                .collect(),
            ranks: m.ranks.clone(),
            per_step,
            window,
            windows,
            settings: settings.clamped(),
            mapping: None,
            nvtx: None,
            collectives: None,
            breakdown: None,
            baselines: None,
            pipeline: None,
        }
    }
}
