//! How NCCL set up each logical communicator, as its members' logs printed it: the channels, the
//! tree channels, the transports of the channels' connections, and the communicator's node
//! layout. Read from the channel and init records (`ingest_nccl::CommChannels`, `CommInit`),
//! which name the communicator by each process's own pointer.

use load::Session;
use pipeline::Analysis;
use std::collections::BTreeMap;

/// One logical communicator's set-up.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CommSetup {
    /// Index into [`enrich::Communicators::comms`].
    pub comm: usize,
    /// The most channels a member printed (`Channel cc/NN`, `N coll channels`).
    pub channels: Option<u32>,
    /// The most tree channels a member printed (`Trees [c] ...`).
    pub tree_channels: Option<u32>,
    /// Each transport its members' channels connect through (`P2P/IPC/read`, `NET/IB/GDRDMA`:
    /// the device numbers left out) with how many connections use it, most used first.
    pub transports: Vec<(String, usize)>,
    /// Nodes and ranks per node, from the members' `nNodes`/`localRanks` lines (2.19+).
    pub nodes: Option<u32>,
    pub local_ranks: Option<u32>,
}

/// Every communicator's set-up, in communicator order.
pub fn comm_setups(session: &Session, analysis: &Analysis) -> Vec<CommSetup> {
    let comms = &analysis.communicators;
    let mut out: Vec<CommSetup> = (0..comms.comms.len())
        .map(|comm| CommSetup {
            comm,
            ..CommSetup::default()
        })
        .collect();
    let mut transports: Vec<BTreeMap<String, usize>> = vec![BTreeMap::new(); out.len()];
    for log in session.logs() {
        for ch in &log.parsed.channels {
            let Some(c) = ch.comm.and_then(|p| comms.comm_of(&ch.process, p)) else {
                continue;
            };
            let (Some(s), Some(t)) = (out.get_mut(c), transports.get_mut(c)) else {
                continue;
            };
            s.channels = s.channels.max(ch.nchannels);
            let trees = ch.trees.iter().map(|t| t.channel).max().map(|m| m + 1);
            s.tree_channels = s.tree_channels.max(trees);
            for conn in &ch.connections {
                *t.entry(transport(&conn.via)).or_insert(0) += 1;
            }
        }
        for init in &log.parsed.inits {
            let Some(s) = comms
                .comm_of(&init.process, init.comm)
                .and_then(|c| out.get_mut(c))
            else {
                continue;
            };
            s.nodes = s.nodes.max(init.n_nodes);
            s.local_ranks = s.local_ranks.max(init.local_ranks);
        }
    }
    for (s, t) in out.iter_mut().zip(transports) {
        s.transports = t.into_iter().collect();
        // Most used first; equal counts by name (the map's order, kept by a stable sort).
        s.transports.sort_by_key(|t| std::cmp::Reverse(t.1));
    }
    out
}

/// A transport without its device numbers: `NET/IB/0/GDRDMA` and `NET/IB/1/GDRDMA` are one
/// kind of connection on two NICs.
fn transport(via: &str) -> String {
    via.split('/')
        .filter(|part| !part.chars().all(|c| c.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join("/")
}

impl CommSetup {
    /// `8 channels (8 tree)`, `2 nodes × 4`: what the page's table shows.
    pub fn channels_text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = self.channels {
            let trees = self
                .tree_channels
                .map_or(String::new(), |t| format!(" ({t} tree)"));
            parts.push(format!("{n} channels{trees}"));
        }
        if let (Some(n), Some(l)) = (self.nodes, self.local_ranks) {
            parts.push(format!("{n} nodes × {l}"));
        }
        parts.join(", ")
    }

    /// `P2P/IPC/read ×24, NET/IB/GDRDMA ×8`.
    pub fn transports_text(&self) -> String {
        self.transports
            .iter()
            .map(|(t, n)| format!("{t} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_lose_their_device_numbers() {
        assert_eq!(transport("NET/IB/0/GDRDMA/Shared"), "NET/IB/GDRDMA/Shared");
        assert_eq!(transport("P2P/IPC/read"), "P2P/IPC/read");
        assert_eq!(transport("P2P/direct pointer"), "P2P/direct pointer");
        assert_eq!(transport("SHM"), "SHM");
    }

    #[test]
    fn texts() {
        let s = CommSetup {
            comm: 0,
            channels: Some(8),
            tree_channels: Some(8),
            transports: vec![("P2P/IPC".into(), 24), ("NET/IB/GDRDMA".into(), 8)],
            nodes: Some(2),
            local_ranks: Some(4),
        };
        assert_eq!(s.channels_text(), "8 channels (8 tree), 2 nodes × 4");
        assert_eq!(s.transports_text(), "P2P/IPC ×24, NET/IB/GDRDMA ×8");
        assert_eq!(CommSetup::default().channels_text(), "");
    }
}
