//! The activity strip: per rank, the share of each time bin its GPU ran at least one NCCL
//! kernel. Kernels of one GPU can overlap (several streams): their union counts, so a share never
//! passes 100 %.

use crate::section::Kernel;

/// Time bins of the strips this crate writes: a canvas's width, at 2 × 512 KB for 1024 ranks.
pub const HEAT_BINS: u32 = 512;

/// The time range the strips share, cut into `bins`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Axis {
    pub start_ns: i64,
    pub end_ns: i64,
    pub bins: u32,
}

impl Axis {
    /// An axis over [`start_ns`, `end_ns`] (widened to 1 ns when empty).
    pub fn new(start_ns: i64, end_ns: i64, bins: u32) -> Axis {
        Axis {
            start_ns,
            end_ns: end_ns.max(start_ns.saturating_add(1)),
            bins: bins.max(1),
        }
    }
}

/// The union of the kernels' intervals, sorted and disjoint.
pub fn busy_intervals(kernels: &[Kernel]) -> Vec<(i64, i64)> {
    let mut v: Vec<(i64, i64)> = kernels
        .iter()
        .map(|k| (k.start_ns, k.end_ns.max(k.start_ns)))
        .collect();
    v.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Total time covered by disjoint intervals.
pub fn busy_ns(intervals: &[(i64, i64)]) -> u64 {
    intervals
        .iter()
        .fold(0u64, |t, (a, b)| t.saturating_add(b.abs_diff(*a)))
}

/// One rank's strip: per bin of `axis`, its busy share scaled to 0–255. Linear in the intervals
/// and the bins (disjoint intervals cover each whole bin at most once).
pub fn strip(intervals: &[(i64, i64)], axis: &Axis) -> Vec<u8> {
    let bins = axis.bins as usize;
    let mut cover = vec![0f64; bins];
    let width = (axis.end_ns as f64 - axis.start_ns as f64) / bins as f64;
    let at = |t: i64| ((t as f64 - axis.start_ns as f64) / width).clamp(0.0, bins as f64);
    for &(a, b) in intervals {
        let (fa, fb) = (at(a), at(b));
        if fb <= fa {
            continue;
        }
        let first = fa.floor() as usize;
        let last = (fb.ceil() as usize).min(bins);
        for (i, c) in cover.iter_mut().enumerate().take(last).skip(first) {
            let lo = fa.max(i as f64);
            let hi = fb.min(i as f64 + 1.0);
            *c += (hi - lo).max(0.0);
        }
    }
    cover
        .into_iter()
        .map(|c| (c * 255.0).round().clamp(0.0, 255.0) as u8)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(a: i64, b: i64) -> Kernel {
        Kernel {
            start_ns: a,
            end_ns: b,
            ..Kernel::default()
        }
    }

    #[test]
    fn overlapping_kernels_count_once() {
        let i = busy_intervals(&[k(30, 40), k(0, 10), k(5, 20), k(40, 45)]);
        assert_eq!(i, vec![(0, 20), (30, 45)]);
        assert_eq!(busy_ns(&i), 35);
    }

    #[test]
    fn a_strip_shares_each_bin() {
        // 4 bins of 25 ns: [0,25) fully busy, [25,50) busy 5 of 25, the rest idle.
        let axis = Axis::new(0, 100, 4);
        let s = strip(&busy_intervals(&[k(0, 10), k(8, 30)]), &axis);
        assert_eq!(s, vec![255, 51, 0, 0]);
        // Outside the axis counts nothing; an empty axis does not divide by zero.
        assert_eq!(strip(&[(-50, -10), (200, 300)], &axis), vec![0; 4]);
        assert_eq!(strip(&[(5, 5)], &Axis::new(5, 5, 3)), vec![0; 3]);
    }
}
