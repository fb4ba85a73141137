//! The aligner as it was before the per-cell speed-ups, kept verbatim (test builds only) as the
//! reference that the fast DP must agree with exactly: same scores, same steps. One later change
//! of the band driver is mirrored here (marked "Look-ahead"), so that the two still run the same
//! bands: an adaptive band whose path came near its edge is placed once more with
//! [`crate::nw::Lookahead`], and the better-scoring of the two goes on.

#![allow(dead_code, clippy::all)]

use crate::nw::{Alignment, FastOptions, GapModel, Lookahead, Score, Step, NEG};
use std::collections::HashMap;

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
            ka: ga.cap as usize + 1,
            kb: gb.cap as usize + 1,
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
enum Plan<'a> {
    /// Row `i` covers `lo[i]..=hi[i]` (the full matrix, or a band around an anchor path).
    Fixed(&'a [usize], &'a [usize]),
    /// Row `i` covers `w` columns either side of the best cell of row `i-1` (plus one for the
    /// diagonal): the band follows the path when no anchors say where it is; the best cell
    /// less the look-ahead's penalty, if one is given.
    Adaptive(usize, Option<&'a Lookahead>),
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

/// Runs the DP over rows `0..=n` and traces back; returns the alignment and the row bounds used.
/// Memory: one 32-bit word per cell plus two rows of scores.
///
/// Kept whole (160 lines) on purpose: this is the pre-speed-up DP kept verbatim as the
/// reference `nw::run_band` must agree with, and splitting it would make it a second rewrite
/// rather than the code that was checked; `nw.rs` holds the split version (`row_bounds`,
/// `band_cells`, `traceback`).
fn run_band<S: Score + ?Sized>(
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
    let cells = match plan {
        Plan::Fixed(fl, fh) => fl.iter().zip(fh).map(|(l, h)| h - l + 1).sum(),
        Plan::Adaptive(w, _) => (n + 1) * (2 * w + 2) + m + 1,
    };
    // Look-ahead.
    let penalty = |i: usize, j: usize| match plan {
        Plan::Adaptive(_, Some(look)) => look.penalty(i, j),
        _ => 0,
    };
    let mut bp: Vec<u32> = Vec::with_capacity(cells);
    let mut tb = vec![0u8; ns];
    let mut prev: Vec<i64> = Vec::new();
    let mut cur: Vec<i64> = Vec::new();
    let mut tmp = vec![NEG; ns];
    let mut best_col = 0usize;
    for i in 0..=n {
        let (l, h) = match plan {
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
        };
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
                best = (-penalty(0, 0), 0);
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
            let v = tmp.iter().copied().max().unwrap_or(NEG) - penalty(i, j);
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
    // Traceback.
    let (mut i, mut j) = (n, m);
    let mut steps = Vec::with_capacity(n + m);
    while i > 0 || j > 0 {
        let b = unpack(&sh, bp[row_start[i] + j - lo[i]], state);
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
    debug_assert!(sh.x(0) == 1 && sh.y(0) == 1 + sh.ka);
    (Alignment { score, steps }, lo, hi)
}

/// The reference: full `(n+1)×(m+1)` matrix, quadratic time and memory.
pub fn align_full<S: Score + ?Sized>(sc: &S, n: usize, m: usize) -> Alignment {
    let lo = vec![0; n + 1];
    let hi = vec![m; n + 1];
    run_band(sc, n, m, Plan::Fixed(&lo, &hi)).0
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
            // Look-ahead.
            if adaptive && !touched.is_empty() {
                let look = Lookahead::new(sc, n, m);
                let (a2, l2, h2) = run_band(sc, n, m, Plan::Adaptive(w, Some(&look)));
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
    let mut ma: HashMap<u64, (u32, usize)> = HashMap::with_capacity(ha.len());
    for (p, &h) in ha.iter().enumerate() {
        let e = ma.entry(h).or_insert((0, p));
        e.0 += 1;
    }
    let mut mb: HashMap<u64, (u32, usize)> = HashMap::with_capacity(hb.len());
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

/// The fast DP against this reference: identical alignments (scores and steps) on random and
/// structured inputs, every gap-state shape, forbidden pairs, fusions, anchors (dense and
/// wrong), both band plans and band widening.
#[cfg(test)]
mod tests {
    use crate::nw;
    use crate::nw::{Alignment, FastOptions, GapModel, Score, NEG};

    use model::rng::SplitMix64 as Rng;

    /// Letters with weights, forbidden pairs, a run bonus, fusion of 0-runs and optional hints.
    struct Letters {
        a: Vec<u8>,
        b: Vec<u8>,
        ga: GapModel,
        gb: GapModel,
        hints: Option<Vec<(usize, usize)>>,
        forbid: bool,
        fuse_neg: bool,
    }
    impl Score for Letters {
        fn sub(&self, i: usize, j: usize) -> i64 {
            let (x, y) = (self.a[i], self.b[j]);
            if self.forbid && x == 5 && y == 6 {
                NEG
            } else if x == y {
                500 + 100 * i64::from(x % 3)
            } else {
                -1500 + 10 * i64::from(x.abs_diff(y))
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
        fn key_b(&self, j: usize) -> u64 {
            u64::from(self.b[j])
        }
        fn fuse_max(&self, i: usize, j: usize) -> usize {
            if self.a[i] != 0 {
                return 1;
            }
            (0..=j)
                .rev()
                .take(5)
                .take_while(|&t| self.b[t] == 0)
                .count()
                .max(1)
        }
        fn fuses_with_previous(&self, j: usize) -> bool {
            self.b[j] == 0 && self.b[j - 1] == 0
        }
        fn fuse(&self, i: usize, _j: usize, len: usize) -> i64 {
            if self.fuse_neg && i % 3 == 0 {
                NEG
            } else {
                200 + 150 * len as i64
            }
        }
        fn anchor_hints(&self) -> Option<Vec<(usize, usize)>> {
            self.hints.clone()
        }
    }

    /// Two noisy copies of one base sequence (drops, duplications, substitutions) and, per
    /// symbol, the base position it copies.
    fn noisy(rng: &mut Rng, len: usize, alpha: u64) -> [(Vec<u8>, Vec<usize>); 2] {
        let base: Vec<u8> = (0..len).map(|_| rng.below(alpha) as u8).collect();
        let drop = 1 + rng.below(3);
        std::array::from_fn(|_| {
            let (mut v, mut o) = (Vec::new(), Vec::new());
            for (p, &x) in base.iter().enumerate() {
                match rng.below(10) {
                    r if r < drop => {}
                    3 => {
                        v.extend([x, x]);
                        o.extend([p, p]);
                    }
                    4 => {
                        v.push(rng.below(alpha) as u8);
                        o.push(p);
                    }
                    _ => {
                        v.push(x);
                        o.push(p);
                    }
                }
            }
            (v, o)
        })
    }

    fn gap(rng: &mut Rng) -> GapModel {
        GapModel {
            open: -(100 + rng.below(900) as i64),
            step: rng.below(700) as i64 - 350,
            cap: [0, 1, 1, 2, 3, 4][rng.below(6) as usize],
        }
    }

    fn same(new: &Alignment, old: &Alignment, what: &str) {
        assert_eq!(new.score, old.score, "{what}: score");
        assert_eq!(new.steps, old.steps, "{what}: steps");
    }

    #[test]
    fn fast_dp_matches_the_reference() {
        let mut rng = Rng::from_state(2024);
        let rounds = if cfg!(debug_assertions) { 300 } else { 1500 };
        for round in 0..rounds {
            let len = match round % 20 {
                0 => rng.below(3) as usize,
                1..=3 => 200 + rng.below(400) as usize,
                _ => 1 + rng.below(80) as usize,
            };
            let alpha = 2 + rng.below(7);
            let [(a, oa), (b, ob)] = noisy(&mut rng, len, alpha);
            let hints = match rng.below(4) {
                // True pairs (dense), a few wrong ones, or none.
                0 => Some(
                    (0..a.len())
                        .filter_map(|i| Some((i, ob.iter().position(|&p| p == oa[i])?)))
                        .filter(|_| rng.below(4) != 0)
                        .collect(),
                ),
                1 => Some(
                    (0..rng.below(6))
                        .map(|_| {
                            (
                                rng.below(a.len().max(1) as u64) as usize,
                                rng.below(b.len().max(1) as u64) as usize,
                            )
                        })
                        .collect(),
                ),
                _ => None,
            };
            let sc = Letters {
                ga: gap(&mut rng),
                gb: gap(&mut rng),
                hints,
                forbid: rng.below(2) == 0,
                fuse_neg: rng.below(2) == 0,
                a,
                b,
            };
            let (n, m) = (sc.a.len(), sc.b.len());
            let what = format!("round {round}: {:?} {:?}", sc.ga, sc.gb);
            same(
                &nw::align_full(&sc, n, m),
                &super::align_full(&sc, n, m),
                &what,
            );
            let opt = FastOptions {
                band: 2 + rng.below(40) as usize,
                kmer: 2 + rng.below(6) as usize,
                margin: rng.below(5) as usize,
                verify: rng.below(2) == 0,
            };
            same(
                &nw::align_fast_with(&sc, n, m, opt),
                &super::align_fast_with(&sc, n, m, opt),
                &format!("{what} {opt:?}"),
            );
            same(
                &nw::align_fast(&sc, n, m),
                &super::align_fast(&sc, n, m),
                &what,
            );
        }
    }

    #[test]
    fn fast_dp_matches_the_reference_on_long_runs_of_one_symbol() {
        // Many equal-scoring paths: tie-breaking must be the same everywhere.
        let mut rng = Rng::from_state(5);
        for round in 0..40 {
            let n = 1 + rng.below(300) as usize;
            let m = 1 + rng.below(300) as usize;
            let sc = Letters {
                a: (0..n).map(|i| u8::from(i % 17 == 0)).collect(),
                b: (0..m).map(|j| u8::from(j % 13 == 0)).collect(),
                ga: gap(&mut rng),
                gb: gap(&mut rng),
                hints: None,
                forbid: false,
                fuse_neg: round % 2 == 0,
            };
            let opt = FastOptions {
                band: 2 + rng.below(20) as usize,
                kmer: 3,
                margin: 2,
                verify: round % 3 == 0,
            };
            same(
                &nw::align_fast_with(&sc, n, m, opt),
                &super::align_fast_with(&sc, n, m, opt),
                &format!("round {round}"),
            );
            same(
                &nw::align_full(&sc, n, m),
                &super::align_full(&sc, n, m),
                &format!("round {round} full"),
            );
        }
    }
}

/// `cargo test --release -p align --lib nw_ref::timing -- --ignored --nocapture`: time per cell
/// of the full matrix, fast DP against the reference, on the same machine and input.
#[cfg(test)]
#[test]
#[ignore]
fn timing_per_cell() {
    struct L(Vec<u8>, Vec<u8>);
    impl Score for L {
        fn sub(&self, i: usize, j: usize) -> i64 {
            if self.0[i] == self.1[j] {
                500
            } else {
                -1500
            }
        }
        fn run_bonus(&self, i: usize, j: usize) -> i64 {
            i64::from(self.0[i] == self.1[j]) * 100
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
    }
    let n = 3000;
    let sc = L(
        (0..n).map(|i| (i * 7 % 5) as u8).collect(),
        (0..n).map(|i| (i * 3 % 5) as u8).collect(),
    );
    for _ in 0..2 {
        let t = std::time::Instant::now();
        let a = crate::nw::align_full(&sc, n, n);
        let fast = t.elapsed().as_secs_f64() * 1e9 / (n * n) as f64;
        let t = std::time::Instant::now();
        let b = align_full(&sc, n, n);
        let slow = t.elapsed().as_secs_f64() * 1e9 / (n * n) as f64;
        assert_eq!(a, b);
        println!("ns per cell: fast {fast:.1}, reference {slow:.1}");
    }
}
