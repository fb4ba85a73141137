//! The timeline's search and filter: a query such as `op:allreduce,allgather par:tp
//! size:>=1MiB status:unmatched -rank:0-3` selects kernels by what the analysis knows of them
//! ([`crate::span_facts`]). Terms of different keys must all hold; the comma-separated values of
//! one term are alternatives; a leading `-` negates a term. A bare word is an operation,
//! parallelism or match status name. The query is plain text so that a link carries it as typed.

use crate::span_facts::{annotate_spans, track_rank, walk_span_facts, SpanFact};
use crate::tracks::{Lod, Mark, Timeline, Track};
use enrich::{ClockSync, Parallelism};
use load::Session;
use model::OpType;
use pipeline::Analysis;
use std::fmt;

/// A parsed query: every term must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub terms: Vec<Term>,
}

/// One `key:value,value` term.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub negate: bool,
    pub test: Test,
}

/// What a term checks; a list holds when any of its values does.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    Op(Vec<OpType>),
    /// Communicator ids (`0x…`) by prefix, lower case.
    Comm(Vec<String>),
    Parallelism(Vec<Parallelism>),
    /// Inclusive global rank ranges.
    Rank(Vec<(u32, u32)>),
    /// Message bytes in a range (inclusive).
    Size(Range),
    /// Bus bandwidth in GB/s in a range (inclusive).
    BusBw(Range),
    Status(Vec<Status>),
}

/// An inclusive range of numbers; `>=`, `<=`, `>`, `<`, `a..b` and a bare value give one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

impl Range {
    fn contains(&self, v: f64) -> bool {
        v >= self.min && v <= self.max
    }
}

/// Match statuses a query can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Matched,
    /// Matched with low confidence.
    Low,
    Unmatched,
    Fused,
    Duplicated,
}

/// A query that cannot be read, with the offending term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError(pub String);

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

const KEYS: &str = "op, comm, par, rank, size, bw, status";

/// Longest query read: a link or a paste cannot make the parser walk megabytes.
pub const MAX_QUERY_BYTES: usize = 4096;

impl Filter {
    /// Reads a query; the empty query keeps everything.
    pub fn parse(query: &str) -> Result<Filter, FilterError> {
        if query.len() > MAX_QUERY_BYTES {
            return Err(FilterError(format!(
                "the filter is longer than {MAX_QUERY_BYTES} bytes"
            )));
        }
        let terms = query
            .split_whitespace()
            .map(parse_term)
            .collect::<Result<_, _>>()?;
        Ok(Filter { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether the kernel `fact` passes.
    pub fn keeps(&self, analysis: &Analysis, fact: &SpanFact) -> bool {
        self.terms
            .iter()
            .all(|t| t.test.holds(analysis, fact) != t.negate)
    }

    /// Whether some kernel of a track of rank `rank` could pass: rank terms decide alone.
    fn keeps_rank(&self, rank: Option<u32>) -> bool {
        self.terms.iter().all(|t| match &t.test {
            Test::Rank(ranges) => in_ranges(ranges, rank) != t.negate,
            _ => true,
        })
    }
}

impl Test {
    fn holds(&self, analysis: &Analysis, f: &SpanFact) -> bool {
        match self {
            Test::Op(ops) => f.op.is_some_and(|o| ops.contains(&o)),
            Test::Comm(prefixes) => f.comm.is_some_and(|c| {
                // Case-insensitive prefix, without a lower-cased copy per kernel.
                let id = analysis.communicators.comms[c].id.as_bytes();
                prefixes.iter().any(|p| {
                    id.get(..p.len())
                        .is_some_and(|head| head.eq_ignore_ascii_case(p.as_bytes()))
                })
            }),
            Test::Parallelism(ps) => f.parallelism.is_some_and(|p| ps.contains(&p)),
            Test::Rank(ranges) => in_ranges(ranges, f.rank),
            Test::Size(r) => f.bytes.is_some_and(|b| r.contains(b as f64)),
            Test::BusBw(r) => f.bus_bw_gbps.is_some_and(|b| r.contains(b)),
            Test::Status(ss) => ss.iter().any(|s| match s {
                Status::Matched => f.mark != Mark::Unmatched,
                Status::Low => f.mark == Mark::LowConfidence,
                Status::Unmatched => f.mark == Mark::Unmatched,
                Status::Fused => f.fused,
                Status::Duplicated => f.duplicated,
            }),
        }
    }
}

fn in_ranges(ranges: &[(u32, u32)], rank: Option<u32>) -> bool {
    rank.is_some_and(|r| ranges.iter().any(|(a, z)| (*a..=*z).contains(&r)))
}

fn parse_term(word: &str) -> Result<Term, FilterError> {
    let (negate, body) = match word.strip_prefix('-') {
        Some(rest) if !rest.is_empty() => (true, rest),
        _ => (false, word),
    };
    let Some((key, value)) = body.split_once(':') else {
        return bare_word(body).map(|test| Term { negate, test });
    };
    if value.is_empty() {
        return Err(FilterError(format!("`{word}`: no value after `{key}:`")));
    }
    let values = || value.split(',').filter(|v| !v.is_empty());
    let test = match key.to_ascii_lowercase().as_str() {
        "op" => Test::Op(
            values()
                .map(|v| ops_named(v).ok_or_else(|| unknown("operation", v)))
                .collect::<Result<Vec<_>, _>>()?
                .concat(),
        ),
        "comm" => Test::Comm(values().map(|v| v.to_ascii_lowercase()).collect()),
        "par" | "parallelism" => Test::Parallelism(
            values()
                .map(|v| parallelism_named(v).ok_or_else(|| unknown("parallelism", v)))
                .collect::<Result<_, _>>()?,
        ),
        "rank" => Test::Rank(values().map(rank_range).collect::<Result<_, _>>()?),
        "size" | "bytes" => Test::Size(range(value, parse_bytes)?),
        "bw" | "busbw" => Test::BusBw(range(value, |v| v.parse::<f64>().ok())?),
        "status" => Test::Status(
            values()
                .map(|v| status_named(v).ok_or_else(|| unknown("status", v)))
                .collect::<Result<_, _>>()?,
        ),
        _ => {
            return Err(FilterError(format!(
                "`{word}`: unknown key `{key}` (known: {KEYS})"
            )))
        }
    };
    Ok(Term { negate, test })
}

fn unknown(what: &str, v: &str) -> FilterError {
    FilterError(format!("unknown {what} `{v}`"))
}

fn bare_word(w: &str) -> Result<Test, FilterError> {
    if let Some(ops) = ops_named(w) {
        return Ok(Test::Op(ops));
    }
    if let Some(p) = parallelism_named(w) {
        return Ok(Test::Parallelism(vec![p]));
    }
    if let Some(s) = status_named(w) {
        return Ok(Test::Status(vec![s]));
    }
    Err(FilterError(format!(
        "`{w}` is not an operation, parallelism or status; use key:value (keys: {KEYS})"
    )))
}

/// An operation by name, case-insensitive; `p2p` is Send, Recv and their fused SendRecv.
fn ops_named(v: &str) -> Option<Vec<OpType>> {
    if v.eq_ignore_ascii_case("p2p") {
        return Some(vec![OpType::Send, OpType::Recv, OpType::SendRecv]);
    }
    OpType::from_name_ignore_case(v).map(|o| vec![o])
}

fn parallelism_named(v: &str) -> Option<Parallelism> {
    crate::tracks::PARALLELISMS
        .iter()
        .copied()
        .chain([Parallelism::Unknown])
        .find(|p| format!("{p:?}").eq_ignore_ascii_case(v))
}

fn status_named(v: &str) -> Option<Status> {
    Some(match v.to_ascii_lowercase().as_str() {
        "matched" => Status::Matched,
        "low" | "low-confidence" | "lowconfidence" => Status::Low,
        "unmatched" => Status::Unmatched,
        "fused" => Status::Fused,
        "duplicated" | "dup" => Status::Duplicated,
        _ => return None,
    })
}

fn rank_range(v: &str) -> Result<(u32, u32), FilterError> {
    let bad = || FilterError(format!("bad rank `{v}` (a rank, or a range such as 0-7)"));
    let (a, z) = v.split_once('-').unwrap_or((v, v));
    let (a, z) = (
        a.parse::<u32>().map_err(|_| bad())?,
        z.parse::<u32>().map_err(|_| bad())?,
    );
    if a > z {
        return Err(bad());
    }
    Ok((a, z))
}

/// `>=1MiB`, `<4096`, `1KB..1MB`, `64MiB` (exactly).
fn range(v: &str, num: impl Fn(&str) -> Option<f64>) -> Result<Range, FilterError> {
    let bad = || FilterError(format!("bad range `{v}` (e.g. >=1MiB, <100, 1KB..1MB)"));
    let n = |s: &str| num(s.trim()).filter(|x| x.is_finite()).ok_or_else(bad);
    let r = if let Some(x) = v.strip_prefix(">=") {
        Range {
            min: n(x)?,
            max: f64::INFINITY,
        }
    } else if let Some(x) = v.strip_prefix("<=") {
        Range {
            min: f64::NEG_INFINITY,
            max: n(x)?,
        }
    } else if let Some(x) = v.strip_prefix('>') {
        let x = n(x)?;
        Range {
            min: next_up(x),
            max: f64::INFINITY,
        }
    } else if let Some(x) = v.strip_prefix('<') {
        let x = n(x)?;
        Range {
            min: f64::NEG_INFINITY,
            max: next_down(x),
        }
    } else if let Some((a, z)) = v.split_once("..") {
        Range {
            min: n(a)?,
            max: n(z)?,
        }
    } else {
        let x = n(v)?;
        Range { min: x, max: x }
    };
    Ok(r)
}

// Strict bounds on measured floats: the nearest representable neighbours.
fn next_up(x: f64) -> f64 {
    if x == 0.0 {
        f64::MIN_POSITIVE
    } else if x > 0.0 {
        f64::from_bits(x.to_bits() + 1)
    } else {
        f64::from_bits(x.to_bits() - 1)
    }
}

fn next_down(x: f64) -> f64 {
    -next_up(-x)
}

/// Bytes with an optional unit: `KB`/`MB`/`GB` are powers of 1000, `KiB`/`MiB`/`GiB` (and
/// `K`/`M`/`G`) powers of 1024, as NCCL's own tools print sizes.
fn parse_bytes(v: &str) -> Option<f64> {
    let digits = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(digits);
    let x: f64 = num.parse().ok()?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(x * scale)
}

/// What a filter kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FilterCounts {
    pub kept: u64,
    pub total: u64,
    /// Of the kept kernels, those without a log line and those matched with low confidence.
    pub unmatched: u64,
    pub low_confidence: u64,
}

/// The timeline with only the kernels `filter` keeps. Tracks of ranks a rank term excludes are
/// dropped; other tracks stay, empty or not, so rows do not jump as the other terms change.
/// Summaries are rebuilt for what is kept.
pub fn filter_timeline(
    analysis: &Analysis,
    timeline: &Timeline,
    clocks: &ClockSync,
    filter: &Filter,
) -> (Timeline, FilterCounts) {
    let total = timeline.tracks.iter().map(|t| t.spans.len() as u64).sum();
    if filter.is_empty() {
        let counts = FilterCounts {
            kept: total,
            total,
            ..FilterCounts::default()
        };
        return (timeline.clone(), counts);
    }
    let mut kept: Vec<Vec<bool>> = timeline
        .tracks
        .iter()
        .map(|t| vec![false; t.spans.len()])
        .collect();
    walk_span_facts(analysis, timeline, clocks, |t, i, f| {
        kept[t][i] = filter.keeps(analysis, f);
    });
    let mut out = Timeline {
        tracks: Vec::new(),
        start_ns: timeline.start_ns,
        end_ns: timeline.end_ns,
        markers: timeline.markers.clone(),
    };
    let mut counts = FilterCounts {
        total,
        ..FilterCounts::default()
    };
    for (track, keep) in timeline.tracks.iter().zip(kept) {
        let rank = track
            .source
            .as_ref()
            .and_then(|(p, _)| track_rank(analysis, p));
        if !filter.keeps_rank(rank) {
            continue;
        }
        let spans: Vec<_> = track
            .spans
            .iter()
            .zip(keep)
            .filter_map(|(s, k)| k.then_some(*s))
            .collect();
        counts.kept += spans.len() as u64;
        out.tracks.push(Track {
            label: track.label.clone(),
            lod: Lod::build(&spans),
            par_lod: Lod::build_by(&spans, |s| s.par),
            spans,
            source: track.source.clone(),
        });
    }
    (out, counts)
}

/// How the page wants the timeline: its filter query and its clock.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TimelineView {
    pub filter: String,
    /// Each rank's own clock instead of the reference rank's.
    pub original_clock: bool,
}

impl TimelineView {
    /// The clock correction the timeline is drawn with (none for the original clocks).
    pub fn clocks(&self, analysis: &Analysis) -> ClockSync {
        if self.original_clock {
            ClockSync::default()
        } else {
            analysis.clocks.clone()
        }
    }

    /// The timeline to draw: every GPU's kernels in the chosen clock, marked
    /// ([`crate::annotate_spans`]) and filtered. Errors when the query cannot be read.
    pub fn timeline(
        &self,
        session: &Session,
        analysis: &Analysis,
    ) -> Result<(Timeline, FilterCounts), FilterError> {
        let filter = Filter::parse(&self.filter)?;
        let clocks = self.clocks(analysis);
        let mut base = crate::build(session, &analysis.processes, &clocks);
        annotate_spans(analysis, &mut base, &clocks);
        base.markers = crate::marker_rows(session, analysis, &clocks);
        let (shown, mut counts) = if filter.is_empty() {
            let total = base.tracks.iter().map(|t| t.spans.len() as u64).sum();
            let counts = FilterCounts {
                kept: total,
                total,
                ..FilterCounts::default()
            };
            (base, counts)
        } else {
            filter_timeline(analysis, &base, &clocks, &filter)
        };
        for s in shown.tracks.iter().flat_map(|t| &t.spans) {
            match s.mark {
                Mark::Unmatched => counts.unmatched += 1,
                Mark::LowConfidence => counts.low_confidence += 1,
                Mark::Matched => {}
            }
        }
        Ok((shown, counts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse_into_terms() {
        let f = Filter::parse("op:allreduce,p2p par:TP size:>=1MiB -rank:0-3 status:low").unwrap();
        assert_eq!(
            f.terms[0].test,
            Test::Op(vec![
                OpType::AllReduce,
                OpType::Send,
                OpType::Recv,
                OpType::SendRecv
            ])
        );
        assert_eq!(f.terms[1].test, Test::Parallelism(vec![Parallelism::TP]));
        assert_eq!(
            f.terms[2].test,
            Test::Size(Range {
                min: 1048576.0,
                max: f64::INFINITY
            })
        );
        assert!(f.terms[3].negate);
        assert_eq!(f.terms[3].test, Test::Rank(vec![(0, 3)]));
        assert_eq!(f.terms[4].test, Test::Status(vec![Status::Low]));
        // Bare words.
        let f = Filter::parse("AllGather dp unmatched").unwrap();
        assert_eq!(f.terms[0].test, Test::Op(vec![OpType::AllGather]));
        assert_eq!(f.terms[1].test, Test::Parallelism(vec![Parallelism::DP]));
        assert_eq!(f.terms[2].test, Test::Status(vec![Status::Unmatched]));
        assert!(Filter::parse("  ").unwrap().is_empty());
    }

    #[test]
    fn ranges_read_units_and_strict_bounds() {
        let r = |v| range(v, parse_bytes).unwrap();
        assert_eq!(r("1KB..2MB"), Range { min: 1e3, max: 2e6 });
        assert_eq!(
            r("4096"),
            Range {
                min: 4096.0,
                max: 4096.0
            }
        );
        assert!(!r("<4k").contains(4096.0) && r("<4k").contains(4095.0));
        assert!(!r(">1").contains(1.0) && r(">1").contains(1.5));
        assert!(r("<=1.5GiB").contains(1.5 * 1024.0 * 1024.0 * 1024.0));
    }

    #[test]
    fn bad_queries_say_what_is_wrong() {
        for (q, says) in [
            ("foo:1", "unknown key `foo`"),
            ("op:allsum", "unknown operation `allsum`"),
            ("rank:3-1", "bad rank `3-1`"),
            ("size:big", "bad range `big`"),
            ("bw:", "no value"),
            ("bandwidth", "not an operation"),
            ("par:xp", "unknown parallelism"),
        ] {
            let e = Filter::parse(q).unwrap_err();
            assert!(e.0.contains(says), "{q}: {e}");
        }
        assert!(Filter::parse(&"op:allreduce ".repeat(1000)).is_err());
        // Markup is only ever text: it is reported back, never interpreted here.
        let e = Filter::parse("<img src=x onerror=alert(1)>").unwrap_err();
        assert!(e.0.contains("<img"));
    }
}
