//! Predicted time of one collective: the LBNL two-tier alpha-beta model
//! (`seeds/perf-modeling-foundation-models-lbnl.txt`, §III "(S2) Communication Time", Table A3).
//!
//! Two networks: a fast NVLink/NVSwitch domain (latency `α_f`, one-direction bandwidth `β_f` per GPU)
//! holding `n_NVS` of the communicator's GPUs, and a slow network between domains (`α_s`, `β_s` per
//! NIC, `n_NIC` NICs per node that NCCL drives with parallel rings). For an AllGather whose total
//! buffer is `V` bytes over `n` GPUs:
//!
//! ```text
//! t_latency = α_s·(n/n_NVS − 1) + α_f·(n − n/n_NVS)
//! t         = t_latency + (n−1)/n · max(V / (n_NIC·β_s·eff), V / (β_f·eff))
//! ```
//!
//! `eff` is the paper's network efficiency ("typical bandwidth efficiencies of 70 % for the
//! networks"), applied to both bandwidths: that is what reproduces the \[derived\] oracle of
//! `SEEDS-NOTES.md` (A100, n = 32, 4 GPUs and 4 NICs per node, V = 10⁹ B: 13.934 ms at 0.7,
//! 9.7825 ms at 1.0). Other collectives follow the paper's public code: ring factor `(n−1)/n` for
//! AllGather/ReduceScatter, twice the AllGather time for AllReduce (ReduceScatter + AllGather),
//! factor 1 for Broadcast/Reduce, and point-to-point `α + V/β` on the fast link inside a domain,
//! else the slow one.
//!
//! `V` is the collective's total buffer, nccl-tests' `S` (the project's `bus_bytes`), not one
//! rank's slice. Bandwidths are GB/s (10⁹ bytes/s); times are seconds (`_s`).

use model::OpType;

/// Latency of the NVLink/NVSwitch domain, LBNL Table A3 (all generations).
pub const NVS_LATENCY_S: f64 = 2.5e-6;
/// Latency of the inter-node network, LBNL Table A3 (all generations).
pub const NET_LATENCY_S: f64 = 5e-6;
/// LBNL's measured network efficiency on Perlmutter.
pub const LBNL_EFFICIENCY: f64 = 0.7;

/// Per-GPU compute and memory figures (LBNL Table A3; H100 from NVIDIA's H100 SXM datasheet).
/// Not used by the communication model; kept so a view can show the whole hardware row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compute {
    pub tensor_fp16_tflops: f64,
    pub hbm_gbps: f64,
    pub hbm_capacity_gb: f64,
}

/// Link parameters of one system generation.
#[derive(Debug, Clone, PartialEq)]
pub struct Hardware {
    pub name: &'static str,
    /// `β_f`: NVLink/NVSwitch bandwidth per GPU, one direction, GB/s.
    pub nvs_gbps: f64,
    /// `α_f`, seconds.
    pub nvs_latency_s: f64,
    /// `β_s`: network bandwidth per NIC, one direction, GB/s.
    pub net_gbps: f64,
    /// `α_s`, seconds.
    pub net_latency_s: f64,
    /// GPUs per node (one NVLink domain).
    pub gpus_per_node: u32,
    /// NICs per node.
    pub nics_per_node: u32,
    /// Fraction of the nominal bandwidths reached (LBNL: 0.7).
    pub efficiency: f64,
    pub compute: Option<Compute>,
}

impl Hardware {
    fn preset(name: &'static str, nvs: f64, net: f64, gpus: u32, compute: Compute) -> Hardware {
        Hardware {
            name,
            nvs_gbps: nvs,
            nvs_latency_s: NVS_LATENCY_S,
            net_gbps: net,
            net_latency_s: NET_LATENCY_S,
            gpus_per_node: gpus,
            nics_per_node: gpus,
            efficiency: LBNL_EFFICIENCY,
            compute: Some(compute),
        }
    }

    /// A100 (LBNL Table A3): NVS 300 GB/s, IB 25 GB/s. Node: 4 GPUs and 4 NICs, as on Perlmutter
    /// where LBNL validated the model (a DGX A100 has 8 and 8: use [`Hardware::with_node`]).
    pub fn a100() -> Hardware {
        Hardware::preset(
            "A100",
            300.0,
            25.0,
            4,
            Compute {
                tensor_fp16_tflops: 312.0,
                hbm_gbps: 1555.0,
                hbm_capacity_gb: 80.0,
            },
        )
    }

    /// H100 SXM: not in LBNL's table. Assumption: the H200's links, since both use NVLink 4
    /// (18 links × 25 GB/s = 450 GB/s one direction; NVIDIA quotes 900 GB/s bidirectional) and
    /// ConnectX-7 NDR (400 Gb/s = 50 GB/s per NIC). Node: DGX H100, 8 GPUs and 8 NICs. Compute from
    /// the H100 SXM datasheet (989 dense FP16 tensor TFLOP/s, 3.35 TB/s HBM3, 80 GB).
    pub fn h100() -> Hardware {
        Hardware::preset(
            "H100",
            450.0,
            50.0,
            8,
            Compute {
                tensor_fp16_tflops: 989.0,
                hbm_gbps: 3350.0,
                hbm_capacity_gb: 80.0,
            },
        )
    }

    /// H200 (LBNL Table A3): NVS 450 GB/s, IB 50 GB/s. Node: 8 GPUs and 8 NICs (HGX H200).
    pub fn h200() -> Hardware {
        Hardware::preset(
            "H200",
            450.0,
            50.0,
            8,
            Compute {
                tensor_fp16_tflops: 990.0,
                hbm_gbps: 4800.0,
                hbm_capacity_gb: 141.0,
            },
        )
    }

    /// B200 (LBNL Table A3): NVS 900 GB/s, IB 100 GB/s (ConnectX-8). Node: 8 GPUs and 8 NICs.
    pub fn b200() -> Hardware {
        Hardware::preset(
            "B200",
            900.0,
            100.0,
            8,
            Compute {
                tensor_fp16_tflops: 2500.0,
                hbm_gbps: 8000.0,
                hbm_capacity_gb: 192.0,
            },
        )
    }

    /// From link bandwidths seen in a trace or a topology dump (GB/s, one direction: the fast
    /// per-GPU NVLink bandwidth and the per-NIC network bandwidth), with LBNL's latencies.
    /// Efficiency is 1.0: measured bandwidths already include the losses; set
    /// [`Hardware::with_efficiency`] when the numbers are nominal (e.g. `NVL[...]`/`NET[...]`).
    pub fn from_link_bandwidths(
        nvs_gbps: f64,
        net_gbps: f64,
        gpus_per_node: u32,
        nics_per_node: u32,
    ) -> Hardware {
        Hardware {
            name: "observed",
            nvs_gbps,
            nvs_latency_s: NVS_LATENCY_S,
            net_gbps,
            net_latency_s: NET_LATENCY_S,
            gpus_per_node: gpus_per_node.max(1),
            nics_per_node: nics_per_node.max(1),
            efficiency: 1.0,
            compute: None,
        }
    }

    /// The same hardware at another efficiency (1.0 = nominal bandwidths).
    pub fn with_efficiency(mut self, efficiency: f64) -> Hardware {
        self.efficiency = efficiency;
        self
    }

    /// The same hardware with another node shape.
    pub fn with_node(mut self, gpus_per_node: u32, nics_per_node: u32) -> Hardware {
        self.gpus_per_node = gpus_per_node.max(1);
        self.nics_per_node = nics_per_node.max(1);
        self
    }

    fn fast_bps(&self) -> f64 {
        self.nvs_gbps * 1e9 * self.efficiency
    }

    fn slow_bps(&self) -> f64 {
        self.net_gbps * 1e9 * self.efficiency
    }
}

/// LBNL's AllGather time of a `bytes` total buffer over `ranks` GPUs, `per_domain` of which share
/// an NVLink domain (the module formula).
///
/// Edges the paper leaves open, our choices: `per_domain` is clamped to `1..=ranks`; when every
/// GPU is in one domain there is no network term (only `α_f·(n−1)` and `V/β_f`); the NICs a
/// communicator drives are proportional to its GPUs per node, `n_NIC · per_domain / gpus_per_node`,
/// at least one (LBNL Fig. A1: fewer GPUs per node, less network bandwidth).
pub fn allgather_time_s(hw: &Hardware, bytes: f64, ranks: u32, per_domain: u32) -> f64 {
    if ranks <= 1 {
        return 0.0;
    }
    let n = ranks as f64;
    let d = per_domain.clamp(1, ranks) as f64;
    let ring = (n - 1.0) / n;
    if d >= n {
        return hw.nvs_latency_s * (n - 1.0) + ring * bytes / hw.fast_bps();
    }
    let domains = n / d;
    let latency = hw.net_latency_s * (domains - 1.0) + hw.nvs_latency_s * (n - domains);
    let nics = (hw.nics_per_node as f64 * d / hw.gpus_per_node as f64).max(1.0);
    latency + ring * f64::max(bytes / (nics * hw.slow_bps()), bytes / hw.fast_bps())
}

/// Point-to-point transfer: `α + V/β` on the fast link when both GPUs share an NVLink domain,
/// else on the network (one NIC).
pub fn p2p_time_s(hw: &Hardware, bytes: f64, same_domain: bool) -> f64 {
    if same_domain {
        hw.nvs_latency_s + bytes / hw.fast_bps()
    } else {
        hw.net_latency_s + bytes / hw.slow_bps()
    }
}

/// Predicted time of one `op` moving a `bytes` total buffer over `ranks` GPUs, `per_domain` per
/// NVLink domain. Ring factors as in LBNL's public code:
/// - AllGather, ReduceScatter: [`allgather_time_s`];
/// - AllReduce: twice that (ReduceScatter then AllGather);
/// - Broadcast, Reduce: the same latency, bandwidth factor 1 instead of `(n−1)/n`;
/// - Send, Recv, SendRecv: [`p2p_time_s`], on the fast link if `ranks <= per_domain`;
/// - **\[derived\]** AllToAll, Gather, Scatter: like AllGather (each rank moves `(n−1)/n` of the buffer);
///   so is an operation this build does not name (`OpType::Other`: NCCL 2.28's `AlltoAll`, ...).
pub fn collective_time_s(
    hw: &Hardware,
    op: OpType,
    bytes: f64,
    ranks: u32,
    per_domain: u32,
) -> f64 {
    match op {
        OpType::Send | OpType::Recv | OpType::SendRecv => {
            p2p_time_s(hw, bytes, ranks <= per_domain.max(1))
        }
        _ if ranks <= 1 => 0.0,
        OpType::AllGather
        | OpType::ReduceScatter
        | OpType::AllToAll
        | OpType::Gather
        | OpType::Scatter
        | OpType::Other(_) => allgather_time_s(hw, bytes, ranks, per_domain),
        OpType::AllReduce => 2.0 * allgather_time_s(hw, bytes, ranks, per_domain),
        OpType::Broadcast | OpType::Reduce => {
            // Undo the ring factor: the whole buffer crosses the slowest link once.
            let n = ranks as f64;
            let ring = (n - 1.0) / n;
            let latency = allgather_time_s(hw, 0.0, ranks, per_domain);
            latency + (allgather_time_s(hw, bytes, ranks, per_domain) - latency) / ring
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// SEEDS-NOTES \[derived\] oracle: A100, n = 32, 4 GPUs and 4 NICs per node, V = 1e9 B.
    #[test]
    fn lbnl_oracle_allgather_a100() {
        let hw = Hardware::a100();
        assert_eq!((hw.gpus_per_node, hw.nics_per_node), (4, 4));
        let latency = allgather_time_s(&hw, 0.0, 32, 4);
        assert!(close(latency, 95e-6, 1e-12), "{latency}");
        let t = collective_time_s(&hw, OpType::AllGather, 1e9, 32, 4);
        assert!(close(t, 13.934e-3, 0.5e-6), "{t}");
        assert!(close(t - latency, 13.839e-3, 0.5e-6));
        let full = collective_time_s(&hw.with_efficiency(1.0), OpType::AllGather, 1e9, 32, 4);
        assert!(close(full, 9.7825e-3, 1e-9), "{full}");
    }

    #[test]
    fn op_factors() {
        let hw = Hardware::a100().with_efficiency(1.0);
        let ag = collective_time_s(&hw, OpType::AllGather, 1e9, 32, 4);
        assert_eq!(
            collective_time_s(&hw, OpType::ReduceScatter, 1e9, 32, 4),
            ag
        );
        assert_eq!(
            collective_time_s(&hw, OpType::AllReduce, 1e9, 32, 4),
            2.0 * ag
        );
        // Broadcast: 95 µs + 1e9 / (4 · 25e9) = 10.095 ms.
        let b = collective_time_s(&hw, OpType::Broadcast, 1e9, 32, 4);
        assert!(close(b, 10.095e-3, 1e-9), "{b}");
        // P2P inside a domain: 2.5 µs + 1e9 / 300e9; across: 5 µs + 1e9 / 25e9.
        let near = collective_time_s(&hw, OpType::SendRecv, 1e9, 2, 4);
        assert!(close(near, 2.5e-6 + 1e9 / 300e9, 1e-12));
        let far = p2p_time_s(&hw, 1e9, false);
        assert!(close(far, 5e-6 + 0.04, 1e-12));
        assert_eq!(collective_time_s(&hw, OpType::AllReduce, 1e9, 1, 1), 0.0);
    }

    #[test]
    fn single_domain_has_no_network_term() {
        let hw = Hardware::h100().with_efficiency(1.0);
        // 8 GPUs in one NVSwitch domain: 7 · 2.5 µs + 7/8 · 1e9 / 450e9.
        let t = allgather_time_s(&hw, 1e9, 8, 8);
        assert!(close(t, 7.0 * 2.5e-6 + 0.875 * 1e9 / 450e9, 1e-12), "{t}");
        // A per_domain larger than the group is clamped.
        assert_eq!(
            allgather_time_s(&hw, 1e9, 4, 8),
            allgather_time_s(&hw, 1e9, 4, 4)
        );
    }

    #[test]
    fn presets_and_observed() {
        assert_eq!(Hardware::h100().nvs_gbps, 450.0);
        assert_eq!(Hardware::h100().net_gbps, 50.0);
        assert_eq!(Hardware::h200().nvs_gbps, 450.0);
        assert_eq!(Hardware::b200().net_gbps, 100.0);
        // From a topology dump of the thesis' A40 nodes: PCI-only, NET 12.5 GB/s.
        let hw = Hardware::from_link_bandwidths(24.0, 12.5, 4, 1);
        assert_eq!(hw.efficiency, 1.0);
        // 2 nodes × 4 GPUs, one NIC per node: the network term dominates.
        let t = allgather_time_s(&hw, 1e9, 8, 4);
        let expected = 5e-6 * 1.0 + 2.5e-6 * 6.0 + 0.875 * 1e9 / 12.5e9;
        assert!(close(t, expected, 1e-12), "{t}");
    }
}
