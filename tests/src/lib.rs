//! Shared helpers of the cross-crate tests in `tests/*.rs`.

use std::path::PathBuf;

/// The real public fixtures (`NCCLSCOPE_REAL_FIXTURES`, default `../shared/fixtures/real`), or
/// `None` with a printed notice when they are absent (CI sets the variable and checks it exists).
pub fn real_fixtures() -> Option<PathBuf> {
    let dir = std::env::var_os("NCCLSCOPE_REAL_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/fixtures/real"
            ))
        });
    if dir.join("nccl").is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "notice: real fixtures not found at {}; test skipped",
            dir.display()
        );
        None
    }
}

/// A fresh empty directory for one test's outputs (per process, so parallel runs never share).
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("ncclscope-tests-{}", std::process::id()))
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temp dir is writable");
    dir
}
