//! End to end natively: every file of a generated run loaded and analysed as `ncclscope analyze`
//! does (parse, read exports, align, enrich), for the three runs the page's end-to-end targets
//! name (8 ranks × 10⁴, 64 × 5·10⁴ and 256 × 2·10⁴ operations per rank). The reference is the
//! time to read the same bytes from disk.

use crate::growth::exponent;
use crate::{best_of, Report};
use pipeline::{analyse, LogLoader, Session, UserSizes};
use sqlsource_native::NativeDb;
use std::path::Path;

/// One end-to-end run: a label, the layout (a generator config) and the operations per rank.
pub struct Run {
    pub label: &'static str,
    pub config: synth::RunConfig,
    pub ops_per_rank: u64,
}

/// The three runs of the page's end-to-end targets; `scale` shrinks the operation counts.
pub fn standard_runs(scale: f64) -> Vec<Run> {
    let preset = |name: &str| synth::preset(name).expect("a preset").config;
    // 256 ranks: huge-1024's model on 32 nodes (TP8 PP4 DP8).
    let mut r256 = preset("huge-1024");
    r256.layout.dp = 8;
    r256.nodes = 32;
    let ops = |n: f64| (n * scale).max(1.0) as u64;
    vec![
        Run {
            label: "8 ranks × 10⁴ ops",
            config: preset("demo"),
            ops_per_rank: ops(1e4),
        },
        Run {
            label: "64 ranks × 5·10⁴ ops",
            config: preset("large-64"),
            ops_per_rank: ops(5e4),
        },
        Run {
            label: "256 ranks × 2·10⁴ ops",
            config: r256,
            ops_per_rank: ops(2e4),
        },
    ]
}

pub fn run(runs: &[Run], report: &mut Report) {
    report.section(
        "End to end, natively (issue 11)",
        "Load every log and export of a generated run and analyse it, single process (`pipeline`, as \
         `ncclscope analyze`); one round. Reference: reading the same files' bytes.",
    );
    report.row(&[
        "run",
        "files",
        "bytes",
        "NCCL ops",
        "load + analyse s",
        "read bytes s",
        "ratio",
    ]);
    let mut pts = Vec::new();
    for r in runs {
        let config = crate::inputs::scaled(r.config.clone(), r.ops_per_rank);
        let world = config.layout.world();
        let dir = crate::inputs::run(&format!("e2e-{world}x{}", r.ops_per_rank), &config);
        let label = r.label;
        let logs = crate::inputs::files(&dir, ".log");
        let exports = crate::inputs::files(&dir, ".sqlite");
        let bytes: u64 = logs
            .iter()
            .chain(&exports)
            .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
            .sum();
        let mut ops = 0usize;
        let t = best_of(1, || {
            let mut session = Session::default();
            for f in &logs {
                load_log(&mut session, f);
            }
            for f in &exports {
                let db = NativeDb::open(f).expect("open an export");
                session.add_export(&db, &f.display().to_string(), 0);
            }
            let a = analyse(&session, &UserSizes::default());
            ops = session.logs().iter().map(|l| l.parsed.ops.len()).sum();
            std::hint::black_box(a);
        });
        let read = best_of(1, || {
            for f in logs.iter().chain(&exports) {
                std::hint::black_box(std::fs::read(f).expect("read"));
            }
        });
        pts.push((ops as f64, t));
        report.row(&[
            label,
            &(logs.len() + exports.len()).to_string(),
            &format!("{:.0} MB", bytes as f64 / 1e6),
            &ops.to_string(),
            &format!("{t:.2}"),
            &format!("{read:.2}"),
            &format!("{:.1}", t / read),
        ]);
    }
    report.growth("load + analyse vs operations", exponent(&pts));
}

fn load_log(session: &mut Session, path: &Path) {
    use std::io::Read;
    let mut loader = LogLoader::new(&path.display().to_string(), session.next_file_index());
    let mut f = std::fs::File::open(path).expect("open a log");
    let mut buf = vec![0u8; 1 << 22];
    loop {
        let n = f.read(&mut buf).expect("read a log");
        if n == 0 {
            break;
        }
        loader.feed(&buf[..n]);
    }
    session.add_log(loader.finish(0));
}
