//! Megatron-like operation schedule per rank. Why: chapter 5's signatures (bursty DP AllReduce at
//! iteration ends, hundreds of TP AllReduce per iteration, SendRecv between stage neighbours,
//! all-to-all for EP) come from the schedule, so the generator reproduces the schedule rather
//! than drawing operations at random.

use crate::comms::Comms;
use crate::layout::{Dim, Layout, MoeDispatcher};
use crate::model::Model;
use crate::rng::Rng;
use ::model::{DataType, OpType};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Startup,
    Forward,
    Backward,
    Optimizer,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Startup => "startup",
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::Optimizer => "optimizer",
        }
    }
}

/// One NCCL API call as the process issues it.
#[derive(Debug, Clone)]
pub struct OpSpec {
    pub op: OpType,
    pub comm: usize,
    pub count: u64,
    pub dtype: DataType,
    pub redop: u32,
    /// `root` as printed: the root's rank in the communicator, or the peer's for Send/Recv.
    pub root: u32,
    /// Global rank of the peer (Send/Recv only).
    pub peer: Option<u32>,
}

/// The operations of one call: one inline (a collective, nearly every call), or a group. Why not
/// a plain `Vec`: the schedules of all ranks stay in memory while the run is simulated, and a
/// heap block per single-op call was ~70 of the ~150 bytes each call cost (`large-64`: 6.7 M
/// calls).
#[derive(Debug, Clone)]
pub enum Ops {
    One(OpSpec),
    Many(Vec<OpSpec>),
}

impl From<Vec<OpSpec>> for Ops {
    fn from(mut v: Vec<OpSpec>) -> Ops {
        if v.len() == 1 {
            Ops::One(v.remove(0))
        } else {
            Ops::Many(v)
        }
    }
}

impl std::ops::Deref for Ops {
    type Target = [OpSpec];
    fn deref(&self) -> &[OpSpec] {
        match self {
            Ops::One(o) => std::slice::from_ref(o),
            Ops::Many(v) => v,
        }
    }
}

impl<'a> IntoIterator for &'a Ops {
    type Item = &'a OpSpec;
    type IntoIter = std::slice::Iter<'a, OpSpec>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// One launch: a single collective, or a group of Send/Recv on one communicator (one opCount,
/// fused into one SendRecv kernel by NCCL).
#[derive(Debug, Clone)]
pub struct Call {
    pub ops: Ops,
    /// GPU compute time that precedes this call on the same rank.
    pub compute_ns: u64,
    pub iteration: Option<u32>,
    pub phase: Phase,
    /// Logged but launches no kernel (the thesis' AllReduce lines with no kernel).
    pub orphan: bool,
    /// Kernels NCCL launches for a fused Send/Recv group (one per remote peer for all-to-all).
    pub kernels: u32,
    /// Logged before the capture started (no kernel, no NVTX range in the export).
    pub warmup: bool,
}

impl Call {
    pub fn is_p2p(&self) -> bool {
        self.ops.iter().all(|o| o.op.is_p2p())
    }
    pub fn comm(&self) -> usize {
        self.ops[0].comm
    }
}

struct Builder<'a> {
    rank: u32,
    l: &'a Layout,
    m: &'a Model,
    comms: &'a Comms,
    out: Vec<Call>,
    phase: Phase,
    iteration: Option<u32>,
    pending_ns: u64,
    /// Issue pipeline Send/Recv one by one (Megatron's overlap_p2p_comm, the default of the
    /// interleaved schedule): every op is its own launch and kernel.
    unbatched_p2p: bool,
    /// MoE all-to-all as real runs issue it ([`crate::realism::Realism::moe_fused`]).
    fused_moe: bool,
}

/// Effective GPU throughput used for compute gaps (FLOP per ns).
const FLOP_PER_NS: f64 = 60_000.0;

impl<'a> Builder<'a> {
    fn dtype(&self) -> DataType {
        match self.m.bytes_per_element {
            1 => DataType::Float8e4m3,
            4 => DataType::Float32,
            8 => DataType::Float64,
            _ => DataType::Bfloat16,
        }
    }

    fn compute(&mut self, ns: u64) {
        self.pending_ns += ns;
    }

    fn push(&mut self, ops: Vec<OpSpec>) {
        if ops.is_empty() {
            return;
        }
        let ns = std::mem::take(&mut self.pending_ns);
        self.out.push(Call {
            ops: ops.into(),
            compute_ns: ns,
            iteration: self.iteration,
            phase: self.phase,
            orphan: false,
            kernels: 1,
            warmup: false,
        });
    }

    fn coll(&mut self, op: OpType, comm: Option<usize>, count: u64, dtype: DataType) {
        let Some(comm) = comm else { return };
        let redop = 0;
        self.push(vec![OpSpec {
            op,
            comm,
            count,
            dtype,
            redop,
            root: 0,
            peer: None,
        }]);
    }

    /// A group of point-to-point ops: (is_send, peer global rank, count).
    fn p2p(&mut self, comm: Option<usize>, ops: &[(bool, u32, u64)]) {
        let Some(c) = comm else { return };
        let comm = &self.comms.list[c];
        let specs = ops
            .iter()
            .map(|&(send, peer, count)| OpSpec {
                op: if send { OpType::Send } else { OpType::Recv },
                comm: c,
                count,
                dtype: self.dtype(),
                redop: 0,
                root: comm.member(peer) as u32,
                peer: Some(peer),
            })
            .collect();
        self.push(specs);
    }

    fn tp(&self) -> Option<usize> {
        self.comms.of(self.rank, Dim::TP)
    }

    fn stage(&self) -> u32 {
        self.l.coord(self.rank, Dim::PP)
    }

    fn seq(&self) -> u64 {
        self.m.seq_len / self.l.cp as u64
    }

    /// b·s·h elements: one microbatch's activations.
    fn bsh(&self) -> u64 {
        self.m.micro_batch * self.seq() * self.m.hidden
    }

    fn layer_flops(&self) -> f64 {
        let (b, s, h) = (
            self.m.micro_batch as f64,
            self.seq() as f64,
            self.m.hidden as f64,
        );
        24.0 * b * s * h * h * (1.0 + s / (6.0 * h)) / self.l.tp as f64
    }

    fn layers_of_chunk(&self, chunk: u32) -> std::ops::Range<u32> {
        let per = (self.m.layers / (self.l.pp * self.l.vpp)).max(1);
        let first = (chunk * self.l.pp + self.stage()) * per;
        first..first + per
    }

    fn is_first_virtual(&self, chunk: u32) -> bool {
        self.stage() == 0 && chunk == 0
    }

    fn is_last_virtual(&self, chunk: u32) -> bool {
        self.stage() == self.l.pp - 1 && chunk == self.l.vpp - 1
    }

    /// Megatron's get_batch broadcasts the batch from TP rank 0 on the first and last stages.
    fn data_broadcast(&mut self) {
        let tp = self.tp();
        let bs = self.m.micro_batch * self.seq();
        self.coll(OpType::Broadcast, tp, 8, DataType::Int64);
        self.coll(OpType::Broadcast, tp, bs, DataType::Int64);
        self.coll(OpType::Broadcast, tp, bs, DataType::Int64);
        self.coll(OpType::Broadcast, tp, bs, DataType::Float32);
        self.coll(OpType::Broadcast, tp, bs, DataType::Int64);
    }

    fn cp_ring(&mut self, times: u32) {
        let Some(c) = self.comms.of(self.rank, Dim::CP) else {
            return;
        };
        let g = self.l.group(self.rank, Dim::CP);
        let i = self.l.coord(self.rank, Dim::CP) as usize;
        let next = g[(i + 1) % g.len()];
        let prev = g[(i + g.len() - 1) % g.len()];
        let kv = 2 * self.bsh() / self.l.tp as u64;
        for _ in 0..times * (self.l.cp - 1) {
            self.p2p(Some(c), &[(true, next, kv), (false, prev, kv)]);
        }
    }

    /// One MoE layer's token routing for one microbatch, forward or backward. Counts follow
    /// the thesis' EP runs (figures 5.23, 5.25): 14 operations per MoE layer per microbatch
    /// with either dispatcher.
    fn moe(&mut self, forward: bool) {
        let Some(c) = self.comms.of(self.rank, Dim::EP) else {
            return;
        };
        let dt = self.dtype();
        let tokens = self.m.micro_batch * self.seq() * self.m.moe_top_k.max(1) as u64;
        let h = self.m.hidden;
        let tpn = self.l.tp as u64;
        let ep = self.l.ep as u64;
        let step = (self.layer_flops() / FLOP_PER_NS / 8.0) as u64;
        match self.l.moe_dispatcher {
            MoeDispatcher::AllToAll if self.fused_moe => {
                let per_peer = tokens * h / (ep.max(self.comms.list[c].size() as u64) * tpn);
                self.compute(step);
                self.fused_all_to_all(c, 1, DataType::Int64);
                self.fused_all_to_all(c, per_peer, dt);
                self.compute(step);
                self.fused_all_to_all(c, 1, DataType::Int64);
                self.fused_all_to_all(c, per_peer, dt);
            }
            MoeDispatcher::AllToAll => {
                // Token counts per expert are gathered first (forward, and again when the
                // backward pass rebuilds the permutation).
                self.coll(
                    OpType::AllGather,
                    Some(c),
                    self.m.moe_experts as u64,
                    DataType::Int64,
                );
                // torch all_to_all_single: one Send and one Recv per EP rank, self included;
                // NCCL runs the group as one SendRecv kernel per remote peer.
                let per_peer = tokens * h / (ep * tpn);
                let g = self.l.group(self.rank, Dim::EP);
                for _ in 0..2 {
                    let mut ops = Vec::new();
                    for &p in &g {
                        ops.push((true, p, per_peer));
                        ops.push((false, p, per_peer));
                    }
                    self.compute(step);
                    self.p2p(Some(c), &ops);
                    if let Some(last) = self.out.last_mut() {
                        last.kernels = (g.len() as u32 - 1).max(1);
                    }
                }
            }
            MoeDispatcher::AllGather => {
                // Gathers: hidden states, routing probabilities, routing map, token counts;
                // scatters: expert output, bias, probabilities. The backward pass mirrors them.
                let n = tokens * h / tpn;
                let k = self.m.moe_top_k.max(1) as u64;
                let bs = self.m.micro_batch * self.seq();
                self.compute(step);
                self.coll(OpType::AllGather, Some(c), n, dt);
                self.coll(OpType::AllGather, Some(c), bs * k, DataType::Float32);
                self.coll(
                    OpType::AllGather,
                    Some(c),
                    bs * self.m.moe_experts as u64,
                    DataType::Uint8,
                );
                self.coll(
                    OpType::AllGather,
                    Some(c),
                    self.m.moe_experts as u64,
                    DataType::Int64,
                );
                self.compute(2 * step);
                self.coll(OpType::ReduceScatter, Some(c), n / ep, dt);
                self.coll(OpType::ReduceScatter, Some(c), n / ep, dt);
                self.coll(
                    OpType::ReduceScatter,
                    Some(c),
                    bs * k / ep,
                    DataType::Float32,
                );
            }
        }
        let _ = forward;
    }

    /// torch's `all_to_all_single` with uneven splits: a Send and a Recv to every member of
    /// communicator `c`, itself included, counts around `base` drawn per (call, sender,
    /// receiver) so both ends agree; NCCL runs the group as one SendRecv kernel.
    fn fused_all_to_all(&mut self, c: usize, base: u64, dtype: DataType) {
        let members = self.comms.list[c].global_ranks.clone();
        let call = self.out.len() as u64;
        let specs = members
            .iter()
            .flat_map(|&q| {
                let me = self.rank;
                let member = self.comms.list[c].member(q) as u32;
                let send = crate::realism::uneven_count(base, call, me, q);
                let recv = crate::realism::uneven_count(base, call, q, me);
                [(OpType::Send, send), (OpType::Recv, recv)].map(|(op, count)| OpSpec {
                    op,
                    comm: c,
                    count,
                    dtype,
                    redop: 0,
                    root: member,
                    peer: Some(q),
                })
            })
            .collect();
        self.push(specs);
    }

    fn forward(&mut self, chunk: u32) {
        self.phase = Phase::Forward;
        let tp = self.tp();
        let sp = self.l.sequence_parallel && tp.is_some();
        let dt = self.dtype();
        let bsh = self.bsh();
        let tpn = self.l.tp as u64;
        let half = (self.layer_flops() / FLOP_PER_NS / 2.0) as u64;
        if (self.is_first_virtual(chunk) || self.is_last_virtual(chunk)) && tp.is_some() {
            self.data_broadcast();
        }
        if self.is_first_virtual(chunk) {
            self.compute(half / 8);
            if sp {
                self.coll(OpType::ReduceScatter, tp, bsh / tpn, dt);
            } else {
                self.coll(OpType::AllReduce, tp, bsh, dt);
            }
        }
        for layer in self.layers_of_chunk(chunk) {
            self.cp_ring(1);
            for _ in 0..2 {
                self.compute(half);
                if sp {
                    self.coll(OpType::AllGather, tp, bsh / tpn, dt);
                    self.compute(half / 4);
                    self.coll(OpType::ReduceScatter, tp, bsh / tpn, dt);
                } else {
                    self.coll(OpType::AllReduce, tp, bsh, dt);
                }
            }
            if self.m.is_moe_layer(layer) {
                self.moe(true);
            }
        }
        if self.is_last_virtual(chunk) {
            self.compute(half);
            if sp {
                self.coll(OpType::AllGather, tp, bsh / tpn, dt);
            }
            // Vocab-parallel cross entropy: max, sum of exponentials, target logits.
            let bs = self.m.micro_batch * self.seq();
            for _ in 0..3 {
                self.coll(OpType::AllReduce, tp, bs, DataType::Float32);
            }
            // number of tokens in the loss
            self.coll(OpType::AllReduce, tp, 1, DataType::Float32);
        }
        if tp.is_none() {
            self.compute(half * 2 * self.layers_of_chunk(chunk).len() as u64);
        }
    }

    fn backward(&mut self, chunk: u32) {
        self.phase = Phase::Backward;
        let tp = self.tp();
        let sp = self.l.sequence_parallel && tp.is_some();
        let dt = self.dtype();
        let bsh = self.bsh();
        let tpn = self.l.tp as u64;
        let half = (self.layer_flops() / FLOP_PER_NS) as u64;
        if self.is_last_virtual(chunk) && sp {
            // the output layer re-gathers its input for the weight gradient
            self.coll(OpType::AllGather, tp, bsh / tpn, dt);
        }
        for layer in self.layers_of_chunk(chunk).rev() {
            if self.m.is_moe_layer(layer) {
                self.moe(false);
            }
            for _ in 0..2 {
                self.compute(half);
                if sp {
                    // recompute-gather of the input, grad of the RS, grad of the AG
                    self.coll(OpType::AllGather, tp, bsh / tpn, dt);
                    self.compute(half / 4);
                    self.coll(OpType::ReduceScatter, tp, bsh / tpn, dt);
                    self.coll(OpType::AllGather, tp, bsh / tpn, dt);
                } else {
                    self.coll(OpType::AllReduce, tp, bsh, dt);
                }
            }
            self.cp_ring(2);
        }
        if self.is_first_virtual(chunk) && sp {
            self.coll(OpType::AllGather, tp, bsh / tpn, dt);
        }
        if tp.is_none() {
            self.compute(half * 2 * self.layers_of_chunk(chunk).len() as u64);
        }
    }

    fn pp_comm(&self) -> Option<usize> {
        self.comms.of(self.rank, Dim::PP)
    }

    fn pp_peer(&self, delta: i32) -> u32 {
        let g = self.l.group(self.rank, Dim::PP);
        let p = g.len() as i32;
        g[(((self.stage() as i32 + delta) % p + p) % p) as usize]
    }

    fn p2p_count(&self) -> u64 {
        if self.l.sequence_parallel {
            self.bsh() / self.l.tp as u64
        } else {
            self.bsh()
        }
    }

    /// One pipeline exchange: (send_next, recv_prev, send_prev, recv_next), in Megatron's
    /// `_p2p_ops` order.
    fn exchange(&mut self, send_next: bool, recv_prev: bool, send_prev: bool, recv_next: bool) {
        let n = self.p2p_count();
        let (next, prev) = (self.pp_peer(1), self.pp_peer(-1));
        let mut ops = Vec::new();
        if send_next {
            ops.push((true, next, n));
        }
        if recv_prev {
            ops.push((false, prev, n));
        }
        if send_prev {
            ops.push((true, prev, n));
        }
        if recv_next {
            ops.push((false, next, n));
        }
        let c = self.pp_comm();
        if self.unbatched_p2p {
            for op in ops {
                self.p2p(c, &[op]);
            }
        } else {
            self.p2p(c, &ops);
        }
    }

    fn one_f_one_b(&mut self, m: u32) {
        let p = self.l.pp;
        let s = self.stage();
        let (first, last) = (s == 0, s == p - 1);
        let warmup = (p - s - 1).min(m);
        let remaining = m - warmup;
        for _ in 0..warmup {
            self.phase = Phase::Forward;
            self.exchange(false, !first, false, false);
            self.forward(0);
            self.exchange(!last, false, false, false);
        }
        if remaining > 0 {
            self.phase = Phase::Forward;
            self.exchange(false, !first, false, false);
        }
        for i in 0..remaining {
            self.forward(0);
            self.exchange(!last, false, false, !last);
            self.backward(0);
            if i == remaining - 1 {
                self.exchange(false, false, !first, false);
            } else {
                self.exchange(false, !first, !first, false);
            }
        }
        for _ in 0..warmup {
            self.phase = Phase::Backward;
            self.exchange(false, false, false, !last);
            self.backward(0);
            self.exchange(false, false, !first, false);
        }
    }

    fn interleaved(&mut self, m: u32) {
        let (p, v) = (self.l.pp, self.l.vpp);
        let s = self.stage();
        let total = m * v;
        let fchunk = |k: u32| (k % (p * v)) / p;
        let bchunk = |k: u32| v - 1 - (k % (p * v)) / p;
        let warmup = if m == p {
            total
        } else {
            ((p - s - 1) * 2 + (v - 1) * p).min(total)
        };
        let remaining = total - warmup;
        self.phase = Phase::Forward;
        self.exchange(false, s != 0, false, false);
        for k in 0..warmup {
            self.forward(fchunk(k));
            let send_next = !(s == p - 1 && fchunk(k) == v - 1);
            let recv_prev = !(s == 0 && fchunk(k + 1) == 0) && k != total - 1;
            if k == warmup - 1 && remaining > 0 {
                self.exchange(send_next, recv_prev, false, s != p - 1);
            } else {
                self.exchange(send_next, recv_prev, false, false);
            }
        }
        for k in 0..remaining {
            let fk = k + warmup;
            self.forward(fchunk(fk));
            self.backward(bchunk(k));
            let send_next = !(s == p - 1 && fchunk(fk) == v - 1);
            let send_prev = !(s == 0 && bchunk(k) == 0);
            let recv_prev = !(s == 0 && fchunk(fk + 1) == 0) && k != remaining - 1;
            let recv_next = !(s == p - 1 && bchunk(k + 1) == v - 1);
            self.exchange(send_next, recv_prev, send_prev, recv_next);
        }
        if remaining == 0 {
            self.phase = Phase::Backward;
            self.exchange(false, false, false, s != p - 1);
        }
        for k in remaining..total {
            self.backward(bchunk(k));
            let send_prev = !(s == 0 && bchunk(k) == 0);
            let recv_next = !(s == p - 1 && bchunk(k + 1) == v - 1) && k != total - 1;
            self.exchange(false, false, send_prev, recv_next);
        }
    }

    fn optimizer(&mut self) {
        self.phase = Phase::Optimizer;
        let world = Some(self.comms.world);
        let tp = self.tp();
        if self.l.sequence_parallel && tp.is_some() {
            // sequence-parallel LayerNorm weights: their grads are all-reduced over TP
            self.coll(
                OpType::AllReduce,
                tp,
                2 * self.m.hidden * self.m.layers as u64,
                DataType::Float32,
            );
        }
        let grad_comm = self
            .comms
            .of(self.rank, Dim::DP)
            .or_else(|| self.comms.of(self.rank, Dim::EP));
        let dt = self.dtype();
        if let Some(c) = grad_comm {
            let n = self.comms.list[c].size() as u64;
            let elems = self.m.parameters() / (self.l.tp as u64 * self.l.pp as u64);
            let elems = elems.div_ceil(n) * n;
            self.compute(200_000);
            if self.l.distributed_optimizer {
                self.coll(OpType::ReduceScatter, Some(c), elems / n, dt);
                self.compute(300_000);
                // the norm of the sharded gradients needs one more (tiny) AllReduce
                self.coll(OpType::AllReduce, Some(c), 1, DataType::Float32);
                self.coll(OpType::AllGather, Some(c), elems / n, dt);
            } else {
                self.coll(OpType::AllReduce, Some(c), elems, dt);
            }
        }
        if let Some(e) = self.comms.embedding(self.rank) {
            // tied word embeddings: first and last stage sum their gradients
            let n = self.m.vocab * self.m.hidden / self.l.tp as u64;
            self.coll(OpType::AllReduce, Some(e), n, dt);
        }
        if let Some(mp) = self.comms.model_parallel(self.rank) {
            // grad norm, found-inf, zeros in grads over the model-parallel group
            for _ in 0..3 {
                self.coll(OpType::AllReduce, Some(mp), 1, DataType::Float32);
            }
        }
        // loss average, grad norm, found-inf, zeros in grads; two timer gathers.
        self.compute(100_000);
        for _ in 0..4 {
            self.coll(OpType::AllReduce, world, 1, DataType::Float32);
        }
        if let (Some(ep), true) = (self.comms.of(self.rank, Dim::EP), self.m.moe_layers > 0) {
            // MoE auxiliary (load-balancing) loss, averaged over the expert group
            self.coll(
                OpType::AllReduce,
                Some(ep),
                self.m.moe_layers as u64,
                DataType::Float32,
            );
        }
        // timer gathers (the distributed optimizer's parameter AllGather replaces one)
        let timers = if self.l.distributed_optimizer && grad_comm.is_some() {
            1
        } else {
            2
        };
        for _ in 0..timers {
            self.coll(OpType::AllGather, world, 1, DataType::Float32);
        }
    }
}

/// The full call list of `rank` for the whole run.
pub fn build(layout: &Layout, model: &Model, comms: &Comms, rank: u32) -> Vec<Call> {
    build_with(layout, model, comms, rank, false)
}

/// [`build`], with MoE all-to-all fused as real runs issue it when `fused_moe`.
pub fn build_with(
    layout: &Layout,
    model: &Model,
    comms: &Comms,
    rank: u32,
    fused_moe: bool,
) -> Vec<Call> {
    let mut b = Builder {
        rank,
        l: layout,
        m: model,
        comms,
        out: Vec::new(),
        phase: Phase::Startup,
        iteration: None,
        pending_ns: 0,
        unbatched_p2p: layout.vpp > 1,
        fused_moe,
    };
    let world = Some(comms.world);
    // Startup: barriers and argument checks, host info gather, seed broadcast.
    for _ in 0..5 {
        b.compute(50_000);
        b.coll(OpType::AllReduce, world, 1, DataType::Int32);
    }
    b.coll(OpType::AllGather, world, 1, DataType::Int64);
    b.coll(OpType::Broadcast, world, 1, DataType::Int64);
    for _ in 1..layout.vpp {
        // every further model chunk repeats its start-up checks and parameter broadcast
        for _ in 0..3 {
            b.coll(OpType::AllReduce, world, 1, DataType::Int32);
        }
        b.coll(OpType::Broadcast, world, 1, DataType::Int64);
    }
    if let Some(e) = comms.embedding(rank) {
        // initial sync of the tied word embeddings
        let n = model.vocab * model.hidden / layout.tp as u64;
        b.coll(OpType::AllReduce, Some(e), n, b.dtype());
    }
    let m = model.microbatches(layout.data_parallel());
    for it in 0..model.iterations {
        b.iteration = Some(it);
        b.compute(150_000);
        if layout.pp == 1 {
            for _ in 0..m {
                b.forward(0);
                b.backward(0);
            }
        } else if layout.vpp > 1 {
            b.interleaved(m);
        } else {
            b.one_f_one_b(m);
        }
        b.optimizer();
    }
    b.out
}

/// Adds `n` orphan AllReduce calls on the world communicator (logged, no kernel), at the same
/// world-collective positions on every rank so opCounts stay consistent across members.
pub fn add_orphans(calls: &mut Vec<Call>, world: usize, n: u32, seed: u64) {
    if n == 0 {
        return;
    }
    let world_pos: Vec<usize> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.is_p2p() && c.comm() == world)
        .map(|(i, _)| i)
        .collect();
    if world_pos.is_empty() {
        return;
    }
    let mut rng = Rng::derive(seed, 0x0E);
    let mut picks: Vec<usize> = (0..n)
        .map(|_| rng.range(0, world_pos.len() as u64) as usize)
        .collect();
    picks.sort_unstable();
    for (k, &p) in picks.iter().enumerate().rev() {
        let at = world_pos[p];
        let _ = k;
        let c = &calls[at];
        let orphan = Call {
            ops: Ops::One(OpSpec {
                op: OpType::AllReduce,
                comm: world,
                count: 1,
                dtype: DataType::Float32,
                redop: 0,
                root: 0,
                peer: None,
            }),
            compute_ns: 0,
            iteration: c.iteration,
            phase: c.phase,
            orphan: true,
            kernels: 0,
            warmup: false,
        };
        calls.insert(at, orphan);
    }
}

/// The pause between the last warm-up call and the first captured one (the capture starts in
/// its middle).
pub const WARMUP_GAP_NS: i64 = 40_000_000;

/// Puts `n` warm-up AllReduce calls on the world communicator before everything else: logged
/// before the capture started, so no kernel or range of theirs is in the export (the run's
/// capture starts after them, [`WARMUP_GAP_NS`] later).
pub fn add_warmups(calls: &mut Vec<Call>, world: usize, n: u32) {
    if n == 0 {
        return;
    }
    if let Some(first) = calls.first_mut() {
        first.compute_ns += WARMUP_GAP_NS as u64;
    }
    let warmups = (0..n).map(|_| Call {
        ops: Ops::One(OpSpec {
            op: OpType::AllReduce,
            comm: world,
            count: 1,
            dtype: DataType::Float32,
            redop: 0,
            root: 0,
            peer: None,
        }),
        compute_ns: 20_000,
        iteration: None,
        phase: Phase::Startup,
        orphan: true,
        kernels: 0,
        warmup: true,
    });
    calls.splice(0..0, warmups);
}
