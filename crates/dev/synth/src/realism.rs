//! The variations real clusters produce (issue 28), each a knob of [`Realism`], all off by
//! default (a run without them is byte for byte what the generator wrote before).
//!
//! Why each one, as seen in real data (`shared/fixtures/real`, `shared/reference`):
//! - **Host names.** Nsight stores the machine's full host name (`TARGET_INFO_SYSTEM_ENV`
//!   `Hostname`: `eos0225.eos.clusters.nvidia.com`), NCCL prints the name cut at its first dot;
//!   in a container NCCL prints the container's id while an `nsys` on the host stores the node's.
//! - **Stamps.** `NCCL_DEBUG_TIMESTAMP_FORMAT`: none on INFO lines by default, `%s.%6f` epoch
//!   (the thesis' runs), `[%F %T] ` (NCCL 2.26+'s default: one second, local time, no zone), or
//!   any strftime format with `%Nf` fractions.
//! - **Launchers.** One stdout per node with every local rank interleaved, each line tagged
//!   (`[default0]:`, `[rank3]:`, `3: `, `[1,3]<stdout>:`, `(RayTrainWorker pid=…, ip=…) `,
//!   `host: `), PyTorch warnings and Megatron iteration lines in between; without a tag, writes
//!   of two ranks cut into each other.
//! - **MoE.** An all-to-all is a group of Send and Recv to every peer, itself included, with
//!   uneven counts, after a small int64 exchange of those counts; NCCL runs each group as one
//!   SendRecv kernel. Expert parallelism may span exactly the data-parallel ranks.
//! - **A second NCCL** (another library's copy) launches SendRecv kernels and writes no log.
//! - **Warm-up** operations are logged before the capture starts.
//! - **`CUDA_VISIBLE_DEVICES`** gives each process one GPU: every log says `cudaDev 0`, only
//!   `nvmlDev` and `busId` tell them apart.
//! - **Pids** repeat across nodes (containers), or differ between the log and the export (the
//!   container's pid namespace against the host's).
//! - **Exports**: per-rank captures each start their own session; schema 3.25 stores times in
//!   the system clock (`UTC = utcEpochNs + t − systemClockNs`), 3.16/3.17 relative to the
//!   session's start; 3.16 has no `TARGET_INFO_CUDA_DEVICE`, 3.25 no `TARGET_INFO_GPU`.

use crate::logfmt::Launcher;
use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// How the export names a node, against what NCCL prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostNaming {
    /// Both say `node01` (what the generator always wrote).
    #[default]
    Short,
    /// The export says `node01.cluster.example.com`, NCCL `node01`.
    Fqdn,
    /// The export says `NODE01.CLUSTER.EXAMPLE.COM` (a DNS name in capitals), NCCL `node01`.
    FqdnUpper,
    /// NCCL runs in a container and prints its id (`3f9c2a7b1d4e`); nsys on the host stores the
    /// node's full name.
    Container,
}

/// What stands before every NCCL line (`NCCL_DEBUG_TIMESTAMP_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StampFormat {
    /// As `RunConfig::timestamps` says (epoch or none).
    #[default]
    Inherit,
    None,
    /// `%s.%6f ` (UTC, one microsecond).
    Epoch,
    /// `[%F %T] ` in the node's local time (one second, no zone).
    BracketLocal,
    /// `%F %T.%3f ` in the node's local time (one millisecond, no zone, no brackets).
    Custom,
}

impl StampFormat {
    /// The stamp's resolution in ns (`None`: no stamp).
    pub fn resolution_ns(self, inherited_epoch: bool) -> Option<i64> {
        match self {
            StampFormat::Inherit if inherited_epoch => Some(1_000),
            StampFormat::Inherit | StampFormat::None => None,
            StampFormat::Epoch => Some(1_000),
            StampFormat::BracketLocal => Some(1_000_000_000),
            StampFormat::Custom => Some(1_000_000),
        }
    }

    /// Whether the stamp is local time (the zone offset applies).
    pub fn is_local(self) -> bool {
        matches!(self, StampFormat::BracketLocal | StampFormat::Custom)
    }
}

/// How the logs are split into files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogFiles {
    /// As `RunConfig::combined_log` says (one per process, or one for the run).
    #[default]
    Inherit,
    /// One file per node, its ranks' lines interleaved (a launcher's stdout per node).
    PerNode,
}

/// The knobs; [`Realism::default`] changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Realism {
    pub hosts: HostNaming,
    pub stamps: StampFormat,
    /// The nodes' local time zone, minutes east of UTC (local stamps print UTC + this).
    pub zone_offset_min: i32,
    pub log_files: LogFiles,
    /// PyTorch warnings and Megatron iteration lines among NCCL's (tagged like them).
    pub foreign_lines: bool,
    /// Per combined log without launcher tags: this many lines cut by another rank's write.
    pub interleaved_writes: u32,
    /// MoE all-to-all as one SendRecv kernel per group, uneven counts, self included, after an
    /// int64 exchange of the counts (needs an EP communicator and MoE layers).
    pub moe_fused: bool,
    /// An EP communicator over each data-parallel group's ranks (Megatron's expert parallelism
    /// inside DP), beside the DP one (needs `ep = 1`, `dp > 1`).
    pub moe_over_dp: bool,
    /// SendRecv kernels per iteration of a second NCCL instance that writes no log, on the
    /// stream of the call they precede.
    pub unlogged_kernels: u32,
    /// AllReduce lines on the world communicator logged before the capture starts (no kernels).
    pub warmup_ops: u32,
    /// `CUDA_VISIBLE_DEVICES` per process: every log prints `cudaDev 0` (`nvmlDev`, `busId` and
    /// the export's GPU table still say which GPU).
    pub isolated_devices: bool,
    /// Every node's processes have the same pids (one container per node).
    pub pid_collisions: bool,
    /// The log's pids are the container's (small numbers), the export's the host's.
    pub pid_namespaces: bool,
    /// With per-rank exports: each capture starts its own session (its own time origin).
    pub rank_session_starts: bool,
    /// Schema 3.25 exports store times in the node's system clock, as real ones do.
    pub system_clock: bool,
    /// Node `n`'s log stamps read `n` times this many milliseconds off the true time (its
    /// system clock is off; the exports keep their own clocks): the stamps' order across nodes
    /// is then not the events' order, the synchronised one is.
    pub log_clock_skew_ms: i64,
}

impl Realism {
    /// Whether any knob is set (a default run keeps every byte it had).
    pub fn active(&self) -> bool {
        *self != Realism::default()
    }

    /// The stamp format of the run (`timestamps`: the config's epoch flag).
    pub fn stamp_format(&self, timestamps: bool) -> StampFormat {
        match self.stamps {
            StampFormat::Inherit if timestamps => StampFormat::Epoch,
            StampFormat::Inherit => StampFormat::None,
            s => s,
        }
    }
}

/// The printed and the stored name of each node.
#[derive(Debug, Clone)]
pub struct NodeNames {
    /// What NCCL prints (the log's host).
    pub log: String,
    /// What the export's `Hostname` says.
    pub export: String,
}

const DOMAIN: &str = "cluster.example.com";

/// Names of node `n` (`short` is the generator's `node01`).
pub fn node_names(r: &Realism, short: &str, seed: u64, n: u32) -> NodeNames {
    let fqdn = format!("{short}.{DOMAIN}");
    match r.hosts {
        HostNaming::Short => NodeNames {
            log: short.into(),
            export: short.into(),
        },
        HostNaming::Fqdn => NodeNames {
            log: short.into(),
            export: fqdn,
        },
        HostNaming::FqdnUpper => NodeNames {
            log: short.into(),
            export: fqdn.to_uppercase(),
        },
        HostNaming::Container => {
            let mut rng = Rng::derive(seed, 0xC0_47A1 + u64::from(n));
            NodeNames {
                log: format!("{:012x}", rng.next_u64() & 0xffff_ffff_ffff),
                export: fqdn,
            }
        }
    }
}

/// (log pid, export pid) of every process, by global rank: `default` are the generator's own
/// pids (distinct over the run).
pub fn pids(r: &Realism, seed: u64, default: &[u32], gpn: u32) -> Vec<(u32, u32)> {
    let gpn = gpn.max(1) as usize;
    // One container's pids per node: the launcher's children in order, a few apart.
    let mut crng = Rng::derive(seed, 0x9_1D5);
    let container: Vec<u32> = (0..gpn)
        .scan(40 + crng.range(0, 60) as u32, |p, _| {
            *p += 3 + crng.range(0, 9) as u32;
            Some(*p)
        })
        .collect();
    default
        .iter()
        .enumerate()
        .map(|(rank, &own)| {
            let local = rank % gpn;
            // The host's pid: the generator's, or with collisions the same list on every node.
            let host = if r.pid_collisions {
                default[local]
            } else {
                own
            };
            let log = if r.pid_namespaces {
                container[local]
            } else {
                host
            };
            (log, host)
        })
        .collect()
}

/// The launcher's tag in front of every line of one process.
pub fn launcher_tag(l: Launcher, rank: u32, local: u32, pid: u32, host: &str, node: u32) -> String {
    match l {
        Launcher::Ray => format!("(RayTrainWorker pid={pid}, ip=10.0.{node}.{}) ", 10 + node),
        Launcher::Pdsh => format!("{host}: "),
        _ => l.tag(rank, local),
    }
}

/// The stamp text of a line at true UTC time `utc_ns` (local formats add `zone_min`).
pub fn stamp(format: StampFormat, utc_ns: i64, zone_min: i32) -> String {
    let local = utc_ns + i64::from(zone_min) * 60_000_000_000;
    match format {
        StampFormat::Inherit | StampFormat::None => String::new(),
        StampFormat::Epoch => format!(
            "{}.{:06} ",
            utc_ns.div_euclid(1_000_000_000),
            utc_ns.rem_euclid(1_000_000_000) / 1_000
        ),
        StampFormat::BracketLocal => format!("[{}] ", civil(local)),
        StampFormat::Custom => format!(
            "{}.{:03} ",
            civil(local),
            local.rem_euclid(1_000_000_000) / 1_000_000
        ),
    }
}

/// `%F %T` of epoch ns (proleptic Gregorian, UTC).
fn civil(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `YYYY-MM-DDTHH:MM:SS` as the exports' `utcTime`/`localTime` columns print it.
pub fn iso(ns: i64) -> String {
    civil(ns).replacen(' ', "T", 1)
}

/// PyTorch's warnings at a rank's start (`ProcessGroupNCCL`), in its `[rankN]:[W…]` shape.
pub fn torch_warnings(rank: u32, utc_ns: i64) -> Vec<String> {
    let t = civil(utc_ns);
    let (date, time) = t.split_once(' ').unwrap_or((&t, ""));
    let md = date.get(5..).unwrap_or(date).replace('-', "");
    vec![
        format!(
            "[rank{rank}]:[W{md} {time}.{:09} ProcessGroupNCCL.cpp:4715] [PG ID 0 PG GUID 0 Rank {rank}]  using GPU {} as device used by this process is currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect.",
            utc_ns.rem_euclid(1_000_000_000),
            rank % 8
        ),
        "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py:4807: UserWarning: No device id is provided via `init_process_group` or `barrier `. Using the current device set by the user.".into(),
        "  warnings.warn(  # warn only once".into(),
    ]
}

/// Megatron's per-iteration log line (printed by the last rank).
pub fn megatron_iteration(it: u32, iterations: u32, utc_ns: i64, ms: f64) -> String {
    format!(
        " [{}] iteration {:>8}/{:>8} | consumed samples: {:>12} | elapsed time per iteration (ms): {ms:.1} | learning rate: 1.000000E-04 | global batch size: {:>5} | lm loss: {:.6E} | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |",
        civil(utc_ns),
        it + 1,
        iterations,
        (it + 1) * 64,
        64,
        10.0 / f64::from(it + 1)
    )
}

/// Cuts line `a` (a non-operation line) after its NCCL marker at a point drawn from `rng` and
/// glues line `b` to it, as two ranks' block-buffered writes to one file interleave: returns
/// (the glued line, the rest of `a` on a line of its own).
pub fn interleave(a: &str, b: &str, rng: &mut Rng) -> Option<(String, String)> {
    let marker = a.find("NCCL INFO ")? + "NCCL INFO ".len();
    let body = a.len().checked_sub(marker).filter(|&n| n >= 4)?;
    let mut cut = marker + 2 + rng.range(0, body as u64 - 2) as usize;
    while !a.is_char_boundary(cut) {
        cut -= 1;
    }
    Some((format!("{}{b}", &a[..cut]), a[cut..].to_string()))
}

/// A count in `[base/2, 3·base/2)` drawn from (call, src, dst) alone, so that both ends of a
/// transfer print the same count.
pub fn uneven_count(base: u64, call: u64, src: u32, dst: u32) -> u64 {
    let mut r = Rng::derive(call, (u64::from(src) << 32) | u64::from(dst));
    (base / 2 + r.range(0, base.max(1))).max(1)
}

/// A per-rank capture's start after the node's (ns), drawn from the process.
pub fn session_shift_ns(seed: u64, rank: u32) -> i64 {
    let mut r = Rng::derive(seed, 0x5E55_0000 + u64::from(rank));
    20_000_000 + r.range(0, 400_000_000) as i64
}

/// A node's system clock at the capture's start (days of uptime, different on every node).
pub fn system_clock_ns(seed: u64, node: u32) -> i64 {
    let mut r = Rng::derive(seed, 0x5C_0000 + u64::from(node));
    86_400_000_000_000 + r.range(0, 30 * 86_400_000_000_000) as i64
}

/// PCI bus location of a bus id as NCCL prints it (`1b000` → `0000:1b:00.0`).
pub fn bus_location(bus_id: u64) -> String {
    format!(
        "{:04x}:{:02x}:{:02x}.{:x}",
        bus_id >> 20,
        (bus_id >> 12) & 0xff,
        (bus_id >> 4) & 0xff,
        bus_id & 0xf
    )
}

/// What a realistic export holds beyond the generator's defaults (all empty by default).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportExtras {
    /// `TARGET_INFO_GPU` rows (id, busLocation); empty: the generator's default rows.
    pub gpus: Vec<(u32, String)>,
    /// `TARGET_INFO_CUDA_DEVICE` rows (pid, gpuId, cudaId); empty: `(pid, dev, dev)`.
    pub cuda_devices: Vec<(u32, u32, u32)>,
    /// `systemClockNs` at the capture's start when times are in the system clock (3.25).
    pub system_clock_ns: Option<i64>,
    /// The node's zone, minutes east of UTC (`localTime`); `None`: `'synthetic'` strings.
    pub zone_offset_min: Option<i32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_print_as_nccl_formats_them() {
        // 2024-11-21T00:53:20.123456Z
        let t = 1_732_150_400_123_456_789;
        assert_eq!(stamp(StampFormat::Epoch, t, 120), "1732150400.123456 ");
        assert_eq!(
            stamp(StampFormat::BracketLocal, t, 120),
            "[2024-11-21 02:53:20] "
        );
        assert_eq!(
            stamp(StampFormat::Custom, t, -300),
            "2024-11-20 19:53:20.123 "
        );
        assert_eq!(iso(t), "2024-11-21T00:53:20");
    }

    #[test]
    fn bus_locations_read_as_nccl_prints_them() {
        assert_eq!(bus_location(0x1b000), "0000:1b:00.0");
        assert_eq!(bus_location(0xdb000), "0000:db:00.0");
    }

    #[test]
    fn uneven_counts_agree_at_both_ends() {
        let a = uneven_count(1000, 7, 1, 2);
        assert_eq!(a, uneven_count(1000, 7, 1, 2));
        assert!((500..1500).contains(&a));
        let spread: std::collections::BTreeSet<u64> =
            (0..8).map(|d| uneven_count(1000, 7, 1, d)).collect();
        assert!(spread.len() > 4, "counts vary by peer: {spread:?}");
    }

    #[test]
    fn interleaving_keeps_both_writers_text() {
        let a = "node01:5:6 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC";
        let b = "node01:7:8 [1] NCCL INFO AllReduce: opCount 3 sendbuff 0x1";
        let (glued, rest) = interleave(a, b, &mut Rng::new(3)).unwrap();
        assert!(glued.ends_with(b));
        assert_eq!(format!("{}{rest}", &glued[..glued.len() - b.len()]), a);
    }

    #[test]
    fn default_changes_nothing() {
        assert!(!Realism::default().active());
        let pids = pids(&Realism::default(), 1, &[100, 200, 300, 400], 2);
        assert_eq!(pids, vec![(100, 100), (200, 200), (300, 300), (400, 400)]);
    }
}
