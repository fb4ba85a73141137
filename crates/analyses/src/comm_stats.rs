//! Bandwidth per logical communicator: the enrichment of every matched kernel (bus bandwidth and
//! bus efficiency against the communicator's bottleneck link, thesis §4.2.5) summarised by its
//! median, with the bottleneck's name. The exports ([`export`](../export)) show the same figures
//! per kernel; the page shows these per communicator.

use enrich::{Bottleneck, TopoIndex};
use load::Session;
use pipeline::Analysis;

/// The bottleneck link of every logical communicator whose members' GPUs the logs' topology
/// dumps place (same order as [`enrich::Communicators::comms`]).
pub fn comm_bottlenecks(session: &Session, analysis: &Analysis) -> Vec<Option<Bottleneck>> {
    let topo = TopoIndex::build(session.logs().iter().flat_map(|l| {
        l.parsed
            .processes
            .iter()
            .filter_map(|p| p.topology.as_ref().map(|t| (p.process.host.as_str(), t)))
    }));
    let inits: Vec<_> = session
        .logs()
        .iter()
        .flat_map(|l| l.parsed.inits.iter().cloned())
        .collect();
    analysis
        .communicators
        .comms
        .iter()
        .map(|c| topo.communicator(&enrich::comm_gpus(c, &inits)))
        .collect()
}

/// One communicator's bandwidth summary.
#[derive(Debug, Clone, PartialEq)]
pub struct CommStats {
    /// Index into [`enrich::Communicators::comms`].
    pub comm: usize,
    /// Matched kernels with a bandwidth (fused Send/Recv groups are left out).
    pub kernels: usize,
    pub median_bus_bw_gbps: Option<f64>,
    /// Median of bus bandwidth over the bottleneck's theoretical bus bandwidth.
    pub median_bus_efficiency: Option<f64>,
    pub bottleneck: Option<Bottleneck>,
}

/// Every communicator's summary, in communicator order.
pub fn comm_stats(session: &Session, analysis: &Analysis) -> Vec<CommStats> {
    let bottlenecks = comm_bottlenecks(session, analysis);
    let n = analysis.communicators.comms.len();
    let mut bus: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut eff: Vec<Vec<f64>> = vec![Vec::new(); n];
    crate::for_each_kernel_bandwidth(analysis, &bottlenecks, |k| {
        bus[k.comm].push(k.bus_bw_gbps);
        if let Some(e) = k.bus_efficiency {
            eff[k.comm].push(e);
        }
    });
    bottlenecks
        .into_iter()
        .enumerate()
        .map(|(c, bottleneck)| CommStats {
            comm: c,
            kernels: bus[c].len(),
            median_bus_bw_gbps: enrich::median(&mut bus[c]),
            median_bus_efficiency: enrich::median(&mut eff[c]),
            bottleneck,
        })
        .collect()
}
