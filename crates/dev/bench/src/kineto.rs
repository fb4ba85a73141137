//! PyTorch profiler (Kineto) traces (issue 33): the streamed reader against a plain
//! `serde_json` parse of the same file, at three sizes, and the same reader built for wasm32
//! in a Chromium worker (`tests/browser/bench/wasm.mjs kineto`) on the same file right after;
//! the reader's memory on a big trace; and the page's load of 8 ranks' traces
//! (`kineto_page.rs`).
//!
//! Inputs: the generator's Kineto traces (`synth::kineto`, the `tp2pp2` layout's rank 0 in the
//! modern style, 40 unrelated events per collective as real traces hold), as many iterations as
//! make the size, kept in `target/bench-inputs/`.

use crate::growth::exponent;
use crate::report::{Report, Verdict};
use crate::{best_kept, browser, Options};
use std::path::PathBuf;

/// Trace sizes, MB.
pub fn sizes(quick: bool) -> Vec<usize> {
    if quick {
        vec![10, 20, 40]
    } else {
        vec![50, 150, 450]
    }
}

/// The size of the trace whose memory is reported.
fn big_mb(quick: bool) -> usize {
    if quick {
        100
    } else {
        2000
    }
}

const SPEED_TARGET: &str = "Kineto trace JSON read natively on one core ≥ 150 MB/s (issue 33)";
const PAGE_TARGET: &str =
    "Kineto trace JSON read in the page (wasm, Chromium worker) within 2.5× of native (issue 33)";

/// Bytes fed to the reader at a time: the page's slices and the command's reads.
const PIECE: usize = 16 << 20;

/// A trace of about `mb` megabytes (plain JSON), made once.
pub fn trace_of_size(mb: usize) -> PathBuf {
    let path = crate::inputs::dir().join(format!("kineto-{mb}MB.pt.trace.json"));
    if crate::inputs::cached(&path) {
        return path;
    }
    let mut cfg = synth::preset("tp2pp2").expect("the tp2pp2 preset").config;
    let style = synth::kineto::KinetoStyle::modern();
    // One iteration's bytes, then as many iterations as make the size.
    cfg.model.iterations = 1;
    let one = {
        let run = synth::kineto::KinetoRun::new(&cfg);
        let mut counter = Counter(0);
        run.write_rank(0, &style, &mut counter).expect("a trace");
        counter.0
    };
    cfg.model.iterations = ((mb as u64 * 1_000_000).div_ceil(one.max(1))).max(1) as u32;
    let run = synth::kineto::KinetoRun::new(&cfg);
    let part = path.with_extension("part");
    let mut out =
        std::io::BufWriter::new(std::fs::File::create(&part).expect("target/ is writable"));
    run.write_rank(0, &style, &mut out)
        .expect("write a bench trace");
    std::io::Write::flush(&mut out).expect("write a bench trace");
    drop(out);
    std::fs::rename(&part, &path).expect("rename a bench trace into place");
    path
}

/// Counts bytes written.
pub(crate) struct Counter(pub u64);

impl std::io::Write for Counter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Reads `bytes` fed in 16 MiB pieces, best of `rounds`: (seconds, NCCL kernels, events).
fn ours(bytes: &[u8], rounds: usize) -> (f64, usize, u64) {
    let (t, trace) = best_kept(rounds, || {
        let mut s = ingest_kineto::KinetoStream::new("bench");
        for c in bytes.chunks(PIECE) {
            s.feed(c);
        }
        s.finish()
    });
    (t, trace.kernels.len(), trace.counts.events)
}

/// The plain way: the whole file as a `serde_json::Value`, then its NCCL kernels counted.
pub(crate) fn plain(bytes: &[u8], rounds: usize) -> (f64, usize, u64) {
    let (t, (kernels, events)) = best_kept(rounds, || {
        let v: serde_json::Value =
            serde_json::from_slice(bytes).expect("a generated trace is JSON");
        let events = v["traceEvents"]
            .as_array()
            .map_or(&[][..], |a| a.as_slice());
        let kernels = events
            .iter()
            .filter(|e| {
                e["cat"] == "kernel" && e["name"].as_str().is_some_and(|n| n.contains("nccl"))
            })
            .count();
        (kernels, events.len() as u64)
    });
    (t, kernels, events)
}

pub fn run(sizes_mb: &[usize], opts: &Options, report: &mut Report) {
    report.section(
        "PyTorch profiler traces (issue 33)",
        "Ours: `ingest_kineto::KinetoStream` fed 16 MiB pieces (as the command and the page feed \
         it), one thread, best of 3. Reference: a plain `serde_json::from_slice::<Value>` of the \
         whole file and its NCCL kernels counted, best of 2 (1 above 200 MB). Files: the \
         generator's Kineto traces (`synth::kineto`, `tp2pp2` rank 0, modern style, 40 unrelated \
         events per collective), plain JSON in the page cache. Target: ours ≥ 150 MB/s. Page: \
         the same reader built for wasm32 with the page's profile (`crates/dev/bench/wasm`) in a \
         Chromium Web Worker, fed the file's 16 MiB slices (each copied into wasm memory, as the \
         page's worker does), best of 3, right after the native reader; target: within 2.5× of \
         native.",
    );
    report.row(&[
        "size",
        "events",
        "NCCL kernels",
        "ours MB/s",
        "serde_json Value MB/s",
        "ours / serde_json",
        "page MB/s",
        "page / native (time)",
    ]);
    let (mut pts, mut speeds, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for &mb in sizes_mb {
        let path = trace_of_size(mb);
        let bytes = std::fs::read(&path).expect("read the bench trace");
        let size = bytes.len() as f64;
        let (t, kernels, events) = ours(&bytes, 3);
        let (tp, kernels_p, events_p) = plain(&bytes, if mb > 200 { 1 } else { 2 });
        assert_eq!(
            (kernels, events),
            (kernels_p, events_p),
            "the two readers agree"
        );
        drop(bytes);
        pts.push((size, t));
        speeds.push(size / 1e6 / t);
        let page = in_page(&path, opts, (kernels, events));
        let page_cells = match &page {
            Ok(tw) => {
                ratios.push(tw / t);
                [format!("{:.0}", size / 1e6 / tw), format!("{:.2}×", tw / t)]
            }
            Err(e) => [format!("not measured: {e}"), String::new()],
        };
        report.row(&[
            &format!("{:.0} MB", size / 1e6),
            &events.to_string(),
            &kernels.to_string(),
            &format!("{:.0}", size / 1e6 / t),
            &format!("{:.0}", size / 1e6 / tp),
            &format!("{:.1}×", tp / t),
            &page_cells[0],
            &page_cells[1],
        ]);
    }
    report.growth("time vs bytes", exponent(&pts));
    let slowest = speeds.iter().copied().fold(f64::INFINITY, f64::min);
    report.target(
        SPEED_TARGET,
        format!("{slowest:.0} MB/s (slowest size)"),
        Verdict::of(!speeds.is_empty(), slowest >= 150.0),
    );
    let worst = ratios.iter().copied().fold(0.0, f64::max);
    report.target(
        PAGE_TARGET,
        if ratios.is_empty() {
            "—".into()
        } else {
            format!("{worst:.2}× native (slowest size)")
        },
        Verdict::of(!ratios.is_empty(), worst <= 2.5),
    );
    memory(big_mb(opts.scale == crate::Scale::Quick), report);
}

/// The wasm reader's best time (s) on the trace at `path`, if it found the same NCCL kernels
/// and events as the native reader.
fn in_page(path: &std::path::Path, opts: &Options, native: (usize, u64)) -> Result<f64, String> {
    if !opts.browser {
        return Err("browser measurements are off in this run".into());
    }
    let v = browser::run(
        "wasm.mjs",
        &[
            "kineto".into(),
            path.display().to_string(),
            "--rounds=3".into(),
        ],
    )?;
    let found = (
        browser::num(&v, "kernels") as usize,
        browser::num(&v, "events") as u64,
    );
    if found != native {
        return Err(format!(
            "the page found {found:?} (kernels, events), natively {native:?}"
        ));
    }
    Ok(browser::best(&v, "read_s"))
}

/// The reader's memory on one big trace, measured by `ingest-kineto`'s `kineto_read` example.
fn memory(mb: usize, report: &mut Report) {
    let path = trace_of_size(mb);
    let line = crate::example::built("ingest-kineto", "kineto_read")
        .and_then(|bin| crate::example::output(&bin, &[path.display().to_string()]));
    let v: Result<serde_json::Value, String> =
        line.and_then(|l| serde_json::from_str(l.trim()).map_err(|e| e.to_string()));
    let v = match v {
        Ok(v) => v,
        Err(e) => {
            report.line(&format!("\nMemory not measured: {e}."));
            return;
        }
    };
    let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
    report.line(&format!(
        "\nMemory, one {:.0} MB trace read in 16 MiB pieces under a counting allocator \
         (`crates/ingest/kineto/examples/kineto_read.rs`): peak {:.1} MB live while reading, \
         {:.1} MB held by the result ({} NCCL kernels, {} events), the stream's own buffers at \
         most {:.1} MB; {:.0} MB/s.",
        f("file_bytes") / 1e6,
        f("peak_bytes") / 1e6,
        f("held_bytes") / 1e6,
        v["nccl_kernels"],
        v["events"],
        f("buffered_bytes") / 1e6,
        f("file_bytes") / 1e6 / f("seconds").max(1e-9),
    ));
    report.target(
        "a big Kineto trace streams in bounded memory (issue 33)",
        format!(
            "{:.0} MB trace: peak {:.1} MB ({:.2}% of the file)",
            f("file_bytes") / 1e6,
            f("peak_bytes") / 1e6,
            100.0 * f("peak_bytes") / f("file_bytes").max(1.0)
        ),
        Verdict::NoTarget,
    );
}
