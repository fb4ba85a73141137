//! Parallelism of each logical communicator (thesis §4.2.3, extended).
//!
//! Why: per-dimension volumes and timelines (DP vs TP vs PP traffic, chapter 5) need to know
//! which communicator serves which kind of parallelism; NCCL logs never say.
//!
//! With user-given sizes the answer is structural: Megatron orders ranks TP fastest, then CP,
//! EP, DP, PP (`megatron/core/parallel_state.py`), so the sizes fix every group's rank set and a
//! communicator is labelled by the group its rank set equals. Sets spanning several dimensions
//! (the world, the model-parallel group TP×CP×PP) are `Unknown`; the tied-embedding group (first
//! and last stage of a pipeline) is PP.
//!
//! Without sizes, every layout whose sizes multiply to the world size (and use only observed
//! communicator sizes) is scored against the observed communicators: how well each communicator's
//! operation signature fits the label the layout gives it (chapter 5: PP = point-to-point between
//! stage neighbours; EP = grouped Send/Recv to every peer, or AllGather/ReduceScatter with routing
//! maps; TP = hundreds to thousands of AllReduce, or AllGather+ReduceScatter with sequence
//! parallelism, per iteration; DP = few, large AllReduce or ReduceScatter+AllGather per
//! iteration), minus penalties for groups the layout needs but the logs lack and for
//! communicators it cannot explain. The best layout wins; the margin over the runner-up is the
//! confidence, and a thin margin gives `Unknown`.

use crate::communicators::Communicators;
use model::log::{LogOp, ProcessKey};
use model::{DataType, OpType};
use rustc_hash::FxHashSet;
use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// What a communicator is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Parallelism {
    TP,
    CP,
    EP,
    DP,
    PP,
    Unknown,
}

impl Parallelism {
    /// Megatron's rank order, fastest-varying first.
    pub const ORDER: [Parallelism; 5] = [
        Parallelism::TP,
        Parallelism::CP,
        Parallelism::EP,
        Parallelism::DP,
        Parallelism::PP,
    ];

    /// The contract's spelling (`"TP"`, ..., `"unknown"`).
    pub fn name(self) -> &'static str {
        match self {
            Parallelism::TP => "TP",
            Parallelism::CP => "CP",
            Parallelism::EP => "EP",
            Parallelism::DP => "DP",
            Parallelism::PP => "PP",
            Parallelism::Unknown => "unknown",
        }
    }
}

/// Sizes of the parallel dimensions; their product is the world size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sizes {
    pub tp: u32,
    pub cp: u32,
    pub ep: u32,
    pub dp: u32,
    pub pp: u32,
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes {
            tp: 1,
            cp: 1,
            ep: 1,
            dp: 1,
            pp: 1,
        }
    }
}

impl Sizes {
    pub fn world(&self) -> u32 {
        self.tp * self.cp * self.ep * self.dp * self.pp
    }

    pub fn size(&self, d: Parallelism) -> u32 {
        match d {
            Parallelism::TP => self.tp,
            Parallelism::CP => self.cp,
            Parallelism::EP => self.ep,
            Parallelism::DP => self.dp,
            Parallelism::PP => self.pp,
            Parallelism::Unknown => 1,
        }
    }

    fn set(&mut self, d: Parallelism, v: u32) {
        match d {
            Parallelism::TP => self.tp = v,
            Parallelism::CP => self.cp = v,
            Parallelism::EP => self.ep = v,
            Parallelism::DP => self.dp = v,
            Parallelism::PP => self.pp = v,
            Parallelism::Unknown => {}
        }
    }

    /// Distance in global rank between neighbours along `d` (Megatron order).
    pub fn stride(&self, d: Parallelism) -> u32 {
        let mut s = 1;
        for x in Parallelism::ORDER {
            if x == d {
                return s;
            }
            s *= self.size(x);
        }
        s
    }

    /// `rank`'s index along `d`.
    pub fn coord(&self, rank: u32, d: Parallelism) -> u32 {
        (rank / self.stride(d)) % self.size(d).max(1)
    }

    /// `rank`'s group along one dimension, ascending (O(size), for large worlds).
    pub fn dim_group(&self, rank: u32, d: Parallelism) -> Vec<u32> {
        let stride = self.stride(d);
        let base = rank - self.coord(rank, d) * stride;
        (0..self.size(d).max(1))
            .map(|i| base + i * stride)
            .collect()
    }

    /// The ranks sharing every coordinate with `rank` except those in `dims`, ascending.
    pub fn group(&self, rank: u32, dims: &[Parallelism]) -> Vec<u32> {
        (0..self.world())
            .filter(|&q| {
                Parallelism::ORDER
                    .iter()
                    .filter(|d| !dims.contains(d))
                    .all(|&d| self.coord(q, d) == self.coord(rank, d))
            })
            .collect()
    }

    fn describe(&self) -> String {
        let parts: Vec<String> = Parallelism::ORDER
            .iter()
            .filter(|d| self.size(**d) > 1)
            .map(|d| format!("{}={}", d.name(), self.size(*d)))
            .collect();
        if parts.is_empty() {
            "no parallelism".into()
        } else {
            parts.join(" × ")
        }
    }
}

/// What the caller knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hints {
    /// User-given sizes (`--tp ...` or the config file): labels become structural and exact.
    pub sizes: Option<Sizes>,
    /// Iterations of the run (e.g. counted NVTX iteration ranges), for per-iteration evidence.
    pub iterations: Option<u32>,
}

/// The label of one logical communicator.
#[derive(Debug, Clone, PartialEq)]
pub struct CommParallelism {
    /// Index into [`Communicators::comms`].
    pub comm: usize,
    pub parallelism: Parallelism,
    pub evidence: String,
    /// In [0, 1].
    pub confidence: f64,
}

/// Labels of every communicator and the layout behind them.
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutInference {
    /// The layout used (given or inferred); `None` when nothing could be inferred.
    pub sizes: Option<Sizes>,
    /// One per communicator, same order as [`Communicators::comms`].
    pub comms: Vec<CommParallelism>,
    pub evidence: String,
    pub confidence: f64,
    /// The operation signature of every communicator (same order), the evidence the labels
    /// were scored on: kept so that analyses of disjoint parts of a run (per-node jobs) can be
    /// combined ([`Signature::combine`]) and labelled as one run ([`infer_from_signatures`]).
    pub signatures: Vec<Signature>,
}

/// What a rank set is under a layout.
#[derive(Debug, Clone, PartialEq)]
enum Role {
    Dim(Parallelism),
    /// First and last stage of a pipeline (tied word embeddings): PP.
    Embedding,
    /// A group over several dimensions (world, model-parallel): unknown, but expected.
    Combined(Vec<Parallelism>),
    Single,
    Unexplained,
}

fn role(sizes: &Sizes, set: &[u32]) -> Role {
    if set.len() <= 1 {
        return Role::Single;
    }
    let first = set[0];
    if set.iter().any(|&r| r >= sizes.world()) {
        return Role::Unexplained;
    }
    let big: Vec<Parallelism> = Parallelism::ORDER
        .iter()
        .copied()
        .filter(|d| sizes.size(*d) > 1)
        .collect();
    let matches = |dims: &[Parallelism]| -> bool {
        let n: u32 = dims.iter().map(|d| sizes.size(*d)).product();
        n as usize == set.len()
            && set.iter().all(|&q| {
                Parallelism::ORDER
                    .iter()
                    .filter(|d| !dims.contains(d))
                    .all(|&d| sizes.coord(q, d) == sizes.coord(first, d))
            })
    };
    for &d in &big {
        if matches(&[d]) {
            return Role::Dim(d);
        }
    }
    if sizes.pp > 2 && set.len() == 2 {
        let g = sizes.dim_group(first, Parallelism::PP);
        if g.first() == Some(&set[0]) && g.last() == Some(&set[1]) {
            return Role::Embedding;
        }
    }
    // Every subset of two or more non-trivial dimensions.
    for mask in 1u32..(1 << big.len()) {
        if mask.count_ones() < 2 {
            continue;
        }
        let dims: Vec<Parallelism> = big
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .map(|(_, d)| *d)
            .collect();
        if matches(&dims) {
            return Role::Combined(dims);
        }
    }
    Role::Unexplained
}

/// Operation statistics of one communicator (one representative member: the one with the
/// fewest lines, so a rank that logs every line twice does not count double).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signature {
    pub size: u32,
    pub ar: u64,
    pub ag: u64,
    pub rs: u64,
    pub bc: u64,
    pub other: u64,
    pub p2p: u64,
    /// Collectives under 1 KiB: scalars (loss, grad norm, found-inf, timers), not traffic.
    pub tiny: u64,
    pub max_bytes: u64,
    pub uint8_gather: bool,
    /// Some Send/Recv group reaches every peer (or the rank itself): all-to-all.
    pub all_to_all: bool,
    /// A Send between the first and last rank of a ≥3-rank communicator: a ring (CP), not a
    /// pipeline.
    pub ring_wrap: bool,
    /// The member whose counts these are (`None`: no member logged an operation on it).
    pub representative: Option<ProcessKey>,
}

impl Signature {
    fn payload(&self) -> u64 {
        self.ar + self.ag + self.rs + self.bc + self.other + self.p2p
    }

    /// Lines the representative logged (payload and scalars): the fewest wins.
    fn lines(&self) -> u64 {
        self.payload() + self.tiny
    }

    /// The signature of one communicator from the signatures of two disjoint sets of its
    /// members (two nodes' analyses): equal to the one computed from all their members at once,
    /// since the representative is the member with the fewest lines (the first in process
    /// order among equals) and the peer patterns hold if any member shows them.
    pub fn combine(a: Signature, b: Signature) -> Signature {
        let (all_to_all, ring_wrap) = (a.all_to_all || b.all_to_all, a.ring_wrap || b.ring_wrap);
        let size = a.size.max(b.size);
        let mut best = match (&a.representative, &b.representative) {
            (None, _) => b,
            (_, None) => a,
            (Some(ka), Some(kb)) => {
                if (b.lines(), kb) < (a.lines(), ka) {
                    b
                } else {
                    a
                }
            }
        };
        best.size = size;
        best.all_to_all = all_to_all;
        best.ring_wrap = ring_wrap;
        best
    }
}

#[derive(Default)]
struct MemberStats {
    seen: FxHashSet<(u64, OpType, i64, u64)>,
    sig: Signature,
    groups: BTreeMap<u64, BTreeSet<i64>>,
}

fn signatures(
    comms: &Communicators,
    ops: impl IntoIterator<Item = impl Borrow<LogOp>>,
) -> Vec<Signature> {
    let mut per: Vec<BTreeMap<ProcessKey, MemberStats>> =
        (0..comms.comms.len()).map(|_| BTreeMap::new()).collect();
    // The last (process, pointer) looked up: a log's calls come in runs of one process.
    let mut last: Option<(ProcessKey, u64, Option<usize>)> = None;
    for o in ops {
        let o = o.borrow();
        let c = match &last {
            Some((p, comm, c)) if *comm == o.comm && *p == o.process => *c,
            _ => {
                let c = comms.comm_of(&o.process, o.comm);
                last = Some((o.process.clone(), o.comm, c));
                c
            }
        };
        let Some(c) = c else {
            continue;
        };
        // Looked up before inserting: the key is copied once per member, not once per call.
        if !per[c].contains_key(&o.process) {
            per[c].insert(o.process.clone(), MemberStats::default());
        }
        let Some(m) = per[c].get_mut(&o.process) else {
            continue;
        };
        if !m.seen.insert((o.op_count, o.op, o.root, o.count)) {
            continue; // a duplicated line
        }
        let bytes = o.msg_bytes();
        let s = &mut m.sig;
        s.max_bytes = s.max_bytes.max(bytes);
        if o.op.is_p2p() {
            s.p2p += 1;
            m.groups.entry(o.op_count).or_default().insert(o.root);
            if o.op == OpType::Send {
                let n = comms.comms[c].size as i64;
                if let Some(me) = comms.rank_in(c, &o.process) {
                    let me = me as i64;
                    if n >= 3 && ((me == n - 1 && o.root == 0) || (me == 0 && o.root == n - 1)) {
                        s.ring_wrap = true;
                    }
                }
            }
            continue;
        }
        if bytes < 1024 {
            s.tiny += 1;
            continue;
        }
        match o.op {
            OpType::AllReduce => s.ar += 1,
            OpType::AllGather => {
                s.ag += 1;
                s.uint8_gather |= o.datatype == Some(DataType::Uint8);
            }
            OpType::ReduceScatter => s.rs += 1,
            OpType::Broadcast => s.bc += 1,
            _ => s.other += 1,
        }
    }
    per.into_iter()
        .enumerate()
        .map(|(c, members)| {
            let n = comms.comms[c].size;
            let mut best: Option<Signature> = None;
            let mut all_to_all = false;
            let mut ring = false;
            for (p, mut m) in members {
                let me = comms.rank_in(c, &p).map(|r| r as i64);
                for peers in m.groups.values() {
                    let selfpeer = me.is_some_and(|r| peers.contains(&r));
                    if selfpeer || (n >= 3 && peers.len() as u32 >= n - 1) {
                        all_to_all = true;
                    }
                }
                ring |= m.sig.ring_wrap;
                m.sig.size = n;
                m.sig.representative = Some(p);
                let total = m.sig.lines();
                if best.as_ref().is_none_or(|b| total < b.lines()) {
                    best = Some(m.sig);
                }
            }
            let mut s = best.unwrap_or_default();
            s.size = n;
            s.all_to_all = all_to_all;
            s.ring_wrap = ring;
            s
        })
        .collect()
}

/// How well a communicator's operations fit label `d`; `intensity` = payload collectives per
/// iteration (or per scalar-collective round when iterations are unknown).
fn fit(s: &Signature, d: Parallelism, intensity: f64) -> f64 {
    use Parallelism::*;
    let payload = s.payload();
    if payload == 0 {
        return 0.0;
    }
    let p2p_share = s.p2p as f64 / payload as f64;
    if p2p_share >= 0.5 {
        return match (d, s.all_to_all, s.ring_wrap) {
            (EP, true, _) => 3.0,
            (_, true, _) => -3.0,
            (CP, false, true) => 3.0,
            // Interleaved pipelines also wrap (last stage → first), so a ring is still PP-ish.
            (PP, false, true) => 2.0,
            (PP, false, false) => 3.0,
            (CP, false, false) => 1.0,
            (EP, false, _) => -2.0,
            _ => -3.0,
        };
    }
    // Collective communicators: heavy (many per iteration) vs light (a few).
    let heavy = if intensity >= 20.0 {
        1.0
    } else if intensity <= 5.0 {
        -1.0
    } else {
        0.0
    };
    let gather = (s.ag + s.rs) as f64 / payload as f64 >= 0.5;
    match d {
        PP | CP => -2.0,
        TP if gather && s.uint8_gather => -1.0,
        TP => 2.0 * heavy,
        DP => -heavy,
        EP if gather && s.uint8_gather => 2.0,
        EP if gather => 0.5 * heavy.max(0.0),
        EP => -1.0,
        Unknown => 0.0,
    }
}

fn describe_ops(s: &Signature, per: f64, unit: &str, each: bool) -> String {
    let mut parts = Vec::new();
    for (n, name) in [
        (s.ar, "AllReduce"),
        (s.ag, "AllGather"),
        (s.rs, "ReduceScatter"),
        (s.bc, "Broadcast"),
        (s.p2p, "Send/Recv"),
    ] {
        if n > 0 {
            parts.push(format!("{} {name}", (n as f64 / per).round() as u64));
        }
    }
    if parts.is_empty() {
        return "only scalar collectives".into();
    }
    let mut t = format!(
        "{} {unit}{}",
        parts.join(" + "),
        if each { " each" } else { "" }
    );
    if s.p2p > 0 {
        t.push_str(if s.all_to_all {
            ", grouped to all peers"
        } else if s.ring_wrap {
            ", in a ring"
        } else {
            ", between neighbours"
        });
    }
    t
}

fn shape(set: &[u32]) -> String {
    let strides: BTreeSet<u32> = set.windows(2).map(|w| w[1] - w[0]).collect();
    match strides.iter().collect::<Vec<_>>()[..] {
        [1] => "consecutive".into(),
        [s] => format!("stride-{s}"),
        _ => "scattered".into(),
    }
}

/// Labels every communicator. Output `comms` is in the order of `comms.comms`.
pub fn infer(
    comms: &Communicators,
    ops: impl IntoIterator<Item = impl Borrow<LogOp>>,
    hints: &Hints,
) -> LayoutInference {
    let sigs = signatures(comms, ops);
    infer_from_signatures(comms, sigs, hints)
}

/// [`infer`] from the communicators' signatures (one per communicator, in order; a missing one
/// counts as a communicator with no operations) instead of the operations: labels a run
/// assembled from analyses of its parts (each part's [`LayoutInference::signatures`] combined
/// per communicator with [`Signature::combine`]). Only the communicators' `global_ranks`,
/// `size` and the world size are read.
pub fn infer_from_signatures(
    comms: &Communicators,
    mut sigs: Vec<Signature>,
    hints: &Hints,
) -> LayoutInference {
    sigs.resize(comms.comms.len(), Signature::default());
    let mut inference = label(comms, &sigs, hints);
    inference.signatures = sigs;
    inference
}

/// The labels and layout from the signatures ([`infer`]'s body; `signatures` left empty): with
/// given sizes, structural labels ([`label_given`]); otherwise every layout scored against the
/// signatures ([`score_layouts`]), the best one's labels ([`label_inferred`]), and within a
/// rank set that is both the data-parallel and the expert-parallel group, each communicator
/// told apart by its signature ([`split_dp_from_ep`]).
fn label(comms: &Communicators, sigs: &[Signature], hints: &Hints) -> LayoutInference {
    if let Some(sizes) = hints.sizes {
        return label_given(comms, sizes);
    }
    let world = comms.world_size;
    if world < 2 || comms.comms.is_empty() {
        return unknown_layout(comms, "fewer than two ranks".into(), 0.0);
    }
    let scale = Scale::of(comms, sigs, hints);
    let scored = score_layouts(comms, sigs, &scale);
    let Some(&(best, layout)) = scored.first() else {
        return unknown_layout(
            comms,
            format!("no layout of {world} ranks fits the communicator sizes"),
            0.0,
        );
    };
    let margin = scored.get(1).map_or(best.max(0.0), |s| best - s.0);
    let confidence = (1.0 - (-margin).exp()).clamp(0.0, 1.0);
    if best <= 0.0 || margin < 0.3 {
        return unknown_layout(
            comms,
            format!(
                "evidence too thin: best layout {} (score {best:.2}, margin {margin:.2})",
                layout.describe()
            ),
            confidence,
        );
    }
    let mut inference = label_inferred(comms, sigs, &scale, layout, margin, confidence);
    split_dp_from_ep(comms, sigs, &mut inference);
    inference
}

/// Every communicator `Unknown` for the reason given.
fn unknown_layout(comms: &Communicators, evidence: String, confidence: f64) -> LayoutInference {
    LayoutInference {
        sizes: None,
        comms: (0..comms.comms.len())
            .map(|i| CommParallelism {
                comm: i,
                parallelism: Parallelism::Unknown,
                evidence: evidence.clone(),
                confidence,
            })
            .collect(),
        evidence,
        confidence,
        signatures: Vec::new(),
    }
}

/// Labels from user-given sizes: each communicator by the group its rank set is.
fn label_given(comms: &Communicators, sizes: Sizes) -> LayoutInference {
    let out = comms
        .comms
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (p, ev) = match role(&sizes, &c.global_ranks) {
                Role::Dim(d) => (
                    d,
                    format!("rank set is a {} group of {}", d.name(), sizes.describe()),
                ),
                Role::Embedding => (
                    Parallelism::PP,
                    "first and last pipeline stage (tied embeddings)".to_string(),
                ),
                Role::Combined(ds) => (
                    Parallelism::Unknown,
                    format!(
                        "spans {}",
                        ds.iter().map(|d| d.name()).collect::<Vec<_>>().join("×")
                    ),
                ),
                Role::Single => (Parallelism::Unknown, "single rank".into()),
                Role::Unexplained => (
                    Parallelism::Unknown,
                    format!("rank set is no group of {}", sizes.describe()),
                ),
            };
            CommParallelism {
                comm: i,
                parallelism: p,
                evidence: ev,
                confidence: 1.0,
            }
        })
        .collect();
    let mut evidence = format!("given: {}", sizes.describe());
    if sizes.world() != comms.world_size {
        evidence.push_str(&format!(
            " (world {} but the logs show {} ranks)",
            sizes.world(),
            comms.world_size
        ));
    }
    LayoutInference {
        sizes: Some(sizes),
        comms: out,
        evidence,
        confidence: 1.0,
        signatures: Vec::new(),
    }
}

/// What "per iteration" means for this run.
struct Scale {
    /// Divisor and unit of the evidence's counts: the given iterations, else per rank.
    per: f64,
    unit: &'static str,
    /// Iterations, given or estimated: the scalar-collective rounds (Megatron issues about six
    /// scalar collectives per iteration: loss, grad norm, found-inf, zeros, timers), which are
    /// proportional to iterations in any run.
    rounds: f64,
}

impl Scale {
    fn of(comms: &Communicators, sigs: &[Signature], hints: &Hints) -> Scale {
        let (per, unit) = match hints.iterations {
            Some(n) if n > 0 => (n as f64, "per iteration"),
            _ => (1.0, "per rank"),
        };
        let rounds = match hints.iterations {
            Some(n) if n > 0 => n as f64,
            _ => {
                let mut tiny_per_rank: BTreeMap<u32, u64> = BTreeMap::new();
                for (c, s) in sigs.iter().enumerate() {
                    for &g in &comms.comms[c].global_ranks {
                        *tiny_per_rank.entry(g).or_default() += s.tiny;
                    }
                }
                let mut v: Vec<u64> = tiny_per_rank.into_values().collect();
                v.sort_unstable();
                (v.get(v.len() / 2).copied().unwrap_or(0) as f64 / 6.0).max(1.0)
            }
        };
        Scale { per, unit, rounds }
    }

    /// Payload collectives per iteration of a communicator.
    fn intensity(&self, s: &Signature) -> f64 {
        (s.payload() - s.p2p) as f64 / self.rounds
    }
}

/// Distinct rank sets (two ranks or more) and their communicators.
fn rank_sets(comms: &Communicators) -> BTreeMap<Vec<u32>, Vec<usize>> {
    let mut sets: BTreeMap<Vec<u32>, Vec<usize>> = BTreeMap::new();
    for (i, c) in comms.comms.iter().enumerate() {
        if c.global_ranks.len() >= 2 {
            sets.entry(c.global_ranks.clone()).or_default().push(i);
        }
    }
    sets
}

/// Every candidate layout with its score, best first: how well each communicator's signature
/// fits the label the layout gives its rank set, minus penalties for communicators the layout
/// cannot explain and groups it needs that the logs lack.
fn score_layouts(comms: &Communicators, sigs: &[Signature], scale: &Scale) -> Vec<(f64, Sizes)> {
    let world = comms.world_size;
    let sets = rank_sets(comms);
    let present: HashSet<&Vec<u32>> = sets.keys().collect();
    let mut sizes_seen: BTreeSet<u32> = comms.comms.iter().map(|c| c.size).collect();
    sizes_seen.insert(1);
    let n_comms = sets.values().map(|v| v.len()).sum::<usize>().max(1) as f64;
    let mut scored: Vec<(f64, Sizes)> = Vec::new();
    for layout in factorisations(world, &sizes_seen) {
        let mut by_dim: HashMap<Parallelism, (f64, usize)> = HashMap::new();
        let mut unexplained = 0usize;
        for (set, cs) in &sets {
            match role(&layout, set) {
                Role::Dim(d) => {
                    for &c in cs {
                        let s = &sigs[c];
                        // Tied-embedding AllReduce on a 2-stage pipeline shares the PP rank set.
                        let f = if d == Parallelism::PP && s.p2p == 0 {
                            0.0
                        } else {
                            fit(s, d, scale.intensity(s))
                        };
                        // Communicators with only scalar collectives carry no evidence.
                        if s.payload() > 0 {
                            let e = by_dim.entry(d).or_default();
                            e.0 += f;
                            e.1 += 1;
                        }
                    }
                }
                Role::Embedding | Role::Combined(_) | Role::Single => {}
                Role::Unexplained => unexplained += cs.len(),
            }
        }
        let mut score: f64 = by_dim.values().map(|(s, n)| s / *n as f64).sum();
        score -= 12.0 * unexplained as f64 / n_comms;
        for d in Parallelism::ORDER {
            if layout.size(d) <= 1 {
                continue;
            }
            score -= 0.1;
            let groups: Vec<Vec<u32>> = (0..world)
                .filter(|&r| layout.coord(r, d) == 0)
                .map(|r| layout.dim_group(r, d))
                .collect();
            let missing = groups.iter().filter(|g| !present.contains(g)).count();
            score -= 4.0 * missing as f64 / groups.len().max(1) as f64;
        }
        scored.push((score, layout));
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored
}

/// Evidence per dimension of `layout`: "k communicators of n consecutive ranks, ... → TP=n".
fn dim_evidence(
    comms: &Communicators,
    sigs: &[Signature],
    scale: &Scale,
    layout: &Sizes,
) -> HashMap<Parallelism, String> {
    let sets = rank_sets(comms);
    let mut out: HashMap<Parallelism, String> = HashMap::new();
    for d in Parallelism::ORDER {
        if layout.size(d) <= 1 {
            continue;
        }
        let members: Vec<usize> = sets
            .iter()
            .filter(|(set, _)| role(layout, set) == Role::Dim(d))
            .flat_map(|(_, cs)| cs.iter().copied())
            .collect();
        let Some(rep) = members.iter().copied().max_by_key(|&c| sigs[c].payload()) else {
            continue;
        };
        let set = &comms.comms[rep].global_ranks;
        out.insert(
            d,
            format!(
                "{} communicators of {} {} ranks, {} → {}={}",
                members.len(),
                set.len(),
                shape(set),
                describe_ops(&sigs[rep], scale.per, scale.unit, true),
                d.name(),
                layout.size(d)
            ),
        );
    }
    out
}

/// Every communicator's label under the inferred `layout`, with its evidence.
fn label_inferred(
    comms: &Communicators,
    sigs: &[Signature],
    scale: &Scale,
    layout: Sizes,
    margin: f64,
    confidence: f64,
) -> LayoutInference {
    let dim_evidence = dim_evidence(comms, sigs, scale, &layout);
    let out = comms
        .comms
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let r = role(&layout, &c.global_ranks);
            let explained = r != Role::Unexplained;
            let (p, ev) = match r {
                Role::Dim(d) => (
                    d,
                    format!(
                        "{}; this one: {}",
                        dim_evidence.get(&d).cloned().unwrap_or_default(),
                        describe_ops(&sigs[i], scale.per, scale.unit, false)
                    ),
                ),
                Role::Embedding => (
                    Parallelism::PP,
                    "first and last stage of a pipeline (tied embeddings)".to_string(),
                ),
                Role::Combined(ds) => (
                    Parallelism::Unknown,
                    format!(
                        "spans {} of {}",
                        ds.iter().map(|d| d.name()).collect::<Vec<_>>().join("×"),
                        layout.describe()
                    ),
                ),
                Role::Single => (Parallelism::Unknown, "single rank".into()),
                Role::Unexplained => (
                    Parallelism::Unknown,
                    format!("rank set is no group of {}", layout.describe()),
                ),
            };
            CommParallelism {
                comm: i,
                parallelism: p,
                evidence: ev,
                // "spans TP×PP" is as sure as the layout; an unexplained set is not sure at all.
                confidence: if explained { confidence } else { 0.0 },
            }
        })
        .collect();
    let mut evidence = format!("inferred {} (margin {margin:.2})", layout.describe());
    for d in Parallelism::ORDER {
        if let Some(e) = dim_evidence.get(&d) {
            evidence.push_str("; ");
            evidence.push_str(e);
        }
    }
    LayoutInference {
        sizes: Some(layout),
        comms: out,
        evidence,
        confidence,
        signatures: Vec::new(),
    }
}

/// What a communicator's operations say it is, between data and expert parallelism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DpOrEp {
    /// Token dispatch: grouped Send/Recv to every peer, an all-to-all, or AllGather with a
    /// routing map.
    Ep,
    /// Gradient reduction: AllReduce or ReduceScatter (+ AllGather) of payload size.
    Dp,
    /// Only scalars, or nothing: no say.
    Neither,
}

fn dp_or_ep(s: &Signature) -> DpOrEp {
    let payload = s.payload();
    let gather = s.ag + s.rs;
    if s.all_to_all || (gather > 0 && s.uint8_gather) {
        DpOrEp::Ep
    } else if payload > 0 && 2 * s.p2p < payload && s.ar + s.rs > 0 {
        DpOrEp::Dp
    } else {
        DpOrEp::Neither
    }
}

/// Within a rank set labelled DP or EP that holds communicators of both kinds (Megatron's expert
/// parallelism over the data-parallel ranks: one rank set, two communicators), each is labelled
/// by its own signature: dispatch (all-peer Send/Recv groups, all-to-all, AllGather with a
/// routing map) EP, gradient reduction (bucketed AllReduce or ReduceScatter) DP; the ones with
/// only scalars go with DP (the world group's barriers and loss averages).
fn split_dp_from_ep(comms: &Communicators, sigs: &[Signature], inference: &mut LayoutInference) {
    for cs in rank_sets(comms).values() {
        let dims: BTreeSet<Parallelism> =
            cs.iter().map(|&c| inference.comms[c].parallelism).collect();
        if cs.len() < 2
            || !dims
                .iter()
                .all(|d| matches!(d, Parallelism::DP | Parallelism::EP))
        {
            continue;
        }
        let kinds: Vec<DpOrEp> = cs.iter().map(|&c| dp_or_ep(&sigs[c])).collect();
        if !(kinds.contains(&DpOrEp::Ep) && kinds.contains(&DpOrEp::Dp)) {
            continue;
        }
        for (&c, kind) in cs.iter().zip(kinds) {
            let (p, why) = match kind {
                DpOrEp::Ep => (Parallelism::EP, "token dispatch"),
                DpOrEp::Dp => (Parallelism::DP, "gradient reduction"),
                DpOrEp::Neither => (
                    Parallelism::DP,
                    "only scalars, as the data-parallel group's",
                ),
            };
            let label = &mut inference.comms[c];
            label.parallelism = p;
            label.evidence = format!(
                "rank set shared by {} communicators, data and expert parallel; this one: {why} ({}) → {}",
                cs.len(),
                describe_ops(&sigs[c], 1.0, "per rank", false),
                p.name()
            );
        }
    }
}

/// Every (tp, cp, ep, dp, pp) with product `world` whose non-trivial sizes are all communicator
/// sizes seen in the logs (a dimension of size n has communicators of n ranks).
fn factorisations(world: u32, allowed: &BTreeSet<u32>) -> Vec<Sizes> {
    fn rec(i: usize, left: u32, cur: &mut Sizes, allowed: &BTreeSet<u32>, out: &mut Vec<Sizes>) {
        let d = Parallelism::ORDER[i];
        if i == Parallelism::ORDER.len() - 1 {
            if allowed.contains(&left) {
                cur.set(d, left);
                out.push(*cur);
            }
            return;
        }
        for &f in allowed
            .iter()
            .filter(|&&f| f >= 1 && left.is_multiple_of(f))
        {
            cur.set(d, f);
            rec(i + 1, left / f, cur, allowed, out);
        }
        cur.set(d, 1);
    }
    let mut out = Vec::new();
    rec(0, world, &mut Sizes::default(), allowed, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::communicators::group;
    use model::log::CommInit;

    struct Case {
        comms: Communicators,
        ops: Vec<LogOp>,
        truth: Vec<(Vec<u32>, String)>,
        layout: Sizes,
        iterations: u32,
    }

    fn load(name: &str) -> Case {
        let (run, inits, ops) = crate::test_support::preset_logs(name);
        let comms = group(&inits, &ops);
        let l = &run.truth.layout;
        Case {
            comms,
            ops,
            truth: run
                .truth
                .communicators
                .iter()
                .map(|c| {
                    let mut g = c.global_ranks.clone();
                    g.sort_unstable();
                    (g, c.parallelism.clone())
                })
                .collect(),
            layout: Sizes {
                tp: l.tp,
                cp: l.cp,
                ep: l.ep,
                dp: l.dp,
                pp: l.pp,
            },
            iterations: run.truth.model.iterations,
        }
    }

    /// (truth label, our label) per truth communicator, matched by commId-free rank set order:
    /// communicators with the same rank set are compared as multisets.
    fn compare(case: &Case, inf: &LayoutInference) -> Vec<String> {
        let mut ours: BTreeMap<Vec<u32>, Vec<String>> = BTreeMap::new();
        for cp in &inf.comms {
            ours.entry(case.comms.comms[cp.comm].global_ranks.clone())
                .or_default()
                .push(cp.parallelism.name().to_string());
        }
        let mut theirs: BTreeMap<Vec<u32>, Vec<String>> = BTreeMap::new();
        for (g, p) in &case.truth {
            theirs.entry(g.clone()).or_default().push(p.clone());
        }
        let mut diffs = Vec::new();
        for (g, mut t) in theirs {
            let mut o = ours.remove(&g).unwrap_or_default();
            t.sort();
            o.sort();
            if t != o {
                diffs.push(format!("{g:?}: truth {t:?}, ours {o:?}"));
            }
        }
        for (g, o) in ours {
            diffs.push(format!("{g:?}: not in truth, ours {o:?}"));
        }
        diffs
    }

    fn check(name: &str) {
        let case = load(name);
        assert_eq!(
            case.comms.comms.len(),
            case.truth.len(),
            "{name}: communicators"
        );
        // With user sizes: exact.
        let given = infer(
            &case.comms,
            &case.ops,
            &Hints {
                sizes: Some(case.layout),
                iterations: None,
            },
        );
        let d = compare(&case, &given);
        assert!(d.is_empty(), "{name} with sizes: {d:#?}");
        // Inferred, with and without the iteration count.
        for iterations in [Some(case.iterations), None] {
            let inf = infer(
                &case.comms,
                &case.ops,
                &Hints {
                    sizes: None,
                    iterations,
                },
            );
            let d = compare(&case, &inf);
            assert!(
                d.is_empty(),
                "{name} inferred ({iterations:?}): {d:#?}\n{}",
                inf.evidence
            );
            assert_eq!(inf.sizes, Some(case.layout), "{name}: {}", inf.evidence);
            assert!(inf.confidence > 0.5, "{name}: {}", inf.evidence);
        }
    }

    #[test]
    fn dp4() {
        check("dp4");
    }

    #[test]
    fn tp4() {
        check("tp4");
    }

    #[test]
    fn pp4() {
        check("pp4");
    }

    #[test]
    fn tp2pp2() {
        check("tp2pp2");
    }

    #[test]
    fn ep4_alltoall() {
        check("ep4-alltoall");
    }

    /// Inference on every small preset, printed (the crate report's table):
    /// `cargo test -p enrich --release survey -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn survey() {
        for name in [
            "dp4",
            "dp4-distopt",
            "tp4",
            "tp4-sp",
            "pp4",
            "pp4-vpp2",
            "tp2pp2",
            "ep4-alltoall",
            "ep4-allgather",
            "demo",
            "align-nodrop",
            "large-64",
        ] {
            let case = load(name);
            let inf = infer(
                &case.comms,
                &case.ops,
                &Hints {
                    sizes: None,
                    iterations: Some(case.iterations),
                },
            );
            let d = compare(&case, &inf);
            println!(
                "{name}: ok={} conf={:.2} sizes={:?} truth={:?}\n  {}\n  diffs {d:?}",
                d.is_empty(),
                inf.confidence,
                inf.sizes.map(|s| s.describe()),
                case.layout.describe(),
                inf.evidence
            );
        }
    }

    #[test]
    fn megatron_groups() {
        let s = Sizes {
            tp: 2,
            pp: 2,
            dp: 2,
            ..Sizes::default()
        };
        assert_eq!(s.group(0, &[Parallelism::TP]), vec![0, 1]);
        assert_eq!(s.group(0, &[Parallelism::DP]), vec![0, 2]);
        assert_eq!(s.group(0, &[Parallelism::PP]), vec![0, 4]);
        assert_eq!(s.dim_group(5, Parallelism::PP), vec![1, 5]);
        assert_eq!(
            s.group(5, &[Parallelism::TP, Parallelism::PP]),
            vec![0, 1, 4, 5]
        );
        assert_eq!(
            role(&s, &[0, 1, 4, 5]),
            Role::Combined(vec![Parallelism::TP, Parallelism::PP])
        );
        assert_eq!(role(&s, &[0, 3]), Role::Unexplained);
    }

    #[test]
    fn thin_evidence_is_unknown() {
        let case = load("dp4");
        // Only the world communicator's scalar collectives: nothing tells DP from TP.
        let world_ops: Vec<LogOp> = case
            .ops
            .iter()
            .filter(|o| o.msg_bytes() < 1024)
            .cloned()
            .collect();
        let inf = infer(&case.comms, &world_ops, &Hints::default());
        assert!(
            inf.comms
                .iter()
                .all(|c| c.parallelism == Parallelism::Unknown),
            "{}",
            inf.evidence
        );
    }

    /// Analyses of disjoint parts of a run (here the most extreme split: every process alone)
    /// combined by communicator id label the run exactly as its whole analysis does: the
    /// combined signatures equal the whole run's, and so do the labels and the layout.
    #[test]
    fn signatures_of_parts_combine_into_the_whole_runs_inference() {
        for name in ["demo", "tp2pp2", "ep4-alltoall", "pp4-vpp2", "tp4-sp"] {
            let (run, inits, ops) = crate::test_support::preset_logs(name);
            let whole = group(&inits, &ops);
            assert!(
                whole.comms.iter().all(|c| c.id.starts_with("0x")),
                "{name}: communicators need their commId to be combined"
            );
            for iterations in [Some(run.truth.model.iterations), None] {
                let hints = Hints {
                    sizes: None,
                    iterations,
                };
                let expected = infer(&whole, &ops, &hints);
                let mut combined: Vec<Option<Signature>> = vec![None; whole.comms.len()];
                let processes: BTreeSet<ProcessKey> =
                    ops.iter().map(|o| o.process.clone()).collect();
                for p in &processes {
                    let part_inits: Vec<CommInit> =
                        inits.iter().filter(|i| &i.process == p).cloned().collect();
                    let part_ops: Vec<&LogOp> = ops.iter().filter(|o| &o.process == p).collect();
                    let part = group(&part_inits, part_ops.iter().copied());
                    let inf = infer(&part, part_ops.iter().copied(), &hints);
                    for (c, sig) in part.comms.iter().zip(inf.signatures) {
                        let at = whole.comms.iter().position(|w| w.id == c.id).unwrap();
                        combined[at] = Some(match combined[at].take() {
                            Some(a) => Signature::combine(a, sig),
                            None => sig,
                        });
                    }
                }
                let sigs = combined
                    .into_iter()
                    .map(Option::unwrap_or_default)
                    .collect();
                let got = infer_from_signatures(&whole, sigs, &hints);
                assert_eq!(got, expected, "{name} ({iterations:?})");
                assert!(
                    got.comms
                        .iter()
                        .any(|c| c.parallelism != Parallelism::Unknown),
                    "{name}: some communicator is labelled"
                );
            }
        }
    }
}
