//! SplitMix64, the one deterministic PRNG of the workspace (the generator's runs, the aligner's
//! property tests and benchmarks). Why our own: a seed must give identical bytes on every
//! platform and build, without pulling in `rand` and its version churn.

/// SplitMix64: one 64-bit state, good enough statistical quality for jitter and sampling.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl SplitMix64 {
    /// The stream of `seed` (mixed with the golden ratio, so that seeds 0, 1, 2 … differ at once).
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed ^ GOLDEN)
    }

    /// The stream whose state is `state`, as the reference SplitMix64 is seeded.
    pub fn from_state(state: u64) -> SplitMix64 {
        SplitMix64(state)
    }

    /// An independent stream derived from this seed and a label (so adding draws in one part of
    /// a generator does not shift every other part).
    pub fn derive(seed: u64, label: u64) -> SplitMix64 {
        let mut r = SplitMix64::new(seed.wrapping_mul(0x100_0000_01B3) ^ label.rotate_left(17));
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, n) (by remainder: fine for the small n of tests and generators).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo)
    }

    /// Uniform in [lo, hi) as f64.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }

    /// True with probability `p` (0..=1).
    pub fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..10 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(
            SplitMix64::derive(7, 1).next_u64(),
            SplitMix64::derive(7, 2).next_u64()
        );
    }

    /// The reference SplitMix64's first outputs for state 1234567 (Vigna's splitmix64.c).
    #[test]
    fn matches_the_reference() {
        let mut r = SplitMix64::from_state(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
    }
}
