//! A process's log operations and kernels as rows of the session's files, not copies.
//!
//! An analysis keeps, per process, its operations in log order and its kernels in start order,
//! and keeps them as long as the run is open. Copied into stores of their own they were 142
//! bytes of every operation of the run; here they are a row number (4 bytes) into the loaded
//! log or export, which the session and the analysis share (`Arc`): loaded files never change.
//! Reading gives the same whole [`LogOp`] and [`Kernel`] values as the stores do.

use crate::session::{LoadedExport, LoadedLog};
use model::log::{Call, CallSite, LogOp, LogOps};
use model::nsys::Kernel;
use model::nsys::KernelStore;
use model::rows::{RowIter, Rows};
use std::sync::Arc;

/// A process's log operations, in log order: rows of one or more loaded logs. `Debug` and
/// equality are those of the list of operations, wherever they are held.
#[derive(Default)]
pub struct ProcessOps {
    /// The logs holding them, in session order.
    logs: Vec<Arc<LoadedLog>>,
    /// Where each log's operations end in `rows` (a process's operations come log by log).
    log_ends: Vec<u32>,
    /// Each operation's row in its log.
    rows: Vec<u32>,
}

impl ProcessOps {
    /// From (log, row) pairs in the process's order, logs in session order.
    pub fn from_rows<'a>(at: impl IntoIterator<Item = (&'a Arc<LoadedLog>, u32)>) -> Self {
        let mut out = ProcessOps::default();
        for (log, row) in at {
            if !out.logs.last().is_some_and(|l| Arc::ptr_eq(l, log)) {
                if !out.logs.is_empty() {
                    out.log_ends.push(out.rows.len() as u32);
                }
                out.logs.push(Arc::clone(log));
            }
            out.rows.push(row);
        }
        if !out.logs.is_empty() {
            out.log_ends.push(out.rows.len() as u32);
        }
        out.rows.shrink_to_fit();
        out
    }

    /// The `i`-th operation, whole.
    pub fn get(&self, i: usize) -> Option<LogOp> {
        let row = *self.rows.get(i)?;
        let log = self
            .logs
            .get(self.log_ends.partition_point(|&e| e as usize <= i))?;
        log.parsed.ops.get(row as usize)
    }

    /// The log holding the `i`-th operation, and its row there.
    fn at(&self, i: usize) -> Option<(&LogOps, usize)> {
        let row = *self.rows.get(i)?;
        let log = self
            .logs
            .get(self.log_ends.partition_point(|&e| e as usize <= i))?;
        Some((&log.parsed.ops, row as usize))
    }

    /// The loaded log holding the `i`-th operation, and its row there: for analyses that keep
    /// per-site figures of each log (a site's number is its index in that log's
    /// [`LogOps::sites`]) and read a call's tuning ([`LogOps::tuning`]) in place.
    pub fn log_row(&self, i: usize) -> Option<(&Arc<LoadedLog>, usize)> {
        let row = *self.rows.get(i)?;
        let log = self
            .logs
            .get(self.log_ends.partition_point(|&e| e as usize <= i))?;
        Some((log, row as usize))
    }

    /// The call site of the `i`-th operation (what it shares with the process's other calls
    /// from there: operation, communicator, datatype...), without building the whole record.
    pub fn site(&self, i: usize) -> Option<&CallSite> {
        let (ops, row) = self.at(i)?;
        ops.site_of(row)
    }

    /// The `i`-th operation's own numbers (opCount, count, buffers), without building the
    /// whole record.
    pub fn call(&self, i: usize) -> Option<Call> {
        let (ops, row) = self.at(i)?;
        ops.call(row)
    }

    /// Each operation's log and row in it, in order.
    pub fn locations(&self) -> impl Iterator<Item = (&Arc<LoadedLog>, u32)> + '_ {
        self.rows.iter().enumerate().filter_map(|(i, &row)| {
            let log = self
                .logs
                .get(self.log_ends.partition_point(|&e| e as usize <= i))?;
            Some((log, row))
        })
    }

    /// Bytes this view holds per operation (the rows themselves are the session's).
    pub fn bytes_per_op(&self) -> f64 {
        (4 * (self.rows.capacity() + self.log_ends.capacity())
            + std::mem::size_of::<Arc<LoadedLog>>() * self.logs.capacity()) as f64
            / self.len().max(1) as f64
    }
}

/// A process's NCCL kernels, in start order: rows of one or more loaded exports. `Debug` and
/// equality are those of the list of kernels.
#[derive(Default)]
pub struct ProcessKernels {
    /// The exports holding them, in session order.
    exports: Vec<Arc<LoadedExport>>,
    /// Each kernel's export in `exports`; empty when there is one (the usual case: a process's
    /// kernels are in its node's export).
    export_of: Vec<u32>,
    /// Each kernel's row in its export's kernels.
    rows: Vec<u32>,
}

impl ProcessKernels {
    /// From (export, row) pairs in the process's (start) order; exports compared by identity.
    pub fn from_rows<'a>(at: impl IntoIterator<Item = (&'a Arc<LoadedExport>, u32)>) -> Self {
        let mut out = ProcessKernels::default();
        let mut export_of: Vec<u32> = Vec::new();
        for (export, row) in at {
            let x = match out.exports.iter().position(|e| Arc::ptr_eq(e, export)) {
                Some(x) => x,
                None => {
                    out.exports.push(Arc::clone(export));
                    out.exports.len() - 1
                }
            };
            export_of.push(x as u32);
            out.rows.push(row);
        }
        if out.exports.len() > 1 {
            export_of.shrink_to_fit();
            out.export_of = export_of;
        }
        out.rows.shrink_to_fit();
        out
    }

    /// The `i`-th kernel, whole.
    pub fn get(&self, i: usize) -> Option<Kernel> {
        let row = *self.rows.get(i)?;
        let x = self.export_of.get(i).map_or(0, |&x| x as usize);
        self.exports.get(x)?.export.kernels.get(row as usize)
    }

    /// The export's kernels holding the `i`-th kernel, and its row there.
    fn at(&self, i: usize) -> Option<(&KernelStore, usize)> {
        let row = *self.rows.get(i)?;
        let x = self.export_of.get(i).map_or(0, |&x| x as usize);
        Some((&self.exports.get(x)?.export.kernels, row as usize))
    }

    /// The `i`-th kernel's start (GPU clock, ns), without building the whole record.
    pub fn start_ns(&self, i: usize) -> Option<i64> {
        let (ks, row) = self.at(i)?;
        ks.start_ns(row)
    }

    /// The `i`-th kernel's end (GPU clock, ns), without building the whole record.
    pub fn end_ns(&self, i: usize) -> Option<i64> {
        let (ks, row) = self.at(i)?;
        ks.end_ns(row)
    }

    /// The `i`-th kernel's name, without building the whole record.
    pub fn name(&self, i: usize) -> Option<&Arc<str>> {
        let (ks, row) = self.at(i)?;
        ks.name(row)
    }

    /// Bytes this view holds per kernel (the rows themselves are the session's).
    pub fn bytes_per_kernel(&self) -> f64 {
        (4 * (self.rows.capacity() + self.export_of.capacity())
            + std::mem::size_of::<Arc<LoadedExport>>() * self.exports.capacity()) as f64
            / self.len().max(1) as f64
    }
}

/// What a view shares with the list of records it reads: `len`, `iter` (whole records, one at a time),
/// `&view` in a `for` loop, and `Debug` and equality of that list.
macro_rules! as_list {
    ($view:ident, $record:ty) => {
        impl $view {
            pub fn len(&self) -> usize {
                self.rows.len()
            }

            pub fn is_empty(&self) -> bool {
                self.rows.is_empty()
            }

            /// Every record in order, as whole values.
            pub fn iter(&self) -> RowIter<'_, $view> {
                RowIter::new(self, self.len())
            }
        }

        impl Rows for $view {
            type Row = $record;

            fn row(&self, i: usize) -> Option<$record> {
                self.get(i)
            }
        }

        impl<'a> IntoIterator for &'a $view {
            type Item = $record;
            type IntoIter = RowIter<'a, $view>;

            fn into_iter(self) -> Self::IntoIter {
                self.iter()
            }
        }

        impl std::fmt::Debug for $view {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_list().entries(self.iter()).finish()
            }
        }

        impl PartialEq for $view {
            fn eq(&self, other: &Self) -> bool {
                self.len() == other.len() && self.iter().eq(other.iter())
            }
        }
    };
}
as_list!(ProcessOps, LogOp);
as_list!(ProcessKernels, Kernel);

#[cfg(test)]
mod tests {
    use super::*;
    use ingest_nccl::ParsedLog;
    use model::log::{ProcessKey, SourceLine};
    use model::nsys::NsysExport;

    fn op(pid: u32, op_count: u64, file: u32) -> LogOp {
        LogOp {
            process: ProcessKey {
                host: "n1".into(),
                pid,
            },
            op_count,
            count: 8 + op_count,
            source: SourceLine {
                file,
                line: op_count + 1,
            },
            // The other fields as a made-up process's first line has them.
            ..align::warmup::process(1).log_ops[0].clone()
        }
    }

    fn log(file: u32, ops: &[LogOp]) -> Arc<LoadedLog> {
        Arc::new(LoadedLog {
            name: format!("{file}.log"),
            bytes: 0,
            parsed: ParsedLog {
                ops: ops.iter().cloned().collect(),
                ..ParsedLog::default()
            },
        })
    }

    fn kernel(pid: u32, start_ns: i64) -> Kernel {
        Kernel {
            pid,
            start_ns,
            end_ns: start_ns + 5,
            correlation_id: start_ns as u32,
            // The other fields as a made-up process's first kernel has them.
            ..align::warmup::process(1).kernels[0].clone()
        }
    }

    fn export(kernels: &[Kernel]) -> Arc<LoadedExport> {
        Arc::new(LoadedExport {
            name: "x.sqlite".into(),
            bytes: 0,
            export: NsysExport {
                kernels: kernels.iter().cloned().collect(),
                ..NsysExport::default()
            },
            compute: None,
        })
    }

    /// A process's operations spread over two logs (interleaved with another process's) read
    /// back as the list of its operations, in order, past the end as nothing.
    #[test]
    fn operations_from_several_logs_read_back_in_order() {
        let a = [op(1, 0, 0), op(2, 0, 0), op(1, 1, 0), op(1, 2, 0)];
        let b = [op(2, 1, 1), op(1, 3, 1), op(1, 4, 1)];
        let (la, lb) = (log(0, &a), log(1, &b));
        let at = [(&la, 0), (&la, 2), (&la, 3), (&lb, 1), (&lb, 2)];
        let view = ProcessOps::from_rows(at.iter().map(|&(l, r)| (l, r)));
        let want: Vec<LogOp> = vec![
            a[0].clone(),
            a[2].clone(),
            a[3].clone(),
            b[1].clone(),
            b[2].clone(),
        ];
        assert_eq!(view.len(), 5);
        assert_eq!(view.iter().collect::<Vec<_>>(), want);
        assert_eq!(
            (0..5).map(|i| view.get(i).unwrap()).collect::<Vec<_>>(),
            want
        );
        assert_eq!(view.get(5), None);
        // The light reads find the same rows.
        for (i, o) in want.iter().enumerate() {
            let (site, call) = (view.site(i).unwrap(), view.call(i).unwrap());
            assert_eq!((site.op, site.comm), (o.op, o.comm), "{i}");
            assert_eq!((call.op_count, call.count), (o.op_count, o.count), "{i}");
        }
        assert!(view.site(5).is_none() && view.call(5).is_none());
        // One log: no ends to search.
        let one = ProcessOps::from_rows([(&la, 1)]);
        assert_eq!(one.iter().collect::<Vec<_>>(), vec![a[1].clone()]);
        assert!(ProcessOps::default().get(0).is_none());
    }

    /// Kernels of one process from two exports, in start order (interleaved), read back as
    /// that list; equality is that of the lists, wherever the rows are.
    #[test]
    fn kernels_from_several_exports_read_back_in_order() {
        let x = [kernel(1, 10), kernel(9, 15), kernel(1, 30)];
        let y = [kernel(1, 20), kernel(1, 40)];
        let (ex, ey) = (export(&x), export(&y));
        let at = [(&ex, 0), (&ey, 0), (&ex, 2), (&ey, 1)];
        let view = ProcessKernels::from_rows(at.iter().map(|&(e, r)| (e, r)));
        let want = vec![x[0].clone(), y[0].clone(), x[2].clone(), y[1].clone()];
        assert_eq!(view.iter().collect::<Vec<_>>(), want);
        assert_eq!(view.get(4), None);
        let times: Vec<_> = (0..5).map(|i| (view.start_ns(i), view.end_ns(i))).collect();
        let mut want_times: Vec<_> = want
            .iter()
            .map(|k| (Some(k.start_ns), Some(k.end_ns)))
            .collect();
        want_times.push((None, None));
        assert_eq!(times, want_times);
        let copy = export(&want);
        let same = ProcessKernels::from_rows((0..4).map(|r| (&copy, r)));
        assert_eq!(view, same);
        assert!(
            same.export_of.is_empty(),
            "one export: no per-kernel export"
        );
        let fewer = ProcessKernels::from_rows((0..3).map(|r| (&copy, r)));
        assert_ne!(view, fewer);
    }
}
