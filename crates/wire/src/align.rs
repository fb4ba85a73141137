//! An alignment job ([`align::Job`] and its [`AlignConfig`]) and its result
//! ([`ProcessAlignment`]) as bytes: what the page's loading worker posts to its alignment
//! workers and what they post back (`app/src/align_pool.rs`). Postcard over the records' serde
//! derives: compact, and exact (floats travel as their bits), so a job run from its bytes
//! gives what the job gives in place.
//!
//! [`ThroughBytes`] runs jobs through this encoding without a browser, spread round-robin over
//! a number of simulated workers: the tests' stand-in for the page's pool.

use align::{AlignConfig, Job, JobsFuture, ProcessAlignment, Runner};
use model::log::LogOp;
use model::nsys::{Kernel, KernelName};
use serde::{Deserialize, Serialize};

/// A job as encoded: borrowed from the caller's records.
#[derive(Serialize)]
struct JobRef<'a> {
    cfg: &'a AlignConfig,
    log_ops: &'a [LogOp],
    kernels: &'a [Kernel],
    names: &'a [Option<KernelName>],
    hints: &'a [Option<(u64, u64)>],
}

/// A job as decoded: owned by the worker that runs it (fields in [`JobRef`]'s order).
#[derive(Debug, Deserialize)]
pub struct OwnedJob {
    cfg: AlignConfig,
    log_ops: Vec<LogOp>,
    kernels: Vec<Kernel>,
    names: Vec<Option<KernelName>>,
    hints: Vec<Option<(u64, u64)>>,
}

impl OwnedJob {
    /// [`Job::run`] of the job these bytes were made from.
    pub fn run(&self) -> ProcessAlignment {
        Job {
            log_ops: &self.log_ops,
            kernels: &self.kernels,
            names: &self.names,
            hints: &self.hints,
        }
        .run(&self.cfg)
    }
}

/// The bytes of `job` with `cfg`.
pub fn encode_job(job: &Job<'_>, cfg: &AlignConfig) -> Vec<u8> {
    let r = JobRef {
        cfg,
        log_ops: job.log_ops,
        kernels: job.kernels,
        names: job.names,
        hints: job.hints,
    };
    // Serialising plain records into a growing vector has no failure mode.
    postcard::to_allocvec(&r).unwrap_or_default()
}

/// A job from [`encode_job`]'s bytes.
pub fn decode_job(bytes: &[u8]) -> Result<OwnedJob, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("an alignment job that cannot be read: {e}"))
}

/// The bytes of a job's result.
pub fn encode_result(result: &ProcessAlignment) -> Vec<u8> {
    postcard::to_allocvec(result).unwrap_or_default()
}

/// A result from [`encode_result`]'s bytes.
pub fn decode_result(bytes: &[u8]) -> Result<ProcessAlignment, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("an alignment result that cannot be read: {e}"))
}

/// Runs every job from its bytes and returns the result decoded from its bytes, dealing the
/// jobs round-robin to `workers` simulated workers and collecting them worker by worker, so
/// that the results arrive out of job order as they do from the page's pool.
#[derive(Debug, Clone, Copy)]
pub struct ThroughBytes {
    pub workers: usize,
}

impl Runner for ThroughBytes {
    fn run<'a>(&'a self, jobs: &'a [Job<'a>], cfg: &'a AlignConfig) -> JobsFuture<'a> {
        let workers = self.workers.max(1);
        let mut out: Vec<Option<ProcessAlignment>> = jobs.iter().map(|_| None).collect();
        for w in (0..workers).rev() {
            for (i, job) in jobs.iter().enumerate().filter(|(i, _)| i % workers == w) {
                let bytes = encode_job(job, cfg);
                let result = decode_job(&bytes).map(|j| encode_result(&j.run()));
                out[i] = result.and_then(|r| decode_result(&r)).ok();
            }
        }
        // A job whose bytes failed (never, for records this crate encoded) is run in place.
        let done = out
            .into_iter()
            .zip(jobs)
            .map(|(r, j)| r.unwrap_or_else(|| j.run(cfg)))
            .collect();
        Box::pin(std::future::ready(done))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bytes in [&b""[..], b"\xff\xff\xff\xff\xff", b"not a job at all"] {
            assert!(decode_job(bytes).is_err());
            assert!(decode_result(bytes).is_err());
        }
    }

    #[test]
    fn a_truncated_job_is_an_error() {
        let job = Job {
            log_ops: &[],
            kernels: &[],
            names: &[],
            hints: &[Some((7, 9)), None],
        };
        let bytes = encode_job(&job, &AlignConfig::rich());
        assert!(decode_job(&bytes).is_ok());
        for cut in 0..bytes.len() {
            assert!(decode_job(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
