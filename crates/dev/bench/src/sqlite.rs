//! Reading Nsight Systems exports: `ingest_nsys::read_export` natively over rusqlite against
//! SQLite's own `count(*)` scan, and the same reader built for wasm over sql.js in Chromium (what
//! the page's worker runs) against the native reader on the same file, right after it.
//!
//! Why the whole reader and not one query: the page pays for sql.js's engine *and* for every
//! cell crossing from sql.js into Rust as a JS value, and only the reader shows both. The two
//! engines' bare scans are in the table too (`count(*)` through the same `SqlSource` trait).

use crate::growth::exponent;
use crate::parse::span;
use crate::report::{Report, Verdict};
use crate::{best_of, browser, Options};
use ingest_nsys::{read_export, ReadOptions};
use sqlsource_native::NativeDb;
use std::path::{Path, PathBuf};

/// Iteration counts of the `tp4` layout's export.
pub fn iterations(quick: bool) -> Vec<u32> {
    if quick {
        vec![1, 2, 4]
    } else {
        vec![10, 40, 160]
    }
}

/// One node's export of the `tp4` preset at `iterations`.
pub fn export_of(iterations: u32) -> PathBuf {
    let mut config = synth::preset("tp4").expect("the tp4 preset").config;
    config.model.iterations = iterations;
    let dir = crate::inputs::run(&format!("tp4-{iterations}it"), &config);
    crate::inputs::files(&dir, ".sqlite")
        .into_iter()
        .next()
        .expect("the run has an export")
}

/// One size's figures.
struct Measured {
    iterations: u32,
    bytes: u64,
    kernels: usize,
    read: f64,
    count: f64,
    bytes_per_kernel: f64,
    page: Result<Page, String>,
}

/// The page's figures: sql.js opening the bytes, the reader, sql.js's `count(*)`.
struct Page {
    open: f64,
    read: f64,
    count: f64,
}

pub fn run(iterations: &[u32], opts: &Options, report: &mut Report) {
    let rows: Vec<Measured> = iterations
        .iter()
        .map(|&it| measure(it, opts.browser))
        .collect();
    native_table(&rows, report);
    page_table(&rows, opts, report);
}

fn measure(iterations: u32, browser: bool) -> Measured {
    let file = export_of(iterations);
    let name = file.display().to_string();
    let bytes = std::fs::metadata(&file).map_or(0, |m| m.len());
    let mut kernels = 0;
    let mut bytes_per_kernel = 0.0;
    let read = best_of(3, || {
        let db = NativeDb::open(&file).expect("open the export");
        let e = read_export(&db, &name, &ReadOptions::default()).expect("read the export");
        kernels = e.kernels.len();
        // The compact store's rows plus its interned launch sites shared out.
        bytes_per_kernel = e.kernels.bytes_per_kernel();
    });
    let count = best_of(3, || {
        let c = rusqlite_count(&file);
        assert!(c > 0);
    });
    let page = if browser {
        in_chromium(&file, kernels)
    } else {
        Err("browser measurements are off in this run".into())
    };
    Measured {
        iterations,
        bytes,
        kernels,
        read,
        count,
        bytes_per_kernel,
        page,
    }
}

fn native_table(rows: &[Measured], report: &mut Report) {
    report.section(
        "Reading exports natively (issue 5)",
        "`ingest_nsys::read_export` over rusqlite (open and read) on one node's report of the `tp4` \
         preset's layout (4 ranks) at growing iteration counts; best of 3. Reference: a bare \
         `SELECT count(*)` over the kernel table of the same file (SQLite's own scan). Bytes per \
         kernel: one row of the compact kernel store plus its share of the interned launch sites \
         (name, stream, device, process, shared by the kernels that carry them). Target (issue 5): read ≤ 30× `count(*)`.",
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
    for m in rows {
        report.row(&[
            &m.iterations.to_string(),
            &format!("{:.0} MB", m.bytes as f64 / 1e6),
            &m.kernels.to_string(),
            &format!("{:.3}", m.read),
            &format!("{:.0}", m.kernels as f64 / m.read),
            &format!("{:.3}", m.count),
            &format!("{:.1}", m.read / m.count),
            &format!("{:.1}", m.bytes_per_kernel),
        ]);
    }
    let pts: Vec<(f64, f64)> = rows.iter().map(|m| (m.kernels as f64, m.read)).collect();
    report.growth("time of read_export vs kernels", exponent(&pts));
    let ratios: Vec<f64> = rows.iter().map(|m| m.read / m.count).collect();
    report.target(
        "export reading ≤ 30× SQLite's `count(*)` natively (issue 5)",
        span(&ratios, "×"),
        Verdict::of(true, ratios.iter().all(|&r| r <= 30.0)),
    );
}

const SQLJS: &str = "sql.js in Chromium against rusqlite, same file and reader (issue 11)";

fn page_table(rows: &[Measured], opts: &Options, report: &mut Report) {
    report.section(
        "Reading exports in Chromium: sql.js against rusqlite (issues 5, 11)",
        "The same files and the same reader: `ingest_nsys::read_export` built for wasm as the page \
         ships it (`crates/dev/bench/wasm`) over sql.js (`sqlsource-sqljs`, the page's own copy of \
         sql.js 1.16), in a Web Worker of headless Chromium (`tests/browser/bench/wasm.mjs`), against \
         the native reader over rusqlite from the table above, measured right before. The page \
         first opens the export from its bytes (sql.js copies them into its memory): `open`. Best \
         of 3 each. Reference also: each engine's bare `count(*)` scan of the kernel table through \
         the same trait.",
    );
    if !opts.browser {
        report.line("Not measured: browser measurements are off in this run.");
        report.target(SQLJS, "—".into(), Verdict::NotMeasured);
        return;
    }
    report.row(&[
        "iterations",
        "file",
        "kernels",
        "native read s",
        "sql.js open s",
        "sql.js read s",
        "page (open + read) / native",
        "page read MB/s",
        "count(*) sql.js / rusqlite",
    ]);
    let mut pts = Vec::new();
    let mut ratios = Vec::new();
    for m in rows {
        let cells = match &m.page {
            Ok(p) => {
                let total = p.open + p.read;
                pts.push((m.kernels as f64, total));
                ratios.push(total / m.read);
                [
                    format!("{:.3}", p.open),
                    format!("{:.3}", p.read),
                    format!("{:.1}", total / m.read),
                    format!("{:.0}", m.bytes as f64 / 1e6 / total),
                    format!("{:.1}", p.count / m.count),
                ]
            }
            Err(e) => [
                format!("failed: {e}"),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
            ],
        };
        let mut row = vec![
            m.iterations.to_string(),
            format!("{:.0} MB", m.bytes as f64 / 1e6),
            m.kernels.to_string(),
            format!("{:.3}", m.read),
        ];
        row.extend(cells);
        report.row(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
    report.growth("time of the page's open + read vs kernels", exponent(&pts));
    report.target(
        SQLJS,
        format!("page (open + read) {} native", span(&ratios, "×")),
        if ratios.is_empty() {
            Verdict::NotMeasured
        } else {
            Verdict::NoTarget
        },
    );
}

/// The page's reader on `file` in Chromium; its kernel count must be `kernels`.
fn in_chromium(file: &Path, kernels: usize) -> Result<Page, String> {
    let v = browser::run("wasm.mjs", &["export".into(), file.display().to_string()])?;
    let page_kernels = browser::num(&v, "kernels") as usize;
    if page_kernels != kernels {
        return Err(format!(
            "the page read {page_kernels} kernels, native {kernels}"
        ));
    }
    Ok(Page {
        open: browser::best(&v, "open_s"),
        read: browser::best(&v, "read_s"),
        count: browser::best(&v, "count_s"),
    })
}

fn rusqlite_count(file: &Path) -> i64 {
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
