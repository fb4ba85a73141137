//! Will these files fit? The page's worker holds every record in wasm32 memory, at most 4 GiB,
//! and a worker that runs out dies mid-analysis. So before loading, the page estimates the
//! memory a set of files needs from their kinds and sizes, and above the limit offers a subset
//! (or the native command) instead of a crash.
//!
//! The factors are measured (docs/PERFORMANCE.md, "In the page"), with some room: 1 GB of
//! `large-64` logs peaked at 1.16 GB of worker memory, an 815 MB `tp4` log (denser in operations)
//! at 1.43 GB, and a 2.19 GB export with 9.5 M NCCL kernels at 2.59 GB. PyTorch profiler traces:
//! see [`TRACE_FACTOR`].

/// Worker memory per byte of an NCCL log, at the analysis' peak.
const LOG_FACTOR: f64 = 2.0;
/// Worker memory per byte of an Nsight Systems export.
const EXPORT_FACTOR: f64 = 1.4;
/// An aggregate (`analyze --aggregate`): the worker holds its overview and one rank's section,
/// a small part of the file.
const AGGREGATE_FACTOR: f64 = 0.25;
/// A gzip-compressed log expands about this much.
const GZIP_EXPANSION: f64 = 8.0;
/// Worker memory per byte of a PyTorch profiler (Kineto) trace's JSON. The reader streams the
/// trace and keeps its NCCL kernels, steps and process groups; what it holds while reading grows
/// with the trace's NCCL collectives, not its bytes. Measured (docs/PERFORMANCE.md, "PyTorch
/// traces in the page's budget"): the page's worker reached 1.11 bytes of wasm memory per byte
/// for a 149 MB trace dense in collectives (476 NCCL kernels per MB, no other events), 0.72 at
/// 449 MB, and 0.26 for a 154 MB trace as real ones are (66 kernels per MB); natively the same
/// (a counting allocator: 1.07, 0.71, 0.24). The estimate takes the densest case with the room
/// the logs' factor has, so it refuses some sparse traces that would fit, never a crash.
const TRACE_FACTOR: f64 = 1.8;
/// A gzip-compressed trace expands about this much: the real traces of the fixtures expand
/// 13.0× to 17.5× (JSON repeats its keys), so the estimate takes a little more.
pub const TRACE_GZIP_EXPANSION: f64 = 18.0;
/// What wasm32 allows, less room for the analysis' own working set and the page's code.
pub const DEFAULT_LIMIT_BYTES: u64 = 3_500_000_000;

/// What a file is taken to be, from its name alone (the budget is decided before any byte is
/// read; a file named otherwise is costed as a log, the dearest per byte but exports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Log,
    Export,
    Aggregate,
    /// A PyTorch profiler trace (`*.json`, `*.pt.trace.json`, either gzip-compressed).
    Trace,
}

/// Its kind, and whether it is gzip-compressed, from a file's name.
pub fn kind_of(name: &str) -> (Kind, bool) {
    let lower = name.to_ascii_lowercase();
    let (base, gzip) = match lower.strip_suffix(".gz") {
        Some(base) => (base, true),
        None => (lower.as_str(), false),
    };
    let kind = if base.ends_with(".json") {
        Kind::Trace
    } else if gzip {
        // (The page reads exports and aggregates only uncompressed: any other gzip is a log.)
        Kind::Log
    } else if base.ends_with(".sqlite") || base.ends_with(".sqlite3") || base.ends_with(".db") {
        Kind::Export
    } else if base.ends_with(".agg") {
        Kind::Aggregate
    } else {
        Kind::Log
    };
    (kind, gzip)
}

/// One file's estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct FileEstimate {
    pub name: String,
    pub size: u64,
    pub needs: u64,
    /// For a compressed file, the expansion assumed (the estimate is from its compressed size).
    pub expansion: Option<f64>,
}

impl FileEstimate {
    /// What the page says of how the estimate was made, for a compressed file.
    pub fn basis(&self) -> Option<String> {
        self.expansion
            .map(|x| format!("compressed: estimated as about {x:.0}× its size once expanded"))
    }
}

/// The memory a file is expected to need in the worker, from its name and size.
pub fn estimate(name: &str, size: u64) -> FileEstimate {
    let (kind, gzip) = kind_of(name);
    let (factor, expansion) = match (kind, gzip) {
        (Kind::Export, _) => (EXPORT_FACTOR, None),
        (Kind::Aggregate, _) => (AGGREGATE_FACTOR, None),
        (Kind::Trace, false) => (TRACE_FACTOR, None),
        (Kind::Trace, true) => (TRACE_FACTOR, Some(TRACE_GZIP_EXPANSION)),
        (Kind::Log, false) => (LOG_FACTOR, None),
        (Kind::Log, true) => (LOG_FACTOR, Some(GZIP_EXPANSION)),
    };
    FileEstimate {
        name: name.to_string(),
        size,
        needs: (size as f64 * expansion.unwrap_or(1.0) * factor) as u64,
        expansion,
    }
}

/// Whether files needing `needs` bytes fit beside `in_use` bytes already held under `limit`.
pub fn fits(needs: u64, in_use: u64, limit: u64) -> bool {
    needs.saturating_add(in_use) <= limit
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1_000_000;
    const GB: u64 = 1_000_000_000;

    #[test]
    fn kinds_and_limits() {
        assert_eq!(estimate("a.log", 1_000).needs, 2_000);
        assert_eq!(estimate("rank0.txt", 1_000).needs, 2_000);
        assert_eq!(estimate("report.SQLITE", 1_000).needs, 1_400);
        assert_eq!(estimate("a.log.gz", 1_000).needs, 16_000);
        assert_eq!(estimate("run.agg", 1_000).needs, 250);
        let fit = |name: &str, size: u64| fits(estimate(name, size).needs, 0, DEFAULT_LIMIT_BYTES);
        // The measured cases load: 1 GB of logs, the 2.19 GB export.
        assert!(fit("x.log", GB));
        assert!(fit("r.sqlite", 2_188_000_000));
        // Twice as much would not fit in wasm32's 4 GiB.
        assert!(!fit("x.log", 2 * GB));
        assert!(!fit("r.sqlite", 4_400_000_000));
        assert!(!fits(u64::MAX, 1, DEFAULT_LIMIT_BYTES));
    }

    #[test]
    fn traces_by_name_plain_or_compressed() {
        for name in [
            "rank0.pt.trace.json",
            "worker3_step_12.1694128201557.pt.trace.json.gz",
            "TRACE.JSON",
            "nccl_data.json.gz",
        ] {
            assert_eq!(kind_of(name).0, Kind::Trace, "{name}");
        }
        assert_eq!(kind_of("a.log.gz"), (Kind::Log, true));
        assert_eq!(kind_of("r.sqlite.gz"), (Kind::Log, true));
        let plain = estimate("r.pt.trace.json", 100 * MB);
        assert_eq!(plain.needs, (100.0 * MB as f64 * TRACE_FACTOR) as u64);
        assert_eq!((plain.expansion, plain.basis()), (None, None));
        // A compressed trace: from its compressed size and the expansion, which the page says.
        let gz = estimate("r.pt.trace.json.gz", 10 * MB);
        assert_eq!(gz.expansion, Some(TRACE_GZIP_EXPANSION));
        assert_eq!(
            gz.needs,
            (10.0 * MB as f64 * TRACE_GZIP_EXPANSION * TRACE_FACTOR) as u64
        );
        assert_eq!(
            gz.basis().as_deref(),
            Some("compressed: estimated as about 18× its size once expanded")
        );
    }

    /// The cases: eight ranks of 150 MB load at once; a 2 GB trace is refused up front
    /// (the page then offers the command); so is its gzip of the same content.
    #[test]
    fn eight_ranks_of_150_mb_load_a_2_gb_trace_does_not() {
        let total = |files: &[(&str, u64)]| -> u64 {
            files.iter().map(|(n, s)| estimate(n, *s).needs).sum()
        };
        let eight: Vec<(String, u64)> = (0..8)
            .map(|r| (format!("rank{r}.pt.trace.json"), 150 * MB))
            .collect();
        let eight: Vec<(&str, u64)> = eight.iter().map(|(n, s)| (n.as_str(), *s)).collect();
        assert!(fits(total(&eight), 0, DEFAULT_LIMIT_BYTES));
        assert!(!fits(
            total(&[("rank0.pt.trace.json", 2 * GB)]),
            0,
            DEFAULT_LIMIT_BYTES
        ));
        let gz = (2.0 * GB as f64 / TRACE_GZIP_EXPANSION) as u64;
        assert!(!fits(
            total(&[("rank0.pt.trace.json.gz", gz + MB)]),
            0,
            DEFAULT_LIMIT_BYTES
        ));
    }
}
