//! Precision, recall and F1 of predicted (log op, kernel) pairs against ground truth
//! (thesis eqs. 4.17–4.19).

use std::collections::HashSet;

/// Counts and rates of one comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prf {
    pub tp: usize,
    pub fp: usize,
    pub fn_: usize,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

/// Compares pair sets; duplicates in either list count once. Empty predictions and truth give
/// precision = recall = F1 = 1 (nothing to find, nothing wrong).
pub fn score_pairs(predicted: &[(usize, usize)], truth: &[(usize, usize)]) -> Prf {
    let p: HashSet<(usize, usize)> = predicted.iter().copied().collect();
    let t: HashSet<(usize, usize)> = truth.iter().copied().collect();
    let tp = p.intersection(&t).count();
    let fp = p.len() - tp;
    let fn_ = t.len() - tp;
    Prf::from_counts(tp, fp, fn_)
}

impl Prf {
    /// The rates of true positives, false positives and false negatives; a rate with nothing
    /// to count is 1 (nothing to find, nothing wrong).
    pub fn from_counts(tp: usize, fp: usize, fn_: usize) -> Prf {
        let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
        let precision = ratio(tp, tp + fp);
        let recall = ratio(tp, tp + fn_);
        let f1 = if precision + recall == 0.0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        };
        Prf {
            tp,
            fp,
            fn_,
            precision,
            recall,
            f1,
        }
    }

    /// Pools several comparisons (micro-average: sums the counts).
    pub fn pool(parts: &[Prf]) -> Prf {
        let (tp, fp, fn_) = parts
            .iter()
            .fold((0, 0, 0), |a, p| (a.0 + p.tp, a.1 + p.fp, a.2 + p.fn_));
        Prf::from_counts(tp, fp, fn_)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_rates() {
        let r = score_pairs(&[(0, 0), (1, 1), (2, 3)], &[(0, 0), (1, 1), (2, 2), (3, 3)]);
        assert_eq!((r.tp, r.fp, r.fn_), (2, 1, 2));
        assert!((r.precision - 2.0 / 3.0).abs() < 1e-12);
        assert!((r.recall - 0.5).abs() < 1e-12);
        assert!((r.f1 - 4.0 / 7.0).abs() < 1e-12);
        assert_eq!(score_pairs(&[], &[]).f1, 1.0);
    }
}
