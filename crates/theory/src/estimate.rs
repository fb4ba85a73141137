//! A whole [`TheoryConfig`] through the [`volume`] formulas: one [`TheoryEntry`]
//! per parallelism and pipeline rank role, per rank, covering all iterations.
//!
//! How the formulas combine (each choice is the thesis' unless marked **\[derived\]**):
//! - Layers per pipeline stage `L_stage = l / n_PP` (thesis eq. 2.7), as an average when uneven.
//! - Microbatches `m` from [`TheoryConfig::microbatches`].
//! - **\[derived\]** Context parallelism shortens every rank's sequence to `s / n_CP`, so TP and PP
//!   activations shrink by `n_CP`; the gradient group grows to `n_DP · n_CP`.
//! - For MoE models the DP entry is the thesis' non-expert part (`V_DP · (l − l_MoE)/l`, §5.3.5),
//!   and the EP entry is the token routing of this rank's MoE layers: the cluster total of eq. 5.6
//!   (B = global batch) times `l_MoE / n_PP` layers, spread over the `n_DP · n_CP` ranks that hold
//!   the batch's tokens (the thesis' "201.3 × 4 / 4"). Expert-weight gradients (synchronised over
//!   the expert-data-parallel group) are not modelled, as in the thesis.
//! - An `All` entry sums every parallelism per rank role when there is more than one.

use crate::config::{Dispatcher, TheoryConfig};
use crate::volume::{self, Activation};
use model::OpType;

/// The parallelism an entry describes; `All` is the per-rank sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Parallelism {
    Dp,
    Tp,
    Cp,
    Pp,
    Ep,
    All,
}

impl Parallelism {
    /// The contract's spelling (`"DP"`, ..., and `"all"` for the sum).
    pub fn name(self) -> &'static str {
        match self {
            Parallelism::Dp => "DP",
            Parallelism::Tp => "TP",
            Parallelism::Cp => "CP",
            Parallelism::Pp => "PP",
            Parallelism::Ep => "EP",
            Parallelism::All => "all",
        }
    }
}

/// Which ranks an entry holds for: pipeline edge stages (first, last), middle stages, or all ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RankRole {
    All,
    Edge,
    Middle,
}

impl RankRole {
    /// The contract's spelling: `"all"`, `"edge"`, `"middle"`.
    pub fn name(self) -> &'static str {
        match self {
            RankRole::All => "all",
            RankRole::Edge => "edge",
            RankRole::Middle => "middle",
        }
    }
}

/// One rank's theoretical volume for one parallelism (scope "per-rank").
#[derive(Debug, Clone, PartialEq)]
pub struct TheoryEntry {
    pub parallelism: Parallelism,
    pub rank_role: RankRole,
    /// Ranks in the communicator the formula assumes (the pipeline depth for PP, 0 for `All`).
    pub group_size: u64,
    pub iterations: u64,
    /// Bytes per rank per iteration.
    pub bytes_per_iteration: f64,
    /// Bytes per rank over all `iterations` (what the contract calls `theoretical_bytes`).
    pub theoretical_bytes: f64,
    /// The same total split by the collective that carries it (ring traffic, not `msg_bytes`).
    pub by_op: Vec<(OpType, f64)>,
    /// The formula, in the thesis' notation, with its source.
    pub formula: &'static str,
}

impl TheoryEntry {
    fn new(
        parallelism: Parallelism,
        rank_role: RankRole,
        group_size: u64,
        iterations: u64,
        per_iteration_by_op: Vec<(OpType, f64)>,
        formula: &'static str,
    ) -> TheoryEntry {
        let bytes_per_iteration = per_iteration_by_op.iter().map(|(_, b)| b).sum::<f64>();
        let it = iterations as f64;
        TheoryEntry {
            parallelism,
            rank_role,
            group_size,
            iterations,
            bytes_per_iteration,
            theoretical_bytes: bytes_per_iteration * it,
            by_op: per_iteration_by_op
                .into_iter()
                .map(|(op, b)| (op, b * it))
                .collect(),
            formula,
        }
    }
}

/// Every non-zero theoretical volume of `cfg`, per rank, in the order DP, TP, CP, PP, EP, all.
/// Parallelisms of size 1 move nothing and get no entry.
pub fn estimate(cfg: &TheoryConfig) -> Vec<TheoryEntry> {
    let f = Factors::of(cfg);
    let mut out = Vec::new();
    out.extend(dp_entry(cfg, &f));
    out.extend(tp_entry(cfg, &f));
    out.extend(cp_entry(cfg, &f));
    out.extend(pp_entries(cfg, &f));
    out.extend(ep_entry(cfg, &f));
    let sums = sum_entries(&out, cfg.parallel.pp, f.iters);
    out.extend(sums);
    out
}

/// What the formulas of every parallelism share.
struct Factors {
    iters: u64,
    /// Bytes per element `β`.
    beta: f64,
    /// Microbatches per iteration `m`.
    micro: f64,
    /// `L_stage = l / n_PP` (an average when uneven).
    layers_per_stage: f64,
    /// One microbatch's activation over the whole sequence.
    full: Activation,
    /// The same over a context-parallel rank's share of the sequence (`s / n_CP`).
    local: Activation,
}

impl Factors {
    fn of(cfg: &TheoryConfig) -> Factors {
        let m = &cfg.model;
        let p = &cfg.parallel;
        let full = Activation {
            micro_batch: m.micro_batch as f64,
            seq_len: m.seq_len as f64,
            hidden: m.hidden as f64,
            bytes_per_element: m.bytes_per_element as f64,
        };
        Factors {
            iters: m.iterations,
            beta: m.bytes_per_element as f64,
            micro: cfg.microbatches() as f64,
            layers_per_stage: m.layers as f64 / p.pp.max(1) as f64,
            full,
            local: Activation {
                seq_len: full.seq_len / p.cp.max(1) as f64,
                ..full
            },
        }
    }
}

/// DP (thesis eq. 2.6; ZeRO-1 as RS + AG).
fn dp_entry(cfg: &TheoryConfig, f: &Factors) -> Option<TheoryEntry> {
    let m = &cfg.model;
    let p = &cfg.parallel;
    let n_dp = p.dp * p.cp;
    if n_dp <= 1 {
        return None;
    }
    let params = volume::parameters(m.layers, m.hidden, m.vocab, m.seq_len) as f64;
    let dense = volume::dp_bytes_per_iteration(params, n_dp, p.tp, p.pp, f.beta);
    let (bytes, formula) = match &cfg.moe {
        None => (dense, "2·(n_DP−1)/n_DP · P/(n_TP·n_PP) · β per iteration (thesis eq. 2.6)"),
        Some(moe) => (
            volume::moe_non_expert_bytes_per_iteration(dense, m.layers, moe.moe_layers),
            "2·(n_DP−1)/n_DP · P/(n_TP·n_PP) · β · (l − l_MoE)/l per iteration (thesis §5.3.5, non-expert part)",
        ),
    };
    let ops = if p.distributed_optimizer {
        vec![
            (OpType::ReduceScatter, bytes / 2.0),
            (OpType::AllGather, bytes / 2.0),
        ]
    } else {
        vec![(OpType::AllReduce, bytes)]
    };
    Some(TheoryEntry::new(
        Parallelism::Dp,
        RankRole::All,
        n_dp,
        f.iters,
        ops,
        formula,
    ))
}

/// TP (thesis eq. 2.7; with SP as AG + RS, LBNL Table I).
fn tp_entry(cfg: &TheoryConfig, f: &Factors) -> Option<TheoryEntry> {
    let p = &cfg.parallel;
    if p.tp <= 1 {
        return None;
    }
    let per_iter = volume::tp_bytes_per_microbatch(f.layers_per_stage, &f.local, p.tp) * f.micro;
    let (ops, formula) = if p.sequence_parallel {
        (
            vec![
                (OpType::AllGather, per_iter / 2.0),
                (OpType::ReduceScatter, per_iter / 2.0),
            ],
            "m · L_stage · (4 AG + 4 RS of b·s·h) · (n_TP−1)/n_TP · β per iteration (LBNL Table I, sequence parallel)",
        )
    } else {
        (
            vec![(OpType::AllReduce, per_iter)],
            "m · L_stage · 8·b·s·h · (n_TP−1)/n_TP · β per iteration (thesis eq. 2.7)",
        )
    };
    Some(TheoryEntry::new(
        Parallelism::Tp,
        RankRole::All,
        p.tp,
        f.iters,
        ops,
        formula,
    ))
}

/// CP (thesis §2.4.4, LBNL Table II).
fn cp_entry(cfg: &TheoryConfig, f: &Factors) -> Option<TheoryEntry> {
    let p = &cfg.parallel;
    if p.cp <= 1 {
        return None;
    }
    let v = volume::cp_bytes_per_microbatch(f.layers_per_stage, &f.full, p.tp, p.cp);
    Some(TheoryEntry::new(
        Parallelism::Cp,
        RankRole::All,
        p.cp,
        f.iters,
        vec![
            (OpType::AllGather, v.all_gather * f.micro),
            (OpType::ReduceScatter, v.reduce_scatter * f.micro),
        ],
        "m · L_stage · 2·(AG + RS of b·s·h/n_TP) · (n_CP−1)/n_CP · β per iteration (thesis §2.4.4, LBNL Table II)",
    ))
}

/// PP (thesis eqs. 2.8 / 2.9; edge vs middle stages, §5.3.5).
fn pp_entries(cfg: &TheoryConfig, f: &Factors) -> Vec<TheoryEntry> {
    let p = &cfg.parallel;
    if p.pp <= 1 {
        return Vec::new();
    }
    let per_boundary =
        volume::pp_bytes_per_boundary_per_iteration(&f.local, p.tp, cfg.microbatches());
    let mut roles = vec![RankRole::Edge];
    if p.pp > 2 {
        roles.push(RankRole::Middle);
    }
    roles
        .into_iter()
        .map(|role| {
            let boundaries = volume::pp_boundaries(role == RankRole::Edge, p.pp, p.virtual_stages);
            let bytes = per_boundary * boundaries as f64;
            TheoryEntry::new(
                Parallelism::Pp,
                role,
                p.pp,
                f.iters,
                vec![(OpType::Send, bytes / 2.0), (OpType::Recv, bytes / 2.0)],
                "boundaries · 2 · m · b·s·h/n_TP · β per iteration (thesis eqs. 2.8, 2.9; edge 2v−1, middle 2v boundaries)",
            )
        })
        .collect()
}

/// EP (thesis eq. 2.11 / 5.6 for AlltoAll; [derived] for AllGather).
fn ep_entry(cfg: &TheoryConfig, f: &Factors) -> Option<TheoryEntry> {
    let m = &cfg.model;
    let p = &cfg.parallel;
    let moe = cfg.moe.as_ref().filter(|_| p.ep > 1)?;
    let token_holders = (p.dp * p.cp).max(1) as f64;
    let layers_here = moe.moe_layers as f64 / p.pp.max(1) as f64;
    let tokens = (m.global_batch * m.seq_len) as f64;
    let (ops, formula) = match moe.dispatcher {
        Dispatcher::AllToAll => {
            let cluster = volume::ep_cluster_bytes_per_layer(
                tokens,
                moe.top_k,
                m.hidden,
                p.ep,
                moe.capacity_factor,
                f.beta,
            );
            (
                vec![(OpType::AllToAll, cluster * layers_here / token_holders)],
                "4·B·S·k·h·(1 − 1/n_EP)·β · cf · (l_MoE/n_PP) / (n_DP·n_CP) per iteration (thesis eq. 5.6)",
            )
        }
        Dispatcher::AllGather => {
            let v = volume::ep_allgather_bytes_per_rank_per_layer(
                tokens / token_holders,
                m.hidden,
                p.ep,
                f.beta,
            );
            (
                vec![
                    (OpType::AllGather, v.all_gather * layers_here),
                    (OpType::ReduceScatter, v.reduce_scatter * layers_here),
                ],
                "(l_MoE/n_PP) · 2·(AG + RS) · (n_EP−1)·T·h·β, T = B·S/(n_DP·n_CP) per iteration ([derived])",
            )
        }
    };
    Some(TheoryEntry::new(
        Parallelism::Ep,
        RankRole::All,
        p.ep,
        f.iters,
        ops,
        formula,
    ))
}

/// The `All` entries: per rank role of a pipeline `pp` deep, the sum of the entries that hold
/// for it; none when `entries` has fewer than two parallelisms.
fn sum_entries(entries: &[TheoryEntry], pp: u64, iters: u64) -> Vec<TheoryEntry> {
    let mut kinds: Vec<Parallelism> = entries.iter().map(|e| e.parallelism).collect();
    kinds.dedup();
    if kinds.len() <= 1 {
        return Vec::new();
    }
    let roles: &[RankRole] = match pp {
        0 | 1 => &[RankRole::All],
        2 => &[RankRole::Edge],
        _ => &[RankRole::Edge, RankRole::Middle],
    };
    let mut sums = Vec::new();
    for &role in roles {
        let parts: Vec<&TheoryEntry> = entries
            .iter()
            .filter(|e| e.rank_role == RankRole::All || e.rank_role == role)
            .collect();
        let mut by_op: Vec<(OpType, f64)> = Vec::new();
        for &(op, b) in parts.iter().flat_map(|e| e.by_op.iter()) {
            match by_op.iter_mut().find(|(o, _)| *o == op) {
                Some((_, acc)) => *acc += b,
                None => by_op.push((op, b)),
            }
        }
        sums.push(TheoryEntry {
            parallelism: Parallelism::All,
            rank_role: role,
            group_size: 0,
            iterations: iters,
            bytes_per_iteration: parts.iter().map(|e| e.bytes_per_iteration).sum(),
            theoretical_bytes: parts.iter().map(|e| e.theoretical_bytes).sum(),
            by_op,
            formula: "sum of the entries above for this rank role",
        });
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: f64 = 1e6;
    const GB: f64 = 1e9;

    fn round(x: f64, digits: i32) -> f64 {
        let f = 10f64.powi(digits);
        (x * f).round() / f
    }

    fn find(entries: &[TheoryEntry], p: Parallelism, r: RankRole) -> &TheoryEntry {
        entries
            .iter()
            .find(|e| e.parallelism == p && e.rank_role == r)
            .unwrap_or_else(|| panic!("no {p:?} {r:?} entry in {entries:#?}"))
    }

    #[test]
    fn thesis_dp4() {
        let e = estimate(&TheoryConfig::thesis_dense());
        assert_eq!(e.len(), 1);
        let dp = find(&e, Parallelism::Dp, RankRole::All);
        assert_eq!(dp.group_size, 4);
        assert_eq!(round(dp.bytes_per_iteration / MB, 1), 151.2);
        assert_eq!(round(dp.theoretical_bytes / GB, 3), 1.512);
        assert_eq!(dp.by_op, vec![(OpType::AllReduce, dp.theoretical_bytes)]);
    }

    #[test]
    fn thesis_pp4() {
        let mut cfg = TheoryConfig::thesis_dense();
        cfg.parallel.pp = 4;
        cfg.parallel.dp = 1;
        assert_eq!(cfg.microbatches(), 16);
        let e = estimate(&cfg);
        let edge = find(&e, Parallelism::Pp, RankRole::Edge);
        let middle = find(&e, Parallelism::Pp, RankRole::Middle);
        assert_eq!(round(edge.theoretical_bytes / GB, 2), 1.34);
        assert_eq!(round(middle.theoretical_bytes / GB, 2), 2.68);
        assert_eq!(edge.bytes_per_iteration, 134_217_728.0);
        // Only PP moves bytes, so there is no sum entry.
        assert_eq!(e.len(), 2);
    }

    #[test]
    fn thesis_tp4() {
        // §5.3.5: "8 for TP experiments", "4 microbatches per iteration".
        let mut cfg = TheoryConfig::thesis_dense();
        cfg.model.layers = 8;
        cfg.model.microbatches = Some(4);
        cfg.parallel.tp = 4;
        cfg.parallel.dp = 1;
        let e = estimate(&cfg);
        assert_eq!(e.len(), 1);
        let tp = find(&e, Parallelism::Tp, RankRole::All);
        assert_eq!(round(tp.bytes_per_iteration / 4.0 / MB, 1), 201.3);
        assert_eq!(round(tp.theoretical_bytes / GB, 2), 8.05);
        // Sequence parallelism: same total, as AllGather + ReduceScatter.
        cfg.parallel.sequence_parallel = true;
        let sp = estimate(&cfg);
        let sp = find(&sp, Parallelism::Tp, RankRole::All);
        assert_eq!(sp.theoretical_bytes, tp.theoretical_bytes);
        assert_eq!(sp.by_op.len(), 2);
    }

    #[test]
    fn thesis_ep4() {
        let e = estimate(&TheoryConfig::thesis_moe());
        let ep = find(&e, Parallelism::Ep, RankRole::All);
        assert_eq!(round(ep.bytes_per_iteration / MB, 1), 201.3);
        let dp = find(&e, Parallelism::Dp, RankRole::All);
        assert_eq!(round(dp.bytes_per_iteration / MB, 1), 113.4);
        let all = find(&e, Parallelism::All, RankRole::All);
        assert_eq!(round(all.theoretical_bytes / GB, 2), 3.15);
        assert!((all.theoretical_bytes - ep.theoretical_bytes - dp.theoretical_bytes).abs() < 1.0);
    }

    #[test]
    fn combined_layout_sums_per_role() {
        let mut cfg = TheoryConfig::thesis_dense();
        cfg.parallel = crate::config::ParallelSpec {
            tp: 2,
            pp: 4,
            dp: 2,
            virtual_stages: 2,
            distributed_optimizer: true,
            ..cfg.parallel
        };
        let e = estimate(&cfg);
        let names: Vec<_> = e
            .iter()
            .map(|e| (e.parallelism.name(), e.rank_role.name()))
            .collect();
        assert_eq!(
            names,
            [
                ("DP", "all"),
                ("TP", "all"),
                ("PP", "edge"),
                ("PP", "middle"),
                ("all", "edge"),
                ("all", "middle")
            ]
        );
        let dp = find(&e, Parallelism::Dp, RankRole::All);
        let tp = find(&e, Parallelism::Tp, RankRole::All);
        let pp_mid = find(&e, Parallelism::Pp, RankRole::Middle);
        let all_mid = find(&e, Parallelism::All, RankRole::Middle);
        let sum = dp.theoretical_bytes + tp.theoretical_bytes + pp_mid.theoretical_bytes;
        assert!((all_mid.theoretical_bytes - sum).abs() < 1e-3);
        // v = 2: middle ranks sit on 4 boundaries, edge ranks on 3.
        let pp_edge = find(&e, Parallelism::Pp, RankRole::Edge);
        assert!((pp_mid.theoretical_bytes / pp_edge.theoretical_bytes - 4.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn context_parallel_entries() {
        let mut cfg = TheoryConfig::thesis_dense();
        cfg.parallel.cp = 2;
        cfg.parallel.dp = 2;
        let e = estimate(&cfg);
        let cp = find(&e, Parallelism::Cp, RankRole::All);
        assert_eq!(cp.group_size, 2);
        // m = 64 / (4 · 2) = 8; 16 layers; per layer AG = RS = 2 · 1/2 · 4 194 304.
        assert_eq!(cp.bytes_per_iteration, 8.0 * 16.0 * 2.0 * 4_194_304.0);
        // The gradient group is dp · cp = 4.
        assert_eq!(find(&e, Parallelism::Dp, RankRole::All).group_size, 4);
    }
}
