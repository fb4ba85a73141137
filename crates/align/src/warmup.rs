//! A small made-up process to align before the real ones: the page's alignment workers run it
//! while the files are still being read.
//!
//! Why: V8 runs a wasm function in baseline code until it has run enough, then compiles it
//! optimised in the background and uses that code from its next call on. A fresh worker's
//! first alignments therefore ran up to 7× slower than its later ones: the generator's
//! 8 ranks × 10⁴ operations took 1.3–1.4 s to align on two workers, 0.9 s once one of them
//! had aligned this process while the files were read (docs/PERFORMANCE.md).
//!
//! The process looks like a training rank's: collectives on one stream, grouped Send/Recv
//! fused into SendRecv kernels on another, log timestamps, a few lines and kernels missing,
//! so that the alignment takes its usual paths (streams, clock model, fusion, hints).

use crate::per_process::{align_process_hinted, AlignConfig};
use model::log::{LogOp, ProcessKey, SourceLine};
use model::nsys::{Kernel, KernelName};
use model::{Algo, DataType, OpType, Proto, RedOp};
use std::sync::Arc;

/// The made-up process: log operations, kernels, their decoded names and the call each kernel
/// runs (the hints of a consensus pass).
pub struct WarmupProcess {
    pub log_ops: Vec<LogOp>,
    pub kernels: Vec<Kernel>,
    pub names: Vec<Option<KernelName>>,
    pub hints: Vec<Option<(u64, u64)>>,
}

const COLL_COMM: u64 = 0xc011;
const P2P_COMM: u64 = 0xb2b;

/// A process of `steps` training steps (about 1.6 log operations and 1.3 kernels per step).
pub fn process(steps: usize) -> WarmupProcess {
    let mut p = WarmupProcess {
        log_ops: Vec::new(),
        kernels: Vec::new(),
        names: Vec::new(),
        hints: Vec::new(),
    };
    let (mut coll_count, mut p2p_count) = (0u64, 0u64);
    let mut t = 1_000_000_000i64;
    for s in 0..steps {
        let (op, datatype) = match s % 4 {
            3 => (OpType::AllGather, DataType::Bfloat16),
            1 => (OpType::ReduceScatter, DataType::Float32),
            _ => (OpType::AllReduce, DataType::Float32),
        };
        // Every 41st line and every 37th kernel lost, each side on its own.
        let log_kept = s % 41 != 40;
        let kernel_kept = s % 37 != 36;
        t += 20_000 + (s as i64 * 7919) % 5_000;
        if log_kept {
            p.log_ops
                .push(line(op, datatype, coll_count, COLL_COMM, 0x5, t));
        }
        if kernel_kept {
            p.push_kernel(op, datatype, 13, t + 8_000, (COLL_COMM, coll_count));
        }
        coll_count += 1;
        if s % 3 == 0 {
            // A grouped Send and Recv: two lines, one SendRecv kernel.
            t += 5_000;
            for op in [OpType::Send, OpType::Recv] {
                p.log_ops
                    .push(line(op, DataType::Bfloat16, p2p_count, P2P_COMM, 0x9, t));
            }
            if kernel_kept {
                p.push_kernel(
                    OpType::SendRecv,
                    DataType::Bfloat16,
                    17,
                    t + 8_000,
                    (P2P_COMM, p2p_count),
                );
            }
            p2p_count += 1;
        }
    }
    p
}

impl WarmupProcess {
    fn push_kernel(
        &mut self,
        op: OpType,
        datatype: DataType,
        stream: u32,
        launch_ns: i64,
        call: (u64, u64),
    ) {
        let reduce = matches!(op, OpType::AllReduce | OpType::ReduceScatter);
        let name = if reduce {
            format!("ncclDevKernel_{}_Sum_f32_RING_LL", op.name())
        } else {
            format!("ncclDevKernel_{}_RING_LL", op.name())
        };
        let start_ns = launch_ns + 10_000;
        self.kernels.push(Kernel {
            pid: 1,
            start_ns,
            end_ns: start_ns + 15_000,
            device: 0,
            stream,
            correlation_id: self.kernels.len() as u32,
            name: Arc::from(name),
            grid: [8, 1, 1],
            block: [512, 1, 1],
            static_shared_bytes: 0,
            dynamic_shared_bytes: 0,
            registers_per_thread: 0,
            local_memory_total: 0,
            launch_ns: Some(launch_ns),
            launch_tid: Some(1),
        });
        self.names.push(Some(KernelName {
            op: Some(op),
            red_op: reduce.then_some(RedOp::Sum),
            datatype: reduce.then_some(datatype),
            algo: Some(Algo::Ring),
            proto: Some(Proto::LL),
        }));
        self.hints.push(Some(call));
    }
}

fn line(op: OpType, datatype: DataType, op_count: u64, comm: u64, stream: u64, t: i64) -> LogOp {
    LogOp {
        process: ProcessKey {
            host: "warmup".into(),
            pid: 1,
        },
        tid: 1,
        cuda_dev: 0,
        op,
        op_count,
        sendbuff: 0x10,
        recvbuff: 0x20,
        count: 1 << 20,
        datatype: Some(datatype),
        datatype_code: 7,
        red_op: RedOp::Sum,
        root: if op.is_p2p() { 1 } else { 0 },
        comm,
        nranks: 8,
        stream,
        timestamp_ns: Some(t),
        algo: None,
        proto: None,
        nchannels: None,
        rccl_task: None,
        rccl_global_rank: None,
        rccl_acc: None,
        sym_kernel: None,
        source: SourceLine::default(),
    }
}

/// Aligns the made-up process of `steps` steps as a first pass and as a hinted second pass
/// would; returns how many kernels the hinted pass matched (the caller only wants the work
/// done; the count keeps it from being optimised away and lets a test check it).
pub fn run(steps: usize) -> usize {
    let p = process(steps);
    let cfg = AlignConfig::rich();
    let _ = align_process_hinted(&p.log_ops, &p.kernels, &p.names, &cfg, &[]);
    let hinted = align_process_hinted(&p.log_ops, &p.kernels, &p.names, &cfg, &p.hints);
    hinted.per_kernel.iter().flatten().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_made_up_process_aligns_as_made() {
        let p = process(400);
        let cfg = AlignConfig::rich();
        let a = align_process_hinted(&p.log_ops, &p.kernels, &p.names, &cfg, &p.hints);
        // Every kernel whose lines were kept is matched to them: its call's lines.
        let mut right = 0;
        for (k, m) in a.per_kernel.iter().enumerate() {
            let Some(m) = m else { continue };
            let call = p.hints[k].unwrap();
            if m.lines()
                .all(|l| (p.log_ops[l].comm, p.log_ops[l].op_count) == call)
            {
                right += 1;
            }
        }
        let kernels = p.kernels.len();
        assert!(kernels > 400, "{kernels} kernels");
        assert!(right * 100 >= kernels * 95, "{right} of {kernels} right");
        assert_eq!(run(400), a.per_kernel.iter().flatten().count());
    }
}
