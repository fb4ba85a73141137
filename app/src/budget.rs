//! Will these files fit? The page's worker holds every record in wasm32 memory, at most 4 GiB,
//! and a worker that runs out dies mid-analysis. So before loading, the page estimates the
//! memory a set of files needs from their kinds and sizes, and above the limit offers a subset
//! (or the native command) instead of a crash.
//!
//! The factors are measured (docs/PERFORMANCE.md, "In the page"): 1 GB of logs peaked at 3.3 GB
//! of worker memory during the analysis; a 930 MB export took 1.75 GB.

/// Worker memory per byte of an NCCL log, at the analysis' peak.
const LOG_FACTOR: f64 = 3.3;
/// Worker memory per byte of an Nsight Systems export.
const EXPORT_FACTOR: f64 = 1.9;
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
        assert_eq!(estimate("a.log", 1_000).needs, 3_300);
        assert_eq!(estimate("rank0.txt", 1_000).needs, 3_300);
        assert_eq!(estimate("report.SQLITE", 1_000).needs, 1_900);
        assert_eq!(estimate("a.log.gz", 1_000).needs, 26_400);
        // The measured cases: 1 GB of logs loaded (3.3 GB at the peak), a 930 MB export did,
        // a 2.19 GB export did not.
        assert!(fits(
            estimate("x.log", 1_000_000_000).needs,
            0,
            DEFAULT_LIMIT_BYTES
        ));
        assert!(!fits(
            estimate("x.log", 1_200_000_000).needs,
            0,
            DEFAULT_LIMIT_BYTES
        ));
        assert!(fits(
            estimate("r.sqlite", 930_000_000).needs,
            0,
            DEFAULT_LIMIT_BYTES
        ));
        assert!(!fits(
            estimate("r.sqlite", 2_188_000_000).needs,
            0,
            DEFAULT_LIMIT_BYTES
        ));
        assert!(!fits(u64::MAX, 1, DEFAULT_LIMIT_BYTES));
    }
}
