//! Link bandwidths between GPUs, from the topology dump NCCL prints per process (thesis §4.2.1
//! listing 4.3, §4.2.5).
//!
//! Why: the theoretical limit of a collective is set by the slowest link its data must cross.
//! Inside a node that is the widest path between the two GPUs through the printed links (NVLink
//! directly or via an NVSwitch, else PCI/SYS through the CPU); between nodes it is the network
//! (`NET[x]`) bandwidth of the slower host. GPUs are identified by PCI bus id, the persistent
//! identity NCCL prints both in the topology (`GPU/0-1b000`) and in init lines (`busId 1b000`).

use ingest_nccl::{LinkKind, NodeKind, Topology};
use std::collections::BTreeMap;

/// The limiting link between two GPUs or across a communicator.
#[derive(Debug, Clone, PartialEq)]
pub struct Bottleneck {
    pub gbps: f64,
    /// Kind of the narrowest link (`None` for the conservative fallback).
    pub kind: Option<LinkKind>,
    /// Human-readable: `NVL node01 18000↔2a000`, `NET node01↔node02`, `min known link`.
    pub name: String,
}

fn kind_name(k: LinkKind) -> &'static str {
    match k {
        LinkKind::Loc => "LOC",
        LinkKind::Nvl => "NVL",
        LinkKind::Nvb => "NVB",
        LinkKind::Pci => "PCI",
        LinkKind::C2c => "C2C",
        LinkKind::Sys => "SYS",
        LinkKind::Net => "NET",
        LinkKind::Other => "link",
    }
}

/// Normalised bus id: lower-case hex, no domain, no leading zeros, no function
/// (`0000:1B:00.0` → `1b000`, `1b000` → `1b000`).
pub fn normalise_bus_id(s: &str) -> String {
    let s = s.trim().to_ascii_lowercase();
    let hex: String = if s.contains(':') {
        // dddd:bb:dd.f → bbdd0 as NCCL prints it (bus, device, function digits)
        let parts: Vec<&str> = s.split(':').collect();
        let tail = parts[parts.len().saturating_sub(2)..].join("");
        tail.replace('.', "")
    } else {
        s
    };
    let t = hex.trim_start_matches('0');
    if t.is_empty() {
        "0".into()
    } else {
        t.into()
    }
}

/// One host's graph: undirected links between node indices of its topology.
#[derive(Debug, Clone, PartialEq)]
struct HostGraph {
    topo: Topology,
    /// bus id → node index of the GPU.
    gpus: BTreeMap<String, usize>,
    /// Fastest network link of the host (GB/s), if it printed one.
    net_gbps: Option<f64>,
}

/// Per-host topologies, for bottleneck queries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TopoIndex {
    hosts: BTreeMap<String, HostGraph>,
}

impl TopoIndex {
    /// Builds from (host, topology) pairs, e.g. each `ProcessInfo` of a parsed log with its
    /// `topology`. The first topology of each host is used (all processes of a node print it).
    pub fn build<'a>(topos: impl IntoIterator<Item = (&'a str, &'a Topology)>) -> TopoIndex {
        let mut hosts = BTreeMap::new();
        for (host, t) in topos {
            if hosts.contains_key(host) {
                continue;
            }
            let gpus = t
                .nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| n.kind == NodeKind::Gpu)
                .filter_map(|(i, n)| n.bus_id.as_deref().map(|b| (normalise_bus_id(b), i)))
                .collect();
            let net_gbps = t
                .links
                .iter()
                .filter(|l| l.kind == LinkKind::Net)
                .map(|l| l.bw_gbps)
                .reduce(f64::max);
            hosts.insert(
                host.to_string(),
                HostGraph {
                    topo: t.clone(),
                    gpus,
                    net_gbps,
                },
            );
        }
        TopoIndex { hosts }
    }

    /// Builds from parsed logs: every process' first topology block, keyed by its host.
    pub fn from_logs(logs: &[ingest_nccl::ParsedLog]) -> TopoIndex {
        TopoIndex::build(logs.iter().flat_map(|l| {
            l.processes
                .iter()
                .filter_map(|p| p.topology.as_ref().map(|t| (p.process.host.as_str(), t)))
        }))
    }

    /// GPUs (bus ids) a host's topology lists.
    pub fn gpus_of(&self, host: &str) -> Vec<String> {
        self.hosts
            .get(host)
            .map(|h| h.gpus.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Network bandwidth of a host (its fastest `NET` link).
    pub fn net_gbps(&self, host: &str) -> Option<f64> {
        self.hosts.get(host)?.net_gbps
    }

    /// Bottleneck between two GPUs given as (host, bus id).
    pub fn pair(&self, a: (&str, &str), b: (&str, &str)) -> Option<Bottleneck> {
        if a.0 != b.0 {
            let (na, nb) = (self.net_gbps(a.0)?, self.net_gbps(b.0)?);
            return Some(Bottleneck {
                gbps: na.min(nb),
                kind: Some(LinkKind::Net),
                name: format!("NET {}↔{}", a.0, b.0),
            });
        }
        let h = self.hosts.get(a.0)?;
        let (ba, bb) = (normalise_bus_id(a.1), normalise_bus_id(b.1));
        let (&ia, &ib) = (h.gpus.get(&ba)?, h.gpus.get(&bb)?);
        if ia == ib {
            return None;
        }
        let (gbps, kind) = widest_path(&h.topo, ia, ib)?;
        Some(Bottleneck {
            gbps,
            kind: Some(kind),
            name: format!("{} {} {}↔{}", kind_name(kind), a.0, ba, bb),
        })
    }

    /// Bottleneck of a communicator: the minimum over member pairs. Pairs the topology does not
    /// cover fall back to the slowest known GPU-relevant link (a conservative limit).
    pub fn communicator(&self, gpus: &[(String, String)]) -> Option<Bottleneck> {
        let mut best: Option<Bottleneck> = None;
        let mut unknown = false;
        for (i, a) in gpus.iter().enumerate() {
            for b in gpus.iter().skip(i + 1) {
                if a == b {
                    continue;
                }
                match self.pair((&a.0, &a.1), (&b.0, &b.1)) {
                    Some(bn) => {
                        if best.as_ref().is_none_or(|x| bn.gbps < x.gbps) {
                            best = Some(bn);
                        }
                    }
                    None => unknown = true,
                }
            }
        }
        if unknown {
            if let Some(min) = self.min_known_link() {
                if best.as_ref().is_none_or(|x| min < x.gbps) {
                    best = Some(Bottleneck {
                        gbps: min,
                        kind: None,
                        name: "min known link".into(),
                    });
                }
            }
        }
        best
    }

    /// The slowest NVL/NVB/PCI/C2C/SYS/NET link of any host.
    pub fn min_known_link(&self) -> Option<f64> {
        self.hosts
            .values()
            .flat_map(|h| h.topo.links.iter())
            .filter(|l| !matches!(l.kind, LinkKind::Loc | LinkKind::Other))
            .map(|l| l.bw_gbps)
            .reduce(f64::min)
    }
}

/// (host, bus id) of every member of a logical communicator whose init line printed a bus id:
/// the input of [`TopoIndex::communicator`].
pub fn comm_gpus(
    comm: &crate::communicators::LogicalComm,
    inits: &[model::log::CommInit],
) -> Vec<(String, String)> {
    comm.members
        .iter()
        .filter_map(|(p, ptr, _)| {
            let i = inits.iter().find(|i| &i.process == p && i.comm == *ptr)?;
            Some((p.host.to_string(), normalise_bus_id(i.bus_id.as_deref()?)))
        })
        .collect()
}

/// Widest (max-min bandwidth) path between two nodes of one host, not through the network.
fn widest_path(t: &Topology, from: usize, to: usize) -> Option<(f64, LinkKind)> {
    let n = t.nodes.len();
    // best[i] = (bandwidth of the narrowest link on the widest path so far, its kind)
    let mut best: Vec<Option<(f64, LinkKind)>> = vec![None; n];
    let mut done = vec![false; n];
    best[from] = Some((f64::INFINITY, LinkKind::Loc));
    loop {
        let cur = (0..n)
            .filter(|&i| !done[i])
            .filter_map(|i| best[i].map(|b| (i, b)))
            .max_by(|a, b| a.1 .0.total_cmp(&b.1 .0));
        let Some((u, (bw, kind))) = cur else { break };
        if u == to {
            return Some((bw, kind));
        }
        done[u] = true;
        for l in &t.links {
            let v = if l.from == u {
                l.to
            } else if l.to == u {
                l.from
            } else {
                continue;
            };
            if done[v] || l.kind == LinkKind::Net || t.nodes[v].kind == NodeKind::Net {
                continue;
            }
            let cand = if l.bw_gbps < bw {
                (l.bw_gbps, l.kind)
            } else {
                (bw, kind)
            };
            if best[v].is_none_or(|b| cand.0 > b.0) {
                best[v] = Some(cand);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = "\
node01:1:1 [0] NCCL INFO === System : maxBw 150.0 totalBw 450.0 ===
node01:1:1 [0] NCCL INFO CPU/0-0 (1/1/1)
node01:1:1 [0] NCCL INFO + PCI[24.0] - GPU/0-18000 (0)
node01:1:1 [0] NCCL INFO               + NVL[150.0] - GPU/0-2a000
node01:1:1 [0] NCCL INFO + PCI[24.0] - GPU/0-2a000 (1)
node01:1:1 [0] NCCL INFO               + NVL[150.0] - GPU/0-18000
node01:1:1 [0] NCCL INFO + PCI[24.0] - GPU/0-3a000 (2)
node01:1:1 [0] NCCL INFO + PCI[24.0] - NIC/0-d1000
node01:1:1 [0] NCCL INFO               + NET[12.5] - NET/0-0 (7a85/1/12.500000)
node01:1:1 [0] NCCL INFO ==========================================
";

    fn topo(host: &str) -> Topology {
        let text = NODE.replace("node01", host);
        let log = ingest_nccl::parse_bytes("t.log", 0, text.as_bytes());
        log.processes[0].topology.clone().expect("topology parsed")
    }

    #[test]
    fn bottlenecks_inside_and_across_nodes() {
        let (a, b) = (topo("node01"), topo("node02"));
        let idx = TopoIndex::build([("node01", &a), ("node02", &b)]);
        let nv = idx.pair(("node01", "18000"), ("node01", "2a000")).unwrap();
        assert_eq!((nv.gbps, nv.kind), (150.0, Some(LinkKind::Nvl)));
        let pci = idx
            .pair(("node01", "18000"), ("node01", "0000:3a:00.0"))
            .unwrap();
        assert_eq!((pci.gbps, pci.kind), (24.0, Some(LinkKind::Pci)));
        let net = idx.pair(("node01", "18000"), ("node02", "18000")).unwrap();
        assert_eq!((net.gbps, net.kind), (12.5, Some(LinkKind::Net)));
        let g = |h: &str, b: &str| (h.to_string(), b.to_string());
        let c = idx
            .communicator(&[
                g("node01", "18000"),
                g("node01", "2a000"),
                g("node02", "18000"),
            ])
            .unwrap();
        assert_eq!(c.gbps, 12.5);
        // unknown GPU: the conservative minimum of known links
        let u = idx
            .communicator(&[g("node01", "18000"), g("node03", "18000")])
            .unwrap();
        assert_eq!(u.gbps, 12.5);
        assert_eq!(normalise_bus_id("0000:1B:00.0"), "1b000");
    }

    #[test]
    fn demo_run_bottlenecks() {
        // 2 nodes × 4 GPUs (NVLink 150 GB/s inside, 25 GB/s network between).
        let p = synth::preset("demo").expect("preset");
        let run = synth::generate(&p.config);
        let logs: Vec<_> = run
            .files
            .iter()
            .enumerate()
            .map(|(i, (n, b))| ingest_nccl::parse_bytes(n, i as u32, b))
            .collect();
        let idx = TopoIndex::from_logs(&logs);
        let inits: Vec<_> = logs.iter().flat_map(|l| l.inits.clone()).collect();
        let ops: Vec<_> = logs.iter().flat_map(|l| l.ops.iter()).collect();
        let comms = crate::communicators::group(&inits, &ops);
        let world = &comms.comms[0];
        assert_eq!(world.size, 8);
        let b = idx
            .communicator(&comm_gpus(world, &inits))
            .expect("bottleneck");
        assert_eq!((b.gbps, b.kind), (25.0, Some(LinkKind::Net)));
        let tp = comms
            .comms
            .iter()
            .find(|c| c.global_ranks == vec![0, 1])
            .expect("a TP pair");
        let b = idx
            .communicator(&comm_gpus(tp, &inits))
            .expect("bottleneck");
        assert_eq!((b.gbps, b.kind), (150.0, Some(LinkKind::Nvl)));
    }
}
