//! TEMPORARY probe (not to commit): the 256-rank layout's PP Send/Recv stream pattern.
use align::{align_process, AlignConfig};
use model::log::{LogOp, ProcessKey, SourceLine};
use model::nsys::Kernel;
use model::{DataType, OpType, RedOp};

fn line(op: OpType, op_count: u64) -> LogOp {
    LogOp {
        process: ProcessKey { host: "h".into(), pid: 1 },
        tid: 1,
        cuda_dev: 0,
        op,
        op_count,
        sendbuff: 0x10,
        recvbuff: 0x20,
        count: 1024,
        datatype: Some(DataType::Float32),
        datatype_code: 7,
        red_op: RedOp::Sum,
        root: 1,
        comm: 0xc0,
        nranks: 4,
        stream: 0x5,
        timestamp_ns: None,
        algo: None,
        proto: None,
        nchannels: None,
        rccl_task: None,
        rccl_global_rank: None,
        source: SourceLine::default(),
    }
}

fn kernel(start_ns: i64, ch: u32) -> Kernel {
    Kernel {
        pid: 1,
        start_ns,
        end_ns: start_ns + 10,
        device: 0,
        stream: 13,
        correlation_id: 0,
        name: "ncclDevKernel_SendRecv".into(),
        grid: [ch, 1, 1],
        block: [1, 1, 1],
        static_shared_bytes: 0,
        dynamic_shared_bytes: 0,
        registers_per_thread: 0,
        local_memory_total: 0,
        launch_ns: None,
        launch_tid: None,
    }
}

fn main() {
    let periods: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(30);
    let mut log = Vec::new();
    let mut ks = Vec::new();
    let mut oc = 0u64;
    for _ in 0..periods {
        // S S S (S R)x5 R R R
        for g in 0..11 {
            let (s, r) = match g {
                0..=2 => (true, false),
                3..=7 => (true, true),
                _ => (false, true),
            };
            if s { log.push(line(OpType::Send, oc)); }
            if r { log.push(line(OpType::Recv, oc)); }
            ks.push(kernel(1000 * oc as i64, if s && r { 4 } else { 2 }));
            oc += 1;
        }
    }
    let names = vec![None; ks.len()];
    let a = align_process(&log, &ks, &names, &AlignConfig::rich());
    // Correct: kernel k ↔ the lines of opCount k.
    let mut wrong = 0;
    for (k, m) in a.per_kernel.iter().enumerate() {
        let ok = m.as_ref().is_some_and(|m| m.log_ops.iter().all(|&l| log[l].op_count == k as u64));
        if !ok { wrong += 1; }
    }
    println!("kernels {} lines {} matched {} wrong {}", ks.len(), log.len(), a.report.matched, wrong);
}
