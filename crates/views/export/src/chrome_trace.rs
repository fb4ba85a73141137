//! The Chrome Trace Event Format export (thesis §4.2.6, figure 4.3): one process per global
//! rank, and on it one thread per track — NCCL kernels, their communicators' parallelism, and
//! the process's NVTX ranges — so Perfetto and `chrome://tracing` show every rank's
//! communication against its training phases, with figure 4.2's fields on hover.
//!
//! Times: `ts` and `dur` are microseconds (the format's unit) as floats, synchronised to the
//! lowest rank's clock (so ranks of different nodes line up); each kernel's `args` keep the
//! times its own clock read.

use crate::enriched::{kernel_records, KernelRecord, Records};
use crate::fields::{COMMUNICATOR_SIZE, MESSAGE_SIZE_BYTES, OP_COUNT_HEX, PARALLELISM_TYPE};
use load::Session;
use model::nsys::NvtxRange;
use pipeline::Analysis;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

/// Track (`tid`) of the NCCL kernels.
pub const TID_NCCL: u32 = 1;
/// Track of the parallelism classification of matched kernels.
pub const TID_PARALLELISM: u32 = 2;
/// First NVTX track; one per NVTX thread of the process, in thread-id order.
pub const TID_NVTX_FIRST: u32 = 3;

/// `cat` of the kernel events (the validator checks their `args` by it).
pub const CAT_KERNEL: &str = "nccl";
pub const CAT_PARALLELISM: &str = "parallelism";
pub const CAT_NVTX: &str = "nvtx";

/// The whole session as a Trace Event Format document.
pub fn chrome_trace(session: &Session, analysis: &Analysis) -> Value {
    trace_of(&kernel_records(session, analysis))
}

/// The document for already built records.
pub fn trace_of(records: &Records) -> Value {
    let tracks = Tracks::of(&records.nvtx);
    let mut events = tracks.names(&records.ranks);
    for k in &records.kernels {
        events.extend(kernel_events(k));
    }
    events.extend(
        records
            .nvtx
            .iter()
            .map(|(rank, r)| tracks.nvtx_event(*rank, r)),
    );
    json!({ "traceEvents": events, "displayTimeUnit": "ns" })
}

/// The document written as the kernel records come (one rank's at a time, ranks ascending:
/// [`crate::records_by_rank`]), to any writer: the text `serde_json::to_string` gives of
/// [`trace_of`]'s value. The ranks' hosts and the NVTX ranges ([`crate::rank_hosts`],
/// [`crate::nvtx_ranges`]) are small and given first: the tracks' names come before the events.
pub struct TraceWriter<'a, W: Write> {
    out: W,
    nvtx: &'a [(u32, NvtxRange)],
    tracks: Tracks,
    /// Whether an event was written (the next one needs a comma).
    any: bool,
}

impl<'a, W: Write> TraceWriter<'a, W> {
    /// Writes the document's start and every track's name.
    pub fn new(
        out: W,
        ranks: &BTreeMap<u32, String>,
        nvtx: &'a [(u32, NvtxRange)],
    ) -> std::io::Result<Self> {
        let mut w = TraceWriter {
            out,
            nvtx,
            tracks: Tracks::of(nvtx),
            any: false,
        };
        // A `json!` object prints its keys sorted: the document's two as every event's.
        w.out
            .write_all(br#"{"displayTimeUnit":"ns","traceEvents":["#)?;
        for e in w.tracks.names(ranks) {
            w.event(&e)?;
        }
        Ok(w)
    }

    /// Writes every record's events.
    pub fn write(&mut self, kernels: &[KernelRecord]) -> std::io::Result<()> {
        for k in kernels {
            for e in kernel_events(k) {
                self.event(&e)?;
            }
        }
        Ok(())
    }

    /// Writes the NVTX events and the document's end; gives the writer back.
    pub fn finish(mut self) -> std::io::Result<W> {
        for (rank, r) in self.nvtx {
            let e = self.tracks.nvtx_event(*rank, r);
            self.event(&e)?;
        }
        self.out.write_all(b"]}")?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn event(&mut self, event: &Value) -> std::io::Result<()> {
        if std::mem::replace(&mut self.any, true) {
            self.out.write_all(b",")?;
        }
        serde_json::to_writer(&mut self.out, event).map_err(std::io::Error::other)
    }
}

/// The NVTX threads of every rank, which number its NVTX tracks.
struct Tracks {
    /// NVTX threads per rank, numbered from [`TID_NVTX_FIRST`] in thread-id order.
    nvtx_threads: BTreeMap<u32, BTreeSet<u32>>,
}

impl Tracks {
    fn of(nvtx: &[(u32, NvtxRange)]) -> Tracks {
        let mut nvtx_threads: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
        for (rank, r) in nvtx {
            nvtx_threads.entry(*rank).or_default().insert(r.tid);
        }
        Tracks { nvtx_threads }
    }

    /// The track of an NVTX thread of `rank`.
    fn nvtx_tid(&self, rank: u32, thread: u32) -> u32 {
        let pos = self
            .nvtx_threads
            .get(&rank)
            .and_then(|s| s.iter().position(|&t| t == thread))
            .unwrap_or(0);
        TID_NVTX_FIRST + pos as u32
    }

    /// The metadata events naming every rank and its tracks.
    fn names(&self, ranks: &BTreeMap<u32, String>) -> Vec<Value> {
        let mut events = Vec::new();
        for (&rank, host) in ranks {
            events.push(meta(
                rank,
                0,
                "process_name",
                json!({ "name": format!("rank {rank} ({host})") }),
            ));
            events.push(meta(
                rank,
                0,
                "process_sort_index",
                json!({ "sort_index": rank }),
            ));
            events.push(meta(
                rank,
                TID_NCCL,
                "thread_name",
                json!({ "name": "NCCL operations" }),
            ));
            events.push(meta(
                rank,
                TID_PARALLELISM,
                "thread_name",
                json!({ "name": "Parallelism" }),
            ));
            for (i, t) in self
                .nvtx_threads
                .get(&rank)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let tid = TID_NVTX_FIRST + i as u32;
                events.push(meta(
                    rank,
                    tid,
                    "thread_name",
                    json!({ "name": format!("NVTX (thread {t})") }),
                ));
                events.push(meta(
                    rank,
                    tid,
                    "thread_sort_index",
                    json!({ "sort_index": tid }),
                ));
            }
        }
        events
    }

    /// One NVTX range's event.
    fn nvtx_event(&self, rank: u32, r: &NvtxRange) -> Value {
        let tid = self.nvtx_tid(rank, r.tid);
        let args = json!({ "domain": r.domain });
        match r.end_ns {
            Some(end) => complete(rank, tid, &r.text, CAT_NVTX, r.start_ns, end, args),
            // A mark or an unterminated range: an instant event on the thread.
            None => json!({
                "ph": "i", "s": "t", "pid": rank, "tid": tid, "name": r.text,
                "cat": CAT_NVTX, "ts": us(r.start_ns), "args": args,
            }),
        }
    }
}

/// A kernel's event, and its parallelism's when it has one.
fn kernel_events(k: &KernelRecord) -> Vec<Value> {
    let mut events = vec![complete(
        k.rank,
        TID_NCCL,
        &k.name,
        CAT_KERNEL,
        k.start_ns,
        k.end_ns,
        Value::Object(k.args.clone()),
    )];
    if let Some(p) = k.parallelism {
        let mut args = Map::new();
        for key in [
            PARALLELISM_TYPE,
            COMMUNICATOR_SIZE,
            OP_COUNT_HEX,
            MESSAGE_SIZE_BYTES,
        ] {
            args.insert(
                key.to_string(),
                k.args.get(key).cloned().unwrap_or(Value::Null),
            );
        }
        events.push(complete(
            k.rank,
            TID_PARALLELISM,
            p,
            CAT_PARALLELISM,
            k.start_ns,
            k.end_ns,
            Value::Object(args),
        ));
    }
    events
}

/// Nanoseconds to the format's microseconds.
fn us(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

fn meta(pid: u32, tid: u32, name: &str, args: Value) -> Value {
    json!({ "ph": "M", "pid": pid, "tid": tid, "name": name, "args": args })
}

fn complete(
    pid: u32,
    tid: u32,
    name: &str,
    cat: &str,
    start_ns: i64,
    end_ns: i64,
    args: Value,
) -> Value {
    json!({
        "ph": "X", "pid": pid, "tid": tid, "name": name, "cat": cat,
        "ts": us(start_ns), "dur": us((end_ns - start_ns).max(0)), "args": args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enriched::KernelRecord;
    use model::nsys::NvtxRange;

    #[test]
    fn tracks_metadata_and_units() {
        let mut records = Records::default();
        records.ranks.insert(3, "node02".into());
        records.kernels.push(KernelRecord {
            rank: 3,
            start_ns: 2_000,
            end_ns: 1_500, // a clock glitch: dur clamps to 0
            name: "NCCL kernel".into(),
            matched: false,
            parallelism: None,
            args: Map::new(),
        });
        let range = |tid, end_ns| NvtxRange {
            pid: 9,
            tid,
            start_ns: 1_000,
            end_ns,
            text: "iteration 0".into(),
            domain: None,
        };
        records.nvtx.push((3, range(20, Some(5_000))));
        records.nvtx.push((3, range(10, None)));
        let t = trace_of(&records);
        let ev = t["traceEvents"].as_array().unwrap();
        let find = |ph: &str, tid: u32| ev.iter().find(|e| e["ph"] == ph && e["tid"] == tid);
        let k = find("X", TID_NCCL).unwrap();
        assert_eq!(
            (k["pid"].as_u64(), k["ts"].as_f64(), k["dur"].as_f64()),
            (Some(3), Some(2.0), Some(0.0))
        );
        assert!(
            find("X", TID_PARALLELISM).is_none(),
            "unmatched kernels have no parallelism"
        );
        // NVTX threads 10 and 20 become tracks 3 and 4, in thread order.
        assert_eq!(find("i", TID_NVTX_FIRST).unwrap()["name"], "iteration 0");
        assert_eq!(
            find("X", TID_NVTX_FIRST + 1).unwrap()["dur"].as_f64(),
            Some(4.0)
        );
        let process = ev.iter().find(|e| e["name"] == "process_name").unwrap();
        assert_eq!(process["args"]["name"], "rank 3 (node02)");
        assert_eq!(t["displayTimeUnit"], "ns");
    }
}
