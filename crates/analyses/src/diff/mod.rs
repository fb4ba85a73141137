//! What changed between two runs (issue 35): a baseline and a new run, like matched with like.
//!
//! - [`profile`] reads one loaded, analysed run into a [`RunProfile`] (plain data: operations by
//!   signature with their durations, communicators, versions, topology, steps);
//! - [`compare`] compares two profiles into a [`RunDiff`]: per signature (parallelism, operation,
//!   message size, datatype) counts, bytes, median and p95 time, bus bandwidth and efficiency,
//!   the time ratio and whether it is significant ([`stats`]: a bootstrap interval of the ratio
//!   of medians with a fixed seed, or the Mann–Whitney rank test, as [`TestSettings`] says);
//!   communicators by parallelism and rank set ([`comms`], which also names one rank whose
//!   links slowed); steps by index and stage ([`steps`]); the tuning lines' choices, versions,
//!   settings and topology ([`facts`]); and one ranked list of changes ([`changes`]).
//! - [`resolution`] brings both runs to what both can tell: a run whose files cannot tell any
//!   communicator's parallelism is compared with the other's signatures merged by operation,
//!   size and datatype; runs seen in part (one node's files) compare per rank seen.
//! - [`diff_runs`] does both for two (session, analysis) pairs: what the page's worker calls.
//!
//! Runs of different world sizes compare per rank (and per iteration when both count them), and
//! say so. Runs that share too little say so instead of listing noise. Portable (wasm32): no
//! clock, no file, no thread; the bootstrap's seed is fixed, so a comparison is a function of
//! its two runs.

pub mod changes;
pub mod comms;
pub mod facts;
pub mod profile;
pub mod resolution;
pub mod signatures;
pub mod stats;
pub mod steps;

pub use changes::{Change, ChangeKind};
pub use comms::{CommDiff, SetupChange};
pub use facts::{FactChange, FactsDiff};
pub use profile::{profile, CommProfile, RunProfile, RunSize, SigKey, SignatureProfile};
pub use signatures::{Basis, Distribution, Presence, SideStats, SignatureDiff};
pub use stats::{Test, TestSettings};
pub use steps::{StepTable, StepTimes};

use load::Session;
use pipeline::Analysis;
use serde::{Deserialize, Serialize};

/// How to compare.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub test: TestSettings,
    /// Below this share of either run's NCCL time (operations, without times) in the
    /// signatures both have, the runs are said to have too little in common for a table.
    pub min_shared: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            test: TestSettings::default(),
            min_shared: 0.2,
        }
    }
}

/// One run as the comparison's head shows it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunSide {
    pub label: String,
    /// Why the run could not be compared (nothing in it could be read).
    pub error: Option<String>,
    #[serde(flatten)]
    pub size: RunSize,
    pub signatures: usize,
    pub communicators: usize,
    pub nccl_versions: Vec<String>,
}

impl RunSide {
    pub fn of(p: &RunProfile) -> RunSide {
        RunSide {
            label: p.label.clone(),
            error: None,
            size: p.size.clone(),
            signatures: p.signatures.len(),
            communicators: p.comms.len(),
            nccl_versions: p.facts.versions.keys().cloned().collect(),
        }
    }

    pub fn failed(label: &str, error: &str) -> RunSide {
        RunSide {
            label: label.to_string(),
            error: Some(error.to_string()),
            ..RunSide::default()
        }
    }
}

/// How much the runs share.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Common {
    pub shared_signatures: usize,
    pub base_only: usize,
    pub new_only: usize,
    /// Share of each run's NCCL time (of its operations, without times) in shared signatures.
    pub base_share: f64,
    pub new_share: f64,
    /// Whether the per-signature table means anything (see [`Settings::min_shared`]).
    pub comparable: bool,
}

/// Steps matched by index, stages by name.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StepsDiff {
    pub available: bool,
    /// Why not, or what to keep in mind.
    pub message: Option<String>,
    pub source_base: Option<String>,
    pub source_new: Option<String>,
    pub steps_base: usize,
    pub steps_new: usize,
    /// The step's time (the slowest rank's), median over steps.
    pub step: Option<StageDiff>,
    /// Each stage's time per step (the slowest rank's), median over steps; base's order, then
    /// stages only the new run has.
    pub stages: Vec<StageDiff>,
    /// Steps of the same index (the shorter run's count), ms.
    pub per_step: Vec<StepPair>,
    /// The signatures' time change per iteration (Σ impact, when the basis is per iteration),
    /// ms: how much of the step's change NCCL kernel time accounts for.
    pub communication_ms: Option<f64>,
}

/// One stage (or the whole step), base → new, over the steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageDiff {
    pub stage: String,
    pub base_ms: Option<f64>,
    pub new_ms: Option<f64>,
    pub ratio: Option<f64>,
    pub significant: bool,
    pub interval: Option<[f64; 2]>,
    pub p_value: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepPair {
    pub step: u64,
    pub base_ms: f64,
    pub new_ms: f64,
}

/// Two runs compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDiff {
    pub base: RunSide,
    pub new: RunSide,
    /// One or two sentences: the biggest change, or that nothing changed, or why no comparison.
    pub summary: String,
    pub common: Common,
    pub basis: Basis,
    /// The significance test and its settings.
    pub test: TestSettings,
    /// Largest impact first (the runs' shape first of all).
    pub changes: Vec<Change>,
    /// Largest |impact| first; empty when the runs have too little in common.
    pub signatures: Vec<SignatureDiff>,
    pub communicators: Vec<CommDiff>,
    pub steps: StepsDiff,
    pub facts: FactsDiff,
}

/// Profiles two loaded, analysed runs and compares them: the page's worker calls this with the
/// two (session, analysis) pairs it holds.
pub fn diff_runs(
    base: (&Session, &Analysis, &str),
    new: (&Session, &Analysis, &str),
    settings: &Settings,
) -> RunDiff {
    let b = profile(base.0, base.1, base.2);
    let n = profile(new.0, new.1, new.2);
    compare(&b, &n, settings)
}

/// [`compare`] when either run may have failed to load (`Err`: the message naming it): the other
/// is still summarised, and the summary names the failure.
pub fn compare_loaded(
    base: Result<&RunProfile, (&str, &str)>,
    new: Result<&RunProfile, (&str, &str)>,
    settings: &Settings,
) -> RunDiff {
    match (base, new) {
        (Ok(b), Ok(n)) => compare(b, n, settings),
        (b, n) => {
            let side = |r: &Result<&RunProfile, (&str, &str)>| match r {
                Ok(p) => RunSide::of(p),
                Err((label, e)) => RunSide::failed(label, e),
            };
            let (bs, ns) = (side(&b), side(&n));
            let failed: Vec<String> = [("base", &bs), ("new", &ns)]
                .iter()
                .filter_map(|(which, s)| {
                    s.error
                        .as_ref()
                        .map(|e| format!("the {which} run ({}) could not be read: {e}", s.label))
                })
                .collect();
            RunDiff {
                summary: format!("No comparison: {}.", failed.join("; ")),
                base: bs,
                new: ns,
                common: Common::default(),
                basis: Basis {
                    per: "rank".into(),
                    base_divisor: 1.0,
                    new_divisor: 1.0,
                },
                test: settings.test,
                changes: Vec::new(),
                signatures: Vec::new(),
                communicators: Vec::new(),
                steps: StepsDiff {
                    message: Some("no comparison".into()),
                    ..StepsDiff::default()
                },
                facts: FactsDiff::default(),
            }
        }
    }
}

/// Compares a new run with a base run.
pub fn compare(base: &RunProfile, new: &RunProfile, settings: &Settings) -> RunDiff {
    let (base, new, resolution) = resolution::common_resolution(base, new);
    let (base, new) = (base.as_ref(), new.as_ref());
    let basis = Basis::of(base, new);
    let test = &settings.test;
    let mut sigs = signatures::compare(base, new, &basis, test);
    let common = common(&sigs, base, new, settings);
    let shared: Vec<(&SignatureProfile, &SignatureProfile)> = if common.comparable {
        shared_pairs(base, new)
    } else {
        Vec::new()
    };
    let comms = comms::compare(base, new, &shared, &basis, test);
    let mut changes = comms::shape(base, new, &basis);
    let mut on_comms = comms::setup_changes_ranked(&comms);
    let mut explainable = 0.0;
    if common.comparable {
        on_comms.extend(comms::localise(&comms, new.size.world_size));
        for (c, indices) in &mut on_comms {
            c.impact_ns = covered(&sigs, new, indices);
        }
        changes.extend(facts::tuning_changes(&sigs));
        for s in &sigs {
            if let Some(c) = signature_change(s, &basis) {
                explainable += s.impact_ns.abs();
                changes.push(c);
            }
        }
    } else {
        sigs.clear();
    }
    changes.extend(on_comms.into_iter().map(|(c, _)| c));
    let (facts, fact_changes) = facts::compare(base, new, explainable);
    changes.extend(fact_changes);
    changes::rank(&mut changes);
    let steps = compare_steps(base, new, &sigs, &basis, test);
    let mut summary = summary(&changes, &common, &sigs, base, new, test);
    if let Some(note) = resolution {
        summary.push(' ');
        summary.push_str(&note);
    }
    RunDiff {
        summary,
        base: RunSide::of(base),
        new: RunSide::of(new),
        common,
        basis,
        test: *test,
        changes,
        signatures: sigs,
        communicators: comms,
        steps,
        facts,
    }
}

/// What a cause on the new run's communicators `indices` covers: the |impact| of the signatures
/// that changed significantly and ran on one of them.
fn covered(sigs: &[SignatureDiff], new: &RunProfile, indices: &[usize]) -> f64 {
    let mut indices = indices.to_vec();
    indices.sort_unstable();
    let keys: std::collections::BTreeSet<&SigKey> = new
        .signatures
        .iter()
        .filter(|s| {
            s.samples
                .iter()
                .any(|c| indices.binary_search(&c.comm).is_ok())
        })
        .map(|s| &s.key)
        .collect();
    sigs.iter()
        .filter(|s| s.significant && keys.contains(&s.new_key()))
        .map(|s| s.impact_ns.abs())
        .sum()
}

/// The signatures both runs have, as (base, new), paired as [`signatures::join`] pairs them.
fn shared_pairs<'a>(
    base: &'a RunProfile,
    new: &'a RunProfile,
) -> Vec<(&'a SignatureProfile, &'a SignatureProfile)> {
    signatures::join(base, new)
        .into_iter()
        .filter_map(|(b, n)| Some((b?, n?)))
        .collect()
}

fn common(sigs: &[SignatureDiff], base: &RunProfile, new: &RunProfile, s: &Settings) -> Common {
    let timed = base.size.timed_operations > 0 && new.size.timed_operations > 0;
    // Each signature's weight in its run: its kernel time, or its operations without times.
    let weight = |x: &SideStats| {
        if timed {
            x.median_ns.unwrap_or(0.0) * x.count as f64
        } else {
            x.count as f64
        }
    };
    let share = |side: fn(&SignatureDiff) -> &SideStats| {
        let total: f64 = sigs.iter().map(|d| weight(side(d))).sum();
        let both: f64 = sigs
            .iter()
            .filter(|d| d.presence == Presence::Both)
            .map(|d| weight(side(d)))
            .sum();
        if total > 0.0 {
            both / total
        } else {
            0.0
        }
    };
    let (base_share, new_share) = (share(|d| &d.base), share(|d| &d.new));
    let count = |p: Presence| sigs.iter().filter(|d| d.presence == p).count();
    let shared_signatures = count(Presence::Both);
    Common {
        shared_signatures,
        base_only: count(Presence::Base),
        new_only: count(Presence::New),
        base_share,
        new_share,
        comparable: shared_signatures > 0
            && base_share >= s.min_shared
            && new_share >= s.min_shared
            && !base.signatures.is_empty()
            && !new.signatures.is_empty(),
    }
}

/// A signature's entry in the ranked list, if it changed: its time significantly, its count, or
/// it is in one run only.
fn signature_change(s: &SignatureDiff, basis: &Basis) -> Option<Change> {
    let name = s.key.text();
    let per = &basis.per;
    let impact = changes::time_text(s.impact_ns);
    let ms = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{:.3} ms", v / 1e6));
    let (kind, what) = match s.presence {
        Presence::Base => (
            ChangeKind::Removed,
            format!(
                "{name}: only in the base run ({} operations; {impact} per {per})",
                s.base.count
            ),
        ),
        Presence::New => (
            ChangeKind::Added,
            format!(
                "{name}: only in the new run ({} operations; {impact} per {per})",
                s.new.count
            ),
        ),
        Presence::Both if s.significant => {
            let r = s.time_ratio.unwrap_or(1.0);
            let how = if r >= 1.0 {
                format!("{r:.2}× slower")
            } else {
                format!("{:.2}× faster", 1.0 / r)
            };
            let evidence = match (s.interval, s.p_value) {
                (Some([lo, hi]), _) => format!("; ratio interval {lo:.2}–{hi:.2}"),
                (_, Some(p)) => format!("; rank test p = {p:.1e}"),
                _ => String::new(),
            };
            (
                ChangeKind::Time,
                format!(
                    "{name}: {how} (median {} → {}{evidence}), {impact} per {per}",
                    ms(s.base.median_ns),
                    ms(s.new.median_ns)
                ),
            )
        }
        Presence::Both if s.count_changed() => (
            ChangeKind::Count,
            format!(
                "{name}: {:.2}× the operations per {per} ({} → {}), {impact} per {per}",
                s.count_ratio.unwrap_or(1.0),
                s.base.count,
                s.new.count
            ),
        ),
        Presence::Both => return None,
    };
    let mut c = Change::new(kind, s.impact_ns, what);
    c.signatures.push(s.key.clone());
    Some(c)
}

fn summary(
    changes: &[Change],
    common: &Common,
    sigs: &[SignatureDiff],
    base: &RunProfile,
    new: &RunProfile,
    test: &TestSettings,
) -> String {
    let mut out = String::new();
    if !common.comparable {
        out.push_str(&format!(
            "The runs have too little in common for a per-operation comparison: the {} \
             signatures they share carry {:.0} % of the base run's NCCL time and {:.0} % of the \
             new run's ({} only in base, {} only in new: a different model or layout?).",
            common.shared_signatures,
            (100.0 * common.base_share).abs(),
            (100.0 * common.new_share).abs(),
            common.base_only,
            common.new_only
        ));
    } else if changes.is_empty() {
        out.push_str(&format!(
            "No significant change: {} signatures compared by the {} test, none changed by \
             {:.0} % or more.",
            sigs.iter().filter(|s| s.presence == Presence::Both).count(),
            test.method.name(),
            100.0 * test.min_effect
        ));
    } else {
        out.push_str(&format!("The biggest change: {}.", changes[0].what));
    }
    let world_first = changes.first().is_some_and(|c| c.kind == ChangeKind::World);
    if base.size.worlds_differ(&new.size) && !world_first {
        out.push_str(&format!(
            " World sizes differ ({} → {}): compared per rank.",
            base.size.world_size, new.size.world_size
        ));
    }
    if base.size.partial() || new.size.partial() {
        out.push_str(&format!(
            " The files cover {} of the base run and {} of the new: counts and times are per rank seen.",
            base.size.ranks_text(),
            new.size.ranks_text()
        ));
    }
    if base.size.timed_operations == 0 || new.size.timed_operations == 0 {
        out.push_str(" No kernel times in one run (no exports?): counts and bytes only.");
    }
    out
}

fn compare_steps(
    base: &RunProfile,
    new: &RunProfile,
    sigs: &[SignatureDiff],
    basis: &Basis,
    test: &TestSettings,
) -> StepsDiff {
    let (Some(b), Some(n)) = (&base.steps, &new.steps) else {
        let which = match (&base.steps, &new.steps) {
            (None, None) => "neither run",
            (None, _) => "the base run does not",
            _ => "the new run does not",
        };
        return StepsDiff {
            message: Some(format!(
                "no step comparison: {which} mark{} steps (NVTX iteration ranges)",
                if which == "neither run" { "s" } else { "" }
            )),
            source_base: base.steps.as_ref().map(|t| t.source.clone()),
            source_new: new.steps.as_ref().map(|t| t.source.clone()),
            steps_base: base.steps.as_ref().map_or(0, |t| t.steps.len()),
            steps_new: new.steps.as_ref().map_or(0, |t| t.steps.len()),
            ..StepsDiff::default()
        };
    };
    let mut names: Vec<&String> = b.stage_names.iter().collect();
    names.extend(n.stage_names.iter().filter(|s| !b.stage_names.contains(s)));
    let stages = names
        .into_iter()
        .map(|name| {
            let times = |t: &StepTable| -> Vec<f64> {
                let Some(i) = t.stage_names.iter().position(|s| s == name) else {
                    return Vec::new();
                };
                t.steps
                    .iter()
                    .filter_map(|s| s.stage_ms.get(i).copied())
                    .collect()
            };
            stage_diff(name, times(b), times(n), test)
        })
        .collect();
    let totals = |t: &StepTable| t.steps.iter().map(|s| s.total_ms).collect();
    let per_step = b
        .steps
        .iter()
        .zip(&n.steps)
        .map(|(x, y)| StepPair {
            step: x.step,
            base_ms: x.total_ms,
            new_ms: y.total_ms,
        })
        .collect();
    let communication_ms = (basis.per == "rank and iteration")
        .then(|| sigs.iter().map(|s| s.impact_ns).sum::<f64>() / 1e6);
    StepsDiff {
        available: true,
        message: (b.steps.len() != n.steps.len()).then(|| {
            format!(
                "{} steps in base, {} in new: steps compared by index up to the shorter run",
                b.steps.len(),
                n.steps.len()
            )
        }),
        source_base: Some(b.source.clone()),
        source_new: Some(n.source.clone()),
        steps_base: b.steps.len(),
        steps_new: n.steps.len(),
        step: Some(stage_diff("step", totals(b), totals(n), test)),
        stages,
        per_step,
        communication_ms,
    }
}

/// One stage's (or the step's) per-step times compared.
fn stage_diff(name: &str, mut xb: Vec<f64>, mut xn: Vec<f64>, test: &TestSettings) -> StageDiff {
    let (mb, mn) = (stats::median(&mut xb), stats::median(&mut xn));
    let v = stats::compare(&mut xb, &mut xn, test, stats::stable_hash(name.as_bytes()));
    StageDiff {
        stage: name.to_string(),
        base_ms: mb,
        new_ms: mn,
        ratio: v.map(|v| v.ratio),
        significant: v.is_some_and(|v| v.significant),
        interval: v.and_then(|v| v.interval),
        p_value: v.and_then(|v| v.p_value),
    }
}
