//! The sweep: every scenario, with and without timestamps, every seed, three methods.

use crate::inputs::{rank_inputs, RankInput};
use align::baseline::{sliding_window, DEFAULT_WINDOW};
use align::metrics::{score_pairs, Prf};
use align::{align_all, AlignConfig, ProcessAlignment, ProcessInput};
use serde::Serialize;

/// One row of the thesis' table 4.5.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Scenario {
    /// The generator preset (4 ranks × ~200 operations).
    pub preset: &'static str,
    pub label: &'static str,
    /// The thesis' published F1: its Needleman-Wunsch, its sliding-window baseline.
    pub thesis_nw_f1: f64,
    pub thesis_window_f1: f64,
}

/// The four scenarios, in the thesis' order (figures from THESIS-NOTES §2).
pub const SCENARIOS: [Scenario; 4] = [
    Scenario {
        preset: "align-nodrop",
        label: "no drops",
        thesis_nw_f1: 0.988,
        thesis_window_f1: 1.000,
    },
    Scenario {
        preset: "align-kdrop20",
        label: "kernels drop 20 %",
        thesis_nw_f1: 0.912,
        thesis_window_f1: 0.916,
    },
    Scenario {
        preset: "align-ldrop20",
        label: "log ops drop 20 %",
        thesis_nw_f1: 0.868,
        thesis_window_f1: 0.276,
    },
    Scenario {
        preset: "align-bothdrop20",
        label: "both drop 20 %",
        thesis_nw_f1: 0.805,
        thesis_window_f1: 0.256,
    },
];

/// The methods compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Method {
    /// The thesis' Needleman-Wunsch scoring (`AlignConfig::thesis`).
    ThesisNw,
    /// The thesis' sliding-window baseline.
    Window,
    /// Ours (`AlignConfig::rich`).
    Ours,
}

impl Method {
    pub const ALL: [Method; 3] = [Method::ThesisNw, Method::Window, Method::Ours];

    pub fn label(self) -> &'static str {
        match self {
            Method::ThesisNw => "thesis NW",
            Method::Window => "sliding window",
            Method::Ours => "ours",
        }
    }
}

/// One method over all seeds of one scenario: per seed, the ranks' pairs are pooled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MethodStats {
    pub method: Method,
    pub precision_mean: f64,
    pub recall_mean: f64,
    pub f1_mean: f64,
    pub f1_min: f64,
    /// The seed of the worst F1.
    pub worst_seed: u64,
    pub per_seed_f1: Vec<f64>,
}

/// One scenario with or without log timestamps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScenarioResult {
    pub scenario: Scenario,
    pub timestamps: bool,
    pub seeds: Vec<u64>,
    /// Ranks × operations of the first seed, for the table's caption.
    pub ranks: usize,
    pub log_ops: usize,
    pub kernels: usize,
    pub methods: Vec<MethodStats>,
}

/// Generates one seed of a scenario and returns its ranks.
pub fn generate(
    scenario: &Scenario,
    timestamps: bool,
    seed: u64,
) -> Result<Vec<RankInput>, String> {
    let preset =
        synth::preset(scenario.preset).ok_or_else(|| format!("no preset {}", scenario.preset))?;
    let mut cfg = preset.config;
    cfg.timestamps = timestamps;
    cfg.seed = seed;
    let run = synth::generate_named(&cfg, Some(scenario.preset));
    rank_inputs(&run)
}

/// Pooled precision/recall/F1 of one method on one seed's ranks (all on one node: one clock).
pub fn score(method: Method, ranks: &[RankInput]) -> Prf {
    let predicted: Vec<Vec<(usize, usize)>> = match method {
        Method::ThesisNw | Method::Ours => {
            let cfg = if method == Method::Ours {
                AlignConfig::rich()
            } else {
                AlignConfig::thesis()
            };
            let inputs: Vec<ProcessInput<'_>> = ranks.iter().map(RankInput::input).collect();
            align_all(&inputs, &cfg)
                .iter()
                .map(ProcessAlignment::pairs)
                .collect()
        }
        Method::Window => ranks
            .iter()
            .map(|r| {
                sliding_window(&r.log_ops, &r.kernels, &r.names, DEFAULT_WINDOW)
                    .iter()
                    .enumerate()
                    .filter_map(|(k, l)| Some(((*l)?, k)))
                    .collect()
            })
            .collect(),
    };
    let parts: Vec<Prf> = ranks
        .iter()
        .zip(&predicted)
        .map(|(r, p)| score_pairs(p, &r.truth))
        .collect();
    Prf::pool(&parts)
}

/// Runs every scenario with and without timestamps over `seeds` (seed values `first_seed..`),
/// seeds in parallel natively.
pub fn sweep(seeds: u64, first_seed: u64) -> Result<Vec<ScenarioResult>, String> {
    let seed_list: Vec<u64> = (first_seed..first_seed + seeds).collect();
    let mut out = Vec::new();
    for timestamps in [false, true] {
        for scenario in SCENARIOS {
            let per_seed = align::all::map_ordered(&seed_list, |&seed| {
                let ranks = generate(&scenario, timestamps, seed)?;
                let prf: Vec<Prf> = Method::ALL.iter().map(|&m| score(m, &ranks)).collect();
                let size = (
                    ranks.len(),
                    ranks.iter().map(|r| r.log_ops.len()).sum::<usize>(),
                    ranks.iter().map(|r| r.kernels.len()).sum::<usize>(),
                );
                Ok::<_, String>((prf, size))
            })
            .into_iter()
            .collect::<Result<Vec<_>, String>>()?;
            let (ranks, log_ops, kernels) = per_seed.first().map_or((0, 0, 0), |p| p.1);
            let methods = Method::ALL
                .iter()
                .enumerate()
                .map(|(mi, &method)| {
                    let prf: Vec<Prf> = per_seed.iter().map(|p| p.0[mi]).collect();
                    stats(method, &prf, &seed_list)
                })
                .collect();
            out.push(ScenarioResult {
                scenario,
                timestamps,
                seeds: seed_list.clone(),
                ranks,
                log_ops,
                kernels,
                methods,
            });
        }
    }
    Ok(out)
}

fn stats(method: Method, prf: &[Prf], seeds: &[u64]) -> MethodStats {
    let n = prf.len().max(1) as f64;
    let mean = |f: fn(&Prf) -> f64| prf.iter().map(f).sum::<f64>() / n;
    let (worst, f1_min) = prf
        .iter()
        .enumerate()
        .map(|(i, p)| (i, p.f1))
        .fold((0, f64::INFINITY), |a, b| if b.1 < a.1 { b } else { a });
    MethodStats {
        method,
        precision_mean: mean(|p| p.precision),
        recall_mean: mean(|p| p.recall),
        f1_mean: mean(|p| p.f1),
        f1_min: if prf.is_empty() { 0.0 } else { f1_min },
        worst_seed: seeds.get(worst).copied().unwrap_or(0),
        per_seed_f1: prf.iter().map(|p| p.f1).collect(),
    }
}
