//! Comparing two runs (issue 35): two generated 64-rank runs (`large-64`'s layout, TP8 PP2 DP4
//! on 8 nodes × 8), the new one with another seed and AllReduce at 0.8 of its bandwidth (so the
//! comparison has real changes to rank), each loaded and analysed as `ncclscope diff` does; then
//! both profiled and compared (`analyses::diff::profile` twice and `compare`). Reference: the time
//! to load and analyse the two runs, in the same run. Target: comparing two 64-rank × 10⁴-operation
//! runs adds under 3 s natively beyond loading them. Sizes, operations per rank: 2500, 5000 and
//! 10⁴ (`--quick`: 250, 500, 1000, projected to 10⁴ with the growth between the two largest).

use crate::growth::exponent;
use crate::report::{Report, Verdict};
use crate::{best_kept, Scale};
use analyses::diff::{self, RunDiff, Settings};
use load::Session;
use pipeline::{analyse, Analysis, UserSizes};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The target's operations per rank, and its time (seconds).
const TARGET_OPS: u64 = 10_000;
const TARGET_S: f64 = 3.0;

/// Operations per rank this run measures.
pub fn sizes(scale: Scale) -> Vec<u64> {
    match scale {
        Scale::Quick => vec![250, 500, 1000],
        Scale::Standard => vec![2500, 5000, TARGET_OPS],
    }
}

/// The pair's directories (base, new) at `ops` operations per rank, generated the first time.
pub fn pair(ops: u64) -> (PathBuf, PathBuf) {
    let preset = synth::preset("large-64")
        .expect("the large-64 preset")
        .config;
    let base = crate::inputs::scaled(preset, ops);
    let mut new = base.clone();
    new.seed = 2;
    new.variation.op_bandwidth = Some(("AllReduce".into(), 0.8));
    (
        crate::inputs::run(&format!("diff-base-64x{ops}"), &base),
        crate::inputs::run(&format!("diff-new-64x{ops}"), &new),
    )
}

/// One run loaded and analysed as the command does it; with its seconds.
fn load(dir: &Path) -> (Session, Analysis, f64) {
    let t = Instant::now();
    let mut session = Session::default();
    let files = ncclscope_cli::inputs::expand(&[dir.to_path_buf()]).expect("a bench run");
    for f in &files {
        ncclscope_cli::inputs::load(&mut session, f);
    }
    let analysis = analyse(&session, &UserSizes::default());
    (session, analysis, t.elapsed().as_secs_f64())
}

struct Measured {
    ops_per_rank: u64,
    operations: u64,
    load_s: f64,
    profile_s: f64,
    compare_s: f64,
    diff_s: f64,
    result: RunDiff,
}

pub fn run(sizes: &[u64], report: &mut Report) {
    let mut rows = Vec::new();
    for &ops in sizes {
        let (base_dir, new_dir) = pair(ops);
        let (bs, ba, tb) = load(&base_dir);
        let (ns, na, tn) = load(&new_dir);
        let (profile_s, (b, n)) = best_kept(3, || {
            (
                diff::profile(&bs, &ba, "base"),
                diff::profile(&ns, &na, "new"),
            )
        });
        let (compare_s, result) = best_kept(3, || diff::compare(&b, &n, &Settings::default()));
        let diff_s = profile_s + compare_s;
        eprintln!(
            "bench: diff, 64 ranks × {ops} ops: load both {:.1} s, profile both {profile_s:.2} s, \
             compare {compare_s:.2} s",
            tb + tn
        );
        rows.push(Measured {
            ops_per_rank: ops,
            operations: result.base.size.operations + result.new.size.operations,
            load_s: tb + tn,
            profile_s,
            compare_s,
            diff_s,
            result,
        });
    }
    report.section(
        "Comparing two runs (issue 35)",
        "Two generated 64-rank runs (`large-64`'s layout: TP8 PP2 DP4, 8 nodes × 8), the new one \
         with another seed and AllReduce at 0.8 of its bandwidth; each loaded and analysed as \
         `ncclscope diff` does (reference, one round), then both profiled and compared \
         (`analyses::diff::profile` × 2, then `compare` with the bootstrap's 2000 resamples; \
         each best of 3). Target: under 3 s for two 64-rank × 10⁴-operation runs, beyond loading them.",
    );
    report.row(&[
        "ops per rank",
        "operations (both)",
        "load + analyse both s",
        "profile both s",
        "compare s",
        "profile + compare s",
        "ratio",
        "signatures",
        "first change",
    ]);
    for m in &rows {
        report.row(&[
            &m.ops_per_rank.to_string(),
            &m.operations.to_string(),
            &format!("{:.2}", m.load_s),
            &format!("{:.2}", m.profile_s),
            &format!("{:.2}", m.compare_s),
            &format!("{:.2}", m.diff_s),
            &format!("{:.2}", m.diff_s / m.load_s),
            &m.result.signatures.len().to_string(),
            m.result.changes.first().map_or("—", |c| c.what.as_str()),
        ]);
    }
    let pts: Vec<(f64, f64)> = rows
        .iter()
        .map(|m| (m.ops_per_rank as f64, m.diff_s))
        .collect();
    report.growth("profile + compare vs operations per rank", exponent(&pts));
    let what = "comparing two 64-rank × 10⁴-operation runs adds under 3 s natively (issue 35)";
    match &rows[..] {
        [.., last] if last.ops_per_rank >= TARGET_OPS => report.target(
            what,
            format!(
                "{:.2} s (loading and analysing both: {:.1} s)",
                last.diff_s, last.load_s
            ),
            Verdict::of(true, last.diff_s < TARGET_S),
        ),
        [.., a, b] => {
            let k =
                (b.diff_s / a.diff_s).ln() / (b.ops_per_rank as f64 / a.ops_per_rank as f64).ln();
            let scale = TARGET_OPS as f64 / b.ops_per_rank as f64;
            let projected = b.diff_s * scale.powf(k);
            report.target(
                what,
                format!(
                    "projected {projected:.2} s ({:.2} s at {} operations per rank × {scale:.0}^{k:.2})",
                    b.diff_s, b.ops_per_rank
                ),
                Verdict::of(true, projected < TARGET_S),
            );
        }
        _ => report.target(what, "—".into(), Verdict::NotMeasured),
    }
}
