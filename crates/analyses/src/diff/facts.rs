//! Differences no duration shows directly: the tuning lines' choices per signature (algorithm,
//! protocol, channels), NCCL versions, `NCCL_*` settings and the hosts' topology.

use crate::diff::changes::{Change, ChangeKind};
use crate::diff::profile::{HostTopology, RunProfile, SigKey};
use crate::diff::signatures::SignatureDiff;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One setting (or any named fact) that differs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactChange {
    pub name: String,
    pub base: String,
    pub new: String,
}

/// Versions, settings and hosts, base → new.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FactsDiff {
    pub versions_base: Vec<String>,
    pub versions_new: Vec<String>,
    /// `NCCL_*` settings whose values differ (`unset` on the side without them).
    pub settings: Vec<FactChange>,
    /// Each host's topology (`4 GPUs, NVLink 150 GB/s, network 25 GB/s`), by host.
    pub hosts_base: Vec<String>,
    pub hosts_new: Vec<String>,
}

/// The algorithm, protocol and channel changes of signatures both runs have, grouped by
/// (parallelism, operation, base → new), each with the |impact| of its signatures summed.
pub fn tuning_changes(signatures: &[SignatureDiff]) -> Vec<Change> {
    type Group = (ChangeKind, String, String, String, String);
    let mut grouped: BTreeMap<Group, Vec<&SignatureDiff>> = BTreeMap::new();
    for s in signatures {
        let (b, n) = (&s.base, &s.new);
        let pairs = [
            (
                ChangeKind::Algorithm,
                b.algorithm.clone(),
                n.algorithm.clone(),
            ),
            (ChangeKind::Protocol, b.protocol.clone(), n.protocol.clone()),
            (
                ChangeKind::Channels,
                b.channels.map(|c| c.to_string()),
                n.channels.map(|c| c.to_string()),
            ),
        ];
        for (kind, x, y) in pairs {
            if let (Some(x), Some(y)) = (x, y) {
                if x != y {
                    grouped
                        .entry((kind, s.key.parallelism.clone(), s.key.op.clone(), x, y))
                        .or_default()
                        .push(s);
                }
            }
        }
    }
    grouped
        .into_iter()
        .map(|((kind, par, op, x, y), sigs)| {
            let what = match kind {
                ChangeKind::Algorithm => "algorithm",
                ChangeKind::Protocol => "protocol",
                _ => "channels",
            };
            let mut c = Change::new(
                kind,
                sigs.iter().map(|s| s.impact_ns.abs()).sum(),
                format!(
                    "{par} {op} {what} {x} → {y} ({} size{})",
                    sigs.len(),
                    if sigs.len() == 1 { "" } else { "s" }
                ),
            );
            c.signatures = sigs.iter().map(|s| s.key.clone()).collect::<Vec<SigKey>>();
            c
        })
        .collect()
}

/// Versions, settings and hosts compared; the run-wide changes carry `explainable`: the |impact|
/// of the signatures that changed significantly, any of which they may explain.
pub fn compare(base: &RunProfile, new: &RunProfile, explainable: f64) -> (FactsDiff, Vec<Change>) {
    let mut changes = Vec::new();
    let versions = |p: &RunProfile| p.facts.versions.keys().cloned().collect::<Vec<_>>();
    let (vb, vn) = (versions(base), versions(new));
    if !vb.is_empty() && !vn.is_empty() && vb != vn {
        changes.push(Change::new(
            ChangeKind::Version,
            explainable,
            format!("NCCL {} → {}", vb.join(" + "), vn.join(" + ")),
        ));
    }
    let settings = settings(base, new);
    for s in &settings {
        changes.push(Change::new(
            ChangeKind::Setting,
            explainable,
            format!("{} {} → {}", s.name, s.base, s.new),
        ));
    }
    let hosts = |p: &RunProfile| {
        p.facts
            .hosts
            .iter()
            .map(HostTopology::text)
            .collect::<Vec<_>>()
    };
    let (hb, hn) = (hosts(base), hosts(new));
    // The kinds of host each run has (not how many: a larger world has more of the same).
    let kinds = |v: &[String]| v.iter().cloned().collect::<BTreeSet<String>>();
    if !hb.is_empty() && !hn.is_empty() && kinds(&hb) != kinds(&hn) {
        let text = |v: &[String]| {
            let mut m: BTreeMap<&str, usize> = BTreeMap::new();
            for h in v {
                *m.entry(h.as_str()).or_default() += 1;
            }
            m.iter()
                .map(|(h, n)| format!("{n}× ({h})"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        changes.push(Change::new(
            ChangeKind::Topology,
            explainable,
            format!("hosts {} → {}", text(&hb), text(&hn)),
        ));
    }
    let facts = FactsDiff {
        versions_base: vb,
        versions_new: vn,
        settings,
        hosts_base: hb,
        hosts_new: hn,
    };
    (facts, changes)
}

/// Settings whose value sets differ.
fn settings(base: &RunProfile, new: &RunProfile) -> Vec<FactChange> {
    let (sb, sn) = (&base.facts.settings, &new.facts.settings);
    let names: BTreeSet<&String> = sb.keys().chain(sn.keys()).collect();
    let text = |v: Option<&BTreeSet<String>>| match v {
        Some(v) if !v.is_empty() => v.iter().cloned().collect::<Vec<_>>().join(" | "),
        _ => "unset".to_string(),
    };
    names
        .into_iter()
        .filter(|n| sb.get(*n) != sn.get(*n))
        .map(|n| FactChange {
            name: n.clone(),
            base: text(sb.get(n)),
            new: text(sn.get(n)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::profile::RunFacts;

    fn run(version: &str, settings: &[(&str, &str)], net: f64) -> RunProfile {
        RunProfile {
            facts: RunFacts {
                versions: [(version.to_string(), vec![0, 1])].into_iter().collect(),
                settings: settings
                    .iter()
                    .map(|(k, v)| (k.to_string(), [v.to_string()].into_iter().collect()))
                    .collect(),
                hosts: vec![HostTopology {
                    host: "a".into(),
                    gpus: 4,
                    nvlink_gbps: Some(150.0),
                    net_gbps: Some(net),
                }],
            },
            ..RunProfile::default()
        }
    }

    #[test]
    fn versions_settings_and_hosts_that_differ_and_only_those() {
        let a = run(
            "2.21.5",
            &[("NCCL_ALGO", "Ring"), ("NCCL_IB_HCA", "mlx5_0")],
            25.0,
        );
        let b = run(
            "2.27.5",
            &[("NCCL_ALGO", "Tree"), ("NCCL_IB_HCA", "mlx5_0")],
            12.5,
        );
        let (facts, changes) = compare(&a, &b, 7.0);
        let whats: Vec<&str> = changes.iter().map(|c| c.what.as_str()).collect();
        assert_eq!(
            whats,
            [
                "NCCL 2.21.5 → 2.27.5",
                "NCCL_ALGO Ring → Tree",
                "hosts 1× (4 GPUs, NVLink 150 GB/s, network 25 GB/s) → 1× (4 GPUs, NVLink 150 GB/s, network 12.5 GB/s)"
            ]
        );
        assert!(changes.iter().all(|c| c.impact_ns == 7.0));
        assert_eq!(facts.settings.len(), 1);
        let (_, none) = compare(&a, &a, 7.0);
        assert!(none.is_empty());
        let unset = run("2.21.5", &[("NCCL_ALGO", "Ring")], 25.0);
        let (facts, _) = compare(&a, &unset, 0.0);
        assert_eq!(
            facts.settings,
            [FactChange {
                name: "NCCL_IB_HCA".into(),
                base: "mlx5_0".into(),
                new: "unset".into()
            }]
        );
    }
}
