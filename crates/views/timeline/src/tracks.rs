//! The timeline's view model: tracks of time spans, no DOM. The page draws what is here.

use enrich::Parallelism;
use model::log::ProcessKey;
use model::OpType;

/// One kernel on a track, in the reference rank's clock (synchronised across nodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start_ns: i64,
    pub end_ns: i64,
    /// The operation the kernel's name says, when it says one.
    pub op: Option<OpType>,
    /// How the kernel was matched to the log ([`crate::annotate_spans`] sets it).
    pub mark: Mark,
    /// The parallelism its communicator serves, as [`par_byte`] ([`LOD_NO_OP`]: not known).
    pub par: u8,
}

impl Span {
    /// A kernel not yet compared with the log (unmatched until [`crate::annotate_spans`]).
    pub fn new(start_ns: i64, end_ns: i64, op: Option<OpType>) -> Span {
        Span {
            start_ns,
            end_ns,
            op,
            mark: Mark::Unmatched,
            par: LOD_NO_OP,
        }
    }
}

/// How a kernel on the timeline relates to the log: the page draws unmatched kernels hollow
/// and flags low-confidence matches, so neither passes for a clean match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mark {
    #[default]
    Matched,
    /// Matched with a confidence under [`LOW_CONFIDENCE`].
    LowConfidence,
    /// No log operation: a dropped log line, or a process without a log.
    Unmatched,
}

impl Mark {
    pub const ALL: [Mark; 3] = [Mark::Matched, Mark::LowConfidence, Mark::Unmatched];

    pub fn byte(self) -> u8 {
        self as u8
    }

    pub fn from_byte(b: u8) -> Option<Mark> {
        Mark::ALL.get(b as usize).copied()
    }
}

/// A match whose confidence is below this is marked on the timeline. The aligner's confidence
/// mixes the pair's score with its neighbours' (`align::KernelMatch::confidence`): under one
/// half, the pair or its surroundings disagree more than they agree.
pub const LOW_CONFIDENCE: f64 = 0.5;

/// The parallelisms in palette order: [`par_byte`] indexes them.
pub const PARALLELISMS: [Parallelism; 5] = [
    Parallelism::DP,
    Parallelism::TP,
    Parallelism::PP,
    Parallelism::EP,
    Parallelism::CP,
];

/// The palette byte of a parallelism ([`LOD_NO_OP`] for `Unknown`).
pub fn par_byte(p: Parallelism) -> u8 {
    PARALLELISMS
        .iter()
        .position(|q| *q == p)
        .map_or(LOD_NO_OP, |i| i as u8)
}

/// One row of the timeline (one GPU of one process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Track {
    pub label: String,
    pub spans: Vec<Span>,
    /// The process and GPU whose kernels these are (kept where the analysis runs; the page's
    /// copy of a timeline does not carry it).
    pub source: Option<(ProcessKey, u32)>,
    /// The spans summarised for zoomed-out frames (built with the track, off the page's thread).
    pub lod: Lod,
    /// The same by parallelism (the track's parallelism row), built by [`crate::annotate_spans`].
    pub par_lod: Lod,
}

/// Every track, with the time range that covers them all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Timeline {
    pub tracks: Vec<Track>,
    pub start_ns: i64,
    pub end_ns: i64,
    /// NVTX rows shared above the tracks (iterations, training phases), in the tracks' clock.
    pub markers: Vec<MarkerRow>,
}

/// One row of NVTX ranges drawn above every track.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MarkerRow {
    pub label: String,
    /// Sorted by start.
    pub ranges: Vec<Marker>,
}

/// One NVTX range of a marker row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub start_ns: i64,
    pub end_ns: i64,
    /// Its colour: [`MarkerKind`] as a byte.
    pub kind: u8,
    /// The range's text as the program pushed it (drawn as text, never markup).
    pub text: String,
}

/// What an NVTX range marks, by its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    Iteration = 0,
    Forward = 1,
    Backward = 2,
    Optimizer = 3,
}

/// The op byte of a summary bucket whose dominant kernel names no operation (else the index of
/// the operation in [`OpType::ALL`]).
pub const LOD_NO_OP: u8 = u8::MAX;

/// Most finest-level buckets a track's summary holds (2 bytes each, about twice that with the
/// coarser levels): a bound on memory whatever the track's span count or time range.
const LOD_MAX_BUCKETS: usize = 1 << 22;

/// A track's multi-resolution summary, so that a zoomed-out frame draws one bucket per pixel
/// instead of every span: level `k` splits the track's time range into buckets of
/// `bucket_ns << k` nanoseconds from `origin_ns`, each two bytes (dominant op, coverage).
/// Level 0 has about one bucket per span; each next level halves the count, down to one bucket.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lod {
    pub origin_ns: i64,
    /// The finest bucket width (≥ 1).
    pub bucket_ns: i64,
    /// The longest span of the track: a window's first visible span starts at most this much
    /// before the window (spans are sorted by start, not by end).
    pub max_span_ns: i64,
    /// Per level, per bucket: the op byte of the span covering most of the bucket
    /// ([`LOD_NO_OP`] for none), then the covered fraction of the bucket in 0..=255 (0: empty).
    pub levels: Vec<Vec<u8>>,
}

impl Lod {
    /// The summary of `spans` (sorted by start) by operation.
    pub fn build(spans: &[Span]) -> Lod {
        Lod::build_by(spans, |s| s.op.map_or(LOD_NO_OP, op_byte))
    }

    /// The summary of `spans` (sorted by start), each bucket holding the `key` of the span
    /// covering most of it. Linear in spans plus buckets: a bucket fully inside a span is
    /// claimed once, however many long spans overlap it.
    pub fn build_by(spans: &[Span], key: impl Fn(&Span) -> u8) -> Lod {
        let Some(first) = spans.first() else {
            return Lod::default();
        };
        let origin = first.start_ns;
        let end = spans.iter().map(|s| s.end_ns).max().unwrap_or(origin);
        let max_span_ns = spans
            .iter()
            .map(|s| s.end_ns.saturating_sub(s.start_ns))
            .max()
            .unwrap_or(0)
            .max(0);
        let range = (end.saturating_sub(origin)).max(1) as u64;
        let want = spans.len().next_power_of_two().min(LOD_MAX_BUCKETS) as u64;
        let bucket = range.div_ceil(want).max(1);
        let n = range.div_ceil(bucket) as usize;
        let bucket_ns = bucket as i64;
        // Covered ns per bucket (a difference array for whole buckets), and the best overlap.
        let mut covered = vec![0u64; n];
        let mut whole = vec![0i64; n + 1];
        let mut best = vec![(0u64, LOD_NO_OP); n];
        // next_free[b]: the first bucket at or after b not yet claimed by a span covering it
        // whole (path-halving union-find), so nested long spans cost nothing more.
        let mut next_free: Vec<u32> = (0..=n as u32).collect();
        fn find(next: &mut [u32], mut b: usize) -> usize {
            while next[b] as usize != b {
                let up = next[next[b] as usize];
                next[b] = up;
                b = up as usize;
            }
            b
        }
        for s in spans {
            let op = key(s);
            let (a, z) = (s.start_ns.max(origin), s.end_ns.min(end));
            if z <= a {
                continue;
            }
            // Offsets in i128: a track may span more than i64's range (a bad clock).
            let off = |t: i64| (t as i128 - origin as i128) as u64;
            let lo = (off(a) / bucket) as usize;
            let hi = ((off(z) - 1) / bucket) as usize;
            let (lo, hi) = (lo.min(n - 1), hi.min(n - 1));
            let mut partial = |b: usize| {
                let b0 = origin as i128 + b as i128 * bucket as i128;
                let b1 = b0 + bucket as i128;
                let ov = ((z as i128).min(b1) - (a as i128).max(b0)).max(0) as u64;
                covered[b] += ov;
                if ov > best[b].0 {
                    best[b] = (ov, op);
                }
            };
            partial(lo);
            if hi > lo {
                partial(hi);
            }
            if hi > lo + 1 {
                whole[lo + 1] += 1;
                whole[hi] -= 1;
                let mut b = find(&mut next_free, lo + 1);
                while b < hi {
                    best[b] = (bucket, op);
                    next_free[b] = b as u32 + 1;
                    b = find(&mut next_free, b + 1);
                }
            }
        }
        let mut level = Vec::with_capacity(n * 2);
        let mut inside = 0i64;
        for b in 0..n {
            inside += whole[b];
            let c = (covered[b] + inside.max(0) as u64 * bucket).min(bucket);
            let frac = if c == 0 {
                0
            } else {
                ((c * 255 / bucket) as u8).max(1)
            };
            level.push(best[b].1);
            level.push(frac);
        }
        let mut levels = vec![level];
        while levels.last().is_some_and(|l| l.len() > 2) {
            let prev = levels.last().expect("levels is not empty");
            let next: Vec<u8> = prev
                .chunks(4)
                .flat_map(|p| {
                    let (op_a, cov_a) = (p[0], p[1]);
                    let (op_b, cov_b) = p.get(2).zip(p.get(3)).map_or((op_a, 0), |(o, c)| (*o, *c));
                    let op = if cov_b > cov_a { op_b } else { op_a };
                    let cov = ((cov_a as u16 + cov_b as u16).div_ceil(2)) as u8;
                    [op, cov]
                })
                .collect();
            levels.push(next);
        }
        Lod {
            origin_ns: origin,
            bucket_ns,
            max_span_ns,
            levels,
        }
    }

    /// The coarsest level whose buckets are at most `ns_per_px` wide, if any.
    pub fn level_for(&self, ns_per_px: f64) -> Option<usize> {
        let mut found = None;
        for k in 0..self.levels.len() {
            if (self.bucket_ns as f64) * (1u64 << k.min(62)) as f64 <= ns_per_px {
                found = Some(k);
            } else {
                break;
            }
        }
        found
    }
}

/// The op byte of `op`: its index in [`OpType::ALL`].
pub fn op_byte(op: OpType) -> u8 {
    OpType::ALL
        .iter()
        .position(|o| *o == op)
        .map_or(LOD_NO_OP, |i| i as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start_ns: i64, end_ns: i64, op: Option<OpType>) -> Span {
        Span::new(start_ns, end_ns, op)
    }

    #[test]
    fn an_empty_track_has_no_levels() {
        assert_eq!(Lod::build(&[]), Lod::default());
        assert_eq!(Lod::default().level_for(1e9), None);
    }

    #[test]
    fn buckets_hold_coverage_and_the_dominant_operation() {
        // 4 spans → 4 buckets of 100 ns over [0, 400).
        let ar = Some(OpType::AllReduce);
        let ag = Some(OpType::AllGather);
        let spans = [
            span(0, 100, ar),
            span(100, 130, ag),
            span(130, 200, ar),
            span(350, 400, None),
        ];
        let lod = Lod::build(&spans);
        assert_eq!(
            (lod.origin_ns, lod.bucket_ns, lod.max_span_ns),
            (0, 100, 100)
        );
        let a = op_byte(OpType::AllReduce);
        assert_eq!(
            lod.levels[0],
            vec![a, 255, a, 255, LOD_NO_OP, 0, LOD_NO_OP, 127]
        );
        // Then 2 buckets of 200 ns, then 1.
        assert_eq!(lod.levels[1], vec![a, 255, LOD_NO_OP, 64]);
        assert_eq!(lod.levels[2], vec![a, 160]);
        assert_eq!(lod.levels.len(), 3);
        // The coarsest level no wider than a pixel.
        assert_eq!(lod.level_for(99.0), None);
        assert_eq!(lod.level_for(100.0), Some(0));
        assert_eq!(lod.level_for(250.0), Some(1));
        assert_eq!(lod.level_for(1e12), Some(2));
    }

    #[test]
    fn a_long_span_claims_the_buckets_inside_it() {
        let rs = Some(OpType::ReduceScatter);
        // The long span covers buckets 1..=6 whole; the short ones sit inside it.
        let mut spans = vec![span(0, 10, None), span(15, 75, rs)];
        spans.extend((0..6).map(|i| span(20 + i * 10, 22 + i * 10, None)));
        spans.sort_by_key(|s| s.start_ns);
        let lod = Lod::build(&spans);
        assert_eq!(lod.bucket_ns, 10);
        let l0 = &lod.levels[0];
        let r = op_byte(OpType::ReduceScatter);
        for b in 2..7 {
            assert_eq!((l0[2 * b], l0[2 * b + 1]), (r, 255), "bucket {b}");
        }
        assert_eq!((l0[2], l0[3]), (r, 127), "half of bucket 1");
    }

    #[test]
    fn huge_ranges_stay_bounded() {
        let spans = [
            span(i64::MIN / 2, i64::MIN / 2 + 5, None),
            span(i64::MAX / 2, i64::MAX / 2 + 5, None),
        ];
        let lod = Lod::build(&spans);
        assert_eq!(lod.levels[0].len(), 4);
        assert!(lod.levels.last().unwrap().len() == 2);
    }
}
