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
    /// A known difference from an otherwise equal run ([`crate::variation`]).
    pub knobs: crate::variation::Knobs,
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
    let t = alpha
        + bytes_moved(call, comms, rank) / bw * hw.knobs.time_factor(call, comms, rank, intra);
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
///
/// Each rank advances while its next call's partners have reached theirs (and, for a
/// collective, every member arrived); when no rank can, the earliest one advances alone.
pub fn simulate(calls: &[Vec<Call>], comms: &Comms, hw: &Hardware, seed: u64) -> Vec<Vec<Timed>> {
    let partners = Partners::index(calls);
    let mut sim = Sim::new(calls, comms, hw, &partners, seed);
    for (r, list) in calls.iter().enumerate() {
        if !list.is_empty() {
            sim.arrive(r, 0);
        }
    }
    while sim.remaining() {
        if !sim.sweep() {
            sim.advance_earliest();
        }
    }
    sim.out
}

/// Partners: the matching call on every other member (collectives by per-communicator
/// sequence, Send/Recv by the k-th message between the two ranks).
struct Partners {
    /// Per rank, all calls' keys in one flat vector with offsets: one small Vec per call cost
    /// ~400 MB at 64 ranks × 10⁵ calls.
    keys: Vec<(Vec<u32>, Vec<PartnerKey>)>,
    /// Per (sender, receiver), the sender's calls holding each message, in order.
    sends: HashMap<(u32, u32), Vec<usize>>,
    /// Per (sender, receiver), the receiver's calls holding each message, in order.
    recvs: HashMap<(u32, u32), Vec<usize>>,
}

impl Partners {
    fn index(calls: &[Vec<Call>]) -> Partners {
        let mut coll_seq: HashMap<(usize, u32), usize> = HashMap::new();
        let mut sends: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
        let mut recvs: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
        let mut keys: Vec<(Vec<u32>, Vec<PartnerKey>)> = Vec::with_capacity(calls.len());
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
        Partners { keys, sends, recvs }
    }

    /// The point-to-point partners of call `i` of rank `r`: (rank, call index).
    #[inline]
    fn of(&self, r: u32, i: usize) -> Vec<(u32, usize)> {
        let mut out = Vec::new();
        let (starts, flat) = &self.keys[r as usize];
        for &(kind, a, b, seq) in &flat[starts[i] as usize..starts[i + 1] as usize] {
            match kind {
                0 => {
                    // my k-th send r->a matches a's k-th recv from r
                    if let Some(j) = self.recvs.get(&(r, a)).and_then(|v| v.get(seq)) {
                        out.push((a, *j));
                    }
                }
                1 => {
                    if let Some(j) = self.sends.get(&(a, b)).and_then(|v| v.get(seq)) {
                        out.push((a, *j));
                    }
                }
                // Collectives synchronise through `Sim::coll`, not partner lists.
                _ => {}
            }
        }
        out
    }

    /// The collective call `i` of rank `r` is, if it is one: (comm, sequence).
    #[inline]
    fn collective(&self, r: usize, i: usize) -> Option<(u32, usize)> {
        let (starts, flat) = &self.keys[r];
        flat[starts[i] as usize..starts[i + 1] as usize]
            .iter()
            .find(|k| k.0 == 2)
            .map(|k| (k.1, k.3))
    }
}

/// The simulation's state: per rank the next call (`cursor`), when its GPU is free and its
/// random stream; the collectives in flight; the times found so far.
struct Sim<'a> {
    calls: &'a [Vec<Call>],
    comms: &'a Comms,
    hw: &'a Hardware,
    partners: &'a Partners,
    /// Members per communicator.
    sizes: Vec<u32>,
    /// Per communicator: all members on one node.
    intra: Vec<bool>,
    coll: HashMap<(u32, usize), CollState>,
    rngs: Vec<Rng>,
    out: Vec<Vec<Timed>>,
    cursor: Vec<usize>,
    free: Vec<i64>,
}

impl<'a> Sim<'a> {
    fn new(
        calls: &'a [Vec<Call>],
        comms: &'a Comms,
        hw: &'a Hardware,
        partners: &'a Partners,
        seed: u64,
    ) -> Sim<'a> {
        let n = calls.len();
        let sizes: Vec<u32> = comms.list.iter().map(|c| c.size()).collect();
        let intra: Vec<bool> = comms
            .list
            .iter()
            .map(|c| {
                let node = c.global_ranks.first().map_or(0, |g| g / hw.gpus_per_node);
                c.global_ranks.iter().all(|g| g / hw.gpus_per_node == node)
            })
            .collect();
        Sim {
            calls,
            comms,
            hw,
            partners,
            sizes,
            intra,
            coll: HashMap::new(),
            rngs: (0..n)
                .map(|r| Rng::derive(seed, 0x7100 + r as u64))
                .collect(),
            out: calls
                .iter()
                .map(|l| vec![Timed::default(); l.len()])
                .collect(),
            cursor: vec![0usize; n],
            free: vec![0i64; n],
        }
    }

    /// Whether some rank has calls left.
    fn remaining(&self) -> bool {
        (0..self.calls.len()).any(|r| self.cursor[r] < self.calls[r].len())
    }

    /// Call i of rank r is enqueued: its arrival and launch after the compute gap; a
    /// collective counts the member in.
    #[inline]
    fn arrive(&mut self, r: usize, i: usize) {
        let c = &self.calls[r][i];
        let free = self.free[r];
        let jitter = (c.compute_ns as f64 * self.rngs[r].uniform(-0.02, 0.02)) as i64;
        let a = free + c.compute_ns as i64 + jitter + 2_000;
        let launch = self.rngs[r].range(4_000, 25_000) as i64;
        let t = &mut self.out[r][i];
        t.gap_start_ns = free;
        t.arrive_ns = a;
        t.start_ns = a + launch;
        if let Some(key) = self.partners.collective(r, i) {
            let st = self.coll.entry(key).or_default();
            st.arrived += 1;
            st.max_start = st.max_start.max(a + launch);
        }
    }

    /// Resolves call i of rank r: its end from the partners' (p2p) or the collective's latest
    /// start; forgets a collective once every member resolved it.
    #[inline]
    fn finish(&mut self, r: usize, i: usize, ps: &[(u32, usize)]) {
        let key = self.partners.collective(r, i);
        let state = key.and_then(|k| self.coll.get(&k));
        let sync = state.map(|st| st.max_start);
        let end = state.and_then(|st| st.end_ns);
        let ic = self.intra[self.calls[r][i].comm()];
        resolve(
            r,
            i,
            ps,
            sync,
            end,
            self.calls,
            self.comms,
            self.hw,
            ic,
            &mut self.out,
            &mut self.rngs,
            &mut self.free,
        );
        if let Some(k) = key {
            if let Some(st) = self.coll.get_mut(&k) {
                st.end_ns.get_or_insert(self.out[r][i].end_ns);
                st.resolved += 1;
                if st.resolved >= self.sizes[k.0 as usize] {
                    self.coll.remove(&k);
                }
            }
        }
    }

    /// Finishes call i of rank r and lets its next call arrive.
    #[inline]
    fn step(&mut self, r: usize, i: usize, ps: &[(u32, usize)]) {
        self.finish(r, i, ps);
        self.cursor[r] += 1;
        if self.cursor[r] < self.calls[r].len() {
            self.arrive(r, self.cursor[r]);
        }
    }

    /// One pass over the ranks, each advancing while its next call can complete; whether any
    /// did.
    fn sweep(&mut self) -> bool {
        let mut progress = false;
        for r in 0..self.calls.len() {
            while self.cursor[r] < self.calls[r].len() {
                let i = self.cursor[r];
                let ps = self.partners.of(r as u32, i);
                if ps.iter().any(|&(q, j)| self.cursor[q as usize] < j) {
                    break;
                }
                if let Some(k) = self.partners.collective(r, i) {
                    let all = self
                        .coll
                        .get(&k)
                        .is_some_and(|st| st.arrived >= self.sizes[k.0 as usize]);
                    if !all {
                        break;
                    }
                }
                self.step(r, i, &ps);
                progress = true;
            }
        }
        progress
    }

    /// A schedule whose pairs do not line up: advance the earliest rank alone, with the
    /// partners that have reached their call.
    fn advance_earliest(&mut self) {
        let r = (0..self.calls.len())
            .filter(|&r| self.cursor[r] < self.calls[r].len())
            .min_by_key(|&r| self.out[r][self.cursor[r]].arrive_ns)
            .expect("something remains");
        let i = self.cursor[r];
        let ps: Vec<(u32, usize)> = self
            .partners
            .of(r as u32, i)
            .into_iter()
            .filter(|&(q, j)| self.cursor[q as usize] >= j)
            .collect();
        self.step(r, i, &ps);
    }
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
