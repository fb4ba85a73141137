//! The test kit: what the tests and benchmarks share, so that none of them spells it out again.
//! Dev-only: no shipped crate depends on it.
//!
//! - [`fixtures`]: where the real public fixtures are (read in place, never copied);
//! - [`scratch_dir`]: a fresh directory for a test's outputs;
//! - `sessions` (feature `sessions`): files, directories or a generated run loaded into a
//!   [`load::Session`] as the command loads them.

pub mod fixtures;
#[cfg(feature = "sessions")]
pub mod sessions;

use std::path::PathBuf;

/// A fresh empty directory for one test's outputs (per process, so parallel runs never share).
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("ncclscope-tests-{}", std::process::id()))
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temp dir is writable");
    dir
}
