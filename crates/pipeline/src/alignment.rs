//! Runs the aligner per process: a process's log operations (from any log, a combined log
//! included) against its NCCL kernels (from any export), an export's process taken as the log
//! process `identity` paired it with. Processes seen on one side only are listed, never
//! guessed.

use align::{
    align_all_reusing_with, AlignConfig, Aligned, KernelMatch, ProcessAlignment, ProcessInput,
    Redone, Reuse, Runner,
};
use ingest_nsys::KernelNameCache;
use load::{ProcessKernels, ProcessOps, Session};
use model::log::{LogOp, ProcessKey};
use model::nsys::{Kernel, KernelName, NvtxRange};
use model::OpType;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

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
    /// The first export holding its kernels (session index): its clock domain. Processes of
    /// one export share one clock.
    pub export: Option<usize>,
}

impl ProcessMatch {
    /// Kernels that carry a log operation.
    pub fn matched_kernels(&self) -> u64 {
        // Counted on the matches alone: [`ProcessMatch::matched`] builds every kernel whole.
        let n = self.kernels.len();
        self.alignment.per_kernel.iter().take(n).flatten().count() as u64
    }

    /// Every kernel that carries a log operation, with its match (kernel order).
    pub fn matched(&self) -> impl Iterator<Item = (Kernel, KernelMatch<'_>)> + '_ {
        self.kernels
            .iter()
            .zip(self.alignment.per_kernel.iter())
            .filter_map(|(k, m)| Some((k, m?)))
    }

    /// Every kernel that carries a log operation, as its index and GPU times, with its match
    /// (kernel order): what most analyses read of a kernel, without building it whole.
    pub fn matched_spans(&self) -> impl Iterator<Item = (KernelSpan, KernelMatch<'_>)> + '_ {
        self.alignment
            .per_kernel
            .iter()
            .enumerate()
            .filter_map(|(k, m)| {
                let span = KernelSpan {
                    index: k,
                    start_ns: self.kernels.start_ns(k)?,
                    end_ns: self.kernels.end_ns(k)?,
                };
                Some((span, m?))
            })
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

/// Where one of a process's kernels is in its kernels, and when it ran (GPU clock, ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSpan {
    pub index: usize,
    pub start_ns: i64,
    pub end_ns: i64,
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
pub(crate) struct InputPrint {
    pub(crate) ops: Vec<(u32, u32)>,
    pub(crate) kernels: Vec<(u32, u32)>,
}

/// Counts one more record from file `file` (records come file by file).
fn count_from(sources: &mut Vec<(u32, u32)>, file: u32) {
    match sources.last_mut() {
        Some((f, n)) if *f == file => *n += 1,
        _ => sources.push((file, 1)),
    }
}

/// One process's records as the aligner reads them: log operations, kernels, decoded names.
/// (log operations, kernels, decoded names, the export's NVTX ranges on the domain's base when
/// they had to be moved there).
type Whole = (
    Vec<LogOp>,
    Vec<Kernel>,
    Vec<Option<KernelName>>,
    Option<Vec<NvtxRange>>,
);

/// Where one of a process's kernels is, and what orders it.
struct KernelAt {
    start_ns: i64,
    correlation_id: u32,
    export: u32,
    row: u32,
}

/// One process to align: where its records are, and its earlier alignment if its inputs did not
/// change.
struct Prepared {
    process: ProcessKey,
    print: InputPrint,
    log_ops: ProcessOps,
    kernels: ProcessKernels,
    previous: Option<Aligned>,
    /// Its alignment when its records are one PyTorch profiler trace's, whose kernels say which
    /// operation they ran ([`crate::kineto::known_alignment`]): not aligned.
    known: Option<ProcessAlignment>,
}

impl Prepared {
    /// The first export holding the process's kernels.
    fn export(&self) -> Option<usize> {
        self.print.kernels.first().map(|&(x, _)| x as usize)
    }

    /// The process's clock domain and how far its kernel times are from the domain's base
    /// ([`ClockDomains`]), by its first export.
    fn clock(&self, domains: &ClockDomains) -> (u64, i64) {
        self.export()
            .and_then(|x| domains.of.get(x).copied())
            .unwrap_or((u64::MAX, 0))
    }
}

/// One process's records as the aligner reads them, its kernel times (and its export's NVTX
/// ranges, which the exact join compares with launches) moved by `shift` onto its clock
/// domain's base.
fn whole_records(
    p: &Prepared,
    shift: i64,
    exports: &[std::sync::Arc<load::LoadedExport>],
    name_cache: &mut KernelNameCache,
) -> Whole {
    let kernels: Vec<Kernel> = p
        .kernels
        .iter()
        .map(|mut k| {
            if shift != 0 {
                k.start_ns += shift;
                k.end_ns += shift;
                k.launch_ns = k.launch_ns.map(|t| t + shift);
            }
            k
        })
        .collect();
    let names = kernels.iter().map(|k| name_cache.decode(&k.name)).collect();
    let nvtx = (shift != 0).then(|| {
        p.export()
            .and_then(|x| exports.get(x))
            .map_or_else(Vec::new, |e| {
                e.export
                    .nvtx
                    .iter()
                    .map(|r| NvtxRange {
                        start_ns: r.start_ns + shift,
                        end_ns: r.end_ns.map(|t| t + shift),
                        ..r.clone()
                    })
                    .collect()
            })
    });
    (p.log_ops.iter().collect(), kernels, names, nvtx)
}

/// Which exports' kernel times share a clock, for the cross-rank consensus (which compares
/// kernel times of different processes): the exports of one host that say when their session
/// started, their times put on the first one's base (per-rank captures each count from their own
/// start, or in the node's system clock); any other export alone.
struct ClockDomains {
    /// Per export: (domain, time to add to its kernel times).
    of: Vec<(u64, i64)>,
}

impl ClockDomains {
    fn of(session: &Session) -> Self {
        let mut first: BTreeMap<String, (usize, i64)> = BTreeMap::new();
        let of = session
            .exports()
            .iter()
            .enumerate()
            .map(|(x, e)| {
                let utc = identity::ExportClock::of(&e.export).utc_minus_t_ns;
                let host = e.export.hosts.first().map(|h| h.to_ascii_lowercase());
                match (utc, host) {
                    (Some(u), Some(h)) if !h.is_empty() => {
                        let &mut (d, base) = first.entry(h).or_insert((x, u));
                        (d as u64, u - base)
                    }
                    _ => (x as u64, 0),
                }
            })
            .collect();
        ClockDomains { of }
    }
}

/// Aligns every process present in both a log and an export.
pub fn align_session(session: &Session, cfg: &AlignConfig) -> Alignments {
    align::runner::now(align_session_reusing(session, cfg, None, &align::Threads)).0
}

/// [`align_session`], keeping from `previous` (an alignment of this session before files were
/// added) every process whose inputs did not change; see [`align::align_all_reusing`] for what
/// the consensus makes re-run. Also says, per process aligned, what was recomputed. `runner`
/// runs the per-process alignments (threads natively, the page's workers).
///
/// The phases, each its own function: where each process's records are ([`Sources`]), which
/// processes have both sides ([`pair_sides`]), what of `previous` is kept, the rows of the
/// others ([`record_rows`], [`prepare`]), the alignment one clock domain at a time
/// ([`align_by_domain`]), and the result ([`into_alignments`]).
pub(crate) async fn align_session_reusing(
    session: &Session,
    cfg: &AlignConfig,
    previous: Option<Alignments>,
    runner: &dyn Runner,
) -> (Alignments, Vec<Redone>) {
    let files = SessionFiles::of(session);
    let Sources {
        op_from,
        kernel_from,
        export_pid,
    } = Sources::of(session);
    let mut out = Alignments::default();
    let both = pair_sides(op_from, kernel_from, &mut out);
    // The previous alignments of processes whose inputs are unchanged.
    let mut kept: BTreeMap<ProcessKey, (ProcessMatch, KeptProcess)> = BTreeMap::new();
    if let Some(prev) = previous.filter(|p| p.kept.files.grew_into(&files)) {
        for (pm, k) in prev.processes.into_iter().zip(prev.kept.per_process) {
            kept.insert(pm.process.clone(), (pm, k));
        }
    }
    // A process of one profiler trace (its records, or its kernels joined by `Seq`): its
    // alignment is the trace's, made again each time (cheap), never kept.
    let traced: Vec<Option<crate::kineto::Traced<'_>>> =
        both.iter().map(|(key, _)| trace_of(session, key)).collect();
    let reused: Vec<Option<(ProcessMatch, KeptProcess)>> = both
        .iter()
        .zip(&traced)
        .map(|((key, print), traced)| {
            let kept = kept.remove(key).filter(|(_, k)| &k.print == print);
            kept.filter(|_| traced.is_none())
        })
        .collect();
    let rows = record_rows(session, &both, &reused, &export_pid);
    let mut prepared = prepare(session, both, rows, reused, &traced);
    let aligned = align_by_domain(session, &mut prepared, cfg, runner).await;
    let redone = into_alignments(prepared, aligned, &mut out);
    out.kept.files = files;
    (out, redone)
}

/// Where each process's records are, counted without copying one.
struct Sources<'s> {
    /// Per log process, (log index, operations) in session order.
    op_from: BTreeMap<&'s ProcessKey, Vec<(u32, u32)>>,
    /// Per export process, (export index, kernels) in session order: each export process under
    /// the key of the log process it was paired with (or its own host and pid); `identity`
    /// settles which log process an export's pid is.
    kernel_from: BTreeMap<ProcessKey, Vec<(u32, u32)>>,
    /// The pid in export `x` of the process with key `k`, under `(x, k)`.
    export_pid: HashMap<(u32, ProcessKey), u32>,
}

impl<'s> Sources<'s> {
    fn of(session: &'s Session) -> Self {
        let mut op_from: BTreeMap<&ProcessKey, Vec<(u32, u32)>> = BTreeMap::new();
        for (i, log) in session.logs().iter().enumerate() {
            let ops = &log.parsed.ops;
            for process in (0..ops.len()).filter_map(|j| ops.process_of(j)) {
                count_from(op_from.entry(process).or_default(), i as u32);
            }
        }
        let mut kernel_from: BTreeMap<ProcessKey, Vec<(u32, u32)>> = BTreeMap::new();
        let mut export_pid: HashMap<(u32, ProcessKey), u32> = HashMap::new();
        for (x, e) in session.exports().iter().enumerate() {
            let mut per_pid: BTreeMap<u32, u32> = BTreeMap::new();
            let ks = &e.export.kernels;
            for pid in (0..ks.len()).filter_map(|j| ks.pid(j)) {
                *per_pid.entry(pid).or_default() += 1;
            }
            for (pid, n) in per_pid {
                let key = session.export_key(x, pid);
                export_pid.insert((x as u32, key.clone()), pid);
                kernel_from.entry(key).or_default().push((x as u32, n));
            }
        }
        Sources {
            op_from,
            kernel_from,
            export_pid,
        }
    }
}

/// The processes with records on both sides, with their prints, in key order; the others go
/// to `out`'s one-sided lists.
fn pair_sides(
    mut op_from: BTreeMap<&ProcessKey, Vec<(u32, u32)>>,
    mut kernel_from: BTreeMap<ProcessKey, Vec<(u32, u32)>>,
    out: &mut Alignments,
) -> Vec<(ProcessKey, InputPrint)> {
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
    both
}

/// Where the records of the processes not reused are, in one pass over the session (row
/// numbers: the analysis keeps these, not copies): per process of `both`, its (log, row)
/// operations and its kernels (empty for a reused one).
fn record_rows(
    session: &Session,
    both: &[(ProcessKey, InputPrint)],
    reused: &[Option<(ProcessMatch, KeptProcess)>],
    export_pid: &HashMap<(u32, ProcessKey), u32>,
) -> Rows {
    let mut op_at: Vec<Vec<(u32, u32)>> = both.iter().map(|_| Vec::new()).collect();
    let mut kernel_at: Vec<Vec<KernelAt>> = both.iter().map(|_| Vec::new()).collect();
    let mut want_ops: BTreeMap<&ProcessKey, usize> = BTreeMap::new();
    let mut want_kernels: HashMap<(u32, u32), usize> = HashMap::new();
    for (i, (key, print)) in both.iter().enumerate() {
        if reused[i].is_none() {
            want_ops.insert(key, i);
            for &(x, _) in &print.kernels {
                want_kernels.insert((x, export_pid[&(x, key.clone())]), i);
            }
        }
    }
    if !want_ops.is_empty() {
        for (l, log) in session.logs().iter().enumerate() {
            let ops = &log.parsed.ops;
            for j in 0..ops.len() {
                if let Some(&i) = ops.process_of(j).and_then(|p| want_ops.get(p)) {
                    op_at[i].push((l as u32, j as u32));
                }
            }
        }
        for (x, e) in session.exports().iter().enumerate() {
            let ks = &e.export.kernels;
            for j in 0..ks.len() {
                let Some(&i) = ks.pid(j).and_then(|pid| want_kernels.get(&(x as u32, pid))) else {
                    continue;
                };
                kernel_at[i].push(KernelAt {
                    start_ns: ks.start_ns(j).unwrap_or_default(),
                    correlation_id: ks.correlation_id(j).unwrap_or_default(),
                    export: x as u32,
                    row: j as u32,
                });
            }
        }
    }
    Rows { op_at, kernel_at }
}

/// Per process of `both` (empty for a reused one): its operations as (log, row) and its
/// kernels.
struct Rows {
    op_at: Vec<Vec<(u32, u32)>>,
    kernel_at: Vec<Vec<KernelAt>>,
}

/// Every process of `both` ready to align: a reused one with its previous alignment, the others
/// with their rows (from [`record_rows`]) and, for a profiler trace's, the trace's alignment.
fn prepare(
    session: &Session,
    both: Vec<(ProcessKey, InputPrint)>,
    Rows { op_at, kernel_at }: Rows,
    reused: Vec<Option<(ProcessMatch, KeptProcess)>>,
    traced: &[Option<crate::kineto::Traced<'_>>],
) -> Vec<Prepared> {
    both.into_iter()
        .zip(op_at.into_iter().zip(kernel_at))
        .zip(reused.into_iter().zip(traced))
        .map(
            |(((process, print), (op_at, kernel_at)), (reused, traced))| match reused {
                Some((pm, k)) => Prepared {
                    process,
                    print,
                    log_ops: pm.log_ops,
                    kernels: pm.kernels,
                    previous: Some(Aligned {
                        alignment: pm.alignment,
                        reuse: k.reuse,
                        redone: Redone::Kept,
                    }),
                    known: None,
                },
                None => prepare_fresh(session, process, print, &op_at, kernel_at, traced),
            },
        )
        .collect()
}

/// A process not reused: its operations and kernels (in start order) as session rows, and the
/// trace's alignment when it is a profiler trace's.
fn prepare_fresh(
    session: &Session,
    process: ProcessKey,
    print: InputPrint,
    op_at: &[(u32, u32)],
    mut kernel_at: Vec<KernelAt>,
    traced: &Option<crate::kineto::Traced<'_>>,
) -> Prepared {
    let (logs, exports) = (session.logs(), session.exports());
    // Start order; stable: kernels that start together keep their order in the session.
    kernel_at.sort_by_key(|k| (k.start_ns, k.correlation_id));
    let log_ops = ProcessOps::from_rows(op_at.iter().map(|&(l, j)| (&logs[l as usize], j)));
    let known = traced.as_ref().and_then(|t| {
        let rows: Vec<u32> = kernel_at.iter().map(|k| k.row).collect();
        t.alignment(&print, &rows, &log_ops)
    });
    Prepared {
        known,
        process,
        print,
        log_ops,
        kernels: ProcessKernels::from_rows(
            kernel_at
                .iter()
                .map(|k| (&exports[k.export as usize], k.row)),
        ),
        previous: None,
    }
}

/// Every prepared process's alignment (indexed like `prepared`): the known ones as they are,
/// the others aligned one clock domain at a time (taking their previous alignments).
///
/// Kernel times of one export share its capture's clock: the consensus compares those only,
/// and a process's clock is the first export holding its kernels (an adopted hostless
/// process keeps its export's clock). So the processes are aligned one clock domain at a
/// time, which is what aligning them all at once gives, and only one domain's records are
/// ever whole at once (they are the load's peak: a whole record is 2-3 times its row).
async fn align_by_domain(
    session: &Session,
    prepared: &mut [Prepared],
    cfg: &AlignConfig,
    runner: &dyn Runner,
) -> Vec<Option<Aligned>> {
    let exports = session.exports();
    let clocks = ClockDomains::of(session);
    let mut domains: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    let mut aligned: Vec<Option<Aligned>> = prepared.iter().map(|_| None).collect();
    for (i, p) in prepared.iter_mut().enumerate() {
        match p.known.take() {
            Some(alignment) => {
                aligned[i] = Some(Aligned {
                    alignment,
                    reuse: align::Reuse::default(),
                    redone: Redone::Inputs,
                })
            }
            None => domains.entry(p.clock(&clocks).0).or_default().push(i),
        }
    }
    let mut name_cache = KernelNameCache::default();
    for members in domains.values() {
        // The domain's whole records and decoded kernel names (decoded again when a domain is
        // re-aligned: few distinct names, not worth keeping for a later analysis).
        let whole: Vec<Whole> = members
            .iter()
            .map(|&i| {
                let p = &prepared[i];
                whole_records(p, p.clock(&clocks).1, exports, &mut name_cache)
            })
            .collect();
        let previous: Vec<Option<Aligned>> = members
            .iter()
            .map(|&i| prepared[i].previous.take())
            .collect();
        let inputs: Vec<ProcessInput<'_>> = members
            .iter()
            .zip(&whole)
            .map(|(&i, (log_ops, kernels, names, moved))| {
                let p = &prepared[i];
                ProcessInput {
                    log_ops,
                    kernels,
                    names,
                    clock: p.clock(&clocks).0,
                    // The export's NVTX ranges: where NCCL's own are there, the exact join
                    // checks the alignment.
                    nvtx: match moved {
                        Some(v) => v.as_slice(),
                        None => p
                            .export()
                            .and_then(|x| exports.get(x))
                            .map_or(&[], |e| e.export.nvtx.as_slice()),
                    },
                }
            })
            .collect();
        let domain = align_all_reusing_with(&inputs, cfg, previous, runner).await;
        for (&i, a) in members.iter().zip(domain) {
            aligned[i] = Some(a);
        }
    }
    aligned
}

/// Moves each prepared process and its alignment into `out` (with what a later call keeps);
/// returns what was recomputed per process.
fn into_alignments(
    prepared: Vec<Prepared>,
    aligned: Vec<Option<Aligned>>,
    out: &mut Alignments,
) -> Vec<Redone> {
    let mut redone = Vec::with_capacity(prepared.len());
    for (p, a) in prepared.into_iter().zip(aligned) {
        let a = a.expect("every process is in one domain");
        redone.push(a.redone);
        let export = p.export();
        out.processes.push(ProcessMatch {
            export,
            process: p.process,
            log_ops: p.log_ops,
            kernels: p.kernels,
            alignment: a.alignment,
        });
        out.kept.per_process.push(KeptProcess {
            print: p.print,
            reuse: a.reuse,
        });
    }
    redone
}

/// The profiler trace whose records `process` holds, with their places in the session: its
/// own (a trace no log claimed), or its kernels' (a claimed trace with `Seq`).
fn trace_of<'s>(session: &'s Session, process: &ProcessKey) -> Option<crate::kineto::Traced<'s>> {
    let t = session.traces().iter().find(|t| t.owner() == process)?;
    let export = session
        .exports()
        .iter()
        .position(|e| Arc::ptr_eq(e, &t.export))? as u32;
    if t.claimed_by.is_some() {
        let by_seq = t.groups.iter().any(|g| g.by_seq);
        return by_seq.then_some(crate::kineto::Traced::Claimed(t, export));
    }
    let log = session.logs().iter().position(|l| Arc::ptr_eq(l, &t.log))? as u32;
    Some(crate::kineto::Traced::Own(t, log, export))
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
