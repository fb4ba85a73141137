//! Streaming writer: generates and writes a run one rank at a time, in bounded memory.
//!
//! Why: [`crate::generate`] keeps every log line, kernel row and truth entry of every rank in
//! memory, which for `large-64` (64 ranks × 10⁵ operations) is ~10 GB. Here only the schedule and
//! simulated times of all ranks stay resident (the simulation synchronises ranks, so it needs
//! them all); text, kernel rows and truth entries of one rank are produced, written and dropped:
//! the log through a `BufWriter`, kernels into the node's SQLite report in one transaction per
//! rank, truth kernels appended to `truth.json` as they come. A worker thread generates rank r+1
//! while rank r is written (at most three ranks' outputs alive: written, queued, in the making).
//!
//! Differences from [`crate::write_run`] (same content otherwise, same seed → same logs):
//! - report rows are in rank order, not sorted by start time across a node (`gridId` follows);
//! - `truth.json` lists kernels in the compact form `{pid, correlation_id, log_op}` (the contract
//!   fields; `"kernels_compact": true` says so) and puts `ranks` after `kernels`;
//! - a combined log needs all ranks' lines at once, so such configs fall back to the in-memory path.

use crate::truth::{LogOpRef, Truth, TruthKernel, TruthRank};
use crate::write::{finish_report, ReportRows};
use crate::{log_name, plan, rank_out, Plan, RankOut, RunConfig};
use rusqlite::Connection;
use serde::Serialize;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// What a streaming write produced (figures for the scale report).
#[derive(Debug, Clone, Default)]
pub struct StreamStats {
    pub ranks: u32,
    /// Per-collective operations (log lines counted as the truth counts them), all ranks.
    pub ops: u64,
    pub log_bytes: u64,
    pub report_bytes: u64,
    pub truth_bytes: u64,
    pub kernels: u64,
    /// Schedule + timing simulation (held in memory).
    pub plan_time: Duration,
    /// Everything: plan, text, reports, truth.
    pub total_time: Duration,
    /// Time the worker thread spent producing the ranks' log text, kernel rows and truth
    /// (concurrent with the writing; excludes SQLite, file and JSON output).
    pub generate_time: Duration,
}

/// Compact truth kernel: the contract fields only.
#[derive(Serialize)]
struct CompactKernel<'a> {
    pid: u32,
    correlation_id: u32,
    log_op: &'a Option<LogOpRef>,
}

fn sql_err(e: rusqlite::Error) -> io::Error {
    io::Error::other(e)
}

fn json<T: Serialize>(w: &mut impl Write, key: &str, v: &T) -> io::Result<()> {
    write!(w, "\"{key}\":")?;
    serde_json::to_writer(&mut *w, v).map_err(io::Error::other)?;
    w.write_all(b",")
}

/// Generates preset `name` and writes it to `out_dir` rank by rank (see the module doc).
pub fn write_preset_streaming(name: &str, out_dir: &Path) -> io::Result<StreamStats> {
    let p = crate::preset(name).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("unknown synth preset `{name}`"),
        )
    })?;
    write_streaming(&p.config, Some(p.name), out_dir)
}

/// Generates `cfg` and writes it to `out_dir` rank by rank.
pub fn write_streaming(
    cfg: &RunConfig,
    preset: Option<&str>,
    out_dir: &Path,
) -> io::Result<StreamStats> {
    let t0 = Instant::now();
    std::fs::create_dir_all(out_dir)?;
    // A combined log interleaves every rank, and per-rank reports are written from whole node
    // reports: both take the in-memory path, as do the realism knobs (few and small runs).
    if cfg.combined_log || cfg.report_per_rank || cfg.realism.active() {
        return write_in_memory(cfg, preset, out_dir, t0);
    }
    let pl = plan(cfg);
    let plan_time = t0.elapsed();
    let log_names: Vec<String> = pl.procs.iter().map(log_name).collect();
    let skel = crate::truth_skeleton(&pl, preset, log_names);

    let truth_path = out_dir.join("truth.json");
    let mut tw = BufWriter::with_capacity(1 << 20, File::create(&truth_path)?);
    write_truth_head(&mut tw, &skel)?;
    let mut w = Writer {
        pl: &pl,
        out_dir,
        nccl: cfg.emits_nccl_nvtx(),
        session_start_utc_ns: skel.session_start_utc_ns,
        st: StreamStats {
            ranks: pl.procs.len() as u32,
            plan_time,
            ..StreamStats::default()
        },
        tw,
        first_kernel: true,
        ranks: Vec::with_capacity(pl.procs.len()),
        unmatched_log_ops: 0,
        unmatched_kernels: 0,
    };
    // Two stages: a worker thread produces the ranks' outputs in rank order while this thread
    // writes the previous one (logs, SQLite, truth); the bounded channel keeps at most three ranks
    // (written, queued, in the making) in memory besides the plan.
    std::thread::scope(|scope| -> io::Result<()> {
        let (tx_out, rx_out) = std::sync::mpsc::sync_channel::<(RankOut, Duration)>(1);
        let pl_ref = &pl;
        scope.spawn(move || {
            for p in &pl_ref.procs {
                let tg = Instant::now();
                let out = rank_out(pl_ref, p);
                if tx_out.send((out, tg.elapsed())).is_err() {
                    return; // the writer failed and hung up
                }
            }
        });
        for node in 0..pl.nodes {
            w.node(node, &rx_out)?;
        }
        Ok(())
    })?;
    let Writer {
        mut st,
        mut tw,
        ranks,
        unmatched_log_ops,
        unmatched_kernels,
        ..
    } = w;
    tw.write_all(b"],")?;
    json(&mut tw, "ranks", &ranks)?;
    json(&mut tw, "unmatched_log_ops", &unmatched_log_ops)?;
    json(&mut tw, "unmatched_kernels", &unmatched_kernels)?;
    tw.write_all(b"\"files\":")?;
    serde_json::to_writer(&mut tw, &skel.files).map_err(io::Error::other)?;
    tw.write_all(b"}")?;
    tw.flush()?;
    drop(tw);
    st.truth_bytes = std::fs::metadata(&truth_path)?.len();
    st.total_time = t0.elapsed();
    Ok(st)
}

/// The in-memory path ([`crate::write_run`]) for the configurations streaming cannot write,
/// with the figures it can give.
fn write_in_memory(
    cfg: &RunConfig,
    preset: Option<&str>,
    out_dir: &Path,
    t0: Instant,
) -> io::Result<StreamStats> {
    let run = crate::generate_named(cfg, preset);
    crate::write_run(&run, out_dir)?;
    Ok(StreamStats {
        ranks: run.truth.ranks.len() as u32,
        ops: run
            .truth
            .ranks
            .iter()
            .map(|r| r.ops_by_type.values().sum::<u64>())
            .sum(),
        log_bytes: run.files.iter().map(|f| f.1.len() as u64).sum(),
        kernels: run.truth.kernels.len() as u64,
        total_time: t0.elapsed(),
        ..StreamStats::default()
    })
}

/// `truth.json` up to the opening of its `kernels` list: every field known before the ranks.
fn write_truth_head(tw: &mut impl Write, skel: &Truth) -> io::Result<()> {
    tw.write_all(b"{")?;
    json(tw, "preset", &skel.preset)?;
    json(tw, "nccl_version", &skel.nccl_version)?;
    json(tw, "launcher", &skel.launcher)?;
    json(tw, "seed", &skel.seed)?;
    json(tw, "t0_ns", &skel.t0_ns)?;
    json(tw, "session_start_utc_ns", &skel.session_start_utc_ns)?;
    json(tw, "layout", &skel.layout)?;
    json(tw, "model", &skel.model)?;
    json(
        tw,
        "microbatches_per_iteration",
        &skel.microbatches_per_iteration,
    )?;
    json(tw, "communicators", &skel.communicators)?;
    json(tw, "clocks", &skel.clocks)?;
    json(tw, "kernels_compact", &true)?;
    tw.write_all(b"\"kernels\":[")
}

/// The writing side: the run's plan, and what it has written and gathered so far (the truth
/// kernels go straight to `tw`; the ranks and counts go in at the end).
struct Writer<'a> {
    pl: &'a Plan<'a>,
    out_dir: &'a Path,
    nccl: bool,
    session_start_utc_ns: i64,
    st: StreamStats,
    tw: BufWriter<File>,
    first_kernel: bool,
    ranks: Vec<TruthRank>,
    unmatched_log_ops: u64,
    unmatched_kernels: u64,
}

impl Writer<'_> {
    /// Writes the report of `node` and the logs and truth of its ranks, which come from
    /// `rx_out` in rank order.
    fn node(&mut self, node: u32, rx_out: &Receiver<(RankOut, Duration)>) -> io::Result<()> {
        let cfg = self.pl.cfg;
        let path = self
            .out_dir
            .join(format!("report_{}.sqlite", Plan::host(node)));
        if path.exists() {
            std::fs::remove_file(&path)?;
        }
        let mut conn = Connection::open(&path).map_err(sql_err)?;
        // Nothing to recover on a crash (the file is regenerated), so skip the journal.
        conn.execute_batch("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")
            .map_err(sql_err)?;
        conn.execute_batch(cfg.schema.ddl()).map_err(sql_err)?;
        let tx = conn.transaction().map_err(sql_err)?;
        let mut rows = ReportRows::begin(&tx, cfg.schema, &self.pl.node_processes(node), self.nccl)
            .map_err(sql_err)?;
        tx.commit().map_err(sql_err)?;
        for p in self.pl.procs.iter().filter(|p| p.node == node) {
            let (out, took) = rx_out
                .recv()
                .map_err(|_| io::Error::other("rank generator stopped"))?;
            self.st.generate_time += took;
            self.st.log_bytes += write_log(&self.out_dir.join(log_name(p)), &out)?;

            let tx = conn.transaction().map_err(sql_err)?;
            rows.insert(&tx, &out.krows, &out.nvtx).map_err(sql_err)?;
            rows.insert_nccl(&tx, &out.nccl_nvtx).map_err(sql_err)?;
            tx.commit().map_err(sql_err)?;

            self.truth_kernels(&out.kernels)?;
            self.st.kernels += out.kernels.len() as u64;
            self.st.ops += out.truth_rank.ops_by_type.values().sum::<u64>();
            self.unmatched_log_ops += out.unmatched_log_ops;
            self.unmatched_kernels += out.unmatched_kernels;
            self.ranks.push(out.truth_rank);
        }
        let tx = conn.transaction().map_err(sql_err)?;
        finish_report(
            &tx,
            &Plan::host(node),
            cfg.schema,
            self.session_start_utc_ns,
            self.pl.duration_ns(node),
            self.nccl,
        )
        .map_err(sql_err)?;
        tx.commit().map_err(sql_err)?;
        drop(conn);
        self.st.report_bytes += std::fs::metadata(&path)?.len();
        Ok(())
    }

    /// Appends one rank's truth kernels to the `kernels` list of `truth.json`.
    fn truth_kernels(&mut self, kernels: &[TruthKernel]) -> io::Result<()> {
        for k in kernels {
            if !self.first_kernel {
                self.tw.write_all(b",")?;
            }
            self.first_kernel = false;
            serde_json::to_writer(
                &mut self.tw,
                &CompactKernel {
                    pid: k.pid,
                    correlation_id: k.correlation_id,
                    log_op: &k.log_op,
                },
            )
            .map_err(io::Error::other)?;
        }
        Ok(())
    }
}

/// Writes one rank's log (its lines, then the cut last line if any) to `path`; returns the
/// bytes written.
fn write_log(path: &Path, out: &RankOut) -> io::Result<u64> {
    let mut bytes = 0;
    let mut lw = BufWriter::with_capacity(1 << 20, File::create(path)?);
    for l in &out.texts {
        lw.write_all(l.as_bytes())?;
        lw.write_all(b"\n")?;
        bytes += l.len() as u64 + 1;
    }
    if let Some(tl) = &out.tail {
        lw.write_all(tl.as_bytes())?;
        bytes += tl.len() as u64;
    }
    lw.flush()?;
    Ok(bytes)
}
