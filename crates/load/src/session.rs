//! Everything loaded so far, and the per-file reports.

use crate::digest::records_digest;
use crate::kineto::{LoadedTrace, SessionTrace};
use crate::report::FileReport;
use crate::sniff::InputKind;
use ingest_nccl::{LogStream, ParsedLog};
use ingest_nsys::ReadOptions;
use model::log::ProcessKey;
use model::nsys::NsysExport;
use model::Diagnostic;
use sqlsource::SqlSource;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A parsed log and the name it was loaded under.
pub struct LoadedLog {
    pub name: String,
    pub bytes: u64,
    pub parsed: ParsedLog,
}

/// A read export and the name it was loaded under.
pub struct LoadedExport {
    pub name: String,
    pub bytes: u64,
    pub export: NsysExport,
    /// Its compute (non-NCCL) kernels, compactly, when [`Session::read_compute`] asked for them.
    pub compute: Option<model::compute::ComputeKernels>,
}

/// Reads an export through `db` (which the caller may close right after), for
/// [`Session::add_read_export`]; a failure is the message the file's report gives.
pub fn read_export(
    db: &dyn SqlSource,
    name: &str,
    options: &ReadOptions,
) -> Result<NsysExport, String> {
    ingest_nsys::read_export(db, name, options).map_err(|d| d.message)
}

/// Every input loaded so far.
#[derive(Default)]
pub struct Session {
    /// Shared with the analyses, which refer to their rows ([`crate::ProcessOps`]).
    logs: Vec<Arc<LoadedLog>>,
    exports: Vec<Arc<LoadedExport>>,
    next_file: u32,
    /// The processes of each kept log and export, in order, computed once: every new file is
    /// checked against every earlier one ([`claimed_twice`]), and walking the earlier files'
    /// records for it made loading quadratic in the number of files.
    log_processes: Vec<BTreeSet<ProcessKey>>,
    export_processes: Vec<BTreeSet<ProcessKey>>,
    /// Fill [`FileReport::digest`] (costs a pass over every record; for engine comparisons).
    pub digests: bool,
    /// What exports are read for, e.g. the NVTX range names that mark an iteration.
    pub read_options: ReadOptions,
    /// Stage files ([`Session::add_stage_file`], module `stage_files`).
    pub(crate) stage_files: Vec<Arc<crate::stage_files::LoadedStageFile>>,
    /// Also read each export's other (compute) kernels, compactly ([`model::compute`]): the
    /// step analysis's breakdown and baselines need them; off by default (a second pass over
    /// the kernel table).
    pub read_compute: bool,
    /// PyTorch profiler traces, in loading order: each adds an export of its kernels and, unless
    /// a log claims its process, a log of its operations ([`crate::kineto`]).
    traces: Vec<SessionTrace>,
    /// What each kept log's and export's processes say about themselves ([`identity`]),
    /// computed once per file, and the pairing of log and export processes made from all of
    /// them, made again whenever a file is added.
    log_features: Vec<Vec<identity::LogProcess>>,
    export_features: Vec<Vec<identity::ExportProcess>>,
    /// Made when first asked for after a file was added (a page adding a thousand files pairs
    /// once, at the analysis).
    identity: std::sync::OnceLock<identity::Identity>,
}

/// Streams one log in, chunk by chunk, plain or gzip-compressed ([`ingest_nccl::LogStream`]:
/// gzip is inflated as it is fed, so neither the compressed nor the decompressed file is ever
/// held whole).
pub struct LogLoader {
    name: String,
    stream: LogStream,
}

impl LogLoader {
    pub fn new(name: &str, file_index: u32) -> Self {
        LogLoader {
            name: name.to_string(),
            stream: LogStream::new(name, file_index),
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        self.stream.feed(chunk);
    }

    /// Bytes the loader holds between feeds besides the parser's records and state (inflated
    /// text waiting for the parser, a cut gzip header, a cut line): bounded by about a MiB,
    /// whatever the file's size ([`LogStream::buffered_bytes`]).
    pub fn buffered_bytes(&self) -> usize {
        self.stream.buffered_bytes()
    }

    /// Ends the input; `bytes` is the file's size as the user sees it.
    pub fn finish(self, bytes: u64) -> LoadedLog {
        self.finish_sniffed(bytes).0
    }

    /// [`LogLoader::finish`], and whether some line of the file is NCCL output by the test
    /// [`crate::sniff`] applies to a file's head. A file that sniffed as [`InputKind::Text`]
    /// (text without an NCCL line in its head) is a log only if so; otherwise it is refused
    /// like any other unknown file.
    pub fn finish_sniffed(self, bytes: u64) -> (LoadedLog, bool) {
        let (parsed, nccl) = self.stream.finish_sniffed();
        let log = LoadedLog {
            name: self.name,
            bytes,
            parsed,
        };
        (log, nccl)
    }
}

impl Session {
    /// The index the next input file gets (records point back to their file by it).
    pub fn next_file_index(&self) -> u32 {
        self.next_file
    }

    /// Counts a file that is neither a log nor an export (a stage file) in the file indices.
    pub(crate) fn next_file_index_bump(&mut self) {
        self.next_file += 1;
    }

    pub fn logs(&self) -> &[Arc<LoadedLog>] {
        &self.logs
    }

    pub fn exports(&self) -> &[Arc<LoadedExport>] {
        &self.exports
    }

    /// Keeps a parsed log and reports on it.
    pub fn add_log(&mut self, log: LoadedLog) -> FileReport {
        self.next_file += 1;
        let mut report = log_report(&log);
        if self.digests {
            report.digest = Some(log_digest(&log.parsed));
        }
        let mine: BTreeSet<ProcessKey> = log_processes(&log.parsed);
        let earlier = self.logs.iter().map(|l| l.name.as_str());
        report.diagnostics.extend(claimed_twice(
            &log.name,
            &mine,
            earlier.zip(&self.log_processes),
            "log operations",
        ));
        self.log_features.push(identity::log_processes(&log.parsed));
        self.logs.push(Arc::new(log));
        self.log_processes.push(mine);
        self.claim_traces();
        self.identity = std::sync::OnceLock::new();
        report
    }

    /// The PyTorch profiler traces loaded, in order.
    pub fn traces(&self) -> &[SessionTrace] {
        &self.traces
    }

    /// Keeps a read PyTorch profiler trace and reports on it: its kernels join the exports, and
    /// its operations the logs unless a log holds the same process's (then the log's lines are
    /// the process's, and the aligner joins them to the trace's kernels).
    pub fn add_trace(&mut self, loaded: LoadedTrace) -> FileReport {
        let index = self.next_file;
        self.next_file += 1;
        // A trace names no host: its process is keyed by its pid alone, and one of a pid
        // another trace has (two hosts may reuse a pid) by its file's name too.
        let mut key = ProcessKey {
            host: "".into(),
            pid: loaded.trace.cpu_pid.unwrap_or(0),
        };
        if self.traces.iter().any(|t| t.process == key) {
            key.host = loaded.name.as_str().into();
        }
        let mut t = crate::kineto::session_trace(loaded, index, key);
        let real = self.real_logs();
        if let Some(owner) = crate::kineto::claimant(&t, real.iter().map(|l| &**l)) {
            t.claim(owner);
        }
        let mut report = crate::kineto::report(&t);
        if self.digests {
            report.digest = Some(records_digest(&(
                &t.log.parsed.ops,
                &t.log.parsed.inits,
                &t.export.export.kernels,
                &t.trace,
                &t.groups,
            )));
        }
        if !t.export.export.kernels.is_empty() {
            if t.claimed_by.is_none() {
                self.logs.push(Arc::clone(&t.log));
                self.log_processes.push(log_processes(&t.log.parsed));
            }
            let mine = export_processes(&t.export.export);
            let earlier = self.exports.iter().map(|e| e.name.as_str());
            let twice = claimed_twice(
                &t.name,
                &mine,
                earlier.zip(&self.export_processes),
                "NCCL kernels",
            );
            report.diagnostics.extend(twice);
            self.exports.push(Arc::clone(&t.export));
            self.export_processes.push(mine);
        }
        self.traces.push(t);
        report
    }

    /// The logs that are files of their own (not a trace's operations).
    fn real_logs(&self) -> Vec<Arc<LoadedLog>> {
        self.logs
            .iter()
            .filter(|l| !self.traces.iter().any(|t| Arc::ptr_eq(&t.log, l)))
            .cloned()
            .collect()
    }

    /// Gives each trace whose process a log now holds to that log's process: the trace's
    /// operations leave the logs, its kernels move to the log's host.
    fn claim_traces(&mut self) {
        let real = self.real_logs();
        for i in 0..self.traces.len() {
            let t = &self.traces[i];
            if t.claimed_by.is_some() || t.export.export.kernels.is_empty() {
                continue;
            }
            let Some(owner) = crate::kineto::claimant(t, real.iter().map(|l| &**l)) else {
                continue;
            };
            if let Some(at) = self.logs.iter().position(|l| Arc::ptr_eq(l, &t.log)) {
                self.logs.remove(at);
                self.log_processes.remove(at);
            }
            let old = Arc::clone(&t.export);
            self.traces[i].claim(owner);
            if let Some(at) = self.exports.iter().position(|e| Arc::ptr_eq(e, &old)) {
                self.exports[at] = Arc::clone(&self.traces[i].export);
                self.export_processes[at] = export_processes(&self.exports[at].export);
            }
        }
    }

    /// Keeps a log parsed ahead of its turn (on another worker, under any file index), as
    /// [`Session::add_log`] does: renumbered to the index the session gives it now, it equals
    /// the log parsed here in the first place ([`ParsedLog::set_file_index`]). Logs parsed
    /// ahead must be added in the order of the request, like the files loaded in place.
    pub fn add_log_parsed_ahead(&mut self, mut log: LoadedLog) -> FileReport {
        log.parsed.set_file_index(self.next_file);
        self.add_log(log)
    }

    /// Reads an export through `db` (which the caller may close right after) and reports on it.
    pub fn add_export(&mut self, db: &dyn SqlSource, name: &str, bytes: u64) -> FileReport {
        let read = read_export(db, name, &self.read_options);
        let kept = read.is_ok();
        let mut report = self.add_read_export(name, bytes, read);
        if self.read_compute && kept {
            if let Some(loaded) = self.exports.last_mut().and_then(Arc::get_mut) {
                crate::stage_files::read_compute(db, loaded, &mut report);
            }
        }
        report
    }

    /// [`Session::add_read_export`], and the export's compute kernels read elsewhere too
    /// ([`crate::stage_files::read_compute_kernels`]), kept as [`Session::add_export`] keeps
    /// them with [`Session::read_compute`] set: the page's workers read both from the one
    /// opened database.
    pub fn add_read_export_with_compute(
        &mut self,
        name: &str,
        bytes: u64,
        read: Result<NsysExport, String>,
        compute: Option<crate::stage_files::ComputeRead>,
    ) -> FileReport {
        let kept = read.is_ok();
        let mut report = self.add_read_export(name, bytes, read);
        if let (true, Some(compute)) = (kept, compute) {
            if let Some(loaded) = self.exports.last_mut().and_then(Arc::get_mut) {
                crate::stage_files::keep_compute(compute, loaded, &mut report);
            }
        }
        report
    }

    /// Keeps the export `name` of `bytes` read elsewhere ([`read_export`], e.g. on another
    /// worker, with this session's [`Session::read_options`]), or the message of its failure,
    /// and reports on it exactly as [`Session::add_export`] would have: an export has no file
    /// index to renumber. Exports read elsewhere must be added in the order of the request,
    /// like files loaded in place.
    pub fn add_read_export(
        &mut self,
        name: &str,
        bytes: u64,
        read: Result<NsysExport, String>,
    ) -> FileReport {
        self.next_file += 1;
        let export = match read {
            Ok(export) => export,
            Err(message) => {
                return FileReport::failed(name, InputKind::NsysSqlite, bytes, message);
            }
        };
        let loaded = LoadedExport {
            name: name.to_string(),
            bytes,
            export,
            compute: None,
        };
        let mut report = export_report(&loaded);
        if self.digests {
            report.digest = Some(export_digest(&loaded.export));
        }
        let mine = export_processes(&loaded.export);
        let earlier = self.exports.iter().map(|e| e.name.as_str());
        let twice = claimed_twice(
            &loaded.name,
            &mine,
            earlier.zip(&self.export_processes),
            "NCCL kernels",
        );
        report.diagnostics.extend(twice);
        self.export_features.push(identity::export_processes(
            self.exports.len(),
            &loaded.export,
        ));
        self.exports.push(Arc::new(loaded));
        self.export_processes.push(mine);
        self.identity = std::sync::OnceLock::new();
        report
    }

    /// Which log process each export process is ([`identity::pair`]).
    pub fn identity(&self) -> &identity::Identity {
        self.identity.get_or_init(|| self.pair_processes())
    }

    /// The process key the analysis files export `export`'s process `pid` under: its log
    /// process's when the two were paired, else the export's host and the pid.
    pub fn export_key(&self, export: usize, pid: u32) -> ProcessKey {
        let host = self
            .exports
            .get(export)
            .and_then(|e| e.export.hosts.first())
            .map_or("", String::as_str);
        self.identity().key(export, pid, host)
    }

    /// Pairs the log and export processes loaded so far (a process in several logs counts
    /// once, its clues merged).
    fn pair_processes(&self) -> identity::Identity {
        let mut logs: BTreeMap<&ProcessKey, identity::LogProcess> = BTreeMap::new();
        for p in self.log_features.iter().flatten() {
            match logs.get_mut(&p.process) {
                Some(q) => q.merge(p),
                None => {
                    logs.insert(&p.process, p.clone());
                }
            }
        }
        let logs: Vec<identity::LogProcess> = logs.into_values().collect();
        let exports: Vec<identity::ExportProcess> =
            self.export_features.iter().flatten().cloned().collect();
        identity::pair(&logs, &exports)
    }
}

/// The processes (host, pid) an export holds kernels of; its first host names them all.
fn export_processes(e: &NsysExport) -> BTreeSet<ProcessKey> {
    let host = e.hosts.first().cloned().unwrap_or_default();
    let pids: BTreeSet<u32> = e.kernels.iter().map(|k| k.pid).collect();
    pids.into_iter()
        .map(|pid| ProcessKey {
            host: host.as_str().into(),
            pid,
        })
        .collect()
}

fn log_processes(p: &ParsedLog) -> BTreeSet<ProcessKey> {
    p.ops.processes().iter().cloned().collect()
}

/// One warning per process of `mine` that an earlier file of the same kind already claimed: the
/// same process in two logs (a combined log beside the per-process ones) or two exports (a
/// per-node and a per-rank report) would be counted twice.
fn claimed_twice<'a>(
    name: &str,
    mine: &BTreeSet<ProcessKey>,
    earlier: impl Iterator<Item = (&'a str, &'a BTreeSet<ProcessKey>)>,
    what: &str,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (other, theirs) in earlier {
        for p in mine.intersection(theirs) {
            out.push(Diagnostic::warning(
                name,
                0,
                format!(
                    "process {}:{} is also in {other}: its {what} would count twice; load one of the two",
                    p.host, p.pid
                ),
            ));
        }
    }
    out
}

fn log_report(log: &LoadedLog) -> FileReport {
    let p = &log.parsed;
    let processes = p.ops.processes();
    let comms: BTreeSet<_> = (0..p.ops.len())
        .filter_map(|i| Some((p.ops.process_of(i)?, p.ops.comm(i)?)))
        .collect();
    let by_type = p.ops_by_type();
    let mut facts = vec![
        ("NCCL operations".to_string(), p.ops.len().to_string()),
        ("processes".to_string(), processes.len().to_string()),
        (
            "communicators".to_string(),
            comms.len().max(p.inits.len()).to_string(),
        ),
        ("init lines".to_string(), p.inits.len().to_string()),
    ];
    facts.extend(
        by_type
            .iter()
            .map(|(op, n)| (op.name().to_string(), n.to_string())),
    );
    facts.push(("lines".to_string(), p.counters.total_lines.to_string()));
    facts.push((
        "skipped lines".to_string(),
        p.counters.skipped_lines.to_string(),
    ));
    facts.push(("NCCL warnings".to_string(), p.warnings.len().to_string()));
    let versions: BTreeSet<&str> = p
        .processes
        .iter()
        .filter_map(|pr| pr.nccl_version.as_deref())
        .chain(p.nccl_version.as_deref())
        .collect();
    FileReport {
        name: log.name.clone(),
        kind: InputKind::NcclLog,
        bytes: log.bytes,
        version: (!versions.is_empty())
            .then(|| versions.into_iter().collect::<Vec<_>>().join(", ")),
        facts,
        diagnostics: p.diagnostics.clone(),
        digest: None,
        error: (p.ops.is_empty() && p.inits.is_empty() && p.counters.nccl_lines == 0)
            .then(|| "no NCCL log lines found".to_string()),
    }
}

fn export_report(loaded: &LoadedExport) -> FileReport {
    let e = &loaded.export;
    let facts = vec![
        ("NCCL kernels".to_string(), e.kernels.len().to_string()),
        (
            "other kernels".to_string(),
            e.other_kernels
                .iter()
                .map(|o| o.count)
                .sum::<u64>()
                .to_string(),
        ),
        ("hosts".to_string(), e.hosts.len().to_string()),
        ("GPUs".to_string(), e.gpus.len().to_string()),
        ("processes".to_string(), e.processes.len().to_string()),
        ("NVTX ranges".to_string(), e.nvtx.len().to_string()),
    ];
    FileReport {
        name: loaded.name.clone(),
        kind: InputKind::NsysSqlite,
        bytes: loaded.bytes,
        version: e.schema_version.clone(),
        facts,
        diagnostics: e.diagnostics.clone(),
        digest: None,
        error: None,
    }
}

/// The digest of what was read from a log, leaving out the names the caller gave the file
/// (the path, and the paths inside diagnostics, whose count is in the counters).
fn log_digest(p: &ParsedLog) -> String {
    // Destructured without `..`: a new field must be placed here on purpose.
    let ParsedLog {
        path: _,
        file_index,
        ops,
        inits,
        init_starts,
        processes,
        channels,
        init_timings,
        destroys,
        warnings,
        config,
        failed_calls,
        framework,
        diagnostics: _,
        counters,
        nccl_version,
    } = p;
    records_digest(&(
        file_index,
        ops,
        inits,
        init_starts,
        processes,
        channels,
        init_timings,
        destroys,
        warnings,
        counters,
        nccl_version,
        (config, failed_calls, framework),
    ))
}

/// The digest of what was read from an export, leaving out the caller's names for the file.
fn export_digest(e: &NsysExport) -> String {
    let NsysExport {
        path: _,
        schema_version,
        product_version,
        kernels,
        other_kernels,
        processes,
        hosts,
        gpus,
        cuda_devices,
        session_start,
        nvtx,
        iterations,
        nccl_calls,
        payload_schemas,
        diagnostics,
    } = e;
    let messages: Vec<(&str, u64)> = diagnostics
        .iter()
        .map(|d| (d.message.as_str(), d.line))
        .collect();
    records_digest(&(
        (
            schema_version,
            product_version,
            kernels,
            other_kernels,
            processes,
            hosts,
            gpus,
        ),
        (
            cuda_devices,
            session_start,
            nvtx,
            iterations,
            nccl_calls,
            payload_schemas,
            messages,
        ),
    ))
}
