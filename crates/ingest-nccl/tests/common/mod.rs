//! Shared test helpers: where the real fixtures are.

#![allow(dead_code)]

use std::path::PathBuf;

/// `$NCCLSCOPE_REAL_FIXTURES/nccl`, else the shared checkout next to the workspace; `None` (and a
/// notice) when absent, so the tests skip rather than fail on a machine without them.
pub fn nccl_dir() -> Option<PathBuf> {
    let base = std::env::var_os("NCCLSCOPE_REAL_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/fixtures/real"
            ))
        });
    let dir = base.join("nccl");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "notice: real NCCL fixtures not found at {}; skipping",
            dir.display()
        );
        None
    }
}

/// Every `*.log` fixture: (file name, bytes), sorted by name.
pub fn fixtures() -> Vec<(String, Vec<u8>)> {
    let Some(dir) = nccl_dir() else {
        return Vec::new();
    };
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("read fixture dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).expect("read fixture"),
            )
        })
        .collect();
    v.sort();
    v
}

/// The one fixture whose name starts with `prefix`.
pub fn fixture(prefix: &str) -> Option<(String, Vec<u8>)> {
    let all = fixtures();
    if all.is_empty() {
        return None;
    }
    let mut hits: Vec<_> = all
        .into_iter()
        .filter(|(n, _)| n.starts_with(prefix))
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "fixture prefix {prefix} must name exactly one file"
    );
    hits.pop()
}
