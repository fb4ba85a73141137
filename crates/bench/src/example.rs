//! Measurements made by a crate's own example, built and run as a child process: the examples
//! that count their allocations (a counting allocator is process-wide, and this crate keeps
//! none of its own).

use crate::browser::root;
use std::process::Command;

/// Builds `package`'s `example` (release) and runs it with `args`; its standard output.
pub fn run(package: &str, example: &str, args: &[String]) -> Result<String, String> {
    let built = Command::new("cargo")
        .args([
            "build",
            "-q",
            "--release",
            "-p",
            package,
            "--example",
            example,
        ])
        .current_dir(root())
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    if !built.success() {
        return Err(format!("building {package}'s {example} example failed"));
    }
    let target = std::env::var("CARGO_TARGET_DIR").map_or(root().join("target"), Into::into);
    let out = Command::new(target.join("release/examples").join(example))
        .args(args)
        .output()
        .map_err(|e| format!("{example}: {e}"))?;
    if !out.status.success() {
        return Err(format!("the {example} example failed"));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
