//! What the pattern analyses need to know about the run, gathered once: every rank's host, and
//! per logical communicator its members by communicator rank, its parallelism, the link class
//! its traffic crosses and the routes NCCL printed for it (rings per channel, ring neighbours,
//! trees), with the members' global ranks in place of communicator ranks.

use super::links::{self, LinkClass};
use enrich::Parallelism;
use load::Session;
use pipeline::Analysis;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Where NCCL said a communicator's data goes, as communicator ranks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Routes {
    /// `Channel cc/nn : r r r`: each channel's ring order (the first member that printed them).
    pub ring_orders: Vec<Vec<u32>>,
    /// `Ring cc : prev -> me -> next`, by (member, channel): the successor that member printed.
    pub ring_next: FxHashMap<(u32, u32), u32>,
    /// `Trees [c] d/d/d->me->up`, by (member, channel): (parent, children), `-1`s dropped.
    pub trees: FxHashMap<(u32, u32), (Option<u32>, Vec<u32>)>,
    /// Rings each member printed (channels of `Ring` lines, or of ring orders).
    pub rings_of: FxHashMap<u32, u32>,
    /// Tree channels each member printed.
    pub trees_of: FxHashMap<u32, u32>,
    /// Two members printed different orders for one channel (the first was kept).
    pub orders_disagree: bool,
}

impl Routes {
    /// Rings member `me` routes over: the rings it printed, else the orders printed by anyone.
    pub fn rings(&self, me: u32) -> u32 {
        self.rings_of
            .get(&me)
            .copied()
            .unwrap_or(self.ring_orders.len() as u32)
    }

    /// Member `me`'s successor on ring `ring`: its own `Ring` line, else the printed order.
    pub fn next(&self, me: u32, ring: u32) -> Option<u32> {
        if let Some(&n) = self.ring_next.get(&(me, ring)) {
            return Some(n);
        }
        let order = self.ring_orders.get(ring as usize)?;
        let at = order.iter().position(|&r| r == me)?;
        order.get((at + 1) % order.len()).copied()
    }

    /// Whether any ring was printed.
    pub fn has_rings(&self) -> bool {
        !self.ring_orders.is_empty() || !self.ring_next.is_empty()
    }
}

/// One logical communicator, as the pattern analyses see it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommFacts {
    pub id: String,
    pub size: u32,
    pub parallelism: Parallelism,
    /// The global rank of each communicator rank (`None` where no member log named it).
    pub global: Vec<Option<u32>>,
    pub routes: Routes,
    pub class: LinkClass,
    /// Members per host (host index), for the LBNL model's GPUs per NVLink domain.
    pub per_host: FxHashMap<u32, u32>,
    /// Whether the communicator ranks came from init lines (else from global-rank order).
    pub ranks_from_init: bool,
    /// `global` inverted.
    pub comm_rank_of: FxHashMap<u32, u32>,
}

impl CommFacts {
    /// The communicator rank of global rank `g`.
    pub fn comm_rank(&self, g: u32) -> Option<u32> {
        self.comm_rank_of.get(&g).copied()
    }
}

/// The run's ranks, hosts and communicators.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// Host names, sorted (the heat map's node order).
    pub hosts: Vec<String>,
    /// Each global rank's host (index into `hosts`).
    pub host_of: BTreeMap<u32, u32>,
    /// Each host's link class inside it (from its topology dump).
    pub host_class: Vec<Option<LinkClass>>,
    pub comms: Vec<CommFacts>,
    /// Ranks whose process logged at least one operation.
    pub ranks_with_logs: rustc_hash::FxHashSet<u32>,
}

impl RunFacts {
    pub fn of(session: &Session, analysis: &Analysis) -> RunFacts {
        let comms = &analysis.communicators;
        let mut hosts: Vec<String> = comms.ranks.keys().map(|p| p.host.to_string()).collect();
        hosts.sort();
        hosts.dedup();
        let host_index = |h: &str| hosts.binary_search_by(|x| x.as_str().cmp(h)).ok();
        let host_of: BTreeMap<u32, u32> = comms
            .ranks
            .iter()
            .filter_map(|(p, &r)| Some((r, host_index(p.host.as_str())? as u32)))
            .collect();
        let mut host_class: Vec<Option<LinkClass>> = vec![None; hosts.len()];
        for p in &analysis.processes {
            if let Some(h) = host_index(p.process.host.as_str()) {
                if host_class[h].is_none() {
                    host_class[h] = links::host_class(p.topology.as_ref());
                }
            }
        }
        let mut ranks_with_logs = rustc_hash::FxHashSet::default();
        for log in session.logs() {
            for p in log.parsed.ops.processes() {
                if let Some(r) = comms.rank_of(p) {
                    ranks_with_logs.insert(r);
                }
            }
        }
        let routes = routes_of(session, analysis);
        let setups = crate::comm_setups(session, analysis);
        let label: FxHashMap<usize, Parallelism> = analysis
            .layout
            .comms
            .iter()
            .rev()
            .map(|l| (l.comm, l.parallelism))
            .collect();
        let out = comms
            .comms
            .iter()
            .enumerate()
            .zip(routes)
            .map(|((i, c), routes)| {
                let size = c.size.max(c.members.len() as u32);
                let mut global = vec![None; size as usize];
                let mut per_host: FxHashMap<u32, u32> = FxHashMap::default();
                for (p, _, r) in &c.members {
                    let g = comms.rank_of(p);
                    if let Some(slot) = global.get_mut(*r as usize) {
                        *slot = g;
                    }
                    if let Some(h) = g.and_then(|g| host_of.get(&g)) {
                        *per_host.entry(*h).or_default() += 1;
                    }
                }
                let transports: Vec<String> = setups
                    .get(i)
                    .map(|s| s.transports.iter().map(|(t, _)| t.clone()).collect())
                    .unwrap_or_default();
                let one_host = (per_host.len() == 1)
                    .then(|| per_host.keys().next().copied())
                    .flatten();
                let class = links::comm_class(
                    &transports,
                    per_host.len(),
                    one_host.and_then(|h| host_class[h as usize]),
                );
                let comm_rank_of = global
                    .iter()
                    .enumerate()
                    .filter_map(|(i, g)| Some(((*g)?, i as u32)))
                    .collect();
                CommFacts {
                    comm_rank_of,
                    id: c.id.clone(),
                    size,
                    parallelism: label.get(&i).copied().unwrap_or(Parallelism::Unknown),
                    global,
                    routes,
                    class,
                    per_host,
                    ranks_from_init: c.ranks_from_init,
                }
            })
            .collect();
        RunFacts {
            hosts,
            host_of,
            host_class,
            comms: out,
            ranks_with_logs,
        }
    }

    /// The class of a point-to-point transfer between two global ranks: the network between
    /// hosts, the host's own links within one.
    pub fn pair_class(&self, a: u32, b: u32) -> LinkClass {
        match (self.host_of.get(&a), self.host_of.get(&b)) {
            (Some(x), Some(y)) if x == y => {
                self.host_class[*x as usize].unwrap_or(LinkClass::IntraNode)
            }
            (Some(_), Some(_)) => LinkClass::Network,
            // A rank no log named: its host is unknown; say nothing better than "not one node".
            _ => LinkClass::Network,
        }
    }
}

/// Every communicator's printed routes, from its members' channel records (each names the
/// communicator by the printing process's pointer).
fn routes_of(session: &Session, analysis: &Analysis) -> Vec<Routes> {
    let comms = &analysis.communicators;
    let mut out: Vec<Routes> = vec![Routes::default(); comms.comms.len()];
    for log in session.logs() {
        for ch in &log.parsed.channels {
            let Some(c) = ch.comm.and_then(|p| comms.comm_of(&ch.process, p)) else {
                continue;
            };
            let Some(me) = ch.rank.or_else(|| comms.rank_in(c, &ch.process)) else {
                continue;
            };
            let r = &mut out[c];
            for ring in &ch.rings {
                let slot = ring.channel as usize;
                if r.ring_orders.len() <= slot {
                    r.ring_orders.resize(slot + 1, Vec::new());
                }
                if r.ring_orders[slot].is_empty() {
                    r.ring_orders[slot] = ring.order.clone();
                } else if r.ring_orders[slot] != ring.order {
                    r.orders_disagree = true;
                }
            }
            let mut rings = ch.rings.len() as u32;
            for n in &ch.ring_neighbors {
                if let Ok(next) = u32::try_from(n.next) {
                    r.ring_next.insert((me, n.channel), next);
                    rings = rings.max(n.channel + 1);
                }
            }
            if rings > 0 {
                let e = r.rings_of.entry(me).or_default();
                *e = (*e).max(rings);
            }
            for t in &ch.trees {
                let up = u32::try_from(t.up).ok();
                let down: Vec<u32> = t
                    .down
                    .iter()
                    .filter_map(|&d| u32::try_from(d).ok())
                    .collect();
                r.trees.insert((me, t.channel), (up, down));
                let e = r.trees_of.entry(me).or_default();
                *e = (*e).max(t.channel + 1);
            }
        }
    }
    // A channel with no order printed (a gap in the numbering) stays empty: its successor is
    // then unknown and the expansion says what it assumed.
    out
}
