//! Log parsing against the line-scan limit (`wc -l` on the same file, and a memchr newline
//! count in-process) and against the regex-per-line baseline of the thesis' kind.

use crate::growth::exponent;
use crate::regex_baseline::RegexBaseline;
use crate::{best_of, Report};
use ingest_nccl::LogParser;
use std::process::Command;

pub fn run(sizes_mb: &[usize], report: &mut Report) {
    report.section(
        "Log parsing (issue 4)",
        "Ours: `LogParser` fed 1 MiB chunks as the page feeds it. Reference lines: `wc -l` (coreutils, \
         spawned on the file in the page cache, best of 3), a memchr newline count in-process, and a \
         regex-per-line parser of the thesis' kind (`crates/bench/src/regex_baseline.rs`). Targets: \
         ours ≥ 0.4× `wc -l`, ≥ 20× the regex baseline.",
    );
    report.row(&[
        "size",
        "lines",
        "ours MB/s",
        "wc -l MB/s",
        "memchr MB/s",
        "regex MB/s",
        "ours / wc -l",
        "ours / regex",
    ]);
    let mut ours_pts = Vec::new();
    let mut regex_pts = Vec::new();
    for &mb in sizes_mb {
        let path = crate::inputs::log_of_size(mb);
        let bytes = std::fs::read(&path).expect("read the bench log");
        let size = bytes.len() as f64;
        let (ours, lines, ops) = {
            let mut out = (0, 0);
            let t = best_of(3, || {
                let mut p = LogParser::new("bench", 0);
                for c in bytes.chunks(1 << 20) {
                    p.feed(c);
                }
                let log = p.finish();
                out = (log.counters.total_lines, log.ops.len());
            });
            (t, out.0, out.1)
        };
        let memchr = best_of(3, || {
            std::hint::black_box(memchr::memchr_iter(b'\n', &bytes).count());
        });
        let wc = best_of(3, || {
            let out = Command::new("wc").arg("-l").arg(&path).output();
            assert!(out.is_ok_and(|o| o.status.success()), "wc -l runs");
        });
        let text = std::str::from_utf8(&bytes).expect("generated logs are UTF-8");
        let baseline = RegexBaseline::default();
        let mut baseline_ops = 0;
        let regex = best_of(1, || baseline_ops = baseline.parse(text).len());
        assert_eq!(
            baseline_ops,
            ops,
            "the regex baseline and our parser disagree on {}",
            path.display()
        );
        ours_pts.push((size, ours));
        regex_pts.push((size, regex));
        let mbps = |t: f64| format!("{:.0}", size / 1e6 / t);
        report.row(&[
            &format!("{:.0} MB", size / 1e6),
            &lines.to_string(),
            &mbps(ours),
            &mbps(wc),
            &mbps(memchr),
            &mbps(regex),
            &format!("{:.2}", wc / ours),
            &format!("{:.1}", regex / ours),
        ]);
    }
    report.growth("ours", exponent(&ours_pts));
    report.growth("regex baseline", exponent(&regex_pts));
}
