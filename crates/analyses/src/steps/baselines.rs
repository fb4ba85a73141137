//! Per-operation baselines and outliers (seed `fine-grained-gpu-perf-model-analysis.txt`:
//! "baselines use the minimum of repeated samples, more stable than the mean"): the minimum
//! duration over every repeat of each (operation, message size, communicator) and of each compute
//! kernel name, every instance's excess over its baseline, and the worst instances with their
//! rank, step and time.

use super::breakdown::{RankKernels, PARALLELISMS};
use serde::{Deserialize, Serialize};

/// What makes two NCCL kernels repeats of one operation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OpKey {
    /// The operation (`AllReduce`, `SendRecv`, ...).
    pub op: String,
    /// The message's bytes (count × datatype, fused lines added up); `None` for a kernel no log
    /// line names.
    pub bytes: Option<u64>,
    /// The logical communicator's id; `None` when unmatched.
    pub comm: Option<String>,
    pub parallelism: String,
}

/// One operation's baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpBaseline {
    #[serde(flatten)]
    pub key: OpKey,
    pub count: u64,
    pub baseline_ms: f64,
    pub mean_ms: f64,
    /// Σ of every instance's excess over the baseline.
    pub excess_ms: f64,
}

/// One compute kernel name's baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelBaseline {
    pub name: String,
    pub count: u64,
    pub baseline_ms: f64,
    pub mean_ms: f64,
    pub excess_ms: f64,
}

/// One instance far above its baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// `nccl` or `compute`.
    pub kind: String,
    /// The operation (`AllReduce 8 MB on DP`) or the kernel's name.
    pub what: String,
    pub rank: Option<u32>,
    /// `host:pid`.
    pub process: String,
    /// The step it ran in, when the steps have times.
    pub step: Option<u64>,
    /// Its start in its process's own clock (the export's), ns: the timeline finds it there.
    pub start_ns: i64,
    pub duration_ms: f64,
    pub baseline_ms: f64,
    pub excess_ms: f64,
    /// Its start in the synchronised clock (the reference rank's: the timeline's default),
    /// ns; the same as `start_ns` for a process without a clock estimate.
    #[serde(default)]
    pub sync_start_ns: i64,
    /// An NCCL kernel's collective, when its log line is known: the communicator's id and the
    /// opCount (what picks the instance on the timeline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comm_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op_count: Option<u64>,
}

/// Baselines and the worst instances.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Baselines {
    /// By total excess, most first (at most [`Baselines::KEEP`]).
    pub operations: Vec<OpBaseline>,
    pub kernels: Vec<KernelBaseline>,
    /// The instances with the most excess, most first (at most [`Baselines::WORST`]).
    pub worst: Vec<Outlier>,
}

impl Baselines {
    pub const KEEP: usize = 100;
    pub const WORST: usize = 25;
}

/// Per operation key, every kernel's duration: (count, min, sum) and the baseline.
pub struct OpStats {
    pub keys: Vec<OpKey>,
    pub count: Vec<u64>,
    pub min_ns: Vec<i64>,
    pub sum_ns: Vec<i64>,
}

impl OpStats {
    /// Over every rank's NCCL kernels (`keys` indexes their `key`).
    pub fn of(keys: Vec<OpKey>, ranks: &[RankKernels]) -> OpStats {
        let n = keys.len();
        let mut s = OpStats {
            keys,
            count: vec![0; n],
            min_ns: vec![i64::MAX; n],
            sum_ns: vec![0; n],
        };
        for r in ranks {
            for k in &r.nccl {
                let (i, d) = (k.key as usize, k.end_ns - k.start_ns);
                s.count[i] += 1;
                s.min_ns[i] = s.min_ns[i].min(d);
                s.sum_ns[i] += d;
            }
        }
        s
    }

    /// Each key's baseline (minimum) duration, 0 for a key with no kernel.
    pub fn baselines(&self) -> Vec<i64> {
        self.min_ns
            .iter()
            .map(|&m| if m == i64::MAX { 0 } else { m })
            .collect()
    }
}

/// A compute kernel name over every export: (name, count, min ns, sum ns, its longest
/// instances as (rank, process, start ns, duration ns)).
pub struct KernelStats {
    pub name: String,
    pub count: u64,
    pub min_ns: i64,
    pub sum_ns: i64,
    pub worst: Vec<(Option<u32>, String, i64, i64)>,
}

/// The baselines and outliers. `step_of(rank, t)` finds the step a time of a rank falls in.
pub fn baselines(
    ops: &OpStats,
    ranks: &[RankKernels],
    kernels: &[KernelStats],
    step_of: &dyn Fn(u32, i64) -> Option<u64>,
) -> Baselines {
    let base = ops.baselines();
    let ms = |ns: i64| ns as f64 / 1e6;
    let mut operations: Vec<OpBaseline> = (0..ops.keys.len())
        .filter(|&i| ops.count[i] > 0)
        .map(|i| {
            let (n, b, sum) = (ops.count[i], base[i], ops.sum_ns[i]);
            OpBaseline {
                key: ops.keys[i].clone(),
                count: n,
                baseline_ms: ms(b),
                mean_ms: ms(sum) / n as f64,
                excess_ms: ms(sum - b * n as i64),
            }
        })
        .collect();
    operations.sort_by(|a, b| b.excess_ms.total_cmp(&a.excess_ms).then(a.key.cmp(&b.key)));
    operations.truncate(Baselines::KEEP);
    // The worst NCCL instances: a bounded list, kept sorted as every kernel is seen.
    let mut worst: Vec<Outlier> = Vec::new();
    let mut floor = 0i64;
    for r in ranks {
        for k in &r.nccl {
            let excess = (k.end_ns - k.start_ns) - base[k.key as usize];
            if excess <= floor && worst.len() >= Baselines::WORST {
                continue;
            }
            let key = &ops.keys[k.key as usize];
            let o = Outlier {
                kind: "nccl".into(),
                what: describe(key),
                rank: Some(r.rank),
                process: r.process.clone(),
                step: step_of(r.rank, k.start_ns),
                start_ns: k.start_ns,
                duration_ms: ms(k.end_ns - k.start_ns),
                baseline_ms: ms(base[k.key as usize]),
                excess_ms: ms(excess),
                sync_start_ns: k.start_ns,
                comm_id: None,
                op_count: None,
            };
            insert_worst(&mut worst, o);
            if worst.len() >= Baselines::WORST {
                floor = (worst.last().map_or(0.0, |w| w.excess_ms) * 1e6) as i64;
            }
        }
    }
    let mut kernel_rows: Vec<KernelBaseline> = kernels
        .iter()
        .filter(|k| k.count > 0)
        .map(|k| KernelBaseline {
            name: k.name.clone(),
            count: k.count,
            baseline_ms: ms(k.min_ns),
            mean_ms: ms(k.sum_ns) / k.count as f64,
            excess_ms: ms(k.sum_ns - k.min_ns * k.count as i64),
        })
        .collect();
    kernel_rows.sort_by(|a, b| {
        b.excess_ms
            .total_cmp(&a.excess_ms)
            .then(a.name.cmp(&b.name))
    });
    kernel_rows.truncate(Baselines::KEEP);
    for k in kernels {
        for &(rank, ref process, start, d) in &k.worst {
            insert_worst(
                &mut worst,
                Outlier {
                    kind: "compute".into(),
                    what: k.name.clone(),
                    rank,
                    process: process.clone(),
                    step: rank.and_then(|r| step_of(r, start)),
                    start_ns: start,
                    duration_ms: ms(d),
                    baseline_ms: ms(k.min_ns),
                    excess_ms: ms(d - k.min_ns),
                    sync_start_ns: start,
                    comm_id: None,
                    op_count: None,
                },
            );
        }
    }
    Baselines {
        operations,
        kernels: kernel_rows,
        worst,
    }
}

fn insert_worst(worst: &mut Vec<Outlier>, o: Outlier) {
    let at = worst.partition_point(|w| w.excess_ms >= o.excess_ms);
    if at < Baselines::WORST {
        worst.insert(at, o);
        worst.truncate(Baselines::WORST);
    }
}

/// `AllReduce 8.0 MB on DP (comm 0x…)`.
fn describe(k: &OpKey) -> String {
    let size = match k.bytes {
        Some(b) if b >= 1 << 20 => format!(" {:.1} MiB", b as f64 / (1u64 << 20) as f64),
        Some(b) if b >= 1 << 10 => format!(" {:.1} KiB", b as f64 / 1024.0),
        Some(b) => format!(" {b} B"),
        None => String::new(),
    };
    let comm = k
        .comm
        .as_ref()
        .map(|c| format!(" (comm {c})"))
        .unwrap_or_default();
    format!("{}{size} on {}{comm}", k.op, k.parallelism)
}

/// The parallelism index of a name (`unknown` for anything else).
pub fn parallelism_index(name: &str) -> u8 {
    PARALLELISMS
        .iter()
        .position(|p| *p == name)
        .unwrap_or(PARALLELISMS.len() - 1) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::breakdown::NcclSpan;

    #[test]
    fn minimum_over_repeats_and_the_worst_instances() {
        let keys = vec![
            OpKey {
                op: "AllReduce".into(),
                bytes: Some(8 << 20),
                comm: Some("0xa".into()),
                parallelism: "DP".into(),
            },
            OpKey {
                op: "SendRecv".into(),
                bytes: Some(4096),
                comm: Some("0xb".into()),
                parallelism: "PP".into(),
            },
        ];
        let sp = |s: i64, d: i64, key: u32| NcclSpan {
            start_ns: s,
            end_ns: s + d,
            parallelism: 0,
            key,
        };
        let ranks = vec![
            RankKernels {
                rank: 0,
                process: "n:1".into(),
                nccl: vec![
                    sp(0, 1_000_000, 0),
                    sp(10_000_000, 1_200_000, 0),
                    sp(20_000_000, 50_000, 1),
                ],
                busy: None,
            },
            RankKernels {
                rank: 1,
                process: "n:2".into(),
                nccl: vec![sp(0, 9_000_000, 0), sp(20_000_000, 40_000, 1)],
                busy: None,
            },
        ];
        let stats = OpStats::of(keys, &ranks);
        assert_eq!(stats.baselines(), [1_000_000, 40_000]);
        let kernels = vec![KernelStats {
            name: "gemm".into(),
            count: 3,
            min_ns: 2_000_000,
            sum_ns: 10_000_000,
            worst: vec![(Some(1), "n:2".into(), 5_000_000, 6_000_000)],
        }];
        let b = baselines(&stats, &ranks, &kernels, &|_, t| {
            Some((t / 10_000_000) as u64)
        });
        assert_eq!(b.operations[0].key.op, "AllReduce");
        assert_eq!(b.operations[0].count, 3);
        assert!((b.operations[0].excess_ms - 8.2).abs() < 1e-9);
        assert!((b.kernels[0].excess_ms - 4.0).abs() < 1e-9);
        // Worst first: rank 1's AllReduce (8 ms over), the gemm (4 ms over), ...
        let w: Vec<(&str, Option<u32>, f64)> = b
            .worst
            .iter()
            .map(|o| (o.kind.as_str(), o.rank, o.excess_ms))
            .collect();
        assert_eq!(w[0], ("nccl", Some(1), 8.0));
        assert_eq!(w[1], ("compute", Some(1), 4.0));
        assert_eq!(b.worst[0].step, Some(0));
        assert!(b.worst[0].what.starts_with("AllReduce 8.0 MiB on DP"));
        assert_eq!(
            b.worst[2].step,
            Some(1),
            "rank 0's second AllReduce, 0.2 ms over"
        );
    }
}
