//! Our alignment's accuracy on the generator's presets (issue 6: "the generator's presets align
//! with the accuracy above"), scored two ways against the truth:
//!
//! * per pair (the thesis' metric, eqs. 4.17–4.19), and
//! * per call ([`align::metrics::score_calls`]): where NCCL splits one grouped Send/Recv launch
//!   over several kernels (the EP all-to-all), the truth pairs every line of the group with every
//!   kernel, and no one-line-per-kernel answer can reach a pair recall above one over the number
//!   of kernels. Per call the question has an answer: did each kernel get the launch it ran?

use crate::inputs::{rank_inputs, RankInput};
use align::metrics::{score_calls, score_pairs, Prf};
use align::{align_all, AlignConfig, ProcessInput};

/// One preset's scores (pooled over its ranks).
#[derive(Debug, Clone)]
pub struct PresetScore {
    pub preset: String,
    pub ranks: usize,
    pub timestamps: bool,
    pub pairs: Prf,
    pub calls: Prf,
    /// Some truth kernel shares its call with another kernel (a group split over kernels).
    pub split_groups: bool,
}

/// The presets small enough to generate and align in a test (the scale presets are skipped).
pub fn small_presets() -> Vec<&'static str> {
    synth::presets()
        .into_iter()
        .filter(|p| p.config.layout.world() <= 16 && p.config.model.iterations <= 20)
        .map(|p| p.name)
        .collect()
}

/// Generates `name` (its own seed; `timestamps` overrides the preset's choice when given),
/// aligns it with `config` and scores it.
pub fn score_preset(
    name: &str,
    timestamps: Option<bool>,
    config: &AlignConfig,
) -> Result<PresetScore, String> {
    let preset = synth::preset(name).ok_or_else(|| format!("no preset {name}"))?;
    let mut cfg = preset.config;
    if let Some(t) = timestamps {
        cfg.timestamps = t;
    }
    let timestamps = cfg.timestamps;
    let run = synth::generate_named(&cfg, Some(name));
    let ranks = rank_inputs(&run)?;
    let inputs: Vec<ProcessInput<'_>> = ranks.iter().map(RankInput::input).collect();
    let aligned = align_all(&inputs, config);
    let mut pairs = Vec::new();
    let mut calls = Vec::new();
    for (r, a) in ranks.iter().zip(&aligned) {
        let predicted = a.pairs();
        pairs.push(score_pairs(&predicted, &r.truth));
        calls.push(score_calls(&predicted, &r.truth, |l| r.call_of(l)));
    }
    Ok(PresetScore {
        preset: name.to_string(),
        ranks: ranks.len(),
        timestamps,
        pairs: Prf::pool(&pairs),
        calls: Prf::pool(&calls),
        split_groups: ranks.iter().any(has_split_group),
    })
}

/// Does a call of this rank's truth run in more than one kernel?
fn has_split_group(r: &RankInput) -> bool {
    let mut kernels_of: std::collections::HashMap<(u64, u64), std::collections::HashSet<usize>> =
        Default::default();
    for &(l, k) in &r.truth {
        kernels_of.entry(r.call_of(l)).or_default().insert(k);
    }
    kernels_of.values().any(|ks| ks.len() > 1)
}
