//! Log parsing against the line-scan limit (`wc -l` on the same file, and a memchr newline
//! count in-process) and against the regex-per-line baseline of the thesis' kind; and the same
//! parser built for wasm as the page ships it, in Chromium, against the native one on the same
//! file, right after it.

use crate::growth::exponent;
use crate::regex_baseline::RegexBaseline;
use crate::report::{Report, Verdict};
use crate::{best_kept, best_of, browser, Options};
use ingest_nccl::LogParser;
use std::process::Command;

/// Log sizes, MB.
pub fn sizes(quick: bool) -> Vec<usize> {
    if quick {
        vec![5, 10, 20]
    } else {
        vec![40, 160, 640]
    }
}

/// Parses `bytes` fed in 16 MiB chunks on `threads` threads, best of `rounds`: (seconds, lines,
/// operations).
fn parse(bytes: &[u8], threads: usize, rounds: usize) -> (f64, u64, usize) {
    let (t, log) = best_kept(rounds, || {
        let mut p = LogParser::new("bench", 0).with_threads(threads);
        for c in bytes.chunks(CHUNK) {
            p.feed(c);
        }
        p.finish()
    });
    (t, log.counters.total_lines, log.ops.len())
}

const WASM_TARGET: &str = "wasm parsing in Chromium ≥ 0.5× native (issue 4)";

/// A row of the wasm table, measured beside the native rows.
struct WasmRow {
    size: f64,
    native: f64,
    wasm: Result<f64, String>,
}

/// Bytes fed to the parser at a time: the page's 16 MiB file slices, and the command's reads.
const CHUNK: usize = 16 << 20;

pub fn run(sizes_mb: &[usize], opts: &Options, report: &mut Report) {
    report.section(
        "Log parsing (issue 4)",
        "Ours: `LogParser` fed 16 MiB chunks as the page and the command feed it, on one thread (as the page's worker \
         parses) and on the default threads (natively: one reader per core plus the applying thread). \
         Reference lines: `wc -l` (coreutils, spawned on the file in the page cache), a memchr newline \
         count in-process, and a regex-per-line parser of the thesis' kind \
         (`crates/dev/bench/src/regex_baseline.rs`, one thread; compared with ours on one thread). Best of 3 \
         each (the regex baseline: one run). Files: the generator's `tp4` rank logs concatenated to \
         size. Targets: ours ≥ 0.4× `wc -l`, ≥ 20× the regex baseline.",
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
    let (mut ours_pts, mut regex_pts, mut wasm_pts) = (Vec::new(), Vec::new(), Vec::new());
    let (mut vs_wc, mut vs_regex) = (Vec::new(), Vec::new());
    let mut wasm_rows = Vec::new();
    for &mb in sizes_mb {
        let path = crate::inputs::log_of_size(mb);
        let bytes = std::fs::read(&path).expect("read the bench log");
        let size = bytes.len() as f64;
        let (ours, lines, ops) = parse(&bytes, 1, 3);
        let (ours_mt, _, ops_mt) = parse(&bytes, threads, 3);
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
        let (regex, baseline_result) = best_kept(1, || baseline.parse(text));
        let baseline_ops = baseline_result.len();
        assert_eq!(
            baseline_ops,
            ops,
            "the regex baseline and our parser disagree on {}",
            path.display()
        );
        ours_pts.push((size, ours));
        regex_pts.push((size, regex));
        vs_wc.push(wc / ours.min(ours_mt));
        vs_regex.push(regex / ours);
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
        if opts.browser {
            // Native again right before the browser, so both see the same moment's load.
            let (native, _, _) = parse(&bytes, 1, 3);
            let wasm = in_chromium(&path, ops);
            if let Ok(t) = wasm {
                wasm_pts.push((size, t));
            }
            wasm_rows.push(WasmRow { size, native, wasm });
        }
    }
    report.growth("time of ours, 1 thread, vs bytes", exponent(&ours_pts));
    report.growth("time of the regex baseline vs bytes", exponent(&regex_pts));
    report.target(
        "log parsing ≥ 0.4× `wc -l` natively (issue 4)",
        format!("{} (best of 1 or {threads} threads)", span(&vs_wc, "×")),
        Verdict::of(true, vs_wc.iter().all(|&r| r >= 0.4)),
    );
    report.target(
        "log parsing ≥ 20× the regex baseline (issue 11)",
        span(&vs_regex, "×"),
        Verdict::of(true, vs_regex.iter().all(|&r| r >= 20.0)),
    );
    wasm_table(&wasm_rows, &wasm_pts, opts, report);
}

fn wasm_table(rows: &[WasmRow], pts: &[(f64, f64)], opts: &Options, report: &mut Report) {
    report.section(
        "Log parsing in Chromium, wasm (issue 4)",
        "The same parser built as the page ships it (profile `wasm-release`, `+simd128`, wasm-bindgen, \
         `wasm-opt -Os`: `crates/dev/bench/wasm`), in a Web Worker of headless Chromium \
         (`tests/browser/bench/wasm.mjs`), on the same files: the file's bytes copied into wasm \
         memory once, then parsed in 16 MiB chunks, best of 3. Reference: the native parser on one \
         thread (the page's worker has one), best of 3, measured right before on the same file. \
         Target: wasm ≥ 0.5× native.",
    );
    if !opts.browser {
        report.line("Not measured: browser measurements are off in this run.");
        report.target(WASM_TARGET, "—".into(), Verdict::NotMeasured);
        return;
    }
    report.row(&[
        "size",
        "native 1 thread MB/s",
        "wasm in Chromium MB/s",
        "wasm / native",
    ]);
    let mut ratios = Vec::new();
    for r in rows {
        let mbps = |t: f64| format!("{:.0}", r.size / 1e6 / t);
        let (wasm, ratio) = match &r.wasm {
            Ok(t) => {
                ratios.push(r.native / t);
                (mbps(*t), format!("{:.2}", r.native / t))
            }
            Err(e) => (format!("failed: {e}"), "—".into()),
        };
        report.row(&[
            &format!("{:.0} MB", r.size / 1e6),
            &mbps(r.native),
            &wasm,
            &ratio,
        ]);
    }
    report.growth("time of wasm parsing vs bytes", exponent(pts));
    report.target(
        WASM_TARGET,
        span(&ratios, "×"),
        Verdict::of(!ratios.is_empty(), ratios.iter().all(|&r| r >= 0.5)),
    );
}

/// The wasm parser's best time in Chromium on `path`; its operation count must be `ops`.
fn in_chromium(path: &std::path::Path, ops: usize) -> Result<f64, String> {
    let v = browser::run("wasm.mjs", &["parse".into(), path.display().to_string()])?;
    let wasm_ops = browser::num(&v, "ops") as usize;
    if wasm_ops != ops {
        return Err(format!("wasm found {wasm_ops} operations, native {ops}"));
    }
    Ok(browser::best(&v, "parse_s"))
}

/// "a–b×" over a set of ratios (or "a×" when they are one).
pub fn span(xs: &[f64], unit: &str) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match xs.len() {
        0 => "—".into(),
        _ if (hi - lo).abs() < 0.005 => format!("{lo:.2}{unit}"),
        _ => format!("{lo:.2}–{hi:.2}{unit}"),
    }
}
