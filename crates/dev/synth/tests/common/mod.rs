//! What the generator's tests share.

use std::path::PathBuf;

/// The real NCCL log fixtures' directory (`real_fixtures`), or `None` with a printed notice when
/// they are absent.
pub fn fixtures() -> Option<PathBuf> {
    testkit::fixtures::dir("nccl")
}
