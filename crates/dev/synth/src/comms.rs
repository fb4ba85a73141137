//! Communicators: one per parallel group (plus the world), with per-process pointers and a
//! shared commId. Why: in real logs the pointer differs per process and only the commId (or the
//! operation sequence) ties members together; the analyzer must rebuild exactly this.

use crate::layout::{Dim, Layout};
use crate::rng::Rng;
use std::collections::HashMap;

#[derive(Debug, Clone)]
pub struct Communicator {
    pub index: usize,
    /// "TP", "PP", "DP", "EP", "CP" or "unknown" (the world, when it is no single group).
    pub parallelism: &'static str,
    pub global_ranks: Vec<u32>,
    /// The hash NCCL prints as `commId 0x...`, identical on every member.
    pub comm_id: u64,
    /// `comm 0x...` as printed by each member (same order as `global_ranks`).
    pub pointers: Vec<u64>,
    /// `stream 0x...` per member (PyTorch gives every process group its own NCCL stream).
    pub streams: Vec<u64>,
    /// Nsight streamId per member for that stream.
    pub stream_ids: Vec<u32>,
}

impl Communicator {
    pub fn size(&self) -> u32 {
        self.global_ranks.len() as u32
    }

    /// Rank of `global` inside this communicator.
    pub fn member(&self, global: u32) -> usize {
        self.global_ranks
            .iter()
            .position(|&r| r == global)
            .expect("rank is a member")
    }
}

enum Extra {
    ModelParallel,
    Embedding,
}

#[derive(Debug, Clone)]
pub struct Comms {
    pub list: Vec<Communicator>,
    pub world: usize,
    by_dim: HashMap<(Dim, u32), usize>,
    model_parallel: HashMap<u32, usize>,
    embedding: HashMap<u32, usize>,
    /// Communicators each rank belongs to, in creation (init) order.
    pub of_rank: Vec<Vec<usize>>,
}

impl Comms {
    pub fn build(layout: &Layout, seed: u64) -> Comms {
        Self::build_with(layout, seed, false)
    }

    /// [`Comms::build`]; with `ep_over_dp` (and no EP dimension) also an EP communicator over
    /// each DP group's ranks, as Megatron's expert parallelism inside data parallelism gives
    /// ([`crate::realism::Realism::moe_over_dp`]).
    pub fn build_with(layout: &Layout, seed: u64, ep_over_dp: bool) -> Comms {
        let mut rng = Rng::derive(seed, 0xC0);
        let world_ranks: Vec<u32> = (0..layout.world()).collect();
        let mut sets: Vec<(&'static str, Vec<u32>, Option<Dim>)> = Vec::new();
        let world_label = Dim::ORDER
            .iter()
            .find(|d| layout.size(**d) == layout.world() && layout.world() > 1)
            .map(|d| d.name())
            .unwrap_or("unknown");
        sets.push((world_label, world_ranks, None));
        // Megatron creates groups in this order: DP, CP, model-parallel, TP, PP, embedding, EP.
        let mut extra: Vec<(usize, Extra)> = Vec::new();
        for d in [Dim::DP, Dim::CP, Dim::TP, Dim::PP, Dim::EP] {
            if d == Dim::TP && layout.tp * layout.pp * layout.cp > 1 {
                // Model-parallel group (TP × CP × PP): gradient norm, found-inf and zero counts.
                let dims = [Dim::TP, Dim::CP, Dim::PP];
                let label = match dims
                    .iter()
                    .filter(|d| layout.size(**d) > 1)
                    .collect::<Vec<_>>()[..]
                {
                    [one] => one.name(),
                    _ => "unknown",
                };
                let mut seen = std::collections::BTreeSet::new();
                for r in 0..layout.world() {
                    let mut g: Vec<u32> = (0..layout.world())
                        .filter(|&q| {
                            layout.coord(q, Dim::EP) == layout.coord(r, Dim::EP)
                                && layout.coord(q, Dim::DP) == layout.coord(r, Dim::DP)
                        })
                        .collect();
                    g.sort_unstable();
                    if seen.insert(g.clone()) {
                        extra.push((sets.len(), Extra::ModelParallel));
                        sets.push((label, g, None));
                    }
                }
            }
            if layout.size(d) > 1 {
                for g in layout.groups(d) {
                    sets.push((d.name(), g, Some(d)));
                }
            } else if d == Dim::EP && ep_over_dp && layout.dp > 1 {
                for g in layout.groups(Dim::DP) {
                    sets.push(("EP", g, Some(Dim::EP)));
                }
            }
            if d == Dim::PP && layout.pp > 1 {
                // Embedding group: first and last stage share the word embeddings.
                for g in layout.groups(Dim::PP) {
                    extra.push((sets.len(), Extra::Embedding));
                    sets.push(("PP", vec![g[0], g[g.len() - 1]], None));
                }
            }
        }
        let mut model_parallel = HashMap::new();
        let mut embedding = HashMap::new();
        for (i, kind) in &extra {
            for &r in &sets[*i].1 {
                match kind {
                    Extra::ModelParallel => model_parallel.insert(r, *i),
                    Extra::Embedding => embedding.insert(r, *i),
                };
            }
        }
        let n = layout.world() as usize;
        let mut of_rank = vec![Vec::new(); n];
        let mut by_dim = HashMap::new();
        let mut per_rank_streams = vec![0u32; n];
        let mut list = Vec::new();
        for (index, (label, ranks, dim)) in sets.into_iter().enumerate() {
            let comm_id = rng.next_u64();
            let mut pointers = Vec::new();
            let mut streams = Vec::new();
            let mut stream_ids = Vec::new();
            for &r in &ranks {
                pointers.push(0x5500_0000_0000 + (rng.range(0x10_0000, 0xff_ffff_ff00) & !0xf));
                streams.push(0x5500_0000_0000 + (rng.range(0x10_0000, 0xff_ffff_ff00) & !0xf));
                let k = per_rank_streams[r as usize];
                per_rank_streams[r as usize] += 1;
                stream_ids.push(13 + 4 * k);
                of_rank[r as usize].push(index);
                if let Some(d) = dim {
                    by_dim.insert((d, r), index);
                }
            }
            list.push(Communicator {
                index,
                parallelism: label,
                global_ranks: ranks,
                comm_id,
                pointers,
                streams,
                stream_ids,
            });
        }
        Comms {
            list,
            world: 0,
            by_dim,
            model_parallel,
            embedding,
            of_rank,
        }
    }

    /// `rank`'s model-parallel group (TP × CP × PP), when larger than 1.
    pub fn model_parallel(&self, rank: u32) -> Option<usize> {
        self.model_parallel.get(&rank).copied()
    }

    /// `rank`'s embedding group (first and last pipeline stage), when it is in one.
    pub fn embedding(&self, rank: u32) -> Option<usize> {
        self.embedding.get(&rank).copied()
    }

    /// The communicator of `rank`'s group along `d`, if that dimension is larger than 1.
    pub fn of(&self, rank: u32, d: Dim) -> Option<usize> {
        self.by_dim.get(&(d, rank)).copied()
    }
}
