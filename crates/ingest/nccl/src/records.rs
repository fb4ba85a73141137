//! What a parsed log holds besides the shared [`model::log`] records.

use crate::facts::{ConfigLine, FailedCall};
use crate::framework::FrameworkLine;
pub use crate::rings::{Connection, TreeLinks};
use crate::topo::Topology;
use model::log::{CommInit, LogOps, ProcessKey, SourceLine};
use model::{Diagnostic, OpType};
use std::collections::BTreeMap;

/// Everything taken from one NCCL debug log.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedLog {
    pub path: String,
    pub file_index: u32,
    /// One per per-collective line, in file order (duplicates kept: they count), stored
    /// compactly; reading them gives whole [`model::log::LogOp`] values.
    pub ops: LogOps,
    /// One per `Init COMPLETE` line, in file order.
    pub inits: Vec<CommInit>,
    /// One per `Init START` line, in file order (one without a later `Init COMPLETE` of its
    /// communicator is also noted in the diagnostics).
    pub init_starts: Vec<CommInit>,
    /// Every process that printed a line, in order of first appearance.
    pub processes: Vec<ProcessInfo>,
    /// Channel counts and ring orders, per communicator set-up (where printed).
    pub channels: Vec<CommChannels>,
    pub init_timings: Vec<InitTiming>,
    pub destroys: Vec<CommDestroy>,
    /// `NCCL WARN` lines: the run's own warnings.
    pub warnings: Vec<RunWarning>,
    /// Set-up facts (`NCCL_*` settings, network, addresses), in file order.
    pub config: Vec<ConfigLine>,
    /// `file.cc:123 -> N` lines: calls inside NCCL that failed, in file order.
    pub failed_calls: Vec<FailedCall>,
    /// The framework's own lines in the file (PyTorch's watchdog and NCCL errors), in file order.
    pub framework: Vec<FrameworkLine>,
    /// Problems with the log itself (garbled, truncated, unattributable lines, duplicates).
    pub diagnostics: Vec<Diagnostic>,
    pub counters: Counters,
    /// The first NCCL version the log names (banner or INFO line).
    pub nccl_version: Option<String>,
}

impl ParsedLog {
    /// Renumbers the log as input file `index` of its session: every record's source line
    /// names the file by this index (a log parsed ahead, on another worker, gets its index
    /// when it joins the session).
    pub fn set_file_index(&mut self, index: u32) {
        self.file_index = index;
        self.ops.set_file(index);
        let sources = self
            .inits
            .iter_mut()
            .chain(self.init_starts.iter_mut())
            .map(|r| &mut r.source)
            .chain(self.processes.iter_mut().flat_map(|p| {
                std::iter::once(&mut p.first_line).chain(p.topology.as_mut().map(|t| &mut t.source))
            }))
            .chain(self.channels.iter_mut().map(|r| &mut r.source))
            .chain(self.init_timings.iter_mut().map(|r| &mut r.source))
            .chain(self.destroys.iter_mut().map(|r| &mut r.source))
            .chain(self.warnings.iter_mut().map(|r| &mut r.source))
            .chain(self.config.iter_mut().map(|r| &mut r.source))
            .chain(self.failed_calls.iter_mut().map(|r| &mut r.source))
            .chain(self.framework.iter_mut().map(|r| &mut r.source));
        for s in sources {
            s.file = index;
        }
    }

    /// Per-collective lines per operation, duplicates included (the contract's `ops_by_type`).
    pub fn ops_by_type(&self) -> BTreeMap<OpType, u64> {
        let mut m = BTreeMap::new();
        for op in (0..self.ops.len()).filter_map(|i| self.ops.op_type(i)) {
            *m.entry(op).or_insert(0) += 1;
        }
        m
    }

    pub fn process(&self, key: &ProcessKey) -> Option<&ProcessInfo> {
        self.processes.iter().find(|p| &p.process == key)
    }
}

/// One `host:pid`.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessInfo {
    pub process: ProcessKey,
    /// From `NCCL version 2.18.3+cuda12.2`, as INFO line or bare banner.
    pub nccl_version: Option<String>,
    /// The first `=== System : ...` block this process printed.
    pub topology: Option<Topology>,
    pub first_line: SourceLine,
}

/// Channel lines of one communicator set-up, tied to the communicator by the printing thread.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct CommChannels {
    pub process: ProcessKey,
    pub tid: u32,
    /// `None` when the log never named the communicator on that thread.
    pub comm: Option<u64>,
    pub rank: Option<u32>,
    pub nranks: Option<u32>,
    /// From `Channel cc/NN` (NN) or, failing that, `N coll channels`, or (2.4, which prints
    /// `Channel cc : ranks`) the number of channels with a ring order.
    pub nchannels: Option<u32>,
    pub coll_channels: Option<u32>,
    pub nvls_channels: Option<u32>,
    pub p2p_channels: Option<u32>,
    /// `Channel cc/nn : r r r`, one per channel, in printed order.
    pub rings: Vec<RingOrder>,
    /// `Ring cc : prev -> me -> next`.
    pub ring_neighbors: Vec<RingNeighbors>,
    /// `Trees [cc] d/d/d->me->up ...` (or older `Tree cc : up -> me -> d/d/d`), per channel.
    pub trees: Vec<TreeLinks>,
    /// `Channel cc/nn : a[gpu] -> b[gpu] via T`: each channel's transport to its peers.
    pub connections: Vec<Connection>,
    /// The first line of the group.
    pub source: SourceLine,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingOrder {
    pub channel: u32,
    pub order: Vec<u32>,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingNeighbors {
    pub channel: u32,
    pub prev: i64,
    pub rank: i64,
    pub next: i64,
}

/// `Init timings` (2.22+), seconds.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct InitTiming {
    pub process: ProcessKey,
    pub tid: u32,
    /// `ncclCommInitRank`, `ncclCommInitRankConfig_impl`, ... (2.23+).
    pub func: Option<String>,
    pub rank: u32,
    pub nranks: u32,
    pub total_s: f64,
    /// `(kernels 0.42, bootstrap 0.07, ...)` in printed order.
    pub phases: Vec<(String, f64)>,
    pub source: SourceLine,
}

/// `- Destroy COMPLETE` / `- Abort COMPLETE`.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommDestroy {
    pub process: ProcessKey,
    pub comm: u64,
    pub rank: Option<u32>,
    pub abort: bool,
    pub source: SourceLine,
}

/// One `NCCL WARN` line.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunWarning {
    pub process: Option<ProcessKey>,
    pub cuda_dev: Option<u32>,
    /// `[2026-04-28 14:14:49]` or epoch text, as printed.
    pub timestamp: Option<String>,
    pub timestamp_ns: Option<i64>,
    /// The text after `NCCL WARN `.
    pub message: String,
    pub source: SourceLine,
}

/// Line accounting, for the input summary.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    pub bytes: u64,
    pub total_lines: u64,
    pub blank_lines: u64,
    /// Lines with an `NCCL INFO`/`NCCL WARN` marker, plus bare `NCCL version` banners.
    pub nccl_lines: u64,
    /// Non-blank lines that gave nothing: foreign text, unattributable NCCL lines and NCCL
    /// lines too garbled to read. Each is listed in the diagnostics (see [`crate::SKIPPED`]).
    pub skipped_lines: u64,
    pub op_lines: u64,
    pub init_lines: u64,
    /// Recognised tuning lines, attached or not.
    pub tuning_lines: u64,
    pub tuning_attached: u64,
    pub warn_lines: u64,
    pub duplicate_ops: u64,
    /// Merged, truncated or malformed NCCL lines.
    pub garbled_lines: u64,
    /// Lines of the framework (PyTorch's watchdog and errors) read into
    /// [`ParsedLog::framework`]: not NCCL lines, not skipped either.
    pub framework_lines: u64,
    /// 1 when the file ends inside its last line (no line end after it: a write cut there, or a
    /// file saved without a final newline), else 0. Like `bytes`, a fact about the bytes: the
    /// records are the same either way.
    pub unterminated_lines: u64,
}
