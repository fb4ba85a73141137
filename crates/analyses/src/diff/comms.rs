//! Communicators matched by parallelism and rank set; each matched pair's transfer times
//! compared as a whole (each collective's shortest member kernel, which no waiting lengthens,
//! over its signature's base median on that communicator, so sizes mix);
//! the communicators' set-up compared (channels, transports, nodes, bottleneck link); and the
//! two layouts. When the communicators that slowed share ranks the ones that did not slow
//! exclude, those ranks are named: one rank's link shows that way.

use crate::diff::changes::{Change, ChangeKind};
use crate::diff::profile::{
    ranks_text, CommProfile, CommSamples, RunProfile, SigKey, SignatureProfile,
};
use crate::diff::signatures::{Basis, Presence};
use crate::diff::stats::{self, TestSettings};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One difference in a communicator's set-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupChange {
    /// `channels`, `transports`, `nodes`, `bottleneck`.
    pub what: String,
    pub base: String,
    pub new: String,
}

/// One communicator compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommDiff {
    pub parallelism: String,
    pub global_ranks: Vec<u32>,
    pub presence: Presence,
    pub base_id: Option<String>,
    pub new_id: Option<String>,
    /// Its index in each run's profile ([`RunProfile::comms`]).
    pub base_index: Option<usize>,
    pub new_index: Option<usize>,
    pub base_operations: u64,
    pub new_operations: u64,
    /// Median of its new transfer times over their signature's base median (on this
    /// communicator), over the same for its base transfer times.
    pub time_ratio: Option<f64>,
    pub interval: Option<[f64; 2]>,
    pub p_value: Option<f64>,
    pub significant: bool,
    /// The change of its kernels' time (waiting included) per basis unit over the signatures
    /// both runs have, ns.
    pub impact_ns: f64,
    /// The largest message of the signatures compared on it, bytes.
    pub largest_bytes: u64,
    pub setup: Vec<SetupChange>,
}

impl CommDiff {
    /// `DP [0, 2]`.
    pub fn text(&self) -> String {
        format!("{} {}", self.parallelism, ranks_text(&self.global_ranks))
    }
}

/// Every communicator of either run, matched by parallelism and rank set (several with the same
/// key pair in order; then, among those left, one of the same parallelism and size whose seen
/// members include the other's: one run's files may cover part of its world), each pair
/// compared over the signatures `shared` by both runs.
pub fn compare(
    base: &RunProfile,
    new: &RunProfile,
    shared: &[(&SignatureProfile, &SignatureProfile)],
    basis: &Basis,
    test: &TestSettings,
) -> Vec<CommDiff> {
    type Key<'a> = (&'a str, &'a [u32]);
    let mut keys: BTreeMap<Key, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (i, c) in base.comms.iter().enumerate() {
        keys.entry((&c.parallelism, &c.global_ranks))
            .or_default()
            .0
            .push(i);
    }
    for (i, c) in new.comms.iter().enumerate() {
        keys.entry((&c.parallelism, &c.global_ranks))
            .or_default()
            .1
            .push(i);
    }
    let (fb, fn_) = (fingerprints(base), fingerprints(new));
    let mut pairs: Vec<(Option<usize>, Option<usize>)> = Vec::new();
    for (bs, ns) in keys.into_values() {
        pairs.extend(pair_alike(&bs, &ns, &fb, &fn_));
    }
    let pairs = pair_partial(pairs, base, new);
    let mut out = Vec::new();
    for (b, n) in pairs {
        // The larger rank set of the two (the new run's on a tie) names the pair, and the
        // parallelism either run could tell.
        let (par, ranks) = {
            let (x, y) = (b.map(|i| &base.comms[i]), n.map(|i| &new.comms[i]));
            let named = match (x, y) {
                (Some(x), Some(y)) if x.global_ranks.len() > y.global_ranks.len() => x,
                (_, Some(y)) => y,
                (Some(x), None) => x,
                (None, None) => continue,
            };
            let told = [x, y]
                .into_iter()
                .flatten()
                .map(|c| c.parallelism.as_str())
                .find(|p| *p != "unknown")
                .unwrap_or("unknown");
            (told, named.global_ranks.as_slice())
        };
        let mut d = CommDiff {
            parallelism: par.to_string(),
            global_ranks: ranks.to_vec(),
            presence: match (b, n) {
                (Some(_), Some(_)) => Presence::Both,
                (Some(_), None) => Presence::Base,
                _ => Presence::New,
            },
            base_id: b.map(|i| base.comms[i].id.clone()),
            base_index: b,
            new_index: n,
            new_id: n.map(|i| new.comms[i].id.clone()),
            base_operations: b.map_or(0, |i| base.comms[i].operations),
            new_operations: n.map_or(0, |i| new.comms[i].operations),
            time_ratio: None,
            interval: None,
            p_value: None,
            significant: false,
            impact_ns: 0.0,
            largest_bytes: 0,
            setup: Vec::new(),
        };
        if let (Some(b), Some(n)) = (b, n) {
            let (cb, cn) = (&base.comms[b], &new.comms[n]);
            // Seen through other members (a run's files cover part of it), a communicator's
            // transfer times (each collective's shortest member kernel: the fewer members, the
            // longer) and its set-up as its members saw it (nodes, links, transports) do not
            // compare; its kernels' time and its channels do.
            let same_members = cb.global_ranks == cn.global_ranks;
            time_on(&mut d, b, n, shared, basis, same_members.then_some(test));
            d.setup = setup_changes(cb, cn, same_members);
        }
        out.push(d);
    }
    // In key order, as the exact matches come (a stable sort keeps each key's pairs' order).
    out.sort_by(|x, y| (&x.parallelism, &x.global_ranks).cmp(&(&y.parallelism, &y.global_ranks)));
    out
}

/// Per communicator, the kernels it ran per signature: what tells apart two communicators of
/// one parallelism and rank set (PyTorch makes several groups over the same ranks).
fn fingerprints(p: &RunProfile) -> Vec<BTreeMap<&SigKey, usize>> {
    let mut out = vec![BTreeMap::new(); p.comms.len()];
    for s in &p.signatures {
        for c in &s.samples {
            if let Some(f) = out.get_mut(c.comm) {
                f.insert(&s.key, c.durations_ns.len());
            }
        }
    }
    out
}

/// Pairs each communicator left alone in the base run with the first one left alone in the new
/// run of the same parallelism (or one the run could not tell) and size whose seen members
/// include its own or are included in them (a run whose files cover part of its world sees part
/// of each communicator, and may not tell its parallelism).
fn pair_partial(
    pairs: Vec<(Option<usize>, Option<usize>)>,
    base: &RunProfile,
    new: &RunProfile,
) -> Vec<(Option<usize>, Option<usize>)> {
    let nested = |x: &CommProfile, y: &CommProfile| {
        let (small, large) = if x.global_ranks.len() <= y.global_ranks.len() {
            (x, y)
        } else {
            (y, x)
        };
        let unknown = |c: &CommProfile| c.parallelism == "unknown";
        (x.parallelism == y.parallelism || unknown(x) || unknown(y))
            && x.size == y.size
            && !small.global_ranks.is_empty()
            && small
                .global_ranks
                .iter()
                .all(|r| large.global_ranks.binary_search(r).is_ok())
    };
    let mut lone_new: Vec<usize> = pairs
        .iter()
        .filter_map(|p| match p {
            (None, Some(n)) => Some(*n),
            _ => None,
        })
        .collect();
    let mut out = Vec::with_capacity(pairs.len());
    for (b, n) in pairs {
        match (b, n) {
            (Some(b), None) => {
                let hit = lone_new
                    .iter()
                    .position(|&n| nested(&base.comms[b], &new.comms[n]));
                out.push((Some(b), hit.map(|i| lone_new.remove(i))));
            }
            (None, Some(_)) => {}
            pair => out.push(pair),
        }
    }
    out.extend(lone_new.into_iter().map(|n| (None, Some(n))));
    out
}

/// Pairs the communicators of one key, each base one with the new one that ran the most of the
/// same kernels (the first on a tie: a run without kernel times pairs in order); the rest alone.
fn pair_alike(
    bs: &[usize],
    ns: &[usize],
    fb: &[BTreeMap<&SigKey, usize>],
    fn_: &[BTreeMap<&SigKey, usize>],
) -> Vec<(Option<usize>, Option<usize>)> {
    let mut free: Vec<usize> = ns.to_vec();
    let mut out = Vec::new();
    for &b in bs {
        let overlap = |n: usize| -> usize {
            fb[b]
                .iter()
                .map(|(k, &x)| fn_[n].get(k).map_or(0, |&y| x.min(y)))
                .sum()
        };
        let best = (0..free.len()).max_by_key(|&i| (overlap(free[i]), std::cmp::Reverse(i)));
        out.push((Some(b), best.map(|i| free.remove(i))));
    }
    out.extend(free.into_iter().map(|n| (None, Some(n))));
    out
}

/// The samples of `c` in `of` (a signature's kernel durations or transfer times).
fn on(of: &[CommSamples], c: usize) -> &[f64] {
    of.binary_search_by_key(&c, |x| x.comm)
        .map_or(&[], |i| &of[i].durations_ns)
}

/// Compares the transfer times of base communicator `b` with new communicator `n`, and sums
/// the change of their kernels' time.
fn time_on(
    d: &mut CommDiff,
    b: usize,
    n: usize,
    shared: &[(&SignatureProfile, &SignatureProfile)],
    basis: &Basis,
    test: Option<&TestSettings>,
) {
    let (mut rel_b, mut rel_n) = (Vec::new(), Vec::new());
    let mut impact = 0.0;
    for (sb, sn) in shared {
        impact += kernel_time(on(&sn.samples, n), basis.new_divisor)
            - kernel_time(on(&sb.samples, b), basis.base_divisor);
        let (tb, tn) = (on(&sb.transfer, b), on(&sn.transfer, n));
        if tb.is_empty() || tn.is_empty() {
            continue;
        }
        let Some(m) = stats::median(&mut tb.to_vec()).filter(|&m| m > 0.0) else {
            continue;
        };
        d.largest_bytes = d.largest_bytes.max(sb.key.bytes);
        rel_b.extend(tb.iter().map(|x| x / m));
        rel_n.extend(tn.iter().map(|x| x / m));
    }
    d.impact_ns = impact;
    let Some(test) = test else { return };
    let seed = stats::stable_hash(d.text().as_bytes());
    if let Some(v) = stats::compare(&mut rel_b, &mut rel_n, test, seed) {
        d.time_ratio = Some(v.ratio);
        d.interval = v.interval;
        d.p_value = v.p_value;
        d.significant = v.significant;
    }
}

/// Median × count of `durations` per basis unit (0 for none).
fn kernel_time(durations: &[f64], divisor: f64) -> f64 {
    stats::median(&mut durations.to_vec()).map_or(0.0, |m| m * durations.len() as f64 / divisor)
}

/// The set-up differences of a matched pair: channels always, the rest (transports, nodes,
/// bottleneck link) only when both runs saw the same members.
fn setup_changes(b: &CommProfile, n: &CommProfile, same_members: bool) -> Vec<SetupChange> {
    let mut out = Vec::new();
    let mut differ = |what: &str, x: String, y: String| {
        if x != y {
            out.push(SetupChange {
                what: what.into(),
                base: x,
                new: y,
            });
        }
    };
    let opt = |v: Option<u32>| v.map_or("—".to_string(), |v| v.to_string());
    differ("channels", opt(b.channels), opt(n.channels));
    if !same_members {
        return out;
    }
    let kinds = |c: &CommProfile| {
        let k: BTreeSet<&str> = c.transports.iter().map(|t| t.0.as_str()).collect();
        k.into_iter().collect::<Vec<_>>().join(", ")
    };
    differ("transports", kinds(b), kinds(n));
    let nodes = |c: &CommProfile| match (c.nodes, c.local_ranks) {
        (Some(x), Some(l)) => format!("{x} × {l}"),
        _ => "—".into(),
    };
    differ("nodes", nodes(b), nodes(n));
    let link = |c: &CommProfile| match (&c.bottleneck, c.bottleneck_gbps) {
        (Some(k), Some(g)) => format!("{k} {g} GB/s"),
        _ => "—".into(),
    };
    differ("bottleneck", link(b), link(n));
    out
}

/// Below this, a message's transfer is latency-bound on every link NCCL uses (α·bandwidth: about
/// 20 µs × 25 GB/s on a network, 6 µs × 150 GB/s over NVLink), so a slower link barely shows:
/// a communicator that carries nothing larger is no evidence that its ranks' links are fine.
pub const LATENCY_BOUND_BYTES: u64 = 512 << 10;

/// The ranks every significantly slower (or faster) communicator has and no communicator
/// compared without a change has (one that carries bandwidth-bound messages:
/// [`LATENCY_BOUND_BYTES`]), when that names fewer ranks than the world: one rank's links.
/// Each change comes with the new run's indices of the communicators that moved; its impact is
/// theirs until the caller puts the signatures' it covers ([`crate::diff::compare`]).
pub fn localise(comms: &[CommDiff], world: u32) -> Vec<(Change, Vec<usize>)> {
    let mut out = Vec::new();
    for slower in [true, false] {
        let moved: Vec<&CommDiff> = comms
            .iter()
            .filter(|c| c.significant && c.time_ratio.is_some_and(|r| (r > 1.0) == slower))
            .collect();
        let steady: Vec<&CommDiff> = comms
            .iter()
            .filter(|c| c.presence == Presence::Both && c.time_ratio.is_some() && !c.significant)
            .filter(|c| c.largest_bytes >= LATENCY_BOUND_BYTES)
            .collect();
        let Some(first) = moved.first() else { continue };
        let mut suspects: BTreeSet<u32> = first.global_ranks.iter().copied().collect();
        for c in &moved[1..] {
            let theirs: BTreeSet<u32> = c.global_ranks.iter().copied().collect();
            suspects = suspects.intersection(&theirs).copied().collect();
        }
        for c in &steady {
            for r in &c.global_ranks {
                suspects.remove(r);
            }
        }
        if suspects.is_empty() || suspects.len() as u32 >= world || steady.is_empty() {
            continue;
        }
        let impact: f64 = moved.iter().map(|c| c.impact_ns.abs()).sum();
        let ranks: Vec<u32> = suspects.into_iter().collect();
        let who = if ranks.len() == 1 {
            format!("rank {}", ranks[0])
        } else {
            format!("ranks {}", ranks_text(&ranks))
        };
        let mut c = Change::new(
            ChangeKind::Rank,
            impact,
            format!(
                "{who}: every communicator with {} moves its bytes {} ({} of {} compared), \
                 none without: {} links",
                if ranks.len() == 1 { "it" } else { "them" },
                if slower { "slower" } else { "faster" },
                moved.len(),
                moved.len() + steady.len(),
                if ranks.len() == 1 { "its" } else { "their" },
            ),
        );
        c.communicators = moved.iter().map(|m| m.text()).collect();
        c.ranks = ranks;
        out.push((c, moved.iter().filter_map(|m| m.new_index).collect()));
    }
    out
}

/// Groups per (parallelism, size): how many communicators.
fn groups(p: &RunProfile) -> BTreeMap<(String, u32), usize> {
    let mut g = BTreeMap::new();
    for c in &p.comms {
        // The size NCCL printed, not the members seen: part of a world's files see part of it.
        *g.entry((c.parallelism.clone(), c.size)).or_insert(0) += 1;
    }
    g
}

/// The layout and world size, compared: `world` and `layout` changes (impact: both runs' whole
/// time, so they lead the list).
pub fn shape(base: &RunProfile, new: &RunProfile, basis: &Basis) -> Vec<Change> {
    let whole =
        base.size.comm_time_ns / basis.base_divisor + new.size.comm_time_ns / basis.new_divisor;
    let mut out = Vec::new();
    if base.size.worlds_differ(&new.size) {
        out.push(Change::new(
            ChangeKind::World,
            whole,
            format!(
                "world size {} → {}: counts, bytes and times are compared per {}",
                base.size.world_size, new.size.world_size, basis.per
            ),
        ));
    }
    let layout_text = |p: &RunProfile| {
        p.size.layout.as_ref().map(|l| {
            l.iter()
                .filter(|(_, &v)| v > 1)
                .map(|(k, v)| format!("{}{v}", k.to_uppercase()))
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    let (lb, ln) = (layout_text(base), layout_text(new));
    let (gb, gn) = (groups(base), groups(new));
    let group_text = |g: &BTreeMap<(String, u32), usize>| {
        g.iter()
            .map(|((p, s), n)| format!("{n}×{p}{s}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // A run whose files cover part of its world sees part of its communicators, and one that
    // could not tell any communicator's parallelism has no layout to compare: only two known,
    // different layouts say the layout changed then.
    let blind =
        |p: &RunProfile| p.size.partial() || p.comms.iter().all(|c| c.parallelism == "unknown");
    let layouts_differ = matches!((&lb, &ln), (Some(a), Some(b)) if a != b);
    if layouts_differ || (gb != gn && !blind(base) && !blind(new)) {
        let what = match (&lb, &ln) {
            (Some(a), Some(b)) if a != b => format!(
                "layout {} → {}",
                if a.is_empty() { "1" } else { a },
                if b.is_empty() { "1" } else { b }
            ),
            _ => format!(
                "communicators by parallelism and size {} → {}",
                group_text(&gb),
                group_text(&gn)
            ),
        };
        out.push(Change::new(ChangeKind::Layout, whole, what));
    }
    out
}

/// Set-up changes of matched communicators, grouped by (parallelism, what, base → new), each
/// with the new run's indices of its communicators (and their impact summed, until the caller
/// puts the signatures' it covers).
pub fn setup_changes_ranked(comms: &[CommDiff]) -> Vec<(Change, Vec<usize>)> {
    let mut grouped: BTreeMap<(String, String, String, String), Vec<&CommDiff>> = BTreeMap::new();
    for c in comms {
        for s in &c.setup {
            grouped
                .entry((
                    c.parallelism.clone(),
                    s.what.clone(),
                    s.base.clone(),
                    s.new.clone(),
                ))
                .or_default()
                .push(c);
        }
    }
    grouped
        .into_iter()
        .map(|((par, what, b, n), cs)| {
            let kind = match what.as_str() {
                "channels" => ChangeKind::Channels,
                "transports" => ChangeKind::Transport,
                _ => ChangeKind::Topology,
            };
            let impact = cs.iter().map(|c| c.impact_ns.abs()).sum();
            let mut ch = Change::new(
                kind,
                impact,
                format!(
                    "{par} communicators' {what}: {b} → {n} ({} of them)",
                    cs.len()
                ),
            );
            ch.communicators = cs.iter().map(|c| c.text()).collect();
            (ch, cs.iter().filter_map(|c| c.new_index).collect())
        })
        .collect()
}
