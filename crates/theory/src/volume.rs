//! Per-rank theoretical communication volume, one function per formula.
//!
//! Sources: the thesis ("Understanding LLM communication", `seeds/thesis-understanding-llm-communication.txt`)
//! §2.4.1–2.4.5 and §5.3.5 (eqs. 2.4–2.11, 5.2–5.6); the LBNL performance model
//! (`seeds/perf-modeling-foundation-models-lbnl.txt`, Tables I and II) for sequence and context
//! parallelism. Formulas marked **\[derived\]** are our own arithmetic on top of those.
//!
//! Every volume is what one rank moves with the ring algorithm (its share of the ring traffic,
//! the `(n−1)/n` factors included), in bytes, as the thesis counts it. All values are `f64`:
//! the ring factors make them fractional, and the caller rounds once at the end.
//!
//! Units: the thesis' MB and GB are decimal (10⁶, 10⁹ bytes). Its PP line `4 × 1024 × 512 × 2 =
//! 4.19 MB` settles it: 4 194 304 bytes is 4.19 × 10⁶ (it would be 4.00 MiB).

/// One microbatch's activation tensor `b·s·h` and its element size `β`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Activation {
    /// Micro-batch size `b`.
    pub micro_batch: f64,
    /// Sequence length `s` held by one rank (`s / n_CP` under context parallelism).
    pub seq_len: f64,
    /// Hidden size `h`.
    pub hidden: f64,
    /// Bytes per element `β`.
    pub bytes_per_element: f64,
}

impl Activation {
    /// `b·s·h·β` bytes (thesis eq. 2.8; 4 194 304 bytes = 4.19 MB for the thesis model).
    pub fn bytes(&self) -> f64 {
        self.micro_batch * self.seq_len * self.hidden * self.bytes_per_element
    }
}

/// A volume split between the two collectives that implement it (ZeRO-1, sequence and context
/// parallelism, the AllGather MoE dispatcher).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgRs {
    pub all_gather: f64,
    pub reduce_scatter: f64,
}

impl AgRs {
    pub fn total(&self) -> f64 {
        self.all_gather + self.reduce_scatter
    }
}

/// Ring share `(n−1)/n` of a collective over `n` ranks (0 for a group of one).
pub fn ring_factor(n: u64) -> f64 {
    if n <= 1 {
        0.0
    } else {
        (n - 1) as f64 / n as f64
    }
}

/// Parameter count, thesis eq. 2.4: `P = 12·l·h²·(1 + 1/(12h) + (V+s)/(12·l·h²))`.
///
/// Multiplied out this is exactly `12·l·h² + l·h + V + s`, so it is computed in integers. For the
/// thesis model (l=16, h=512, V=50 257, s=1024): 50 331 648 + 8 192 + 51 281 = **50 391 121**.
/// That is 50.39 M: the thesis writes "≈ 50.3 M" in eq. 5.2 and §5.2.1 (truncated) and uses
/// "50.4 × 10⁶" (rounded) in the DP computation; the exact value rounds to 50.4 M.
///
/// Note: as written, the thesis' embedding term is `(V+s)`, not `(V+s)·h` as in Narayanan et
/// al. 2021 (`12lh²(1 + 13/(12h) + (V+s)/(12lh))`, which would give 76.7 M). We keep the thesis'
/// formula so its numbers are reproduced.
pub fn parameters(layers: u64, hidden: u64, vocab: u64, seq_len: u64) -> u64 {
    12 * layers * hidden * hidden + layers * hidden + vocab + seq_len
}

/// DP gradient synchronisation per rank per iteration, thesis eqs. 2.6 / 5.3:
/// `2·(n_DP−1)/n_DP · P/(n_TP·n_PP) · β` (ring AllReduce = ReduceScatter + AllGather, once per
/// iteration after gradient accumulation).
///
/// Thesis DP=4: 2 · 3/4 · 50 391 121 · 2 = 151 173 363 bytes = 151.2 MB per iteration, 1.512 GB
/// over 10 iterations.
///
/// Under context parallelism the gradient group is `n_DP · n_CP` (LBNL: "the weight gradient RS and
/// the weights AG happen across the combined n_d × n_2 GPU group"): pass that product as `n_dp`.
pub fn dp_bytes_per_iteration(params: f64, n_dp: u64, n_tp: u64, n_pp: u64, beta: f64) -> f64 {
    2.0 * ring_factor(n_dp) * params / (n_tp * n_pp) as f64 * beta
}

/// ZeRO-1 / distributed optimizer per rank per iteration: ReduceScatter of the gradients plus
/// AllGather of the updated parameters, each `(n_DP−1)/n_DP · P/(n_TP·n_PP) · β` (LBNL §III "Data
/// Parallel and Optimizer": "the backward pass incurs a RS and AG of the weight gradients and
/// weights"). The total equals [`dp_bytes_per_iteration`]: an AllReduce is exactly those two
/// phases. (The thesis' "≈ 50 % more" in §2.4.1 is ZeRO-3/FSDP, which gathers parameters twice.)
pub fn zero1_bytes_per_iteration(params: f64, n_dp: u64, n_tp: u64, n_pp: u64, beta: f64) -> AgRs {
    let half = dp_bytes_per_iteration(params, n_dp, n_tp, n_pp, beta) / 2.0;
    AgRs {
        all_gather: half,
        reduce_scatter: half,
    }
}

/// TP per rank per microbatch, thesis eqs. 2.7 / 5.5:
/// `L_stage · 8·b·s·h · (n_TP−1)/n_TP · β` (4 AllReduce of `b·s·h` per layer, 2 forward and
/// 2 backward, each moving `2·(n−1)/n` of the buffer per rank). `L_stage = l / n_PP`.
///
/// Thesis TP=4 with its 8-layer TP model: 8 · 8 · 4 · 1024 · 512 · 3/4 · 2 = 201 326 592 bytes
/// = 201.3 MB per microbatch.
pub fn tp_bytes_per_microbatch(layers_per_stage: f64, act: &Activation, n_tp: u64) -> f64 {
    layers_per_stage * 8.0 * act.bytes() * ring_factor(n_tp)
}

/// TP with Megatron sequence parallelism, per rank per microbatch.
///
/// Formula (LBNL Table I, 1D TP with SP): per layer, forward = AllGather of `b·s·h` before QKV,
/// ReduceScatter after the attention projection, AllGather before the MLP, ReduceScatter after it;
/// the backward pass is the conjugate (each AG becomes an RS and vice versa). So per layer per
/// microbatch 4 AllGather + 4 ReduceScatter of a `b·s·h·β` buffer, each moving `(n_TP−1)/n_TP` of it
/// per rank:
/// `AG = RS = L_stage · 4·b·s·h · (n_TP−1)/n_TP · β`.
/// The sum equals [`tp_bytes_per_microbatch`]: SP splits each AllReduce into its two halves.
pub fn sp_bytes_per_microbatch(layers_per_stage: f64, act: &Activation, n_tp: u64) -> AgRs {
    let half = tp_bytes_per_microbatch(layers_per_stage, act, n_tp) / 2.0;
    AgRs {
        all_gather: half,
        reduce_scatter: half,
    }
}

/// PP, one direction, per stage boundary per microbatch, thesis eqs. 2.8 / 2.9:
/// `b·s·h·β`, divided by `n_TP` when TP is on (Megatron's scatter/gather: each TP rank sends its
/// shard; LBNL also uses `m·b_m·l·e/n_t`). Thesis PP=4: 4 194 304 bytes = 4.19 MB.
pub fn pp_bytes_per_boundary_per_microbatch(act: &Activation, n_tp: u64) -> f64 {
    act.bytes() / n_tp as f64
}

/// PP per boundary per iteration, both directions (activations forward, their gradients backward):
/// `2 · m · b·s·h·β / n_TP`. Thesis PP=4, m=16: 134 217 728 bytes = 134.2 MB; the thesis prints
/// 134.1 because it multiplies the already-rounded 4.19 MB (4.19 × 2 × 16 = 134.08).
pub fn pp_bytes_per_boundary_per_iteration(act: &Activation, n_tp: u64, microbatches: u64) -> f64 {
    2.0 * microbatches as f64 * pp_bytes_per_boundary_per_microbatch(act, n_tp)
}

/// Stage boundaries a pipeline rank sits on, with `v` virtual stages (model chunks) per rank.
///
/// Without interleaving (thesis §5.3.5) an edge stage (first or last) has 1 boundary and a
/// middle stage 2. **\[derived\]** With `v` chunks the virtual pipeline has `v·n_PP` stages and
/// `v·n_PP − 1` boundaries; every chunk of a rank has two neighbours except the very first chunk
/// (on the first rank) and the very last (on the last rank), so an edge rank sits on `2v − 1`
/// boundaries and a middle rank on `2v`. (Simply multiplying by `v` would overcount the edge ranks
/// by `v − 1`; for `v = 1` both agree.) Consistent with this: the thesis' chapter-5 count of 4 480
/// SendRecv with virtual stages equals 2 · 2 · m · iterations · (v·n_PP − 1) for v=2, n_PP=4, m=16.
/// A single stage (`n_PP = 1`) has none.
pub fn pp_boundaries(edge: bool, n_pp: u64, v: u64) -> u64 {
    if n_pp <= 1 {
        0
    } else if edge {
        2 * v - 1
    } else {
        2 * v
    }
}

/// EP cluster total per MoE layer per iteration, AlltoAll dispatcher, thesis eqs. 2.11 / 5.6:
/// `4 · B·S · k · h · (1 − 1/n_EP) · β` (dispatch and combine, forward and backward; a fraction
/// `1 − 1/n_EP` of the tokens leaves its rank). `tokens` is `B·S` over the whole global batch.
///
/// Thesis EP=4: 4 · 64 · 1024 · 1 · 512 · 3/4 · 2 = 201 326 592 bytes = 201.3 MB per layer per
/// iteration. **\[derived\]** `capacity_factor` scales it: with padding to capacity every expert
/// receives `capacity_factor` times the uniform share (1.0 in the thesis, no change).
pub fn ep_cluster_bytes_per_layer(
    tokens: f64,
    top_k: u64,
    hidden: u64,
    n_ep: u64,
    capacity_factor: f64,
    beta: f64,
) -> f64 {
    4.0 * tokens * top_k as f64 * hidden as f64 * ring_factor(n_ep) * capacity_factor * beta
}

/// **\[derived\]** EP with the AllGather dispatcher, per rank per MoE layer per iteration.
///
/// Each rank gathers every token of its EP group (AllGather of the group's `n_EP·T·h` buffer, of
/// which a rank moves `(n_EP−1)/n_EP`, i.e. `(n_EP−1)·T·h`) and returns the expert outputs with a
/// ReduceScatter of the same size; backward is the conjugate. With `T` tokens per rank per iteration:
/// `AG = RS = 2 · (n_EP − 1) · T · h · β`. Compared with AlltoAll this is `n_EP / k` times more:
/// every token is replicated to every rank (thesis §2.4.5: "AllGather increases total data transfer").
pub fn ep_allgather_bytes_per_rank_per_layer(
    tokens_per_rank: f64,
    hidden: u64,
    n_ep: u64,
    beta: f64,
) -> AgRs {
    let each = 2.0 * n_ep.saturating_sub(1) as f64 * tokens_per_rank * hidden as f64 * beta;
    AgRs {
        all_gather: each,
        reduce_scatter: each,
    }
}

/// The thesis' non-expert gradient synchronisation of an MoE model, per rank per iteration
/// (§5.3.5, EP=4): the dense DP volume scaled by the share of non-MoE layers,
/// `V_DP · (l − l_MoE) / l`. Thesis: 151.2 × 12/16 = 113.4 MB.
///
/// This is the thesis' approximation: it ignores that MoE layers still have dense attention
/// weights and that the embedding does not scale with layers.
pub fn moe_non_expert_bytes_per_iteration(dp_bytes: f64, layers: u64, moe_layers: u64) -> f64 {
    dp_bytes * layers.saturating_sub(moe_layers) as f64 / layers as f64
}

/// Context parallelism per rank per microbatch.
///
/// Formula (thesis §2.4.4: "CP uses AllGather to assemble the complete key-value sequence on each
/// device ... In the backward pass, ReduceScatter distributes gradients back"; LBNL Table II:
/// "AG K b·l·e/n_1, AG V b·l·e/n_1"): per layer, forward AllGather of K and of V, each a full-sequence
/// buffer `b·s·h/n_TP` (heads are split across TP), backward ReduceScatter of their gradients:
/// `AG = RS = L_stage · 2·b·s·h/n_TP · (n_CP−1)/n_CP · β`, with `act` the **full** sequence.
/// (Megatron's ring-attention implementation moves the same bytes forward as P2P; its backward
/// also circulates K/V again, so the observed volume can be up to 1.5× this.)
pub fn cp_bytes_per_microbatch(
    layers_per_stage: f64,
    act: &Activation,
    n_tp: u64,
    n_cp: u64,
) -> AgRs {
    let each = layers_per_stage * 2.0 * act.bytes() / n_tp as f64 * ring_factor(n_cp);
    AgRs {
        all_gather: each,
        reduce_scatter: each,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: f64 = 1e6;
    const GB: f64 = 1e9;

    /// Rounds to `digits` decimals, as the thesis prints its numbers.
    fn round(x: f64, digits: i32) -> f64 {
        let f = 10f64.powi(digits);
        (x * f).round() / f
    }

    /// The thesis' activation: b=4, s=1024, h=512, β=2.
    fn act() -> Activation {
        Activation {
            micro_batch: 4.0,
            seq_len: 1024.0,
            hidden: 512.0,
            bytes_per_element: 2.0,
        }
    }

    #[test]
    fn parameters_thesis_eq_5_2() {
        let p = parameters(16, 512, 50_257, 1024);
        assert_eq!(p, 50_391_121);
        // The literal formula, in floating point, agrees.
        let (l, h, v, s) = (16.0f64, 512.0f64, 50_257.0f64, 1024.0f64);
        let literal = 12.0 * l * h * h * (1.0 + 1.0 / (12.0 * h) + (v + s) / (12.0 * l * h * h));
        assert!((literal - p as f64).abs() < 1e-6);
        // "50.4 × 10⁶" rounded; the thesis' "≈ 50.3 M" truncates.
        assert_eq!(round(p as f64 / 1e6, 1), 50.4);
        assert_eq!((p as f64 / 1e5).floor() / 10.0, 50.3);
    }

    #[test]
    fn dp4_thesis() {
        let p = parameters(16, 512, 50_257, 1024) as f64;
        let per_iter = dp_bytes_per_iteration(p, 4, 1, 1, 2.0);
        assert!((per_iter - 151_173_363.0).abs() < 1e-3);
        assert_eq!(round(per_iter / MB, 1), 151.2);
        assert_eq!(round(10.0 * per_iter / GB, 3), 1.512);
        // Decimal, not binary: 151.2 MiB would be a different number.
        assert_ne!(round(per_iter / (1 << 20) as f64, 1), 151.2);
        // With the thesis' rounded P the result is exactly its 151.2 MB.
        assert!((dp_bytes_per_iteration(50.4e6, 4, 1, 1, 2.0) - 151.2e6).abs() < 1e-3);
        // ZeRO-1 moves the same total.
        let z = zero1_bytes_per_iteration(p, 4, 1, 1, 2.0);
        assert!((z.total() - per_iter).abs() < 1e-6);
    }

    #[test]
    fn pp4_thesis() {
        let single = pp_bytes_per_boundary_per_microbatch(&act(), 1);
        assert_eq!(single, 4_194_304.0);
        assert_eq!(round(single / MB, 2), 4.19);
        let per_boundary = pp_bytes_per_boundary_per_iteration(&act(), 1, 16);
        assert_eq!(per_boundary, 134_217_728.0);
        // The thesis' 134.1 multiplies the rounded 4.19 MB.
        assert_eq!(round(round(single / MB, 2) * 2.0 * 16.0, 1), 134.1);
        assert_eq!(round(per_boundary / MB, 1), 134.2);
        let edge = per_boundary * pp_boundaries(true, 4, 1) as f64 * 10.0;
        let middle = per_boundary * pp_boundaries(false, 4, 1) as f64 * 10.0;
        assert_eq!(round(edge / GB, 2), 1.34);
        assert_eq!(round(middle / GB, 2), 2.68);
        // Cluster total 2·1.34 + 2·2.68 = 8.04 GB (thesis "MIXED VOLUME ESTIMATES").
        assert_eq!(round((2.0 * edge + 2.0 * middle) / GB, 2), 8.05);
        assert_eq!(
            round(2.0 * round(edge / GB, 2) + 2.0 * round(middle / GB, 2), 2),
            8.04
        );
    }

    #[test]
    fn pp_tp_scatter_and_virtual_stages() {
        assert_eq!(pp_bytes_per_boundary_per_microbatch(&act(), 4), 1_048_576.0);
        assert_eq!(pp_boundaries(true, 4, 2), 3);
        assert_eq!(pp_boundaries(false, 4, 2), 4);
        assert_eq!(pp_boundaries(true, 1, 2), 0);
        // Ranks' boundaries add up to twice the virtual pipeline's v·p − 1 boundaries.
        let (p, v) = (4, 2);
        let sum = 2 * pp_boundaries(true, p, v) + (p - 2) * pp_boundaries(false, p, v);
        assert_eq!(sum, 2 * (v * p - 1));
    }

    #[test]
    fn tp4_thesis() {
        let per_mb = tp_bytes_per_microbatch(8.0, &act(), 4);
        assert_eq!(per_mb, 201_326_592.0);
        assert_eq!(round(per_mb / MB, 1), 201.3);
        // "With 4 microbatches per iteration and 10 iterations": 8.05 GB.
        assert_eq!(round(per_mb * 4.0 * 10.0 / GB, 2), 8.05);
        let sp = sp_bytes_per_microbatch(8.0, &act(), 4);
        assert_eq!(sp.all_gather, sp.reduce_scatter);
        assert_eq!(sp.total(), per_mb);
        // TP=1 moves nothing.
        assert_eq!(tp_bytes_per_microbatch(8.0, &act(), 1), 0.0);
    }

    #[test]
    fn ep4_thesis() {
        let tokens = 64.0 * 1024.0;
        let per_layer = ep_cluster_bytes_per_layer(tokens, 1, 512, 4, 1.0, 2.0);
        assert_eq!(per_layer, 201_326_592.0);
        assert_eq!(round(per_layer / MB, 1), 201.3);
        // "201.3 × 4 / 4": 4 MoE layers over 4 ranks.
        let ep_per_rank = per_layer * 4.0 / 4.0;
        let p = parameters(16, 512, 50_257, 1024) as f64;
        let non_expert =
            moe_non_expert_bytes_per_iteration(dp_bytes_per_iteration(p, 4, 1, 1, 2.0), 16, 4);
        assert_eq!(round(non_expert / MB, 1), 113.4);
        assert_eq!(round((ep_per_rank + non_expert) * 10.0 / GB, 2), 3.15);
    }

    #[test]
    fn ep_allgather_is_n_over_k_times_alltoall() {
        let tokens_per_rank = 64.0 * 1024.0 / 4.0;
        let a2a_per_rank = ep_cluster_bytes_per_layer(64.0 * 1024.0, 1, 512, 4, 1.0, 2.0) / 4.0;
        let ag = ep_allgather_bytes_per_rank_per_layer(tokens_per_rank, 512, 4, 2.0);
        assert!((ag.total() - 4.0 * a2a_per_rank).abs() < 1e-6);
    }

    #[test]
    fn cp_volume() {
        // CP=2, no TP: per layer 2·(1/2)·b·s·h·β each way.
        let cp = cp_bytes_per_microbatch(1.0, &act(), 1, 2);
        assert_eq!(cp.all_gather, 4_194_304.0);
        assert_eq!(cp.reduce_scatter, 4_194_304.0);
        assert_eq!(cp_bytes_per_microbatch(1.0, &act(), 1, 1).total(), 0.0);
    }
}
