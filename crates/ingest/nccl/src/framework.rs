//! Lines the training framework prints into the same files as NCCL: PyTorch's
//! `ProcessGroupNCCL` watchdog and its NCCL errors. They carry no `NCCL INFO`/`NCCL WARN`
//! marker, so the parser used to skip them as foreign text; they say which collective a rank
//! waited in when the job died, so they are read here (a line at a time, no state).
//!
//! The shapes, as `torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp` prints them (glog's
//! `[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] ` header, torchrun's `[rank0]:` before
//! it, a Ray worker's `(RayWorkerWrapper pid=270291, ip=10.175.94.190) ` before that):
//! ```text
//! [rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.
//! [E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=158, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800872 milliseconds before timing out.
//! [rank3]:[E219 08:58:32.606693321 ProcessGroupNCCL.cpp:1834] [PG ID 2 PG GUID 3 Rank 3] Timeout at NCCL work: 31, last enqueued NCCL work: 58, last completed NCCL work: 30.
//! [rank1]:[E1003 18:37:01.833575187 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at work: 6463, last enqueued NCCL work: 6463, last completed NCCL work: 6462.
//! [PG ID 0 PG GUID 0(default_pg) Rank 1] Received a dump signal due to a collective timeout from rank 0 and we will try our best to dump the debug info. Last enqueued NCCL work: 1155873, last completed NCCL work: 1155873.
//! [PG ID 0 PG GUID 0(default_pg) Rank 0] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives. ...
//! [rank1]:[E409 05:10:01.930967482 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered
//! torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1
//! ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.
//! Last error:
//! ```
//! The line after `Last error:` (NCCL's own last warning, without its header) is joined to it by
//! the parser, which alone knows the lines' order.

use crate::scan;
use model::log::{ProcessKey, SourceLine};

/// One recognised framework line.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct FrameworkLine {
    /// torchrun's `[rank3]:` prefix: the process's global rank.
    pub rank: Option<u32>,
    /// `[Rank 3]`, or the rank of a `[PG ... Rank 3]` prefix: the rank inside the process group.
    pub group_rank: Option<u32>,
    pub group: Option<ProcessGroup>,
    /// A Ray worker's `(... pid=270291, ip=...)` prefix.
    pub pid: Option<u32>,
    /// glog's level, date and time (`E1218 20:27:21.426415540`), as printed (no year).
    pub stamp: Option<String>,
    pub event: FrameworkEvent,
    /// The process the line belongs to: the file's only NCCL process so far, or the one whose
    /// pid a Ray prefix names; `None` when the file does not decide.
    pub process: Option<ProcessKey>,
    pub source: SourceLine,
}

/// The process group a line names (`[PG ID 2 PG GUID 3(desc) Rank 1]`, older `[PG 0 (desc) Rank 1]`).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessGroup {
    pub id: String,
    pub guid: Option<String>,
    /// `default_pg`, a Megatron group name, ...
    pub desc: Option<String>,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub enum FrameworkEvent {
    /// `Watchdog caught collective operation timeout: WorkNCCL(...) ran for N milliseconds`.
    WatchdogTimeout {
        /// The process group's sequence number of the collective (`SeqNum`).
        seq: u64,
        /// `ALLREDUCE`, `_ALLGATHER_BASE`, ... as printed.
        op_type: String,
        numel_in: Option<u64>,
        numel_out: Option<u64>,
        timeout_ms: Option<u64>,
        ran_ms: Option<u64>,
    },
    /// `Timeout at NCCL work: N`, `Exception ... detected by watchdog at work: N` or `Received a
    /// dump signal ... from rank R`, each with the last enqueued and completed work.
    WorkStatus {
        cause: WorkCause,
        work: Option<u64>,
        last_enqueued: Option<i64>,
        last_completed: Option<i64>,
    },
    /// `ProcessGroupNCCL's watchdog got stuck for N seconds`.
    WatchdogStuck { seconds: Option<u64> },
    /// An NCCL or CUDA error the framework reports (an async error the watchdog caught, a
    /// `DistBackendError`, `ncclRemoteError: ...`), as printed.
    Error { message: String },
}

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkCause {
    Timeout,
    Exception,
    DumpSignal { from_rank: Option<u32> },
}

/// What stays of an error message: framework errors repeat whole tracebacks' worth of text.
const MESSAGE_MAX: usize = 400;

const TIMEOUT: &[u8] = b"Watchdog caught collective operation timeout";
const STUCK: &[u8] = b"watchdog got stuck for ";

/// Reads a line that has no NCCL marker as a framework line, if it is one.
pub(crate) fn read(line: &[u8]) -> Option<FrameworkLine> {
    let event = event(line)?;
    let group = scan::find(line, b"[PG ").and_then(|at| pg_prefix(line.get(at..)?));
    let group_rank = group
        .as_ref()
        .map(|g| g.1)
        .or_else(|| bracket_number(line, b"[Rank "));
    Some(FrameworkLine {
        rank: bracket_number(line, b"[rank"),
        group_rank,
        group: group.map(|g| g.0),
        pid: ray_pid(line),
        stamp: glog_stamp(line),
        event,
        process: None,
        source: SourceLine::default(),
    })
}

fn event(line: &[u8]) -> Option<FrameworkEvent> {
    if let Some(at) = scan::find(line, TIMEOUT) {
        return watchdog_timeout(line.get(at..)?);
    }
    if let Some(s) = work_status(line) {
        return Some(s);
    }
    if let Some(at) = scan::find(line, STUCK) {
        let n = line.get(at + STUCK.len()..).and_then(leading_number);
        return Some(FrameworkEvent::WatchdogStuck { seconds: n });
    }
    error_message(line).map(|message| FrameworkEvent::Error { message })
}

/// `Watchdog caught ...: WorkNCCL(SeqNum=1, OpType=BROADCAST, ...) ran for 600081 milliseconds`.
fn watchdog_timeout(from: &[u8]) -> Option<FrameworkEvent> {
    let args_at = scan::find(from, b"WorkNCCL(")? + b"WorkNCCL(".len();
    let args = from.get(args_at..)?;
    let close = scan::find_byte(args, b')').map_or(args.len(), |c| {
        // `Timeout(ms)=` holds a `)` of its own: the arguments end at the `)` after it.
        match scan::find(args, b"Timeout(ms)=") {
            Some(t) if t < c => scan::find_byte(args.get(t + 12..).unwrap_or_default(), b')')
                .map_or(args.len(), |e| t + 12 + e),
            _ => c,
        }
    });
    let inside = args.get(..close)?;
    let seq = key_number(inside, b"SeqNum=")?;
    let op_type = inside
        .get(scan::find(inside, b"OpType=")? + 7..)
        .map(|v| v.split(|c| *c == b',').next().unwrap_or_default())
        .map(|v| scan::text(v.trim_ascii()))?;
    let ran_ms = scan::find(args, b"ran for ")
        .and_then(|at| args.get(at + 8..))
        .and_then(leading_number);
    Some(FrameworkEvent::WatchdogTimeout {
        seq,
        op_type,
        numel_in: key_number(inside, b"NumelIn="),
        numel_out: key_number(inside, b"NumelOut="),
        timeout_ms: key_number(inside, b"Timeout(ms)="),
        ran_ms,
    })
}

/// `Timeout at NCCL work: N, last enqueued NCCL work: N, last completed NCCL work: N.`, the
/// `Exception ... detected by watchdog at work: N` form and the dump-signal form.
fn work_status(line: &[u8]) -> Option<FrameworkEvent> {
    let lower_enqueued = scan::find(line, b"ast enqueued NCCL work: ")?;
    let (cause, work) = if let Some(at) = scan::find(line, b"Timeout at NCCL work: ") {
        (
            WorkCause::Timeout,
            line.get(at + 22..).and_then(leading_number),
        )
    } else if let Some(at) = scan::find(line, b"detected by watchdog at work: ") {
        (
            WorkCause::Exception,
            line.get(at + 30..).and_then(leading_number),
        )
    } else if let Some(at) = scan::find(line, b"due to a collective timeout from rank ") {
        let from = line.get(at + 38..).and_then(leading_number);
        let from_rank = from.and_then(|r| u32::try_from(r).ok());
        (WorkCause::DumpSignal { from_rank }, None)
    } else if scan::find(line, b"collective timeout").is_some() {
        (WorkCause::DumpSignal { from_rank: None }, None)
    } else {
        return None;
    };
    let enqueued = line.get(lower_enqueued + 24..).and_then(leading_signed);
    let completed = scan::find(line, b"ast completed NCCL work: ")
        .and_then(|at| line.get(at + 25..))
        .and_then(leading_signed);
    Some(FrameworkEvent::WorkStatus {
        cause,
        work,
        last_enqueued: enqueued,
        last_completed: completed,
    })
}

/// The framework's report of an NCCL or CUDA error, from the first of these phrases on.
fn error_message(line: &[u8]) -> Option<String> {
    const PHRASES: [&[u8]; 7] = [
        b"watchdog thread terminated with exception: ",
        b"NCCL communicator was aborted",
        b"NCCL error in: ",
        b"NCCL error: ",
        b"Detected mismatch between collectives on ranks",
        b"Error: CUDA error: ",
        b"Last error:",
    ];
    let body = strip_prefixes(line);
    let start = if let Some(at) = PHRASES.iter().find_map(|p| scan::find(body, p)) {
        // The terminated-with-exception line's message is what follows it.
        let p = b"watchdog thread terminated with exception: ";
        match scan::find(body, p) {
            Some(t) if t == at => at + p.len(),
            _ => at,
        }
    } else if nccl_result_name(body) || body.starts_with(b"CUDA error: ") {
        0
    } else {
        return None;
    };
    let msg = body.get(start..)?.trim_ascii();
    if msg.is_empty() {
        return None;
    }
    let mut s = scan::text(msg.get(..MESSAGE_MAX).unwrap_or(msg));
    if msg.len() > MESSAGE_MAX {
        s.push('…');
    }
    Some(s)
}

/// `ncclSystemError: ...`, `ncclRemoteError: ...` (NCCL's result names, as PyTorch prints them).
fn nccl_result_name(body: &[u8]) -> bool {
    let word_end = body
        .iter()
        .position(|c| !c.is_ascii_alphanumeric())
        .unwrap_or(body.len());
    let (word, rest) = body.split_at(word_end);
    word.starts_with(b"nccl")
        && word.len() > 4
        && (word.ends_with(b"Error") || word.ends_with(b"Usage") || word.ends_with(b"Argument"))
        && rest.starts_with(b":")
}

/// The line after the launcher's, torchrun's and glog's prefixes.
fn strip_prefixes(line: &[u8]) -> &[u8] {
    let mut b = line.trim_ascii_start();
    // `(RayWorkerWrapper pid=1, ip=...) `
    if b.starts_with(b"(") {
        if let Some(close) = scan::find(b, b") ") {
            b = b.get(close + 2..).unwrap_or_default();
        }
    }
    // `[rank0]:` then glog's `[E1218 20:27:21.4 file.cpp:1] `, each optional.
    for _ in 0..2 {
        let t = b.trim_ascii_start();
        if t.starts_with(b"[rank") || (t.starts_with(b"[") && glog_header(t).is_some()) {
            match scan::find(t, b"]") {
                Some(close) => b = t.get(close + 1..).unwrap_or_default(),
                None => break,
            }
            b = b.strip_prefix(b":").unwrap_or(b);
        }
    }
    b.trim_ascii_start()
}

/// glog's header at the start of `b`: `[E1218 20:27:21.426 file.cpp:629]` or `[E file.cpp:475]`.
fn glog_header(b: &[u8]) -> Option<&[u8]> {
    let inner = b.strip_prefix(b"[")?;
    let close = scan::find_byte(inner, b']')?;
    let head = inner.get(..close)?;
    let level = *head.first()?;
    let file_ok = scan::find(head, b".cpp:").is_some() || scan::find(head, b".cc:").is_some();
    (matches!(level, b'E' | b'W' | b'I' | b'F') && file_ok).then_some(head)
}

/// `E1218 20:27:21.426415540` of glog's header, wherever the header is in the line.
fn glog_stamp(line: &[u8]) -> Option<String> {
    let mut rest = line;
    while let Some(at) = scan::find_byte(rest, b'[') {
        let from = rest.get(at..)?;
        if let Some(head) = glog_header(from) {
            // The stamp is what precedes the file name: `E1218 20:27:21.426415540`.
            let words: Vec<&[u8]> = head.split(|c| *c == b' ').collect();
            let stamp = words.get(..words.len().saturating_sub(1))?.join(&b' ');
            let ok = stamp.len() > 1 && stamp.get(1).is_some_and(u8::is_ascii_digit);
            return ok.then(|| scan::text(&stamp));
        }
        rest = from.get(1..)?;
    }
    None
}

/// `[PG ID 2 PG GUID 3(desc) Rank 1]`, `[PG 0 (desc) Rank 1]`, `[PG 0 Rank 2]`: the group and
/// the rank in it.
fn pg_prefix(b: &[u8]) -> Option<(ProcessGroup, u32)> {
    let inner = b.strip_prefix(b"[PG ")?;
    let close = scan::find_byte(inner, b']')?;
    let head = inner.get(..close)?;
    let rank_at = scan::find(head, b" Rank ")?;
    let rank = leading_number(head.get(rank_at + 6..)?).and_then(|r| u32::try_from(r).ok())?;
    let mut rest = head.get(..rank_at)?;
    let mut desc = None;
    if rest.ends_with(b")") {
        if let Some(open) = rest.iter().rposition(|c| *c == b'(') {
            desc = rest.get(open + 1..rest.len() - 1).map(scan::text);
            rest = rest.get(..open).unwrap_or_default();
        }
    }
    let rest = rest.trim_ascii();
    let (id, guid) = match rest.strip_prefix(b"ID ") {
        Some(r) => match scan::find(r, b" PG GUID ") {
            Some(g) => (
                r.get(..g)?,
                r.get(g + 9..).map(|v| scan::text(v.trim_ascii())),
            ),
            None => (r, None),
        },
        None => (rest, None),
    };
    let group = ProcessGroup {
        id: scan::text(id.trim_ascii()),
        guid,
        desc,
    };
    Some((group, rank))
}

/// The number after `key` up to `]` (`[rank3]`, `[Rank 3]`): the first such bracket.
fn bracket_number(line: &[u8], key: &[u8]) -> Option<u32> {
    let at = scan::find(line, key)? + key.len();
    let rest = line.get(at..)?;
    let close = scan::find_byte(rest, b']')?;
    scan::dec_u32(rest.get(..close)?.trim_ascii())
}

/// `pid=270291` in a leading `(...)` (Ray's worker prefix).
fn ray_pid(line: &[u8]) -> Option<u32> {
    let b = line.trim_ascii_start().strip_prefix(b"(")?;
    let close = scan::find_byte(b, b')')?;
    let inner = b.get(..close)?;
    let at = scan::find(inner, b"pid=")? + 4;
    leading_number(inner.get(at..)?).and_then(|p| u32::try_from(p).ok())
}

fn key_number(b: &[u8], key: &[u8]) -> Option<u64> {
    leading_number(b.get(scan::find(b, key)? + key.len()..)?)
}

/// The decimal digits `b` starts with.
fn leading_number(b: &[u8]) -> Option<u64> {
    let end = b
        .iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(b.len());
    scan::dec_u64(b.get(..end)?)
}

/// [`leading_number`] with an optional minus (`last enqueued NCCL work: -1`).
fn leading_signed(b: &[u8]) -> Option<i64> {
    match b.strip_prefix(b"-") {
        Some(r) => leading_number(r)
            .and_then(|n| i64::try_from(n).ok())
            .map(|n| -n),
        None => leading_number(b).and_then(|n| i64::try_from(n).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(line: &str) -> FrameworkLine {
        read(line.as_bytes()).unwrap_or_else(|| panic!("not read: {line}"))
    }

    #[test]
    fn watchdog_timeouts_of_three_pytorch_generations() {
        let new = ev("[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.");
        assert_eq!(new.rank, Some(0));
        assert_eq!(new.group_rank, Some(0));
        assert_eq!(new.stamp.as_deref(), Some("E1218 20:27:21.426415540"));
        assert_eq!(
            new.event,
            FrameworkEvent::WatchdogTimeout {
                seq: 1,
                op_type: "BROADCAST".into(),
                numel_in: Some(131_072_000),
                numel_out: Some(131_072_000),
                timeout_ms: Some(600_000),
                ran_ms: Some(600_081),
            }
        );
        let old = ev("[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=158, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800872 milliseconds before timing out.");
        assert_eq!(old.rank, None);
        assert_eq!(old.group_rank, Some(1));
        assert_eq!(old.stamp, None);
        assert!(matches!(
            old.event,
            FrameworkEvent::WatchdogTimeout {
                seq: 158,
                numel_in: None,
                timeout_ms: Some(1_800_000),
                ran_ms: Some(1_800_872),
                ..
            }
        ));
        let pg = ev("[PG ID 10 PG GUID 10 Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=68585472, NumelOut=68585472, Timeout(ms)=600000) ran for 600025 milliseconds before timing out.");
        let g = pg.group.expect("group");
        assert_eq!(
            (g.id.as_str(), g.guid.as_deref(), g.desc),
            ("10", Some("10"), None)
        );
    }

    #[test]
    fn work_status_lines_and_their_groups() {
        let t = ev("(RayWorkerWrapper pid=270291, ip=10.175.94.190) [rank3]:[E219 08:58:32.606693321 ProcessGroupNCCL.cpp:1834] [PG ID 2 PG GUID 3 Rank 3] Timeout at NCCL work: 31, last enqueued NCCL work: 58, last completed NCCL work: 30.");
        assert_eq!(
            (t.rank, t.group_rank, t.pid),
            (Some(3), Some(3), Some(270_291))
        );
        assert_eq!(
            t.event,
            FrameworkEvent::WorkStatus {
                cause: WorkCause::Timeout,
                work: Some(31),
                last_enqueued: Some(58),
                last_completed: Some(30),
            }
        );
        let e = ev("[rank1]:[E1003 18:37:01.833575187 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at work: 6463, last enqueued NCCL work: 6463, last completed NCCL work: 6462.");
        let g = e.group.clone().expect("group");
        assert_eq!(
            (g.id.as_str(), g.desc.as_deref()),
            ("0", Some("default_pg"))
        );
        assert!(matches!(
            e.event,
            FrameworkEvent::WorkStatus {
                cause: WorkCause::Exception,
                work: Some(6463),
                ..
            }
        ));
        let d = ev("[PG ID 0 PG GUID 0(default_pg) Rank 1] Received a dump signal due to a collective timeout from rank 0 and we will try our best to dump the debug info. Last enqueued NCCL work: -1, last completed NCCL work: -1.");
        assert_eq!(
            d.event,
            FrameworkEvent::WorkStatus {
                cause: WorkCause::DumpSignal { from_rank: Some(0) },
                work: None,
                last_enqueued: Some(-1),
                last_completed: Some(-1),
            }
        );
        let g = d.group.expect("group");
        assert_eq!(
            (g.guid.as_deref(), g.desc.as_deref()),
            (Some("0"), Some("default_pg"))
        );
    }

    #[test]
    fn stuck_watchdog_and_errors() {
        let s = ev("[rank1]:[E1111 17:10:53] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives.");
        assert_eq!(
            s.event,
            FrameworkEvent::WatchdogStuck { seconds: Some(480) }
        );
        let cases = [
            ("[rank1]:[E409 05:10:01.930967482 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered", "CUDA error: an illegal memory access was encountered"),
            ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1251, internal error - please report this issue to the NCCL developers, NCCL version 2.18.6", "NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1251, internal error - please report this issue to the NCCL developers, NCCL version 2.18.6"),
            ("[rank0]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.", "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."),
            ("Last error:", "Last error:"),
        ];
        for (line, want) in cases {
            match ev(line).event {
                FrameworkEvent::Error { message } => assert_eq!(message, want, "{line}"),
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn prose_and_warnings_are_not_framework_lines() {
        for line in [
            "master_addr is only used for static rdzv_backend and when rdzv_endpoint is not specified.",
            "[rank6]:[W319 12:03:46.604992123 ProcessGroupNCCL.cpp:4721] [PG ID 0 PG GUID 0 Rank 6]  using GPU 6 as device used by this process is currently unknown.",
            "the ncclFoo: thing",
            "I saw a watchdog timeout yesterday",
        ] {
            assert!(read(line.as_bytes()).is_none(), "{line}");
        }
    }

    #[test]
    fn cut_lines_never_panic() {
        let line = b"[rank3]:[E219 08:58:32.6 ProcessGroupNCCL.cpp:1834] [PG ID 2 PG GUID 3(x) Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=31, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds";
        for cut in 0..=line.len() {
            let _ = read(&line[..cut]);
        }
    }
}
