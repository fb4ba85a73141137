//! Shared test helpers: the real fixtures, read.

#![allow(dead_code)]

/// Every real `*.log` fixture (`real_fixtures`): (file name, bytes), sorted by name; empty, with a
/// notice, on a machine without them.
pub fn fixtures() -> Vec<(String, Vec<u8>)> {
    testkit::fixtures::files("nccl", "log")
        .into_iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).expect("read fixture"),
            )
        })
        .collect()
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
