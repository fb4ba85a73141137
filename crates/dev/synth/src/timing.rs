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
    let intra_comm = members.iter().all(|r| r / hw.gpus_per_node == node);
    transfer_ns_in(call, comms, rank, hw, rng, intra_comm)
}

/// [`transfer_ns`] with the communicator's "all members on one node" flag precomputed (it costs
/// a pass over the members, 8192 for a world communicator, on every call).
fn transfer_ns_in(
    call: &Call,
    comms: &Comms,
    rank: u32,
    hw: &Hardware,
    rng: &mut Rng,
    intra_comm: bool,
) -> i64 {
    let node = rank / hw.gpus_per_node;
    let intra = if call.is_p2p() {
        call.ops
            .iter()
            .all(|o| o.peer.unwrap_or(rank) / hw.gpus_per_node == node)
    } else {
        intra_comm
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

/// One collective instance `(comm, sequence)` while some member has not finished it: how many
/// members arrived, the latest kernel start among them and how many resolved it. Why: a
/// collective completes when its last member arrives; keeping that per communicator instead of
/// asking every member for every other member's state is O(members) rather than O(members²)
/// (67 M checks per world collective at 8192 ranks).
#[derive(Default, Clone, Copy)]
struct CollState {
    arrived: u32,
    resolved: u32,
    max_start: i64,
    /// The first resolved member's end: the others end with it.
    end_ns: Option<i64>,
}

/// Simulates every rank's calls; returns per rank, per call, the true times.
pub fn simulate(calls: &[Vec<Call>], comms: &Comms, hw: &Hardware, seed: u64) -> Vec<Vec<Timed>> {
    let n = calls.len();
    // Partners: the matching call on every other member (collectives by per-communicator
    // sequence, Send/Recv by the k-th message between the two ranks).
    let mut coll_seq: HashMap<(usize, u32), usize> = HashMap::new();
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
                k.push((2, c.comm() as u32, 0, *v));
                *v += 1;
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
                // Collectives synchronise through `coll` (below), not partner lists.
                _ => {}
            }
        }
        out
    };
    // The collective a call is, if it is one: (comm, sequence).
    let coll_key = |r: usize, i: usize| -> Option<(u32, usize)> {
        let (starts, flat) = &keys[r];
        flat[starts[i] as usize..starts[i + 1] as usize]
            .iter()
            .find(|k| k.0 == 2)
            .map(|k| (k.1, k.3))
    };
    let sizes: Vec<u32> = comms.list.iter().map(|c| c.size()).collect();
    let intra: Vec<bool> = comms
        .list
        .iter()
        .map(|c| {
            let node = c.global_ranks.first().map_or(0, |g| g / hw.gpus_per_node);
            c.global_ranks.iter().all(|g| g / hw.gpus_per_node == node)
        })
        .collect();
    let mut coll: HashMap<(u32, usize), CollState> = HashMap::new();
    let mut rngs: Vec<Rng> = (0..n)
        .map(|r| Rng::derive(seed, 0x7100 + r as u64))
        .collect();
    let mut out: Vec<Vec<Timed>> = calls
        .iter()
        .map(|l| vec![Timed::default(); l.len()])
        .collect();
    let mut cursor = vec![0usize; n];
    let mut free = vec![0i64; n];
    let arrive = |r: usize,
                  i: usize,
                  free: &[i64],
                  out: &mut [Vec<Timed>],
                  rngs: &mut [Rng],
                  coll: &mut HashMap<(u32, usize), CollState>| {
        let c = &calls[r][i];
        let jitter = (c.compute_ns as f64 * rngs[r].uniform(-0.02, 0.02)) as i64;
        let a = free[r] + c.compute_ns as i64 + jitter + 2_000;
        let launch = rngs[r].range(4_000, 25_000) as i64;
        out[r][i].gap_start_ns = free[r];
        out[r][i].arrive_ns = a;
        out[r][i].start_ns = a + launch;
        if let Some(key) = coll_key(r, i) {
            let st = coll.entry(key).or_default();
            st.arrived += 1;
            st.max_start = st.max_start.max(a + launch);
        }
    };
    // Resolves call i of rank r: its end from the partners' (p2p) or the collective's latest
    // start; forgets a collective once every member resolved it.
    let finish = |r: usize,
                  i: usize,
                  ps: &[(u32, usize)],
                  out: &mut [Vec<Timed>],
                  rngs: &mut [Rng],
                  free: &mut [i64],
                  coll: &mut HashMap<(u32, usize), CollState>| {
        let key = coll_key(r, i);
        let state = key.and_then(|k| coll.get(&k));
        let sync = state.map(|st| st.max_start);
        let end = state.and_then(|st| st.end_ns);
        let ic = intra[calls[r][i].comm()];
        resolve(r, i, ps, sync, end, calls, comms, hw, ic, out, rngs, free);
        if let Some(k) = key {
            if let Some(st) = coll.get_mut(&k) {
                st.end_ns.get_or_insert(out[r][i].end_ns);
                st.resolved += 1;
                if st.resolved >= sizes[k.0 as usize] {
                    coll.remove(&k);
                }
            }
        }
    };
    #[allow(clippy::needless_range_loop)]
    for r in 0..n {
        if !calls[r].is_empty() {
            arrive(r, 0, &free, &mut out, &mut rngs, &mut coll);
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
                if let Some(k) = coll_key(r, i) {
                    let all = coll
                        .get(&k)
                        .is_some_and(|st| st.arrived >= sizes[k.0 as usize]);
                    if !all {
                        break;
                    }
                }
                finish(r, i, &ps, &mut out, &mut rngs, &mut free, &mut coll);
                cursor[r] += 1;
                if cursor[r] < calls[r].len() {
                    arrive(r, cursor[r], &free, &mut out, &mut rngs, &mut coll);
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
            finish(r, i, &ps, &mut out, &mut rngs, &mut free, &mut coll);
            cursor[r] += 1;
            if cursor[r] < calls[r].len() {
                arrive(r, cursor[r], &free, &mut out, &mut rngs, &mut coll);
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
    coll_max_start: Option<i64>,
    coll_end: Option<i64>,
    calls: &[Vec<Call>],
    comms: &Comms,
    hw: &Hardware,
    intra_comm: bool,
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
        .chain(coll_max_start)
        .max()
        .unwrap_or(0);
    // A collective's members finish together (the last chunk reaches everyone at once, within
    // the ~µs a kernel needs to notice): the first member resolved draws the duration, the others
    // end with it up to a sub-µs jitter. Clock synchronisation relies on exactly this.
    out[r][i].end_ns = match coll_end {
        Some(e) => (e + rngs[r].range(0, 1_000) as i64 - 500).max(sync),
        None => sync + transfer_ns_in(c, comms, r as u32, hw, &mut rngs[r], intra_comm),
    };
    free[r] = out[r][i].end_ns;
}
