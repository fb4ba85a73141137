//! Runs the aligner per process: a process's log operations (from any log, a combined log
//! included) against its NCCL kernels (from any export), keyed by host and pid. Processes seen
//! on one side only are listed, never guessed.

use crate::process_rows::{ProcessKernels, ProcessOps};
use crate::session::Session;
use align::{
    align_all_reusing_with, AlignConfig, Aligned, KernelMatch, ProcessAlignment, ProcessInput,
    Redone, Reuse, Runner,
};
use ingest_nsys::KernelNameCache;
use model::log::{LogOp, ProcessKey};
use model::nsys::{Kernel, KernelName};
use model::OpType;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The alignment of one process. Its operations and kernels are rows of the session's loaded
/// files ([`ProcessOps`], [`ProcessKernels`]), not copies: an analysis refers to every
/// operation of the run, so what it holds per operation is the analysis' size.
pub struct ProcessMatch {
    pub process: ProcessKey,
    /// The process's log operations in log order (the alignment's log indices).
    pub log_ops: ProcessOps,
    /// The process's NCCL kernels in start order (the alignment's kernel indices).
    pub kernels: ProcessKernels,
    pub alignment: ProcessAlignment,
}

impl ProcessMatch {
    /// Kernels that carry a log operation.
    pub fn matched_kernels(&self) -> u64 {
        self.matched().count() as u64
    }

    /// Every kernel that carries a log operation, with its match (kernel order).
    pub fn matched(&self) -> impl Iterator<Item = (Kernel, KernelMatch<'_>)> + '_ {
        self.kernels
            .iter()
            .zip(self.alignment.per_kernel.iter())
            .filter_map(|(k, m)| Some((k, m?)))
    }

    /// Log lines that no kernel accounts for (neither matched, fused, nor a duplicate of a match).
    pub fn unmatched_log_ops(&self) -> u64 {
        let accounted: usize = self
            .alignment
            .per_kernel
            .iter()
            .flatten()
            .map(|m| m.log_ops.len() + m.duplicates.len())
            .sum();
        (self.log_ops.len() - accounted.min(self.log_ops.len())) as u64
    }
}

/// Every process's alignment, and the processes found on one side only.
#[derive(Default)]
pub struct Alignments {
    pub processes: Vec<ProcessMatch>,
    /// Processes with log operations but no kernels in any export.
    pub log_only: Vec<ProcessKey>,
    /// Processes with NCCL kernels but no log operations.
    pub kernels_only: Vec<ProcessKey>,
    /// What the alignments were made from, for a later analysis of the grown session.
    pub(crate) kept: Kept,
}

impl Alignments {
    /// The alignment of one process, if it was aligned.
    pub fn get(&self, process: &ProcessKey) -> Option<&ProcessMatch> {
        self.processes.iter().find(|p| &p.process == process)
    }
}

/// What a later [`align_session_reusing`] checks and reuses.
#[derive(Default)]
pub(crate) struct Kept {
    /// The session's files when aligned (name, size; logs then exports): a session whose files
    /// start with these is the same session with files added (a session only grows).
    pub files: SessionFiles,
    /// Per process (indexed like [`Alignments::processes`]).
    pub per_process: Vec<KeptProcess>,
}

pub(crate) struct KeptProcess {
    print: InputPrint,
    names: Vec<Option<KernelName>>,
    reuse: Reuse,
}

/// Names and sizes of a session's logs and exports, in loading order.
#[derive(Default, Clone, PartialEq, Eq, Debug)]
pub(crate) struct SessionFiles {
    logs: Vec<(String, u64)>,
    exports: Vec<(String, u64)>,
}

impl SessionFiles {
    pub fn of(session: &Session) -> Self {
        SessionFiles {
            logs: session
                .logs()
                .iter()
                .map(|l| (l.name.clone(), l.bytes))
                .collect(),
            exports: session
                .exports()
                .iter()
                .map(|e| (e.name.clone(), e.bytes))
                .collect(),
        }
    }

    /// Whether `now` is this session with files added (or unchanged).
    pub fn grew_into(&self, now: &SessionFiles) -> bool {
        now.logs.starts_with(&self.logs) && now.exports.starts_with(&self.exports)
    }
}

/// Where a process's inputs come from: (log index, operations) and (export index, kernels), in
/// session order. Loaded files never change and a process's records are those files' records
/// of it in that order, so within one growing session equal prints mean equal inputs: an exact
/// check that reads no record.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
struct InputPrint {
    ops: Vec<(u32, u32)>,
    kernels: Vec<(u32, u32)>,
}

/// Counts one more record from file `file` (records come file by file).
fn count_from(sources: &mut Vec<(u32, u32)>, file: u32) {
    match sources.last_mut() {
        Some((f, n)) if *f == file => *n += 1,
        _ => sources.push((file, 1)),
    }
}

/// One process's records gathered from the session for the aligner, with where each one is.
#[derive(Default)]
struct Gathered {
    log_ops: Vec<LogOp>,
    /// (log, row) of each of `log_ops`.
    op_at: Vec<(u32, u32)>,
    /// Each kernel with its (export, row).
    kernels: Vec<(Kernel, u32, u32)>,
}

/// Aligns every process present in both a log and an export.
pub fn align_session(session: &Session, cfg: &AlignConfig) -> Alignments {
    align::runner::now(align_session_reusing(session, cfg, None, &align::Threads)).0
}

/// [`align_session`], keeping from `previous` (an alignment of this session before files were
/// added) every process whose inputs did not change; see [`align::align_all_reusing`] for what
/// the consensus makes re-run. Also says, per process aligned, what was recomputed. `runner`
/// runs the per-process alignments (threads natively, the page's workers).
pub(crate) async fn align_session_reusing(
    session: &Session,
    cfg: &AlignConfig,
    previous: Option<Alignments>,
    runner: &dyn Runner,
) -> (Alignments, Vec<Redone>) {
    let files = SessionFiles::of(session);
    // Where each process's records are, counted without copying one.
    let mut op_from: BTreeMap<&ProcessKey, Vec<(u32, u32)>> = BTreeMap::new();
    for (i, log) in session.logs().iter().enumerate() {
        let ops = &log.parsed.ops;
        for process in (0..ops.len()).filter_map(|j| ops.process_of(j)) {
            count_from(op_from.entry(process).or_default(), i as u32);
        }
    }
    let mut kernel_from: BTreeMap<ProcessKey, Vec<(u32, u32)>> = BTreeMap::new();
    for (x, e) in session.exports().iter().enumerate() {
        // An export covers one node (or one rank): its first host names every process in it.
        let host = e.export.hosts.first().cloned().unwrap_or_default();
        let mut per_pid: BTreeMap<u32, u32> = BTreeMap::new();
        for k in &e.export.kernels {
            *per_pid.entry(k.pid).or_default() += 1;
        }
        for (pid, n) in per_pid {
            let key = ProcessKey {
                host: host.as_str().into(),
                pid,
            };
            kernel_from.entry(key).or_default().push((x as u32, n));
        }
    }
    adopt_hostless_kernels(&op_from, &mut kernel_from);
    let mut out = Alignments::default();
    let mut both: Vec<(ProcessKey, InputPrint)> = Vec::new();
    let keys: BTreeSet<ProcessKey> = op_from
        .keys()
        .map(|&k| k.clone())
        .chain(kernel_from.keys().cloned())
        .collect();
    for key in keys {
        match (op_from.remove(&key), kernel_from.remove(&key)) {
            (Some(ops), Some(kernels)) => both.push((key, InputPrint { ops, kernels })),
            (Some(_), None) => out.log_only.push(key),
            (None, Some(_)) => out.kernels_only.push(key),
            (None, None) => {}
        }
    }
    // The previous alignments of processes whose inputs are unchanged.
    let mut kept: BTreeMap<ProcessKey, (ProcessMatch, KeptProcess)> = BTreeMap::new();
    if let Some(prev) = previous.filter(|p| p.kept.files.grew_into(&files)) {
        for (pm, k) in prev.processes.into_iter().zip(prev.kept.per_process) {
            kept.insert(pm.process.clone(), (pm, k));
        }
    }
    let mut reused: Vec<Option<(ProcessMatch, KeptProcess)>> = both
        .iter()
        .map(|(key, print)| kept.remove(key).filter(|(_, k)| &k.print == print))
        .collect();
    // The records of the other processes, in one pass over the session: whole records for the
    // aligner, and where each one is for the analysis to keep.
    let mut gathered: Vec<Gathered> = both.iter().map(|_| Gathered::default()).collect();
    let mut want_ops: BTreeMap<&ProcessKey, usize> = BTreeMap::new();
    let mut want_kernels: HashMap<(u32, u32), usize> = HashMap::new();
    for (i, (key, print)) in both.iter().enumerate() {
        if reused[i].is_none() {
            want_ops.insert(key, i);
            for &(x, _) in &print.kernels {
                want_kernels.insert((x, key.pid), i);
            }
        }
    }
    if !want_ops.is_empty() {
        for (l, log) in session.logs().iter().enumerate() {
            let ops = &log.parsed.ops;
            for j in 0..ops.len() {
                let want = ops.process_of(j).and_then(|p| want_ops.get(p));
                if let (Some(&i), Some(op)) = (want, ops.get(j)) {
                    gathered[i].log_ops.push(op);
                    gathered[i].op_at.push((l as u32, j as u32));
                }
            }
        }
        for (x, e) in session.exports().iter().enumerate() {
            for (j, k) in e.export.kernels.iter().enumerate() {
                if let Some(&i) = want_kernels.get(&(x as u32, k.pid)) {
                    gathered[i].kernels.push((k, x as u32, j as u32));
                }
            }
        }
    }
    struct Prepared {
        process: ProcessKey,
        print: InputPrint,
        log_ops: Vec<LogOp>,
        kernels: Vec<Kernel>,
        op_rows: ProcessOps,
        kernel_rows: ProcessKernels,
        names: Vec<Option<KernelName>>,
        previous: Option<Aligned>,
    }
    let (logs, exports) = (session.logs(), session.exports());
    let mut name_cache = KernelNameCache::default();
    let mut prepared: Vec<Prepared> = both
        .into_iter()
        .zip(gathered)
        .zip(reused.iter_mut())
        .map(|(((process, print), g), reused)| match reused.take() {
            Some((pm, k)) => Prepared {
                process,
                print,
                log_ops: pm.log_ops.iter().collect(),
                kernels: pm.kernels.iter().collect(),
                op_rows: pm.log_ops,
                kernel_rows: pm.kernels,
                names: k.names,
                previous: Some(Aligned {
                    alignment: pm.alignment,
                    reuse: k.reuse,
                    redone: Redone::Kept,
                }),
            },
            None => {
                let Gathered {
                    log_ops,
                    op_at,
                    mut kernels,
                } = g;
                // Stable: kernels that start together keep their order in the session.
                kernels.sort_by_key(|(k, _, _)| (k.start_ns, k.correlation_id));
                let op_rows =
                    ProcessOps::from_rows(op_at.iter().map(|&(l, j)| (&logs[l as usize], j)));
                let kernel_rows = ProcessKernels::from_rows(
                    kernels.iter().map(|&(_, x, j)| (&exports[x as usize], j)),
                );
                let kernels: Vec<Kernel> = kernels.into_iter().map(|(k, _, _)| k).collect();
                let names = kernels.iter().map(|k| name_cache.decode(&k.name)).collect();
                Prepared {
                    process,
                    print,
                    log_ops,
                    kernels,
                    op_rows,
                    kernel_rows,
                    names,
                    previous: None,
                }
            }
        })
        .collect();
    // All processes at once: in parallel natively, and with the cross-rank consensus among
    // the processes of one export (an adopted hostless process keeps its export's clock).
    let previous: Vec<Option<Aligned>> = prepared.iter_mut().map(|p| p.previous.take()).collect();
    let inputs: Vec<ProcessInput<'_>> = prepared
        .iter()
        .map(|p| {
            // Kernel times of one export share its capture's clock: the consensus compares
            // those only. A process's clock is the first export holding its kernels.
            let x = p.print.kernels.first().map(|&(x, _)| x as usize);
            ProcessInput {
                log_ops: &p.log_ops,
                kernels: &p.kernels,
                names: &p.names,
                clock: x.map_or(u64::MAX, |x| x as u64),
                // The export's NVTX ranges: where NCCL's own are there, the exact join checks
                // the alignment.
                nvtx: x
                    .and_then(|x| session.exports().get(x))
                    .map_or(&[], |e| e.export.nvtx.as_slice()),
            }
        })
        .collect();
    let aligned = align_all_reusing_with(&inputs, cfg, previous, runner).await;
    drop(inputs);
    let mut redone = Vec::with_capacity(aligned.len());
    for (p, a) in prepared.into_iter().zip(aligned) {
        redone.push(a.redone);
        out.processes.push(ProcessMatch {
            process: p.process,
            log_ops: p.op_rows,
            kernels: p.kernel_rows,
            alignment: a.alignment,
        });
        out.kept.per_process.push(KeptProcess {
            print: p.print,
            names: p.names,
            reuse: a.reuse,
        });
    }
    out.kept.files = files;
    (out, redone)
}

/// An export without a hostname (older exports, or a table not written) keys its processes by
/// pid alone. Such a pid is given to the log process of the same pid when exactly one exists:
/// two hosts may reuse a pid, and then nothing is guessed.
fn adopt_hostless_kernels<V>(
    ops: &BTreeMap<&ProcessKey, Vec<(u32, u32)>>,
    kernels: &mut BTreeMap<ProcessKey, V>,
) {
    let hostless: Vec<ProcessKey> = kernels
        .keys()
        .filter(|k| k.host.is_empty())
        .cloned()
        .collect();
    for key in hostless {
        let mut candidates = ops
            .keys()
            .filter(|p| p.pid == key.pid && !kernels.contains_key(**p));
        if let (Some(owner), None) = (candidates.next(), candidates.next()) {
            let owner = (*owner).clone();
            if let Some(ks) = kernels.remove(&key) {
                kernels.insert(owner, ks);
            }
        }
    }
}

/// The operation of a kernel from the log lines matched to it (not empty): their shared op,
/// else SendRecv (grouped Send and Recv fused into one kernel). The exports name kernels by it.
pub fn kernel_op<O: std::borrow::Borrow<LogOp>>(ops: &[O]) -> OpType {
    let first = ops[0].borrow().op;
    if ops.iter().all(|o| o.borrow().op == first) {
        first
    } else {
        OpType::SendRecv
    }
}
