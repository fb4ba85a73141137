//! Every matched kernel's bandwidth, one point each: the page's bandwidth-versus-size scatter and
//! efficiency distribution, and what [`crate::comm_stats`] summarises per communicator (its
//! medians), so the points' count per communicator equals its `kernels` there.

use enrich::Bottleneck;
use pipeline::Analysis;

/// One matched kernel that ran a single log operation.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelBw {
    /// Index into [`enrich::Communicators::comms`].
    pub comm: usize,
    /// The operation's bytes (`enrich::op_bytes`).
    pub bytes: u64,
    pub bus_bw_gbps: f64,
    /// Against the communicator's bottleneck link, when the topology places it.
    pub bus_efficiency: Option<f64>,
}

/// Every matched kernel with a bandwidth, process by process in kernel order, against
/// `bottlenecks` ([`crate::comm_bottlenecks`], passed in: the caller draws them too, and they cost
/// a pass over every topology dump). Fused Send/Recv groups are left out: they move different
/// sizes to different peers and have no single figure.
pub fn kernel_bandwidths(analysis: &Analysis, bottlenecks: &[Option<Bottleneck>]) -> Vec<KernelBw> {
    let mut out = Vec::new();
    for_each_kernel_bandwidth(analysis, bottlenecks, |k| out.push(k));
    out
}

/// [`kernel_bandwidths`] one at a time, without a list of them (40 bytes a kernel: the
/// page's panels only summarise them).
pub fn for_each_kernel_bandwidth(
    analysis: &Analysis,
    bottlenecks: &[Option<Bottleneck>],
    mut visit: impl FnMut(KernelBw),
) {
    for pm in &analysis.alignments.processes {
        let mut comm_of = analysis.communicators.comm_lookup(&pm.process);
        for (k, m) in pm.matched_spans() {
            let [first] = m.log_ops[..] else { continue };
            let Some(op) = pm.log_ops.get(first as usize) else {
                continue;
            };
            let Some(c) = comm_of(op.comm) else {
                continue;
            };
            let limit = bottlenecks
                .get(c)
                .and_then(|b| b.as_ref())
                .map(|b| (b.gbps, b.name.as_str()));
            let Some(bw) = enrich::for_log_op(&op, k.end_ns - k.start_ns, limit) else {
                continue;
            };
            visit(KernelBw {
                comm: c,
                bytes: bw.bytes,
                bus_bw_gbps: bw.bus_bw_gbps,
                bus_efficiency: bw.theoretical.as_ref().map(|t| t.bus_efficiency),
            });
        }
    }
}
