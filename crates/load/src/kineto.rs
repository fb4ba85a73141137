//! PyTorch profiler (Kineto) traces in a session (issue 33; docs/design/kineto.md).
//!
//! A trace's NCCL kernels carry their meaning, so a trace enters the session as what the rest
//! of ncclscope already reads: an export holding its kernels (its own clock domain, as an
//! Nsight export's) and a log holding one operation per kernel, made by
//! [`ingest_kineto::records`], with the pairing of the two known (the pipeline's alignment
//! then skips that process).
//!
//! When an NCCL log of the same process is in the session too (same pid and, where both say it,
//! the same global rank), the log's operations are the process's: the trace gives only its
//! kernels (as an export of the log's host), to be joined to the log's lines.

use crate::session::{LoadedExport, LoadedLog};
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

/// The trace's `record_function` ranges as NVTX ranges of its process (what the step
/// analysis and the timeline's range rows read of an export): the profiler's steps and the
/// user's stage ranges, in the trace's own clock like its kernels.
fn annotation_ranges(trace: &KinetoTrace, process: &ProcessKey) -> Vec<model::nsys::NvtxRange> {
    trace
        .annotations
        .iter()
        // The CPU thread's pid is the process's (kernels are filed under the device's).
        .filter(|a| trace.cpu_pid.is_none_or(|p| p == a.pid))
        .map(|a| model::nsys::NvtxRange {
            pid: process.pid,
            tid: a.tid,
            start_ns: a.start_ns,
            end_ns: Some(a.end_ns),
            text: a.name.to_string(),
            domain: None,
        })
        .collect()
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
            nvtx: annotation_ranges(trace, process),
            ..NsysExport::default()
        },
        // A trace's compute kernels are not read (the step analysis reads exports' only).
        compute: None,
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
            compute: None,
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
