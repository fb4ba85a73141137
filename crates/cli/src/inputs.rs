//! Finding and loading input files: directories are walked, files are recognised by content.

use load::{sniff, FileReport, InputKind, LogLoader, Session, SNIFF_BYTES};
use sqlsource_native::NativeDb;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Bytes read from a log at a time.
const READ_CHUNK: usize = 16 << 20;

/// Every file under the given paths, directories walked recursively, in a stable order.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        walk(p, &mut out).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(out)
}

fn walk(p: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if p.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(p)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        entries.sort();
        for e in entries {
            walk(&e, out)?;
        }
    } else {
        // A missing file is reported by `load`, with the others still loaded.
        out.push(p.to_path_buf());
    }
    Ok(())
}

/// Loads one file into the session; every failure becomes a report, never a panic.
pub fn load(session: &mut Session, path: &Path) -> FileReport {
    let name = path.display().to_string();
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) => return FileReport::failed(&name, InputKind::Unknown, size, e.to_string()),
    };
    let mut head = vec![0u8; SNIFF_BYTES];
    let n = match read_up_to(&mut file, &mut head) {
        Ok(n) => n,
        Err(e) => return FileReport::failed(&name, InputKind::Unknown, size, e.to_string()),
    };
    head.truncate(n);
    let kind = sniff(&head);
    match kind {
        InputKind::NsysSqlite => match NativeDb::open(path) {
            Ok(db) => session.add_export(&db, &name, size),
            Err(e) => FileReport::failed(&name, InputKind::NsysSqlite, size, e.to_string()),
        },
        // Text without an NCCL line in its head may be a log after a long preamble: streamed
        // through the parser like a log, kept only if some line of it is NCCL output.
        InputKind::NcclLog | InputKind::Gzip | InputKind::Text => {
            let mut loader = LogLoader::new(&name, session.next_file_index());
            loader.feed(&head);
            // Big chunks: the parser reads each one on every core and its threads meet at
            // the chunk's end, so 16 MiB (as the page's slices) keeps them busy between.
            let mut buf = Vec::with_capacity(READ_CHUNK);
            loop {
                buf.clear();
                match (&mut file).take(READ_CHUNK as u64).read_to_end(&mut buf) {
                    Ok(0) => break,
                    Ok(_) => loader.feed(&buf),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        return FileReport::failed(&name, InputKind::NcclLog, size, e.to_string())
                    }
                }
            }
            match loader.finish_sniffed(size) {
                (_, false) if kind == InputKind::Text => not_an_input(&name, size),
                (log, _) => session.add_log(log),
            }
        }
        InputKind::Unknown => not_an_input(&name, size),
    }
}

/// The report of a file that is neither a log nor an export.
fn not_an_input(name: &str, size: u64) -> FileReport {
    FileReport::failed(
        name,
        InputKind::Unknown,
        size,
        "neither an NCCL debug log nor an Nsight Systems SQLite export; skipped".into(),
    )
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
