//! Every input in `tests/fuzz-regressions/` (described in its README.md) is replayed through
//! [`fuzz_parse`], the fuzz target's own check: no panic, and the whole parse equals the chunked
//! one. `fuzz/run.sh` copies every crash, timeout and out-of-memory input the fuzzer finds into
//! that directory (named `fuzz-<kind>-<sha1>`), so that once committed, what the fuzzer ever
//! found is replayed by every `cargo test`. The inputs are also parsed in chunks of other sizes,
//! and gzip inputs inflated in blocks of other sizes.

use ingest_nccl::{fuzz_parse, is_nccl_log, LogStream, ParsedLog};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions")
}

/// The regression inputs, by name (every file but the README).
fn inputs() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir())
        .expect("tests/fuzz-regressions")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().is_some_and(|n| n != "README.md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("read"))
        })
        .collect();
    out.sort();
    out
}

fn streamed(data: &[u8], step: usize, block: Option<usize>) -> ParsedLog {
    let mut s = LogStream::new("fuzz", 0);
    if let Some(b) = block {
        s = s.with_gzip_block(b);
    }
    for c in data.chunks(step) {
        s.feed(c);
    }
    s.finish()
}

/// What is wrong with the replay of `data`, if anything (a panic is caught and named).
fn replay(data: &[u8]) -> Option<String> {
    let run = catch_unwind(AssertUnwindSafe(|| {
        let (whole, chunked) = fuzz_parse(data);
        if whole != chunked {
            return Some("fuzz_parse: the chunked parse differs from the whole one".to_string());
        }
        let _ = is_nccl_log(data.get(..64 * 1024).unwrap_or(data));
        for step in [1, 2, 3, 64, 4093] {
            if streamed(data, step, None) != whole {
                return Some(format!("{step}-byte chunks differ from the whole parse"));
            }
        }
        if ingest_nccl::is_gzip(data) {
            for block in [1, 7, 4096] {
                if streamed(data, 4093, Some(block)) != whole {
                    return Some(format!(
                        "{block}-byte gzip blocks differ from the whole parse"
                    ));
                }
            }
        }
        None
    }));
    match run {
        Ok(problem) => problem,
        Err(panic) => Some(format!(
            "panicked: {}",
            panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)")
        )),
    }
}

#[test]
fn every_fuzz_regression_input_parses_the_same_whole_and_in_chunks() {
    let inputs = inputs();
    assert!(
        inputs.len() >= 40,
        "only {} regression inputs",
        inputs.len()
    );
    let failures: Vec<String> = inputs
        .iter()
        .filter_map(|(name, data)| replay(data).map(|why| format!("{name}: {why}")))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The README lists every input, so that each says what it is.
#[test]
fn every_fuzz_regression_input_is_described() {
    let readme = std::fs::read_to_string(dir().join("README.md")).expect("README.md");
    let missing: Vec<String> = inputs()
        .into_iter()
        .map(|(name, _)| name)
        // What the fuzzer finds is named by its hash until someone describes it.
        .filter(|name| !name.starts_with("fuzz-") && !readme.contains(&format!("`{name}`")))
        .collect();
    assert!(missing.is_empty(), "not in README.md: {missing:?}");
}
