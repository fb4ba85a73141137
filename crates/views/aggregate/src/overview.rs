//! What the page reads first: the run's ranks, communicators, layout and activity picture, and
//! where each rank's detail section lies. Plain data; [`Overview::check`] is what every reader
//! runs before using a decoded overview.

use crate::format::{Block, Error, HEADER_LEN_V1, MAX_SECTION_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The overview of a run, or of the part of it one per-node job saw.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Overview {
    /// `ncclscope <version>`, of the last writer (the merge, for a merged file).
    pub producer: String,
    /// Each per-node job the ranks come from (one for a per-node aggregate).
    pub sources: Vec<Source>,
    /// One per process, by global rank.
    pub ranks: Vec<RankRow>,
    pub comms: Vec<CommRow>,
    pub layout: Layout,
    pub heat: Heat,
    /// What the writer wants the reader to know (ranks renumbered, a node whose clock could not
    /// be tied to the others).
    pub notes: Vec<String>,
}

/// One per-node job's inputs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Source {
    /// Its hosts, comma-separated (`node01`).
    pub hosts: String,
    /// Files it read, and their bytes.
    pub inputs: u32,
    pub input_bytes: u64,
}

/// One process (GPU) of the run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RankRow {
    pub global_rank: u32,
    /// From a communicator init line (run-wide); false: numbered by the job (a merge renumbers
    /// those after the known ranks).
    pub rank_from_init: bool,
    pub host: String,
    pub pid: u32,
    pub local_rank: Option<u32>,
    pub nccl_version: Option<String>,
    /// Index into [`Overview::sources`].
    pub source: u32,
    /// Log operations and their bytes (`count × sizeof(datatype)`) per type, as the summary's
    /// `ops_by_type` / `bytes_by_type` count them.
    pub ops: Vec<OpCount>,
    /// NCCL kernels, and those matched to a log operation.
    pub kernels: u64,
    pub matched: u64,
    /// Kernels and message bytes per communicator (matched kernels).
    pub comms: Vec<RankComm>,
    /// Time the GPU ran at least one NCCL kernel.
    pub busy_ns: u64,
    /// First kernel start and last kernel end, in the source's time (see `clock`).
    pub first_ns: i64,
    pub last_ns: i64,
    /// Median bus bandwidth of its kernels that have one.
    pub median_bus_bw_gbps: Option<f64>,
    /// From the source's time (the job's, synchronised across its ranks) to the run's.
    pub clock: Clock,
    /// Its detail section.
    pub section: Block,
}

/// One operation type's count and bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OpCount {
    /// NCCL's spelling (`AllReduce`).
    pub op: String,
    pub count: u64,
    pub bytes: u64,
}

/// A rank's traffic on one communicator.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RankComm {
    /// Index into [`Overview::comms`].
    pub comm: u32,
    pub kernels: u64,
    pub bytes: u64,
}

/// A time map `t_run = shift_ns + scale · t_source`. A per-node job's is the identity; a merge
/// sets it from the collectives the nodes share (their kernels end together).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    pub scale: f64,
    pub shift_ns: f64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::IDENTITY
    }
}

impl Clock {
    pub const IDENTITY: Clock = Clock {
        scale: 1.0,
        shift_ns: 0.0,
    };

    pub fn apply(&self, t_ns: i64) -> i64 {
        (self.shift_ns + self.scale * t_ns as f64).round() as i64
    }

    /// `self` after `first`: maps what `first` maps from.
    pub fn after(&self, first: &Clock) -> Clock {
        Clock {
            scale: self.scale * first.scale,
            shift_ns: self.shift_ns + self.scale * first.shift_ns,
        }
    }

    /// The map [`enrich::ClockSync::to_sync`] applies to `rank`'s times.
    pub fn of_sync(sync: &enrich::ClockSync, rank: u32) -> Clock {
        match sync.ranks.get(&rank) {
            None => Clock::IDENTITY,
            Some(c) => {
                let d = c.drift_ppm * 1e-6;
                Clock {
                    scale: 1.0 / (1.0 + d),
                    shift_ns: (d * sync.reference_ns as f64 - c.offset_ns) / (1.0 + d),
                }
            }
        }
    }

    /// A believable clock: finite, running within 1 % of true time.
    pub fn plausible(&self) -> bool {
        self.shift_ns.is_finite() && (0.99..=1.01).contains(&self.scale)
    }
}

/// One logical communicator.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CommRow {
    /// `0x<commId>`; communicators without one (`seq-<n>`) are the job's own and never merged.
    pub id: String,
    /// Ranks as NCCL printed (may exceed the members seen).
    pub size: u32,
    /// Members seen, ascending.
    pub global_ranks: Vec<u32>,
    /// `DP`, `TP`, `PP`, `EP`, `CP` or `unknown`.
    pub parallelism: String,
    pub confidence: f64,
    pub evidence: String,
    /// Matched kernels on it, and their bus bandwidths.
    pub kernels: u64,
    pub bus_bw: Histogram,
    /// Its bottleneck link and that link's bandwidth (GB/s).
    pub bottleneck: Option<(String, f64)>,
    /// The operation signature its label was inferred from (kept for merging).
    pub signature: Signature,
}

/// [`enrich::Signature`] as stored.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Signature {
    pub size: u32,
    pub all_reduce: u64,
    pub all_gather: u64,
    pub reduce_scatter: u64,
    pub broadcast: u64,
    pub other: u64,
    pub p2p: u64,
    pub tiny: u64,
    pub max_bytes: u64,
    pub uint8_gather: bool,
    pub all_to_all: bool,
    pub ring_wrap: bool,
    /// (host, pid) of the member the counts are of.
    pub representative: Option<(String, u32)>,
}

impl From<&enrich::Signature> for Signature {
    fn from(s: &enrich::Signature) -> Self {
        Signature {
            size: s.size,
            all_reduce: s.ar,
            all_gather: s.ag,
            reduce_scatter: s.rs,
            broadcast: s.bc,
            other: s.other,
            p2p: s.p2p,
            tiny: s.tiny,
            max_bytes: s.max_bytes,
            uint8_gather: s.uint8_gather,
            all_to_all: s.all_to_all,
            ring_wrap: s.ring_wrap,
            representative: s
                .representative
                .as_ref()
                .map(|p| (p.host.to_string(), p.pid)),
        }
    }
}

impl From<&Signature> for enrich::Signature {
    fn from(s: &Signature) -> Self {
        enrich::Signature {
            size: s.size,
            ar: s.all_reduce,
            ag: s.all_gather,
            rs: s.reduce_scatter,
            bc: s.broadcast,
            other: s.other,
            p2p: s.p2p,
            tiny: s.tiny,
            max_bytes: s.max_bytes,
            uint8_gather: s.uint8_gather,
            all_to_all: s.all_to_all,
            ring_wrap: s.ring_wrap,
            representative: s
                .representative
                .as_ref()
                .map(|(h, p)| model::log::ProcessKey {
                    host: h.as_str().into(),
                    pid: *p,
                }),
        }
    }
}

/// Bandwidths by logarithmic bin (100 a decade from 0.001 GB/s): a median to within 1.2 % that
/// merges by adding counts, where a median of medians would be wrong.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Histogram {
    /// (bin, count), bins ascending.
    pub bins: Vec<(u16, u64)>,
}

const BINS_PER_DECADE: f64 = 100.0;
const LOWEST_GBPS: f64 = 1e-3;
const TOP_BIN: u16 = 900; // 10⁶ GB/s

impl Histogram {
    pub fn from_values(values: impl IntoIterator<Item = f64>) -> Histogram {
        let mut m: BTreeMap<u16, u64> = BTreeMap::new();
        for v in values.into_iter().filter(|v| v.is_finite() && *v > 0.0) {
            let b = ((v / LOWEST_GBPS).log10() * BINS_PER_DECADE).floor();
            *m.entry(b.clamp(0.0, f64::from(TOP_BIN)) as u16)
                .or_default() += 1;
        }
        Histogram {
            bins: m.into_iter().collect(),
        }
    }

    pub fn add(&mut self, other: &Histogram) {
        let mut m: BTreeMap<u16, u64> = self.bins.iter().copied().collect();
        for &(b, n) in &other.bins {
            let e = m.entry(b).or_default();
            *e = e.saturating_add(n);
        }
        self.bins = m.into_iter().collect();
    }

    pub fn count(&self) -> u64 {
        self.bins.iter().fold(0u64, |a, b| a.saturating_add(b.1))
    }

    /// The median's bin, as its geometric centre.
    pub fn median(&self) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let mut seen = 0u64;
        for &(b, c) in &self.bins {
            seen = seen.saturating_add(c);
            if seen.saturating_mul(2) >= n {
                return Some(LOWEST_GBPS * 10f64.powf((f64::from(b) + 0.5) / BINS_PER_DECADE));
            }
        }
        None
    }
}

/// The parallel layout behind the labels.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Layout {
    /// Sizes used (given or inferred), `None` when unknown.
    pub sizes: Option<Sizes>,
    /// Sizes the user gave the job (`--tp` ...), if any.
    pub given: Option<Sizes>,
    pub evidence: String,
    pub confidence: f64,
    /// Largest communicator size printed (the world).
    pub world_size: u32,
    /// Training iterations seen (NVTX).
    pub iterations: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Sizes {
    pub tp: u32,
    pub cp: u32,
    pub ep: u32,
    pub dp: u32,
    pub pp: u32,
}

impl From<enrich::Sizes> for Sizes {
    fn from(s: enrich::Sizes) -> Self {
        Sizes {
            tp: s.tp,
            cp: s.cp,
            ep: s.ep,
            dp: s.dp,
            pp: s.pp,
        }
    }
}

impl From<Sizes> for enrich::Sizes {
    fn from(s: Sizes) -> Self {
        enrich::Sizes {
            tp: s.tp,
            cp: s.cp,
            ep: s.ep,
            dp: s.dp,
            pp: s.pp,
        }
    }
}

/// The whole run's activity: per rank (in [`Overview::ranks`] order) and time bin, the share of
/// the bin its GPU ran an NCCL kernel, 0–255. Drawn as one pixel row per rank, it shows
/// thousands of ranks at once without reading a section.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Heat {
    /// The run's time range (run time: after each rank's clock).
    pub start_ns: i64,
    pub end_ns: i64,
    pub bins: u32,
    /// `ranks × bins` bytes, row by row.
    pub busy: Vec<u8>,
}

/// Most time bins of a heat strip.
pub const MAX_HEAT_BINS: u32 = 4096;

/// Run totals, summed from the rank rows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Totals {
    pub ranks: u64,
    pub hosts: u64,
    pub kernels: u64,
    pub matched: u64,
    /// Per operation type, in the order of first appearance.
    pub ops: Vec<OpCount>,
    pub detail_bytes: u64,
}

impl Overview {
    /// Sums the rank rows.
    pub fn totals(&self) -> Totals {
        let mut ops: Vec<OpCount> = Vec::new();
        let mut t = Totals {
            ranks: self.ranks.len() as u64,
            ..Totals::default()
        };
        let mut hosts: std::collections::BTreeSet<&str> = Default::default();
        for r in &self.ranks {
            hosts.insert(&r.host);
            t.kernels = t.kernels.saturating_add(r.kernels);
            t.matched = t.matched.saturating_add(r.matched);
            t.detail_bytes = t.detail_bytes.saturating_add(r.section.len);
            for o in &r.ops {
                match ops.iter_mut().find(|x| x.op == o.op) {
                    Some(x) => {
                        x.count = x.count.saturating_add(o.count);
                        x.bytes = x.bytes.saturating_add(o.bytes);
                    }
                    None => ops.push(o.clone()),
                }
            }
        }
        t.hosts = hosts.len() as u64;
        t.ops = ops;
        t
    }

    /// The row of global rank `rank`.
    pub fn rank(&self, rank: u32) -> Option<&RankRow> {
        self.ranks
            .binary_search_by_key(&rank, |r| r.global_rank)
            .ok()
            .map(|i| &self.ranks[i])
    }

    /// Checks what a decoded overview promises before anyone relies on it: ranks ascending and
    /// unique, indices in range, sections inside `sections_end` (where the blocks start), heat
    /// of the right size, clocks believable. `file` names the file in errors.
    pub fn check(&self, file: &str, sections_end: u64) -> Result<(), Error> {
        let bad = |m: String| Err(Error::new(file, format!("{m}: garbled overview")));
        for w in self.ranks.windows(2) {
            if w[0].global_rank >= w[1].global_rank {
                return bad(format!("rank {} listed out of order", w[1].global_rank));
            }
        }
        for r in &self.ranks {
            let b = &r.section;
            let inside = b.offset >= HEADER_LEN_V1 as u64
                && b.offset
                    .checked_add(b.len)
                    .is_some_and(|e| e <= sections_end);
            if !inside {
                return bad(format!(
                    "rank {}'s section lies outside the sections",
                    r.global_rank
                ));
            }
            if b.raw_len > MAX_SECTION_BYTES || b.raw_len > b.len.saturating_mul(1100) {
                return bad(format!("rank {}'s section size", r.global_rank));
            }
            if r.source as usize >= self.sources.len() {
                return bad(format!("rank {} names no source", r.global_rank));
            }
            if r.comms.iter().any(|c| c.comm as usize >= self.comms.len()) {
                return bad(format!("rank {} names no communicator", r.global_rank));
            }
            if r.matched > r.kernels || !r.clock.plausible() || r.first_ns > r.last_ns {
                return bad(format!("rank {}'s figures", r.global_rank));
            }
        }
        let h = &self.heat;
        let cells = (h.bins as usize).checked_mul(self.ranks.len());
        if h.bins > MAX_HEAT_BINS || cells != Some(h.busy.len()) || h.start_ns > h.end_ns {
            return bad("the activity strip's size".into());
        }
        Ok(())
    }
}
