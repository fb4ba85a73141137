//! Set-up that differs across ranks: NCCL versions, `NCCL_*` settings, the network (one rank
//! on sockets while the others use IB), and within one communicator the transports its
//! members connect over, their channel counts and the sizes they print.
//!
//! A setting printed by some processes and not by others is reported only against processes
//! that printed their own set-up (some other setting, their network): a log that starts later
//! simply has no set-up lines, which says nothing.

use super::groups::Comm;
use super::index::Index;
use super::{text, Evidence, Finding, Kind, Severity};
use ingest_nccl::{CommChannels, ConfigFact};
use model::log::{ProcessKey, SourceLine};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};

/// value → (ranks, first line)
type Values = BTreeMap<String, (BTreeSet<u32>, SourceLine)>;

/// Channel lines by (process, communicator pointer).
type ChannelsOf<'a> = FxHashMap<(&'a ProcessKey, u64), Vec<&'a CommChannels>>;

pub(crate) fn find(ix: &Index<'_>, comms: &[Comm]) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(versions(ix));
    out.extend(settings(ix));
    let mut channels: ChannelsOf<'_> = FxHashMap::default();
    for log in ix.logs {
        for ch in &log.channels {
            if let Some(comm) = ch.comm {
                channels.entry((&ch.process, comm)).or_default().push(ch);
            }
        }
    }
    for c in comms {
        out.extend(comm_shape(ix, c, &channels));
    }
    out
}

fn versions(ix: &Index<'_>) -> Option<Finding> {
    let mut values: Values = BTreeMap::new();
    for log in ix.logs {
        for p in &log.processes {
            let (Some(v), Some(r)) = (&p.nccl_version, ix.rank_of_key(&p.process)) else {
                continue;
            };
            let e = values
                .entry(v.clone())
                .or_insert((BTreeSet::new(), p.first_line));
            e.0.insert(r);
        }
    }
    disagreement(ix, "the NCCL version", &values, Severity::Warning)
}

/// Each `NCCL_*` setting and the network, across the processes that printed their set-up.
fn settings(ix: &Index<'_>) -> Vec<Finding> {
    // name → value → (ranks, line); "network" for `Using network`
    let mut by_name: BTreeMap<String, Values> = BTreeMap::new();
    let mut printed_setup: BTreeSet<u32> = BTreeSet::new();
    for log in ix.logs {
        for c in &log.config {
            let Some(r) = c.process.as_ref().and_then(|p| ix.rank_of_key(p)) else {
                continue;
            };
            let (name, value) = match &c.fact {
                ConfigFact::Setting { name, value } => (name.clone(), value.clone()),
                ConfigFact::Network(n) => ("network".to_string(), n.clone()),
                ConfigFact::Address { .. } => continue,
            };
            printed_setup.insert(r);
            let values = by_name.entry(name).or_default();
            let e = values.entry(value).or_insert((BTreeSet::new(), c.source));
            e.0.insert(r);
        }
    }
    let mut out = Vec::new();
    for (name, values) in &by_name {
        let what = if name == "network" {
            "the network NCCL uses".to_string()
        } else {
            name.clone()
        };
        if let Some(f) = disagreement(ix, &what, values, Severity::Warning) {
            out.push(f);
            continue;
        }
        // One value, printed by some of the ranks that printed their set-up.
        let have: BTreeSet<u32> = values
            .values()
            .flat_map(|(r, _)| r.iter().copied())
            .collect();
        let without: Vec<u32> = printed_setup.difference(&have).copied().collect();
        if !without.is_empty() && name != "network" {
            if let Some((value, (ranks, line))) = values.iter().next() {
                let ranks: Vec<u32> = ranks.iter().copied().collect();
                out.push(config_finding(
                    Severity::Info,
                    format!(
                        "{name}={value} is set on {} but not printed by {}, which printed their own set-up.",
                        text::ranks(&ranks),
                        text::ranks(&without)
                    ),
                    without,
                    vec![ix.evidence(*line)],
                ));
            }
        }
    }
    out
}

/// A finding when ranks hold different values of one thing.
fn disagreement(
    ix: &Index<'_>,
    what: &str,
    values: &Values,
    severity: Severity,
) -> Option<Finding> {
    if values.len() < 2 {
        return None;
    }
    let mut parts: Vec<(usize, String, Vec<u32>)> = values
        .iter()
        .map(|(v, (r, _))| (r.len(), v.clone(), r.iter().copied().collect()))
        .collect();
    // The most common value first: the others are the odd ones out.
    parts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let sentence: Vec<String> = parts
        .iter()
        .map(|(_, v, r)| format!("{v} on {}", text::ranks(r)))
        .collect();
    let odd: Vec<u32> = parts
        .iter()
        .skip(1)
        .flat_map(|(_, _, r)| r.iter().copied())
        .collect();
    let evidence: Vec<Evidence> = values.values().map(|(_, l)| ix.evidence(*l)).collect();
    Some(config_finding(
        severity,
        format!("Ranks disagree on {what}: {}.", text::list(sentence)),
        odd,
        evidence,
    ))
}

fn config_finding(
    severity: Severity,
    message: String,
    mut ranks: Vec<u32>,
    evidence: Vec<Evidence>,
) -> Finding {
    ranks.sort_unstable();
    ranks.dedup();
    Finding {
        kind: Kind::Config,
        severity,
        communicator: None,
        op_count: None,
        ranks,
        processes: Vec::new(),
        message,
        evidence,
        class: None,
        first: false,
        time_base: None,
        grouped_by: None,
        peer_ranks: Vec::new(),
        time: None,
    }
}

/// Within one communicator: the network transports members connect over, their channel
/// counts and the sizes they print.
fn comm_shape(ix: &Index<'_>, c: &Comm, channels_of: &ChannelsOf<'_>) -> Vec<Finding> {
    if c.members.len() < 2 {
        return Vec::new();
    }
    let mut transports: Values = BTreeMap::new();
    let mut channels: Values = BTreeMap::new();
    let mut sizes: Values = BTreeMap::new();
    for &m in &c.members {
        let p = &ix.pairs[m];
        let Some(r) = ix.rank(p.proc) else { continue };
        let key = &ix.procs[p.proc].key;
        for ch in channels_of.get(&(key, p.comm)).into_iter().flatten() {
            {
                let nets: BTreeSet<String> = ch
                    .connections
                    .iter()
                    .filter(|x| x.via.starts_with("NET/"))
                    .map(|x| x.via.split('/').take(2).collect::<Vec<_>>().join("/"))
                    .collect();
                for n in nets {
                    transports
                        .entry(n)
                        .or_insert((BTreeSet::new(), ch.source))
                        .0
                        .insert(r);
                }
                if let Some(n) = ch.coll_channels.or(ch.nchannels) {
                    channels
                        .entry(n.to_string())
                        .or_insert((BTreeSet::new(), ch.source))
                        .0
                        .insert(r);
                }
            }
        }
        let line = p
            .init
            .map(|i| i.2)
            .or_else(|| p.colls.first().map(|e| ix.source(e)))
            .unwrap_or_default();
        sizes
            .entry(p.nranks.to_string())
            .or_insert((BTreeSet::new(), line))
            .0
            .insert(r);
    }
    let mut out = Vec::new();
    let named = |what: &str| format!("{what} of communicator {}", c.id);
    for (what, values) in [
        (named("the network transport"), &transports),
        (named("the channel count"), &channels),
        (named("the size"), &sizes),
    ] {
        if let Some(mut f) = disagreement(ix, &what, values, Severity::Warning) {
            f.communicator = Some(c.id.clone());
            out.push(f);
        }
    }
    out
}
