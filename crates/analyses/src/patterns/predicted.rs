//! The matrix the layout implies (seed 003, §3.1: "the communication matrix can be directly
//! determined without running the model"), and where the observed one departs from it.
//!
//! From the layout's sizes (given by the user, or inferred: [`enrich::LayoutInference`]) in
//! Megatron's rank order (TP fastest, then CP, EP, DP, PP), every rank:
//! - reduces round the textbook ring of its TP, CP and DP groups (its successor in the group);
//! - exchanges with every other member of its EP group (all-to-all);
//! - sends point to point to the same-position rank of the neighbouring pipeline stages, and
//!   (more than two stages) reduces the tied embedding with the other end of its pipeline.
//!
//! With a model ([`theory::TheoryConfig`]), each entry carries the theory's bytes for it: the
//! rank's volume of that parallelism and operation (`theory::estimate`, all iterations) to its
//! ring successor; a pipeline rank's Send volume split evenly between its neighbour stages; the
//! all-to-all volume evenly between its peers. Without a model the entries say who talks to whom.
//!
//! NCCL does not use the textbook ring when its topology search finds a better one, so the
//! comparison is by group, not by ring pair: an observed transfer is *expected* when both ranks
//! share the group of its parallelism (or, for PP, are neighbouring stages of one pipeline or its
//! two ends); a rank of a group that sent nothing within it is *silent*; a pipeline pair, or an
//! expert pair where the experts exchange point to point (the all-to-all dispatcher), that the
//! layout implies with no traffic either way is *missing*.

use super::matrix::{CommMatrix, MatrixEntry};
use super::notes::{Note, Notes};
use enrich::{LayoutInference, Parallelism, Sizes};
use model::OpType;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use theory::TheoryConfig;

/// The layout's sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutSizes {
    pub tp: u32,
    pub cp: u32,
    pub ep: u32,
    pub dp: u32,
    pub pp: u32,
}

/// One predicted cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictedEntry {
    pub src: u32,
    pub dst: u32,
    pub parallelism: String,
    /// The operation and bytes the theory gives (`None` without a model).
    pub op: Option<String>,
    pub bytes: Option<u64>,
}

/// A pair, and the parallelism it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairRef {
    pub src: u32,
    pub dst: u32,
    pub parallelism: String,
}

/// A rank that sent nothing within its group of a parallelism.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Silent {
    pub rank: u32,
    pub parallelism: String,
}

/// Observed against predicted bytes of one parallelism (all ranks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParallelismBytes {
    pub parallelism: String,
    pub observed_bytes: u64,
    pub predicted_bytes: Option<u64>,
}

/// The predicted matrix and the observed one's departures from it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PredictedMatrix {
    /// The layout used; `None` when none was given or inferred (then nothing is predicted).
    pub sizes: Option<LayoutSizes>,
    /// Sorted by (src, dst, parallelism).
    pub entries: Vec<PredictedEntry>,
    /// Observed transfers between ranks that share no group of their parallelism.
    pub unexpected: Vec<MatrixEntry>,
    pub missing: Vec<PairRef>,
    pub silent: Vec<Silent>,
    pub by_parallelism: Vec<ParallelismBytes>,
    pub notes: Vec<Note>,
}

/// The predicted matrix of `layout` (with the theory's bytes for `config`), compared with the
/// observed `matrix`.
pub fn predicted_matrix(
    layout: &LayoutInference,
    config: Option<&TheoryConfig>,
    matrix: &CommMatrix,
) -> PredictedMatrix {
    let mut notes = Notes::default();
    let Some(sizes) = layout.sizes.filter(|s| s.world() > 0) else {
        notes.add(
            "no-layout",
            "no layout was given or could be inferred: nothing is predicted",
            1,
            None,
        );
        return PredictedMatrix {
            notes: notes.into_vec(),
            ..PredictedMatrix::default()
        };
    };
    let volumes = config.map(|c| theory_volumes(c, &sizes, &mut notes));
    let mut entries = Vec::new();
    for r in 0..sizes.world() {
        for (dst, par, weight) in pairs_of(&sizes, r) {
            let by_op: Vec<(OpType, f64)> = volumes
                .as_ref()
                .map(|v| {
                    v.get(&(par, role(&sizes, r)))
                        .into_iter()
                        .flatten()
                        .filter(|(op, _)| *op != OpType::Recv)
                        .map(|(op, b)| (*op, b * weight.share(*op)))
                        .collect()
                })
                .unwrap_or_default();
            let kept: Vec<(OpType, f64)> = by_op.into_iter().filter(|(_, b)| *b > 0.0).collect();
            if kept.is_empty() {
                entries.push(PredictedEntry {
                    src: r,
                    dst,
                    parallelism: par.name().into(),
                    op: None,
                    bytes: None,
                });
            }
            for (op, b) in kept {
                entries.push(PredictedEntry {
                    src: r,
                    dst,
                    parallelism: par.name().into(),
                    op: Some(op.name().into()),
                    bytes: Some(b.round() as u64),
                });
            }
        }
    }
    entries.dedup();
    let (unexpected, missing, silent) = compare(&sizes, &entries, matrix);
    let by_parallelism = totals(&entries, matrix, volumes.is_some());
    PredictedMatrix {
        sizes: Some(LayoutSizes {
            tp: sizes.tp,
            cp: sizes.cp,
            ep: sizes.ep,
            dp: sizes.dp,
            pp: sizes.pp,
        }),
        entries,
        unexpected,
        missing,
        silent,
        by_parallelism,
        notes: notes.into_vec(),
    }
}

/// How a rank's theory volume of one parallelism is shared out over one of its pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Weight {
    /// The ring successor: all of it.
    Ring,
    /// One of `n` peers (pipeline neighbours, all-to-all peers): `1/n` of the point-to-point
    /// and all-to-all volume, all of a ring collective's (the EP group's AllGather dispatcher
    /// goes round its ring: counted at the successor only).
    Peer { n: u32, successor: bool },
    /// The embedding ends of a pipeline: the AllReduce the theory does not model.
    Embedding,
}

impl Weight {
    fn share(self, op: OpType) -> f64 {
        match self {
            Weight::Ring => 1.0,
            Weight::Peer { n, successor } => match op {
                OpType::Send | OpType::AllToAll => 1.0 / f64::from(n.max(1)),
                _ if successor => 1.0,
                _ => 0.0,
            },
            Weight::Embedding => 0.0,
        }
    }
}

/// Every pair rank `r` sends to under `sizes`, with its parallelism and weight.
fn pairs_of(sizes: &Sizes, r: u32) -> Vec<(u32, Parallelism, Weight)> {
    let mut out = Vec::new();
    for d in [Parallelism::TP, Parallelism::CP, Parallelism::DP] {
        if sizes.size(d) > 1 {
            let g = sizes.dim_group(r, d);
            let i = sizes.coord(r, d) as usize;
            out.push((g[(i + 1) % g.len()], d, Weight::Ring));
        }
    }
    if sizes.ep > 1 {
        let g = sizes.dim_group(r, Parallelism::EP);
        let i = sizes.coord(r, Parallelism::EP) as usize;
        let next = g[(i + 1) % g.len()];
        for &q in g.iter().filter(|&&q| q != r) {
            let n = sizes.ep - 1;
            out.push((
                q,
                Parallelism::EP,
                Weight::Peer {
                    n,
                    successor: q == next,
                },
            ));
        }
    }
    if sizes.pp > 1 {
        let g = sizes.dim_group(r, Parallelism::PP);
        let s = sizes.coord(r, Parallelism::PP) as usize;
        let neighbours: Vec<u32> = [s.checked_sub(1), Some(s + 1)]
            .into_iter()
            .flatten()
            .filter_map(|i| g.get(i).copied())
            .collect();
        let n = neighbours.len() as u32;
        for q in neighbours {
            out.push((
                q,
                Parallelism::PP,
                Weight::Peer {
                    n,
                    successor: false,
                },
            ));
        }
        let last = g.len() - 1;
        if sizes.pp > 2 && (s == 0 || s == last) {
            let other = if s == 0 { g[last] } else { g[0] };
            out.push((other, Parallelism::PP, Weight::Embedding));
        }
    }
    out
}

/// A rank's pipeline role for the theory's entries.
fn role(sizes: &Sizes, r: u32) -> theory::RankRole {
    let s = sizes.coord(r, Parallelism::PP);
    if s == 0 || s + 1 == sizes.pp {
        theory::RankRole::Edge
    } else {
        theory::RankRole::Middle
    }
}

/// The theory's per-rank volumes by (parallelism, rank role) and operation; entries for every
/// role (`All`) are filed under both pipeline roles.
fn theory_volumes(
    config: &TheoryConfig,
    sizes: &Sizes,
    notes: &mut Notes,
) -> FxHashMap<(Parallelism, theory::RankRole), Vec<(OpType, f64)>> {
    let p = &config.parallel;
    let same = (p.tp, p.cp, p.ep, p.dp, p.pp)
        == (
            u64::from(sizes.tp),
            u64::from(sizes.cp),
            u64::from(sizes.ep),
            u64::from(sizes.dp),
            u64::from(sizes.pp),
        );
    if !same {
        notes.add(
            "layout-differs",
            "the model's [parallel] sizes differ from the layout used: the theory's bytes are for the model's",
            1,
            None,
        );
    }
    if p.cp > 1 {
        notes.add(
            "cp-gradients",
            "with context parallelism the theory reduces gradients over DP×CP; they are predicted round the DP ring",
            1,
            None,
        );
    }
    let mut out: FxHashMap<(Parallelism, theory::RankRole), Vec<(OpType, f64)>> =
        FxHashMap::default();
    for e in theory::estimate(config) {
        let par = match e.parallelism {
            theory::Parallelism::Dp => Parallelism::DP,
            theory::Parallelism::Tp => Parallelism::TP,
            theory::Parallelism::Cp => Parallelism::CP,
            theory::Parallelism::Pp => Parallelism::PP,
            theory::Parallelism::Ep => Parallelism::EP,
            theory::Parallelism::All => continue,
        };
        let roles = match e.rank_role {
            theory::RankRole::All => vec![theory::RankRole::Edge, theory::RankRole::Middle],
            r => vec![r],
        };
        for r in roles {
            out.insert((par, r), e.by_op.clone());
        }
    }
    out
}

/// Whether `a` and `b` share `par`'s group (PP: neighbouring stages or the two ends).
fn same_group(sizes: &Sizes, par: Parallelism, a: u32, b: u32) -> bool {
    if a >= sizes.world() || b >= sizes.world() {
        return false;
    }
    let others = Parallelism::ORDER
        .iter()
        .filter(|&&d| d != par)
        .all(|&d| sizes.coord(a, d) == sizes.coord(b, d));
    if !others {
        return false;
    }
    if par == Parallelism::PP {
        let (x, y) = (sizes.coord(a, par), sizes.coord(b, par));
        return x.abs_diff(y) == 1 || x.abs_diff(y) + 1 == sizes.pp;
    }
    true
}

type Departures = (Vec<MatrixEntry>, Vec<PairRef>, Vec<Silent>);

fn compare(sizes: &Sizes, predicted: &[PredictedEntry], matrix: &CommMatrix) -> Departures {
    let unexpected: Vec<MatrixEntry> = matrix
        .entries
        .iter()
        .filter(|e| {
            let par = parallelism(&e.parallelism);
            par != Parallelism::Unknown && !same_group(sizes, par, e.src, e.dst)
        })
        .cloned()
        .collect();
    let observed: FxHashSet<(u32, u32, &str)> = matrix
        .entries
        .iter()
        .map(|e| (e.src, e.dst, e.parallelism.as_str()))
        .collect();
    let talked =
        |a: u32, b: u32, p: &str| observed.contains(&(a, b, p)) || observed.contains(&(b, a, p));
    // Expert pairs are all-to-all only with the all-to-all dispatcher (point-to-point traffic
    // on the expert groups); the AllGather dispatcher goes round a ring.
    let all_to_all = matrix
        .entries
        .iter()
        .any(|e| e.parallelism == "EP" && (e.op == "Send" || e.op == "AllToAll"));
    let mut missing: Vec<PairRef> = predicted
        .iter()
        .filter(|e| e.parallelism == "PP" || (e.parallelism == "EP" && all_to_all))
        .filter(|e| !talked(e.src, e.dst, &e.parallelism))
        .map(|e| PairRef {
            src: e.src,
            dst: e.dst,
            parallelism: e.parallelism.clone(),
        })
        .collect();
    missing.dedup();
    // Ring parallelisms: every member sends somewhere in its group (which peer is NCCL's choice).
    let mut sends: FxHashSet<(u32, &str)> = FxHashSet::default();
    for e in &matrix.entries {
        let par = parallelism(&e.parallelism);
        if par != Parallelism::Unknown && same_group(sizes, par, e.src, e.dst) {
            sends.insert((e.src, e.parallelism.as_str()));
        }
    }
    let mut silent = Vec::new();
    for d in [Parallelism::TP, Parallelism::CP, Parallelism::DP] {
        if sizes.size(d) <= 1 || !matrix.entries.iter().any(|e| e.parallelism == d.name()) {
            continue;
        }
        for r in 0..sizes.world() {
            if !sends.contains(&(r, d.name())) {
                silent.push(Silent {
                    rank: r,
                    parallelism: d.name().into(),
                });
            }
        }
    }
    (unexpected, missing, silent)
}

fn parallelism(name: &str) -> Parallelism {
    Parallelism::ORDER
        .iter()
        .copied()
        .find(|p| p.name() == name)
        .unwrap_or(Parallelism::Unknown)
}

fn totals(entries: &[PredictedEntry], matrix: &CommMatrix, theory: bool) -> Vec<ParallelismBytes> {
    Parallelism::ORDER
        .iter()
        .chain(&[Parallelism::Unknown])
        .filter_map(|p| {
            let name = p.name();
            let observed: u64 = matrix
                .entries
                .iter()
                .filter(|e| e.parallelism == name)
                .map(|e| e.bytes)
                .sum();
            let predicted: u64 = entries
                .iter()
                .filter(|e| e.parallelism == name)
                .filter_map(|e| e.bytes)
                .sum();
            let any = entries.iter().any(|e| e.parallelism == name);
            (observed > 0 || any).then(|| ParallelismBytes {
                parallelism: name.into(),
                observed_bytes: observed,
                predicted_bytes: (theory && any).then_some(predicted),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(tp: u32, dp: u32, pp: u32, ep: u32) -> Sizes {
        Sizes {
            tp,
            cp: 1,
            ep,
            dp,
            pp,
        }
    }

    fn layout(s: Sizes) -> LayoutInference {
        LayoutInference {
            sizes: Some(s),
            comms: Vec::new(),
            evidence: String::new(),
            confidence: 1.0,
            signatures: Vec::new(),
        }
    }

    fn entry(src: u32, dst: u32, par: &str) -> MatrixEntry {
        MatrixEntry {
            src,
            dst,
            parallelism: par.into(),
            op: "AllReduce".into(),
            bytes: 100,
            time_ns: 0,
        }
    }

    /// Seed 003's figure 4: (p, t, d) = (4, 2, 4) on 32 GPUs. Rank 9 is TP 1, DP 0 of stage 1
    /// (Megatron order: TP fastest, then DP, then PP): its TP ring successor is 8, its DP ring
    /// successor 11, its pipeline neighbours 1 and 17.
    #[test]
    fn the_seed_figure_layout() {
        let s = sizes(2, 4, 4, 1);
        let pairs: Vec<(u32, Parallelism)> = pairs_of(&s, 9).iter().map(|p| (p.0, p.1)).collect();
        assert_eq!(
            pairs,
            vec![
                (8, Parallelism::TP),
                (11, Parallelism::DP),
                (1, Parallelism::PP),
                (17, Parallelism::PP)
            ]
        );
        // Stage 0's rank 1: one neighbour, and the embedding group's other end, rank 25.
        let pairs: Vec<u32> = pairs_of(&s, 1).iter().map(|p| p.0).collect();
        assert_eq!(pairs, vec![0, 3, 9, 25]);
        assert!(same_group(&s, Parallelism::PP, 1, 25));
        assert!(!same_group(&s, Parallelism::PP, 1, 17));
        assert!(same_group(&s, Parallelism::DP, 9, 15));
        assert!(!same_group(&s, Parallelism::DP, 9, 16));
    }

    #[test]
    fn departures_are_found_by_group() {
        let s = sizes(2, 2, 1, 1);
        // TP pairs (0,1), (2,3); DP pairs (0,2), (1,3). Rank 3 sends no DP; 0 → 3 is no group.
        let matrix = CommMatrix {
            entries: vec![
                entry(0, 1, "TP"),
                entry(0, 2, "DP"),
                entry(0, 3, "DP"),
                entry(1, 0, "TP"),
                entry(1, 3, "DP"),
                entry(2, 0, "DP"),
                entry(2, 3, "TP"),
                entry(3, 2, "TP"),
            ],
            ..CommMatrix::default()
        };
        let p = predicted_matrix(&layout(s), None, &matrix);
        assert_eq!(p.unexpected, vec![entry(0, 3, "DP")]);
        assert_eq!(
            p.silent,
            vec![Silent {
                rank: 3,
                parallelism: "DP".into()
            }]
        );
        assert!(p.missing.is_empty());
        assert_eq!(p.entries.len(), 8);
        assert!(p.entries.iter().all(|e| e.bytes.is_none()));
    }

    #[test]
    fn theory_bytes_are_shared_over_the_pairs() {
        let cfg = TheoryConfig::from_toml("[parallel]\ndp = 1\npp = 4\n").unwrap();
        let s = sizes(1, 1, 4, 1);
        let p = predicted_matrix(&layout(s), Some(&cfg), &CommMatrix::default());
        let pp = theory::estimate(&cfg);
        let edge = pp
            .iter()
            .find(|e| e.rank_role == theory::RankRole::Edge)
            .unwrap();
        let send = edge.by_op.iter().find(|o| o.0 == OpType::Send).unwrap().1;
        // Rank 0 (an edge) has one neighbour: all its Send volume goes to rank 1.
        let e01 = p.entries.iter().find(|e| e.src == 0 && e.dst == 1).unwrap();
        assert_eq!(e01.bytes, Some(send.round() as u64));
        assert_eq!(e01.op.as_deref(), Some("Send"));
        // A middle rank splits its Send volume between its two neighbours.
        let middle = pp
            .iter()
            .find(|e| e.rank_role == theory::RankRole::Middle)
            .unwrap();
        let send = middle.by_op.iter().find(|o| o.0 == OpType::Send).unwrap().1;
        let e12 = p.entries.iter().find(|e| e.src == 1 && e.dst == 2).unwrap();
        assert_eq!(e12.bytes, Some((send / 2.0).round() as u64));
        // The embedding pair is predicted, with no theory bytes.
        let e03 = p.entries.iter().find(|e| e.src == 0 && e.dst == 3).unwrap();
        assert_eq!(e03.bytes, None);
        let no = predicted_matrix(
            &LayoutInference {
                sizes: None,
                ..layout(s)
            },
            None,
            &CommMatrix::default(),
        );
        assert_eq!(no.notes[0].kind, "no-layout");
    }
}
