//! End to end: every file of a generated run loaded and analysed, for the three layouts the
//! page's end-to-end targets name (8 ranks × 10⁴, 64 × 5·10⁴ and 256 × 2·10⁴ operations per
//! rank). Natively as `ncclscope analyze` does it (parse, read exports, align, enrich; reference:
//! the time to read the same bytes), and in Chromium from the drop to the first complete
//! timeline, with the page's peak memory (reference: the native run of the same files, just
//! before). While the largest layout is loaded in the page, its timeline is panned and zoomed and
//! the frame times recorded (the rendering benchmark: the same loads, no extra loading).
//!
//! Sizes: every layout up to its target size (the 8-rank one at 1/4, 1/2 and 1; the two large
//! ones at 1/16, 1/8, 1/4 and 1: their target runs take 25-35 s in the page and 12-17 s
//! natively, the whole suite 6 minutes once the inputs exist). The quick run stops well short
//! of the targets and projects them from its largest size with the fitted exponent (and says
//! so).

use crate::growth::exponent;
use crate::report::{Report, Verdict};
use crate::{best_of, browser, Options, Scale};
use load::Session;
use pipeline::{analyse, UserSizes};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One layout of the targets: the generator config, the target's operations per rank and time
/// (seconds from the drop to the first complete timeline).
pub struct Layout {
    pub label: &'static str,
    pub config: synth::RunConfig,
    pub target_ops_per_rank: u64,
    pub target_s: f64,
    /// The fractions of the target size this run measures.
    pub fractions: Vec<f64>,
}

/// One generated run of a layout.
pub struct Run<'a> {
    pub layout: &'a Layout,
    pub ops_per_rank: u64,
}

impl Run<'_> {
    /// The run's directory of logs and exports, generated the first time.
    pub fn dir(&self) -> PathBuf {
        let config = crate::inputs::scaled(self.layout.config.clone(), self.ops_per_rank);
        let world = config.layout.world();
        crate::inputs::run(&format!("e2e-{world}x{}", self.ops_per_rank), &config)
    }

    fn is_target(&self) -> bool {
        self.ops_per_rank == self.layout.target_ops_per_rank
    }
}

/// The three layouts of the page's end-to-end targets, with the sizes `scale` measures.
pub fn layouts(scale: Scale) -> Vec<Layout> {
    let preset = |name: &str| synth::preset(name).expect("a preset").config;
    // 256 ranks: huge-1024's model on 32 nodes (TP8 PP4 DP8).
    let mut r256 = preset("huge-1024");
    r256.layout.dp = 8;
    r256.nodes = 32;
    let (small, large): (&[f64], &[f64]) = match scale {
        Scale::Quick => (&[0.025, 0.05, 0.1], &[0.01]),
        Scale::Standard => (&[0.25, 0.5, 1.0], &[1.0 / 16.0, 0.125, 0.25, 1.0]),
    };
    vec![
        Layout {
            label: "8 ranks",
            config: preset("demo"),
            target_ops_per_rank: 10_000,
            target_s: 2.0,
            fractions: small.to_vec(),
        },
        Layout {
            label: "64 ranks",
            config: preset("large-64"),
            target_ops_per_rank: 50_000,
            target_s: 10.0,
            fractions: large.to_vec(),
        },
        Layout {
            label: "256 ranks",
            config: r256,
            target_ops_per_rank: 20_000,
            target_s: 20.0,
            fractions: large.to_vec(),
        },
    ]
}

/// Every run of the layouts, smallest first within a layout.
pub fn runs(layouts: &[Layout]) -> Vec<Run<'_>> {
    layouts
        .iter()
        .flat_map(|l| {
            l.fractions.iter().map(move |f| Run {
                layout: l,
                ops_per_rank: ((l.target_ops_per_rank as f64 * f).round() as u64).max(1),
            })
        })
        .collect()
}

/// What one run measured.
pub struct Measured<'a> {
    run: &'a Run<'a>,
    files: usize,
    bytes: u64,
    /// Log operations the native run parsed (0 when it did not run).
    ops: usize,
    /// Native load + analyse and read-the-bytes seconds.
    native: Option<(f64, f64)>,
    /// The page's load (and frames), as `load.mjs --json` reports it.
    pub page: Result<Value, String>,
}

impl Measured<'_> {
    pub fn label(&self) -> String {
        let mark = if self.run.is_target() {
            " (target)"
        } else {
            ""
        };
        format!(
            "{} × {} ops{mark}",
            self.run.layout.label, self.run.ops_per_rank
        )
    }

    /// The size the growth is fitted against: operations per rank (known without the native
    /// run, and proportional to the run's operations within a layout).
    fn size(&self) -> f64 {
        self.run.ops_per_rank as f64
    }
}

/// Measures and reports; returns the page's loads of the 256-rank runs with the insights' times
/// when `insights` (the patterns family reads its in-page figure from them).
pub fn run(
    layouts: &[Layout],
    (e2e, render, insights): (bool, bool, bool),
    opts: &Options,
    report: &mut Report,
) -> crate::patterns::PageLoads {
    let runs = runs(layouts);
    let mut loads = Vec::new();
    // The rendering benchmark pans and zooms the largest layout (most tracks and kernels).
    let largest = layouts.last().map(|l| l.label);
    let mut measured = Vec::new();
    for r in &runs {
        let renders = render && Some(r.layout.label) == largest;
        if !e2e && !renders {
            continue;
        }
        let dir = r.dir();
        let logs = crate::inputs::files(&dir, ".log");
        let exports = crate::inputs::files(&dir, ".sqlite");
        let bytes = logs
            .iter()
            .chain(&exports)
            .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
            .sum();
        let (native, ops) = if e2e {
            let (t, ops) = native(&logs, &exports);
            let read = best_of(1, || {
                for f in logs.iter().chain(&exports) {
                    std::hint::black_box(std::fs::read(f).expect("read"));
                }
            });
            (Some((t, read)), ops)
        } else {
            (None, 0)
        };
        let with_insights = insights && r.layout.label == "256 ranks";
        let page = if opts.browser {
            in_chromium(&dir, (renders, with_insights), opts.scale)
        } else {
            Err("browser measurements are off in this run".into())
        };
        // The tables come after all runs: say where it is meanwhile.
        eprintln!(
            "bench: end to end, {} × {} ops: native {}, page {}",
            r.layout.label,
            r.ops_per_rank,
            native.map_or("—".into(), |n| format!("{:.1} s", n.0)),
            match &page {
                Ok(v) => format!("{:.1} s", browser::num(v, "timeline_s")),
                Err(_) if !opts.browser => "not measured".into(),
                Err(e) => e.clone(),
            }
        );
        if let (true, Ok(v)) = (with_insights, &page) {
            loads.push((dir.clone(), v.clone()));
        }
        measured.push(Measured {
            run: r,
            files: logs.len() + exports.len(),
            bytes,
            ops,
            native,
            page,
        });
    }
    if e2e {
        native_table(layouts, &measured, report);
        page_table(layouts, &measured, opts, report);
    }
    if render {
        crate::render::table(&measured, opts, report);
    }
    loads
}

/// Loads and analyses the run as `ncclscope analyze` does; (seconds, log operations).
fn native(logs: &[PathBuf], exports: &[PathBuf]) -> (f64, usize) {
    let mut ops = 0usize;
    let t = best_of(1, || {
        let mut session = Session::default();
        for f in logs.iter().chain(exports) {
            ncclscope_cli::inputs::load(&mut session, f);
        }
        let a = analyse(&session, &UserSizes::default());
        ops = session.logs().iter().map(|l| l.parsed.ops.len()).sum();
        std::hint::black_box(a);
    });
    (t, ops)
}

/// The page's load of the whole run directory (and its pan and zoom when `render`, then the
/// insights' times when `insights`).
fn in_chromium(
    dir: &Path,
    (render, insights): (bool, bool),
    scale: Scale,
) -> Result<Value, String> {
    // A bound, so that one stuck load cannot hold the whole suite: far above every target.
    let timeout = match scale {
        Scale::Quick => 120,
        Scale::Standard => 600,
    };
    let mut args = vec!["--json".to_string(), format!("--timeout-s={timeout}")];
    if render {
        args.push("--render".into());
    }
    if insights {
        args.push("--insights".into());
    }
    args.push(dir.display().to_string());
    let v = browser::run("load.mjs", &args)?;
    if v.get("timed_out") == Some(&Value::Bool(true)) {
        return Err(format!("no complete timeline after {timeout} s"));
    }
    if browser::num(&v, "failed") > 0.0 {
        return Err(format!("{} files did not load", browser::num(&v, "failed")));
    }
    Ok(v)
}

/// The rows of one layout.
fn of<'a, 'b>(
    layout: &'a Layout,
    runs: &'b [Measured<'a>],
) -> impl Iterator<Item = &'b Measured<'a>> {
    runs.iter()
        .filter(move |m| std::ptr::eq(m.run.layout, layout))
}

fn native_table(layouts: &[Layout], runs: &[Measured], report: &mut Report) {
    let sizes: Vec<String> = layouts
        .iter()
        .map(|l| {
            let ops: Vec<String> = self::runs(std::slice::from_ref(l))
                .iter()
                .map(|r| r.ops_per_rank.to_string())
                .collect();
            format!(
                "{} × {} ops (target {})",
                l.label,
                ops.join(", "),
                l.target_ops_per_rank
            )
        })
        .collect();
    report.section(
        "End to end, natively (issue 11)",
        &format!(
            "Load every log and export of a generated run (the generator's layouts: `demo` for 8 \
             ranks, `large-64`, and `huge-1024`'s model on 32 nodes for 256) and analyse it, single \
             process (`pipeline`, as `ncclscope analyze`); one round. Reference: reading the same \
             files' bytes. Sizes, operations per rank: {}; the last of each layout is its \
             target size (`--quick` stops short of it).",
            sizes.join("; ")
        ),
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
    for m in runs {
        let Some((t, read)) = m.native else { continue };
        report.row(&[
            &m.label(),
            &m.files.to_string(),
            &format!("{:.0} MB", m.bytes as f64 / 1e6),
            &m.ops.to_string(),
            &format!("{t:.2}"),
            &format!("{read:.2}"),
            &format!("{:.1}", t / read),
        ]);
    }
    for l in layouts {
        let pts: Vec<(f64, f64)> = of(l, runs)
            .filter_map(|m| m.native.map(|n| (m.size(), n.0)))
            .collect();
        report.growth(
            &format!("{}: time of load + analyse vs operations", l.label),
            exponent(&pts),
        );
    }
}

fn page_table(layouts: &[Layout], runs: &[Measured], opts: &Options, report: &mut Report) {
    report.section(
        "End to end in Chromium (issue 11)",
        "The built page (`dist/`, `trunk build --release --cargo-profile wasm-release`) in headless \
         Chromium: every log and export of the run chosen at once in the file input \
         (`tests/browser/bench/load.mjs`, the same files as natively), timed from the drop until the \
         analysis is back and its timeline drawn (the next frame after it). The drop comes once \
         the page's loading worker has warmed up (it parses, reads and analyses the built-in demo \
         while the page waits for files; a user takes longer to pick files): the time from the \
         drop zone showing to the drop, and the warm-up's own, are in the last column. Worker: the loading \
         worker's summed time per file (read + parse, or sql.js open + read). Memory: the browser's \
         peak RSS, sampled every 200 ms (the renderer process, which holds the page and its \
         workers, and all processes), and the loading worker's wasm memory at the end. Reference: \
         the native run above, measured just before. Targets (issue 11): 8 ranks × 10⁴ operations \
         under 2 s, 64 × 5·10⁴ under 10 s, 256 × 2·10⁴ under 20 s, each measured at that size (a \
         quick run projects them from its largest size, with the growth between its two largest).",
    );
    if !opts.browser {
        report.line("Not measured: browser measurements are off in this run.");
        for l in layouts {
            report.target(&e2e_target(l), "—".into(), Verdict::NotMeasured);
        }
        return;
    }
    report.row(&[
        "run",
        "drop → timeline s",
        "page / native",
        "worker load s",
        "analysis s",
        "peak RSS renderer / all GB",
        "worker wasm GB",
        "main-thread long tasks (worst ms)",
        "page open before the drop / warm-up s",
    ]);
    for m in runs {
        let native = m.native.map_or(f64::NAN, |n| n.0);
        let cells = match &m.page {
            Ok(v) => {
                let t = browser::num(v, "timeline_s");
                let mut cells = vec![format!("{t:.2}"), format!("{:.1}", t / native)];
                cells.extend(browser::load_cells(v));
                cells.extend([
                    format!(
                        "{} ({})",
                        browser::num(v, "main_thread_long_tasks"),
                        browser::num(v, "main_thread_worst_task_ms")
                    ),
                    format!(
                        "{:.2} / {:.2}",
                        browser::num(v, "waited_for_warm_up_s"),
                        browser::num(v, "worker_warm_up_ms") / 1e3
                    ),
                ]);
                cells
            }
            Err(e) => vec![format!("failed: {e}")],
        };
        let mut row = vec![m.label()];
        row.extend(cells);
        report.row(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
    for l in layouts {
        let pts: Vec<(f64, f64, &Value)> = of(l, runs)
            .filter_map(|m| {
                m.page
                    .as_ref()
                    .ok()
                    .map(|v| (m.size(), browser::num(v, "timeline_s"), v))
            })
            .collect();
        let k = exponent(&pts.iter().map(|p| (p.0, p.1)).collect::<Vec<_>>());
        report.growth(
            &format!("{}: time from drop to timeline vs operations", l.label),
            k,
        );
        let target = l.target_ops_per_rank as f64;
        let Some(&(size, t, v)) = pts.last() else {
            report.target(
                &e2e_target(l),
                "no page load finished".into(),
                Verdict::Missed,
            );
            continue;
        };
        let memory = format!(
            "peak RSS {:.1} GB renderer, {:.1} GB browser",
            browser::num(v, "largest_process_peak_mb") / 1e3,
            browser::num(v, "browser_rss_peak_mb") / 1e3
        );
        if size >= target {
            report.target(
                &e2e_target(l),
                format!("{t:.1} s; {memory}"),
                Verdict::of(true, t < l.target_s),
            );
        } else if let [.., (s0, t0, _), (s1, t1, _)] = pts[..] {
            // The growth between the two largest sizes, the nearest to the target: small runs
            // are dominated by fixed costs and flatten the exponent fitted over all three.
            let k = (t1 / t0).ln() / (s1 / s0).ln();
            let projected = t * (target / size).powf(k);
            report.target(
                &e2e_target(l),
                format!(
                    "projected {projected:.0} s ({t:.1} s at {size:.0} operations per rank × {:.0}^{k:.2}, the growth between the two largest sizes); {memory} at that size",
                    target / size
                ),
                Verdict::of(true, projected < l.target_s),
            );
        } else {
            report.target(
                &e2e_target(l),
                format!("{t:.1} s at {size:.0} operations per rank (one size: no projection)"),
                Verdict::NotMeasured,
            );
        }
    }
}

fn e2e_target(l: &Layout) -> String {
    format!(
        "end to end in Chromium, {} × {} ops: under {} s (issue 11)",
        l.label, l.target_ops_per_rank, l.target_s
    )
}
