//! The Compare view's arithmetic and wording, tested natively: what a run is called, the
//! mirrored histogram of two runs' kernel times on shared bins, and how a ratio, its test and
//! the world-size basis read.

use analyses::diff::{Distribution, RunDiff, SignatureDiff, Test, TestSettings};

use crate::protocol::format::{human_duration, significant};

/// What a run is called from its files' names (a folder's files are named by their path in it):
/// the folder when they share one, the file when it is one, else the first and how many more.
pub fn run_label(names: &[String]) -> String {
    let folder = |n: &String| n.split_once('/').map(|(dir, _)| dir.to_string());
    match names {
        [] => "no files".into(),
        [one] => one.clone(),
        [first, rest @ ..] => match folder(first) {
            Some(dir)
                if rest
                    .iter()
                    .all(|n| folder(n).as_deref() == Some(dir.as_str())) =>
            {
                format!("{dir}/")
            }
            _ => format!("{first} and {} more", rest.len()),
        },
    }
}

/// One bin of a mirrored histogram: x and width in the plot's units, and each run's bar height
/// (base up from the middle line, new down from it).
#[derive(Clone, Debug, PartialEq)]
pub struct MirrorBin {
    pub x: f64,
    pub width: f64,
    pub base_h: f64,
    pub new_h: f64,
    pub base: u64,
    pub new: u64,
    /// The bin's range, as people read it.
    pub range: String,
}

/// A mirrored histogram laid out in a plot `width` wide whose halves are `half` tall: the bins
/// are equally wide (the edges are log-spaced), each half scaled to its run's own fullest bin
/// (the runs may differ in count by orders of magnitude: shapes are what is compared); x ticks
/// at each power of ten of time inside the edges, at their position on the log axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Mirror {
    pub bins: Vec<MirrorBin>,
    /// (x, label) of each tick.
    pub ticks: Vec<(f64, String)>,
    pub base_max: u64,
    pub new_max: u64,
}

pub fn mirror(d: &Distribution, width: f64, half: f64) -> Option<Mirror> {
    let n = d.base.len();
    if n == 0 || d.new.len() != n || d.edges_ns.len() != n + 1 {
        return None;
    }
    let (lo, hi) = (d.edges_ns[0], d.edges_ns[n]);
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return None;
    }
    let base_max = d.base.iter().copied().max().unwrap_or(0);
    let new_max = d.new.iter().copied().max().unwrap_or(0);
    let scale = |v: u64, max: u64| {
        if max == 0 {
            0.0
        } else {
            v as f64 / max as f64 * half
        }
    };
    let w = width / n as f64;
    let bins = (0..n)
        .map(|i| MirrorBin {
            x: i as f64 * w,
            width: w,
            base_h: scale(d.base[i], base_max),
            new_h: scale(d.new[i], new_max),
            base: d.base[i],
            new: d.new[i],
            range: format!(
                "{} – {}",
                human_duration(d.edges_ns[i]),
                human_duration(d.edges_ns[i + 1])
            ),
        })
        .collect();
    let ticks = log_ticks(lo, hi)
        .into_iter()
        .map(|t| {
            let x = (t.log10() - lo.log10()) / (hi.log10() - lo.log10()) * width;
            (x, human_duration(t))
        })
        .collect();
    Some(Mirror {
        bins,
        ticks,
        base_max,
        new_max,
    })
}

/// Ticks of a log axis from `lo` to `hi` (> 0): the powers of ten inside when there are two or
/// more, else 1, 2 and 5 × 10^k (a narrow range: 30–90 µs has no power of ten), else the ends.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let inside = |steps: &[f64]| -> Vec<f64> {
        let mut out = Vec::new();
        for k in (lo.log10().floor() as i32)..=(hi.log10().ceil() as i32) {
            for m in steps {
                let t = m * 10f64.powi(k);
                // Within a rounding error of an edge counts as inside.
                if t >= lo * (1.0 - 1e-9) && t <= hi * (1.0 + 1e-9) {
                    out.push(t);
                }
            }
        }
        out
    };
    let tens = inside(&[1.0]);
    if tens.len() >= 2 {
        return tens;
    }
    let fine = inside(&[1.0, 2.0, 5.0]);
    if fine.len() >= 2 {
        return fine;
    }
    vec![lo, hi]
}

/// `×2.01` (new / base), or `—`.
pub fn ratio_text(r: Option<f64>) -> String {
    match r {
        Some(r) if r.is_finite() => format!("×{}", significant(r, 3)),
        _ => "—".into(),
    }
}

/// Whether a signature's time changed, and by which test: `yes (bootstrap 95 % interval
/// ×1.96–×2.04)`, `no (rank-sum p = 0.41)`; `no times` when a run has no kernel times for it.
pub fn significance_text(s: &SignatureDiff, test: &TestSettings) -> String {
    if s.time_ratio.is_none() {
        return "no times".into();
    }
    let verdict = if s.significant { "yes" } else { "no" };
    let level = significant((1.0 - test.alpha) * 100.0, 3);
    match (test.method, s.interval, s.p_value) {
        (Test::Bootstrap, Some([a, b]), _) => format!(
            "{verdict} (bootstrap {level} % interval {}–{})",
            ratio_text(Some(a)),
            ratio_text(Some(b))
        ),
        (Test::RankSum, _, Some(p)) => {
            format!("{verdict} (rank-sum p = {})", significant(p, 2))
        }
        (method, _, _) => format!("{verdict} ({})", method.name()),
    }
}

/// `base → new` of two optional figures in `text`'s form (`—` for a side without it).
pub fn pair<T: Copy>(a: Option<T>, b: Option<T>, text: impl Fn(T) -> String) -> String {
    let side = |v: Option<T>| v.map_or_else(|| "—".to_string(), &text);
    format!("{} → {}", side(a), side(b))
}

/// What the view says when the runs' world sizes differ, or a run's files cover part of its
/// world: the basis every figure is on.
pub fn world_note(d: &RunDiff) -> Option<String> {
    let (b, n) = (&d.base.size, &d.new.size);
    if d.base.error.is_some() || d.new.error.is_some() {
        return None;
    }
    let what = if b.worlds_differ(n) {
        format!(
            "The runs' world sizes differ ({} → {} ranks)",
            b.world_size, n.world_size
        )
    } else if b.partial() || n.partial() {
        format!(
            "The files cover {} of the base run and {} of the new",
            b.ranks_text(),
            n.ranks_text()
        )
    } else {
        return None;
    };
    Some(format!(
        "{what}: counts, bytes and times are compared per {} seen (base ÷ {}, new ÷ {}).",
        d.basis.per,
        significant(d.basis.base_divisor, 4),
        significant(d.basis.new_divisor, 4)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_named_by_its_folder_or_its_files() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(run_label(&names(&["a.log"])), "a.log");
        assert_eq!(
            run_label(&names(&["run2/rank0.log", "run2/node0.sqlite"])),
            "run2/"
        );
        assert_eq!(
            run_label(&names(&["run2/rank0.log", "other/x.log", "y.log"])),
            "run2/rank0.log and 2 more"
        );
        assert_eq!(run_label(&[]), "no files");
    }

    #[test]
    fn the_mirrored_histogram_scales_each_half_and_ticks_powers_of_ten() {
        // Four log-spaced bins from 1 µs to 10 ms: edges 1 µs, 10 µs, 100 µs, 1 ms, 10 ms.
        let d = Distribution {
            edges_ns: vec![1e3, 1e4, 1e5, 1e6, 1e7],
            base: vec![0, 10, 5, 0],
            new: vec![0, 0, 2, 1],
        };
        let m = mirror(&d, 400.0, 50.0).unwrap();
        assert_eq!(m.bins.len(), 4);
        assert_eq!(m.bins[1].x, 100.0);
        assert_eq!(m.bins[1].base_h, 50.0);
        assert_eq!(m.bins[2].base_h, 25.0);
        assert_eq!(m.bins[2].new_h, 50.0);
        assert_eq!(m.bins[3].new_h, 25.0);
        assert_eq!((m.base_max, m.new_max), (10, 2));
        assert_eq!(m.bins[1].range, "10 µs – 100 µs");
        let xs: Vec<f64> = m.ticks.iter().map(|t| t.0).collect();
        assert_eq!(xs, vec![0.0, 100.0, 200.0, 300.0, 400.0]);
        assert_eq!(m.ticks[3].1, "1 ms");
        // A narrow range (30–90 µs) has no power of ten: 1-2-5 ticks, else its ends.
        let ticks = |lo: f64, hi: f64| {
            log_ticks(lo, hi)
                .into_iter()
                .map(human_duration)
                .collect::<Vec<_>>()
        };
        assert_eq!(ticks(3e4, 9e4), vec!["30 µs", "90 µs"]);
        assert_eq!(ticks(1.5e4, 9e4), vec!["20 µs", "50 µs"]);
        assert_eq!(ticks(3e4, 4e4), vec!["30 µs", "40 µs"]);
        // An empty run's half stays flat; malformed bins draw nothing.
        let empty = Distribution {
            new: vec![0; 4],
            ..d.clone()
        };
        assert!(mirror(&empty, 400.0, 50.0)
            .unwrap()
            .bins
            .iter()
            .all(|b| b.new_h == 0.0));
        let bad = Distribution {
            edges_ns: vec![0.0, 1.0],
            base: vec![1],
            new: vec![1],
        };
        assert_eq!(mirror(&bad, 400.0, 50.0), None);
    }

    #[test]
    fn ratios_and_pairs_read_plainly() {
        assert_eq!(ratio_text(Some(2.0134)), "×2.01");
        assert_eq!(ratio_text(None), "—");
        assert_eq!(pair(Some(3u64), None, |v| v.to_string()), "3 → —");
    }
}
