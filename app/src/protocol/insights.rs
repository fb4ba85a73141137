//! The answers to the questions behind most tickets, as the worker sends them after a result
//! (the timeline first, then these): what went wrong (`analyses::diagnosis`), why a step is slow
//! (`analyses::steps`), where traffic flows (`analyses::patterns`), and how each rank's log was
//! paired with its kernels (`identity`). The analyses' own serde types travel as they are: the
//! page shows what the command's JSON says, under the same names.

use serde::{Deserialize, Serialize};

/// Every insight of one analysis.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Insights {
    pub diagnosis: analyses::diagnosis::Diagnosis,
    /// `None` when the inputs show no steps (no stage file, NVTX step range or period).
    pub steps: Option<analyses::steps::StepsReport>,
    /// `None` when no communicator moved bytes the logs say.
    pub patterns: Option<PatternsView>,
    /// One row per rank (process), in the rank table's order.
    pub identity: Vec<IdentityRow>,
    /// The pairing's notes: ambiguous or impossible pairings, hosts seen on one side only.
    pub identity_notes: Vec<String>,
    /// Wall time of building these, for benchmarks.
    pub ms: f64,
}

/// The patterns, with the rank-to-rank entries left out past [`MATRIX_RANKS`] ranks (the node
/// matrix stays: it is what the heat map draws at that scale).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PatternsView {
    pub patterns: analyses::patterns::Patterns,
    /// The rank-to-rank entries were left out (too many ranks to draw one cell each).
    pub ranks_left_out: bool,
}

/// Above this many ranks the page draws the node matrix only.
pub const MATRIX_RANKS: usize = 256;

/// How one rank's log process was paired with an export's (or a trace's) process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdentityRow {
    pub global_rank: u32,
    /// `host:pid` as the log names it (or the export, for a rank seen there alone).
    pub process: String,
    /// The clues that made the pair (`host`, `pid`, `pci_bus`, `stream`, `sequence`, ...); empty
    /// when unpaired.
    pub matched_by: Vec<String>,
    /// 0 to 1; 0 when unpaired.
    pub confidence: f64,
    /// The export file and its process, when paired.
    pub export: Option<String>,
    pub export_process: Option<String>,
    /// The rank was seen in the exports alone (no log).
    pub export_only: bool,
    /// The log's stamps: format, resolution and the zone found from the data.
    pub stamps: String,
    /// Whether the stamps constrained the alignment.
    pub stamps_used: bool,
}

impl Insights {
    /// Runs the analyses behind the insights on an analysed session, as `ncclscope analyze`
    /// runs them (the same options' defaults; the hardware from the topology NCCL printed, else
    /// A100's), so the page and the command's JSON agree.
    pub fn build(session: &load::Session, analysis: &pipeline::Analysis) -> Insights {
        let hardware =
            analyses::hardware_from_topology(session).unwrap_or_else(theory::Hardware::a100);
        let diagnosis = analyses::diagnosis::of_session(session, analysis);
        let steps = analyses::steps::analyse(
            session,
            analysis,
            &analyses::steps::StepOptions::default(),
            Some(&hardware),
        );
        let options = analyses::patterns::Options {
            hardware: &hardware,
            theory: None,
            steps: analyses::patterns::StepSource::Nvtx,
        };
        let mut patterns = analyses::patterns::patterns(session, analysis, &options);
        let ranks_left_out = analysis.processes.len() > MATRIX_RANKS;
        if ranks_left_out {
            patterns.matrix.entries = Vec::new();
        }
        let moved = !patterns.matrix.nodes.is_empty() || !patterns.matrix.entries.is_empty();
        let identity = session.identity();
        Insights {
            diagnosis,
            steps,
            patterns: moved.then_some(PatternsView {
                patterns,
                ranks_left_out,
            }),
            identity: analysis
                .processes
                .iter()
                .map(|p| IdentityRow::of(session, analysis, p))
                .collect(),
            identity_notes: identity.notes.clone(),
            ms: 0.0,
        }
    }
}

impl IdentityRow {
    fn of(
        session: &load::Session,
        analysis: &pipeline::Analysis,
        p: &pipeline::ProcessSummary,
    ) -> IdentityRow {
        let pair = session.identity().of_log(&p.process);
        let facts = analysis
            .alignments
            .get(&p.process)
            .map(|pm| analyses::time_facts(session, pm));
        IdentityRow {
            global_rank: p.global_rank,
            process: format!("{}:{}", p.process.host, p.process.pid),
            matched_by: pair
                .map(|x| x.matched_by.iter().map(|e| e.name().to_string()).collect())
                .unwrap_or_default(),
            confidence: pair.map_or(0.0, |x| x.confidence),
            export: pair.and_then(|x| session.exports().get(x.export).map(|e| e.name.clone())),
            export_process: pair.map(|x| format!("{}:{}", x.export_host, x.export_pid)),
            export_only: p.ops.is_empty() && p.kernels > 0,
            stamps: facts
                .as_ref()
                .map_or_else(|| "—".to_string(), analyses::stamp_format),
            stamps_used: facts.is_some_and(|f| f.stamps_used),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The demo's insights: every rank paired with its export's process by its host and pid,
    /// no hang or mismatch found in a clean run, the matrix with bytes between ranks, and steps
    /// from the iteration ranges; and the same findings the command's JSON has.
    #[test]
    fn the_demo_run_has_every_insight() {
        let session = testkit::sessions::generated("demo");
        let analysis = pipeline::analyse(&session, &pipeline::UserSizes::default());
        let insights = Insights::build(&session, &analysis);
        assert_eq!(insights.identity.len(), analysis.processes.len());
        for row in &insights.identity {
            assert!(row.confidence > 0.5, "{row:?}");
            assert!(row.export.is_some(), "{row:?}");
        }
        assert!(
            !insights
                .diagnosis
                .findings
                .iter()
                .any(|f| f.kind == analyses::diagnosis::Kind::Mismatch),
            "{:?}",
            insights.diagnosis.findings
        );
        let patterns = insights.patterns.clone().expect("the demo moves bytes");
        assert!(!patterns.ranks_left_out);
        assert!(patterns.patterns.matrix.entries.iter().any(|e| e.bytes > 0));
        // The page reads what the worker wrote (JSON, as `ToPage::Insights` carries it); not
        // compared whole: serde_json's reading may differ in a float's last bit.
        let json = serde_json::to_string(&insights).expect("the insights as JSON");
        let back: Insights = serde_json::from_str(&json).expect("the insights read back");
        assert_eq!(back.identity, insights.identity);
        assert_eq!(back.diagnosis, insights.diagnosis);
        assert_eq!(back.steps.is_some(), insights.steps.is_some());
        let steps = insights
            .steps
            .clone()
            .expect("the demo has iteration ranges");
        assert!(!steps.per_step.is_empty());
        // The page reads them from the worker's JSON (a message it cannot read drops the worker).
        let json = serde_json::to_string(&steps).unwrap();
        let back: analyses::steps::StepsReport = serde_json::from_str(&json).unwrap();
        let names = |r: &analyses::steps::StepsReport| {
            r.window
                .share
                .0
                .iter()
                .map(|(n, _)| n.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&back), names(&steps));
        assert!(!names(&steps).is_empty());
    }

    /// A generated hang: the first finding names the rank that stopped, as the command's does.
    #[test]
    fn a_hang_is_in_the_insights() {
        use synth::{hang, Layout, Model, RunConfig};
        let layout = Layout {
            tp: 2,
            dp: 2,
            ..Layout::default()
        };
        let model = Model {
            layers: 2,
            global_batch: 8,
            micro_batch: 1,
            iterations: 1,
            ..Model::thesis()
        };
        let mut cfg = RunConfig::new(layout, model);
        cfg.hang = Some(hang::Hang {
            rank: 3,
            call: 12,
            kind: hang::HangKind::Stop,
            watchdog: false,
            errors: false,
        });
        let session = testkit::sessions::of_run(&synth::generate(&cfg));
        let analysis = pipeline::analyse(&session, &pipeline::UserSizes::default());
        let insights = Insights::build(&session, &analysis);
        let first = &insights.diagnosis.findings[0];
        assert_eq!(first.kind, analyses::diagnosis::Kind::Behind, "{first:?}");
        assert_eq!(first.ranks, vec![3]);
    }
}
