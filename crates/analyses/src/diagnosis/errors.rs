//! The errors the ranks printed: `NCCL WARN` lines, calls that failed (`file.cc:N -> code`)
//! and the framework's NCCL/CUDA errors, classified by what their text says, one finding per
//! process and kind; a peer named by address, host or rank resolved to ranks; the first error
//! in time across all ranks marked (in synchronised time where clocks are known, else by the
//! stamps, within one process by file order, else said to be unknowable).

use super::index::Index;
use super::{text, Evidence, Finding, FirstError, Kind, ProcessRef, Severity};
use ingest_nccl::{ConfigFact, FrameworkEvent};
use model::log::{ProcessKey, SourceLine};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What kind of failure an error's text describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorClass {
    /// Connections, sockets, IB completions, a remote peer gone.
    Network,
    /// CUDA failures, illegal memory accesses.
    Cuda,
    /// Memory, registration, file descriptors.
    Resources,
    /// Set-up: bootstrap, timeouts, system errors, invalid usage.
    Init,
    /// NCCL's own check found mismatched calls across ranks.
    Mismatch,
    Other,
}

impl ErrorClass {
    fn noun(self) -> &'static str {
        match self {
            ErrorClass::Network => "a network error",
            ErrorClass::Cuda => "a CUDA error",
            ErrorClass::Resources => "a resource error",
            ErrorClass::Init => "an initialisation error",
            ErrorClass::Mismatch => "mismatched collectives",
            ErrorClass::Other => "an error",
        }
    }
}

/// Phrases, checked in this order (out of memory before CUDA: `Cuda failure 'out of memory'`;
/// bootstrap before the network: a bootstrap that cannot connect is a set-up failure).
const CLASSES: [(ErrorClass, &[&str]); 6] = [
    (
        ErrorClass::Mismatch,
        &[
            "Mismatched collective",
            "Detected mismatch between collectives",
        ],
    ),
    (
        ErrorClass::Resources,
        &[
            "out of memory",
            "Out of memory",
            "Failed to allocate",
            "failed to allocate",
            "Unable to allocate",
            "register",
            "Register",
            "ibv_reg_mr",
            "No space left",
            "Too many open files",
            "/dev/shm",
            "shared memory",
        ],
    ),
    (
        ErrorClass::Cuda,
        &[
            "Cuda failure",
            "CUDA error",
            "cuda error",
            "illegal memory access",
            "unhandled cuda error",
            "cudaError",
            "CUDA driver",
            "ncclUnhandledCudaError",
        ],
    ),
    (
        ErrorClass::Init,
        &["Bootstrap", "bootstrap", "no socket interface"],
    ),
    (
        ErrorClass::Network,
        &[
            "NET/IB",
            "NET/Socket",
            "NET/OFI",
            "Connection closed",
            "Connection reset",
            "Connection refused",
            "connection abort",
            "Got completion",
            "collective mismatch error",
            "socket",
            "Socket",
            "remote process exited",
            "network error",
            "ncclRemoteError",
            "Broken pipe",
            "ibv_",
            "IB ",
        ],
    ),
    (
        ErrorClass::Init,
        &[
            "unhandled system error",
            "invalid usage",
            "Invalid usage",
            "invalid argument",
            "Invalid argument",
            "ncclSystemError",
            "ncclInvalidUsage",
            "ncclInvalidArgument",
            "ncclInternalError",
            "internal error",
            "timeout",
            "Timeout",
            "timed out",
        ],
    ),
];

/// Warnings NCCL prints while falling back from an optional library or plugin: not failures.
const BENIGN: [&str; 7] = [
    "Failed to open libibverbs",
    "NET/Plugin",
    "libnccl-net",
    "No plugin found",
    "PROFILER/Plugin",
    "TUNER/Plugin",
    "No device found",
];

pub(crate) fn classify(text: &str) -> ErrorClass {
    CLASSES
        .iter()
        .find(|(_, phrases)| phrases.iter().any(|p| text.contains(p)))
        .map_or(ErrorClass::Other, |(c, _)| *c)
}

fn benign(text: &str) -> bool {
    BENIGN.iter().any(|p| text.contains(p))
}

/// `ncclResult_t` as a failed call returns it.
fn code_class(code: i32) -> Option<(ErrorClass, &'static str)> {
    Some(match code {
        1 => (ErrorClass::Cuda, "ncclUnhandledCudaError"),
        2 => (ErrorClass::Init, "ncclSystemError"),
        3 => (ErrorClass::Other, "ncclInternalError"),
        4 => (ErrorClass::Init, "ncclInvalidArgument"),
        5 => (ErrorClass::Init, "ncclInvalidUsage"),
        6 => (ErrorClass::Network, "ncclRemoteError"),
        _ => return None,
    })
}

/// An error finding and what orders it in time.
pub(crate) struct ErrorEvent {
    pub finding: Finding,
    /// Whose clock stamped it.
    rank: Option<u32>,
    who: Who,
    time_ns: Option<i64>,
    /// The stamp has whole seconds only (`[%F %T]`): ties within a second cannot be told.
    coarse: bool,
    first_line: SourceLine,
}

/// Who printed a line: a process when known, else the rank its prefix names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Who {
    Process(ProcessKey),
    Rank(u32),
    Unknown,
}

/// One line of an error group.
struct Line {
    text: String,
    time_ns: Option<i64>,
    source: SourceLine,
    /// A failed call's code name, for groups without a warning.
    code: Option<&'static str>,
}

pub(crate) fn find(ix: &Index<'_>) -> Vec<ErrorEvent> {
    // (who, class, benign) → lines in file order
    let mut groups: BTreeMap<(Who, ErrorClass, bool), Vec<Line>> = BTreeMap::new();
    let mut calls: BTreeMap<Who, Vec<Line>> = BTreeMap::new();
    for log in ix.logs {
        for w in &log.warnings {
            let who = w.process.clone().map_or(Who::Unknown, Who::Process);
            let line = Line {
                text: w.message.clone(),
                time_ns: w.timestamp_ns,
                source: w.source,
                code: None,
            };
            let key = (who, classify(&w.message), benign(&w.message));
            groups.entry(key).or_default().push(line);
        }
        for c in &log.failed_calls {
            let Some((_, name)) = code_class(c.code) else {
                continue;
            };
            let who = c.process.clone().map_or(Who::Unknown, Who::Process);
            calls.entry(who).or_default().push(Line {
                text: format!("{} -> {}", c.site, c.code),
                time_ns: c.timestamp_ns,
                source: c.source,
                code: Some(name),
            });
        }
        for f in &log.framework {
            let FrameworkEvent::Error { message } = &f.event else {
                continue;
            };
            let who = match (&f.process, f.rank) {
                (Some(p), _) => Who::Process(p.clone()),
                (None, Some(r)) => Who::Rank(r),
                (None, None) => Who::Unknown,
            };
            let key = (who, classify(message), false);
            groups.entry(key).or_default().push(Line {
                text: message.clone(),
                time_ns: None,
                source: f.source,
                code: None,
            });
        }
    }
    attach_failed_calls(&mut groups, calls);
    let peers = Peers::new(ix);
    groups
        .into_iter()
        .map(|((who, class, benign), lines)| event(ix, &peers, who, class, benign, lines))
        .collect()
}

/// A process's failed calls are the trail of its warning when it printed one; alone, they are
/// its error (classed by the code the first returned).
fn attach_failed_calls(
    groups: &mut BTreeMap<(Who, ErrorClass, bool), Vec<Line>>,
    calls: BTreeMap<Who, Vec<Line>>,
) {
    for (who, lines) in calls {
        let with_warning = groups
            .iter_mut()
            .filter(|((w, _, benign), _)| *w == who && !*benign)
            .min_by_key(|(_, l)| l.first().map(|l| l.source));
        match with_warning {
            Some((_, group)) => {
                group.extend(lines);
                group.sort_by_key(|l| l.source);
            }
            None => {
                let class = lines
                    .first()
                    .and_then(|l| l.code)
                    .and_then(|name| (1..7).find_map(|c| code_class(c).filter(|(_, n)| *n == name)))
                    .map_or(ErrorClass::Other, |(c, _)| c);
                groups.entry((who, class, false)).or_default().extend(lines);
            }
        }
    }
}

fn event(
    ix: &Index<'_>,
    peers: &Peers,
    who: Who,
    class: ErrorClass,
    benign: bool,
    lines: Vec<Line>,
) -> ErrorEvent {
    let (rank, processes) = match &who {
        Who::Process(k) => (
            ix.rank_of_key(k),
            vec![ProcessRef {
                host: k.host.to_string(),
                pid: k.pid,
            }],
        ),
        Who::Rank(r) => (Some(*r), Vec::new()),
        Who::Unknown => (None, Vec::new()),
    };
    let headline = lines
        .iter()
        .find(|l| l.code.is_none())
        .or(lines.first())
        .map(|l| match l.code {
            Some(name) => format!("a call inside NCCL failed with {name} at {}", l.text),
            None => format!("\"{}\"", clip(&l.text)),
        })
        .unwrap_or_default();
    let (peer_text, peer_ranks) = peers.resolve(lines.iter().map(|l| l.text.as_str()), rank);
    let others = lines.len().saturating_sub(1);
    let more = match others {
        0 => String::new(),
        1 => " (and 1 more line)".into(),
        n => format!(" (and {n} more lines)"),
    };
    let subject = match (&who, rank) {
        (Who::Process(k), Some(r)) => format!("Rank {r} ({}:{})", k.host, k.pid),
        (Who::Process(k), None) => format!("Process {}:{}", k.host, k.pid),
        (_, Some(r)) => format!("Rank {r}"),
        _ => "A process the logs do not name".into(),
    };
    let kind = if benign {
        "a warning NCCL prints when it falls back from an optional library or plugin"
    } else {
        class.noun()
    };
    let message = format!("{subject} reported {kind}: {headline}{more}{peer_text}.");
    let evidence: Vec<Evidence> = lines
        .iter()
        .take(6)
        .map(|l| ix.evidence(l.source))
        .collect();
    let first = lines.iter().min_by_key(|l| l.source);
    let time_ns = first.and_then(|l| l.time_ns);
    ErrorEvent {
        finding: Finding {
            kind: Kind::Error,
            severity: severity(class, benign),
            communicator: None,
            op_count: None,
            ranks: rank.into_iter().collect(),
            processes,
            message,
            evidence,
            class: Some(class),
            first: false,
            time_base: None,
            grouped_by: None,
            peer_ranks,
            time: time_ns.map(text::time),
        },
        rank,
        who,
        time_ns,
        coarse: time_ns.is_some_and(|t| t % 1_000_000_000 == 0),
        first_line: first.map(|l| l.source).unwrap_or_default(),
    }
}

fn severity(class: ErrorClass, benign: bool) -> Severity {
    match (benign, class) {
        (true, _) => Severity::Info,
        (false, ErrorClass::Other) => Severity::Warning,
        (false, _) => Severity::Critical,
    }
}

fn clip(s: &str) -> String {
    const MAX: usize = 200;
    match s.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// Addresses and hosts of every process, to name a peer an error mentions.
struct Peers {
    by_ip: BTreeMap<String, BTreeSet<u32>>,
    by_host: BTreeMap<String, BTreeSet<u32>>,
}

impl Peers {
    fn new(ix: &Index<'_>) -> Peers {
        let mut by_ip: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
        let mut by_host: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
        for (i, p) in ix.procs.iter().enumerate() {
            if let Some(r) = ix.rank(i) {
                by_host.entry(p.key.host.to_string()).or_default().insert(r);
            }
        }
        for log in ix.logs {
            for c in &log.config {
                let (ConfigFact::Address { ip, .. }, Some(p)) = (&c.fact, &c.process) else {
                    continue;
                };
                if let Some(r) = ix.rank_of_key(p) {
                    by_ip.entry(ip.clone()).or_default().insert(r);
                }
            }
        }
        Peers { by_ip, by_host }
    }

    /// `(; peer 10.0.0.2 is rank 5, its ranks)` for the first peer the lines name that
    /// resolves (an address or host followed by `<port>`, or `rank N`), not the reporter.
    fn resolve<'t>(
        &self,
        lines: impl Iterator<Item = &'t str>,
        me: Option<u32>,
    ) -> (String, Vec<u32>) {
        for l in lines {
            for name in peer_names(l) {
                let ranks = self
                    .by_ip
                    .get(&name)
                    .or_else(|| self.by_host.get(&name))
                    .or_else(|| self.by_host.get(name.split('.').next().unwrap_or_default()));
                if let Some(rs) =
                    ranks.filter(|rs| !rs.contains(&me.unwrap_or(u32::MAX)) || rs.len() > 1)
                {
                    let rs: Vec<u32> = rs.iter().copied().collect();
                    let whose = if rs.len() == 1 {
                        text::ranks(&rs)
                    } else {
                        format!("the host of {}", text::ranks(&rs))
                    };
                    return (format!("; the peer {name} is {whose}"), rs);
                }
            }
            if let Some(r) = named_rank(l) {
                return (
                    format!("; it names rank {r} (in its communicator)"),
                    vec![r],
                );
            }
        }
        (String::new(), Vec::new())
    }
}

/// The names a line gives peers by: `10.0.0.2<1234>`, `fe80::1%ib0<33397>`, `node2<35711>`.
fn peer_names(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in line.match_indices('<') {
        let before = &line[..at];
        let start = before
            .rfind(|c: char| c.is_whitespace() || c == '(' || c == ',')
            .map_or(0, |i| i + 1);
        let name = &before[start..];
        let after = &line[at + 1..];
        let port = after.split('>').next().unwrap_or_default();
        if name.is_empty() || port.is_empty() || !port.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        // IPv6 with a zone: the address is before the `%`.
        let name = name.split('%').next().unwrap_or(name);
        out.push(name.trim_start_matches("::ffff:").to_string());
    }
    out
}

/// `at and around rank 11`, `from rank 1`, `peer rank 3`: a rank the text names.
fn named_rank(line: &str) -> Option<u32> {
    let at = line.find("rank ")?;
    if line[..at].ends_with("local") || line[..at].ends_with("Local") {
        return None;
    }
    let digits: String = line[at + 5..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Marks the first error in time across all ranks, and says how it was told: in synchronised
/// time when `clocks` place every stamped error (the clocks of the log stamps), else by the
/// stamps themselves (each host's own clock: one time base, never a mix), within one process
/// by file order.
pub(crate) fn mark_first(
    errs: &mut [ErrorEvent],
    clocks: Option<&enrich::ClockSync>,
) -> Option<FirstError> {
    let candidates: Vec<usize> = (0..errs.len())
        .filter(|&i| errs[i].finding.severity > Severity::Info)
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let whos: BTreeSet<&Who> = candidates.iter().map(|&i| &errs[i].who).collect();
    if whos.len() == 1 {
        let i = *candidates.iter().min_by_key(|&&i| errs[i].first_line)?;
        return mark(
            errs,
            i,
            "only one process printed errors: its first in file order".into(),
            "file order",
        );
    }
    let stamped: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|&i| errs[i].time_ns.is_some())
        .collect();
    let synced: Option<Vec<(usize, i64)>> = stamped
        .iter()
        .map(|&i| {
            let (c, r) = clocks.zip(errs[i].rank)?;
            let t = errs[i].time_ns?;
            c.ranks.contains_key(&r).then(|| (i, c.to_sync(r, t)))
        })
        .collect();
    let all_synced = synced.as_ref().is_some_and(|s| !s.is_empty());
    let timed: Vec<(usize, i64)> = match synced.filter(|_| all_synced) {
        Some(s) => s,
        None => stamped
            .iter()
            .filter_map(|&i| Some((i, errs[i].time_ns?)))
            .collect(),
    };
    let untimed: Vec<u32> = candidates
        .iter()
        .filter(|&&i| errs[i].time_ns.is_none())
        .filter_map(|&i| errs[i].rank)
        .collect();
    let Some(&(i, t)) = timed.iter().min_by_key(|(i, t)| (*t, errs[*i].first_line)) else {
        return Some(FirstError {
            finding: None,
            how: format!(
                "cannot be told: the error lines of {} processes carry no timestamps",
                whos.len()
            ),
            time_base: None,
        });
    };
    let tie: Vec<u32> = timed
        .iter()
        .filter(|(j, u)| {
            let window = if errs[i].coarse || errs[*j].coarse {
                1_000_000_000
            } else {
                1
            };
            *j != i && errs[*j].who != errs[i].who && (u - t).abs() < window
        })
        .filter_map(|(j, _)| errs[*j].rank)
        .collect();
    if !tie.is_empty() {
        let mut all: Vec<u32> = errs[i].rank.into_iter().chain(tie).collect();
        all.sort_unstable();
        all.dedup();
        return Some(FirstError {
            finding: None,
            how: format!(
                "cannot be told: {} printed errors within the stamps' resolution of each other",
                text::ranks(&all)
            ),
            time_base: None,
        });
    }
    let (mut how, base) = if all_synced {
        (
            "by the ranks' synchronised clocks (the log stamps mapped through the alignment)"
                .to_string(),
            "synchronised",
        )
    } else {
        (
            "by the log timestamps (each host's own clock)".to_string(),
            "log stamps",
        )
    };
    if !untimed.is_empty() {
        how.push_str(&format!(
            "; the errors of {} carry no timestamp and cannot be placed",
            text::ranks(&untimed)
        ));
    }
    mark(errs, i, how, base)
}

/// Marks error `i` as the first, told by `how` in time base `base`.
fn mark(errs: &mut [ErrorEvent], i: usize, how: String, base: &str) -> Option<FirstError> {
    errs[i].finding.first = true;
    errs[i].finding.time_base = Some(base.to_string());
    Some(FirstError {
        finding: Some(i),
        how,
        time_base: Some(base.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_of_real_warnings() {
        for (text, class) in [
            ("NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)", ErrorClass::Network),
            ("NET/IB : req 0/1 tag 0 peer 10.10.23.6<58683> collective mismatch error, local size 496640 remote size 65536", ErrorClass::Network),
            ("socketProgress: Connection closed by remote peer node2<35711>", ErrorClass::Network),
            ("Cuda failure 'an illegal memory access was encountered'", ErrorClass::Cuda),
            ("Cuda failure 'out of memory'", ErrorClass::Resources),
            ("Mismatched collective detected, please check your collective calls at and around rank 11.", ErrorClass::Mismatch),
            ("Bootstrap : no socket interface found", ErrorClass::Init),
            ("Error : ring 2 does not loop back to start (7 != 2)", ErrorClass::Other),
        ] {
            assert_eq!(classify(text), class, "{text}");
        }
        assert!(benign("Failed to open libibverbs.so[.1]"));
        assert!(!benign("NET/IB : Got completion from peer"));
    }

    #[test]
    fn peers_and_ranks_named_in_text() {
        assert_eq!(
            peer_names("NET/IB : Got completion from peer 10.216.210.236<54862> with status=12"),
            ["10.216.210.236"]
        );
        assert_eq!(
            peer_names("peer fe80::966d:ae03:8b:df54%ib0<33397> with error 4"),
            ["fe80::966d:ae03:8b:df54"]
        );
        assert_eq!(
            peer_names("Connection closed by remote peer node2<35711>"),
            ["node2"]
        );
        assert!(peer_names("Using eth0:10.0.0.1<0> and a <b> tag").len() == 1);
        assert_eq!(named_rank("at and around rank 11. You can use"), Some(11));
        assert_eq!(named_rank("Could not receive type from localRank 1"), None);
    }
}
