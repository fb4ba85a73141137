//! Every logged operation summed per call site and tuning, and every matched kernel visited
//! with the sums its lines belong to.
//!
//! Why per site: a big run has millions of calls from a few hundred sites per process (one
//! process, communicator, operation, datatype and root or peer), and the transfers an operation
//! makes are linear in its bytes, so summing first and expanding each sum into its algorithm's
//! transfers once ([`super::matrix`]) gives the same matrix as expanding every call, in a
//! fraction of the time. A site's calls are kept apart by their tuning (algorithm and channel
//! count), which decides where the bytes go.
//!
//! A line printed twice (the thesis' duplicated logging: the same site, opCount, count and
//! buffers as the site's previous line) is one operation, as the volumes count it.

use super::notes::Notes;
use load::Session;
use model::{Algo, OpType};
use pipeline::Analysis;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The calls of one site of one log with one tuning, summed.
#[derive(Debug, Clone, PartialEq)]
pub struct OpTotals {
    /// The caller's global rank.
    pub src: u32,
    /// Index into [`RunFacts::comms`] (and `Communicators::comms`).
    pub comm: u32,
    pub op: OpType,
    /// Root of a rooted collective or peer of a Send/Recv, as printed (a communicator rank).
    pub root: i64,
    /// From the calls' tuning lines (`None`: no tuning line, or an algorithm this build does not
    /// name).
    pub algo: Option<Algo>,
    pub nchannels: Option<u32>,
    /// `sizeof(datatype)`; 0 for a datatype code this build does not know.
    pub elem_bytes: u64,
    /// Σ `count × sizeof(datatype)` over the calls (the contract's bytes).
    pub msg_bytes: u128,
    pub calls: u64,
    /// Σ duration of the kernels that ran these calls (each kernel once), and how many.
    pub time_ns: i64,
    pub kernels: u64,
}

/// What tells a call from a copy of it: (opCount, count, send buffer, receive buffer).
type CallKey = (u64, u64, u64, u64);

/// Where a variant chain ends.
const NONE: u32 = u32::MAX;

/// Every site's sums, and the way back from a log row to them.
#[derive(Debug, Default)]
pub struct Totals {
    pub ops: Vec<OpTotals>,
    /// Per log (session order), per row: the sums its call was counted in (a printed copy's
    /// row: its call's), `NONE` for a row not counted. 4 bytes an operation, so that a kernel's
    /// line finds its sums in one read, millions of times per analysis.
    row_total: Vec<Vec<u32>>,
    /// The next sum of the same site (another tuning), or `NONE` (while summing).
    next: Vec<u32>,
    /// Each loaded log by address (the session's `Arc`), for rows read through an alignment.
    log_index: FxHashMap<usize, u32>,
}

/// One matched line of a kernel: the sums it belongs to and the call's own numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelLine {
    /// Index into [`Totals::ops`].
    pub total: u32,
    pub count: u64,
    pub op_count: u64,
}

/// One matched kernel, as [`Totals::for_each_kernel`] visits it.
#[derive(Debug)]
pub struct KernelSeen<'a> {
    /// Index into `analysis.alignments.processes`.
    pub process: usize,
    pub rank: u32,
    /// The kernel's index among its process's kernels.
    pub kernel: usize,
    /// GPU clock of its export, ns.
    pub start_ns: i64,
    pub end_ns: i64,
    /// Its log lines that were counted (a duplicate's copy and unranked lines are left out).
    pub lines: &'a [KernelLine],
}

impl KernelSeen<'_> {
    pub fn duration_ns(&self) -> i64 {
        self.end_ns - self.start_ns
    }
}

impl Totals {
    /// Every log operation of the session summed per (log, site, tuning).
    pub fn of(session: &Session, analysis: &Analysis, notes: &mut Notes) -> Totals {
        let comms = &analysis.communicators;
        let mut t = Totals::default();
        for (l, log) in session.logs().iter().enumerate() {
            t.log_index.insert(Arc::as_ptr(log) as usize, l as u32);
            let ops = &log.parsed.ops;
            // Per site: (rank, communicator), worked out once.
            let placed: Vec<Option<(u32, u32)>> = ops
                .sites()
                .iter()
                .map(|s| {
                    let p = ops.processes().get(s.process as usize)?;
                    Some((comms.rank_of(p)?, comms.comm_of(p, s.comm)? as u32))
                })
                .collect();
            let mut first = vec![NONE; ops.sites().len()];
            let mut row_total = vec![NONE; ops.len()];
            // The site's previous call's numbers, its sums and its row.
            let mut previous: Vec<Option<(CallKey, u32, usize)>> = vec![None; first.len()];
            let mut unplaced = 0u64;
            for j in 0..ops.len() {
                let (Some(s), Some(call), Some((algo, _, nch))) =
                    (ops.site_index(j), ops.call(j), ops.tuning(j))
                else {
                    continue;
                };
                let s = s as usize;
                let Some((src, comm)) = placed[s] else {
                    unplaced += 1;
                    continue;
                };
                let key = (call.op_count, call.count, call.sendbuff, call.recvbuff);
                let site = &ops.sites()[s];
                let mut moved = None;
                let elem = site.datatype.map_or(0, |d| d.size_bytes());
                let bytes = u128::from(call.count) * u128::from(elem);
                if let Some((k, at, row)) = previous[s] {
                    if k == key {
                        // A line printed twice is one call. NCCL prints one tuning line after
                        // the pair, so the copy may carry the tuning the first lacked: the call
                        // then moves to the copy's tuning (its first row with it).
                        let untuned = t.ops[at as usize].algo.is_none() && algo.is_some();
                        if untuned {
                            moved = Some(row);
                            let o = &mut t.ops[at as usize];
                            o.msg_bytes -= bytes;
                            o.calls -= 1;
                        } else {
                            row_total[j] = at;
                            continue;
                        }
                    }
                }
                let i = t.find_or_add(&mut first[s], algo, nch, || OpTotals {
                    src,
                    comm,
                    op: site.op,
                    root: site.root,
                    algo,
                    nchannels: nch,
                    elem_bytes: elem,
                    msg_bytes: 0,
                    calls: 0,
                    time_ns: 0,
                    kernels: 0,
                });
                previous[s] = Some((key, i, j));
                row_total[j] = i;
                if let Some(row) = moved {
                    row_total[row] = i;
                }
                let o = &mut t.ops[i as usize];
                o.msg_bytes += bytes;
                o.calls += 1;
            }
            if unplaced > 0 {
                notes.add(
                    "unranked",
                    "operations of a process with no global rank or communicator were left out",
                    unplaced,
                    Some(log.name.clone()),
                );
            }
            t.row_total.push(row_total);
        }
        let unknown_type: u64 = t
            .ops
            .iter()
            .filter(|o| o.elem_bytes == 0)
            .map(|o| o.calls)
            .sum();
        if unknown_type > 0 {
            notes.add(
                "unknown-datatype",
                "operations of a datatype this build does not know moved no counted bytes",
                unknown_type,
                None,
            );
        }
        t
    }

    /// The sums of a site (its chain starting at `*first`) with this tuning, made if missing.
    fn find_or_add(
        &mut self,
        first: &mut u32,
        algo: Option<Algo>,
        nch: Option<u32>,
        make: impl FnOnce() -> OpTotals,
    ) -> u32 {
        let mut at = *first;
        let mut last = NONE;
        while at != NONE {
            let o = &self.ops[at as usize];
            if o.algo == algo && o.nchannels == nch {
                return at;
            }
            last = at;
            at = self.next[at as usize];
        }
        let i = self.ops.len() as u32;
        self.ops.push(make());
        self.next.push(NONE);
        if last == NONE {
            *first = i;
        } else {
            self.next[last as usize] = i;
        }
        i
    }

    /// The sums a log row belongs to, if its call was counted.
    fn total_of(&self, log: u32, row: usize) -> Option<u32> {
        let t = *self.row_total.get(log as usize)?.get(row)?;
        (t != NONE).then_some(t)
    }

    /// Visits every matched kernel of every aligned process with a global rank, in process and
    /// kernel order, with the sums its lines belong to.
    pub fn for_each_kernel(&self, analysis: &Analysis, f: impl FnMut(&KernelSeen)) {
        self.walk(analysis, true, f)
    }

    /// [`Totals::for_each_kernel`]; without `calls`, the lines' own numbers are not read (they
    /// are 0): a pass that needs only the sums saves a row read per line.
    fn walk(&self, analysis: &Analysis, calls: bool, mut f: impl FnMut(&KernelSeen)) {
        let mut lines: Vec<KernelLine> = Vec::new();
        for (p, pm) in analysis.alignments.processes.iter().enumerate() {
            let Some(rank) = analysis.communicators.rank_of(&pm.process) else {
                continue;
            };
            // Rows of one process come log by log: one lookup per change of log.
            let mut cached: Option<(usize, u32)> = None;
            for (span, m) in pm.matched_spans() {
                lines.clear();
                for i in m.lines() {
                    let Some((log, row)) = pm.log_ops.log_row(i) else {
                        continue;
                    };
                    let addr = Arc::as_ptr(log) as usize;
                    let l = match cached {
                        Some((a, l)) if a == addr => l,
                        _ => match self.log_index.get(&addr) {
                            Some(&l) => {
                                cached = Some((addr, l));
                                l
                            }
                            None => continue,
                        },
                    };
                    let Some(total) = self.total_of(l, row) else {
                        continue;
                    };
                    let (count, op_count) = match calls.then(|| log.parsed.ops.call(row)) {
                        Some(Some(call)) => (call.count, call.op_count),
                        Some(None) => continue,
                        None => (0, 0),
                    };
                    lines.push(KernelLine {
                        total,
                        count,
                        op_count,
                    });
                }
                if lines.is_empty() {
                    continue;
                }
                f(&KernelSeen {
                    process: p,
                    rank,
                    kernel: span.index,
                    start_ns: span.start_ns,
                    end_ns: span.end_ns,
                    lines: &lines,
                });
            }
        }
    }

    /// Adds each matched kernel's duration to the sums its lines belong to (a kernel once per
    /// sum, however many of its lines share it). Kernels of zero or negative duration add none
    /// and are counted in the notes.
    pub fn attribute_time(&mut self, analysis: &Analysis, notes: &mut Notes) {
        let mut time: Vec<(i64, u64)> = vec![(0, 0); self.ops.len()];
        let mut zero = 0u64;
        let mut seen: Vec<u32> = Vec::new();
        self.walk(analysis, false, |k| {
            let d = k.duration_ns();
            if d <= 0 {
                zero += 1;
                return;
            }
            seen.clear();
            for l in k.lines {
                if !seen.contains(&l.total) {
                    seen.push(l.total);
                    let e = &mut time[l.total as usize];
                    e.0 += d;
                    e.1 += 1;
                }
            }
        });
        for (o, (t, n)) in self.ops.iter_mut().zip(time) {
            o.time_ns += t;
            o.kernels += n;
        }
        if zero > 0 {
            notes.add(
                "zero-duration",
                "kernels of zero or negative duration add no time to the matrix and are left out of the performance model",
                zero,
                None,
            );
        }
    }
}
