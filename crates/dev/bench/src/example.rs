//! Measurements made by a crate's own example, built and run as a child process: the examples
//! that count their allocations (a counting allocator is process-wide, and this crate keeps
//! none of its own).

use crate::browser::root;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `package`'s `example` (release); the path of its binary.
pub fn built(package: &str, example: &str) -> Result<PathBuf, String> {
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
    Ok(target.join("release/examples").join(example))
}

/// Runs a built example with `args`; its standard output.
pub fn output(binary: &Path, args: &[String]) -> Result<String, String> {
    let name = binary
        .file_name()
        .map_or("example".into(), |n| n.to_string_lossy());
    let out = Command::new(binary)
        .args(args)
        .output()
        .map_err(|e| format!("{name}: {e}"))?;
    if !out.status.success() {
        return Err(format!("the {name} example failed"));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
