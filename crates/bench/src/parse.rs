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
        "Ours: `LogParser` fed 1 MiB chunks as the page feeds it, on one thread (as the page's worker \
         parses) and on the default threads (natively: one reader per core plus the applying thread). \
         Reference lines: `wc -l` (coreutils, spawned on the file in the page cache), a memchr newline \
         count in-process, and a regex-per-line parser of the thesis' kind \
         (`crates/bench/src/regex_baseline.rs`, one thread; compared with ours on one thread). Best of 3 \
         each. Targets: ours ≥ 0.4× `wc -l`, ≥ 20× the regex baseline.",
    );
    let threads = LogParser::new("bench", 0).threads();
    let mt_head = format!("ours {threads} threads MB/s");
    report.row(&[
        "size",
        "lines",
        "ours 1 thread MB/s",
        &mt_head,
        "wc -l MB/s",
        "memchr MB/s",
        "regex MB/s",
        "1 thread / wc -l",
        "threads / wc -l",
        "1 thread / regex",
    ]);
    let mut ours_pts = Vec::new();
    let mut regex_pts = Vec::new();
    for &mb in sizes_mb {
        let path = crate::inputs::log_of_size(mb);
        let bytes = std::fs::read(&path).expect("read the bench log");
        let size = bytes.len() as f64;
        let parse = |n: usize| {
            let mut out = (0, 0);
            let t = best_of(3, || {
                let mut p = LogParser::new("bench", 0).with_threads(n);
                for c in bytes.chunks(1 << 20) {
                    p.feed(c);
                }
                let log = p.finish();
                out = (log.counters.total_lines, log.ops.len());
            });
            (t, out.0, out.1)
        };
        let (ours, lines, ops) = parse(1);
        let (ours_mt, _, ops_mt) = parse(threads);
        assert_eq!(ops_mt, ops, "threads change nothing");
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
            &mbps(ours_mt),
            &mbps(wc),
            &mbps(memchr),
            &mbps(regex),
            &format!("{:.2}", wc / ours),
            &format!("{:.2}", wc / ours_mt),
            &format!("{:.1}", regex / ours),
        ]);
    }
    report.growth("ours (1 thread)", exponent(&ours_pts));
    report.growth("regex baseline", exponent(&regex_pts));
}
