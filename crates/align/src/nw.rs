//! A generic global (Needleman-Wunsch) aligner of two sequences `a` and `b`.
//!
//! It knows nothing about NCCL: the caller supplies a [`Score`] (substitution score of `a_i`
//! against `b_j`, one gap model per side, a bonus for consecutive diagonal steps and cheap
//! symbol keys for anchoring). Scores are integers (the NCCL scorings use hundredths of a point)
//! so that the reference and the fast aligner can be compared exactly.
//!
//! # Recurrences
//!
//! Cells are `(i, j)` = "the first `i` symbols of `a` and the first `j` of `b` are consumed".
//! Each cell holds one score per *state*, i.e. per kind of the last step (Gotoh's idea, extended
//! to run-length gap costs):
//!
//! * `M`   — the last step paired `a_{i-1}` with `b_{j-1}` (also the start state at `(0, 0)`);
//! * `X_r` — the last `r` steps left `a` symbols unpaired (vertical moves), `r = 1..=cap+1`,
//!   where `r = cap+1` stands for "more than `cap`";
//! * `Y_r` — the same for `b` (horizontal moves).
//!
//! With `s(i,j)` the substitution score, `β(i,j)` the run bonus for pairing `(i,j)` right after
//! `(i-1,j-1)` and `g(k)` the cost of the `k`-th gap of a run ([`GapModel::cost`]):
//!
//! ```text
//! M(i,j)       = s(i-1,j-1) + max( M(i-1,j-1) + β(i-1,j-1), X_*(i-1,j-1), Y_*(i-1,j-1) )
//! X_1(i,j)     = g_a(1)     + max( M(i-1,j), Y_*(i-1,j) )            (+ X_1 itself if cap = 0)
//! X_r(i,j)     = g_a(r)     + X_{r-1}(i-1,j)                          for 2 ≤ r ≤ cap
//! X_cap+1(i,j) = g_a(cap+1) + max( X_cap(i-1,j), X_cap+1(i-1,j) )
//! Y_*          : the same with (i, j-1) and g_b
//! ```
//!
//! Switching from an `a`-gap to a `b`-gap starts a new run: the two sources lose operations
//! independently, so a kernel missing next to a log line missing is two short runs, not one long.
//! The answer is the best state at `(n, m)`. Ties prefer the diagonal, then `a`-gaps.
//!
//! A fusion move (`fuse_max > 1`) lets `a_i` absorb several consecutive `b` symbols at once:
//! `M(i,j)` may also come from any state of `(i-1, j-len)` plus `fuse(i-1, j-1, len)`.
//!
//! [`align_full`] fills the whole `(n+1)×(m+1)` matrix (the reference). [`align_fast`] fills
//! only a band: around an anchor path when anchors are dense (caller hints such as timestamp
//! matches, or k-mers of symbol keys unique in both sequences), else an adaptive band that
//! follows the best cell of the previous row (placed once more, ranking cells by what the rest
//! of the path must still pay too, where that loses the path: [`Lookahead`]). It keeps two rows of scores and one packed word
//! per cell for the traceback, and doubles the band while the optimal path comes near its edge
//! (optionally also until doubling stops improving the score). A band as wide as the matrix
//! is the full DP, so the loop always ends with a valid alignment. This is a heuristic, not a
//! proof of optimality: it agrees with the reference on the property test and on realistic
//! inputs, where the true path stays near the anchors.

use rustc_hash::FxHashMap as HashMap;

/// A score no alignment can reach: "this state is impossible".
pub const NEG: i64 = i64::MIN / 4;

/// Cost of gap runs on one side: the `k`-th consecutive gap costs
/// `open + step · (min(k, cap+1) − 1)`.
///
/// `cap = 0` is a linear gap, `cap = 1` affine (open, then `open + step` per extension), larger
/// caps make the cost per gap grow with the run (the thesis' "adaptive" penalty) up to a ceiling,
/// which keeps the number of DP states finite.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GapModel {
    pub open: i64,
    pub step: i64,
    pub cap: u32,
}

impl GapModel {
    /// Cost (a negative score) of the `k`-th (1-based) gap of a run.
    pub fn cost(&self, k: u32) -> i64 {
        let k = k.clamp(1, self.cap + 1);
        self.open + self.step * i64::from(k - 1)
    }

    fn states(&self) -> usize {
        self.cap as usize + 1
    }
}

/// What the aligner needs to know about two sequences `a` (length `n`) and `b` (length `m`).
pub trait Score {
    /// Score of pairing `a_i` with `b_j` (0-based). Return [`NEG`] to forbid the pair.
    fn sub(&self, i: usize, j: usize) -> i64;
    /// Bonus for pairing `(i, j)` right after pairing `(i-1, j-1)`; `i, j ≥ 1`.
    fn run_bonus(&self, _i: usize, _j: usize) -> i64 {
        0
    }
    /// Gaps leaving `a` symbols unpaired.
    fn gap_a(&self) -> GapModel;
    /// Gaps leaving `b` symbols unpaired.
    fn gap_b(&self) -> GapModel;
    /// A cheap key per symbol: equal keys are plausible pairs. Used only to find anchors.
    fn key_a(&self, _i: usize) -> u64 {
        0
    }
    fn key_b(&self, _j: usize) -> u64 {
        0
    }
    /// Fusion: how many consecutive `b` symbols ending at `b_j` may `a_i` absorb at once
    /// (1 = plain pairs only; at most 16). NCCL runs a group of Send/Recv calls as one kernel.
    fn fuse_max(&self, _i: usize, _j: usize) -> usize {
        1
    }
    /// Score of pairing `a_i` with `b_{j+1-len} ..= b_j` (`len ≥ 2`).
    fn fuse(&self, _i: usize, _j: usize, _len: usize) -> i64 {
        NEG
    }
    /// Whether `b_j` may be absorbed with `b_{j-1}` by one `a` symbol (`j ≥ 1`; the two are
    /// one call): the adaptive band's look-ahead counts such a run once ([`Lookahead`]). Only
    /// steers the band; `false` (the default) where [`Score::fuse_max`] never exceeds 1.
    fn fuses_with_previous(&self, _j: usize) -> bool {
        false
    }
    /// Pairs `(i, j)` the caller believes lie on the optimal path (e.g. from timestamps).
    /// When given they replace the k-mer anchors. Only steer the band: a wrong hint costs time.
    fn anchor_hints(&self) -> Option<Vec<(usize, usize)>> {
        None
    }
}

/// One column of an alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `a_i` paired with `b_j`.
    Pair(usize, usize),
    /// `a_i` paired with `b_first ..= b_last` (a fusion move).
    Fused(usize, usize, usize),
    /// `a_i` unpaired.
    GapA(usize),
    /// `b_j` unpaired.
    GapB(usize),
}

/// An optimal alignment and its score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alignment {
    pub score: i64,
    pub steps: Vec<Step>,
}

impl Alignment {
    /// The paired indices `(i, j)`, in order (a fusion gives one pair per absorbed `b`).
    pub fn pairs(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for s in &self.steps {
            match *s {
                Step::Pair(i, j) => out.push((i, j)),
                Step::Fused(i, j0, j1) => out.extend((j0..=j1).map(|j| (i, j))),
                _ => {}
            }
        }
        out
    }

    /// The longest run of consecutive gap steps on the same side.
    pub fn longest_gap_run(&self) -> usize {
        let (mut best, mut run, mut side) = (0, 0, 0u8);
        for s in &self.steps {
            let this = match s {
                Step::Pair(..) | Step::Fused(..) => 0,
                Step::GapA(_) => 1,
                Step::GapB(_) => 2,
            };
            run = if this != 0 && this == side {
                run + 1
            } else {
                usize::from(this != 0)
            };
            side = this;
            best = best.max(run);
        }
        best
    }
}

/// Re-scores a path step by step, independently of the DP (for tests and for callers that
/// edit alignments).
pub fn path_score<S: Score + ?Sized>(sc: &S, steps: &[Step]) -> i64 {
    let (ga, gb) = (sc.gap_a(), sc.gap_b());
    let mut total = 0i64;
    let mut prev: Option<Step> = None;
    let mut run = 0u32;
    for &s in steps {
        match s {
            Step::Pair(i, j) => {
                total += sc.sub(i, j);
                if let Some(Step::Pair(pi, pj) | Step::Fused(pi, _, pj)) = prev {
                    if pi + 1 == i && pj + 1 == j {
                        total += sc.run_bonus(i, j);
                    }
                }
                run = 0;
            }
            Step::Fused(i, j0, j1) => {
                total += sc.fuse(i, j1, j1 - j0 + 1);
                run = 0;
            }
            Step::GapA(_) => {
                run = if matches!(prev, Some(Step::GapA(_))) {
                    run + 1
                } else {
                    1
                };
                total += ga.cost(run);
            }
            Step::GapB(_) => {
                run = if matches!(prev, Some(Step::GapB(_))) {
                    run + 1
                } else {
                    1
                };
                total += gb.cost(run);
            }
        }
        prev = Some(s);
    }
    total
}

/// State layout: 0 = M, then `ka` X states, then `kb` Y states.
#[derive(Clone, Copy)]
struct Shape {
    ga: GapModel,
    gb: GapModel,
    ka: usize,
    kb: usize,
}

impl Shape {
    fn new<S: Score + ?Sized>(sc: &S) -> Shape {
        let (ga, gb) = (sc.gap_a(), sc.gap_b());
        let sh = Shape {
            ga,
            gb,
            ka: ga.states(),
            kb: gb.states(),
        };
        assert!(
            sh.n_states() <= 16,
            "gap caps too large: back-pointers hold 16 states"
        );
        sh
    }
    fn n_states(&self) -> usize {
        1 + self.ka + self.kb
    }
    fn x(&self, r: usize) -> usize {
        1 + r
    }
    fn y(&self, r: usize) -> usize {
        1 + self.ka + r
    }
}

#[inline]
fn clamp_neg(v: i64) -> i64 {
    if v < NEG / 2 {
        NEG
    } else {
        v
    }
}

/// Fills all states of cell `(i, j)` (not `(0,0)`) from its neighbours (`None` = outside the
/// band), writing the scores to `out` and each state's predecessor state to `bp`.
#[allow(clippy::too_many_arguments)]
#[inline]
fn cell<S: Score + ?Sized>(
    sh: &Shape,
    sc: &S,
    i: usize,
    j: usize,
    diag: Option<&[i64]>,
    up: Option<&[i64]>,
    left: Option<&[i64]>,
    out: &mut [i64],
    bp: &mut [u8],
) {
    out.fill(NEG);
    bp.fill(0);
    // M: pair a_{i-1} with b_{j-1}.
    if let Some(d) = diag {
        let s = sc.sub(i - 1, j - 1);
        if s > NEG / 2 {
            let bonus = if i >= 2 && j >= 2 && d[0] > NEG / 2 {
                sc.run_bonus(i - 1, j - 1)
            } else {
                0
            };
            let (mut best, mut arg) = (d[0] + bonus, 0u8);
            for (t, &v) in d.iter().enumerate().skip(1) {
                if v > best {
                    best = v;
                    arg = t as u8;
                }
            }
            if best > NEG / 2 {
                out[0] = clamp_neg(best + s);
                bp[0] = arg;
            }
        }
    }
    // X: leave a_{i-1} unpaired (vertical move from (i-1, j)).
    if let Some(u) = up {
        gap_states(u, sh.ga, sh.ka, 1, 1 + sh.ka, sh.kb, out, bp);
    }
    // Y: leave b_{j-1} unpaired (horizontal move from (i, j-1)).
    if let Some(l) = left {
        gap_states(l, sh.gb, sh.kb, 1 + sh.ka, 1, sh.ka, out, bp);
    }
}

/// The gap-run part of the recurrence for one side. `own` is the first index of this side's
/// states, `other` the first of the other side's (a switch of side opens a new run).
#[allow(clippy::too_many_arguments)]
#[inline]
fn gap_states(
    p: &[i64],
    g: GapModel,
    k: usize,
    own: usize,
    other: usize,
    k_other: usize,
    out: &mut [i64],
    bp: &mut [u8],
) {
    // Run of length 1: from M, from any state of the other side, and (linear gaps) from itself.
    let (mut best, mut arg) = (p[0], 0usize);
    for (t, &v) in p.iter().enumerate().skip(other).take(k_other) {
        if v > best {
            best = v;
            arg = t;
        }
    }
    if k == 1 && p[own] > best {
        best = p[own];
        arg = own;
    }
    if best > NEG / 2 {
        out[own] = clamp_neg(best + g.cost(1));
        bp[own] = arg as u8;
    }
    // Runs of length r+1 for r = 1..k-1: extend the run of length r (the last state also
    // extends itself).
    for r in 1..k {
        let (mut best, mut arg) = (p[own + r - 1], own + r - 1);
        if r == k - 1 && p[own + r] > best {
            best = p[own + r];
            arg = own + r;
        }
        if best > NEG / 2 {
            out[own + r] = clamp_neg(best + g.cost(r as u32 + 1));
            bp[own + r] = arg as u8;
        }
    }
}

/// How the rows of the band are chosen.
#[derive(Clone, Copy)]
enum Plan<'a> {
    /// Row `i` covers `lo[i]..=hi[i]` (the full matrix, or a band around an anchor path).
    Fixed(&'a [usize], &'a [usize]),
    /// Row `i` covers `w` columns either side of the best cell of row `i-1` (plus one for the
    /// diagonal): the band follows the path when no anchors say where it is. "Best" counts
    /// what the rest of the alignment must still pay from the cell ([`Lookahead`]).
    Adaptive(usize, Option<&'a Lookahead>),
}

/// What the rest of an alignment must at least pay from cell `(i, j)`, from counts alone: a
/// second way to centre the adaptive band, ranking each row's cells by score less this.
///
/// Why: a cell's score is that of the best path to it (a prefix), and a prefix gains by putting
/// off what the whole alignment must pay. On a stream where a kernel absorbs two lines now and
/// then (a grouped Send and Recv run as one SendRecv kernel: 16 lines for 11 kernels on the
/// pipeline stream of a TP8 PP4 run), a plain pair scores more than a fusion (a fusion earns its
/// last line's score plus 0.5, a plain pair its own plus the run bonus of 1), so the best cell
/// of each row walks at slope 1 while the optimal path runs at 1.45. The distance grows with
/// the row, and the margin rule doubled the band until it held both (32 → 256 at 1 320
/// kernels): cells and time quadratic in the stream's length, and on random streams of this
/// kind the path found was not always the best one either.
///
/// The rest of a path from `(i, j)` has `n - i` `a` symbols for the `calls` among `b_j..`, a
/// call being a run of `b` symbols that one `a` symbol may absorb whole
/// ([`Score::fuses_with_previous`]). Each `a` symbol takes at most one call, so at least
/// `calls - (n - i)` calls stay unpaired (each costs at least the cheapest gap of `b`), and at
/// least `(n - i) - (m - j)` `a` symbols, one `b` symbol at least going to each paired one
/// (each costs at least the cheapest gap of `a`). A prefix that put off those gaps no longer
/// ranks above the path that paid them. With no fusions, `calls` is `m - j` and the two terms
/// are the gaps any path from `(i, j)` to `(n, m)` must take.
///
/// It is a lower bound of what the rest costs, not an estimate: it pulls the band towards the
/// line where the counts balance. Where the path wanders from that line for other reasons
/// (random drops on both sides: more `a` symbols left than `b` symbols for thousands of rows)
/// the pull misplaces the band instead. So [`align_fast_with`] only tries it on a band whose
/// plain placement lost the path, and keeps whichever of the two scores better; the margin rule
/// still checks (and widens) the band kept, as before.
pub(crate) struct Lookahead {
    /// Per column `j` in `0..=m`: the calls among `b_j ..= b_{m-1}`.
    calls_from: Vec<u32>,
    n: usize,
    m: usize,
    /// The cheapest gap of each side, as a positive cost.
    gap_a: i64,
    gap_b: i64,
}

impl Lookahead {
    pub(crate) fn new<S: Score + ?Sized>(sc: &S, n: usize, m: usize) -> Lookahead {
        let mut calls_from = vec![0u32; m + 1];
        for j in (0..m).rev() {
            let starts = j == 0 || !sc.fuses_with_previous(j);
            calls_from[j] = calls_from[j + 1] + u32::from(starts);
        }
        // The cheapest gap of a run (its least negative cost): a lower bound of each gap's cost.
        let cheapest = |g: GapModel| (1..=g.cap + 1).map(|k| g.cost(k)).max().unwrap_or(0).min(0);
        Lookahead {
            calls_from,
            n,
            m,
            gap_a: -cheapest(sc.gap_a()),
            gap_b: -cheapest(sc.gap_b()),
        }
    }

    /// The least the path from `(i, j)` to `(n, m)` must pay for gaps the counts force.
    #[inline(always)]
    pub(crate) fn penalty(&self, i: usize, j: usize) -> i64 {
        let a_left = (self.n - i) as i64;
        let calls = i64::from(self.calls_from[j]);
        let b_left = (self.m - j) as i64;
        self.gap_b * (calls - a_left).max(0) + self.gap_a * (a_left - b_left).max(0)
    }
}

/// Packs a cell's per-state back-pointers into 18 bits: only M, the first and the last gap
/// state of each side have a choice (the middle gap states can only extend the shorter run).
/// Bits 0–7: M's predecessor state and fusion length − 1; 8–11: X₁'s predecessor; 12: the last
/// X state extends itself; 13–16 and 17: the same for Y.
#[inline]
fn pack(sh: &Shape, tb: &[u8]) -> u32 {
    let last_self =
        |first: usize, k: usize| u32::from(k >= 2 && tb[first + k - 1] as usize == first + k - 1);
    u32::from(tb[0])
        | u32::from(tb[sh.x(0)] & 15) << 8
        | last_self(sh.x(0), sh.ka) << 12
        | u32::from(tb[sh.y(0)] & 15) << 13
        | last_self(sh.y(0), sh.kb) << 17
}

/// The back-pointer of `state` from a packed word (M keeps its fusion length in bits 4–7).
#[inline]
fn unpack(sh: &Shape, word: u32, state: usize) -> u8 {
    if state == 0 {
        return (word & 0xff) as u8;
    }
    let (first, k, shift) = if state < sh.y(0) {
        (sh.x(0), sh.ka, 8)
    } else {
        (sh.y(0), sh.kb, 13)
    };
    let r = state - first;
    let v = if r == 0 {
        ((word >> shift) & 15) as usize
    } else if r + 1 < k {
        state - 1
    } else if (word >> (shift + 4)) & 1 == 1 {
        state
    } else {
        state - 1
    };
    v as u8
}

/// The columns `l..=h` of row `i` under `plan`; `lo`, `hi` hold the rows before it and
/// `best_col` is the best cell of row `i-1` (adaptive plan).
#[inline]
fn row_bounds(
    plan: Plan<'_>,
    i: usize,
    n: usize,
    m: usize,
    lo: &[usize],
    hi: &[usize],
    best_col: usize,
) -> (usize, usize) {
    match plan {
        Plan::Fixed(fl, fh) => (fl[i], fh[i]),
        Plan::Adaptive(w, _) => {
            if i == 0 {
                (0, if n == 0 { m } else { w.min(m) })
            } else {
                let l = best_col.saturating_sub(w).max(lo[i - 1]).min(hi[i - 1]);
                let h = if i == n {
                    m
                } else {
                    (best_col + 1 + w).min(m).max(l)
                };
                (l, h)
            }
        }
    }
}

/// An upper bound of the cells the plan fills (to reserve the back-pointers once: this is the
/// only allocation that grows with the band).
fn band_cells(plan: Plan<'_>, n: usize, m: usize) -> usize {
    match plan {
        Plan::Fixed(fl, fh) => fl.iter().zip(fh).map(|(l, h)| h - l + 1).sum(),
        Plan::Adaptive(w, _) => (n + 1) * (2 * w + 2) + m + 1,
    }
}

/// Follows the packed back-pointers from `state` at `(n, m)` back to `(0, 0)`.
fn traceback(
    sh: &Shape,
    bp: &[u32],
    row_start: &[usize],
    lo: &[usize],
    n: usize,
    m: usize,
    mut state: usize,
) -> Vec<Step> {
    let (mut i, mut j) = (n, m);
    let mut steps = Vec::with_capacity(n + m);
    while i > 0 || j > 0 {
        let b = unpack(sh, bp[row_start[i] + j - lo[i]], state);
        let pred = (b & 15) as usize;
        if state == 0 {
            let len = (b >> 4) as usize + 1;
            steps.push(if len == 1 {
                Step::Pair(i - 1, j - 1)
            } else {
                Step::Fused(i - 1, j - len, j - 1)
            });
            i -= 1;
            j -= len;
        } else if state < 1 + sh.ka {
            steps.push(Step::GapA(i - 1));
            i -= 1;
        } else {
            steps.push(Step::GapB(j - 1));
            j -= 1;
        }
        state = pred;
    }
    steps.reverse();
    steps
}

/// Runs the DP over rows `0..=n` and traces back; returns the alignment and the row bounds used.
/// Memory: one 32-bit word per cell plus two rows of scores.
///
/// The gap-state counts of the models in use (caps 0–2 on either side) get a specialised
/// recurrence ([`run_band_k`]); others take the general one. Both give the same alignment.
fn run_band<S: Score + ?Sized>(
    sc: &S,
    n: usize,
    m: usize,
    plan: Plan<'_>,
) -> (Alignment, Vec<usize>, Vec<usize>) {
    let sh = Shape::new(sc);
    match (sh.ka, sh.kb) {
        (1, 1) => run_band_k::<S, 1, 1>(sc, &sh, n, m, plan),
        (1, 2) => run_band_k::<S, 1, 2>(sc, &sh, n, m, plan),
        (1, 3) => run_band_k::<S, 1, 3>(sc, &sh, n, m, plan),
        (2, 1) => run_band_k::<S, 2, 1>(sc, &sh, n, m, plan),
        (2, 2) => run_band_k::<S, 2, 2>(sc, &sh, n, m, plan),
        (2, 3) => run_band_k::<S, 2, 3>(sc, &sh, n, m, plan),
        (3, 1) => run_band_k::<S, 3, 1>(sc, &sh, n, m, plan),
        (3, 2) => run_band_k::<S, 3, 2>(sc, &sh, n, m, plan),
        (3, 3) => run_band_k::<S, 3, 3>(sc, &sh, n, m, plan),
        _ => run_band_any(sc, n, m, plan),
    }
}

/// One cell's scores: `M`, then the `KA` a-gap (`X`) and `KB` b-gap (`Y`) run states.
#[derive(Clone, Copy)]
struct Cell<const KA: usize, const KB: usize> {
    m: i64,
    x: [i64; KA],
    y: [i64; KB],
}

impl<const KA: usize, const KB: usize> Cell<KA, KB> {
    /// Unreachable (also stands for the cells outside the band).
    const NONE: Self = Cell {
        m: NEG,
        x: [NEG; KA],
        y: [NEG; KB],
    };

    /// The best of `first` (standing for `M`), the `X` and the `Y` states, with its state index;
    /// the lowest index wins ties.
    #[inline(always)]
    fn best_from(&self, first: i64) -> (i64, usize) {
        let (mut v, mut s) = (first, 0);
        for (t, &x) in self.x.iter().enumerate() {
            if x > v {
                v = x;
                s = 1 + t;
            }
        }
        for (t, &y) in self.y.iter().enumerate() {
            if y > v {
                v = y;
                s = 1 + KA + t;
            }
        }
        (v, s)
    }
}

/// One side's gap states after a gap move from the cell whose `M` is `m`, whose states of this
/// side are `own` and of the other side `other` (state indices from `own_first` and
/// `other_first`); `cost[r]` is the cost of the `(r+1)`-th gap. Returns the states, the first
/// state's predecessor and whether the last state extended itself (see [`pack`]).
///
/// Unreachable inputs are only kept from drifting below [`NEG`] (`max`) instead of being reset
/// to it: they stay far below every reachable score, so every reachable state gets the same
/// score and predecessor as in the general recurrence.
#[inline(always)]
fn gap_run<const K: usize, const KO: usize>(
    m: i64,
    own: &[i64; K],
    other: &[i64; KO],
    cost: &[i64; K],
    own_first: usize,
    other_first: usize,
) -> ([i64; K], u32, u32) {
    let (mut best, mut arg) = (m, 0usize);
    for (t, &v) in other.iter().enumerate() {
        if v > best {
            best = v;
            arg = other_first + t;
        }
    }
    if K == 1 && own[0] > best {
        best = own[0];
        arg = own_first;
    }
    let mut out = [NEG; K];
    out[0] = (best + cost[0]).max(NEG);
    let mut last_self = 0;
    for r in 1..K {
        let mut b = own[r - 1];
        if r == K - 1 && own[r] > b {
            b = own[r];
            last_self = 1;
        }
        out[r] = (b + cost[r]).max(NEG);
    }
    (out, arg as u32, last_self)
}

/// Where a row of the band lies: row `i`, columns `l..`, the previous row's columns `pl..=ph`,
/// and the column on the straight diagonal (ties of the best cell go towards it).
struct RowBand {
    i: usize,
    l: usize,
    pl: usize,
    ph: usize,
    expect: usize,
}

/// What the adaptive plan ranks cell `(i, j)` by besides its score: the [`Lookahead`]
/// penalty, if one is given.
#[inline(always)]
fn penalty(look: Option<&Lookahead>, i: usize, j: usize) -> i64 {
    look.map_or(0, |l| l.penalty(i, j))
}

/// Fills `row` with the pair score, run bonus and fusion limit of each column `l..=h` of row
/// `i`; returns whether any fusion limit is above 1.
///
/// This and [`fill_row`] are called once per row and, in wasm, kept out of line: V8 first runs
/// wasm in baseline code and swaps in optimised code only at a function's next call, so a loop
/// inlined into one long [`run_band_k`] call ran unoptimised for the whole first alignment of
/// each worker (up to 7× slower).
#[cfg_attr(target_arch = "wasm32", inline(never))]
fn score_row<S: Score + ?Sized>(
    sc: &S,
    i: usize,
    l: usize,
    h: usize,
    row: &mut Vec<(i64, i64, usize)>,
) -> bool {
    row.clear();
    row.resize(h + 1 - l, (NEG, 0, 1));
    let mut fuses = false;
    for (c, r) in row.iter_mut().enumerate() {
        let j = l + c;
        if j >= 1 {
            r.0 = sc.sub(i - 1, j - 1);
        }
        if j >= 2 {
            if i >= 2 {
                r.1 = sc.run_bonus(i - 1, j - 1);
            }
            r.2 = sc.fuse_max(i - 1, j - 1).min(16);
            fuses |= r.2 > 1;
        }
    }
    fuses
}

/// Fills the cells of row `rb.i` (`out`, one per column from `rb.l`) and their packed
/// back-pointers from the previous row `prev` (columns `pl-1..` at index `col + 1 - pl`, padded
/// with unreachable cells) and the row's `(pair score, run bonus, fusion limit)` per column.
/// Returns the row's best cell (score less look-ahead penalty, column) when `ADAPTIVE` (`look`
/// given). `FUSE`: some column of the row has a fusion limit above 1.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
#[cfg_attr(target_arch = "wasm32", inline(never))]
fn fill_row<
    S: Score + ?Sized,
    const KA: usize,
    const KB: usize,
    const FUSE: bool,
    const ADAPTIVE: bool,
>(
    sc: &S,
    rb: &RowBand,
    prev: &[Cell<KA, KB>],
    out: &mut [Cell<KA, KB>],
    words: &mut [u32],
    row: &[(i64, i64, usize)],
    ca: &[i64; KA],
    cb: &[i64; KB],
    look: Option<&Lookahead>,
) -> (i64, usize) {
    let (i, l, pl, ph, expect) = (rb.i, rb.l, rb.pl, rb.ph, rb.expect);
    let pack = |marg: u32, xa: u32, xl: u32, ya: u32, yl: u32| {
        marg | (xa & 15) << 8 | xl << 12 | (ya & 15) << 13 | yl << 17
    };
    let mut best = (NEG, usize::MAX);
    let mut left = Cell::<KA, KB>::NONE;
    // Columns l-1 ..= h of the previous row: the window at column j is (diag, up).
    let window = &prev[l - pl..l - pl + out.len() + 1];
    let cells = window.windows(2).zip(out).zip(words).zip(row);
    for (c, (((w, out), word), &(s, bonus, fmax))) in cells.enumerate() {
        let j = l + c;
        let (d, u) = (&w[0], &w[1]);
        // M: pair a_{i-1} with b_{j-1} (column 0 has score NEG: no pair).
        let (mut mv, mut marg) = (NEG, 0u32);
        if s > NEG / 2 {
            let bonus = if d.m > NEG / 2 { bonus } else { 0 };
            let (b, a) = d.best_from(d.m + bonus);
            mv = (b + s).max(NEG);
            marg = a as u32;
        }
        // Fusion: a_{i-1} absorbs the last `len` b symbols, from (i-1, j-len).
        if FUSE && fmax > 1 {
            for len in 2..=fmax.min(j) {
                let jj = j - len;
                if jj < pl {
                    break;
                }
                if jj > ph {
                    continue;
                }
                let f = sc.fuse(i - 1, j - 1, len);
                if f <= NEG / 2 {
                    continue;
                }
                let p = &prev[jj + 1 - pl];
                let (bst, arg) = p.best_from(p.m);
                if bst > NEG / 2 && bst + f > mv {
                    mv = bst + f;
                    marg = (arg | ((len - 1) << 4)) as u32;
                }
            }
        }
        // X: leave a_{i-1} unpaired (from (i-1, j)); Y: leave b_{j-1} unpaired (from (i, j-1)).
        let (x, xa, xl) = gap_run::<KA, KB>(u.m, &u.x, &u.y, ca, 1, 1 + KA);
        let (y, ya, yl) = gap_run::<KB, KA>(left.m, &left.y, &left.x, cb, 1 + KA, 1);
        let cell = Cell { m: mv, x, y };
        *word = pack(marg, xa, xl, ya, yl);
        *out = cell;
        if ADAPTIVE {
            let v = cell.best_from(cell.m).0 - penalty(look, i, j);
            if v > best.0 || (v == best.0 && j.abs_diff(expect) < best.1.abs_diff(expect)) {
                best = (v, j);
            }
        }
        left = cell;
    }
    best
}

/// [`run_band`] with the state counts as constants: cells are small arrays kept in flat rows
/// reused from row to row, each row padded with unreachable cells (one before, and after it up
/// to the next row's end) so that the inner loop has no band-edge tests, and the packed
/// back-pointer word is built directly.
fn run_band_k<S: Score + ?Sized, const KA: usize, const KB: usize>(
    sc: &S,
    sh: &Shape,
    n: usize,
    m: usize,
    plan: Plan<'_>,
) -> (Alignment, Vec<usize>, Vec<usize>) {
    let ca: [i64; KA] = std::array::from_fn(|r| sh.ga.cost(r as u32 + 1));
    let cb: [i64; KB] = std::array::from_fn(|r| sh.gb.cost(r as u32 + 1));
    let (adaptive, look) = match plan {
        Plan::Adaptive(_, look) => (true, look),
        Plan::Fixed(..) => (false, None),
    };
    let pack = |marg: u32, xa: u32, xl: u32, ya: u32, yl: u32| {
        marg | (xa & 15) << 8 | xl << 12 | (ya & 15) << 13 | yl << 17
    };
    let mut lo: Vec<usize> = Vec::with_capacity(n + 1);
    let mut hi: Vec<usize> = Vec::with_capacity(n + 1);
    let mut row_start = Vec::with_capacity(n + 2);
    let mut bp: Vec<u32> = Vec::with_capacity(band_cells(plan, n, m));
    // Row buffers: the row of columns l..=h lives at indices 1..=h-l+1, index 0 is column
    // l-1 (outside the band).
    let mut prev: Vec<Cell<KA, KB>> = Vec::new();
    let mut cur: Vec<Cell<KA, KB>> = Vec::new();
    let mut row: Vec<(i64, i64, usize)> = Vec::new();
    // Row 0: only b-gaps.
    let (l0, h0) = row_bounds(plan, 0, n, m, &lo, &hi, 0);
    debug_assert_eq!(l0, 0, "row 0 starts at the start cell");
    lo.push(0);
    hi.push(h0);
    row_start.push(0);
    let mut start = Cell::NONE;
    start.m = 0;
    cur.push(Cell::NONE);
    cur.push(start);
    bp.push(0);
    let expect = 0usize;
    let mut best = (-penalty(look, 0, 0), 0usize);
    let mut left = start;
    for j in 1..=h0 {
        let (y, ya, yl) = gap_run::<KB, KA>(left.m, &left.y, &left.x, &cb, 1 + KA, 1);
        let c = Cell {
            m: NEG,
            x: [NEG; KA],
            y,
        };
        bp.push(pack(0, 0, 0, ya, yl));
        cur.push(c);
        if adaptive {
            let v = c.best_from(c.m).0 - penalty(look, 0, j);
            if v > best.0 || (v == best.0 && j.abs_diff(expect) < best.1.abs_diff(expect)) {
                best = (v, j);
            }
        }
        left = c;
    }
    let mut best_col = best.1;
    std::mem::swap(&mut prev, &mut cur);
    for i in 1..=n {
        let (l, h) = row_bounds(plan, i, n, m, &lo, &hi, best_col);
        let (pl, ph) = (lo[i - 1], hi[i - 1]);
        lo.push(l);
        hi.push(h);
        row_start.push(bp.len());
        // `prev` holds columns pl-1 ..= ph at index col + 1 - pl; pad it with unreachable
        // cells to column h (past ph the buffers hold stale cells of older rows).
        if prev.len() < h + 2 - pl {
            prev.resize(h + 2 - pl, Cell::NONE);
        }
        if h > ph {
            prev[ph + 2 - pl..h + 2 - pl].fill(Cell::NONE);
        }
        if cur.len() < h + 2 - l {
            cur.resize(h + 2 - l, Cell::NONE);
        }
        cur[0] = Cell::NONE;
        let b0 = bp.len();
        bp.resize(b0 + h + 1 - l, 0);
        let expect = (i * m).checked_div(n).unwrap_or(0);
        // This row's pair scores, run bonuses and fusion limits first, in a loop of their own
        // (the DP loop is long enough without them).
        let fuses = score_row(sc, i, l, h, &mut row);
        let rb = RowBand {
            i,
            l,
            pl,
            ph,
            expect,
        };
        let (out, words) = (&mut cur[1..h + 2 - l], &mut bp[b0..]);
        // A loop without the fusion code where no fusion is possible (most rows), and without
        // the best-cell search for fixed bands.
        let best = match (fuses, adaptive) {
            (false, false) => fill_row::<S, KA, KB, false, false>(
                sc, &rb, &prev, out, words, &row, &ca, &cb, look,
            ),
            (false, true) => {
                fill_row::<S, KA, KB, false, true>(sc, &rb, &prev, out, words, &row, &ca, &cb, look)
            }
            (true, false) => {
                fill_row::<S, KA, KB, true, false>(sc, &rb, &prev, out, words, &row, &ca, &cb, look)
            }
            (true, true) => {
                fill_row::<S, KA, KB, true, true>(sc, &rb, &prev, out, words, &row, &ca, &cb, look)
            }
        };
        best_col = if best.1 == usize::MAX { l } else { best.1 };
        std::mem::swap(&mut prev, &mut cur);
    }
    // Best final state (prefer M, then X, then Y: the lowest index wins ties).
    let last = &prev[m + 1 - lo[n]];
    let (score, state) = last.best_from(last.m);
    let steps = traceback(sh, &bp, &row_start, &lo, n, m, state);
    (Alignment { score, steps }, lo, hi)
}

/// [`run_band`] for any gap-state counts: the general recurrence, state by state.
fn run_band_any<S: Score + ?Sized>(
    sc: &S,
    n: usize,
    m: usize,
    plan: Plan<'_>,
) -> (Alignment, Vec<usize>, Vec<usize>) {
    let sh = Shape::new(sc);
    let ns = sh.n_states();
    let mut lo: Vec<usize> = Vec::with_capacity(n + 1);
    let mut hi: Vec<usize> = Vec::with_capacity(n + 1);
    let mut row_start = Vec::with_capacity(n + 2);
    // One packed back-pointer word per cell (see `pack`), reserved up front: this is the
    // only allocation that grows with the band.
    let cells = band_cells(plan, n, m);
    let mut bp: Vec<u32> = Vec::with_capacity(cells);
    let mut tb = vec![0u8; ns];
    let mut prev: Vec<i64> = Vec::new();
    let mut cur: Vec<i64> = Vec::new();
    let mut tmp = vec![NEG; ns];
    let mut best_col = 0usize;
    let look = match plan {
        Plan::Adaptive(_, look) => look,
        Plan::Fixed(..) => None,
    };
    for i in 0..=n {
        let (l, h) = row_bounds(plan, i, n, m, &lo, &hi, best_col);
        lo.push(l);
        hi.push(h);
        let width = h - l + 1;
        row_start.push(bp.len());
        cur.clear();
        cur.resize(width * ns, NEG);
        // Best cell of this row, ties towards the straight diagonal, for the adaptive plan.
        let expect = (i * m).checked_div(n).unwrap_or(0);
        let mut best = (NEG, usize::MAX);
        for j in l..=h {
            let c = j - l;
            let b = &mut tb[..];
            if i == 0 && j == 0 {
                cur[0] = 0;
                bp.push(0);
                best = (-penalty(look, 0, 0), 0);
                continue;
            }
            let in_prev = |jj: usize| i > 0 && jj >= lo[i - 1] && jj <= hi[i - 1];
            let diag = if j > 0 && in_prev(j - 1) {
                let o = (j - 1 - lo[i - 1]) * ns;
                Some(&prev[o..o + ns])
            } else {
                None
            };
            let up = if in_prev(j) {
                let o = (j - lo[i - 1]) * ns;
                Some(&prev[o..o + ns])
            } else {
                None
            };
            let (done, rest) = cur.split_at_mut(c * ns);
            let left = if j > l {
                Some(&done[(c - 1) * ns..c * ns])
            } else {
                None
            };
            cell(&sh, sc, i, j, diag, up, left, &mut tmp, b);
            // Fusion: M(i,j) may also come from (i-1, j-len), pairing a_{i-1} with the last
            // `len` b symbols. The pair's back-pointer keeps `len - 1` in its high nibble.
            if i > 0 && j > 1 {
                let fmax = sc.fuse_max(i - 1, j - 1).min(16);
                for len in 2..=fmax.min(j) {
                    let jj = j - len;
                    if jj < lo[i - 1] {
                        break;
                    }
                    if jj > hi[i - 1] {
                        continue;
                    }
                    let f = sc.fuse(i - 1, j - 1, len);
                    if f <= NEG / 2 {
                        continue;
                    }
                    let d = &prev[(jj - lo[i - 1]) * ns..][..ns];
                    let (mut bst, mut arg) = (d[0], 0usize);
                    for (t, &v) in d.iter().enumerate().skip(1) {
                        if v > bst {
                            bst = v;
                            arg = t;
                        }
                    }
                    if bst > NEG / 2 && bst + f > tmp[0] {
                        tmp[0] = bst + f;
                        b[0] = (arg | ((len - 1) << 4)) as u8;
                    }
                }
            }
            rest[..ns].copy_from_slice(&tmp);
            bp.push(pack(&sh, &tb));
            let v = tmp.iter().copied().max().unwrap_or(NEG) - penalty(look, i, j);
            if v > best.0 || (v == best.0 && j.abs_diff(expect) < best.1.abs_diff(expect)) {
                best = (v, j);
            }
        }
        best_col = if best.1 == usize::MAX { l } else { best.1 };
        std::mem::swap(&mut prev, &mut cur);
    }
    // Best final state (prefer M, then X, then Y: the lowest index wins ties).
    let last = &prev[(m - lo[n]) * ns..(m - lo[n] + 1) * ns];
    let (mut state, mut score) = (0usize, last[0]);
    for (t, &v) in last.iter().enumerate() {
        if v > score {
            score = v;
            state = t;
        }
    }
    let steps = traceback(&sh, &bp, &row_start, &lo, n, m, state);
    (Alignment { score, steps }, lo, hi)
}

/// The reference: full `(n+1)×(m+1)` matrix, quadratic time and memory.
pub fn align_full<S: Score + ?Sized>(sc: &S, n: usize, m: usize) -> Alignment {
    let lo = vec![0; n + 1];
    let hi = vec![m; n + 1];
    run_band(sc, n, m, Plan::Fixed(&lo, &hi)).0
}

/// Options of [`align_fast`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastOptions {
    /// Initial half-width of the band around the anchor path.
    pub band: usize,
    /// Length of the key k-mers used as anchors.
    pub kmer: usize,
    /// The path must stay this many columns (and a quarter of the band) inside the band,
    /// else the band doubles.
    pub margin: usize,
    /// Also require that doubling the band no longer improves the score (about 3× the work;
    /// guards against a better route entirely outside a misplaced band).
    pub verify: bool,
}

impl Default for FastOptions {
    fn default() -> Self {
        FastOptions {
            band: 32,
            kmer: 12,
            margin: 4,
            verify: false,
        }
    }
}

/// Banded alignment around an anchor path: memory `O((n+m)·band)`, time `O((n+m)·band)` for
/// realistic inputs. Gives the same score as [`align_full`] whenever the optimal path lies in
/// the final band (checked by the margin rule; the band grows to the full matrix if needed).
pub fn align_fast<S: Score + ?Sized>(sc: &S, n: usize, m: usize) -> Alignment {
    align_fast_with(sc, n, m, FastOptions::default())
}

/// [`align_fast`] with explicit options.
pub fn align_fast_with<S: Score + ?Sized>(
    sc: &S,
    n: usize,
    m: usize,
    opt: FastOptions,
) -> Alignment {
    let anchors = chain(match sc.anchor_hints() {
        Some(h) => h.into_iter().filter(|&(i, j)| i < n && j < m).collect(),
        None => kmer_anchors(sc, n, m, opt.kmer.max(adaptive_k(sc, n, m))),
    });
    let centre = centre_line(&anchors, n, m);
    // Built the first time an adaptive band loses its path.
    let mut look: Option<Lookahead> = None;
    // Widen until the path keeps clear of the band's edges *and* doubling the band no longer
    // improves the score (a cheap guard against a better route outside a wrongly placed band).
    let mut w = opt.band.max(2);
    let mut prev: Option<Alignment> = None;
    loop {
        let full = w >= n.max(m);
        if full {
            return align_full(sc, n, m);
        }
        let adaptive = !dense(&anchors, n, m, w);
        let (mut al, mut lo, mut hi) = if adaptive {
            run_band(sc, n, m, Plan::Adaptive(w, None))
        } else {
            let (lo, hi) = band_rows(&centre, n, m, w);
            run_band(sc, n, m, Plan::Fixed(&lo, &hi))
        };
        // The path must keep a quarter of the band (at least `margin`) clear on both sides.
        let margin = opt.margin.max(w / 4).min(w / 2);
        let mut touched = near_edge(&al, &lo, &hi, m, margin);
        if !opt.verify {
            // An adaptive band whose path came near its edge is placed once more at the same
            // width, each row centred on the best cell by its score less what the rest of the
            // alignment must still pay from it ([`Lookahead`]), and the better-scoring of the two
            // goes on (returned if its path keeps clear, else widened below). The plain band
            // runs first at every width: where it holds its path nothing changes, and the
            // look-ahead, which can also mislead (see there), never replaces a better band.
            if adaptive && !touched.is_empty() {
                let look = look.get_or_insert_with(|| Lookahead::new(sc, n, m));
                let (a2, l2, h2) = run_band(sc, n, m, Plan::Adaptive(w, Some(look)));
                if a2.score >= al.score {
                    touched = near_edge(&a2, &l2, &h2, m, margin);
                    (al, lo, hi) = (a2, l2, h2);
                }
            }
            // Widen only around the rows where the path touched the edge (a few rounds), so
            // one local excursion does not double the whole band.
            let base: usize = lo.iter().zip(&hi).map(|(l, h)| h - l + 1).sum();
            for _ in 0..6 {
                if touched.is_empty() {
                    return al;
                }
                let mut wider = vec![false; n + 1];
                for &r in &touched {
                    for x in wider
                        .iter_mut()
                        .take((r + 2 * w + 1).min(n + 1))
                        .skip(r.saturating_sub(2 * w))
                    {
                        *x = true;
                    }
                }
                for i in 0..=n {
                    if wider[i] {
                        lo[i] = lo[i].saturating_sub(w);
                        hi[i] = (hi[i] + w).min(m);
                    }
                }
                connect(&mut lo, &mut hi, n, m);
                if lo.iter().zip(&hi).map(|(l, h)| h - l + 1).sum::<usize>() > 3 * base {
                    break;
                }
                let (a2, l2, h2) = run_band(sc, n, m, Plan::Fixed(&lo, &hi));
                (al, lo, hi) = (a2, l2, h2);
                touched = near_edge(&al, &lo, &hi, m, margin);
            }
            if touched.is_empty() {
                return al;
            }
            w *= 2;
            continue;
        }
        let clear = touched.is_empty();
        if clear {
            if let Some(p) = prev.take() {
                if p.score == al.score {
                    return p;
                }
            }
            prev = Some(al);
        } else {
            prev = None;
        }
        w *= 2;
    }
}

/// Anchors steer a fixed band only when they are close enough together for the straight
/// lines between them to stay inside it; otherwise the adaptive band follows the path.
fn dense(anchors: &[(usize, usize)], n: usize, m: usize, w: usize) -> bool {
    if anchors.is_empty() {
        return false;
    }
    let mut last = (0usize, 0usize);
    for &(i, j) in anchors.iter().chain(std::iter::once(&(n, m))) {
        if (i - last.0).max(j - last.1) > 4 * w {
            return false;
        }
        last = (i, j);
    }
    true
}

/// The k-mer length below which a k-mer is likely unique by chance: with `d` distinct keys,
/// `d^k` must dwarf the `n·m` possible coincidences.
fn adaptive_k<S: Score + ?Sized>(sc: &S, n: usize, m: usize) -> usize {
    let mut seen: Vec<u64> = (0..n.min(4096)).map(|i| sc.key_a(i)).collect();
    seen.sort_unstable();
    seen.dedup();
    let d = (seen.len().max(2)) as f64;
    let coincidences = ((n.max(1) * m.max(1)) as f64) * 16.0;
    (coincidences.ln() / d.ln()).ceil() as usize + 1
}

/// Unique (in both sequences) k-mers of keys; the anchor is the k-mer's middle pair.
fn kmer_anchors<S: Score + ?Sized>(sc: &S, n: usize, m: usize, k: usize) -> Vec<(usize, usize)> {
    if n < k || m < k {
        return Vec::new();
    }
    const P: u64 = 0x100_0000_01b3;
    let pk = (0..k - 1).fold(1u64, |acc, _| acc.wrapping_mul(P));
    let hashes = |len: usize, key: &dyn Fn(usize) -> u64| -> Vec<u64> {
        let mut out = Vec::with_capacity(len + 1 - k);
        let mut h = 0u64;
        for t in 0..len {
            // Rolling polynomial hash; the constant keeps key 0 from vanishing.
            if t >= k {
                h = h.wrapping_sub(key(t - k).wrapping_add(0x9e37_79b9).wrapping_mul(pk));
            }
            h = h
                .wrapping_mul(P)
                .wrapping_add(key(t).wrapping_add(0x9e37_79b9));
            if t + 1 >= k {
                out.push(h);
            }
        }
        out
    };
    let ha = hashes(n, &|i| sc.key_a(i));
    let hb = hashes(m, &|j| sc.key_b(j));
    // k-mer hash → (occurrences, first position)
    let mut ma: HashMap<u64, (u32, usize)> =
        HashMap::with_capacity_and_hasher(ha.len(), Default::default());
    for (p, &h) in ha.iter().enumerate() {
        let e = ma.entry(h).or_insert((0, p));
        e.0 += 1;
    }
    let mut mb: HashMap<u64, (u32, usize)> =
        HashMap::with_capacity_and_hasher(hb.len(), Default::default());
    for (p, &h) in hb.iter().enumerate() {
        let e = mb.entry(h).or_insert((0, p));
        e.0 += 1;
    }
    let mut out: Vec<(usize, usize)> = ha
        .iter()
        .filter_map(|h| {
            let (ca, pa) = ma[h];
            let &(cb, pb) = mb.get(h)?;
            (ca == 1 && cb == 1).then_some((pa + k / 2, pb + k / 2))
        })
        .collect();
    out.sort_unstable();
    out
}

/// Keeps the longest chain of anchors increasing strictly in both coordinates: sort by `i`
/// (ties by decreasing `j`, so two anchors of one row never chain), then the longest strictly
/// increasing subsequence of `j` (patience sorting, `O(A log A)`).
fn chain(mut anchors: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    anchors.sort_unstable_by(|x, y| x.0.cmp(&y.0).then(y.1.cmp(&x.1)));
    anchors.dedup();
    let mut tails: Vec<usize> = Vec::new();
    let mut parent = vec![usize::MAX; anchors.len()];
    for (t, &(_, j)) in anchors.iter().enumerate() {
        let pos = tails.partition_point(|&u| anchors[u].1 < j);
        if pos > 0 {
            parent[t] = tails[pos - 1];
        }
        if pos == tails.len() {
            tails.push(t);
        } else {
            tails[pos] = t;
        }
    }
    let mut out = Vec::new();
    let mut t = tails.last().copied().unwrap_or(usize::MAX);
    while t != usize::MAX {
        out.push(anchors[t]);
        t = parent[t];
    }
    out.reverse();
    out
}

/// The anchor path as one expected column per DP row `0..=n`: linear between anchors
/// (anchor `(i, j)` pairs symbols `i` and `j`, i.e. passes through cell `(i+1, j+1)`).
fn centre_line(anchors: &[(usize, usize)], n: usize, m: usize) -> Vec<usize> {
    let mut pts = vec![(0usize, 0usize)];
    pts.extend(anchors.iter().map(|&(i, j)| (i + 1, j + 1)));
    pts.push((n, m));
    let mut c = vec![0usize; n + 1];
    for w in pts.windows(2) {
        let ((i0, j0), (i1, j1)) = (w[0], w[1]);
        if i1 < i0 || j1 < j0 {
            continue;
        }
        for (i, ci) in c.iter_mut().enumerate().take(i1 + 1).skip(i0) {
            *ci = if i1 == i0 {
                j1
            } else {
                j0 + (j1 - j0) * (i - i0) / (i1 - i0)
            };
        }
    }
    c
}

/// Row bounds of a band of half-width `w` around the centre line. The path crosses row `i`
/// between `c(i)` and `c(i+1)`, so the row covers both, widened by `w` on each side.
fn band_rows(c: &[usize], n: usize, m: usize, w: usize) -> (Vec<usize>, Vec<usize>) {
    let mut lo = Vec::with_capacity(n + 1);
    let mut hi = Vec::with_capacity(n + 1);
    for i in 0..=n {
        let a = c[i];
        let b = if i < n { c[i + 1] } else { m };
        lo.push(a.min(b).saturating_sub(w));
        hi.push((a.max(b) + w).min(m));
    }
    connect(&mut lo, &mut hi, n, m);
    (lo, hi)
}

/// Makes row bounds usable: row 0 starts at column 0, row `n` ends at `m`, and consecutive
/// rows overlap so that every row is reachable and can reach the next.
fn connect(lo: &mut [usize], hi: &mut [usize], n: usize, m: usize) {
    lo[0] = 0;
    hi[n] = m;
    for i in 1..=n {
        lo[i] = lo[i].max(lo[i - 1]).min(hi[i - 1]);
    }
    for i in (0..n).rev() {
        hi[i] = hi[i].min(hi[i + 1]).max(lo[i + 1]);
    }
}

/// The rows where the path passes within `margin` of a band edge that is not the matrix border?
fn near_edge(al: &Alignment, lo: &[usize], hi: &[usize], m: usize, margin: usize) -> Vec<usize> {
    let (mut i, mut j) = (0usize, 0usize);
    let check =
        |i: usize, j: usize| (lo[i] > 0 && j < lo[i] + margin) || (hi[i] < m && j + margin > hi[i]);
    let mut rows = Vec::new();
    if check(0, 0) {
        rows.push(0);
    }
    for s in &al.steps {
        match s {
            Step::Pair(..) => {
                i += 1;
                j += 1;
            }
            Step::Fused(_, j0, j1) => {
                i += 1;
                j += j1 - j0 + 1;
            }
            Step::GapA(_) => i += 1,
            Step::GapB(_) => j += 1,
        }
        if check(i, j) && rows.last() != Some(&i) {
            rows.push(i);
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The property tests' PRNG.
    pub(crate) use model::rng::SplitMix64 as Rng;

    struct Letters<'a> {
        a: &'a [u8],
        b: &'a [u8],
        ga: GapModel,
        gb: GapModel,
    }
    impl Score for Letters<'_> {
        fn sub(&self, i: usize, j: usize) -> i64 {
            if self.a[i] == self.b[j] {
                500 + 100 * i64::from(self.a[i] % 3)
            } else {
                -1500
            }
        }
        fn run_bonus(&self, i: usize, j: usize) -> i64 {
            if self.a[i] == self.b[j] && self.a[i - 1] == self.b[j - 1] {
                100
            } else {
                0
            }
        }
        fn gap_a(&self) -> GapModel {
            self.ga
        }
        fn gap_b(&self) -> GapModel {
            self.gb
        }
        fn key_a(&self, i: usize) -> u64 {
            u64::from(self.a[i])
        }
        // Symbol 0 of `a` may absorb a run of up to four 0s of `b`.
        fn fuse_max(&self, i: usize, j: usize) -> usize {
            if self.a[i] != 0 {
                return 1;
            }
            (0..=j)
                .rev()
                .take(4)
                .take_while(|&t| self.b[t] == 0)
                .count()
                .max(1)
        }
        fn fuses_with_previous(&self, j: usize) -> bool {
            self.b[j] == 0 && self.b[j - 1] == 0
        }
        fn fuse(&self, _i: usize, _j: usize, len: usize) -> i64 {
            200 + 150 * len as i64
        }
        fn key_b(&self, j: usize) -> u64 {
            u64::from(self.b[j])
        }
    }

    /// A base sequence, then two copies with random drops and duplications.
    fn noisy_pair(rng: &mut Rng, len: usize, alpha: u64) -> (Vec<u8>, Vec<u8>) {
        let base: Vec<u8> = (0..len).map(|_| rng.below(alpha) as u8).collect();
        let noisy = |rng: &mut Rng| {
            let mut v = Vec::new();
            for &x in &base {
                match rng.below(10) {
                    0 | 1 => {}
                    2 => {
                        v.push(x);
                        v.push(x);
                    }
                    _ => v.push(x),
                }
            }
            v
        };
        let a = noisy(rng);
        let b = noisy(rng);
        (a, b)
    }

    #[test]
    fn full_and_fast_agree_on_random_sequences() {
        let mut rng = Rng::from_state(7);
        let models = [
            GapModel {
                open: -500,
                step: -100,
                cap: 2,
            },
            GapModel {
                open: -500,
                step: 300,
                cap: 1,
            },
            GapModel {
                open: -400,
                step: 0,
                cap: 0,
            },
        ];
        let rounds = if cfg!(debug_assertions) { 400 } else { 2000 };
        for round in 0..rounds {
            let len = 1 + rng.below(if round % 10 == 0 { 400 } else { 60 }) as usize;
            let alpha = 2 + rng.below(6);
            let (a, b) = noisy_pair(&mut rng, len, alpha);
            let ga = models[rng.below(3) as usize];
            let gb = models[rng.below(3) as usize];
            let sc = Letters {
                a: &a,
                b: &b,
                ga,
                gb,
            };
            let full = align_full(&sc, a.len(), b.len());
            let opt = FastOptions {
                band: 8 + rng.below(40) as usize,
                kmer: 4,
                margin: 2,
                verify: round % 2 == 0,
            };
            let fast = align_fast_with(&sc, a.len(), b.len(), opt);
            assert_eq!(full.score, fast.score, "round {round}: {a:?} / {b:?}");
            assert_eq!(path_score(&sc, &full.steps), full.score, "round {round}");
            assert_eq!(path_score(&sc, &fast.steps), fast.score, "round {round}");
        }
    }

    #[test]
    fn empty_sequences() {
        let g = GapModel {
            open: -5,
            step: -1,
            cap: 2,
        };
        let a: Vec<u8> = vec![1, 2, 3];
        let sc = Letters {
            a: &a,
            b: &[],
            ga: g,
            gb: g,
        };
        let al = align_fast(&sc, 3, 0);
        assert_eq!(al.steps.len(), 3);
        assert_eq!(al.score, -5 - 6 - 7);
        let sc = Letters {
            a: &[],
            b: &[],
            ga: g,
            gb: g,
        };
        assert!(align_full(&sc, 0, 0).steps.is_empty());
        // Long one-sided inputs take the banded path.
        let long: Vec<u8> = vec![1; 300];
        let sc = Letters {
            a: &long,
            b: &[],
            ga: g,
            gb: g,
        };
        assert_eq!(align_fast(&sc, 300, 0).steps.len(), 300);
        let sc = Letters {
            a: &[],
            b: &long,
            ga: g,
            gb: g,
        };
        assert_eq!(align_fast(&sc, 0, 300).score, align_full(&sc, 0, 300).score);
    }

    /// A pipeline stream's kernels and log lines: one kernel per call, a call being a Send line,
    /// a Recv line, or a Send and a Recv grouped (one SendRecv kernel absorbs both), with now
    /// and then a collective. Scored like the rich scoring: pairs of one class 8.5–10.5 points
    /// (a field that mostly agrees, as one datatype and size do on a real stream), gaps −5
    /// then −2, a fusion its last line's score plus 0.5, a run bonus of 1.
    struct P2p {
        /// Kernels: 0 a SendRecv kernel, 3 a collective.
        a: Vec<u8>,
        /// Lines: 1 Send, 2 Recv, 3 a collective.
        b: Vec<u8>,
        /// Per line, where its call's lines start.
        run_start: Vec<usize>,
        /// Per kernel and per line, the field that agrees or conflicts.
        fa: Vec<u8>,
        fb: Vec<u8>,
    }
    impl P2p {
        /// `calls` calls, `grouped` per mille of them a Send and a Recv together; each kernel
        /// dropped with `drop_k` per mille, each line with `drop_l`.
        fn new(rng: &mut Rng, calls: usize, grouped: u64, drop_k: u64, drop_l: u64) -> P2p {
            let mut p = P2p {
                a: Vec::new(),
                b: Vec::new(),
                run_start: Vec::new(),
                fa: Vec::new(),
                fb: Vec::new(),
            };
            for _ in 0..calls {
                let field = if rng.below(10) == 0 {
                    1 + rng.below(2) as u8
                } else {
                    0
                };
                let lines: &[u8] = match rng.below(1000) {
                    r if r < 30 => &[3],
                    r if r < 30 + grouped => &[1, 2],
                    r if r % 2 == 0 => &[1],
                    _ => &[2],
                };
                if rng.below(1000) >= drop_k {
                    p.a.push(if lines == [3] { 3 } else { 0 });
                    p.fa.push(field);
                }
                let start = p.b.len();
                for &x in lines {
                    if rng.below(1000) >= drop_l {
                        p.b.push(x);
                        p.fb.push(if rng.below(20) == 0 { 3 } else { field });
                        p.run_start.push(start);
                    }
                }
            }
            p
        }
    }
    impl Score for P2p {
        fn sub(&self, i: usize, j: usize) -> i64 {
            if (self.a[i] == 3) != (self.b[j] == 3) {
                return -1500;
            }
            let field = if self.fa[i] == self.fb[j] { 100 } else { -400 };
            (if self.a[i] == 3 { 500 } else { 250 }) + 600 + field
        }
        fn run_bonus(&self, i: usize, j: usize) -> i64 {
            let same = |i: usize, j: usize| (self.a[i] == 3) == (self.b[j] == 3);
            if same(i, j) && same(i - 1, j - 1) {
                100
            } else {
                0
            }
        }
        fn gap_a(&self) -> GapModel {
            GapModel {
                open: -500,
                step: 300,
                cap: 1,
            }
        }
        fn gap_b(&self) -> GapModel {
            self.gap_a()
        }
        fn key_a(&self, i: usize) -> u64 {
            u64::from(self.a[i] == 3)
        }
        fn key_b(&self, j: usize) -> u64 {
            u64::from(self.b[j] == 3)
        }
        fn fuse_max(&self, i: usize, j: usize) -> usize {
            if self.a[i] == 0 {
                (j - self.run_start[j] + 1).min(16)
            } else {
                1
            }
        }
        fn fuse(&self, i: usize, j: usize, _len: usize) -> i64 {
            let s = self.sub(i, j);
            if s <= 0 {
                NEG
            } else {
                s + 50
            }
        }
        fn fuses_with_previous(&self, j: usize) -> bool {
            self.run_start[j] != j
        }
    }

    /// Whether the adaptive band of half-width 32, placed without the look-ahead, loses the
    /// path (the case [`Lookahead`] is for).
    fn plain_band_loses_the_path<S: Score>(sc: &S, n: usize, m: usize) -> bool {
        let (al, lo, hi) = run_band(sc, n, m, Plan::Adaptive(32, None));
        !near_edge(&al, &lo, &hi, m, 8).is_empty()
    }

    #[test]
    fn full_and_fast_agree_on_fused_p2p_streams() {
        let mut rng = Rng::from_state(5);
        let (rounds, most) = if cfg!(debug_assertions) {
            (12, 500)
        } else {
            (80, 1500)
        };
        let mut lost = 0;
        for round in 0..rounds {
            let calls = 100 + rng.below(most - 100) as usize;
            let grouped = [0, 100, 300, 450, 600][rng.below(5) as usize];
            let drop_k = [0, 0, 20, 100][rng.below(4) as usize];
            let drop_l = [0, 0, 20, 100][rng.below(4) as usize];
            let sc = P2p::new(&mut rng, calls, grouped, drop_k, drop_l);
            let (n, m) = (sc.a.len(), sc.b.len());
            let full = align_full(&sc, n, m);
            let fast = align_fast(&sc, n, m);
            let what = format!(
                "round {round}: {calls} calls, {grouped}‰ grouped, {drop_k}‰ / {drop_l}‰ dropped"
            );
            assert_eq!(fast.score, full.score, "{what}");
            assert_eq!(path_score(&sc, &fast.steps), fast.score, "{what}");
            lost += usize::from(plain_band_loses_the_path(&sc, n, m));
        }
        // The streams do exercise the look-ahead: some rounds lose the path without it.
        assert!(lost > 0, "{lost} of {rounds}");
    }

    #[test]
    fn the_look_ahead_band_holds_a_long_pipeline_stream() {
        // The pipeline stream of a 1F1B schedule: S S S (S R)×5 R R R per period, 11 kernels
        // and 16 lines; no drops. The plain band falls behind (the best prefix pairs one line
        // per kernel), the look-ahead's holds the path at the first width.
        let mut sc = P2p {
            a: Vec::new(),
            b: Vec::new(),
            run_start: Vec::new(),
            fa: Vec::new(),
            fb: Vec::new(),
        };
        for _ in 0..120 {
            for call in 0..11 {
                let lines: &[u8] = match call {
                    0..=2 => &[1],
                    3..=7 => &[1, 2],
                    _ => &[2],
                };
                sc.a.push(0);
                sc.fa.push(0);
                let start = sc.b.len();
                for &x in lines {
                    sc.b.push(x);
                    sc.fb.push(0);
                    sc.run_start.push(start);
                }
            }
        }
        let (n, m) = (sc.a.len(), sc.b.len());
        assert_eq!((n, m), (1320, 1920));
        assert!(plain_band_loses_the_path(&sc, n, m));
        let look = Lookahead::new(&sc, n, m);
        let (al, lo, hi) = run_band(&sc, n, m, Plan::Adaptive(32, Some(&look)));
        assert!(near_edge(&al, &lo, &hi, m, 8).is_empty());
        assert_eq!(al.score, align_full(&sc, n, m).score);
        // Every kernel takes its own call's lines.
        let fused = al
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Fused(_, j0, j1) if j1 - j0 == 1))
            .count();
        assert_eq!(fused, 120 * 5);
        assert_eq!(align_fast(&sc, n, m), al);
    }

    /// `cargo test --release -p align -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn timing_full_vs_fast() {
        let mut rng = Rng::from_state(11);
        let g = GapModel {
            open: -500,
            step: -100,
            cap: 1,
        };
        for &len in &[250usize, 500, 1000, 2000] {
            let (a, b) = noisy_pair(&mut rng, len, 5);
            let sc = Letters {
                a: &a,
                b: &b,
                ga: g,
                gb: g,
            };
            let t = std::time::Instant::now();
            let f = align_full(&sc, a.len(), b.len());
            let tf = t.elapsed();
            let t = std::time::Instant::now();
            let q = align_fast(&sc, a.len(), b.len());
            let tq = t.elapsed();
            println!(
                "len {len}: full {tf:?} fast {tq:?} (scores {} / {})",
                f.score, q.score
            );
            assert_eq!(f.score, q.score);
        }
        let mut base_rng = Rng::from_state(12);
        let (a, b) = noisy_pair(&mut base_rng, 111_000, 5);
        let sc = Letters {
            a: &a,
            b: &b,
            ga: g,
            gb: g,
        };
        let t = std::time::Instant::now();
        let q = align_fast(&sc, a.len(), b.len());
        println!(
            "{} x {}: fast {:?}, {} pairs",
            a.len(),
            b.len(),
            t.elapsed(),
            q.pairs().len()
        );
    }
}
