//! Reading Nsight Systems exports natively (rusqlite, the same queries the page runs in sql.js):
//! time per export against its NCCL kernel count, at three sizes. The in-page figures (sql.js in
//! Chromium, same files) come from `tests/browser/bench/`.

use crate::growth::exponent;
use crate::{best_of, Report};
use ingest_nsys::{read_export, ReadOptions};
use sqlsource_native::NativeDb;

pub fn run(iterations: &[u32], report: &mut Report) {
    report.section(
        "Reading exports natively (issue 5)",
        "`ingest_nsys::read_export` over rusqlite on one node's report of the `tp4` preset's layout \
         (4 ranks) at growing iteration counts; best of 3. Reference: a bare `SELECT count(*)` over \
         the kernel table of the same file (SQLite's own scan). Bytes per kernel: the NCCL kernel \
         record (`size_of`) plus its share of the heap it points to (names are shared).",
    );
    report.row(&[
        "iterations",
        "file",
        "kernels",
        "read s",
        "kernels/s",
        "count(*) s",
        "read / count(*)",
        "bytes/kernel",
    ]);
    let mut pts = Vec::new();
    for &it in iterations {
        let mut config = synth::preset("tp4").expect("the tp4 preset").config;
        config.model.iterations = it;
        let dir = crate::inputs::run(&format!("tp4-{it}it"), &config);
        let file = crate::inputs::files(&dir, ".sqlite")
            .into_iter()
            .next()
            .expect("the run has an export");
        let name = file.display().to_string();
        let bytes = std::fs::metadata(&file).map_or(0, |m| m.len());
        let mut kernels = 0;
        let mut bytes_per_kernel = 0.0;
        let read = best_of(3, || {
            let db = NativeDb::open(&file).expect("open the export");
            let e = read_export(&db, &name, &ReadOptions::default()).expect("read the export");
            kernels = e.kernels.len();
            // Each distinct name is one heap block (an `Arc<str>`: two counters and the text),
            // shared by the kernels carrying it.
            let names: std::collections::HashMap<*const u8, usize> = e
                .kernels
                .iter()
                .map(|k| (k.name.as_ptr(), 16 + k.name.len()))
                .collect();
            let heap: usize = names.values().sum();
            let size = e.kernels.first().map_or(0, std::mem::size_of_val);
            bytes_per_kernel = size as f64 + heap as f64 / kernels.max(1) as f64;
        });
        let count = best_of(3, || {
            let c = rusqlite_count(&file);
            assert!(c > 0);
        });
        pts.push((kernels as f64, read));
        report.row(&[
            &it.to_string(),
            &format!("{:.0} MB", bytes as f64 / 1e6),
            &kernels.to_string(),
            &format!("{read:.3}"),
            &format!("{:.0}", kernels as f64 / read),
            &format!("{count:.3}"),
            &format!("{:.1}", read / count),
            &format!("{bytes_per_kernel:.1}"),
        ]);
    }
    report.growth("read_export vs kernels", exponent(&pts));
}

fn rusqlite_count(file: &std::path::Path) -> i64 {
    use sqlsource::{SqlSource, Value};
    let db = NativeDb::open(file).expect("open the export");
    let mut n = 0;
    db.for_each_row(
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL",
        &mut |row| {
            if let Some(Value::Integer(c)) = row.first() {
                n = *c;
            }
            Ok(())
        },
    )
    .expect("count the kernels");
    n
}
