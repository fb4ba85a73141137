//! What each process says about itself, on either side, that can tie a log process to an export
//! process: its host and pid, its GPUs (CUDA ordinal, NVML index, PCI bus id) and the operations
//! it ran, counted as kernels count them. Computed once per loaded file.

use crate::time_base::Stamps;
use ingest_nccl::ParsedLog;
use ingest_nsys::KernelNameCache;
use model::log::ProcessKey;
use model::nsys::NsysExport;
use model::OpType;
use std::collections::{BTreeMap, BTreeSet};

/// Operations as kernels would run them: each collective by its type, each group of Send/Recv
/// lines (one communicator and opCount) as one SendRecv.
pub type Units = BTreeMap<OpType, u64>;

/// One log process.
#[derive(Debug, Clone, PartialEq)]
pub struct LogProcess {
    pub process: ProcessKey,
    /// `cudaDev` of its init lines and the `[dev]` of its operation lines.
    pub cuda_devs: BTreeSet<u32>,
    /// `nvmlDev` of its init lines (the node's GPU index, whatever `CUDA_VISIBLE_DEVICES` says).
    pub nvml_devs: BTreeSet<u32>,
    /// `busId` of its init lines, as a number (`1b000`).
    pub bus_ids: BTreeSet<u64>,
    pub units: Units,
    /// Its operation lines' stamps.
    pub stamps: Stamps,
}

impl LogProcess {
    /// A process nothing is known of yet.
    pub fn new(process: ProcessKey) -> Self {
        LogProcess {
            process,
            cuda_devs: BTreeSet::new(),
            nvml_devs: BTreeSet::new(),
            bus_ids: BTreeSet::new(),
            units: Units::new(),
            stamps: Stamps::default(),
        }
    }

    /// Adds what another log says of the same process.
    pub fn merge(&mut self, o: &LogProcess) {
        self.cuda_devs.extend(&o.cuda_devs);
        self.nvml_devs.extend(&o.nvml_devs);
        self.bus_ids.extend(&o.bus_ids);
        for (op, n) in &o.units {
            *self.units.entry(*op).or_default() += n;
        }
        self.stamps.merge(&o.stamps);
    }
}

/// One export process: a pid with NCCL kernels in one export.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportProcess {
    /// The export's index in the session.
    pub export: usize,
    /// The export's host name (`TARGET_INFO_SYSTEM_ENV`), empty when it has none.
    pub host: String,
    pub pid: u32,
    /// The devices its NCCL kernels ran on (`deviceId`: the node's GPU index).
    pub devices: BTreeSet<u32>,
    /// Those devices' PCI bus ids (`TARGET_INFO_GPU`), as numbers.
    pub bus_ids: BTreeSet<u64>,
    /// The CUDA ordinals the process saw them as (`TARGET_INFO_CUDA_DEVICE`), when mapped.
    pub cuda_ids: BTreeSet<u32>,
    pub units: Units,
    /// NCCL kernels.
    pub kernels: u64,
}

/// A PCI bus id as a number, however it is written: NCCL's `1b000`, nsys' `0000:1b:00.0`
/// (NCCL's own conversion: the hex digits without separators).
pub fn bus_number(text: &str) -> Option<u64> {
    let digits: String = text
        .trim()
        .chars()
        .filter(|c| *c != ':' && *c != '.')
        .collect();
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    u64::from_str_radix(&digits, 16).ok()
}

/// Every process of a log, in the order the log names them.
pub fn log_processes(log: &ParsedLog) -> Vec<LogProcess> {
    let ops = &log.ops;
    let keys = ops.processes();
    let mut out: Vec<LogProcess> = keys.iter().map(|k| LogProcess::new(k.clone())).collect();
    let mut index: BTreeMap<&ProcessKey, usize> =
        keys.iter().enumerate().map(|(i, k)| (k, i)).collect();
    for init in log.inits.iter().chain(&log.init_starts) {
        let i = match index.get(&init.process) {
            Some(&i) => i,
            None => {
                out.push(LogProcess::new(init.process.clone()));
                index.insert(&init.process, out.len() - 1);
                out.len() - 1
            }
        };
        let p = &mut out[i];
        p.cuda_devs.extend(init.cuda_dev);
        p.nvml_devs.extend(init.nvml_dev);
        p.bus_ids
            .extend(init.bus_id.as_deref().and_then(bus_number));
    }
    // Per process: the last Send/Recv group seen (communicator, opCount), so that a group's
    // lines count once.
    let mut last_group: Vec<Option<(u64, u64)>> = vec![None; keys.len()];
    for j in 0..ops.len() {
        let (Some(site), Some(call)) = (ops.site_of(j), ops.call(j)) else {
            continue;
        };
        let i = site.process as usize;
        let Some(p) = out.get_mut(i) else { continue };
        p.cuda_devs.insert(site.cuda_dev);
        if let Some(t) = call.timestamp_ns {
            p.stamps.add(t);
        }
        if site.op.is_p2p() {
            let group = (site.comm, call.op_count);
            if last_group[i] != Some(group) {
                last_group[i] = Some(group);
                *p.units.entry(OpType::SendRecv).or_default() += 1;
            }
        } else {
            *p.units.entry(site.op).or_default() += 1;
        }
    }
    out
}

/// Every process with NCCL kernels in export `index` (`e`), in pid order.
pub fn export_processes(index: usize, e: &NsysExport) -> Vec<ExportProcess> {
    let host = e.hosts.first().cloned().unwrap_or_default();
    let ks = &e.kernels;
    let mut names = KernelNameCache::default();
    // Distinct kernel names are few: decoded once, keyed by their text.
    let mut op_of: BTreeMap<&str, Option<OpType>> = BTreeMap::new();
    let mut per: BTreeMap<u32, ExportProcess> = BTreeMap::new();
    for j in 0..ks.len() {
        let (Some(pid), Some(dev), Some(name)) = (ks.pid(j), ks.device(j), ks.name(j)) else {
            continue;
        };
        let op = *op_of
            .entry(name)
            .or_insert_with(|| names.decode(name).and_then(|n| n.op));
        let p = per.entry(pid).or_insert_with(|| ExportProcess {
            export: index,
            host: host.clone(),
            pid,
            ..ExportProcess::default()
        });
        p.kernels += 1;
        p.devices.insert(dev);
        if let Some(op) = op {
            *p.units.entry(op).or_default() += 1;
        }
    }
    for p in per.values_mut() {
        for &d in &p.devices {
            let gpu = e.gpus.iter().find(|g| g.id == d);
            p.bus_ids
                .extend(gpu.and_then(|g| g.bus_id.as_deref()).and_then(bus_number));
            p.cuda_ids.extend(
                e.cuda_devices
                    .iter()
                    .filter(|m| m.pid == p.pid && m.gpu_id == Some(d))
                    .map(|m| m.cuda_device),
            );
        }
    }
    per.into_values().collect()
}

/// How alike two processes' operations are, in [0, 1]: the units both ran (per type, the
/// smaller count) against the geometric mean of their totals (lines logged before the capture
/// or kernels another NCCL ran lower it a little, another rank's different work a lot). 0 when
/// either ran none.
pub fn similarity(a: &Units, b: &Units) -> f64 {
    let (ta, tb) = (a.values().sum::<u64>(), b.values().sum::<u64>());
    if ta == 0 || tb == 0 {
        return 0.0;
    }
    let common: u64 = a
        .iter()
        .map(|(op, &n)| n.min(b.get(op).copied().unwrap_or(0)))
        .sum();
    common as f64 / ((ta as f64) * (tb as f64)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_ids_read_alike_from_both_sides() {
        assert_eq!(bus_number("1b000"), Some(0x1b000));
        assert_eq!(bus_number("0000:1b:00.0"), Some(0x1b000));
        assert_eq!(bus_number("0000:45:00.0"), bus_number("45000"));
        assert_eq!(bus_number(""), None);
        assert_eq!(bus_number("zz"), None);
    }

    #[test]
    fn similarity_is_the_shared_share() {
        let a: Units = [(OpType::AllReduce, 10), (OpType::SendRecv, 10)].into();
        let b: Units = [(OpType::AllReduce, 10), (OpType::SendRecv, 5)].into();
        assert!((similarity(&a, &b) - 15.0 / (20.0f64 * 15.0).sqrt()).abs() < 1e-9);
        assert_eq!(similarity(&a, &a), 1.0);
        assert_eq!(similarity(&a, &Units::new()), 0.0);
    }
}
