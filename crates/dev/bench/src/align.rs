//! Alignment: the banded aligner against the full-matrix implementation of the same scoring, in
//! time and peak heap. Measured by the aligner's own `bench_scale` example (its counting
//! allocator gives the peak heap; this crate keeps no allocator of its own), which is built and
//! run as a child process and prints one line per length.

use crate::growth::exponent;
use crate::report::{Report, Verdict};
use crate::Options;

/// Lengths per side, and the longest the full matrix runs at (its back-pointers take 4 bytes a
/// cell: 0.4 GB at 10⁴, 40 GB at 10⁵).
fn sizes(quick: bool) -> (&'static [usize], usize) {
    if quick {
        (&[1_000, 2_000, 4_000, 10_000], 4_000)
    } else {
        (&[1_000, 3_000, 10_000, 100_000, 1_000_000], 10_000)
    }
}

/// One length's figures: wall s, CPU s, peak heap bytes.
struct Cost {
    wall: f64,
    cpu: f64,
    heap: f64,
}

struct Row {
    n: usize,
    banded: Cost,
    full: Option<(Cost, bool)>,
}

pub fn run(opts: &Options, report: &mut Report) {
    let (sizes, full_max) = sizes(opts.scale == crate::Scale::Quick);
    report.section(
        "Alignment: banded against the full matrix (issue 6)",
        "`align::nw::align_fast` (the banded Needleman–Wunsch the pipeline runs) against \
         `align::nw::align_full` (the full-matrix implementation of the same scoring, the \
         reference), both with the rich scoring over a realistic operation mix with 10 % of each \
         side dropped (`crates/align/examples/bench_scale.rs`, run as a child process; small \
         lengths repeated and averaged). Time is wall time (CPU time in brackets, 10 ms ticks); \
         memory is the peak heap counted by the example's allocator. The full matrix runs only \
         where it fits.",
    );
    let rows = match measure(sizes, full_max) {
        Ok(rows) => rows,
        Err(e) => {
            report.line(&format!("Not measured: {e}."));
            return;
        }
    };
    report.row(&[
        "operations per side",
        "banded s (CPU)",
        "banded heap MB",
        "full matrix s (CPU)",
        "full matrix heap MB",
        "full / banded time",
        "full / banded heap",
        "same score",
    ]);
    let secs = |c: &Cost| format!("{:.4} ({:.2})", c.wall, c.cpu);
    let mb = |c: &Cost| format!("{:.1}", c.heap / 1e6);
    for r in &rows {
        let (full_t, full_m, rt, rm, same) = match &r.full {
            Some((f, same)) => (
                secs(f),
                mb(f),
                format!("{:.0}×", f.wall / r.banded.wall),
                format!("{:.0}×", f.heap / r.banded.heap),
                same.to_string(),
            ),
            None => (
                format!(
                    "not run (needs {:.1} GB)",
                    4.0 * (r.n as f64 + 1.0).powi(2) / 1e9
                ),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
            ),
        };
        report.row(&[
            &r.n.to_string(),
            &secs(&r.banded),
            &mb(&r.banded),
            &full_t,
            &full_m,
            &rt,
            &rm,
            &same,
        ]);
    }
    let pts = |f: &dyn Fn(&Row) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter()
            .filter_map(|r| f(r).map(|y| (r.n as f64, y)))
            .collect()
    };
    report.growth(
        "banded time vs length",
        exponent(&pts(&|r| Some(r.banded.wall))),
    );
    report.growth(
        "banded peak heap vs length",
        exponent(&pts(&|r| Some(r.banded.heap))),
    );
    report.growth(
        "full-matrix time vs length",
        exponent(&pts(&|r| r.full.as_ref().map(|f| f.0.wall))),
    );
    report.growth(
        "full-matrix peak heap vs length",
        exponent(&pts(&|r| r.full.as_ref().map(|f| f.0.heap))),
    );
    let all_same = rows.iter().all(|r| r.full.as_ref().is_none_or(|f| f.1));
    let largest = rows
        .iter()
        .rev()
        .find_map(|r| r.full.as_ref().map(|f| (r, &f.0)));
    let figure = largest.map_or("—".into(), |(r, f)| {
        format!(
            "at {} per side the banded aligner is {:.0}× faster in {:.0}× less memory{}",
            r.n,
            f.wall / r.banded.wall,
            f.heap / r.banded.heap,
            if all_same {
                ", same scores"
            } else {
                ", **scores differ**"
            }
        )
    });
    report.target(
        "alignment against the full matrix of the same scoring (issue 11)",
        figure,
        if all_same {
            Verdict::NoTarget
        } else {
            Verdict::Missed
        },
    );
}

/// Builds and runs `bench_scale --tsv` over `sizes`.
fn measure(sizes: &[usize], full_max: usize) -> Result<Vec<Row>, String> {
    let list: Vec<String> = sizes.iter().map(usize::to_string).collect();
    let max = sizes.iter().max().copied().unwrap_or(0);
    let args = [
        max.to_string(),
        full_max.to_string(),
        format!("--sizes={}", list.join(",")),
        "--tsv".to_string(),
    ];
    let binary = crate::example::built("align", "bench_scale")?;
    let out = crate::example::output(&binary, &args)?;
    let rows = out.lines().filter_map(parse_line).collect::<Vec<_>>();
    if rows.len() != sizes.len() {
        return Err(format!(
            "bench_scale printed {} of {} lengths",
            rows.len(),
            sizes.len()
        ));
    }
    Ok(rows)
}

/// `n  wall cpu heap  wall cpu heap|-  same|-`.
fn parse_line(line: &str) -> Option<Row> {
    let f: Vec<&str> = line.split('\t').collect();
    let num = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok());
    let cost = |i: usize| {
        Some(Cost {
            wall: num(i)?,
            cpu: num(i + 1)?,
            heap: num(i + 2)?,
        })
    };
    Some(Row {
        n: f.first()?.parse().ok()?,
        banded: cost(1)?,
        full: cost(4).map(|c| (c, f.get(7) == Some(&"true"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bench_scale_lines() {
        let r = parse_line("1000\t0.005\t0.0013\t399448\t0.06\t0.016\t3423116\ttrue").unwrap();
        assert_eq!(r.n, 1000);
        assert_eq!(r.banded.heap, 399448.0);
        assert!(r
            .full
            .as_ref()
            .is_some_and(|(c, same)| c.wall == 0.06 && *same));
        let r = parse_line("100000\t0.7\t0.36\t39700000\t-\t-\t-\t-").unwrap();
        assert!(r.full.is_none());
        assert!(parse_line("| header |").is_none());
    }
}
