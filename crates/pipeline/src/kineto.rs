//! PyTorch profiler (Kineto) traces in a session (issue 33; docs/design/kineto.md).
//!
//! A trace's NCCL kernels carry their meaning, so a trace enters the session as what the rest
//! of the pipeline already reads: an export holding its kernels (its own clock domain, as an
//! Nsight export's) and a log holding one operation per kernel, made by
//! [`ingest_kineto::records`], with the pairing of the two known. The alignment is skipped for
//! such a process ([`known_alignment`]): its kernels are matched to their operations as the
//! trace says. Communicators, global ranks, clocks, bandwidths, volumes, the theory comparison,
//! the timeline and the exports then work as for logs and exports.
//!
//! When an NCCL log of the same process is in the session too (same pid and, where both say it,
//! the same global rank), the log's operations are the process's: the trace gives only its
//! kernels (as an export of the log's host) and the aligner joins them to the log's lines, so
//! the log's algorithm, protocol, channels and topology enrich the trace's kernels.

use crate::alignment::InputPrint;
use crate::session::{LoadedExport, LoadedLog};
use align::{KernelMatches, ProcessAlignment};
use ingest_kineto::{GroupRecord, KinetoStream, KinetoTrace};
use ingest_nccl::{ParsedLog, ProcessInfo};
use model::log::{ProcessKey, SourceLine};
use model::nsys::{NsysExport, Process};
use std::sync::Arc;

/// Streams one trace in, chunk by chunk, plain or gzip ([`KinetoStream`]).
pub struct TraceLoader {
    name: String,
    stream: KinetoStream,
}

impl TraceLoader {
    pub fn new(name: &str) -> Self {
        TraceLoader {
            name: name.to_string(),
            stream: KinetoStream::new(name),
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        self.stream.feed(chunk);
    }

    /// Bytes held between feeds besides the records: bounded, whatever the file's size.
    pub fn buffered_bytes(&self) -> usize {
        self.stream.buffered_bytes()
    }

    /// Ends the input; `bytes` is the file's size as the user sees it.
    pub fn finish(self, bytes: u64) -> LoadedTrace {
        LoadedTrace {
            name: self.name,
            bytes,
            trace: self.stream.finish(),
        }
    }
}

/// A read trace and the name it was loaded under.
pub struct LoadedTrace {
    pub name: String,
    pub bytes: u64,
    pub trace: KinetoTrace,
}

/// A trace as the session keeps it: what it adds to the session's logs and exports.
pub struct SessionTrace {
    pub name: String,
    pub bytes: u64,
    /// The trace without its kernels (they are in `export`, compactly): distributedInfo,
    /// steps, counts, diagnostics.
    pub trace: KinetoTrace,
    pub file_index: u32,
    /// The process its records name when no log claims it.
    pub process: ProcessKey,
    /// Its operations (kept in the session's logs unless a log claims the process).
    pub log: Arc<LoadedLog>,
    /// Its kernels (always in the session's exports; re-hosted when a log claims the process).
    pub export: Arc<LoadedExport>,
    /// Per kernel (export row), its operation's row in `log`.
    pub op_of_kernel: Vec<Option<u32>>,
    /// Its process groups, as communicators of `process`.
    pub groups: Vec<GroupRecord>,
    /// The log process that claimed it, if any.
    pub claimed_by: Option<ProcessKey>,
}

impl SessionTrace {
    /// The process its kernels belong to in the session.
    pub fn owner(&self) -> &ProcessKey {
        self.claimed_by.as_ref().unwrap_or(&self.process)
    }

    /// The trace's global rank, where `distributedInfo` says it.
    pub fn rank(&self) -> Option<u32> {
        self.trace.distributed.as_ref().and_then(|d| d.rank)
    }
}

/// Builds what a trace adds to a session: its records as a log and an export of `process`.
pub(crate) fn session_trace(
    loaded: LoadedTrace,
    file_index: u32,
    process: ProcessKey,
) -> SessionTrace {
    let LoadedTrace {
        name,
        bytes,
        mut trace,
    } = loaded;
    let mut recs = ingest_kineto::records(&trace, &process, file_index);
    let nccl_version = trace
        .distributed
        .as_ref()
        .and_then(|d| d.nccl_version.clone());
    let first_line = trace.kernels.first().map_or(0, |k| k.line);
    trace.diagnostics.append(&mut recs.diagnostics);
    trace.kernels = Vec::new();
    let has_kernels = !recs.kernels.is_empty();
    let inits = std::mem::take(&mut recs.inits);
    let log = LoadedLog {
        name: name.clone(),
        bytes,
        parsed: ParsedLog {
            path: name.clone(),
            file_index,
            ops: std::mem::take(&mut recs.ops).into_iter().collect(),
            inits,
            processes: if has_kernels {
                vec![ProcessInfo {
                    process: process.clone(),
                    nccl_version: nccl_version.clone(),
                    topology: None,
                    first_line: SourceLine {
                        file: file_index,
                        line: first_line,
                    },
                }]
            } else {
                Vec::new()
            },
            nccl_version,
            ..ParsedLog::default()
        },
    };
    let kernels = std::mem::take(&mut recs.kernels).into_iter().collect();
    let export = export_of(&name, bytes, &trace, &process, kernels);
    SessionTrace {
        name,
        bytes,
        trace,
        file_index,
        process,
        log: Arc::new(log),
        export: Arc::new(export),
        op_of_kernel: recs.op_of_kernel,
        groups: recs.groups,
        claimed_by: None,
    }
}

fn export_of(
    name: &str,
    bytes: u64,
    trace: &KinetoTrace,
    process: &ProcessKey,
    kernels: model::nsys::KernelStore,
) -> LoadedExport {
    LoadedExport {
        name: name.to_string(),
        bytes,
        export: NsysExport {
            path: name.to_string(),
            schema_version: trace.schema_version.clone().map(|v| format!("kineto {v}")),
            kernels,
            hosts: (!process.host.is_empty())
                .then(|| process.host.to_string())
                .into_iter()
                .collect(),
            processes: vec![Process {
                pid: process.pid,
                name: trace.process_name.clone().unwrap_or_default(),
            }],
            ..NsysExport::default()
        },
    }
}

impl SessionTrace {
    /// Gives the trace's kernels to `owner` (a log's process): its export is re-hosted there.
    pub(crate) fn claim(&mut self, owner: ProcessKey) {
        let mut export = NsysExport {
            hosts: vec![owner.host.to_string()],
            ..self.export.export.clone()
        };
        if owner.host.is_empty() {
            export.hosts.clear();
        }
        self.export = Arc::new(LoadedExport {
            name: self.export.name.clone(),
            bytes: self.export.bytes,
            export,
        });
        self.claimed_by = Some(owner);
    }
}

/// The log process that is this trace's process, if one is: the only one with the trace's pid
/// and, where both say it, the same global rank (the rank of its largest communicator's init).
pub(crate) fn claimant<'a>(
    trace: &SessionTrace,
    logs: impl Iterator<Item = &'a LoadedLog>,
) -> Option<ProcessKey> {
    let pid = trace.process.pid;
    let want = trace.rank();
    let mut found: Vec<ProcessKey> = Vec::new();
    for log in logs {
        for p in log
            .parsed
            .ops
            .processes()
            .iter()
            .chain(log.parsed.processes.iter().map(|p| &p.process))
        {
            if p.pid != pid || found.contains(p) {
                continue;
            }
            let rank = log
                .parsed
                .inits
                .iter()
                .filter(|i| &i.process == p)
                .max_by_key(|i| i.nranks)
                .map(|i| i.rank);
            if want.is_none() || rank.is_none() || want == rank {
                found.push(p.clone());
            }
        }
    }
    (found.len() == 1).then(|| found.remove(0))
}

/// The alignment of a process whose operations and kernels are exactly one unclaimed trace's
/// (its print: that trace's log and export alone): each kernel matched to the operation the
/// trace gives it. `kernel_rows` are the process's kernels' rows in the export, in the order the
/// alignment indexes them.
pub(crate) fn known_alignment(
    trace: &SessionTrace,
    print: &InputPrint,
    log_index: u32,
    export_index: u32,
    kernel_rows: impl Iterator<Item = u32>,
) -> Option<ProcessAlignment> {
    if trace.claimed_by.is_some()
        || print.ops.iter().any(|&(l, _)| l != log_index)
        || print.kernels.iter().any(|&(x, _)| x != export_index)
    {
        return None;
    }
    let per_kernel: Vec<Option<align::matches::OwnedMatch>> = kernel_rows
        .map(|row| {
            let op = trace.op_of_kernel.get(row as usize).copied().flatten()?;
            Some((vec![op as usize], Vec::new(), 1.0))
        })
        .collect();
    let matched = per_kernel.iter().flatten().count();
    let orphan_kernels = per_kernel
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_none())
        .map(|(k, _)| k)
        .collect();
    let report = align::AnomalyReport {
        nccl_kernels: per_kernel.len(),
        log_ops: trace.log.parsed.ops.len(),
        matched,
        orphan_kernels,
        ..align::AnomalyReport::default()
    };
    Some(ProcessAlignment {
        per_kernel: KernelMatches::from_options(per_kernel),
        report,
    })
}

/// A trace's report facts: what it held and how its kernels got their meaning.
pub(crate) fn facts(t: &SessionTrace) -> Vec<(String, String)> {
    let c = &t.trace.counts;
    let mut facts = vec![
        ("NCCL kernels".to_string(), c.nccl_kernels.to_string()),
        (
            "NCCL operations".to_string(),
            t.log.parsed.ops.len().to_string(),
        ),
        ("events".to_string(), c.events.to_string()),
        ("GPU kernels".to_string(), c.kernels.to_string()),
        ("process groups".to_string(), t.groups.len().to_string()),
        (
            "profiler steps".to_string(),
            t.trace.steps.len().to_string(),
        ),
        ("lines".to_string(), t.trace.lines.to_string()),
    ];
    if let Some(r) = t.rank() {
        facts.push(("rank".to_string(), r.to_string()));
    }
    if let Some(w) = t.trace.distributed.as_ref().and_then(|d| d.world_size) {
        facts.push(("world size".to_string(), w.to_string()));
    }
    if let Some(owner) = &t.claimed_by {
        facts.push((
            "kernels joined to the log of".to_string(),
            format!("{}:{}", owner.host, owner.pid),
        ));
    }
    facts
}

/// The file list's report of a trace.
pub(crate) fn report(t: &SessionTrace) -> crate::report::FileReport {
    let version = t
        .trace
        .distributed
        .as_ref()
        .and_then(|d| d.nccl_version.clone());
    crate::report::FileReport {
        name: t.name.clone(),
        kind: crate::sniff::InputKind::Kineto,
        bytes: t.bytes,
        version,
        facts: facts(t),
        diagnostics: t.trace.diagnostics.clone(),
        // A file with no event read is no trace (its diagnostics say why); one without NCCL
        // kernels is read and says so in a diagnostic.
        error: (t.trace.counts.events == 0).then(|| "no trace event could be read".to_string()),
        digest: None,
    }
}

/// One `ProfilerStep#N` range of one rank, in the synchronised time of the analysis' clocks
/// (the reference rank's: see [`crate::Analysis::clocks`]); for the step analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfilerStep {
    pub rank: u32,
    pub step: u64,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// Every trace's profiler steps, by rank then step; a trace whose process has no rank in the
/// analysis is left out.
pub(crate) fn profiler_steps(
    session: &crate::session::Session,
    processes: &[crate::processes::ProcessSummary],
    clocks: &enrich::ClockSync,
) -> Vec<ProfilerStep> {
    let mut out = Vec::new();
    for t in session.traces() {
        let Some(p) = processes.iter().find(|p| &p.process == t.owner()) else {
            continue;
        };
        let rank = p.global_rank;
        out.extend(t.trace.steps.iter().map(|s| ProfilerStep {
            rank,
            step: s.step,
            start_ns: clocks.to_sync(rank, s.start_ns),
            end_ns: clocks.to_sync(rank, s.end_ns),
        }));
    }
    out.sort_by_key(|s| (s.rank, s.step, s.start_ns));
    out
}

/// The most profiler steps one trace holds (the run's iterations seen), if any trace has any.
pub(crate) fn steps_seen(session: &crate::session::Session) -> Option<u32> {
    session
        .traces()
        .iter()
        .map(|t| t.trace.steps.len() as u32)
        .max()
        .filter(|&n| n > 0)
}

/// A process whose alignment a profiler trace gives.
pub(crate) enum Traced<'s> {
    /// The trace's own process (no log claimed it): its log's and export's places.
    Own(&'s SessionTrace, u32, u32),
    /// A log's process holding a trace's kernels that carry `Seq`: the export's place.
    Claimed(&'s SessionTrace, u32),
}

impl Traced<'_> {
    /// The process's alignment as the trace gives it, or `None` (then it is aligned): `rows`
    /// are its kernels' export rows in alignment order, `log_ops` its operations.
    pub(crate) fn alignment(
        &self,
        print: &InputPrint,
        rows: &[u32],
        log_ops: &crate::process_rows::ProcessOps,
    ) -> Option<ProcessAlignment> {
        match *self {
            Traced::Own(t, log, export) => {
                known_alignment(t, print, log, export, rows.iter().copied())
            }
            Traced::Claimed(t, export) => seq_alignment(t, print, export, rows, log_ops),
        }
    }
}

/// The alignment of a log's process with a claimed trace's kernels by communicator and
/// sequence: PyTorch's `Seq` of a collective counts its process group's calls as NCCL's opCount
/// counts the communicator's, from another start. Each group is the log communicator of its
/// size on which the group's `Seq`s, less one offset (up to 8: calls before the trace's
/// communicator was made), land on lines of the same operation and count, for every kernel of
/// the group. `None` when a kernel has no `Seq`, is point-to-point (a fused group of lines is
/// the aligner's to pair) or finds no line: then the aligner joins them all.
fn seq_alignment(
    t: &SessionTrace,
    print: &InputPrint,
    export: u32,
    rows: &[u32],
    log_ops: &crate::process_rows::ProcessOps,
) -> Option<ProcessAlignment> {
    use std::collections::HashMap;
    if print.kernels.iter().any(|&(x, _)| x != export) {
        return None;
    }
    // The log's lines by (communicator, opCount), first copies; and its communicators' sizes.
    // The log's lines by (communicator, opCount): the first, then its later copies (a line
    // printed twice); and the communicators' sizes.
    let mut lines: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
    let mut sizes: std::collections::BTreeMap<u64, u32> = std::collections::BTreeMap::new();
    for i in 0..log_ops.len() {
        let (Some(site), Some(call)) = (log_ops.site(i), log_ops.call(i)) else {
            continue;
        };
        lines.entry((site.comm, call.op_count)).or_default().push(i);
        sizes.insert(site.comm, site.nranks);
    }
    // The trace's operation of each kernel, by its group.
    let ops = &t.log.parsed.ops;
    let mut by_group: HashMap<u64, Vec<(usize, model::log::LogOp)>> = HashMap::new();
    for (k, &row) in rows.iter().enumerate() {
        let op = ops.get(t.op_of_kernel.get(row as usize).copied().flatten()? as usize)?;
        let g = t.groups.iter().find(|g| g.comm == op.comm)?;
        if !g.by_seq || op.op.is_p2p() || op.op == model::OpType::AllToAll {
            return None;
        }
        by_group.entry(op.comm).or_default().push((k, op));
    }
    let mut per_kernel: Vec<Option<align::matches::OwnedMatch>> = vec![None; rows.len()];
    let mut used = vec![false; log_ops.len()];
    for (group, kernels) in &by_group {
        let size = t.groups.iter().find(|g| g.comm == *group).map(|g| g.size)?;
        let candidates = sizes.iter().filter(|(_, &n)| n == size).map(|(&c, _)| c);
        let fits = |comm: u64, d: u64| -> Option<Vec<&Vec<usize>>> {
            kernels
                .iter()
                .map(|(_, op)| {
                    let copies = lines.get(&(comm, op.op_count.checked_sub(d)?))?;
                    let i = *copies.first()?;
                    let (site, call) = (log_ops.site(i)?, log_ops.call(i)?);
                    let same = site.op == op.op && (op.count == 0 || call.count == op.count);
                    same.then_some(copies)
                })
                .collect()
        };
        // The communicator (and its first offset) every kernel fits; two that fit: ambiguous.
        let mut fitting = candidates.filter_map(|c| (0..=8).find_map(|d| fits(c, d)));
        let hit = fitting.next()?;
        if fitting.next().is_some() {
            return None;
        }
        for ((k, _), copies) in kernels.iter().zip(hit) {
            for &i in copies {
                if std::mem::replace(&mut used[i], true) {
                    return None;
                }
            }
            per_kernel[*k] = Some((vec![copies[0]], copies[1..].to_vec(), 1.0));
        }
    }
    let matched = per_kernel.iter().flatten().count();
    let report = align::AnomalyReport {
        nccl_kernels: rows.len(),
        log_ops: log_ops.len(),
        matched,
        orphan_log_ops: (0..used.len()).filter(|&i| !used[i]).collect(),
        ..align::AnomalyReport::default()
    };
    Some(ProcessAlignment {
        per_kernel: KernelMatches::from_options(per_kernel),
        report,
    })
}
