//! The rank-to-rank heat map's cells, worked out without a browser: the axis in node order
//! (every host's ranks together, hosts as the matrix orders them), each cell's observed and
//! predicted bytes under the view's filter, their difference, and the colours (a sequential
//! scale for bytes, a diverging colour-blind-safe one for the difference). The page draws what
//! [`grid`] returns on a canvas (`page::panels::heatmap`); the Aggregate view builds its own
//! [`Grid`] from an aggregate file's matrix.

use super::patterns_state::{Cells, PatternsState};
use analyses::patterns::matrix::HostRanks;
use analyses::patterns::predicted::PredictedEntry;
use analyses::patterns::CommMatrix;
use std::collections::BTreeMap;

/// One cell that holds something: observed bytes, or a predicted pair.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GridCell {
    /// Positions on the axes (node order).
    pub row: u32,
    pub col: u32,
    /// The source and destination: global ranks, or host indices at node granularity.
    pub src: u32,
    pub dst: u32,
    pub observed: u64,
    /// The theory's bytes for the pair (0 when the layout implies the pair without bytes).
    pub predicted: u64,
    /// The layout implies the pair.
    pub implied: bool,
    /// The observed parts ("TP AllReduce 12 MB"), for the hover.
    pub parts: Vec<String>,
}

impl GridCell {
    /// Observed minus predicted bytes.
    pub fn difference(&self) -> i128 {
        self.observed as i128 - self.predicted as i128
    }
}

/// A node's block along the axes: (first position, positions, host).
pub type NodeBlock = (usize, usize, String);

/// The heat map's content.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grid {
    /// Cells per side.
    pub n: usize,
    /// What each position is: a rank (`rank 12`) or a host's name.
    pub labels: Vec<String>,
    /// The source (rank or host index) at each position.
    pub ids: Vec<u32>,
    /// Node blocks along the axis.
    pub blocks: Vec<NodeBlock>,
    /// Sorted by (row, col).
    pub cells: Vec<GridCell>,
    /// `rank` or `node`.
    pub unit: &'static str,
    /// Whether any predicted pair carries the theory's bytes (else there is no difference).
    pub predicted_bytes: bool,
}

impl Grid {
    /// The cell at (row, col), if it holds anything.
    pub fn at(&self, row: u32, col: u32) -> Option<&GridCell> {
        self.cells
            .binary_search_by(|c| (c.row, c.col).cmp(&(row, col)))
            .ok()
            .map(|i| &self.cells[i])
    }

    /// The position of source (rank or host index) `id`.
    pub fn position(&self, id: u32) -> Option<u32> {
        self.ids.iter().position(|&x| x == id).map(|p| p as u32)
    }
}

/// The parallelisms and operations the matrix holds, for the view's filters.
pub fn filter_choices(m: &CommMatrix, predicted: &[PredictedEntry]) -> (Vec<String>, Vec<String>) {
    let mut pars: Vec<String> = m.entries.iter().map(|e| e.parallelism.clone()).collect();
    pars.extend(m.nodes.iter().map(|e| e.parallelism.clone()));
    pars.extend(predicted.iter().map(|e| e.parallelism.clone()));
    let mut ops: Vec<String> = m.entries.iter().map(|e| e.op.clone()).collect();
    ops.extend(m.nodes.iter().map(|e| e.op.clone()));
    ops.extend(predicted.iter().filter_map(|e| e.op.clone()));
    for v in [&mut pars, &mut ops] {
        v.sort();
        v.dedup();
    }
    (pars, ops)
}

/// Ranks past which the automatic choice is a cell per node (each rank's cell would be under a
/// pixel; the user may still ask for ranks).
pub const AUTO_RANKS: usize = 256;

/// Whether the page draws nodes for `state` (automatic: nodes when the rank entries were left
/// out, there are none, or more than [`AUTO_RANKS`] ranks).
pub fn by_node(m: &CommMatrix, state: &PatternsState) -> bool {
    let ranks: usize = m.hosts.iter().map(|h| h.ranks.len()).sum();
    match state.cells {
        Cells::Nodes => true,
        Cells::Ranks => m.entries.is_empty() && !m.nodes.is_empty(),
        Cells::Auto => m.entries.is_empty() || (ranks > AUTO_RANKS && !m.nodes.is_empty()),
    }
}

/// The ranks in node order: each host's ranks in turn, then any rank no host claims.
fn rank_order(hosts: &[HostRanks], seen: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut order: Vec<u32> = hosts.iter().flat_map(|h| h.ranks.iter().copied()).collect();
    let known: std::collections::BTreeSet<u32> = order.iter().copied().collect();
    let mut rest: Vec<u32> = seen.filter(|r| !known.contains(r)).collect();
    rest.sort_unstable();
    rest.dedup();
    order.extend(rest);
    order
}

/// The heat map of `m` (observed) beside `predicted` (the layout's pairs, with the theory's
/// bytes when a model was given), under `state`'s filter and granularity.
pub fn grid(m: &CommMatrix, predicted: &[PredictedEntry], state: &PatternsState) -> Grid {
    let keep = |par: &str, op: Option<&str>| {
        state.parallelism.as_deref().is_none_or(|p| p == par)
            && state.op.as_deref().is_none_or(|o| op == Some(o))
    };
    let node = by_node(m, state);
    let host_of: BTreeMap<u32, u32> = m
        .hosts
        .iter()
        .enumerate()
        .flat_map(|(h, hr)| hr.ranks.iter().map(move |&r| (r, h as u32)))
        .collect();
    let (ids, labels, blocks): (Vec<u32>, Vec<String>, Vec<NodeBlock>) = if node {
        let ids: Vec<u32> = (0..m.hosts.len() as u32).collect();
        let labels = m.hosts.iter().map(|h| h.host.clone()).collect();
        (ids, labels, Vec::new())
    } else {
        let seen = m
            .entries
            .iter()
            .flat_map(|e| [e.src, e.dst])
            .chain(predicted.iter().flat_map(|e| [e.src, e.dst]));
        let ids = rank_order(&m.hosts, seen);
        let labels = ids.iter().map(|r| format!("rank {r}")).collect();
        let mut blocks = Vec::new();
        let mut at = 0;
        for h in &m.hosts {
            blocks.push((at, h.ranks.len(), h.host.clone()));
            at += h.ranks.len();
        }
        (ids, labels, blocks)
    };
    let pos: BTreeMap<u32, u32> = ids
        .iter()
        .enumerate()
        .map(|(i, &id)| (id, i as u32))
        .collect();
    let mut cells: BTreeMap<(u32, u32), GridCell> = BTreeMap::new();
    let observed: Vec<(u32, u32, &str, &str, u64)> = if node {
        m.nodes
            .iter()
            .map(|e| (e.src, e.dst, e.parallelism.as_str(), e.op.as_str(), e.bytes))
            .collect()
    } else {
        m.entries
            .iter()
            .map(|e| (e.src, e.dst, e.parallelism.as_str(), e.op.as_str(), e.bytes))
            .collect()
    };
    for (src, dst, par, op, bytes) in observed {
        if keep(par, Some(op)) {
            if let Some(c) = cell_at(&mut cells, &pos, src, dst) {
                c.observed += bytes;
                c.parts.push(format!(
                    "{par} {op} {}",
                    crate::protocol::format::human_bytes(bytes)
                ));
            }
        }
    }
    let mut predicted_bytes = false;
    for e in predicted {
        // Without the theory's bytes an entry names no operation: an operation filter keeps
        // it (the pair is still implied).
        let op_ok = e.op.is_none() || keep(&e.parallelism, e.op.as_deref());
        if !op_ok
            || state
                .parallelism
                .as_deref()
                .is_some_and(|p| p != e.parallelism)
        {
            continue;
        }
        let (src, dst) = if node {
            match (host_of.get(&e.src), host_of.get(&e.dst)) {
                (Some(&a), Some(&b)) => (a, b),
                _ => continue,
            }
        } else {
            (e.src, e.dst)
        };
        if let Some(c) = cell_at(&mut cells, &pos, src, dst) {
            c.implied = true;
            c.predicted += e.bytes.unwrap_or(0);
            predicted_bytes |= e.bytes.is_some();
        }
    }
    Grid {
        n: ids.len(),
        labels,
        ids,
        blocks,
        cells: cells.into_values().collect(),
        unit: if node { "node" } else { "rank" },
        predicted_bytes,
    }
}

/// The cell of (src, dst) at their positions, made empty if new; `None` when either has none.
fn cell_at<'a>(
    cells: &'a mut BTreeMap<(u32, u32), GridCell>,
    pos: &BTreeMap<u32, u32>,
    src: u32,
    dst: u32,
) -> Option<&'a mut GridCell> {
    let (row, col) = (*pos.get(&src)?, *pos.get(&dst)?);
    Some(cells.entry((row, col)).or_insert_with(|| GridCell {
        row,
        col,
        src,
        dst,
        ..GridCell::default()
    }))
}

/// A level in 0..=1 for `v` on a log scale up to `max` (the ring's neighbours and a stray byte
/// both stay visible).
pub fn log_level(v: f64, max: f64) -> f64 {
    if v <= 0.0 || max <= 0.0 {
        return 0.0;
    }
    (v.ln_1p() / max.ln_1p()).clamp(0.0, 1.0)
}

/// The sequential scale's colour for level `t` (0..=1): light to dark blue (ColorBrewer Blues,
/// readable in every common colour-vision deficiency).
pub fn sequential_rgb(t: f64) -> [u8; 3] {
    mix(
        [222, 235, 247],
        [8, 48, 107],
        0.15 + 0.85 * t.clamp(0.0, 1.0),
    )
}

/// The diverging scale's colour for `t` in -1..=1: purple for less than predicted, orange for
/// more, near white for equal (ColorBrewer PuOr, safe for red-green colour blindness).
pub fn diverging_rgb(t: f64) -> [u8; 3] {
    const MID: [u8; 3] = [247, 247, 247];
    const MORE: [u8; 3] = [179, 88, 6];
    const LESS: [u8; 3] = [84, 39, 136];
    let t = t.clamp(-1.0, 1.0);
    if t >= 0.0 {
        mix(MID, MORE, t)
    } else {
        mix(MID, LESS, -t)
    }
}

/// The level of difference `d` on a symmetric log scale up to `max` (its largest magnitude).
pub fn diverging_level(d: i128, max: u128) -> f64 {
    let l = log_level(d.unsigned_abs() as f64, max as f64);
    if d < 0 {
        -l
    } else {
        l
    }
}

fn mix(a: [u8; 3], b: [u8; 3], t: f64) -> [u8; 3] {
    let c = |i: usize| (a[i] as f64 + (b[i] as f64 - a[i] as f64) * t).round() as u8;
    [c(0), c(1), c(2)]
}

/// `#rrggbb`.
pub fn css(rgb: [u8; 3]) -> String {
    format!("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2])
}

/// Signed bytes, readably (`+12.0 MB`, `−3.1 kB`, `0 B`).
pub fn signed_bytes(d: i128) -> String {
    let b = crate::protocol::format::human_bytes(d.unsigned_abs().min(u64::MAX as u128) as u64);
    match d.signum() {
        1 => format!("+{b}"),
        -1 => format!("−{b}"),
        _ => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_logic::patterns_state::Mode;
    use analyses::patterns::matrix::{MatrixEntry, NodeEntry};

    fn entry(src: u32, dst: u32, par: &str, op: &str, bytes: u64) -> MatrixEntry {
        MatrixEntry {
            src,
            dst,
            parallelism: par.into(),
            op: op.into(),
            bytes,
            time_ns: 0,
        }
    }

    fn predicted(
        src: u32,
        dst: u32,
        par: &str,
        op: Option<&str>,
        b: Option<u64>,
    ) -> PredictedEntry {
        PredictedEntry {
            src,
            dst,
            parallelism: par.into(),
            op: op.map(str::to_string),
            bytes: b,
        }
    }

    /// Two hosts whose names sort against their ranks: host `a` holds ranks 2 and 3.
    fn matrix() -> CommMatrix {
        CommMatrix {
            hosts: vec![
                HostRanks {
                    host: "a".into(),
                    ranks: vec![2, 3],
                },
                HostRanks {
                    host: "b".into(),
                    ranks: vec![0, 1],
                },
            ],
            entries: vec![
                entry(0, 1, "TP", "AllReduce", 100),
                entry(0, 1, "DP", "AllReduce", 10),
                entry(2, 0, "PP", "Send", 7),
                entry(3, 2, "TP", "AllReduce", 50),
            ],
            nodes: vec![
                NodeEntry {
                    src: 1,
                    dst: 1,
                    parallelism: "TP".into(),
                    op: "AllReduce".into(),
                    bytes: 100,
                    time_ns: 0,
                },
                NodeEntry {
                    src: 0,
                    dst: 1,
                    parallelism: "PP".into(),
                    op: "Send".into(),
                    bytes: 7,
                    time_ns: 0,
                },
            ],
            ..CommMatrix::default()
        }
    }

    #[test]
    fn ranks_are_ordered_by_node_and_cells_hold_both_sides() {
        let pred = vec![
            predicted(0, 1, "TP", Some("AllReduce"), Some(90)),
            predicted(1, 0, "TP", Some("AllReduce"), Some(90)),
            predicted(2, 0, "PP", Some("Send"), Some(7)),
        ];
        let g = grid(&matrix(), &pred, &PatternsState::default());
        assert_eq!(g.ids, vec![2, 3, 0, 1]);
        assert_eq!(g.blocks, vec![(0, 2, "a".into()), (2, 2, "b".into())]);
        assert!(g.predicted_bytes);
        let c = g.at(2, 3).unwrap();
        assert_eq!((c.src, c.dst, c.observed, c.predicted), (0, 1, 110, 90));
        assert_eq!(c.difference(), 20);
        // Implied and silent: less than predicted.
        assert_eq!(g.at(3, 2).unwrap().difference(), -90);
        // Observed and not implied.
        let c = g.at(1, 0).unwrap();
        assert!(!c.implied);
        assert_eq!(c.difference(), 50);
        assert_eq!(g.at(0, 2).unwrap().difference(), 0);
        assert_eq!(g.position(0), Some(2));
    }

    #[test]
    fn filters_and_nodes() {
        let pred = vec![
            predicted(0, 1, "TP", Some("AllReduce"), Some(90)),
            predicted(2, 0, "PP", None, None),
        ];
        let tp = PatternsState {
            parallelism: Some("TP".into()),
            mode: Mode::Difference,
            ..PatternsState::default()
        };
        let g = grid(&matrix(), &pred, &tp);
        assert_eq!(g.at(2, 3).unwrap().difference(), 10);
        assert!(g.at(0, 2).is_none());
        // Nodes: the predicted rank pairs summed per host pair.
        let nodes = PatternsState {
            cells: Cells::Nodes,
            ..PatternsState::default()
        };
        let g = grid(&matrix(), &pred, &nodes);
        assert_eq!((g.unit, g.n), ("node", 2));
        let c = g.at(1, 1).unwrap();
        assert_eq!((c.observed, c.predicted), (100, 90));
        assert!(g.at(0, 1).unwrap().implied);
        let (pars, ops) = filter_choices(&matrix(), &pred);
        assert_eq!(pars, ["DP", "PP", "TP"]);
        assert_eq!(ops, ["AllReduce", "Send"]);
    }

    #[test]
    fn colours_diverge_and_stay_in_range() {
        assert_eq!(diverging_rgb(0.0), [247, 247, 247]);
        assert_eq!(diverging_rgb(1.0), [179, 88, 6]);
        assert_eq!(diverging_rgb(-1.0), [84, 39, 136]);
        assert!(diverging_level(-5, 100) < 0.0 && diverging_level(5, 100) > 0.0);
        assert_eq!(diverging_level(0, 0), 0.0);
        assert_eq!(log_level(100.0, 100.0), 1.0);
        assert_eq!(css([8, 48, 107]), "#08306b");
        assert_eq!(signed_bytes(0), "0 B");
        assert!(signed_bytes(-2048).starts_with('−'));
    }
}
