//! Observed communication volume per rank and per parallelism, from the logs (every operation
//! a process printed, not only those matched to kernels, as the thesis measures it, §5.3.5).
//!
//! Why link traffic and not message sizes: the theory's formulas (thesis §2.4) count the bytes
//! a rank moves over its links — a ring AllReduce of S bytes moves 2(n−1)/n·S per rank, an
//! AllGather of a per-rank count c moves (n−1)·c — so the observation must count the same way to
//! be comparable. That is nccl-tests' "bus bytes": the operation's bytes times the bus factor
//! of the ring algorithm. A Send and a Recv each count their message once, as the pipeline
//! formula counts both directions of a stage boundary.
//!
//! A line printed twice by the same process (same communicator, opCount, operation, buffers and
//! count: the duplicated logging of the thesis' tables 4.1 and 4.2) is one operation.

use crate::session::Session;
use enrich::{bandwidth, Communicators, LayoutInference, Parallelism};
use model::log::{LogOp, ProcessKey};
use model::OpType;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

/// One rank's observed volume.
#[derive(Debug, Clone, PartialEq)]
pub struct RankVolume {
    pub global_rank: u32,
    pub process: ProcessKey,
    /// Link-traffic bytes per parallelism of the communicator that carried them; operations on
    /// a communicator with no label count under [`Parallelism::Unknown`].
    pub by_parallelism: BTreeMap<Parallelism, u64>,
    /// The same traffic split by operation type, per parallelism.
    pub by_parallelism_op: BTreeMap<(Parallelism, OpType), u64>,
    /// Operations per parallelism and power-of-two bucket of `count × sizeof(datatype)` (the
    /// thesis' figure 5.30 histogram, whose TP peak sits at b·s·h·β).
    pub message_sizes: BTreeMap<Parallelism, BTreeMap<u64, u64>>,
}

impl RankVolume {
    /// Every parallelism together.
    pub fn total(&self) -> u64 {
        self.by_parallelism.values().sum()
    }
}

/// The link traffic of one logged operation for one rank (ring bus bytes).
pub fn traffic_bytes(op: &LogOp) -> u64 {
    let n = op.nranks.max(1);
    let size = op.datatype.map_or(0, |d| d.size_bytes());
    let bytes = bandwidth::op_bytes(op.op, op.count, size, n);
    (bytes as f64 * bandwidth::bus_factor(op.op, None, n)).round() as u64
}

/// What makes a logged operation itself: process, communicator, opCount, operation, root or
/// peer, count, send and receive buffers.
type LineKey = (ProcessKey, u64, u64, OpType, i64, u64, u64, u64);

fn line_key(op: &LogOp) -> LineKey {
    (
        op.process.clone(),
        op.comm,
        op.op_count,
        op.op,
        op.root,
        op.count,
        op.sendbuff,
        op.recvbuff,
    )
}

/// Where a line is: (log, operation) in the session.
type LineAt = (u32, u32);

/// The lines seen so far, by [`LineKey`]: each line is kept as a 64-bit hash of its key and
/// where the line is (a set of the keys themselves took several times the memory of the
/// records at millions of lines); lines whose hash an earlier, different line already holds go
/// to a set of whole keys, so the answer is exact.
#[derive(Default)]
struct LineSet<S = BuildHasherDefault<DefaultHasher>> {
    hasher: S,
    by_hash: HashMap<u64, LineAt>,
    collided: HashSet<LineKey>,
}

impl<S: BuildHasher> LineSet<S> {
    /// Whether `op`, the line at `at`, is new (and now seen); `line` reads an earlier line back.
    fn insert(&mut self, at: LineAt, op: &LogOp, line: impl Fn(LineAt) -> Option<LogOp>) -> bool {
        let key = line_key(op);
        match self.by_hash.entry(self.hasher.hash_one(&key)) {
            Entry::Vacant(e) => {
                e.insert(at);
                true
            }
            Entry::Occupied(e) if line(*e.get()).is_some_and(|o| line_key(&o) == key) => false,
            Entry::Occupied(_) => self.collided.insert(key),
        }
    }
}

/// Every ranked process's observed volume, ordered by global rank.
pub fn observed_volumes(
    session: &Session,
    communicators: &Communicators,
    layout: &LayoutInference,
) -> Vec<RankVolume> {
    let label = |c: usize| {
        layout
            .comms
            .iter()
            .find(|l| l.comm == c)
            .map_or(Parallelism::Unknown, |l| l.parallelism)
    };
    let mut seen: LineSet = LineSet::default();
    let mut out: BTreeMap<u32, RankVolume> = BTreeMap::new();
    let logs = session.logs();
    let line = |(l, j): LineAt| logs.get(l as usize)?.parsed.ops.get(j as usize);
    let ops = logs.iter().enumerate().flat_map(|(l, log)| {
        log.parsed
            .ops
            .iter()
            .enumerate()
            .map(move |(j, op)| (l, j, op))
    });
    for (l, j, op) in ops {
        let Some(rank) = communicators.rank_of(&op.process) else {
            continue;
        };
        // Past u32 a line is not found again and its key is kept whole: still exact.
        let at = (l as u32, u32::try_from(j).unwrap_or(u32::MAX));
        if !seen.insert(at, &op, line) {
            continue;
        }
        let parallelism = communicators
            .comm_of(&op.process, op.comm)
            .map_or(Parallelism::Unknown, label);
        let v = out.entry(rank).or_insert_with(|| RankVolume {
            global_rank: rank,
            process: op.process.clone(),
            by_parallelism: BTreeMap::new(),
            by_parallelism_op: BTreeMap::new(),
            message_sizes: BTreeMap::new(),
        });
        let traffic = traffic_bytes(&op);
        *v.by_parallelism.entry(parallelism).or_default() += traffic;
        *v.by_parallelism_op.entry((parallelism, op.op)).or_default() += traffic;
        *v.message_sizes
            .entry(parallelism)
            .or_default()
            .entry(crate::size_bucket(op.msg_bytes()))
            .or_default() += 1;
    }
    out.into_values().collect()
}

/// The element size (bytes) of the datatype that carries most of the logged bytes: the model's
/// β (2 for bf16/fp16 training) as the logs show it. `None` without operations.
pub fn dominant_element_bytes(session: &Session) -> Option<u64> {
    let mut by_size: BTreeMap<u64, u64> = BTreeMap::new();
    for op in session.logs().iter().flat_map(|l| l.parsed.ops.iter()) {
        if let Some(d) = op.datatype {
            *by_size.entry(d.size_bytes()).or_default() += op.msg_bytes();
        }
    }
    by_size
        .into_iter()
        .filter(|&(_, b)| b > 0)
        .max_by_key(|&(_, b)| b)
        .map(|(size, _)| size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::log::LogOps;

    /// The operations of log lines `(pid, opCount, count)`, through the real parser.
    fn lines(specs: &[(u32, u64, u64)]) -> LogOps {
        let text: String = specs
            .iter()
            .map(|(pid, op_count, count)| {
                format!(
                    "node01:{pid}:{pid} [0] NCCL INFO AllReduce: opCount {op_count:x} sendbuff 0x10 \
                     recvbuff 0x20 count {count} datatype 7 op 0 root 0 comm 0xc0 [nranks=4] stream 0x5\n"
                )
            })
            .collect();
        let ops = ingest_nccl::parse_bytes("test.log", 0, text.as_bytes()).ops;
        assert_eq!(ops.len(), specs.len());
        ops
    }

    /// Every line hashes alike: what a collision does, made the rule.
    #[derive(Default)]
    struct Colliding;

    impl BuildHasher for Colliding {
        type Hasher = Constant;
        fn build_hasher(&self) -> Constant {
            Constant
        }
    }

    struct Constant;

    impl std::hash::Hasher for Constant {
        fn finish(&self) -> u64 {
            42
        }
        fn write(&mut self, _: &[u8]) {}
    }

    fn new_lines<S: BuildHasher + Default>(lines: &LogOps) -> Vec<bool> {
        let mut seen = LineSet::<S>::default();
        let line = |(_, j): LineAt| lines.get(j as usize);
        (0..)
            .zip(lines)
            .map(|(j, l)| seen.insert((0, j), &l, line))
            .collect()
    }

    #[test]
    fn a_repeated_line_is_seen_once_even_when_hashes_collide() {
        let lines = lines(&[
            (1, 0, 8),
            (1, 0, 8), // the duplicated logging
            (2, 0, 8), // another process
            (1, 1, 8), // the next operation
            (1, 1, 16),
            (2, 0, 8),
            (1, 1, 16),
        ]);
        let expected = [true, false, true, true, true, false, false];
        assert_eq!(
            new_lines::<BuildHasherDefault<DefaultHasher>>(&lines),
            expected
        );
        assert_eq!(new_lines::<Colliding>(&lines), expected);
    }
}
