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
    /// Each analysis' own wall time, ms (`diagnosis`, `steps`, `patterns`, `identity`), for
    /// benchmarks: `tests/browser/bench/load.mjs --insights` reads them from the page.
    #[serde(default)]
    pub ms_each: Vec<(String, f64)>,
}

/// The patterns, with the rank-to-rank entries left out past [`MATRIX_RANKS`] ranks (the node
/// matrix stays: it is what the heat map draws at that scale).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PatternsView {
    pub patterns: analyses::patterns::Patterns,
    /// The rank-to-rank entries were left out (too many ranks to draw one cell each).
    pub ranks_left_out: bool,
}

/// What the user set in the Steps view that the step analysis runs with (the command's
/// `--theta`, `--step-pattern`, `--stage-pattern`): the default is the command's default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepsAsk {
    /// θ, 0.70–0.90; `None`: the default (0.80).
    pub theta: Option<f64>,
    /// NVTX range names (globs) that delimit a step, replacing the default list when any.
    pub step_patterns: Vec<String>,
    /// (stage, glob): tried before the default mapping's, in order (first match wins).
    pub stage_patterns: Vec<(String, String)>,
}

impl StepsAsk {
    /// The step analysis's options, as `ncclscope analyze` makes them from its flags.
    pub fn options(&self) -> analyses::steps::StepOptions {
        let mut opts = analyses::steps::StepOptions::default();
        if let Some(t) = self.theta {
            opts.settings.theta = t;
        }
        opts.settings = opts.settings.clamped();
        if !self.step_patterns.is_empty() {
            opts.mapping.steps = self.step_patterns.clone();
        }
        for (k, (stage, glob)) in self.stage_patterns.iter().enumerate() {
            opts.mapping.stages.insert(
                k,
                analyses::steps::StagePattern {
                    pattern: glob.clone(),
                    stage: stage.clone(),
                },
            );
        }
        opts
    }
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
        Self::build_with(session, analysis, &StepsAsk::default())
    }

    /// [`Insights::build`], the step analysis run as the Steps view asks.
    pub fn build_with(
        session: &load::Session,
        analysis: &pipeline::Analysis,
        ask: &StepsAsk,
    ) -> Insights {
        let hardware = hardware(session);
        let mut ms_each = Vec::new();
        let mut clock = now_ms();
        let mut lap = |name: &str| {
            let now = now_ms();
            ms_each.push((name.to_string(), now - clock));
            clock = now;
        };
        let diagnosis = analyses::diagnosis::of_session(session, analysis);
        lap("diagnosis");
        let steps = Self::steps(session, analysis, ask, &hardware);
        lap("steps");
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
        lap("patterns");
        let identity = session.identity();
        let identity_rows = analysis
            .processes
            .iter()
            .map(|p| IdentityRow::of(session, analysis, p))
            .collect();
        lap("identity");
        Insights {
            diagnosis,
            steps,
            patterns: moved.then_some(PatternsView {
                patterns,
                ranks_left_out,
            }),
            identity: identity_rows,
            identity_notes: identity.notes.clone(),
            ms: 0.0,
            ms_each,
        }
    }
}

impl Insights {
    /// The step analysis alone, as the Steps view asks (what a change of its settings re-runs).
    pub fn steps(
        session: &load::Session,
        analysis: &pipeline::Analysis,
        ask: &StepsAsk,
        hardware: &theory::Hardware,
    ) -> Option<analyses::steps::StepsReport> {
        analyses::steps::analyse(session, analysis, &ask.options(), Some(hardware))
    }
}

/// The hardware the insights assume: from the topology NCCL printed, else A100's.
pub fn hardware(session: &load::Session) -> theory::Hardware {
    analyses::hardware_from_topology(session).unwrap_or_else(theory::Hardware::a100)
}

/// Milliseconds since the epoch (the worker's clock in the page), for the laps above.
fn now_ms() -> f64 {
    #[cfg(target_arch = "wasm32")]
    {
        js_sys::Date::now()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
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
        // Each analysis timed, in the order they ran (the benchmarks read them from the page).
        let timed: Vec<&str> = insights.ms_each.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(timed, ["diagnosis", "steps", "patterns", "identity"]);
        assert!(insights.ms_each.iter().all(|(_, ms)| *ms >= 0.0));
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
