//! Issue 33's page load: 8 ranks' PyTorch profiler traces of about 150 MB each dropped on the
//! built page (`tests/browser/bench/load.mjs`, as the end-to-end benchmark drops logs and
//! exports), timed from the drop until the analysis is back and its timeline drawn. Beside it,
//! measured just before on the same files: the native command's load and analysis (as
//! `ncclscope analyze`), the native reader alone (`KinetoStream`, one file after the other)
//! and a plain `serde_json::Value` parse of each file. Target: under 20 s in the page.
//!
//! Inputs: the generator's traces of the `demo` layout (8 ranks, TP2 PP2 DP2; `synth::kineto`,
//! modern style, as `ncclscope synth --kineto modern` writes them but uncompressed), as many
//! iterations as make the traces that size on average, kept in `target/bench-inputs/`.

use crate::kineto::{plain, Counter};
use crate::report::{Report, Verdict};
use crate::{best_kept, browser, Options, Scale};
use load::Session;
use pipeline::{analyse, UserSizes};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Instant;

/// Megabytes per rank's trace.
pub fn mb_per_rank(scale: Scale) -> usize {
    match scale {
        Scale::Quick => 15,
        Scale::Standard => 150,
    }
}

const TARGET: &str = "8 ranks × 150 MB of Kineto traces open in the page < 20 s (issue 33)";

/// The 8 ranks' traces of about `mb` MB each, written once.
pub fn traces(mb: usize) -> Vec<PathBuf> {
    let dir = crate::inputs::dir().join(format!("kineto-8x{mb}MB"));
    let stamp = dir.join("COMPLETE");
    let mut cfg = synth::preset("demo").expect("the demo preset").config;
    let style = synth::kineto::KinetoStyle::modern();
    cfg.model.iterations = 1;
    let world = synth::kineto::KinetoRun::new(&cfg).world();
    let files: Vec<PathBuf> = (0..world)
        .map(|r| dir.join(synth::kineto::trace_name(r, false)))
        .collect();
    if crate::inputs::cached(&stamp) {
        return files;
    }
    // All ranks' bytes at one and two iterations: a trace's fixed part and each iteration's.
    let bytes_at = |cfg: &mut synth::RunConfig, iterations: u32| {
        cfg.model.iterations = iterations;
        let run = synth::kineto::KinetoRun::new(cfg);
        let mut counter = Counter(0);
        for r in 0..world {
            run.write_rank(r, &style, &mut counter).expect("a trace");
        }
        counter.0
    };
    let (one, two) = (bytes_at(&mut cfg, 1), bytes_at(&mut cfg, 2));
    let per_iteration = two.saturating_sub(one).max(1);
    let want = mb as u64 * 1_000_000 * u64::from(world);
    cfg.model.iterations = (want.saturating_sub(one) / per_iteration + 1) as u32;
    let run = synth::kineto::KinetoRun::new(&cfg);
    std::fs::create_dir_all(&dir).expect("target/ is writable");
    for (r, path) in files.iter().enumerate() {
        let mut out =
            std::io::BufWriter::new(std::fs::File::create(path).expect("target/ is writable"));
        run.write_rank(r as u32, &style, &mut out)
            .expect("write a bench trace");
        std::io::Write::flush(&mut out).expect("write a bench trace");
    }
    std::fs::write(&stamp, "").expect("write the traces' stamp");
    files
}

pub fn run(opts: &Options, report: &mut Report) {
    let mb = mb_per_rank(opts.scale);
    let files = traces(mb);
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    report.section(
        "PyTorch profiler traces in the page (issue 33)",
        &format!(
            "The built page (`dist/`) in headless Chromium: {} ranks' traces (the generator's \
             `demo` layout, about {mb} MB each, plain JSON) chosen at once in the file input \
             (`tests/browser/bench/load.mjs`), timed from the drop until the analysis is back and \
             its timeline drawn. References, measured just before on the same files: the native \
             command's load and analysis (`ncclscope analyze` as the end-to-end benchmark runs \
             it), the native reader alone (`KinetoStream` fed 16 MiB pieces, file after file, the \
             bytes already in memory) and a plain `serde_json::from_slice::<Value>` of each file. \
             One round each.",
            files.len()
        ),
    );
    let (native_s, kernels) = native(&files);
    let (mut reader_s, mut serde_s) = (0.0, 0.0);
    for f in &files {
        let b = std::fs::read(f).expect("read a bench trace");
        reader_s += best_kept(1, || {
            let mut s = ingest_kineto::KinetoStream::new("bench");
            for c in b.chunks(16 << 20) {
                s.feed(c);
            }
            s.finish()
        })
        .0;
        serde_s += plain(&b, 1).0;
    }
    let page = in_chromium(&files, opts);
    let mbs = |t: f64| format!("{t:.2} ({:.0} MB/s)", bytes as f64 / 1e6 / t);
    report.row(&[
        "traces",
        "bytes",
        "NCCL kernels",
        "page: drop → timeline s",
        "page: worker load s",
        "page: analysis s",
        "peak RSS renderer / all GB",
        "worker wasm GB",
        "native analyze s",
        "native reader s",
        "serde_json Value s",
        "page / native analyze",
    ]);
    let mut cells = vec![
        format!("{} × {mb} MB", files.len()),
        format!("{:.0} MB", bytes as f64 / 1e6),
        kernels.to_string(),
    ];
    let page_s = match &page {
        Ok(v) => {
            let t = browser::num(v, "timeline_s");
            cells.push(format!("{t:.2}"));
            cells.extend(browser::load_cells(v));
            Some(t)
        }
        Err(e) => {
            cells.push(format!("not measured: {e}"));
            cells.extend((0..4).map(|_| String::new()));
            None
        }
    };
    cells.extend([
        format!("{native_s:.2}"),
        mbs(reader_s),
        mbs(serde_s),
        page_s.map_or("—".into(), |t| format!("{:.1}", t / native_s)),
    ]);
    report.row(&cells.iter().map(String::as_str).collect::<Vec<_>>());
    let figure = match (&page, page_s) {
        (_, Some(t)) => format!(
            "{t:.1} s at {:.0} MB ({:.1}× native)",
            bytes as f64 / 1e6,
            t / native_s
        ),
        (Err(e), _) => e.clone(),
        _ => "—".into(),
    };
    let at_size = opts.scale == Scale::Standard;
    report.target(
        TARGET,
        figure,
        Verdict::of(
            at_size && page_s.is_some(),
            page_s.is_some_and(|t| t < 20.0),
        ),
    );
}

/// The files loaded and analysed as `ncclscope analyze` does: (seconds, NCCL kernels read).
fn native(files: &[PathBuf]) -> (f64, usize) {
    let t = Instant::now();
    let mut session = Session::default();
    for f in files {
        ncclscope_cli::inputs::load(&mut session, f);
    }
    let a = analyse(&session, &UserSizes::default());
    let s = t.elapsed().as_secs_f64();
    let kernels = a
        .alignments
        .processes
        .iter()
        .map(|p| p.matched_kernels() as usize)
        .sum();
    (s, kernels)
}

/// The page's load of the files (`load.mjs --json`).
fn in_chromium(files: &[PathBuf], opts: &Options) -> Result<Value, String> {
    if !opts.browser {
        return Err("browser measurements are off in this run".into());
    }
    let mut args = vec!["--json".to_string(), "--timeout-s=300".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let v = browser::run("load.mjs", &args)?;
    if v.get("timed_out") == Some(&Value::Bool(true)) {
        return Err("no result after 300 s".into());
    }
    if browser::num(&v, "failed") > 0.0 {
        return Err(format!("{} files did not load", browser::num(&v, "failed")));
    }
    Ok(v)
}
