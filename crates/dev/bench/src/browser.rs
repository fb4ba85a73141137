//! The Chromium side of the benchmarks: node scripts in `tests/browser/bench/` drive Debian's
//! Chromium through the browser tests' harness and print one JSON line, which this reads. They
//! are started per measurement, right beside the native measurement they are compared with.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// Why the browser measurements cannot run here, if they cannot.
pub fn check() -> Result<(), String> {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !Path::new(&chromium).exists() {
        return Err(format!(
            "no Chromium at {chromium} (`scripts/setup --browser`)"
        ));
    }
    if !root().join("node_modules/playwright-core").exists() {
        return Err("playwright-core is not installed (`scripts/setup`)".into());
    }
    for (built, by) in [
        (
            "dist/index.html",
            "the page (`trunk build --release --cargo-profile wasm-release`)",
        ),
        ("target/bench-web/index.html", "the wasm benchmark page"),
    ] {
        if !root().join(built).exists() {
            return Err(format!("{by} is not built ({built} is missing)"));
        }
    }
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err("node is not on PATH".into()),
    }
}

/// Runs `node tests/browser/bench/<script> args...` and returns the JSON of its last line.
pub fn run(script: &str, args: &[String]) -> Result<Value, String> {
    let out = Command::new("node")
        .arg(root().join("tests/browser/bench").join(script))
        .args(args)
        .current_dir(root())
        .output()
        .map_err(|e| format!("node {script}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "node {script} failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .filter(|l| !l.contains("unexpected operator"))
                .take(5)
                .collect::<Vec<_>>()
                .join(" / ")
        ));
    }
    let last = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or("");
    serde_json::from_str(last).map_err(|e| format!("node {script}: no JSON result ({e})"))
}

/// A number of a result (0 when absent).
pub fn num(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

/// The cells a page load's result gives after its time, in the end-to-end tables' order: the
/// worker's load (s), the analysis (s), the largest process's and the browser's peak RSS (GB),
/// and the worker's wasm memory (GB).
pub fn load_cells(v: &Value) -> [String; 4] {
    [
        format!("{:.1}", num(v, "worker_load_s")),
        format!("{:.1}", num(v, "analysis_s")),
        format!(
            "{:.2} / {:.2}",
            num(v, "largest_process_peak_mb") / 1e3,
            num(v, "browser_rss_peak_mb") / 1e3
        ),
        format!("{:.2}", num(v, "worker_wasm_memory_mb") / 1e3),
    ]
}

/// The least of a result's per-round times (seconds).
pub fn best(v: &Value, key: &str) -> f64 {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_f64)
        .fold(f64::INFINITY, f64::min)
}
