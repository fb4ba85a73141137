//! Rendering: frame times and long tasks while the timeline of a loaded run is panned and
//! zoomed. Measured by `load.mjs --render` in the end-to-end loads of the largest layout (the
//! same page loads, so its sizes cost no extra loading); this writes their table and targets.

use crate::browser;
use crate::end_to_end::Measured;
use crate::growth::exponent;
use crate::report::{Report, Verdict};
use crate::Options;
use serde_json::Value;

pub fn table(runs: &[Measured], opts: &Options, report: &mut Report) {
    report.section(
        "Rendering: panning and zooming the timeline (issues 9, 11)",
        "Right after the end-to-end loads of the largest layout above, in the same page: 36 wheel \
         notches in (each ×0.8) with six 30-step drags at three depths, 40 notches out and two more \
         drags, through `page.mouse` (`panAndZoom` in `tests/browser/bench/frames.mjs`); frame \
         times are the intervals between `requestAnimationFrame` callbacks (headless Chromium, \
         60 Hz: 16.7 ms is one vsync), long tasks from the Long Tasks API. Arrival: the main \
         thread's long tasks from the drop until the timeline is drawn. Targets (issue 9): 60 fps \
         while panning and zooming, no main-thread task over 100 ms.",
    );
    const FPS: &str =
        "rendering the largest run: 60 fps while panning and zooming, p95 frame ≤ 17 ms (issue 9)";
    const TASKS: &str = "no main-thread task over 100 ms, loading or panning (issue 9)";
    if !opts.browser {
        report.line("Not measured: browser measurements are off in this run.");
        report.target(FPS, "—".into(), Verdict::NotMeasured);
        report.target(TASKS, "—".into(), Verdict::NotMeasured);
        return;
    }
    report.row(&[
        "run",
        "kernels",
        "tracks",
        "frames",
        "max / p95 / mean ms",
        "frames over 20 ms",
        "long tasks while panning (worst ms)",
        "long tasks at arrival (worst ms)",
    ]);
    let (mut mean, mut p95, mut max) = (Vec::new(), Vec::new(), Vec::new());
    let mut largest: Option<(String, &Value)> = None;
    let mut worst = Vec::new();
    for m in runs {
        let Ok(v) = &m.page else { continue };
        let n = |k: &str| browser::num(v, k);
        worst.push(n("main_thread_worst_task_ms"));
        if v.get("frames").is_none() {
            continue;
        }
        worst.push(n("interaction_worst_task_ms"));
        let kernels = n("kernels");
        mean.push((kernels, n("mean_ms")));
        p95.push((kernels, n("p95_ms")));
        max.push((kernels, n("max_ms")));
        if largest
            .as_ref()
            .is_none_or(|(_, l)| browser::num(l, "kernels") < kernels)
        {
            largest = Some((m.label(), v));
        }
        report.row(&[
            &m.label(),
            &format!("{kernels:.0}"),
            &format!("{:.0}", n("tracks")),
            &format!("{:.0}", n("frames")),
            &format!(
                "{:.1} / {:.1} / {:.1}",
                n("max_ms"),
                n("p95_ms"),
                n("mean_ms")
            ),
            &format!("{:.0}", n("over_20ms")),
            &format!(
                "{:.0} ({:.0})",
                n("interaction_long_tasks"),
                n("interaction_worst_task_ms")
            ),
            &format!(
                "{:.0} ({:.0})",
                n("main_thread_long_tasks"),
                n("main_thread_worst_task_ms")
            ),
        ]);
    }
    report.growth("mean frame time vs kernels", exponent(&mean));
    report.growth("p95 frame time vs kernels", exponent(&p95));
    report.growth("worst frame time vs kernels", exponent(&max));
    match largest {
        Some((label, v)) => {
            let n = |k: &str| browser::num(v, k);
            report.target(
                FPS,
                format!(
                    "{label}, {:.0} kernels on {:.0} tracks: p95 {:.1} ms, mean {:.1} ms, worst {:.1} ms, {:.0} of {:.0} frames over 20 ms",
                    n("kernels"),
                    n("tracks"),
                    n("p95_ms"),
                    n("mean_ms"),
                    n("max_ms"),
                    n("over_20ms"),
                    n("frames")
                ),
                // One vsync at 60 Hz is 16.7 ms; rAF intervals jitter by a few tenths around it.
                Verdict::of(true, n("p95_ms") <= 17.0),
            );
        }
        None => report.target(FPS, "no run was panned".into(), Verdict::Missed),
    }
    report.target(
        TASKS,
        format!(
            "worst task {:.0} ms over the runs loaded in the page",
            worst.iter().copied().fold(0.0, f64::max)
        ),
        Verdict::of(!worst.is_empty(), worst.iter().all(|&w| w <= 100.0)),
    );
}
