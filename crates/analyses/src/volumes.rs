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

use enrich::{bandwidth, Communicators, LayoutInference, Parallelism};
use load::Session;
use model::log::{Call, CallSite, LogOp, LogOps, ProcessKey};
use model::OpType;
use rustc_hash::{FxBuildHasher, FxHashMap};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashSet};
use std::hash::BuildHasher;

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
    let size = op.datatype.map_or(0, |d| d.size_bytes());
    traffic(op.op, op.count, size, op.nranks)
}

/// [`traffic_bytes`] of an operation's parts: `count` elements of `size` bytes on `nranks`.
fn traffic(op: OpType, count: u64, size: u64, nranks: u32) -> u64 {
    let n = nranks.max(1);
    let bytes = bandwidth::op_bytes(op, count, size, n);
    (bytes as f64 * bandwidth::bus_factor(op, None, n)).round() as u64
}

/// What makes a logged operation itself: process (the session's number for it, [`Processes`]),
/// communicator, opCount, operation, root or peer, count, send and receive buffers.
type LineKey = (u32, u64, u64, OpType, i64, u64, u64, u64);

/// The [`LineKey`] of a call from `site` of process `process`.
fn line_key(process: u32, site: &CallSite, call: &Call) -> LineKey {
    (
        process,
        site.comm,
        call.op_count,
        site.op,
        site.root,
        call.count,
        call.sendbuff,
        call.recvbuff,
    )
}

/// Where a line is: (log, operation) in the session.
type LineAt = (u32, u32);

/// The lines seen so far, by [`LineKey`]: each line is kept as a 64-bit hash of its key and
/// where the line is (a set of the keys themselves took several times the memory of the
/// records at millions of lines); lines whose hash an earlier, different line already holds go
/// to a set of whole keys, so the answer is exact.
#[derive(Default)]
struct LineSet<S = FxBuildHasher> {
    hasher: S,
    by_hash: FxHashMap<u64, LineAt>,
    collided: HashSet<LineKey>,
}

impl<S: BuildHasher> LineSet<S> {
    /// Whether `key`, the line at `at`, is new (and now seen); `line` reads an earlier line's key
    /// back.
    fn insert(
        &mut self,
        at: LineAt,
        key: LineKey,
        line: impl Fn(LineAt) -> Option<LineKey>,
    ) -> bool {
        match self.by_hash.entry(self.hasher.hash_one(key)) {
            Entry::Vacant(e) => {
                e.insert(at);
                true
            }
            Entry::Occupied(e) if line(*e.get()) == Some(key) => false,
            Entry::Occupied(_) => self.collided.insert(key),
        }
    }
}

/// The session's processes numbered once: a line's key holds the number, not the host text.
#[derive(Default)]
struct Processes {
    ids: FxHashMap<ProcessKey, u32>,
}

impl Processes {
    /// Each of `ops`'s process indices (as its sites number them) as a session-wide number.
    fn of_log(&mut self, ops: &LogOps) -> Vec<u32> {
        ops.processes()
            .iter()
            .map(|p| {
                let next = self.ids.len() as u32;
                *self.ids.entry(p.clone()).or_insert(next)
            })
            .collect()
    }
}

/// What every call of one site shares for the volumes: its rank and parallelism, and what its
/// counted calls add up to.
struct SiteVolume {
    rank: u32,
    parallelism: Parallelism,
    /// Calls counted (printed once), their traffic, and their message sizes by power of two
    /// (index 0: zero bytes, `b + 1`: bucket `2^b`).
    calls: u64,
    traffic: u64,
    sizes: [u64; 65],
}

/// [`size_bucket`]'s index into [`SiteVolume::sizes`].
///
/// [`size_bucket`]: crate::size_bucket
fn size_index(bytes: u64) -> usize {
    if bytes == 0 {
        0
    } else {
        64 - bytes.leading_zeros() as usize
    }
}

/// Every ranked process's observed volume, ordered by global rank.
///
/// Per call, only what differs from call to call is read (its numbers, for the duplicate check
/// and the traffic); the rank, the communicator's parallelism and the process are worked out
/// once per call site, and the sums are kept per site and added up at the end (integers: the
/// same totals in any order).
pub fn observed_volumes(
    session: &Session,
    communicators: &Communicators,
    layout: &LayoutInference,
) -> Vec<RankVolume> {
    let mut label: FxHashMap<usize, Parallelism> = FxHashMap::default();
    for l in layout.comms.iter().rev() {
        // The first label of a communicator wins, as a search from the front finds it.
        label.insert(l.comm, l.parallelism);
    }
    let mut seen: LineSet = LineSet::default();
    let mut out: BTreeMap<u32, RankVolume> = BTreeMap::new();
    let logs = session.logs();
    let mut processes = Processes::default();
    let numbered: Vec<Vec<u32>> = logs
        .iter()
        .map(|log| processes.of_log(&log.parsed.ops))
        .collect();
    let line = |(l, j): LineAt| {
        let ops = &logs.get(l as usize)?.parsed.ops;
        let site = ops.site_of(j as usize)?;
        let process = *numbered[l as usize].get(site.process as usize)?;
        Some(line_key(process, site, &ops.call(j as usize)?))
    };
    for (l, log) in logs.iter().enumerate() {
        let ops = &log.parsed.ops;
        let mut sites: Vec<Option<SiteVolume>> = ops
            .sites()
            .iter()
            .map(|s| {
                let process = ops.processes().get(s.process as usize)?;
                let rank = communicators.rank_of(process)?;
                let parallelism = communicators
                    .comm_of(process, s.comm)
                    .and_then(|c| label.get(&c).copied())
                    .unwrap_or(Parallelism::Unknown);
                Some(SiteVolume {
                    rank,
                    parallelism,
                    calls: 0,
                    traffic: 0,
                    sizes: [0; 65],
                })
            })
            .collect();
        for j in 0..ops.len() {
            let (Some(s), Some(call)) = (ops.site_index(j), ops.call(j)) else {
                continue;
            };
            let Some(Some(v)) = sites.get_mut(s as usize) else {
                continue;
            };
            let site = &ops.sites()[s as usize];
            let process = numbered[l][site.process as usize];
            // Past u32 a line is not found again and its key is kept whole: still exact.
            let at = (l as u32, u32::try_from(j).unwrap_or(u32::MAX));
            if !seen.insert(at, line_key(process, site, &call), line) {
                continue;
            }
            if v.calls == 0 && !out.contains_key(&v.rank) {
                // The rank's first counted call names its process.
                out.insert(
                    v.rank,
                    RankVolume {
                        global_rank: v.rank,
                        process: ops.processes()[site.process as usize].clone(),
                        by_parallelism: BTreeMap::new(),
                        by_parallelism_op: BTreeMap::new(),
                        message_sizes: BTreeMap::new(),
                    },
                );
            }
            let size = site.datatype.map_or(0, |d| d.size_bytes());
            v.calls += 1;
            v.traffic += traffic(site.op, call.count, size, site.nranks);
            v.sizes[size_index(call.count.saturating_mul(size))] += 1;
        }
        for (site, v) in ops.sites().iter().zip(sites) {
            let Some(v) = v.filter(|v| v.calls > 0) else {
                continue;
            };
            let Some(r) = out.get_mut(&v.rank) else {
                continue;
            };
            *r.by_parallelism.entry(v.parallelism).or_default() += v.traffic;
            *r.by_parallelism_op
                .entry((v.parallelism, site.op))
                .or_default() += v.traffic;
            let sizes = r.message_sizes.entry(v.parallelism).or_default();
            for (b, &n) in v.sizes.iter().enumerate().filter(|(_, &n)| n > 0) {
                let bucket = if b == 0 { 0 } else { 1u64 << (b - 1) };
                *sizes.entry(bucket).or_default() += n;
            }
        }
    }
    out.into_values().collect()
}

/// The element size (bytes) of the datatype that carries most of the logged bytes: the model's
/// β (2 for bf16/fp16 training) as the logs show it. `None` without operations.
pub fn dominant_element_bytes(session: &Session) -> Option<u64> {
    let mut by_size: BTreeMap<u64, u64> = BTreeMap::new();
    for log in session.logs() {
        let ops = &log.parsed.ops;
        // Per site, then per size: a site has one datatype.
        let mut per_site = vec![0u64; ops.sites().len()];
        for j in 0..ops.len() {
            if let (Some(s), Some(bytes)) = (ops.site_index(j), ops.msg_bytes(j)) {
                per_site[s as usize] += bytes;
            }
        }
        for (site, bytes) in ops.sites().iter().zip(per_site) {
            if let Some(d) = site.datatype {
                *by_size.entry(d.size_bytes()).or_default() += bytes;
            }
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
        let processes = Processes::default().of_log(lines);
        let key = |j: usize| {
            let site = lines.site_of(j)?;
            Some(line_key(
                processes[site.process as usize],
                site,
                &lines.call(j)?,
            ))
        };
        (0..lines.len())
            .map(|j| seen.insert((0, j as u32), key(j).unwrap(), |(_, j)| key(j as usize)))
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
        assert_eq!(new_lines::<FxBuildHasher>(&lines), expected);
        assert_eq!(new_lines::<Colliding>(&lines), expected);
    }
}
