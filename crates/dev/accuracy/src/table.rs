//! The sweep as a Markdown table.

use crate::sweep::{Method, ScenarioResult};
use std::fmt::Write;

/// One table per timestamp setting: per scenario and method, precision, recall and F1 (means over
/// seeds), the worst seed's F1, and the thesis' published F1 beside it.
pub fn markdown(results: &[ScenarioResult]) -> String {
    let mut s = String::new();
    for timestamps in [false, true] {
        let rows: Vec<&ScenarioResult> = results
            .iter()
            .filter(|r| r.timestamps == timestamps)
            .collect();
        let Some(first) = rows.first() else { continue };
        let _ = writeln!(
            s,
            "{} log timestamps: {} seeds ({}..={}), {} ranks, {} log lines and {} kernels in all (first seed)\n",
            if timestamps { "With" } else { "Without" },
            first.seeds.len(),
            first.seeds.first().unwrap_or(&0),
            first.seeds.last().unwrap_or(&0),
            first.ranks,
            first.log_ops,
            first.kernels,
        );
        let _ = writeln!(
            s,
            "| scenario | method | precision | recall | F1 mean | F1 min | thesis F1 |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|");
        let mut sums = [0.0; 3];
        for r in &rows {
            for (mi, m) in r.methods.iter().enumerate() {
                let published = match m.method {
                    Method::ThesisNw => format!("{:.3}", r.scenario.thesis_nw_f1),
                    Method::Window => format!("{:.3}", r.scenario.thesis_window_f1),
                    Method::Ours => "–".to_string(),
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {} |",
                    r.scenario.label,
                    m.method.label(),
                    m.precision_mean,
                    m.recall_mean,
                    m.f1_mean,
                    m.f1_min,
                    published
                );
                sums[mi] += m.f1_mean;
            }
        }
        let n = rows.len() as f64;
        let _ = writeln!(
            s,
            "| average | thesis NW / sliding window / ours | | | {:.3} / {:.3} / {:.3} | | 0.893 / 0.612 |\n",
            sums[0] / n,
            sums[1] / n,
            sums[2] / n
        );
    }
    s
}
