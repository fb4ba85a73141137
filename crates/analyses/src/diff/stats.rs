//! The statistics of the comparison: medians and percentiles, and the two tests of whether a
//! time changed. Either test compares two samples of durations (or of any positive figure):
//!
//! - [`Test::Bootstrap`]: a percentile interval of the ratio of medians (new / base) from
//!   resamples drawn with a fixed seed ([`model::rng::SplitMix64`]), so the same inputs give the
//!   same interval on every platform. A resample's median is drawn directly rather than by
//!   drawing n values and selecting: n indices drawn with replacement from a sorted sample are
//!   ⌊n·Uᵢ⌋ for uniform Uᵢ, so the k-th smallest resampled value is the sample's value at
//!   ⌊n·U₍ₖ₎⌋, and the k-th order statistic U₍ₖ₎ of n uniforms is Beta(k, n − k + 1). Each
//!   resample is then two gamma draws, whatever n: the interval is the full bootstrap's (of the
//!   lower median, k = ⌈n/2⌉) at a cost that does not grow with the run.
//! - [`Test::RankSum`]: the Mann–Whitney U test with the normal approximation and the tie
//!   correction, two-sided; its effect size is P(new > base) + ½ P(new = base).
//!
//! Either way a change is significant only when the test rejects "no change" *and* the ratio
//! of medians is at least `min_effect` away from 1: with hundreds of thousands of operations a
//! 0.5 % shift is detectable and meaningless, and dozens of signatures tested at once would
//! otherwise yield a few "significant" changes between two runs of the same configuration.

use model::rng::SplitMix64;
use serde::{Deserialize, Serialize};

/// Which test decides significance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    #[default]
    Bootstrap,
    RankSum,
}

impl Test {
    pub fn name(self) -> &'static str {
        match self {
            Test::Bootstrap => "bootstrap",
            Test::RankSum => "rank-sum",
        }
    }

    pub fn from_name(s: &str) -> Option<Test> {
        match s {
            "bootstrap" => Some(Test::Bootstrap),
            "rank-sum" | "mann-whitney" | "rank" => Some(Test::RankSum),
            _ => None,
        }
    }
}

/// The test's settings, stated in the output beside its results.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TestSettings {
    pub method: Test,
    /// Two-sided: the bootstrap's interval is the `1 − alpha` one, the rank test rejects below
    /// `alpha`.
    pub alpha: f64,
    /// The smallest |ratio − 1| called a change.
    pub min_effect: f64,
    /// Bootstrap resamples.
    pub resamples: u32,
    pub seed: u64,
}

impl Default for TestSettings {
    fn default() -> Self {
        TestSettings {
            method: Test::Bootstrap,
            alpha: 0.05,
            min_effect: 0.05,
            resamples: 2000,
            seed: 0x0D1F_F5EE_D000_0035,
        }
    }
}

/// What a test said about two samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// median(new) / median(base).
    pub ratio: f64,
    /// The bootstrap's interval of the ratio (absent for the rank test).
    pub interval: Option<[f64; 2]>,
    /// The rank test's two-sided p-value (absent for the bootstrap).
    pub p_value: Option<f64>,
    /// The rank test's P(new > base) (0.5: no shift).
    pub prob_new_slower: Option<f64>,
    pub significant: bool,
}

/// The median (the mean of the two middle values for an even count); reorders `v`.
pub fn median(v: &mut [f64]) -> Option<f64> {
    let n = v.len();
    if n == 0 {
        return None;
    }
    let (left, mid, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    let hi = *mid;
    if n % 2 == 1 {
        return Some(hi);
    }
    let lo = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((lo + hi) / 2.0)
}

/// The `q`-quantile (0..=1) by the nearest rank; reorders `v`.
pub fn quantile(v: &mut [f64], q: f64) -> Option<f64> {
    let n = v.len();
    if n == 0 {
        return None;
    }
    let k = ((q.clamp(0.0, 1.0) * n as f64).ceil() as usize).clamp(1, n) - 1;
    Some(*v.select_nth_unstable_by(k, f64::total_cmp).1)
}

/// The fewest samples on each side that a change is called significant from.
pub const MIN_SAMPLES: usize = 3;

/// Compares `new` with `base` (both reordered); `None` when either side is empty or its median
/// is not positive (no ratio).
pub fn compare(base: &mut [f64], new: &mut [f64], s: &TestSettings, seed: u64) -> Option<Verdict> {
    let (mb, mn) = (median(base)?, median(new)?);
    if mb <= 0.0 || !mb.is_finite() || !mn.is_finite() {
        return None;
    }
    let ratio = mn / mb;
    // Fewer than MIN_SAMPLES on a side: its median hardly varies under resampling (one sample
    // not at all: a zero-width interval), so no interval or rank says more than the two values.
    let decidable = (ratio - 1.0).abs() >= s.min_effect
        && base.len() >= MIN_SAMPLES
        && new.len() >= MIN_SAMPLES;
    Some(match s.method {
        Test::Bootstrap => {
            let [lo, hi] = bootstrap_ratio(base, new, s, seed);
            Verdict {
                ratio,
                interval: Some([lo, hi]),
                p_value: None,
                prob_new_slower: None,
                significant: decidable && (lo > 1.0 || hi < 1.0),
            }
        }
        Test::RankSum => {
            let (p, prob) = mann_whitney(base, new);
            Verdict {
                ratio,
                interval: None,
                p_value: Some(p),
                prob_new_slower: Some(prob),
                significant: decidable && p < s.alpha,
            }
        }
    })
}

/// The `1 − alpha` percentile interval of median(new) / median(base) over `s.resamples`
/// bootstrap resamples of each side (both reordered: sorted).
pub fn bootstrap_ratio(base: &mut [f64], new: &mut [f64], s: &TestSettings, seed: u64) -> [f64; 2] {
    base.sort_unstable_by(f64::total_cmp);
    new.sort_unstable_by(f64::total_cmp);
    let mut rng = SplitMix64::derive(s.seed, seed);
    let mut ratios: Vec<f64> = (0..s.resamples.max(1))
        .map(|_| {
            let b = resampled_median(base, &mut rng);
            let n = resampled_median(new, &mut rng);
            n / b
        })
        .filter(|r| r.is_finite())
        .collect();
    let tail = (s.alpha / 2.0).clamp(0.0, 0.5);
    let lo = quantile(&mut ratios, tail).unwrap_or(f64::NAN);
    let hi = quantile(&mut ratios, 1.0 - tail).unwrap_or(f64::NAN);
    [lo, hi]
}

/// The lower median of one bootstrap resample of the sorted sample `v` (see the module's note).
fn resampled_median(v: &[f64], rng: &mut SplitMix64) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let k = n.div_ceil(2) as f64;
    let x = gamma(k, rng);
    let y = gamma(n as f64 - k + 1.0, rng);
    let u = x / (x + y);
    v[((u * n as f64) as usize).min(n - 1)]
}

/// A Gamma(`shape`, 1) variate for `shape` ≥ 1 (Marsaglia and Tsang, 2000).
fn gamma(shape: f64, rng: &mut SplitMix64) -> f64 {
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = rng.f64();
        if u > 0.0 && u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// A standard normal variate (Box–Muller).
fn normal(rng: &mut SplitMix64) -> f64 {
    let u1 = rng.f64().max(f64::MIN_POSITIVE);
    let u2 = rng.f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The Mann–Whitney U test of `new` against `base` (both reordered: sorted): the two-sided
/// p-value by the normal approximation with the tie correction, and P(new > base) + ½ P(tie).
pub fn mann_whitney(base: &mut [f64], new: &mut [f64]) -> (f64, f64) {
    base.sort_unstable_by(f64::total_cmp);
    new.sort_unstable_by(f64::total_cmp);
    let (n1, n2) = (base.len() as f64, new.len() as f64);
    // Merge the sorted sides: each run of equal values takes the mean of its ranks.
    let (mut i, mut j) = (0usize, 0usize);
    let mut rank = 0.0f64;
    let mut rank_sum_new = 0.0f64;
    let mut ties = 0.0f64;
    while i < base.len() || j < new.len() {
        let v = match (base.get(i), new.get(j)) {
            (Some(&a), Some(&b)) => a.min(b),
            (Some(&a), None) => a,
            (None, Some(&b)) => b,
            (None, None) => break,
        };
        let (mut a, mut b) = (0usize, 0usize);
        while base.get(i).is_some_and(|&x| x == v) {
            i += 1;
            a += 1;
        }
        while new.get(j).is_some_and(|&x| x == v) {
            j += 1;
            b += 1;
        }
        let t = (a + b) as f64;
        if t == 0.0 {
            // NaN never equals itself: step over it.
            i += usize::from(base.get(i).is_some_and(|x| x.is_nan()));
            j += usize::from(new.get(j).is_some_and(|x| x.is_nan()));
            continue;
        }
        let mean_rank = rank + (t + 1.0) / 2.0;
        rank_sum_new += mean_rank * b as f64;
        rank += t;
        ties += t * t * t - t;
    }
    let u = rank_sum_new - n2 * (n2 + 1.0) / 2.0;
    let prob = if n1 * n2 > 0.0 { u / (n1 * n2) } else { 0.5 };
    let n = n1 + n2;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)).max(1.0));
    if var <= 0.0 {
        return (1.0, prob);
    }
    let z = (u - n1 * n2 / 2.0).abs() / var.sqrt();
    (erfc(z / std::f64::consts::SQRT_2).min(1.0), prob)
}

/// The complementary error function (Numerical Recipes' `erfcc`, relative error below 1.2e-7):
/// std has no `erf`, and one function does not justify a dependency.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// FNV-1a of `bytes`: a seed per compared item that is the same on every platform (a std or Fx
/// hasher's output differs between 64-bit and wasm32 builds).
pub fn stable_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(seed: u64, n: usize, scale: f64) -> Vec<f64> {
        let mut r = SplitMix64::new(seed);
        (0..n).map(|_| scale * r.uniform(0.9, 1.1)).collect()
    }

    #[test]
    fn medians_and_quantiles() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&mut v, 0.95), Some(95.0));
        assert_eq!(quantile(&mut v, 0.0), Some(1.0));
        assert_eq!(quantile(&mut v, 1.0), Some(100.0));
    }

    #[test]
    fn erfc_matches_known_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-7);
        assert!((erfc(2.0) - 0.004_677_735).abs() < 1e-7);
        assert!((erfc(-1.0) - 1.842_700_793).abs() < 1e-7);
    }

    /// A 30 % slowdown is found by both tests with the ratio's interval around 1.3; the same
    /// distribution drawn twice is found by neither.
    #[test]
    fn both_tests_find_a_shift_and_only_a_shift() {
        for method in [Test::Bootstrap, Test::RankSum] {
            let s = TestSettings {
                method,
                ..TestSettings::default()
            };
            let v = compare(
                &mut sample(1, 400, 100.0),
                &mut sample(2, 300, 130.0),
                &s,
                7,
            )
            .unwrap();
            assert!(v.significant, "{method:?}: {v:?}");
            assert!((v.ratio - 1.3).abs() < 0.03, "{v:?}");
            if let Some([lo, hi]) = v.interval {
                assert!(
                    lo > 1.2 && hi < 1.4 && lo < v.ratio && v.ratio < hi,
                    "{v:?}"
                );
            }
            if let Some(p) = v.p_value {
                assert!(p < 1e-6 && v.prob_new_slower.unwrap() > 0.95, "{v:?}");
            }
            let same = compare(
                &mut sample(3, 400, 100.0),
                &mut sample(4, 300, 100.0),
                &s,
                7,
            )
            .unwrap();
            assert!(!same.significant, "{method:?}: {same:?}");
        }
    }

    /// The bootstrap is a function of its inputs and seed: the same call gives the same interval.
    /// One kernel per side (two ranks' traces of one collective) differs by any ratio, and a
    /// one-sample bootstrap's interval has no width: too few samples to call a change.
    #[test]
    fn too_few_samples_are_never_significant() {
        for method in [Test::Bootstrap, Test::RankSum] {
            let s = TestSettings {
                method,
                ..TestSettings::default()
            };
            for (b, n) in [(1, 1), (1, 40), (2, 2), (2, 9)] {
                let (mut base, mut new) = (sample(1, b, 10.0), sample(2, n, 30.0));
                let v = compare(&mut base, &mut new, &s, 7).unwrap();
                assert!(
                    v.ratio > 2.0 && !v.significant,
                    "{method:?} {b} vs {n}: {v:?}"
                );
            }
            // From MIN_SAMPLES a side, a tripled time is.
            let (mut base, mut new) = (sample(1, 12, 10.0), sample(2, 12, 30.0));
            assert!(compare(&mut base, &mut new, &s, 7).unwrap().significant);
        }
    }

    #[test]
    fn bootstrap_is_deterministic() {
        let s = TestSettings::default();
        let (mut b, mut n) = (sample(5, 50, 10.0), sample(6, 60, 11.0));
        let once = bootstrap_ratio(&mut b, &mut n, &s, 9);
        assert_eq!(once, bootstrap_ratio(&mut b, &mut n, &s, 9));
        assert_ne!(once, bootstrap_ratio(&mut b, &mut n, &s, 10));
    }

    /// The direct draw of a resample's median has the distribution of the median of n values
    /// drawn with replacement: both, over many resamples of one sample, give the same quantiles
    /// (to the Monte Carlo error).
    #[test]
    fn direct_resampled_median_matches_drawing_every_value() {
        let mut v = sample(11, 41, 100.0);
        v.sort_unstable_by(f64::total_cmp);
        let mut rng = SplitMix64::new(3);
        let mut direct: Vec<f64> = (0..4000).map(|_| resampled_median(&v, &mut rng)).collect();
        let mut drawn: Vec<f64> = (0..4000)
            .map(|_| {
                let mut r: Vec<f64> = (0..v.len())
                    .map(|_| v[rng.below(v.len() as u64) as usize])
                    .collect();
                quantile(&mut r, 0.5).unwrap()
            })
            .collect();
        for q in [0.05, 0.25, 0.5, 0.75, 0.95] {
            let (a, b) = (
                quantile(&mut direct, q).unwrap(),
                quantile(&mut drawn, q).unwrap(),
            );
            assert!((a - b).abs() < 0.6, "q {q}: direct {a}, drawn {b}");
        }
    }

    /// The rank test on a small hand-worked case: base {1, 2, 3}, new {4, 5, 6}: U = 9 of 9
    /// (every new value above every base value), z = (9 − 4.5) / sqrt(3·3·7/12) = 1.964,
    /// p = 0.0495.
    #[test]
    fn rank_sum_hand_worked() {
        let (p, prob) = mann_whitney(&mut [3.0, 1.0, 2.0], &mut [6.0, 4.0, 5.0]);
        assert_eq!(prob, 1.0);
        assert!((p - 0.0495).abs() < 1e-3, "{p}");
        // Ties: every value equal gives no evidence at all.
        let (p, prob) = mann_whitney(&mut [2.0, 2.0], &mut [2.0, 2.0, 2.0]);
        assert_eq!((p, prob), (1.0, 0.5));
    }
}
