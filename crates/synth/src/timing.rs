//! When things happen: an alpha-beta cost model per call and a synchronising simulation in which
//! a collective finishes only after every member arrived (a Send/Recv after its peer). Why: the
//! analyzer's clock synchronisation and bandwidth numbers need kernels whose true times are
//! consistent across ranks, so that recovered offsets can be checked against the truth.

use crate::comms::Comms;
use crate::rng::Rng;
use crate::schedule::Call;
use ::model::OpType;
use std::collections::HashMap;

/// Hardware figures of the cost model.
#[derive(Debug, Clone, Copy)]
pub struct Hardware {
    pub gpus_per_node: u32,
    /// NVLink bandwidth inside a node, GB/s (= bytes per ns).
    pub nvlink_gbps: f64,
    /// Network bandwidth between nodes, GB/s.
    pub net_gbps: f64,
}

/// True (reference-clock) times of one call on one rank, ns since the run's t0.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timed {
    /// When the CPU enqueued the call (the log line's time).
    pub arrive_ns: i64,
    /// When the kernel started on the GPU.
    pub start_ns: i64,
    /// When it ended.
    pub end_ns: i64,
    /// When the GPU became free before this call (start of the compute gap).
    pub gap_start_ns: i64,
}

fn bytes_moved(call: &Call, comms: &Comms, rank: u32) -> f64 {
    let mut total = 0.0;
    for o in &call.ops {
        let n = comms.list[o.comm].size() as f64;
        let b = (o.count * o.dtype.size_bytes()) as f64;
        total += match o.op {
            OpType::AllReduce => 2.0 * (n - 1.0) / n * b,
            OpType::AllGather | OpType::ReduceScatter => (n - 1.0) * b,
            OpType::Send if o.peer != Some(rank) => b,
            OpType::Send | OpType::Recv => 0.0,
            _ => b,
        };
    }
    total
}

/// Duration of the data movement of `call` on `rank`, ns.
pub fn transfer_ns(call: &Call, comms: &Comms, rank: u32, hw: &Hardware, rng: &mut Rng) -> i64 {
    let members = &comms.list[call.comm()].global_ranks;
    let node = rank / hw.gpus_per_node;
    let intra = if call.is_p2p() {
        call.ops
            .iter()
            .all(|o| o.peer.unwrap_or(rank) / hw.gpus_per_node == node)
    } else {
        members.iter().all(|r| r / hw.gpus_per_node == node)
    };
    let (alpha, bw) = if intra {
        (6_000.0, hw.nvlink_gbps)
    } else {
        (20_000.0, hw.net_gbps)
    };
    let t = alpha + bytes_moved(call, comms, rank) / bw;
    (t * rng.uniform(0.95, 1.08)) as i64
}

/// (kind 0 send / 1 recv / 2 collective, peer or comm, own rank, sequence number).
type PartnerKey = (u8, u32, u32, usize);

/// Simulates every rank's calls; returns per rank, per call, the true times.
pub fn simulate(calls: &[Vec<Call>], comms: &Comms, hw: &Hardware, seed: u64) -> Vec<Vec<Timed>> {
    let n = calls.len();
    // Partners: the matching call on every other member (collectives by per-communicator
    // sequence, Send/Recv by the k-th message between the two ranks).
    let mut coll_seq: HashMap<(usize, u32), Vec<usize>> = HashMap::new();
    let mut sends: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
    let mut recvs: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
    // Per rank, all calls' keys in one flat vector with offsets: one small Vec per call cost
    // ~400 MB at 64 ranks × 10⁵ calls.
    let mut keys: Vec<(Vec<u32>, Vec<PartnerKey>)> = Vec::with_capacity(n);
    for (r, list) in calls.iter().enumerate() {
        let r = r as u32;
        let mut starts = Vec::with_capacity(list.len() + 1);
        let mut k: Vec<PartnerKey> = Vec::with_capacity(list.len());
        for (i, c) in list.iter().enumerate() {
            starts.push(k.len() as u32);
            if c.orphan {
            } else if c.is_p2p() {
                for o in &c.ops {
                    let q = o.peer.unwrap_or(r);
                    if q == r {
                        continue;
                    }
                    if o.op == OpType::Send {
                        let v = sends.entry((r, q)).or_default();
                        k.push((0, q, r, v.len()));
                        v.push(i);
                    } else {
                        let v = recvs.entry((q, r)).or_default();
                        k.push((1, q, r, v.len()));
                        v.push(i);
                    }
                }
            } else {
                let v = coll_seq.entry((c.comm(), r)).or_default();
                k.push((2, c.comm() as u32, 0, v.len()));
                v.push(i);
            }
        }
        starts.push(k.len() as u32);
        k.shrink_to_fit();
        keys.push((starts, k));
    }
    let partners = |r: u32, i: usize| -> Vec<(u32, usize)> {
        let mut out = Vec::new();
        let (starts, flat) = &keys[r as usize];
        for &(kind, a, b, seq) in &flat[starts[i] as usize..starts[i + 1] as usize] {
            match kind {
                0 => {
                    // my k-th send r->a matches a's k-th recv from r
                    if let Some(j) = recvs.get(&(r, a)).and_then(|v| v.get(seq)) {
                        out.push((a, *j));
                    }
                }
                1 => {
                    if let Some(j) = sends.get(&(a, b)).and_then(|v| v.get(seq)) {
                        out.push((a, *j));
                    }
                }
                _ => {
                    for &q in &comms.list[a as usize].global_ranks {
                        if q != r {
                            if let Some(j) = coll_seq.get(&(a as usize, q)).and_then(|v| v.get(seq))
                            {
                                out.push((q, *j));
                            }
                        }
                    }
                }
            }
        }
        out
    };
    let mut rngs: Vec<Rng> = (0..n)
        .map(|r| Rng::derive(seed, 0x7100 + r as u64))
        .collect();
    let mut out: Vec<Vec<Timed>> = calls
        .iter()
        .map(|l| vec![Timed::default(); l.len()])
        .collect();
    let mut cursor = vec![0usize; n];
    let mut free = vec![0i64; n];
    let arrive = |r: usize, i: usize, free: &[i64], out: &mut [Vec<Timed>], rngs: &mut [Rng]| {
        let c = &calls[r][i];
        let jitter = (c.compute_ns as f64 * rngs[r].uniform(-0.02, 0.02)) as i64;
        let a = free[r] + c.compute_ns as i64 + jitter + 2_000;
        let launch = rngs[r].range(4_000, 25_000) as i64;
        out[r][i].gap_start_ns = free[r];
        out[r][i].arrive_ns = a;
        out[r][i].start_ns = a + launch;
    };
    #[allow(clippy::needless_range_loop)]
    for r in 0..n {
        if !calls[r].is_empty() {
            arrive(r, 0, &free, &mut out, &mut rngs);
        }
    }
    let remaining = |cursor: &[usize]| (0..n).any(|r| cursor[r] < calls[r].len());
    while remaining(&cursor) {
        let mut progress = false;
        for r in 0..n {
            while cursor[r] < calls[r].len() {
                let i = cursor[r];
                let ps = partners(r as u32, i);
                if ps.iter().any(|&(q, j)| cursor[q as usize] < j) {
                    break;
                }
                resolve(r, i, &ps, calls, comms, hw, &mut out, &mut rngs, &mut free);
                cursor[r] += 1;
                if cursor[r] < calls[r].len() {
                    arrive(r, cursor[r], &free, &mut out, &mut rngs);
                }
                progress = true;
            }
        }
        if !progress {
            // A schedule whose pairs do not line up: advance the earliest rank alone.
            let r = (0..n)
                .filter(|&r| cursor[r] < calls[r].len())
                .min_by_key(|&r| out[r][cursor[r]].arrive_ns)
                .expect("something remains");
            let i = cursor[r];
            let ps: Vec<(u32, usize)> = partners(r as u32, i)
                .into_iter()
                .filter(|&(q, j)| cursor[q as usize] >= j)
                .collect();
            resolve(r, i, &ps, calls, comms, hw, &mut out, &mut rngs, &mut free);
            cursor[r] += 1;
            if cursor[r] < calls[r].len() {
                arrive(r, cursor[r], &free, &mut out, &mut rngs);
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn resolve(
    r: usize,
    i: usize,
    partners: &[(u32, usize)],
    calls: &[Vec<Call>],
    comms: &Comms,
    hw: &Hardware,
    out: &mut [Vec<Timed>],
    rngs: &mut [Rng],
    free: &mut [i64],
) {
    let c = &calls[r][i];
    if c.orphan {
        out[r][i].start_ns = out[r][i].arrive_ns;
        out[r][i].end_ns = out[r][i].arrive_ns;
        free[r] = out[r][i].arrive_ns;
        return;
    }
    let sync = partners
        .iter()
        .map(|&(q, j)| out[q as usize][j].start_ns)
        .chain(std::iter::once(out[r][i].start_ns))
        .max()
        .unwrap_or(0);
    // A collective's members finish together (the last chunk reaches everyone at once, within
    // the ~µs a kernel needs to notice): the first member resolved draws the duration, the others
    // end with it up to a sub-µs jitter. Clock synchronisation relies on exactly this.
    let finished = if c.is_p2p() {
        None
    } else {
        partners
            .iter()
            .map(|&(q, j)| out[q as usize][j].end_ns)
            .find(|&e| e > 0)
    };
    out[r][i].end_ns = match finished {
        Some(e) => (e + rngs[r].range(0, 1_000) as i64 - 500).max(sync),
        None => sync + transfer_ns(c, comms, r as u32, hw, &mut rngs[r]),
    };
    free[r] = out[r][i].end_ns;
}
