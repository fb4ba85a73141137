//! Where the per-process alignments of [`crate::align_all_reusing_with`] run. Natively,
//! [`Threads`] spreads them over scoped threads; the page implements [`Runner`] over its Web
//! Workers (`app/src/align_pool.rs`), since wasm32 in the browser has no threads to spawn and
//! a worker can only be waited for asynchronously. Whatever runs them, each job's result is
//! [`Job::run`]'s: where a process is aligned never changes how.

use crate::all::map_ordered;
use crate::per_process::{align_process_hinted, AlignConfig, ProcessAlignment};
use model::log::LogOp;
use model::nsys::{Kernel, KernelName};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// One process to align: its inputs and, on the consensus pass, the call each kernel runs
/// according to the other ranks (empty on the first pass).
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    pub log_ops: &'a [LogOp],
    pub kernels: &'a [Kernel],
    pub names: &'a [Option<KernelName>],
    pub hints: &'a [Option<(u64, u64)>],
}

impl Job<'_> {
    /// The alignment of this job: what every [`Runner`] must return for it.
    pub fn run(&self, cfg: &AlignConfig) -> ProcessAlignment {
        align_process_hinted(self.log_ops, self.kernels, self.names, cfg, self.hints)
    }

    /// A rough measure of the job's cost (its two sequences' lengths), for scheduling.
    pub fn size(&self) -> usize {
        self.log_ops.len() + self.kernels.len()
    }
}

/// The results of a batch of jobs, once they are all done.
pub type JobsFuture<'a> = Pin<Box<dyn Future<Output = Vec<ProcessAlignment>> + 'a>>;

/// Runs batches of jobs.
pub trait Runner {
    /// [`Job::run`] of every job with `cfg`, results in job order.
    fn run<'a>(&'a self, jobs: &'a [Job<'a>], cfg: &'a AlignConfig) -> JobsFuture<'a>;
}

/// The jobs on this process's threads, one contiguous chunk per core (one after another on
/// wasm32); the future is ready when returned.
#[derive(Debug, Clone, Copy, Default)]
pub struct Threads;

impl Runner for Threads {
    fn run<'a>(&'a self, jobs: &'a [Job<'a>], cfg: &'a AlignConfig) -> JobsFuture<'a> {
        Box::pin(std::future::ready(map_ordered(jobs, |j| j.run(cfg))))
    }
}

/// The value of a future that never waits, such as any built on [`Threads`]: what lets the
/// synchronous entry points share the asynchronous code.
pub fn now<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(v) => v,
        // A programming error (an asynchronous runner given to a synchronous entry point),
        // never a consequence of the data.
        Poll::Pending => unreachable!("now(): the future waited; use an asynchronous caller"),
    }
}
