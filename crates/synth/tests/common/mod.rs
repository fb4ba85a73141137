//! What the generator's tests share.

use std::path::PathBuf;

/// The real NCCL log fixtures (`NCCLSCOPE_REAL_FIXTURES`/nccl, default `../shared/fixtures/real`
/// beside the repository), or `None` with a printed notice when they are absent.
pub fn fixtures() -> Option<PathBuf> {
    let d = std::env::var("NCCLSCOPE_REAL_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/fixtures/real"
            ))
        });
    if d.join("nccl").is_dir() {
        Some(d.join("nccl"))
    } else {
        println!(
            "NOTICE: real fixtures not found at {}; skipping",
            d.display()
        );
        None
    }
}
