//! What went wrong, from the logs alone (issue 31): where every member of every communicator
//! stopped, members that called different collectives at one opCount, the errors each rank
//! printed (classified, the first in time marked, peers named by address resolved), the
//! framework's watchdog timeouts tied to communicators, and set-up that differs across ranks.
//!
//! Input: the session's parsed logs ([`diagnose`]); when an analysis exists, its communicators
//! (for the same global ranks as the rest of the summary) and clocks (to order errors in
//! synchronised time) make it better, but nothing needs them. Output: [`Diagnosis`], plain
//! serde data the command writes as the summary's `diagnosis` and a page can show and share as
//! it is.
//!
//! Modules: `index` (each process's records per communicator pointer), `groups` (logical
//! communicators: by `commId`, else by size and operation sequence), `stops` (where members
//! stopped: `behind`, `missing`), `mismatch`, `errors`, `timeouts` (framework lines), `config`,
//! `stamp_clock` (the log stamps' clocks, from an analysis with exports).

mod config;
mod errors;
mod groups;
mod index;
mod merge;
mod mismatch;
mod stamp_clock;
mod stops;
mod text;
mod timeouts;

use ingest_nccl::ParsedLog;
use serde::{Deserialize, Serialize};

pub use errors::ErrorClass;
pub use stamp_clock::stamp_clocks;

/// What the diagnosis may use besides the logs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    /// The analysis's communicators (`enrich::group` over the same logs): their global ranks
    /// are the summary's. Without them the diagnosis groups the logs itself.
    pub communicators: Option<&'a enrich::Communicators>,
    /// Every rank's log-stamp clock against the reference rank's, to order errors in one
    /// time (for an analysis with exports: [`stamp_clocks`]).
    pub clocks: Option<&'a enrich::ClockSync>,
}

/// Everything the diagnosis found.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Diagnosis {
    /// Most severe first (the contract's `diagnosis`).
    pub findings: Vec<Finding>,
    /// Where every member of every communicator stopped.
    pub stopped: Vec<CommStops>,
    /// Which error came first, and how that was told (or why it cannot be).
    pub first_error: Option<FirstError>,
}

/// One finding (the contract's `diagnosis` entry, with a few fields more).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: Kind,
    pub severity: Severity,
    /// The communicator's id (`0x<commId>` or the id the grouping gave it), when one is known.
    pub communicator: Option<String>,
    /// As NCCL prints it: hex without `0x`.
    pub op_count: Option<String>,
    /// Global ranks the finding is about (for a mismatch: the odd ones out).
    pub ranks: Vec<u32>,
    pub processes: Vec<ProcessRef>,
    /// One plain sentence.
    pub message: String,
    pub evidence: Vec<Evidence>,
    /// For errors: what kind of failure the text says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<ErrorClass>,
    /// The first error in time across all ranks.
    #[serde(default, skip_serializing_if = "is_false")]
    pub first: bool,
    /// For the first error: which time decided it (`synchronised`: the log stamps mapped into
    /// the ranks' synchronised clock; `log stamps`: each host's own; `file order`: one
    /// process's lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_base: Option<String>,
    /// How the communicator's members were tied together (`commId`, `size and operation
    /// sequence`, `size alone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grouped_by: Option<String>,
    /// Ranks a peer named in the text (by address, host or rank) resolves to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peer_ranks: Vec<u32>,
    /// When it happened, as the log stamped it (an error's first line, a stop's last
    /// operation), when stamped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Mismatch,
    Behind,
    Missing,
    Error,
    Timeout,
    Config,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Mismatch => "mismatch",
            Kind::Behind => "behind",
            Kind::Missing => "missing",
            Kind::Error => "error",
            Kind::Timeout => "timeout",
            Kind::Config => "config",
        }
    }
}

/// Ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ProcessRef {
    pub host: String,
    pub pid: u32,
}

/// A line of an input: the file as the session names it and the 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Evidence {
    pub path: String,
    pub line: u64,
    /// The line's own text (clipped), when whoever holds the file filled it in
    /// ([`Diagnosis::fill_evidence_text`]): what a reader without the file sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The longest evidence text kept, in characters (a log line is rarely longer).
pub const MAX_EVIDENCE_TEXT_CHARS: usize = 400;

impl Diagnosis {
    /// Every evidence line of the findings and of where members stopped, once each, by file
    /// then line: what [`Diagnosis::fill_evidence_text`] will ask for.
    pub fn evidence_lines(&self) -> Vec<(String, u64)> {
        let mut all: Vec<(String, u64)> = self
            .findings
            .iter()
            .flat_map(|f| f.evidence.iter())
            .chain(
                self.stopped
                    .iter()
                    .flat_map(|c| c.members.iter())
                    .flat_map(|m| {
                        m.last
                            .as_ref()
                            .map(|l| &l.evidence)
                            .into_iter()
                            .chain(&m.cut_line)
                    }),
            )
            .map(|e| (e.path.clone(), e.line))
            .collect();
        all.sort();
        all.dedup();
        all
    }

    /// Fills each evidence line's `text` from `text_of(path, line)` (clipped to
    /// [`MAX_EVIDENCE_TEXT_CHARS`]); lines it does not know keep theirs.
    pub fn fill_evidence_text(&mut self, text_of: impl Fn(&str, u64) -> Option<String>) {
        let fill = |e: &mut Evidence| {
            if let Some(t) = text_of(&e.path, e.line) {
                e.text = Some(clip_text(&t, MAX_EVIDENCE_TEXT_CHARS));
            }
        };
        for f in &mut self.findings {
            f.evidence.iter_mut().for_each(fill);
        }
        for m in self.stopped.iter_mut().flat_map(|c| c.members.iter_mut()) {
            if let Some(l) = m.last.as_mut() {
                fill(&mut l.evidence);
            }
            if let Some(c) = m.cut_line.as_mut() {
                fill(c);
            }
        }
    }
}

/// `s` cut to `max` characters (an ellipsis marks the cut).
pub fn clip_text(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// One communicator's members and where each stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommStops {
    pub communicator: String,
    pub size: u32,
    pub grouped_by: String,
    pub members: Vec<MemberStop>,
    /// Ranks in the communicator no log shows (known when init lines give the members' ranks).
    pub missing_ranks: Vec<u32>,
    /// How many members no log shows.
    pub missing: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberStop {
    pub rank: Option<u32>,
    /// The rank inside the communicator, when init lines print it.
    pub comm_rank: Option<u32>,
    pub host: String,
    pub pid: u32,
    /// The last operation it logged on this communicator.
    pub last: Option<LastOp>,
    /// How many operations the others logged after its last one.
    pub behind_by: u32,
    /// `Init START` printed and no `Init COMPLETE`: its set-up did not finish in the log.
    #[serde(default, skip_serializing_if = "is_false")]
    pub init_unfinished: bool,
    /// Its log ends in a per-collective line cut short (which may be its next operation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_line: Option<Evidence>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastOp {
    pub op_count: String,
    pub op: String,
    pub count: u64,
    pub datatype: String,
    pub root: i64,
    /// `0x…`, as printed.
    pub stream: String,
    /// The log's timestamp, when it has one (UTC as the parser read it).
    pub time: Option<String>,
    pub evidence: Evidence,
}

/// Which error came first across all ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstError {
    /// Index into [`Diagnosis::findings`]; `None` when it cannot be told.
    pub finding: Option<usize>,
    /// How it was told, or why it cannot be.
    pub how: String,
    /// Which time decided (as [`Finding::time_base`]); `None` when it cannot be told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_base: Option<String>,
}

/// Diagnoses the session's parsed logs.
pub fn diagnose(logs: &[&ParsedLog], ctx: Context<'_>) -> Diagnosis {
    let ix = index::Index::build(logs, ctx.communicators);
    let comms = groups::group(&ix);
    let mut findings = Vec::new();
    let mismatches = mismatch::find(&ix, &comms);
    let timeouts = timeouts::find(&ix, &comms);
    let (stopped, stop_findings) = stops::find(&ix, &comms, &mismatches, &timeouts.stragglers);
    findings.extend(mismatches.into_iter().map(|m| m.finding));
    let mut errs = errors::find(&ix);
    let timeouts = timeouts.findings;
    // A hang's evidence is stronger with the failure's own lines beside it.
    let failed = errs.iter().any(|e| e.finding.severity > Severity::Info)
        || timeouts.iter().any(|t| t.severity == Severity::Critical);
    findings.extend(stops::corroborate(stop_findings, failed));
    let first_error = errors::mark_first(&mut errs, ctx.clocks);
    let first_at = first_error.as_ref().and_then(|f| f.finding);
    let mut errs: Vec<(bool, Finding)> = errs
        .into_iter()
        .enumerate()
        .map(|(i, e)| (first_at == Some(i), e.finding))
        .collect();
    findings.extend(timeouts);
    findings.extend(config::find(&ix, &comms));
    // Most severe first; within a severity, the kinds in the contract's order, then as found
    // (the first error before the other errors).
    let mut all: Vec<(bool, Finding)> = findings.into_iter().map(|f| (false, f)).collect();
    all.append(&mut errs);
    all.sort_by(|a, b| {
        (
            std::cmp::Reverse(a.1.severity),
            a.1.kind,
            std::cmp::Reverse(a.0),
        )
            .cmp(&(
                std::cmp::Reverse(b.1.severity),
                b.1.kind,
                std::cmp::Reverse(b.0),
            ))
    });
    let finding = all.iter().position(|(first, _)| *first);
    let findings: Vec<Finding> = all.into_iter().map(|(_, f)| f).collect();
    Diagnosis {
        findings,
        stopped,
        first_error: first_error.map(|f| FirstError { finding, ..f }),
    }
}

/// The diagnosis of an analysed session, as the command and the page both ask for it: every
/// log, with the analysis's communicators (so findings name the summary's global ranks). With
/// exports, the log stamps are mapped into the ranks' synchronised clocks through the
/// alignment ([`stamp_clocks`]) to order errors; without, errors are ordered by their stamps.
pub fn of_session(session: &load::Session, analysis: &pipeline::Analysis) -> Diagnosis {
    let logs: Vec<&ParsedLog> = session.logs().iter().map(|l| &l.parsed).collect();
    let clocks = stamp_clocks(analysis);
    let ctx = Context {
        communicators: Some(&analysis.communicators),
        clocks: clocks.as_ref(),
    };
    diagnose(&logs, ctx)
}
