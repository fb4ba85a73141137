//! Where the tests find the real public fixtures: `$NCCLSCOPE_REAL_FIXTURES`, else the shared
//! checkout beside the workspace (`../shared/fixtures/real`). They are read in place, never
//! copied. A test that needs them skips, with a printed notice, only when they are absent
//! (`.ci/run` sets the variable and fails if it is missing). Every test asks here instead of
//! spelling the lookup out.

use std::path::{Path, PathBuf};

/// The fixtures' root (with `nccl/` and `nsys/` below it), whether or not it exists.
pub fn root() -> PathBuf {
    std::env::var_os("NCCLSCOPE_REAL_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../../shared/fixtures/real"
            ))
        })
}

/// `root()/kind` (`"nccl"` or `"nsys"`); `None`, with a printed notice, when it is absent.
pub fn dir(kind: &str) -> Option<PathBuf> {
    let dir = root().join(kind);
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "notice: real {kind} fixtures not found at {}; skipping them",
            dir.display()
        );
        None
    }
}

/// Every file of `dir` whose extension is `ext`, sorted by path.
pub fn files_in(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading the fixtures at {}: {e}", dir.display()))
        .map(|e| e.expect("a fixture directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

/// Every `*.ext` fixture of `kind`, sorted; empty (with the notice of [`dir`]) when absent.
pub fn files(kind: &str, ext: &str) -> Vec<PathBuf> {
    dir(kind).map_or_else(Vec::new, |d| files_in(&d, ext))
}

/// The fixtures' root when they are present (judged by `nccl/`), else `None` with the notice.
pub fn present() -> Option<PathBuf> {
    dir("nccl").map(|_| root())
}
