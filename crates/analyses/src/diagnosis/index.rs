//! The logs rearranged for the diagnosis: every process, and every (process, communicator
//! pointer) pair with its collective and point-to-point lines in file order, its init lines,
//! and the cut lines of each file.

use super::{Evidence, ProcessRef};
use enrich::Communicators;
use ingest_nccl::ParsedLog;
use model::log::{CallSite, CommInit, LogOp, ProcessKey, SourceLine};
use model::{DataType, OpType, RedOp};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// One operation line, as the diagnosis compares it: 24 bytes (every line of a run is one, so
/// the rest of the line, its stamp and line number, is read back from its log when needed).
/// Entries order as their lines do within a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Entry {
    pub op_count: u64,
    /// Index into [`Index::logs`], and the line's row in that log's operations.
    log: u32,
    row: u32,
    /// Interned [`Signature`] ([`Index::sig`]): equal ids, equal calls.
    pub sig: u32,
}

// Every operation line of a run becomes one: keep it small.
const _: () = assert!(std::mem::size_of::<Entry>() <= 24);

impl Entry {
    /// Where the line is in its log's order (its file's order).
    pub fn at(&self) -> (u32, u32) {
        (self.log, self.row)
    }
}

/// What members of one communicator must agree on: the operation, count, datatype, and the
/// root or reduction where the operation has one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Signature {
    pub op: OpType,
    pub count: u64,
    pub datatype_code: u32,
    pub root: Option<i64>,
    pub red_op: Option<RedOp>,
}

impl Signature {
    fn of(site: &CallSite, count: u64) -> Signature {
        let rooted = matches!(site.op, OpType::Broadcast | OpType::Reduce);
        let reduces = matches!(
            site.op,
            OpType::AllReduce | OpType::Reduce | OpType::ReduceScatter
        );
        Signature {
            op: site.op,
            count,
            datatype_code: site.datatype_code,
            root: rooted.then_some(site.root),
            red_op: reduces.then_some(site.red_op),
        }
    }

    pub fn datatype(&self) -> Option<DataType> {
        DataType::from_code(self.datatype_code)
    }
}

/// One process that printed NCCL lines.
#[derive(Debug, Clone)]
pub(crate) struct Proc {
    pub key: ProcessKey,
    pub version: Option<String>,
    pub cuda_dev: Option<u32>,
    /// The files its lines are in, and whether it is the only process of each.
    pub files: Vec<(u32, bool)>,
}

/// One process's view of one communicator (its pointer).
#[derive(Debug, Clone)]
pub(crate) struct Pair {
    pub proc: usize,
    pub comm: u64,
    pub nranks: u32,
    pub cuda_dev: Option<u32>,
    pub colls: Vec<Entry>,
    pub p2p: Vec<Entry>,
    /// Its `Init COMPLETE`: rank in the communicator, commId, line.
    pub init: Option<(u32, Option<u64>, SourceLine)>,
    /// Its `Init START` when no `Init COMPLETE` followed it: rank, commId, line.
    pub unfinished_init: Option<(u32, Option<u64>, SourceLine)>,
    /// The distinct opCounts of its collectives, ascending.
    pub op_counts: Vec<u64>,
}

pub(crate) struct Index<'a> {
    pub logs: &'a [&'a ParsedLog],
    pub procs: Vec<Proc>,
    pub proc_of: FxHashMap<ProcessKey, usize>,
    pub pairs: Vec<Pair>,
    pub pair_of: FxHashMap<(usize, u64), usize>,
    /// The analysis's communicators, or the same grouping made here.
    pub enriched: Cow<'a, Communicators>,
    paths: FxHashMap<u32, &'a str>,
    sigs: Vec<Signature>,
    sig_ids: FxHashMap<Signature, u32>,
    /// Per file, the lines of operation lines cut short or too garbled to read (and the last
    /// line, when it was skipped: a write cut there).
    pub cut_lines: FxHashMap<u32, Vec<u64>>,
}

impl<'a> Index<'a> {
    pub fn build(logs: &'a [&'a ParsedLog], given: Option<&'a Communicators>) -> Index<'a> {
        let enriched = match given {
            Some(c) => Cow::Borrowed(c),
            None => {
                let inits: Vec<CommInit> = logs.iter().flat_map(|l| l.inits.clone()).collect();
                Cow::Owned(enrich::group(&inits, logs.iter().flat_map(|l| &l.ops)))
            }
        };
        let mut ix = Index {
            logs,
            procs: Vec::new(),
            proc_of: FxHashMap::default(),
            pairs: Vec::new(),
            pair_of: FxHashMap::default(),
            enriched,
            paths: logs
                .iter()
                .map(|l| (l.file_index, l.path.as_str()))
                .collect(),
            sigs: Vec::new(),
            sig_ids: FxHashMap::default(),
            cut_lines: FxHashMap::default(),
        };
        for (i, log) in logs.iter().enumerate() {
            ix.add_log(i as u32, log);
        }
        for p in &mut ix.pairs {
            p.op_counts = p.colls.iter().map(|e| e.op_count).collect();
            p.op_counts.sort_unstable();
            p.op_counts.dedup();
        }
        ix
    }

    fn add_log(&mut self, log_index: u32, log: &ParsedLog) {
        let single = log.processes.len() == 1;
        for p in &log.processes {
            let i = self.proc_index(&p.process);
            let proc = &mut self.procs[i];
            if proc.version.is_none() {
                proc.version.clone_from(&p.nccl_version);
            }
            if !proc.files.iter().any(|(f, _)| *f == log.file_index) {
                proc.files.push((log.file_index, single));
            }
        }
        self.add_ops(log_index, log);
        for i in &log.inits {
            let pi = self.proc_index(&i.process);
            let pair = self.pair_index(pi, i.comm);
            let p = &mut self.pairs[pair];
            p.nranks = p.nranks.max(i.nranks);
            if i.cuda_dev.is_some() {
                p.cuda_dev = i.cuda_dev;
            }
            p.init = Some((i.rank, i.comm_id, i.source));
            p.unfinished_init = None;
        }
        self.unfinished_inits(log);
        let last_line = log.counters.total_lines;
        let cut: Vec<u64> = log
            .diagnostics
            .iter()
            .filter(|d| {
                let r = ingest_nccl::split_note(d).reason;
                // An operation line cut short or without its header, or whatever the last line
                // became when the write was cut.
                r.starts_with(ingest_nccl::SKIPPED)
                    && (r.contains("per-collective")
                        || r.contains("NCCL-looking")
                        || d.line == last_line)
            })
            .map(|d| d.line)
            // The file ends inside its last line: cut there, whatever it reads as.
            .chain((log.counters.unterminated_lines > 0).then_some(last_line))
            .collect();
        if !cut.is_empty() {
            self.cut_lines
                .entry(log.file_index)
                .or_default()
                .extend(cut);
        }
    }

    /// Every operation line, read per call site (what a process's calls from one place share
    /// is looked up once per site, not per line).
    fn add_ops(&mut self, log_index: u32, log: &ParsedLog) {
        let ops = &log.ops;
        // Per site: (pair, is point-to-point); per (site, count): the interned signature.
        let mut site_pairs: Vec<Option<(usize, bool)>> = vec![None; ops.sites().len()];
        let mut sigs: FxHashMap<(u32, u64), u32> = FxHashMap::default();
        for row in 0..ops.len() {
            let (Some(si), Some(call)) = (ops.site_index(row), ops.call(row)) else {
                continue;
            };
            let Some(site) = ops.sites().get(si as usize) else {
                continue;
            };
            let (pair, p2p) = match site_pairs.get(si as usize).copied().flatten() {
                Some(known) => known,
                None => {
                    let key = ops
                        .processes()
                        .get(site.process as usize)
                        .cloned()
                        .unwrap_or(ProcessKey {
                            host: Default::default(),
                            pid: 0,
                        });
                    let pi = self.proc_index(&key);
                    self.procs[pi].cuda_dev.get_or_insert(site.cuda_dev);
                    let pair = self.pair_index(pi, site.comm);
                    let p = &mut self.pairs[pair];
                    p.nranks = p.nranks.max(site.nranks);
                    p.cuda_dev.get_or_insert(site.cuda_dev);
                    let known = (pair, site.op.is_p2p());
                    if let Some(slot) = site_pairs.get_mut(si as usize) {
                        *slot = Some(known);
                    }
                    known
                }
            };
            let sig = match sigs.get(&(si, call.count)) {
                Some(s) => *s,
                None => {
                    let s = self.intern(Signature::of(site, call.count));
                    sigs.insert((si, call.count), s);
                    s
                }
            };
            let e = Entry {
                op_count: call.op_count,
                log: log_index,
                row: u32::try_from(row).unwrap_or(u32::MAX),
                sig,
            };
            let p = &mut self.pairs[pair];
            if p2p {
                p.p2p.push(e);
            } else {
                p.colls.push(e);
            }
        }
    }

    /// `Init START` lines with no later `Init COMPLETE` of their (process, communicator).
    fn unfinished_inits(&mut self, log: &ParsedLog) {
        let mut done: BTreeMap<(&ProcessKey, u64), u64> = BTreeMap::new();
        for i in &log.inits {
            let l = done.entry((&i.process, i.comm)).or_insert(0);
            *l = (*l).max(i.source.line);
        }
        for s in &log.init_starts {
            let finished = done
                .get(&(&s.process, s.comm))
                .is_some_and(|&l| l > s.source.line);
            if finished {
                continue;
            }
            let pi = self.proc_index(&s.process);
            let pair = self.pair_index(pi, s.comm);
            let p = &mut self.pairs[pair];
            p.nranks = p.nranks.max(s.nranks);
            if s.cuda_dev.is_some() {
                p.cuda_dev = s.cuda_dev;
            }
            p.unfinished_init = Some((s.rank, s.comm_id, s.source));
        }
    }

    fn intern(&mut self, s: Signature) -> u32 {
        if let Some(i) = self.sig_ids.get(&s) {
            return *i;
        }
        let i = u32::try_from(self.sigs.len()).unwrap_or(u32::MAX);
        self.sigs.push(s.clone());
        self.sig_ids.insert(s, i);
        i
    }

    pub fn sig(&self, e: &Entry) -> &Signature {
        &self.sigs[e.sig as usize]
    }

    /// Where the line is.
    pub fn source(&self, e: &Entry) -> SourceLine {
        let log = self.logs.get(e.log as usize);
        SourceLine {
            file: log.map_or(0, |l| l.file_index),
            line: log
                .and_then(|l| l.ops.call(e.row as usize))
                .map_or(0, |c| c.line),
        }
    }

    /// The line's stamp, when it has one.
    pub fn timestamp_ns(&self, e: &Entry) -> Option<i64> {
        self.logs
            .get(e.log as usize)?
            .ops
            .call(e.row as usize)?
            .timestamp_ns
    }

    /// The whole line's operation, read back from its log.
    pub fn full(&self, e: &Entry) -> Option<LogOp> {
        self.logs.get(e.log as usize)?.ops.get(e.row as usize)
    }

    fn proc_index(&mut self, key: &ProcessKey) -> usize {
        if let Some(i) = self.proc_of.get(key) {
            return *i;
        }
        let i = self.procs.len();
        self.procs.push(Proc {
            key: key.clone(),
            version: None,
            cuda_dev: None,
            files: Vec::new(),
        });
        self.proc_of.insert(key.clone(), i);
        i
    }

    fn pair_index(&mut self, proc: usize, comm: u64) -> usize {
        if let Some(i) = self.pair_of.get(&(proc, comm)) {
            return *i;
        }
        let i = self.pairs.len();
        self.pairs.push(Pair {
            proc,
            comm,
            nranks: 0,
            cuda_dev: None,
            colls: Vec::new(),
            p2p: Vec::new(),
            init: None,
            unfinished_init: None,
            op_counts: Vec::new(),
        });
        self.pair_of.insert((proc, comm), i);
        i
    }

    /// The global rank of a process (the analysis's numbering).
    pub fn rank(&self, proc: usize) -> Option<u32> {
        self.enriched.rank_of(&self.procs.get(proc)?.key)
    }

    pub fn rank_of_key(&self, key: &ProcessKey) -> Option<u32> {
        self.enriched.rank_of(key)
    }

    pub fn process_ref(&self, proc: usize) -> ProcessRef {
        let k = &self.procs[proc].key;
        ProcessRef {
            host: k.host.to_string(),
            pid: k.pid,
        }
    }

    pub fn evidence(&self, s: SourceLine) -> Evidence {
        Evidence {
            path: self
                .paths
                .get(&s.file)
                .copied()
                .unwrap_or_default()
                .to_string(),
            line: s.line,
            text: None,
        }
    }

    /// The first per-collective line cut short after `after` in a file where `proc` is the only
    /// process (so the cut line is its own).
    pub fn cut_line_after(&self, proc: usize, after: SourceLine) -> Option<SourceLine> {
        let p = self.procs.get(proc)?;
        p.files
            .iter()
            .filter(|(f, only)| *only && *f == after.file)
            .find_map(|(f, _)| {
                let lines = self.cut_lines.get(f)?;
                lines.iter().copied().filter(|l| *l > after.line).min()
            })
            .map(|line| SourceLine {
                file: after.file,
                line,
            })
    }
}
