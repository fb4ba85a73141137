//! The robust statistics the performance model and the periodicity rest on: quantiles, the
//! Theil–Sen line, the split of a two-mode sample (Otsu), and the median absolute deviation.
//!
//! Why robust: a kernel's duration is its transfer *plus* however long it waited for the
//! slowest member, so durations scatter far above the transfer time and never below it. The
//! lower envelope (a low quantile per message size) is the transfer; Theil–Sen (the median of
//! the pairwise slopes, Sen 1968) fits a line through it that a few stray sizes do not tilt,
//! where least squares would follow them.

/// The `q`-quantile (0 ≤ q ≤ 1) of `values` by the nearest rank (reorders `values`); `None`
/// when empty.
pub fn quantile(values: &mut [f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let k = ((values.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
    let (_, v, _) = values.select_nth_unstable_by(k, f64::total_cmp);
    Some(*v)
}

/// The median of `values` (reorders them).
pub fn median(values: &mut [f64]) -> Option<f64> {
    quantile(values, 0.5)
}

/// The median absolute deviation around the median, scaled by 1.4826 so that it estimates the
/// standard deviation of normal data; `None` when empty.
pub fn mad(values: &[f64]) -> Option<(f64, f64)> {
    let mut v = values.to_vec();
    let m = median(&mut v)?;
    let mut dev: Vec<f64> = values.iter().map(|x| (x - m).abs()).collect();
    Some((m, 1.4826 * median(&mut dev)?))
}

/// The Theil–Sen line through `points` (x, y): (intercept, slope), the slope the median of the
/// slopes between every two points with different x, the intercept the median of `y − slope·x`.
/// `None` with fewer than two distinct x.
pub fn theil_sen(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let mut slopes = Vec::with_capacity(points.len() * points.len() / 2);
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            let dx = b.0 - a.0;
            if dx.abs() > f64::EPSILON * a.0.abs().max(b.0.abs()).max(1.0) {
                slopes.push((b.1 - a.1) / dx);
            }
        }
    }
    let slope = median(&mut slopes)?;
    let mut rest: Vec<f64> = points.iter().map(|p| p.1 - slope * p.0).collect();
    Some((median(&mut rest)?, slope))
}

/// Otsu's split of a sample into a low and a high group: the threshold that maximises the
/// variance between the two groups' means, searched over a 256-bin histogram of `values`.
/// Returns (threshold, low group's mean, high group's mean); `None` for fewer than two values
/// or all equal.
pub fn otsu(values: &[f64]) -> Option<(f64, f64, f64)> {
    const BINS: usize = 256;
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.len() < 2 || hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let width = (hi - lo) / BINS as f64;
    let mut count = [0u64; BINS];
    let mut sum = [0f64; BINS];
    for &v in values {
        let b = (((v - lo) / width) as usize).min(BINS - 1);
        count[b] += 1;
        sum[b] += v;
    }
    let total_n = values.len() as f64;
    let total_s: f64 = sum.iter().sum();
    let (mut n0, mut s0) = (0f64, 0f64);
    let mut best: Option<(f64, usize, f64, f64)> = None;
    for b in 0..BINS - 1 {
        n0 += count[b] as f64;
        s0 += sum[b];
        let n1 = total_n - n0;
        if n0 == 0.0 || n1 == 0.0 {
            continue;
        }
        let (m0, m1) = (s0 / n0, (total_s - s0) / n1);
        let between = n0 * n1 * (m0 - m1) * (m0 - m1);
        if best.is_none_or(|(v, ..)| between > v) {
            best = Some((between, b, m0, m1));
        }
    }
    best.map(|(_, b, m0, m1)| (lo + width * (b + 1) as f64, m0, m1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_mad() {
        let mut v = vec![5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(median(&mut v), Some(3.0));
        assert_eq!(quantile(&mut v, 0.0), Some(1.0));
        assert_eq!(quantile(&mut v, 1.0), Some(5.0));
        assert_eq!(quantile(&mut [], 0.5), None);
        let (m, s) = mad(&[1.0, 2.0, 3.0, 4.0, 100.0]).unwrap();
        assert_eq!(m, 3.0);
        assert!(
            (s - 1.4826).abs() < 1e-9,
            "an outlier does not move it: {s}"
        );
    }

    #[test]
    fn theil_sen_ignores_a_stray_point_least_squares_would_follow() {
        // y = 5 + 2x, and one point far above the line.
        let mut pts: Vec<(f64, f64)> = (0..10).map(|x| (x as f64, 5.0 + 2.0 * x as f64)).collect();
        pts.push((4.5, 500.0));
        let (a, b) = theil_sen(&pts).unwrap();
        assert!((b - 2.0).abs() < 1e-9, "slope {b}");
        assert!((a - 5.0).abs() < 1e-9, "intercept {a}");
        assert_eq!(theil_sen(&[(1.0, 2.0), (1.0, 3.0)]), None);
    }

    #[test]
    fn otsu_splits_two_modes() {
        let mut v: Vec<f64> = (0..100).map(|i| 1.0 + (i % 7) as f64 * 0.01).collect();
        v.extend((0..20).map(|i| 10.0 + (i % 3) as f64 * 0.1));
        let (t, m0, m1) = otsu(&v).unwrap();
        assert!(t > 1.06 && t < 10.0, "threshold {t}");
        assert!((m0 - 1.03).abs() < 0.01 && (m1 - 10.1).abs() < 0.01);
        assert_eq!(otsu(&[3.0, 3.0]), None);
        assert_eq!(otsu(&[3.0]), None);
    }
}
