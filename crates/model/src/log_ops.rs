//! [`LogOps`]: a log's per-collective lines, stored compactly.
//!
//! A big log has millions of operation lines and few distinct *call sites*: one process, thread,
//! device, communicator, stream, operation, datatype, reduction and root (or peer) repeat for
//! every call of a training step. So each distinct combination is stored once ([`CallSite`]) and
//! each operation as one fixed-size row of what changes from call to call (opCount, buffers,
//! count, line, tuning): 32 bytes an operation instead of the 184 of a [`LogOp`], plus 8 for a
//! timestamp in logs that print them.
//! That is what the parser writes (fresh memory costs about half a nanosecond a byte to fill)
//! and what a session keeps.
//!
//! Reading gives whole [`LogOp`] values (`get`, `iter`, `&LogOps` in a `for` loop), so code
//! that reads operations sees the same record as before; `Debug` and equality are those of the
//! list of [`LogOp`]s, whatever the interning.

use crate::log::{LogOp, ProcessKey, SourceLine};
use crate::nccl::{Algo, DataType, OpType, Proto, RedOp};
use crate::rows::{record_store_traits, RowIter};
use std::collections::HashMap;
use std::sync::Arc;

/// Everything an operation line says that repeats from call to call: where it was called
/// from. [`LogOps`] stores each distinct one once.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallSite {
    /// The process, as [`LogOps::intern_process`] numbers it.
    pub process: u32,
    pub tid: u32,
    pub cuda_dev: u32,
    pub op: OpType,
    pub datatype: Option<DataType>,
    pub datatype_code: u32,
    pub red_op: RedOp,
    pub root: i64,
    pub comm: u64,
    pub nranks: u32,
    pub stream: u64,
    /// [`SourceLine::file`].
    pub file: u32,
}

/// What one call says beyond its [`CallSite`] (before any tuning line is attached).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Call {
    pub op_count: u64,
    pub sendbuff: u64,
    pub recvbuff: u64,
    pub count: u64,
    pub timestamp_ns: Option<i64>,
    /// [`SourceLine::line`].
    pub line: u64,
}

/// What a tuning line is matched against ([`LogOps::tuning_facts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TuningFacts {
    pub op: OpType,
    pub tid: u32,
    pub nranks: u32,
    /// [`LogOp::msg_bytes`].
    pub msg_bytes: u64,
    /// Already has an algorithm or a channel count.
    pub tuned: bool,
}

/// What changes from call to call, in 32 bytes: the numbers as they fit NCCL's use of them (an
/// opCount, a count and a line number in 32 bits, a buffer in 48: a user-space pointer), and a
/// row whose numbers do not fit keeps them whole in its extras ([`WIDE`]). The timestamp, which
/// only some logs print, is a column of its own ([`LogOps::timestamps`]).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq)]
struct Row {
    site: u32,
    line: u32,
    op_count: u32,
    count: u32,
    send_lo: u32,
    recv_lo: u32,
    /// Bits 32–47 of the send buffer (low half) and of the receive buffer (high half).
    bufs_hi: u32,
    nchannels: u8,
    algo: Option<Algo>,
    proto: Option<Proto>,
    flags: u8,
}

const _: () = assert!(std::mem::size_of::<Row>() == 32);

const HAS_TIMESTAMP: u8 = 1;
const HAS_NCHANNELS: u8 = 2;
/// The row has fields few operations have (RCCL's, a symmetric kernel), in [`LogOps::extras`].
const HAS_EXTRAS: u8 = 4;
/// The row's numbers did not fit it: they are in its extras ([`Wide`]), the row's are zero.
const WIDE: u8 = 8;

/// A row's numbers whole, for the rare row whose numbers do not fit it.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Wide {
    op_count: u64,
    count: u64,
    sendbuff: u64,
    recvbuff: u64,
    line: u64,
    nchannels: u32,
}

impl Wide {
    /// Whether these numbers fit a [`Row`].
    fn fits(&self) -> bool {
        const BUF: u64 = 1 << 48;
        self.op_count <= u64::from(u32::MAX)
            && self.count <= u64::from(u32::MAX)
            && self.line <= u64::from(u32::MAX)
            && self.sendbuff < BUF
            && self.recvbuff < BUF
            && self.nchannels < u32::from(u8::MAX)
    }
}

impl Row {
    /// A row of `site` with `n`'s numbers where they fit (the caller keeps them whole
    /// otherwise), untuned.
    fn new(site: u32, n: &Wide) -> Row {
        let mut r = Row {
            site,
            line: 0,
            op_count: 0,
            count: 0,
            send_lo: 0,
            recv_lo: 0,
            bufs_hi: 0,
            nchannels: 0,
            algo: None,
            proto: None,
            flags: 0,
        };
        if n.fits() {
            r.set_numbers(n);
        } else {
            r.flags |= WIDE;
        }
        r
    }

    /// Stores `n`, which [`Wide::fits`].
    fn set_numbers(&mut self, n: &Wide) {
        self.line = n.line as u32;
        self.op_count = n.op_count as u32;
        self.count = n.count as u32;
        self.send_lo = n.sendbuff as u32;
        self.recv_lo = n.recvbuff as u32;
        self.bufs_hi = ((n.sendbuff >> 32) as u32 & 0xffff) | ((n.recvbuff >> 32) as u32) << 16;
        self.nchannels = n.nchannels as u8;
    }

    /// The numbers stored in the row itself.
    fn numbers(&self) -> Wide {
        Wide {
            op_count: u64::from(self.op_count),
            count: u64::from(self.count),
            sendbuff: u64::from(self.send_lo) | u64::from(self.bufs_hi & 0xffff) << 32,
            recvbuff: u64::from(self.recv_lo) | u64::from(self.bufs_hi >> 16) << 32,
            line: u64::from(self.line),
            nchannels: u32::from(self.nchannels),
        }
    }
}

/// How many recently used sites are remembered for interning without hashing.
const RECENT_SITES: usize = 16;

/// What few operations say: RCCL's fields, the kernel of a `[Symmetric]` tuning line.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Default)]
struct Extras {
    rccl_task: Option<u64>,
    rccl_global_rank: Option<u32>,
    rccl_acc: Option<u64>,
    sym_kernel: Option<Arc<str>>,
    /// The row's numbers, where they do not fit it ([`WIDE`]).
    wide: Option<Wide>,
}

impl Extras {
    /// What of `op` goes to the extras besides the numbers.
    fn of(op: &LogOp) -> Extras {
        Extras {
            rccl_task: op.rccl_task,
            rccl_global_rank: op.rccl_global_rank,
            rccl_acc: op.rccl_acc,
            sym_kernel: op.sym_kernel.clone(),
            wide: None,
        }
    }
}

/// Per-collective lines in file order, stored compactly (see the module comment).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Default)]
pub struct LogOps {
    processes: Vec<ProcessKey>,
    sites: Vec<CallSite>,
    rows: Vec<Row>,
    /// Each row's timestamp (0 where it has none): empty until a row has one.
    timestamps: Vec<i64>,
    /// The fields few operations have, of the rows that have them, by row index (ascending).
    extras: Vec<(u32, Extras)>,
    /// Interning tables: derived from the above, rebuilt when missing.
    #[cfg_attr(feature = "serde", serde(skip))]
    process_ids: HashMap<ProcessKey, u32>,
    #[cfg_attr(feature = "serde", serde(skip))]
    site_ids: HashMap<CallSite, u32>,
    #[cfg_attr(feature = "serde", serde(skip))]
    recent: [u32; RECENT_SITES],
}

impl LogOps {
    pub fn new() -> Self {
        LogOps::default()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Room for `n` more operations without growing.
    pub fn reserve(&mut self, n: usize) {
        self.rows.reserve(n);
    }

    /// Gives back the room reserved beyond the operations held.
    pub fn shrink_to_fit(&mut self) {
        self.rows.shrink_to_fit();
        self.timestamps.shrink_to_fit();
        self.sites.shrink_to_fit();
        self.processes.shrink_to_fit();
        self.extras.shrink_to_fit();
    }

    /// The `i`-th operation, whole.
    pub fn get(&self, i: usize) -> Option<LogOp> {
        let r = self.rows.get(i)?;
        let s = self.sites.get(r.site as usize)?;
        let extras = if r.flags & HAS_EXTRAS != 0 {
            self.extras_of(i).cloned().unwrap_or_default()
        } else {
            Extras::default()
        };
        let n = extras.wide.unwrap_or_else(|| r.numbers());
        Some(LogOp {
            process: self.processes.get(s.process as usize)?.clone(),
            tid: s.tid,
            cuda_dev: s.cuda_dev,
            op: s.op,
            op_count: n.op_count,
            sendbuff: n.sendbuff,
            recvbuff: n.recvbuff,
            count: n.count,
            datatype: s.datatype,
            datatype_code: s.datatype_code,
            red_op: s.red_op,
            root: s.root,
            comm: s.comm,
            nranks: s.nranks,
            stream: s.stream,
            timestamp_ns: self.timestamp(i, r),
            algo: r.algo,
            proto: r.proto,
            nchannels: (r.flags & HAS_NCHANNELS != 0).then_some(n.nchannels),
            sym_kernel: extras.sym_kernel,
            rccl_task: extras.rccl_task,
            rccl_global_rank: extras.rccl_global_rank,
            rccl_acc: extras.rccl_acc,
            source: SourceLine {
                file: s.file,
                line: n.line,
            },
        })
    }

    /// The `i`-th row's timestamp (its row `r`).
    fn timestamp(&self, i: usize, r: &Row) -> Option<i64> {
        if r.flags & HAS_TIMESTAMP == 0 {
            return None;
        }
        self.timestamps.get(i).copied()
    }

    /// The `i`-th row's numbers (its row `r`), from its extras where they did not fit it.
    fn numbers(&self, i: usize, r: &Row) -> Wide {
        if r.flags & WIDE != 0 {
            if let Some(w) = self.extras_of(i).and_then(|e| e.wide) {
                return w;
            }
        }
        r.numbers()
    }

    /// The last operation, whole.
    pub fn last(&self) -> Option<LogOp> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// Every operation in order, as whole values.
    pub fn iter(&self) -> Iter<'_> {
        RowIter::new(self, self.len())
    }

    /// The processes that printed operations, in order of their first one.
    pub fn processes(&self) -> &[ProcessKey] {
        &self.processes
    }

    /// Appends one operation.
    pub fn push(&mut self, op: &LogOp) {
        let process = self.intern_process(&op.process);
        self.push_for(process, op);
    }

    /// The index [`LogOps::push_for`] takes for a process (the same key, the same index).
    pub fn intern_process(&mut self, key: &ProcessKey) -> u32 {
        if self.process_ids.len() != self.processes.len() {
            self.rebuild_process_ids();
        }
        if let Some(&i) = self.process_ids.get(key) {
            return i;
        }
        let i = self.processes.len() as u32;
        self.processes.push(key.clone());
        self.process_ids.insert(key.clone(), i);
        i
    }

    /// Appends one operation of the process `process` (from [`LogOps::intern_process`]);
    /// `op.process` is not read. For callers that append many operations of few processes.
    pub fn push_for(&mut self, process: u32, op: &LogOp) {
        let site = CallSite {
            process,
            tid: op.tid,
            cuda_dev: op.cuda_dev,
            op: op.op,
            datatype: op.datatype,
            datatype_code: op.datatype_code,
            red_op: op.red_op,
            root: op.root,
            comm: op.comm,
            nranks: op.nranks,
            stream: op.stream,
            file: op.source.file,
        };
        let call = Call {
            op_count: op.op_count,
            sendbuff: op.sendbuff,
            recvbuff: op.recvbuff,
            count: op.count,
            timestamp_ns: op.timestamp_ns,
            line: op.source.line,
        };
        let i = self.push_call(site, &call);
        if op.algo.is_some() || op.proto.is_some() || op.nchannels.is_some() {
            self.set_tuning(i, op.algo, op.proto, op.nchannels);
        }
        let extras = Extras::of(op);
        if extras != Extras::default() {
            let e = self.extras_mut(i);
            *e = Extras {
                wide: e.wide,
                ..extras
            };
        }
    }

    /// Appends one call at `site`, untuned and without RCCL's fields (what a parser has when
    /// it reads an operation line); returns its index.
    pub fn push_call(&mut self, site: CallSite, call: &Call) -> usize {
        let site = self.intern_site(site);
        let n = Wide {
            op_count: call.op_count,
            count: call.count,
            sendbuff: call.sendbuff,
            recvbuff: call.recvbuff,
            line: call.line,
            nchannels: 0,
        };
        let i = self.rows.len();
        let mut row = Row::new(site, &n);
        if let Some(t) = call.timestamp_ns {
            row.flags |= HAS_TIMESTAMP;
            if self.timestamps.len() < i {
                // The first timestamp: the rows before it have none.
                self.timestamps.resize(i, 0);
            }
            self.timestamps.push(t);
        } else if !self.timestamps.is_empty() {
            self.timestamps.push(0);
        }
        let wide = row.flags & WIDE != 0;
        self.rows.push(row);
        if wide {
            self.extras_mut(i).wide = Some(n);
        }
        i
    }

    fn intern_site(&mut self, site: CallSite) -> u32 {
        // A run cycles through a few sites (one per communicator and operation): remember the
        // recent ones by a cheap hash of the fields that differ most, and hash fully on a miss.
        let slot = ((site.comm ^ site.stream ^ u64::from(site.op.code()) << 7 ^ site.count_key())
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            >> 60) as usize
            % RECENT_SITES;
        let cached = self.recent[slot] as usize;
        if self.sites.get(cached) == Some(&site) {
            return cached as u32;
        }
        if self.site_ids.len() != self.sites.len() {
            self.site_ids = (0..).zip(&self.sites).map(|(i, s)| (*s, i)).collect();
        }
        let id = match self.site_ids.get(&site) {
            Some(&id) => id,
            None => {
                let id = self.sites.len() as u32;
                self.sites.push(site);
                self.site_ids.insert(site, id);
                id
            }
        };
        self.recent[slot] = id;
        id
    }

    /// Names every operation's input file `file` ([`SourceLine::file`]).
    pub fn set_file(&mut self, file: u32) {
        for s in &mut self.sites {
            s.file = file;
        }
        // Sites that differed only in their file are now equal: merge them, so that interning
        // stays one index per site.
        let mut ids: HashMap<CallSite, u32> = HashMap::new();
        let mut unique: Vec<CallSite> = Vec::new();
        let remap: Vec<u32> = self
            .sites
            .iter()
            .map(|s| {
                *ids.entry(*s).or_insert_with(|| {
                    unique.push(*s);
                    (unique.len() - 1) as u32
                })
            })
            .collect();
        if unique.len() != self.sites.len() {
            for r in &mut self.rows {
                r.site = remap.get(r.site as usize).copied().unwrap_or(r.site);
            }
        }
        self.sites = unique;
        self.site_ids = ids;
        self.recent = [0; RECENT_SITES];
    }

    fn rebuild_process_ids(&mut self) {
        self.process_ids = (0..)
            .zip(&self.processes)
            .map(|(i, p)| (p.clone(), i))
            .collect();
    }

    fn extras_of(&self, i: usize) -> Option<&Extras> {
        let k = self
            .extras
            .binary_search_by_key(&(i as u32), |e| e.0)
            .ok()?;
        self.extras.get(k).map(|e| &e.1)
    }

    /// The `i`-th row's extras, made (empty) and flagged when it had none. Rows get them in
    /// order but for a symmetric kernel, which comes with a later line: an insertion, rare.
    fn extras_mut(&mut self, i: usize) -> &mut Extras {
        if let Some(r) = self.rows.get_mut(i) {
            r.flags |= HAS_EXTRAS;
        }
        let k = match self.extras.binary_search_by_key(&(i as u32), |e| e.0) {
            Ok(k) => k,
            Err(k) => {
                self.extras.insert(k, (i as u32, Extras::default()));
                k
            }
        };
        &mut self.extras[k].1
    }

    /// Names the kernel a `[Symmetric]` tuning line gave the `i`-th operation (each distinct
    /// name stored once).
    pub fn set_sym_kernel(&mut self, i: usize, kernel: &str) {
        if i >= self.rows.len() {
            return;
        }
        let shared = self
            .extras
            .iter()
            .rev()
            .find_map(|(_, e)| e.sym_kernel.as_ref().filter(|k| &***k == kernel).cloned());
        let name = shared.unwrap_or_else(|| Arc::from(kernel));
        self.extras_mut(i).sym_kernel = Some(name);
    }

    /// The call site of the `i`-th operation (what it shares with the other calls from there).
    pub fn site_of(&self, i: usize) -> Option<&CallSite> {
        self.sites.get(self.rows.get(i)?.site as usize)
    }

    /// Every distinct call site, indexed as [`LogOps::site_index`] numbers them. An analysis
    /// that needs per-site facts (a rank, a communicator) works them out once per site, not
    /// once per operation: a log has millions of calls from a few hundred sites.
    pub fn sites(&self) -> &[CallSite] {
        &self.sites
    }

    /// The call site of the `i`-th operation, as an index into [`LogOps::sites`].
    pub fn site_index(&self, i: usize) -> Option<u32> {
        self.rows.get(i).map(|r| r.site)
    }

    /// What the `i`-th call says beyond its site (no tuning), without building the whole record.
    pub fn call(&self, i: usize) -> Option<Call> {
        let r = self.rows.get(i)?;
        let n = self.numbers(i, r);
        Some(Call {
            op_count: n.op_count,
            sendbuff: n.sendbuff,
            recvbuff: n.recvbuff,
            count: n.count,
            timestamp_ns: self.timestamp(i, r),
            line: n.line,
        })
    }

    // Single fields of one operation, without building the whole record (the parser reads
    // these for every tuning line it attaches).

    /// The process that printed the `i`-th operation (a reference into the process table).
    pub fn process_of(&self, i: usize) -> Option<&ProcessKey> {
        self.processes.get(self.site_of(i)?.process as usize)
    }

    pub fn op_type(&self, i: usize) -> Option<OpType> {
        self.site_of(i).map(|s| s.op)
    }

    pub fn comm(&self, i: usize) -> Option<u64> {
        self.site_of(i).map(|s| s.comm)
    }

    pub fn op_count(&self, i: usize) -> Option<u64> {
        let r = self.rows.get(i)?;
        Some(self.numbers(i, r).op_count)
    }

    pub fn tid(&self, i: usize) -> Option<u32> {
        self.site_of(i).map(|s| s.tid)
    }

    /// [`LogOp::msg_bytes`] of the `i`-th operation.
    pub fn msg_bytes(&self, i: usize) -> Option<u64> {
        let r = self.rows.get(i)?;
        let s = self.sites.get(r.site as usize)?;
        let count = self.numbers(i, r).count;
        Some(
            s.datatype
                .map_or(0, |d| count.saturating_mul(d.size_bytes())),
        )
    }

    pub fn nranks(&self, i: usize) -> Option<u32> {
        self.site_of(i).map(|s| s.nranks)
    }

    /// What a tuning line is matched against, of the `i`-th operation, in one lookup.
    pub fn tuning_facts(&self, i: usize) -> Option<TuningFacts> {
        let r = self.rows.get(i)?;
        let s = self.sites.get(r.site as usize)?;
        let count = self.numbers(i, r).count;
        Some(TuningFacts {
            op: s.op,
            tid: s.tid,
            nranks: s.nranks,
            msg_bytes: s
                .datatype
                .map_or(0, |d| count.saturating_mul(d.size_bytes())),
            tuned: r.algo.is_some() || r.flags & HAS_NCHANNELS != 0,
        })
    }

    /// What the tuning line attached to the `i`-th operation said (algorithm, protocol, channel
    /// count), without building the whole record: the analyses that expand every operation
    /// into the transfers of its algorithm read this once per call.
    pub fn tuning(&self, i: usize) -> Option<(Option<Algo>, Option<Proto>, Option<u32>)> {
        let r = self.rows.get(i)?;
        let nchannels = (r.flags & HAS_NCHANNELS != 0).then(|| self.numbers(i, r).nchannels);
        Some((r.algo, r.proto, nchannels))
    }

    /// Whether the `i`-th operation has an algorithm or a channel count (from a tuning line).
    pub fn is_tuned(&self, i: usize) -> bool {
        self.rows
            .get(i)
            .is_some_and(|r| r.algo.is_some() || r.flags & HAS_NCHANNELS != 0)
    }

    /// Sets what a tuning line says about the `i`-th operation.
    pub fn set_tuning(
        &mut self,
        i: usize,
        algo: Option<Algo>,
        proto: Option<Proto>,
        nchannels: Option<u32>,
    ) {
        let Some(r) = self.rows.get(i).copied() else {
            return;
        };
        let channels = nchannels.unwrap_or(0);
        let wide = channels >= u32::from(u8::MAX) || r.flags & WIDE != 0;
        if wide {
            // The row's numbers, this channel count among them, kept whole in its extras.
            let mut n = self.numbers(i, &r);
            n.nchannels = channels;
            self.extras_mut(i).wide = Some(n);
        }
        if let Some(r) = self.rows.get_mut(i) {
            if wide {
                r.set_numbers(&Wide::default());
                r.flags |= WIDE;
            } else {
                r.nchannels = channels as u8;
            }
            r.algo = algo;
            r.proto = proto;
            r.flags = (r.flags & !HAS_NCHANNELS)
                | if nchannels.is_some() {
                    HAS_NCHANNELS
                } else {
                    0
                };
        }
    }

    /// Bytes held per operation (rows, sites and tables shared out), for the memory figures.
    pub fn bytes_per_op(&self) -> f64 {
        let fixed = self.sites.len() * std::mem::size_of::<CallSite>()
            + self.processes.len() * std::mem::size_of::<ProcessKey>()
            + self.extras.len() * std::mem::size_of::<(u32, Extras)>();
        let total = self.rows.capacity() * std::mem::size_of::<Row>()
            + self.timestamps.capacity() * std::mem::size_of::<i64>()
            + fixed;
        total as f64 / self.len().max(1) as f64
    }
}

impl CallSite {
    /// Fields that tell apart the sites of one thread, folded for [`LogOps::intern_site`].
    fn count_key(&self) -> u64 {
        (self.root as u64) << 32 ^ u64::from(self.datatype_code) << 16 ^ u64::from(self.tid)
    }
}

record_store_traits!(LogOps, LogOp);

impl IntoIterator for LogOps {
    type Item = LogOp;
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        IntoIter { ops: self, next: 0 }
    }
}

/// The operations of a [`LogOps`] given up, built one at a time.
pub struct IntoIter {
    ops: LogOps,
    next: usize,
}

impl Iterator for IntoIter {
    type Item = LogOp;

    fn next(&mut self) -> Option<LogOp> {
        let op = self.ops.get(self.next)?;
        self.next += 1;
        Some(op)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.ops.len().saturating_sub(self.next);
        (n, Some(n))
    }
}

impl ExactSizeIterator for IntoIter {}

/// The operations of a [`LogOps`], built one at a time.
pub type Iter<'a> = RowIter<'a, LogOps>;

#[cfg(test)]
mod tests {
    use super::*;

    fn op(i: u64) -> LogOp {
        LogOp {
            process: ProcessKey {
                host: if i.is_multiple_of(3) {
                    "node-with-a-very-long-host-name-01"
                } else {
                    "n1"
                }
                .into(),
                pid: 10 + (i % 2) as u32,
            },
            tid: 7,
            cuda_dev: (i % 4) as u32,
            op: if i.is_multiple_of(5) {
                OpType::Send
            } else {
                OpType::AllReduce
            },
            op_count: i,
            sendbuff: 0x7f00_0000 + i,
            recvbuff: 0x7f10_0000 + i,
            count: 1 << (i % 20),
            datatype: DataType::from_code((i % 12) as u32),
            datatype_code: (i % 12) as u32 + if i.is_multiple_of(97) { 1000 } else { 0 },
            red_op: RedOp::from_code((i % 7) as u32),
            root: (i % 3) as i64 - 1,
            comm: 0x5500 + (i % 3),
            nranks: 4,
            stream: 0x6600,
            timestamp_ns: (!i.is_multiple_of(4)).then_some(i as i64 * 1000 - 5),
            algo: i.is_multiple_of(2).then_some(Algo::Ring),
            proto: i.is_multiple_of(3).then_some(Proto::LL128),
            nchannels: (!i.is_multiple_of(5)).then_some((i % 9) as u32),
            sym_kernel: i
                .is_multiple_of(17)
                .then(|| Arc::from(format!("ncclSymDevKernel_{}", i % 2))),
            rccl_task: i.is_multiple_of(11).then_some(i * 3),
            rccl_global_rank: i.is_multiple_of(13).then_some(i as u32),
            rccl_acc: i.is_multiple_of(26).then_some(i * 7),
            source: SourceLine {
                file: ((i / 7) % 2) as u32,
                line: 1 + i * 2,
            },
        }
    }

    /// Every field of every operation comes back as pushed, in order, with every optional field
    /// present and absent, and equality and `Debug` are those of the list.
    #[test]
    fn round_trip() {
        let all: Vec<LogOp> = (0..2000).map(op).collect();
        let ops: LogOps = all.iter().cloned().collect();
        assert_eq!(ops.len(), all.len());
        assert!(ops.iter().eq(all.iter().cloned()));
        assert!(ops.iter().rev().eq(all.iter().rev().cloned()));
        for (i, o) in all.iter().enumerate() {
            assert_eq!(ops.get(i).as_ref(), Some(o));
            assert_eq!(ops.op_type(i), Some(o.op));
            assert_eq!(ops.msg_bytes(i), Some(o.msg_bytes()));
            assert_eq!(ops.is_tuned(i), o.algo.is_some() || o.nchannels.is_some());
        }
        assert_eq!(format!("{ops:?}"), format!("{all:?}"));
        assert_eq!(ops.get(all.len()), None);
        // Fewer sites than operations: that is the point.
        assert!(ops.sites.len() < all.len() / 2, "{}", ops.sites.len());
        assert_eq!(ops.processes().len(), 4);
        // Interned differently (another push order of the same processes), still equal.
        let mut other = LogOps::new();
        other.intern_process(&all[1].process);
        other.extend(all.iter().cloned());
        assert_eq!(other, ops);
        let mut shorter = ops.clone();
        shorter.rows.pop();
        assert_ne!(shorter, ops);
    }

    /// Renumbering the file changes every operation's file and nothing else; sites that then
    /// coincide are merged, and interning goes on as before.
    #[test]
    fn set_file_renumbers_and_merges() {
        // The same calls from two files: twice the sites.
        let in_file = |f: u32| {
            (0..100).map(move |i| {
                let mut o = op(i);
                o.source.file = f;
                o
            })
        };
        let mut ops: LogOps = in_file(0).chain(in_file(1)).collect();
        let before = ops.sites.len();
        ops.set_file(7);
        assert_eq!(ops.sites.len() * 2, before, "the two files' sites merged");
        assert!(ops.iter().eq(in_file(7).chain(in_file(7))));
        let sites = ops.sites.len();
        let again = in_file(7).nth(3).unwrap();
        ops.push(&again);
        assert_eq!(ops.sites.len(), sites, "an existing site is found again");
        assert_eq!(ops.last(), Some(again));
    }

    #[test]
    fn tuning_is_set_in_place() {
        let mut ops: LogOps = (0..10).map(op).collect();
        ops.set_tuning(5, Some(Algo::Tree), None, Some(3));
        let o = ops.get(5).unwrap();
        assert_eq!(
            (o.algo, o.proto, o.nchannels),
            (Some(Algo::Tree), None, Some(3))
        );
        assert_eq!(ops.tuning(5), Some((Some(Algo::Tree), None, Some(3))));
        // Past a row's byte, the channel count is kept whole and read back whole.
        ops.set_tuning(6, Some(Algo::Ring), None, Some(300));
        assert_eq!(ops.tuning(6), Some((Some(Algo::Ring), None, Some(300))));
        assert_eq!(ops.get(6).unwrap().nchannels, Some(300));
        assert_eq!(ops.tuning(10), None);
        ops.set_tuning(5, None, Some(Proto::Simple), None);
        let o = ops.get(5).unwrap();
        assert_eq!(
            (o.algo, o.proto, o.nchannels),
            (None, Some(Proto::Simple), None)
        );
        assert!(!ops.is_tuned(5));
        assert_eq!(ops.get(4), Some(op(4)));
    }

    /// Numbers past what a row holds (an opCount or count past 32 bits, a pointer past 48, a line
    /// past 2^32, a channel count past 254) come back whole, beside ordinary rows, and
    /// timestamps that start late or stop.
    #[test]
    fn wide_numbers_and_late_timestamps_round_trip() {
        let mut all: Vec<LogOp> = (0..60).map(op).collect();
        for (i, o) in all.iter_mut().enumerate() {
            o.timestamp_ns = (i >= 7 && i % 5 != 0).then_some(i as i64 * 10 - 3);
            match i % 6 {
                0 => o.op_count = u64::MAX - i as u64,
                1 => o.count = (1 << 40) + i as u64,
                2 => o.sendbuff = 0xffff_ffff_ffff_0000 + i as u64,
                3 => o.recvbuff = 1 << 48,
                4 => o.source.line = (1 << 33) + i as u64,
                _ => {}
            }
            if i % 7 == 0 {
                o.nchannels = Some(300 + i as u32);
            }
        }
        let mut ops: LogOps = all.iter().cloned().collect();
        assert!(ops.iter().eq(all.iter().cloned()));
        for (i, o) in all.iter().enumerate() {
            assert_eq!(ops.op_count(i), Some(o.op_count), "{i}");
            assert_eq!(ops.msg_bytes(i), Some(o.msg_bytes()), "{i}");
            // The light reads say what the whole record says, wide numbers included.
            let call = ops.call(i).unwrap();
            let (number, stamp) = (
                (call.op_count, call.count, call.sendbuff),
                call.timestamp_ns,
            );
            assert_eq!(number, (o.op_count, o.count, o.sendbuff), "{i}");
            assert_eq!(
                (call.recvbuff, call.line, stamp),
                (o.recvbuff, o.source.line, o.timestamp_ns)
            );
            let site = ops.sites()[ops.site_index(i).unwrap() as usize];
            assert_eq!(
                (site.op, site.comm, site.root),
                (o.op, o.comm, o.root),
                "{i}"
            );
            assert_eq!(&ops.processes()[site.process as usize], &o.process, "{i}");
        }
        assert_eq!((ops.call(60), ops.site_index(60)), (None, None));
        // Tuning given later to an ordinary row takes it wide, and back.
        let plain = (0..60).find(|i| i % 6 == 5 && i % 7 != 0).unwrap();
        ops.set_tuning(plain, Some(Algo::Ring), None, Some(1000));
        let mut want = all[plain].clone();
        (want.algo, want.proto, want.nchannels) = (Some(Algo::Ring), None, Some(1000));
        assert_eq!(ops.get(plain), Some(want.clone()));
        ops.set_tuning(plain, None, Some(Proto::LL), Some(3));
        (want.algo, want.proto, want.nchannels) = (None, Some(Proto::LL), Some(3));
        assert_eq!(ops.get(plain), Some(want));
        assert_eq!(ops.get(plain + 1), Some(all[plain + 1].clone()));
    }

    /// A symmetric kernel set after later rows were pushed lands on its row only.
    #[test]
    fn sym_kernel_is_set_in_place() {
        let mut ops: LogOps = (1..40).map(op).collect();
        ops.set_sym_kernel(3, "ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_f32");
        ops.set_sym_kernel(1, "ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_f32");
        for i in 0..ops.len() {
            let mut want = op(i as u64 + 1);
            if i == 1 || i == 3 {
                want.sym_kernel = Some(Arc::from("ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_f32"));
            }
            assert_eq!(ops.get(i), Some(want), "{i}");
        }
    }
}
