//! End-to-end scenarios in the spirit of the thesis' table 4.5: 4 ranks × 200 operations with
//! known ground truth, 20 % drops on either side, with and without log timestamps. Prints the
//! F1 of the thesis scoring, the sliding-window baseline and the rich configuration
//! (`cargo test -p align --test scenarios -- --nocapture`).

use align::baseline::{sliding_window, DEFAULT_WINDOW};
use align::metrics::{score_pairs, Prf};
use align::{align_process, AlignConfig};
use model::log::{LogOp, ProcessKey, SourceLine};
use model::nsys::{Kernel, KernelName};
use model::{Algo, DataType, OpType, Proto, RedOp};

use model::rng::SplitMix64 as Rng;

#[derive(Clone, Copy, Debug)]
enum Drops {
    None,
    Nsys,
    Log,
    Both,
}

/// One rank's data and the truth pairs (log index, kernel index) after the drops.
struct Rank {
    log: Vec<LogOp>,
    kernels: Vec<Kernel>,
    names: Vec<Option<KernelName>>,
    truth: Vec<(usize, usize)>,
}

#[derive(Clone, Copy)]
struct Gen {
    drops: Drops,
    timestamps: bool,
    /// Every log line written twice (the 2:1 rank of table 4.1).
    duplicate: bool,
    /// Two streams (e.g. TP and DP communicators) whose kernels may overlap.
    two_streams: bool,
    /// Point-to-point ops as grouped Send+Recv pairs (2 lines, 1 SendRecv kernel); otherwise
    /// single Send or Recv lines, one kernel each (as in table 4.5, which has 1:1 ground truth).
    p2p_groups: bool,
}

fn dtype_suffix(d: DataType) -> &'static str {
    match d {
        DataType::Float16 => "f16",
        DataType::Bfloat16 => "bf16",
        _ => "f32",
    }
}

/// What was drawn for one operation of [`make_rank`]: its call, its message and its kernel's
/// times (the drawing order is the generator's, so it stays in `make_rank`).
struct Drawn {
    /// Stream (and communicator) index: 0 or 1.
    s: usize,
    /// The kernel's op: SendRecv for any point-to-point op.
    op: OpType,
    dt: DataType,
    red: RedOp,
    nch: u32,
    peer: u32,
    count: u64,
    algo: Algo,
    proto: Proto,
    /// Log time of the first line.
    t: i64,
    launch: i64,
    start: i64,
    dur: i64,
}

fn make_rank(rng: &mut Rng, rank: u32, n_ops: usize, g: Gen) -> Rank {
    let (drop_log, drop_k) = match g.drops {
        Drops::None => (0.0, 0.0),
        Drops::Nsys => (0.0, 0.2),
        Drops::Log => (0.2, 0.0),
        Drops::Both => (0.2, 0.2),
    };
    let process = ProcessKey {
        host: "node0".into(),
        pid: 1000 + rank,
    };
    let epoch = 1_760_000_000_000_000_000i64;
    let mut t = epoch;
    let mut gpu_free = 0i64;
    let mut op_counts = [0u64; 2];
    let (mut log, mut kernels, mut names, mut truth) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n_ops {
        t += 50_000 + rng.below(1_950_000) as i64;
        let s = if g.two_streams {
            rng.below(2) as usize
        } else {
            0
        };
        let x = rng.below(1000);
        let op = match x {
            0..=399 => OpType::AllReduce,
            400..=549 => OpType::AllGather,
            550..=699 => OpType::ReduceScatter,
            700..=799 => OpType::Broadcast,
            _ if g.p2p_groups => OpType::SendRecv, // a grouped Send + Recv pair
            800..=899 => OpType::Send,
            _ => OpType::Recv,
        };
        let dt = [DataType::Float16, DataType::Bfloat16, DataType::Float32][rng.below(3) as usize];
        let red = [RedOp::Sum, RedOp::Sum, RedOp::Max, RedOp::Avg][rng.below(4) as usize];
        let nch = [2u32, 4, 8, 16][rng.below(4) as usize];
        let peer = if rng.below(2) == 0 {
            (rank + 1) % 4
        } else {
            (rank + 3) % 4
        };
        let lines: Vec<OpType> = if op == OpType::SendRecv {
            vec![OpType::Send, OpType::Recv]
        } else {
            vec![op]
        };
        let op = if op.is_p2p() { OpType::SendRecv } else { op };
        // Kernel.
        // Profile clock: session-relative, drifting 20 ppm from the log's clock.
        let launch = (t - epoch) + (t - epoch) / 50_000 + 1_000_000_000 + rng.below(30_000) as i64;
        let start = (launch + 5_000 + rng.below(300_000) as i64).max(gpu_free + 1_000);
        let dur = 10_000 + rng.below(500_000) as i64;
        gpu_free = if g.two_streams {
            gpu_free.max(start)
        } else {
            start + dur
        };
        // Message size (log-uniform) decides NCCL's algorithm and protocol, which the 2.19+
        // kernel name and the log's tuning line both show.
        let count = (1u64 << rng.below(22)) + rng.below(1024);
        let bytes = count * dt.size_bytes();
        let proto = match bytes {
            0..=65_535 => Proto::LL,
            65_536..=4_194_303 => Proto::LL128,
            _ => Proto::Simple,
        };
        let algo = if op == OpType::AllReduce && bytes < 262_144 {
            Algo::Tree
        } else {
            Algo::Ring
        };
        let d = Drawn {
            s,
            op,
            dt,
            red,
            nch,
            peer,
            count,
            algo,
            proto,
            t,
            launch,
            start,
            dur,
        };
        let keep_k = !rng.chance(drop_k);
        let kernel_index = kernels.len();
        if keep_k {
            kernels.push(kernel(&d, rank, kernel_index, g.timestamps));
            names.push(Some(decoded_name(&d)));
        }
        // NCCL counts opCount per launch: the lines of one Send/Recv group share it.
        op_counts[s] += 1;
        for (li, &lop) in lines.iter().enumerate() {
            let keep_l = !rng.chance(drop_log);
            let line = log_line(
                &d,
                &process,
                rank,
                lop,
                li,
                op_counts[s],
                g.timestamps,
                log.len(),
            );
            if keep_l {
                if keep_k {
                    truth.push((log.len(), kernel_index));
                }
                log.push(line.clone());
                if g.duplicate {
                    log.push(line);
                }
            }
        }
    }
    Rank {
        log,
        kernels,
        names,
        truth,
    }
}

/// The kernel's name as NCCL 2.19+ prints it (op, reduction, datatype, algorithm, protocol).
fn kernel_name_text(d: &Drawn) -> String {
    let red_name = match d.red {
        RedOp::Max => "Max",
        RedOp::Avg => "Avg",
        _ => "Sum",
    };
    if d.op == OpType::SendRecv {
        "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)".to_string()
    } else {
        format!(
            "ncclDevKernel_{}_{}_{}_{}_{}(ncclDevKernelArgsStorage<4096ul>)",
            d.op.name(),
            red_name,
            dtype_suffix(d.dt),
            d.algo.name(),
            d.proto.name()
        )
    }
}

/// The export's kernel row of operation `d`, the `index`-th kept kernel of `rank`.
fn kernel(d: &Drawn, rank: u32, index: usize, timestamps: bool) -> Kernel {
    Kernel {
        pid: 1000 + rank,
        start_ns: d.start,
        end_ns: d.start + d.dur,
        device: rank,
        stream: 7 + d.s as u32 * 6,
        correlation_id: index as u32,
        name: kernel_name_text(d).into(),
        grid: [if d.op == OpType::SendRecv { 2 } else { d.nch }, 1, 1],
        block: [640, 1, 1],
        static_shared_bytes: 0,
        dynamic_shared_bytes: 0,
        registers_per_thread: 96,
        local_memory_total: 0,
        launch_ns: timestamps.then_some(d.launch),
        launch_tid: None,
    }
}

/// What the kernel name decodes to.
fn decoded_name(d: &Drawn) -> KernelName {
    let reduces = matches!(d.op, OpType::AllReduce | OpType::ReduceScatter);
    let coll = d.op != OpType::SendRecv;
    KernelName {
        op: Some(d.op),
        red_op: reduces.then_some(d.red),
        datatype: coll.then_some(d.dt),
        algo: coll.then_some(d.algo),
        proto: coll.then_some(d.proto),
    }
}

/// Log line `li` of operation `d` (a Send/Recv group has two), the line `lines_before + 1` of
/// the log.
#[allow(clippy::too_many_arguments)]
fn log_line(
    d: &Drawn,
    process: &ProcessKey,
    rank: u32,
    lop: OpType,
    li: usize,
    op_count: u64,
    timestamps: bool,
    lines_before: usize,
) -> LogOp {
    LogOp {
        process: process.clone(),
        tid: 1,
        cuda_dev: rank,
        op: lop,
        op_count,
        sendbuff: 0x7f00_0000,
        recvbuff: 0x7f10_0000,
        count: d.count,
        datatype: Some(d.dt),
        datatype_code: d.dt.code(),
        red_op: d.red,
        root: if lop.is_p2p() { i64::from(d.peer) } else { 0 },
        comm: 0x4000 + d.s as u64,
        nranks: 4,
        stream: 0x32dc_6760 + d.s as u64 * 0x100,
        timestamp_ns: timestamps.then_some(d.t + li as i64 * 2_000),
        algo: (!lop.is_p2p()).then_some(d.algo),
        proto: (!lop.is_p2p()).then_some(d.proto),
        nchannels: (!lop.is_p2p()).then_some(d.nch),
        rccl_task: None,
        rccl_global_rank: None,
        rccl_acc: None,
        sym_kernel: None,
        source: SourceLine {
            file: 0,
            line: lines_before as u64 + 1,
        },
    }
}

struct Row {
    thesis: Prf,
    baseline: Prf,
    rich: Prf,
}

fn run(g: Gen, seed: u64) -> Row {
    let mut rng = Rng::from_state(seed);
    let (mut th, mut bl, mut ri) = (Vec::new(), Vec::new(), Vec::new());
    for rank in 0..4 {
        let r = make_rank(&mut rng, rank, 200, g);
        let thesis = align_process(&r.log, &r.kernels, &r.names, &AlignConfig::thesis());
        th.push(score_pairs(&thesis.pairs(), &r.truth));
        let base = sliding_window(&r.log, &r.kernels, &r.names, DEFAULT_WINDOW);
        let bp: Vec<(usize, usize)> = base
            .iter()
            .enumerate()
            .filter_map(|(k, l)| Some(((*l)?, k)))
            .collect();
        bl.push(score_pairs(&bp, &r.truth));
        let rich = align_process(&r.log, &r.kernels, &r.names, &AlignConfig::rich());
        assert_eq!(rich.report.mismatched, 0);
        ri.push(score_pairs(&rich.pairs(), &r.truth));
    }
    Row {
        thesis: Prf::pool(&th),
        baseline: Prf::pool(&bl),
        rich: Prf::pool(&ri),
    }
}

#[test]
fn table_4_5_like() {
    for timestamps in [false, true] {
        println!("timestamps: {timestamps}");
        println!(
            "{:<16} {:>8} {:>8} {:>8}",
            "scenario", "thesis", "baseline", "rich"
        );
        let mut sum = [0.0; 3];
        for (n, drops) in [Drops::None, Drops::Nsys, Drops::Log, Drops::Both]
            .into_iter()
            .enumerate()
        {
            let g = Gen {
                drops,
                timestamps,
                duplicate: false,
                two_streams: false,
                p2p_groups: false,
            };
            let row = run(g, 42 + n as u64);
            println!(
                "{:<16} {:>8.3} {:>8.3} {:>8.3}",
                format!("{drops:?}"),
                row.thesis.f1,
                row.baseline.f1,
                row.rich.f1
            );
            sum[0] += row.thesis.f1;
            sum[1] += row.baseline.f1;
            sum[2] += row.rich.f1;
            let want = if timestamps { 0.99 } else { 0.97 };
            assert!(
                row.rich.f1 >= want,
                "{drops:?} ts={timestamps}: rich F1 {:.3}",
                row.rich.f1
            );
        }
        println!(
            "{:<16} {:>8.3} {:>8.3} {:>8.3}",
            "average",
            sum[0] / 4.0,
            sum[1] / 4.0,
            sum[2] / 4.0
        );
    }
}

#[test]
fn duplicated_logging_and_two_streams() {
    for timestamps in [false, true] {
        for (duplicate, two_streams) in [(true, false), (false, true), (true, true)] {
            let g = Gen {
                drops: Drops::Both,
                timestamps,
                duplicate,
                two_streams,
                p2p_groups: true,
            };
            let row = run(g, 7);
            println!(
                "dup={duplicate} streams2={two_streams} ts={timestamps}: thesis {:.3} baseline {:.3} rich {:.3}",
                row.thesis.f1, row.baseline.f1, row.rich.f1
            );
            assert!(row.rich.f1 >= 0.9, "rich F1 {:.3}", row.rich.f1);
        }
    }
    // The report flags the 2:1 duplication and the fused Send/Recv kernels.
    let mut rng = Rng::from_state(3);
    let g = Gen {
        drops: Drops::None,
        timestamps: false,
        duplicate: true,
        two_streams: false,
        p2p_groups: true,
    };
    let r = make_rank(&mut rng, 0, 200, g);
    let a = align_process(&r.log, &r.kernels, &r.names, &AlignConfig::rich());
    assert!(a.report.duplication_2to1);
    assert_eq!(a.report.duplicate_log_ops * 2, r.log.len());
    assert!(a.report.fused_kernels > 0);
    assert!(a
        .per_kernel
        .iter()
        .flatten()
        .all(|m| (0.0..=1.0).contains(&m.confidence)));
}

/// How much the figures move with the seed (`-- --ignored --nocapture`).
#[test]
#[ignore]
fn seed_sweep() {
    for timestamps in [false, true] {
        for drops in [Drops::Nsys, Drops::Log, Drops::Both] {
            let g = Gen {
                drops,
                timestamps,
                duplicate: false,
                two_streams: false,
                p2p_groups: false,
            };
            let f: Vec<f64> = (0..20).map(|seed| run(g, 1000 + seed).rich.f1).collect();
            let t: Vec<f64> = (0..20).map(|seed| run(g, 1000 + seed).thesis.f1).collect();
            let min = f.iter().copied().fold(1.0, f64::min);
            let mean = f.iter().sum::<f64>() / f.len() as f64;
            let tmean = t.iter().sum::<f64>() / t.len() as f64;
            println!("{drops:?} ts={timestamps}: rich min {min:.3} mean {mean:.3}; thesis mean {tmean:.3}");
        }
    }
}

/// One rank with 100 000 operations through `align_process` (release:
/// `cargo test --release -p align --test scenarios -- --ignored --nocapture`).
#[test]
#[ignore]
fn large_rank() {
    for timestamps in [false, true] {
        let mut rng = Rng::from_state(5);
        let g = Gen {
            drops: Drops::Both,
            timestamps,
            duplicate: false,
            two_streams: false,
            p2p_groups: true,
        };
        let n = std::env::var("LARGE_N")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100_000);
        let r = make_rank(&mut rng, 0, n, g);
        for (name, cfg) in [
            ("thesis", AlignConfig::thesis()),
            ("rich", AlignConfig::rich()),
        ] {
            let t = std::time::Instant::now();
            let a = align_process(&r.log, &r.kernels, &r.names, &cfg);
            let el = t.elapsed();
            let f1 = score_pairs(&a.pairs(), &r.truth).f1;
            println!(
                "{n} ops ({} log lines, {} kernels), ts={timestamps}, {name}: {el:?}, F1 {f1:.3}",
                r.log.len(),
                r.kernels.len()
            );
        }
    }
}
