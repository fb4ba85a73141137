//! Pairs log processes with export processes, one to one, from every clue both sides give.
//!
//! 1. **Hosts.** An export's host name is compared with the logs' in a normal form (lower
//!    case; the name up to its first dot, since NCCL prints the host name cut there while
//!    Nsight stores the full one). Export processes are paired with the processes of the log
//!    hosts of that name. An export whose host names no log host (a container's id in the log,
//!    a renamed node) is paired with the log hosts no export names.
//! 2. **Within those,** every (export, log) process pair is scored: the same pid (nsys and NCCL
//!    in one pid namespace), the same PCI bus id (`busId` of the init lines against
//!    `TARGET_INFO_GPU`), the same GPU (`nvmlDev` against the kernels' `deviceId`, or `cudaDev`
//!    against `TARGET_INFO_CUDA_DEVICE`), alike operations (collectives by type, Send/Recv
//!    groups as the SendRecv kernels they run) and, last, the same place in pid order (a
//!    launcher starts its ranks in one order, which both pid namespaces keep). Disagreeing bus
//!    ids or GPUs count against a pair.
//! 3. **One to one,** best pairs first. A pair whose runner-up scores the same is not made (the
//!    data cannot decide); one whose runner-up is close is made with a low confidence. Every
//!    such case, and every process left alone, is a note naming both sides and the closest
//!    candidate.

use crate::features::{similarity, ExportProcess, LogProcess};
use model::log::ProcessKey;
use std::collections::{BTreeMap, BTreeSet};

/// A clue that tied a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Evidence {
    /// The same host name (case aside).
    Host,
    /// The same host up to the first dot (an FQDN against NCCL's short name).
    HostShort,
    Pid,
    BusId,
    /// The same GPU index or CUDA ordinal.
    Device,
    /// Alike operation counts.
    Sequence,
    /// The same place in pid order.
    PidOrder,
}

impl Evidence {
    /// As the summary spells it (`ranks[].identity.matched_by`).
    pub fn name(self) -> &'static str {
        match self {
            Evidence::Host => "host",
            Evidence::HostShort => "host_short",
            Evidence::Pid => "pid",
            Evidence::BusId => "bus_id",
            Evidence::Device => "device",
            Evidence::Sequence => "sequence",
            Evidence::PidOrder => "pid_order",
        }
    }
}

/// How one export process was paired.
#[derive(Debug, Clone, PartialEq)]
pub struct Pairing {
    pub export: usize,
    pub export_host: String,
    pub export_pid: u32,
    /// The log process it is, if any.
    pub log: Option<ProcessKey>,
    pub matched_by: Vec<Evidence>,
    /// In [0, 1]: 1 for the same host and pid, lower as the clues get weaker or close to
    /// another pair's.
    pub confidence: f64,
}

/// The pairing of a session's processes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    /// Every export process, paired or not, in (export, pid) order.
    pub pairs: Vec<Pairing>,
    /// (export, pid) → index into `pairs`.
    index: BTreeMap<(usize, u32), usize>,
    /// Log process → index into `pairs` of its export process.
    by_log: BTreeMap<ProcessKey, usize>,
    /// Pairings the data could not make surely, and processes left alone, in words.
    pub notes: Vec<String>,
}

impl Identity {
    /// The process key the analysis files export `export`'s `pid` under: its log process's
    /// when paired, else the export's host and pid.
    pub fn key(&self, export: usize, pid: u32, export_host: &str) -> ProcessKey {
        match self
            .index
            .get(&(export, pid))
            .and_then(|&i| self.pairs[i].log.as_ref())
        {
            Some(k) => k.clone(),
            None => ProcessKey {
                host: export_host.into(),
                pid,
            },
        }
    }

    /// How a log process was paired, if it was.
    pub fn of_log(&self, process: &ProcessKey) -> Option<&Pairing> {
        self.by_log.get(process).map(|&i| &self.pairs[i])
    }
}

/// A host name's normal form and its part before the first dot.
fn normal(host: &str) -> (String, String) {
    let full = host.trim().to_ascii_lowercase();
    let short = full.split('.').next().unwrap_or("").to_string();
    (full, short)
}

/// Whether a host name is a container's id as Docker names it (12 or 64 hex digits).
pub fn container_id(host: &str) -> bool {
    matches!(host.len(), 12 | 64) && host.bytes().all(|b| b.is_ascii_hexdigit())
}

/// How a log host relates to an export host by name.
fn host_evidence(log: &str, export: &str) -> Option<Evidence> {
    let (lf, ls) = normal(log);
    let (xf, xs) = normal(export);
    if xf.is_empty() || lf.is_empty() {
        None
    } else if lf == xf {
        Some(Evidence::Host)
    } else if ls == xs {
        Some(Evidence::HostShort)
    } else {
        None
    }
}

/// Weights of the clues in a pair's score.
const PID: f64 = 10.0;
const BUS: f64 = 6.0;
const DEVICE: f64 = 2.0;
const SEQUENCE: f64 = 3.0;
const ORDER: f64 = 0.5;
/// Runner-ups closer than this make a pair uncertain.
const CLOSE: f64 = 1.0;

/// One candidate pair's score and clues.
#[derive(Debug, Clone)]
struct Scored {
    score: f64,
    clues: Vec<Evidence>,
    conflicts: usize,
}

/// Scores export process `x` against log process `l` (`order`: whether they hold the same
/// place in their sides' pid order).
fn score(x: &ExportProcess, l: &LogProcess, order: bool) -> Scored {
    let mut s = Scored {
        score: 0.0,
        clues: Vec::new(),
        conflicts: 0,
    };
    if x.pid == l.process.pid {
        s.score += PID;
        s.clues.push(Evidence::Pid);
    }
    if !x.bus_ids.is_empty() && !l.bus_ids.is_empty() {
        if x.bus_ids.intersection(&l.bus_ids).next().is_some() {
            s.score += BUS;
            s.clues.push(Evidence::BusId);
        } else {
            s.score -= BUS;
            s.conflicts += 1;
        }
    }
    // The GPU: NVML's index is the export's device id; a CUDA ordinal is only comparable
    // through the export's map of them.
    let device = if !l.nvml_devs.is_empty() && !x.devices.is_empty() {
        Some(l.nvml_devs.intersection(&x.devices).next().is_some())
    } else if !x.cuda_ids.is_empty() && !l.cuda_devs.is_empty() {
        Some(l.cuda_devs.intersection(&x.cuda_ids).next().is_some())
    } else {
        None
    };
    match device {
        Some(true) => {
            s.score += DEVICE;
            s.clues.push(Evidence::Device);
        }
        Some(false) => {
            s.score -= DEVICE;
            s.conflicts += 1;
        }
        None => {}
    }
    let q = similarity(&x.units, &l.units);
    s.score += SEQUENCE * q;
    if q >= 0.8 {
        s.clues.push(Evidence::Sequence);
    }
    if order {
        s.score += ORDER;
        s.clues.push(Evidence::PidOrder);
    }
    s
}

/// The confidence of a pair made from `clues` with `conflicts`, `margin` ahead of its
/// runner-up.
fn confidence(clues: &[Evidence], conflicts: usize, margin: f64) -> f64 {
    let has = |e: Evidence| clues.contains(&e);
    let named = has(Evidence::Host) || has(Evidence::HostShort);
    // On a named host a GPU is one process's; elsewhere (a container's id) the node itself was
    // found by elimination.
    let mut c: f64 = match (named, has(Evidence::Pid)) {
        (true, true) if has(Evidence::Host) => 1.0,
        (true, true) => 0.99,
        (true, false) if has(Evidence::BusId) => 0.95,
        (true, false) if has(Evidence::Device) => 0.9,
        (true, false) => 0.6,
        (false, true) if has(Evidence::BusId) || has(Evidence::Device) => 0.9,
        (false, true) => 0.8,
        (false, false) if has(Evidence::BusId) || has(Evidence::Device) => 0.7,
        _ => 0.5,
    };
    c -= 0.1 * conflicts as f64;
    if margin < CLOSE {
        c = c.min(0.5);
    }
    c.clamp(0.0, 1.0)
}

/// A block of the pairing: export processes and the log processes they may pair with.
struct Block<'a> {
    exports: Vec<&'a ExportProcess>,
    logs: Vec<&'a LogProcess>,
    /// The clue the host names give the whole block, if any.
    named: Option<Evidence>,
}

/// Each process's place in its side's pid order, within its host.
fn pid_places<T>(items: &[&T], host: impl Fn(&T) -> String, pid: impl Fn(&T) -> u32) -> Vec<usize> {
    let mut by_host: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for it in items {
        by_host.entry(host(it)).or_default().push(pid(it));
    }
    for v in by_host.values_mut() {
        v.sort_unstable();
    }
    items
        .iter()
        .map(|it| {
            by_host[&host(it)]
                .iter()
                .position(|&p| p == pid(it))
                .unwrap_or(usize::MAX)
        })
        .collect()
}

/// Pairs within one block, appending to `out`.
fn pair_block(block: &Block, out: &mut Identity) {
    let xp = pid_places(&block.exports, |x| x.host.clone(), |x| x.pid);
    let lp = pid_places(
        &block.logs,
        |l| l.process.host.to_string(),
        |l| l.process.pid,
    );
    let mut cand: Vec<(usize, usize, Scored)> = Vec::new();
    for (i, x) in block.exports.iter().enumerate() {
        for (j, l) in block.logs.iter().enumerate() {
            let s = score(x, l, xp[i] == lp[j]);
            cand.push((i, j, s));
        }
    }
    // Best first; among equals the export and log order keep it deterministic.
    let mut order: Vec<usize> = (0..cand.len()).collect();
    order.sort_by(|&a, &b| {
        cand[b]
            .2
            .score
            .total_cmp(&cand[a].2.score)
            .then((cand[a].0, cand[a].1).cmp(&(cand[b].0, cand[b].1)))
    });
    let mut x_done = vec![false; block.exports.len()];
    let mut l_done = vec![false; block.logs.len()];
    let mut made: Vec<Option<(usize, f64, Vec<Evidence>)>> = vec![None; block.exports.len()];
    for &c in &order {
        let (i, j, s) = &cand[c];
        if x_done[*i] || l_done[*j] {
            continue;
        }
        // Nothing ties them: no pair.
        let positive = s.clues.iter().any(|e| !matches!(e, Evidence::PidOrder));
        if s.score <= 0.0 || (!positive && block.named.is_none()) {
            continue;
        }
        // Across host names that differ, GPUs and operations alike say nothing of the machine
        // (every node has the same GPUs and runs the same steps): only the same pid, or a log
        // host that is a container's id (NCCL in a container, nsys on its host), ties them.
        let (x, l) = (block.exports[*i], block.logs[*j]);
        if block.named.is_none()
            && !x.host.is_empty()
            && !s.clues.contains(&Evidence::Pid)
            && !container_id(&l.process.host)
        {
            continue;
        }
        // The runner-up: the best other candidate of either side still free (candidates are
        // laid out export by export: its row, then its column).
        let nl = block.logs.len();
        let row = (0..nl)
            .filter(|&b| b != *j && !l_done[b])
            .map(|b| cand[*i * nl + b].2.score);
        let column = (0..block.exports.len())
            .filter(|&a| a != *i && !x_done[a])
            .map(|a| cand[a * nl + *j].2.score);
        let runner = row.chain(column).fold(f64::NEG_INFINITY, f64::max);
        let margin = s.score - runner;
        if margin <= 1e-9 {
            out.notes.push(format!(
                "export process {}:{} could be log process {}:{} or another one equally well ({}): left unpaired",
                x.host, x.pid, l.process.host, l.process.pid, describe(&s.clues)
            ));
            x_done[*i] = true;
            continue;
        }
        x_done[*i] = true;
        l_done[*j] = true;
        let mut clues = s.clues.clone();
        if let Some(named) = block.named {
            clues.insert(0, named);
        }
        let conf = confidence(&clues, s.conflicts, margin);
        if margin < CLOSE {
            out.notes.push(format!(
                "export process {}:{} paired with log process {}:{} by {} only narrowly ahead of another candidate (confidence {conf:.2})",
                x.host, x.pid, l.process.host, l.process.pid, describe(&clues)
            ));
        }
        made[*i] = Some((*j, conf, clues));
    }
    for (i, x) in block.exports.iter().enumerate() {
        let (log, conf, clues) = match &made[i] {
            Some((j, c, clues)) => (Some(block.logs[*j].process.clone()), *c, clues.clone()),
            None => (None, 0.0, Vec::new()),
        };
        out.pairs.push(Pairing {
            export: x.export,
            export_host: x.host.clone(),
            export_pid: x.pid,
            log,
            matched_by: clues,
            confidence: conf,
        });
    }
}

fn describe(clues: &[Evidence]) -> String {
    if clues.is_empty() {
        return "no clue".into();
    }
    clues
        .iter()
        .map(|e| e.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Edit distance of two short strings (for naming the closest candidate).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The name in `names` closest to `to` (normal forms compared).
fn closest<'a>(to: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let (t, _) = normal(to);
    names.min_by_key(|n| (distance(&normal(n).0, &t), n.len()))
}

/// Pairs every export process with a log process where the clues allow (see the module).
pub fn pair(logs: &[LogProcess], exports: &[ExportProcess]) -> Identity {
    let mut out = Identity::default();
    let log_hosts: BTreeSet<&str> = logs.iter().map(|l| l.process.host.as_str()).collect();
    let export_hosts: BTreeSet<&str> = exports.iter().map(|x| x.host.as_str()).collect();
    // Log hosts some export names, and the clue the name gives.
    let named_by = |xh: &str| -> (Vec<&str>, Option<Evidence>) {
        let exact: Vec<&str> = log_hosts
            .iter()
            .copied()
            .filter(|lh| host_evidence(lh, xh) == Some(Evidence::Host))
            .collect();
        if !exact.is_empty() {
            return (exact, Some(Evidence::Host));
        }
        let short: Vec<&str> = log_hosts
            .iter()
            .copied()
            .filter(|lh| host_evidence(lh, xh) == Some(Evidence::HostShort))
            .collect();
        let clue = (!short.is_empty()).then_some(Evidence::HostShort);
        (short, clue)
    };
    let claimed: BTreeSet<&str> = export_hosts.iter().flat_map(|xh| named_by(xh).0).collect();
    let unclaimed: BTreeSet<&str> = log_hosts.difference(&claimed).copied().collect();
    let mut blocks: Vec<Block> = Vec::new();
    // Export processes of hosts no log names pair with the log hosts no export names; a
    // hostless export (older ones) with any log process.
    let mut unnamed = Block {
        exports: Vec::new(),
        logs: logs
            .iter()
            .filter(|l| unclaimed.contains(l.process.host.as_str()))
            .collect(),
        named: None,
    };
    for xh in &export_hosts {
        let members: Vec<&ExportProcess> = exports.iter().filter(|x| x.host == *xh).collect();
        if xh.is_empty() {
            blocks.push(Block {
                exports: members,
                logs: logs.iter().collect(),
                named: None,
            });
            continue;
        }
        let (hosts, clue) = named_by(xh);
        if hosts.is_empty() {
            unnamed.exports.extend(members);
            continue;
        }
        blocks.push(Block {
            exports: members,
            logs: logs
                .iter()
                .filter(|l| hosts.contains(&l.process.host.as_str()))
                .collect(),
            named: clue,
        });
    }
    if !unnamed.exports.is_empty() {
        blocks.push(unnamed);
    }
    for b in &blocks {
        let from = out.pairs.len();
        pair_block(b, &mut out);
        // Hostless exports pair by pid as they always did; a name that differs is news.
        if b.named.is_none() && b.exports.iter().all(|x| !x.host.is_empty()) {
            note_renamed(&out.pairs[from..], &mut out.notes);
        }
    }
    out.pairs.sort_by_key(|p| (p.export, p.export_pid));
    // One log process for one export process: a log process claimed by two blocks (a hostless
    // export beside a named one) keeps the surer pairing.
    let mut best: BTreeMap<ProcessKey, usize> = BTreeMap::new();
    for (i, p) in out.pairs.iter().enumerate() {
        if let Some(k) = &p.log {
            match best.get(k) {
                Some(&o) if out.pairs[o].confidence >= p.confidence => {}
                _ => {
                    best.insert(k.clone(), i);
                }
            }
        }
    }
    for (i, p) in out.pairs.iter_mut().enumerate() {
        if let Some(k) = &p.log {
            if best.get(k) != Some(&i) {
                p.log = None;
                p.matched_by.clear();
                p.confidence = 0.0;
            }
        }
    }
    out.index = out
        .pairs
        .iter()
        .enumerate()
        .map(|(i, p)| ((p.export, p.export_pid), i))
        .collect();
    out.by_log = best;
    note_the_unpaired(logs, exports, &mut out);
    out
}

/// A note per (log host, export host) whose processes were paired although the names differ
/// (a container's id, a renamed node): what tied them, and how sure.
fn note_renamed(pairs: &[Pairing], notes: &mut Vec<String>) {
    let mut seen: BTreeMap<(&str, &str), (usize, f64, BTreeSet<Evidence>)> = BTreeMap::new();
    for p in pairs {
        let Some(log) = &p.log else { continue };
        let e = seen
            .entry((log.host.as_str(), p.export_host.as_str()))
            .or_insert((0, 1.0, BTreeSet::new()));
        e.0 += 1;
        e.1 = e.1.min(p.confidence);
        e.2.extend(p.matched_by.iter().copied());
    }
    for ((log, export), (n, conf, clues)) in seen {
        let clues: Vec<Evidence> = clues.into_iter().collect();
        notes.push(format!(
            "log host {log} is named by no export: {n} of its processes paired with export host {} by {} (confidence {conf:.2} or more)",
            if export.is_empty() { "(unnamed)" } else { export },
            describe(&clues)
        ));
    }
}

/// A note for every log host and export host with no process paired, naming the closest name
/// on the other side.
fn note_the_unpaired(logs: &[LogProcess], exports: &[ExportProcess], out: &mut Identity) {
    let paired_logs: BTreeSet<&str> = out
        .pairs
        .iter()
        .filter_map(|p| p.log.as_ref().map(|k| k.host.as_str()))
        .collect();
    let paired_exports: BTreeSet<&str> = out
        .pairs
        .iter()
        .filter(|p| p.log.is_some())
        .map(|p| p.export_host.as_str())
        .collect();
    let log_hosts: BTreeSet<&str> = logs.iter().map(|l| l.process.host.as_str()).collect();
    let export_hosts: BTreeSet<&str> = exports.iter().map(|x| x.host.as_str()).collect();
    if export_hosts.is_empty() || log_hosts.is_empty() {
        return;
    }
    let mut notes = Vec::new();
    for lh in log_hosts.iter().filter(|h| !paired_logs.contains(*h)) {
        let n = logs.iter().filter(|l| l.process.host == *lh).count();
        let near = closest(lh, export_hosts.iter().copied().filter(|h| !h.is_empty()));
        notes.push(format!(
            "log host {lh} ({n} process{}) matches no export's host or processes; closest export host: {}",
            if n == 1 { "" } else { "es" },
            near.unwrap_or("(none named)")
        ));
    }
    for xh in export_hosts.iter().filter(|h| !paired_exports.contains(*h)) {
        let n = exports.iter().filter(|x| x.host == *xh).count();
        let near = closest(xh, log_hosts.iter().copied());
        let name = if xh.is_empty() { "(unnamed)" } else { xh };
        notes.push(format!(
            "export host {name} ({n} process{} with NCCL kernels) matches no log's host or processes; closest log host: {}",
            if n == 1 { "" } else { "es" },
            near.unwrap_or("(none)")
        ));
    }
    out.notes.extend(notes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::OpType;

    fn log(host: &str, pid: u32, bus: u64, nvml: u32, ar: u64) -> LogProcess {
        LogProcess {
            cuda_devs: [0].into(),
            nvml_devs: [nvml].into(),
            bus_ids: [bus].into(),
            units: [(OpType::AllReduce, ar)].into(),
            ..LogProcess::new(ProcessKey {
                host: host.into(),
                pid,
            })
        }
    }

    fn export(
        x: usize,
        host: &str,
        pid: u32,
        bus: Option<u64>,
        dev: u32,
        ar: u64,
    ) -> ExportProcess {
        ExportProcess {
            export: x,
            host: host.into(),
            pid,
            devices: [dev].into(),
            bus_ids: bus.into_iter().collect(),
            units: [(OpType::AllReduce, ar)].into(),
            kernels: ar,
            ..ExportProcess::default()
        }
    }

    #[test]
    fn fqdn_and_case_meet_the_short_name() {
        let logs = [
            log("node01", 10, 0x1b000, 0, 5),
            log("node01", 11, 0x2a000, 1, 5),
        ];
        let xs = [
            export(0, "NODE01.cluster.example.com", 11, Some(0x2a000), 1, 5),
            export(0, "NODE01.cluster.example.com", 10, Some(0x1b000), 0, 5),
        ];
        let id = pair(&logs, &xs);
        assert!(id.notes.is_empty(), "{:?}", id.notes);
        let k = id.key(0, 10, "NODE01.cluster.example.com");
        assert_eq!((k.host.as_str(), k.pid), ("node01", 10));
        let p = id.of_log(&logs[1].process).unwrap();
        assert_eq!(p.export_pid, 11);
        assert_eq!(
            p.matched_by,
            vec![
                Evidence::HostShort,
                Evidence::Pid,
                Evidence::BusId,
                Evidence::Device,
                Evidence::Sequence,
                Evidence::PidOrder
            ]
        );
        assert!(p.confidence > 0.95);
    }

    #[test]
    fn containers_pair_by_gpu_when_names_and_pids_differ() {
        // NCCL in a container (its id, its pids), nsys on the host.
        let logs = [
            log("3f9c2a7b1d4e", 52, 0x1b000, 0, 5),
            log("3f9c2a7b1d4e", 57, 0x2a000, 1, 5),
        ];
        let xs = [
            export(0, "node01.example.com", 40211, Some(0x2a000), 1, 5),
            export(0, "node01.example.com", 40190, Some(0x1b000), 0, 5),
        ];
        let id = pair(&logs, &xs);
        assert_eq!(id.key(0, 40190, "node01.example.com").pid, 52);
        assert_eq!(id.key(0, 40211, "node01.example.com").pid, 57);
        let p = id.of_log(&logs[0].process).unwrap();
        assert!(p.matched_by.contains(&Evidence::BusId));
        assert!(p.confidence >= 0.7, "{p:?}");
        assert!(
            id.notes
                .iter()
                .any(|n| n.contains("3f9c2a7b1d4e") && n.contains("node01.example.com")),
            "{:?}",
            id.notes
        );
    }

    #[test]
    fn another_machine_is_not_taken_for_a_renamed_one() {
        // node02's logs and node01's export: the same GPUs and steps, other pids.
        let logs = [
            log("node02", 52, 0x1b000, 0, 5),
            log("node02", 57, 0x2a000, 1, 5),
        ];
        let xs = [
            export(0, "node01", 40211, Some(0x2a000), 1, 5),
            export(0, "node01", 40190, Some(0x1b000), 0, 5),
        ];
        let id = pair(&logs, &xs);
        assert!(id.pairs.iter().all(|p| p.log.is_none()), "{:?}", id.pairs);
        let text = id.notes.join("\n");
        assert!(
            text.contains("log host node02") && text.contains("closest export host: node01"),
            "{text}"
        );
        assert!(
            text.contains("export host node01") && text.contains("closest log host: node02"),
            "{text}"
        );
    }

    #[test]
    fn equal_candidates_are_not_guessed() {
        // A hostless export whose pid two hosts reuse, nothing else to tell them apart.
        let logs = [log("a", 7, 0x1b000, 0, 5), log("b", 7, 0x1b000, 0, 5)];
        let xs = [export(0, "", 7, None, 0, 5)];
        let id = pair(&logs, &xs);
        assert_eq!(id.pairs[0].log, None);
        assert!(
            id.notes.iter().any(|n| n.contains("equally well")),
            "{:?}",
            id.notes
        );
    }

    #[test]
    fn lone_hosts_are_named_with_the_closest_candidate() {
        let logs = [log("gpu-a17", 7, 0x1b000, 0, 5)];
        let xs = [export(0, "gpu-a71.site", 99, Some(0x3a000), 3, 1)];
        let id = pair(&logs, &xs);
        assert_eq!(id.pairs[0].log, None);
        let text = id.notes.join("\n");
        assert!(
            text.contains("log host gpu-a17") && text.contains("gpu-a71.site"),
            "{text}"
        );
        assert!(
            text.contains("export host gpu-a71.site") && text.contains("closest log host: gpu-a17"),
            "{text}"
        );
    }
}
