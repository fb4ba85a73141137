//! Which kind of link carried a communicator's (or a pair's) traffic: NVLink, PCIe or the
//! network. Why it matters: latency and bandwidth differ by an order of magnitude between them
//! (seed 003 measures saturation at 2 MB on PCIe, 16 MB on NVLink), so a performance model fitted
//! over all of them at once fits none.
//!
//! Evidence, strongest first:
//! 1. the transports of the communicator's connections as NCCL printed them
//!    (`crate::comm_setups`: `NET/IB/GDRDMA`, `P2P/IPC/read`, `SHM`): any network transport
//!    makes it a network communicator;
//! 2. members on more than one host: the network (the slowest link of a ring sets its pace);
//! 3. one host: its topology dump (`=== System : ...`, on [`pipeline::ProcessSummary`]) — an
//!    `NVL` link from a GPU means NVLink, a dump without one means PCIe; with no dump, the class
//!    is [`LinkClass::IntraNode`] (one node, link kind not printed).

use ingest_nccl::topo::{LinkKind, NodeKind, Topology};
use serde::{Deserialize, Serialize};

/// The kind of link a transfer crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LinkClass {
    NVLink,
    PCIe,
    /// Between nodes (InfiniBand, RoCE, sockets).
    #[serde(rename = "network")]
    Network,
    /// Within one node, but no topology dump said over what.
    #[serde(rename = "intra-node")]
    IntraNode,
}

impl LinkClass {
    pub fn name(self) -> &'static str {
        match self {
            LinkClass::NVLink => "NVLink",
            LinkClass::PCIe => "PCIe",
            LinkClass::Network => "network",
            LinkClass::IntraNode => "intra-node",
        }
    }
}

/// The class of a host's GPU-to-GPU links, from its topology dump: NVLink when a GPU has an
/// NVLink (to a GPU or an NVSwitch), PCIe otherwise; `None` without a dump.
pub fn host_class(topology: Option<&Topology>) -> Option<LinkClass> {
    let t = topology?;
    let gpu_nvlink = t.links.iter().any(|l| {
        matches!(l.kind, LinkKind::Nvl | LinkKind::Nvb)
            && t.nodes.get(l.from).is_some_and(|n| n.kind == NodeKind::Gpu)
    });
    Some(if gpu_nvlink {
        LinkClass::NVLink
    } else {
        LinkClass::PCIe
    })
}

/// Whether a printed transport (`NET/IB/GDRDMA`, `COLLNET/...`) goes over the network.
pub fn is_network_transport(transport: &str) -> bool {
    let t = transport.to_ascii_uppercase();
    t.starts_with("NET") || t.starts_with("COLLNET")
}

/// A communicator's class from its transports, how many hosts its members are on, and the class
/// of the one host when there is one.
pub fn comm_class(transports: &[String], hosts: usize, host: Option<LinkClass>) -> LinkClass {
    if transports.iter().any(|t| is_network_transport(t)) || hosts > 1 {
        LinkClass::Network
    } else {
        host.unwrap_or(LinkClass::IntraNode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialised_as_named() {
        for c in [
            LinkClass::NVLink,
            LinkClass::PCIe,
            LinkClass::Network,
            LinkClass::IntraNode,
        ] {
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::Value::from(c.name())
            );
        }
    }

    #[test]
    fn transports_and_hosts_decide_before_the_topology() {
        let net = vec!["NET/IB/GDRDMA".to_string(), "P2P/IPC/read".to_string()];
        let p2p = vec!["P2P/IPC/read".to_string()];
        assert_eq!(
            comm_class(&net, 1, Some(LinkClass::NVLink)),
            LinkClass::Network
        );
        assert_eq!(comm_class(&p2p, 2, None), LinkClass::Network);
        assert_eq!(comm_class(&p2p, 1, Some(LinkClass::PCIe)), LinkClass::PCIe);
        assert_eq!(comm_class(&[], 1, None), LinkClass::IntraNode);
        assert!(is_network_transport("CollNet/IB"));
        assert!(!is_network_transport("SHM"));
    }

    /// A real topology dump's GPUs with NVLink, and one without: the parser's own records.
    #[test]
    fn the_topology_dump_tells_nvlink_from_pcie() {
        let nvl = "h:1:1 [0] NCCL INFO === System : maxBw 40.0 totalBw 40.0 ===\n\
                   h:1:1 [0] NCCL INFO CPU/0 (1/1/1)\n\
                   h:1:1 [0] NCCL INFO + PCI[24.0] - GPU/18000 (0)\n\
                   h:1:1 [0] NCCL INFO               + NVL[40.0] - GPU/2A000\n\
                   h:1:1 [0] NCCL INFO + PCI[24.0] - GPU/2A000 (1)\n\
                   h:1:1 [0] NCCL INFO               + NVL[40.0] - GPU/18000\n\
                   h:1:1 [0] NCCL INFO ==========================================\n";
        let pci = "h:1:1 [0] NCCL INFO === System : maxBw 24.0 totalBw 24.0 ===\n\
                   h:1:1 [0] NCCL INFO CPU/0 (1/1/1)\n\
                   h:1:1 [0] NCCL INFO + PCI[24.0] - GPU/18000 (0)\n\
                   h:1:1 [0] NCCL INFO + PCI[24.0] - GPU/2A000 (1)\n\
                   h:1:1 [0] NCCL INFO ==========================================\n";
        let class = |text: &str| {
            let log = ingest_nccl::parse_bytes("t.log", 0, text.as_bytes());
            host_class(log.processes[0].topology.as_ref())
        };
        assert_eq!(class(nvl), Some(LinkClass::NVLink));
        assert_eq!(class(pci), Some(LinkClass::PCIe));
        assert_eq!(host_class(None), None);
    }
}
