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

/// Compares at the level of calls: each (log op, kernel) pair becomes (the op's call, kernel),
/// where `call_of` names the call a log op belongs to (NCCL: its communicator and opCount, which
/// every line of one grouped launch shares). Why: when NCCL splits one Send/Recv group over
/// several kernels, neither the log nor the kernel names say which line ran in which kernel, and
/// the truth pairs every line of the group with every kernel; a pair metric then caps recall at
/// one over the number of kernels. Per call the question is answerable: did each kernel get the
/// call it ran? Where every call is one line this is exactly [`score_pairs`].
pub fn score_calls<K: std::hash::Hash + Eq>(
    predicted: &[(usize, usize)],
    truth: &[(usize, usize)],
    call_of: impl Fn(usize) -> K,
) -> Prf {
    let calls = |pairs: &[(usize, usize)]| -> HashSet<(K, usize)> {
        pairs.iter().map(|&(l, k)| (call_of(l), k)).collect()
    };
    let (p, t) = (calls(predicted), calls(truth));
    let tp = p.intersection(&t).count();
    Prf::from_counts(tp, p.len() - tp, t.len() - tp)
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

    #[test]
    fn calls_credit_any_line_of_a_split_group() {
        // Lines 0..4 are one call run by kernels 0 and 1; line 4 is a call of its own (kernel 2).
        let call = |l: usize| if l < 4 { 0 } else { 1 };
        let truth: Vec<(usize, usize)> = (0..4)
            .flat_map(|l| [(l, 0), (l, 1)])
            .chain([(4, 2)])
            .collect();
        let predicted = [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2)];
        let pairs = score_pairs(&predicted, &truth);
        assert_eq!((pairs.tp, pairs.fp, pairs.fn_), (5, 0, 4));
        let calls = score_calls(&predicted, &truth, call);
        assert_eq!((calls.tp, calls.fp, calls.fn_), (3, 0, 0));
        // A kernel given the wrong call is a false positive and leaves its true call unfound.
        let wrong = score_calls(&[(0, 0), (4, 1), (4, 2)], &truth, call);
        assert_eq!((wrong.tp, wrong.fp, wrong.fn_), (2, 1, 1));
        // One line per call: the same as the pair metric.
        let one = |l: usize| l;
        assert_eq!(
            score_calls(&[(0, 0), (1, 2)], &[(0, 0), (1, 1)], one),
            score_pairs(&[(0, 0), (1, 2)], &[(0, 0), (1, 1)])
        );
    }
}
