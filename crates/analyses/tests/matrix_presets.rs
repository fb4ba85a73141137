//! The observed matrix of every small generator preset, with its rings printed in order, in an
//! order of their own and not at all, holds exactly the pairs the layout implies and the bytes
//! the logs say: computed here independently, from the generator's own schedule (every call each
//! rank logs, orphan lines included) and NCCL's formulas, on the rings the logs print.

mod support;

use analyses::patterns::{comm_matrix, Prepared};
use model::OpType;
use std::collections::BTreeMap;
use synth::comms::Comms;
use synth::RingLines;

/// (src, dst, parallelism, op) → bytes.
type Cells = BTreeMap<(u32, u32, String, String), f64>;

/// Whether the logs of `cfg` print an algorithm for a collective of `bytes_total` on a
/// communicator whose members are all on one node (`intra`): 2.20+ tuning lines do, except the
/// symmetric kernels' lines (2.27+, one node, `symmetric`).
fn algorithm_printed(cfg: &synth::RunConfig, intra: bool) -> bool {
    let v: Vec<u32> = cfg
        .nccl_version
        .split('.')
        .map(|p| p.parse().unwrap())
        .collect();
    let minor = v[1];
    minor >= 20 && !(cfg.symmetric && minor >= 27 && intra)
}

/// The matrix the generator's schedule implies for `cfg`.
fn expected(cfg: &synth::RunConfig) -> Cells {
    let layout = &cfg.layout;
    let comms = Comms::build(layout, cfg.seed);
    let gpn = cfg.gpus_per_node.max(1);
    let mut out = Cells::new();
    for r in 0..layout.world() {
        let mut calls = synth::schedule::build(layout, &cfg.model, &comms, r);
        synth::schedule::add_orphans(
            &mut calls,
            comms.world,
            cfg.imperfections.orphan_allreduce_lines,
            cfg.seed,
        );
        for call in &calls {
            for o in call.ops.iter() {
                let c = &comms.list[o.comm];
                let n = c.global_ranks.len();
                if n <= 1 {
                    continue;
                }
                let me = c.member(r);
                let s = (o.count * o.dtype.size_bytes()) as f64;
                let order = synth::ring_order(cfg.ring_lines, c);
                let at = order.iter().position(|&x| x == me).unwrap();
                // The ring successor the logs print (the textbook one when they print none).
                let next = match cfg.ring_lines {
                    RingLines::Omitted => (me + 1) % n,
                    _ => order[(at + 1) % n],
                };
                let intra = c.global_ranks.iter().all(|g| g / gpn == r / gpn);
                let total = match o.op {
                    OpType::AllGather | OpType::ReduceScatter => s * n as f64,
                    _ => s,
                };
                let tree = o.op == OpType::AllReduce
                    && !intra
                    && total > (1u64 << 20) as f64
                    && algorithm_printed(cfg, intra)
                    && cfg.ring_lines != RingLines::Omitted;
                let mut send = |dst: usize, bytes: f64| {
                    let key = (
                        r,
                        c.global_ranks[dst],
                        c.parallelism.to_string(),
                        o.op.name().to_string(),
                    );
                    *out.entry(key).or_default() += bytes;
                };
                let nf = n as f64;
                match o.op {
                    OpType::AllReduce if tree => {
                        // The chain along the ring order: S up to the parent, S down to the child.
                        if at > 0 {
                            send(order[at - 1], s);
                        }
                        if at + 1 < n {
                            send(order[at + 1], s);
                        }
                    }
                    OpType::AllReduce => send(next, 2.0 * (nf - 1.0) / nf * s),
                    OpType::AllGather | OpType::ReduceScatter => send(next, (nf - 1.0) * s),
                    OpType::Broadcast if next != o.root as usize => send(next, s),
                    OpType::Reduce if me != o.root as usize => send(next, s),
                    OpType::Send if o.peer != Some(r) => {
                        send(c.member(o.peer.unwrap()), s);
                    }
                    _ => {}
                }
            }
        }
    }
    out.retain(|_, b| *b >= 0.5);
    out
}

/// The presets whose logs miss lines at random (the expectation is then an upper bound).
fn drop_pct(cfg: &synth::RunConfig) -> f64 {
    cfg.imperfections.drop_log_pct
}

fn check(name: &str, ring_lines: RingLines) {
    let mut cfg = support::preset(name);
    cfg.ring_lines = ring_lines;
    let what = format!("{name} with rings {ring_lines:?}");
    let (_run, session, analysis) = support::analysed(&cfg);
    let m = comm_matrix(&Prepared::of(&session, &analysis));
    let want = expected(&cfg);
    let got: Cells = m
        .entries
        .iter()
        .map(|e| {
            (
                (e.src, e.dst, e.parallelism.clone(), e.op.clone()),
                e.bytes as f64,
            )
        })
        .collect();
    assert_eq!(got.len(), m.entries.len(), "{what}: one entry per key");
    let drop = drop_pct(&cfg);
    if drop == 0.0 {
        let keys = |c: &Cells| c.keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&got), keys(&want), "{what}: the pairs");
        for (k, w) in &want {
            let g = got[k];
            assert!(
                (g - w).abs() <= 1.0 + 1e-12 * w,
                "{what}: {k:?} holds {g} bytes, the logs say {w}"
            );
        }
    } else {
        // Lines dropped at random: never a pair the schedule lacks, never more bytes, and the
        // total short by about the share dropped.
        for (k, g) in &got {
            let w = want
                .get(k)
                .unwrap_or_else(|| panic!("{what}: {k:?} is no pair"));
            assert!(*g <= w + 1.0, "{what}: {k:?} holds {g} > {w}");
        }
        let (g, w): (f64, f64) = (got.values().sum(), want.values().sum());
        assert!(
            g >= w * (1.0 - 3.0 * drop / 100.0) - 1.0,
            "{what}: {g} of {w} bytes"
        );
    }
    // Every entry carries time (the logs' operations ran as kernels) unless kernels were dropped.
    if cfg.imperfections.drop_kernel_pct == 0.0 {
        for e in &m.entries {
            assert!(e.time_ns > 0, "{what}: {e:?} has no time");
        }
    }
    // Said what it assumed.
    let kinds: Vec<&str> = m.notes.iter().map(|n| n.kind.as_str()).collect();
    assert_eq!(
        kinds.contains(&"textbook-ring"),
        ring_lines == RingLines::Omitted,
        "{what}: {kinds:?}"
    );
    let tuned = algorithm_printed(&cfg, false) && !cfg.symmetric;
    assert_eq!(kinds.contains(&"no-algorithm"), !tuned, "{what}: {kinds:?}");
    for c in &m.comms {
        let expected = match (ring_lines, c.rings.as_str()) {
            (_, "none") => true,
            (RingLines::Omitted, r) => r == "textbook ring",
            (_, r) => r == "printed rings",
        };
        assert!(expected, "{what}: {c:?}");
    }
}

#[test]
fn every_small_preset_with_rings_in_order() {
    for name in support::small_presets() {
        check(name, RingLines::Ordered);
    }
}

#[test]
fn every_small_preset_with_rings_of_their_own() {
    let mut reordered = 0;
    for name in support::small_presets() {
        check(name, RingLines::Shuffled);
        let cfg = support::preset(name);
        for c in &Comms::build(&cfg.layout, cfg.seed).list {
            let order = synth::ring_order(RingLines::Shuffled, c);
            reordered += usize::from(order.windows(2).any(|w| w[1] != w[0] + 1));
        }
    }
    // Not a pass by coincidence: most communicators of more than two ranks got rings of their own.
    assert!(reordered >= 10, "{reordered} communicators reordered");
}

#[test]
fn every_small_preset_without_ring_lines() {
    for name in support::small_presets() {
        check(name, RingLines::Omitted);
    }
}

/// The node matrix is the rank matrix summed by host, and the CSV export has one line per
/// entry with the contract's fields.
#[test]
fn node_matrix_and_csv_of_the_demo() {
    let (_run, session, analysis) = support::analysed(&support::preset("demo"));
    let m = comm_matrix(&Prepared::of(&session, &analysis));
    assert_eq!(m.hosts.len(), 2);
    assert_eq!(m.hosts[0].ranks, vec![0, 1, 2, 3]);
    let total: u64 = m.entries.iter().map(|e| e.bytes).sum();
    assert_eq!(m.nodes.iter().map(|e| e.bytes).sum::<u64>(), total);
    // Cross-node traffic is the pipeline's (stages on two nodes) and the communicators spanning
    // both nodes.
    let cross: u64 = m
        .entries
        .iter()
        .filter(|e| e.src / 4 != e.dst / 4)
        .map(|e| e.bytes)
        .sum();
    assert_eq!(
        m.nodes
            .iter()
            .filter(|e| e.src != e.dst)
            .map(|e| e.bytes)
            .sum::<u64>(),
        cross
    );
    assert!(m
        .nodes
        .iter()
        .any(|e| e.src != e.dst && e.parallelism == "PP"));
    let mut csv = Vec::new();
    m.write_csv(&mut csv).unwrap();
    let text = String::from_utf8(csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "src,dst,parallelism,op,bytes,time_ns");
    assert_eq!(lines.len(), m.entries.len() + 1);
    let e = &m.entries[3];
    assert_eq!(
        lines[4],
        format!(
            "{},{},{},{},{},{}",
            e.src, e.dst, e.parallelism, e.op, e.bytes, e.time_ns
        )
    );
    // One rank's row on demand.
    assert!(m.sent_by(5).iter().all(|e| e.src == 5));
    assert_eq!(
        m.sent_by(5).len(),
        m.entries.iter().filter(|e| e.src == 5).count()
    );
}

/// The matrix the inferred layout predicts: every observed transfer of a labelled communicator
/// is between ranks of one group, no rank of a reducing group is silent, and every pipeline and
/// expert pair the layout implies carried traffic.
#[test]
fn the_layout_predicts_where_traffic_flows() {
    for name in support::small_presets() {
        let cfg = support::preset(name);
        if cfg.imperfections.drop_log_pct > 0.0 {
            continue;
        }
        let (run, session, analysis) = support::analysed(&cfg);
        let m = comm_matrix(&Prepared::of(&session, &analysis));
        let p = analyses::patterns::predicted_matrix(&analysis.layout, None, &m);
        let l = &run.truth.layout;
        let sizes = p.sizes.unwrap_or_else(|| panic!("{name}: a layout"));
        assert_eq!(
            (sizes.tp, sizes.pp, sizes.dp, sizes.ep, sizes.cp),
            (l.tp, l.pp, l.dp, l.ep, l.cp),
            "{name}"
        );
        assert!(p.unexpected.is_empty(), "{name}: {:?}", p.unexpected);
        assert!(p.silent.is_empty(), "{name}: {:?}", p.silent);
        assert!(p.missing.is_empty(), "{name}: {:?}", p.missing);
        assert!(!p.entries.is_empty(), "{name}");
    }
}
