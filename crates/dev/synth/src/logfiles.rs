//! How a run's log lines become files: one per process, one for the whole run (every process
//! interleaved by time), or one per node (a launcher's stdout of that node's ranks); in a shared
//! file without launcher tags, some writes of two ranks cut into each other
//! ([`crate::realism::Realism::interleaved_writes`]).

use crate::realism::{self, LogFiles};
use crate::rng::Rng;
use crate::{log_name, Launcher, Plan, Proc};

/// A line of a shared file: (true time, rank, line number in the rank's output, text).
type Shared = (i64, u32, u64, String);

/// The log files of a run, filled one rank at a time.
pub(crate) struct Logs<'a> {
    pl: &'a Plan<'a>,
    /// Per-process files, in rank order.
    own: Vec<(String, Vec<u8>)>,
    /// Shared files: (name, lines), one for the run or one per node.
    shared: Vec<(String, Vec<Shared>)>,
}

impl<'a> Logs<'a> {
    pub(crate) fn new(pl: &'a Plan<'a>) -> Self {
        let shared = match (pl.cfg.realism.log_files, pl.cfg.combined_log) {
            (LogFiles::PerNode, _) => (0..pl.nodes)
                .map(|n| (format!("stdout_{}.log", Plan::host(n)), Vec::new()))
                .collect(),
            (LogFiles::Inherit, true) => vec![("nccl_debug_combined.log".into(), Vec::new())],
            (LogFiles::Inherit, false) => Vec::new(),
        };
        Logs {
            pl,
            own: Vec::new(),
            shared,
        }
    }

    /// Adds one rank's lines (in time order) and its cut last line.
    pub(crate) fn add(
        &mut self,
        p: &Proc,
        stamps: Vec<i64>,
        texts: Vec<String>,
        tail: Option<String>,
    ) {
        let file = match self.shared.len() {
            0 => None,
            1 => Some(0),
            _ => Some(p.node as usize),
        };
        let Some(f) = file else {
            let mut s = texts.join("\n");
            s.push('\n');
            if let Some(tl) = tail {
                s.push_str(&tl);
            }
            self.own.push((log_name(p), s.into_bytes()));
            return;
        };
        let lines = &mut self.shared[f].1;
        for (k, (t, l)) in stamps.into_iter().zip(texts).enumerate() {
            lines.push((t, p.rank, k as u64, l));
        }
        if let Some(tl) = tail {
            lines.push((i64::MAX, p.rank, u64::MAX, tl));
        }
    }

    /// The files: (name, bytes).
    pub(crate) fn finish(self) -> Vec<(String, Vec<u8>)> {
        let cfg = self.pl.cfg;
        let mut files = self.own;
        for (f, (name, mut lines)) in self.shared.into_iter().enumerate() {
            lines.sort_by_key(|a| (a.0, a.1, a.2));
            let mut texts: Vec<String> = lines.into_iter().map(|l| l.3).collect();
            if cfg.launcher == Launcher::None {
                interleave(&mut texts, cfg.realism.interleaved_writes, cfg.seed, f);
            }
            let mut s = String::new();
            let n = texts.len();
            for (k, l) in texts.into_iter().enumerate() {
                s.push_str(&l);
                if k + 1 < n || !cfg.imperfections.truncated_last_line {
                    s.push('\n');
                }
            }
            files.push((name, s.into_bytes()));
        }
        files
    }
}

/// Cuts `n` non-operation NCCL lines of a shared file by the next line (another rank's write),
/// the rest of the cut line following on its own line.
fn interleave(texts: &mut [String], n: u32, seed: u64, file: usize) {
    if n == 0 || texts.len() < 3 {
        return;
    }
    let mut rng = Rng::derive(seed, 0x1A7E_0000 + file as u64);
    for _ in 0..n {
        let i = rng.range(0, texts.len() as u64 - 1) as usize;
        let cuttable = |l: &str| l.contains("NCCL INFO ") && !l.contains(": opCount ");
        // The writer after the cut must be another process: its header differs.
        if !cuttable(&texts[i]) || head(&texts[i]) == head(&texts[i + 1]) {
            continue;
        }
        if let Some((glued, rest)) = realism::interleave(&texts[i], &texts[i + 1], &mut rng) {
            texts[i] = glued;
            texts[i + 1] = rest;
        }
    }
}

/// The `host:pid` of a line's (last) header.
fn head(line: &str) -> &str {
    let pre = line.rfind(" [").map_or("", |e| &line[..e]);
    let tok = pre.rsplit(' ').next().unwrap_or("");
    tok.rsplit_once(':').map_or(tok, |(hp, _)| hp)
}
