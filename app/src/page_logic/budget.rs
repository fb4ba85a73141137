//! Will these files fit? The page's worker holds every record in wasm32 memory, at most 4 GiB,
//! and a worker that runs out dies mid-analysis. So before loading, the page estimates the
//! memory a set of files needs from their kinds and sizes, and above the limit offers a subset
//! (or the native command) instead of a crash.
//!
//! The factors are measured (docs/PERFORMANCE.md, "In the page"), with some room: 1 GB of
//! `large-64` logs peaked at 1.16 GB of worker memory, an 815 MB `tp4` log (denser in operations)
//! at 1.43 GB, and a 2.19 GB export with 9.5 M NCCL kernels at 2.59 GB.

/// Worker memory per byte of an NCCL log, at the analysis' peak.
const LOG_FACTOR: f64 = 2.0;
/// Worker memory per byte of an Nsight Systems export.
const EXPORT_FACTOR: f64 = 1.4;
/// An aggregate (`analyze --aggregate`): the worker holds its overview and one rank's section,
/// a small part of the file.
const AGGREGATE_FACTOR: f64 = 0.25;
/// A gzip-compressed log expands about this much.
const GZIP_EXPANSION: f64 = 8.0;
/// What wasm32 allows, less room for the analysis' own working set and the page's code.
pub const DEFAULT_LIMIT_BYTES: u64 = 3_500_000_000;

/// One file's estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct FileEstimate {
    pub name: String,
    pub size: u64,
    pub needs: u64,
}

/// The memory a file is expected to need in the worker, from its name and size.
pub fn estimate(name: &str, size: u64) -> FileEstimate {
    let lower = name.to_ascii_lowercase();
    let factor =
        if lower.ends_with(".sqlite") || lower.ends_with(".sqlite3") || lower.ends_with(".db") {
            EXPORT_FACTOR
        } else if lower.ends_with(".agg") {
            AGGREGATE_FACTOR
        } else if lower.ends_with(".gz") {
            LOG_FACTOR * GZIP_EXPANSION
        } else {
            LOG_FACTOR
        };
    FileEstimate {
        name: name.to_string(),
        size,
        needs: (size as f64 * factor) as u64,
    }
}

/// Whether files needing `needs` bytes fit beside `in_use` bytes already held under `limit`.
pub fn fits(needs: u64, in_use: u64, limit: u64) -> bool {
    needs.saturating_add(in_use) <= limit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_limits() {
        assert_eq!(estimate("a.log", 1_000).needs, 2_000);
        assert_eq!(estimate("rank0.txt", 1_000).needs, 2_000);
        assert_eq!(estimate("report.SQLITE", 1_000).needs, 1_400);
        assert_eq!(estimate("a.log.gz", 1_000).needs, 16_000);
        assert_eq!(estimate("run.agg", 1_000).needs, 250);
        let fit = |name: &str, size: u64| fits(estimate(name, size).needs, 0, DEFAULT_LIMIT_BYTES);
        // The measured cases load: 1 GB of logs, the 2.19 GB export.
        assert!(fit("x.log", 1_000_000_000));
        assert!(fit("r.sqlite", 2_188_000_000));
        // Twice as much would not fit in wasm32's 4 GiB.
        assert!(!fit("x.log", 2_000_000_000));
        assert!(!fit("r.sqlite", 4_400_000_000));
        assert!(!fits(u64::MAX, 1, DEFAULT_LIMIT_BYTES));
    }
}
