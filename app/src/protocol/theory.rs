//! Theory versus observed (thesis table 5.1, figure 5.30), as the worker computes it for the
//! page's theory panel (`page::panels::theory`): the table of theoretical and observed volume
//! per parallelism with each rank's observation, the message-size histogram, and observed kernel
//! time beside the alpha-beta model.

use crate::protocol::format::human_bytes;
use analyses::{compare_volumes, observed_volumes, predicted_times};
use load::Session;
use pipeline::Analysis;
use serde::{Deserialize, Serialize};
use theory::{Hardware, TheoryConfig};

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TheoryRow {
    pub parallelism: String,
    pub role: String,
    pub theoretical: String,
    pub observed: String,
    pub ratio: String,
    pub discrepancy: String,
    /// Per iteration (theoretical / observed), when the exports' NVTX ranges count iterations.
    pub per_iteration: String,
    /// Per rank: (rank, observed, theoretical) bytes.
    pub ranks: Vec<(u32, f64, f64)>,
}

/// One row of the time table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimeRowView {
    pub op: String,
    pub size: String,
    pub kernels: u64,
    pub observed_us: f64,
    pub predicted_us: f64,
    pub ratio: String,
}

/// Everything the panel shows for one config.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct TheoryView {
    pub rows: Vec<TheoryRow>,
    /// (bucket lower bound, operations) of every parallelism together.
    pub message_sizes: Vec<(u64, u64)>,
    /// b·s·h·β of the config.
    pub tensor_bytes: u64,
    pub hardware: String,
    pub times: Vec<TimeRowView>,
    /// The rank-to-rank matrix the layout implies, with this config's bytes per pair (the
    /// Patterns view's "predicted" and "difference"); `ncclscope analyze --config`'s
    /// `patterns.predicted` for the same TOML.
    #[serde(default)]
    pub predicted: Option<analyses::patterns::PredictedMatrix>,
}

/// Builds the panel's view (in the worker, where the analysis is).
pub fn theory_view(
    cfg: &TheoryConfig,
    session: &Session,
    analysis: &Analysis,
    hw: &Hardware,
) -> TheoryView {
    let volumes = observed_volumes(session, &analysis.communicators, &analysis.layout);
    let rows = compare_volumes(cfg, &volumes)
        .iter()
        .map(|c| {
            let theory = c.entry.theoretical_bytes;
            TheoryRow {
                parallelism: c.entry.parallelism.name().to_string(),
                role: c.entry.rank_role.name().to_string(),
                theoretical: human_bytes(theory.round() as u64),
                observed: c.observed_mean().map_or("—".into(), human_bytes),
                ratio: c.ratio().map_or("—".into(), |r| format!("{r:.2}")),
                discrepancy: c.primary_discrepancy().map_or(String::new(), |(op, d)| {
                    let sign = if d >= 0.0 { "+" } else { "−" };
                    format!(
                        "{} {sign}{}",
                        op.name(),
                        human_bytes(d.abs().round() as u64)
                    )
                }),
                per_iteration: analysis
                    .iterations
                    .filter(|&n| n > 0)
                    .map_or(String::new(), |n| {
                        let obs = c.observed_mean().unwrap_or(0) / u64::from(n);
                        format!(
                            "{} / {}",
                            human_bytes(c.entry.bytes_per_iteration.round() as u64),
                            human_bytes(obs)
                        )
                    }),
                ranks: c
                    .observed
                    .iter()
                    .map(|&(r, b)| (r, b as f64, theory))
                    .collect(),
            }
        })
        .collect();
    let mut sizes = std::collections::BTreeMap::<u64, u64>::new();
    for v in &volumes {
        for hist in v.message_sizes.values() {
            for (b, n) in hist {
                *sizes.entry(*b).or_default() += n;
            }
        }
    }
    let m = &cfg.model;
    let times = predicted_times(analysis, hw)
        .iter()
        .map(|t| TimeRowView {
            op: t.op.name().to_string(),
            size: human_bytes(t.bucket_bytes),
            kernels: t.kernels,
            observed_us: t.observed_mean_s * 1e6,
            predicted_us: t.predicted_mean_s * 1e6,
            ratio: t.ratio().map_or("—".into(), |r| format!("{r:.2}")),
        })
        .collect();
    TheoryView {
        rows,
        message_sizes: sizes.into_iter().collect(),
        tensor_bytes: m.micro_batch * m.seq_len * m.hidden * m.bytes_per_element,
        hardware: hw.name.to_string(),
        times,
        predicted: Some(predicted_matrix(cfg, session, analysis)),
    }
}

/// The matrix `cfg`'s layout implies with its bytes, compared with the observed one (as
/// `analyses::patterns::patterns` does with `theory: Some(cfg)`).
fn predicted_matrix(
    cfg: &TheoryConfig,
    session: &Session,
    analysis: &Analysis,
) -> analyses::patterns::PredictedMatrix {
    let prepared = analyses::patterns::Prepared::of(session, analysis);
    let observed = analyses::patterns::comm_matrix(&prepared);
    analyses::patterns::predicted_matrix(&analysis.layout, Some(cfg), &observed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's predicted matrix for a config is the command's (`analyze --config`'s
    /// `patterns.predicted`): the layout's pairs with the model's bytes, so the Patterns view's
    /// difference of a pair is the command's observed minus predicted.
    #[test]
    fn the_predicted_matrix_is_the_commands_for_the_same_config() {
        let session = testkit::sessions::generated("demo");
        let analysis = pipeline::analyse(&session, &pipeline::UserSizes::default());
        let sizes = analysis
            .layout
            .sizes
            .expect("the demo's layout is inferred");
        let mut cfg = TheoryConfig::thesis_dense();
        cfg.parallel.tp = u64::from(sizes.tp);
        cfg.parallel.pp = u64::from(sizes.pp);
        cfg.parallel.dp = u64::from(sizes.dp);
        let hw = Hardware::a100();
        let view = theory_view(&cfg, &session, &analysis, &hw);
        let predicted = view.predicted.expect("a predicted matrix");
        let options = analyses::patterns::Options {
            hardware: &hw,
            theory: Some(&cfg),
            steps: analyses::patterns::StepSource::Nvtx,
        };
        let command = analyses::patterns::patterns(&session, &analysis, &options).predicted;
        assert_eq!(predicted, command);
        assert!(predicted
            .entries
            .iter()
            .any(|e| e.bytes.is_some_and(|b| b > 0)));
        // It travels as JSON, and an older message without it still reads.
        let json = serde_json::to_string(&TheoryView::default()).unwrap();
        let old = json.replace(",\"predicted\":null", "");
        assert!(!old.contains("predicted"));
        assert_eq!(
            serde_json::from_str::<TheoryView>(&old).unwrap(),
            TheoryView::default()
        );
    }
}
