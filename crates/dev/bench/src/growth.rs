//! How a cost grows with the input: the exponent k of `time ≈ c · size^k`, fitted by least
//! squares on logarithms over three or more sizes. k ≈ 1 is linear, 2 quadratic.

/// The fitted exponent; `None` with fewer than two usable points (non-positive values are
/// skipped: a log of them means nothing).
pub fn exponent(points: &[(f64, f64)]) -> Option<f64> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    if logs.len() < 2 {
        return None;
    }
    let n = logs.len() as f64;
    let mx = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let my = logs.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_known_powers() {
        let linear: Vec<(f64, f64)> = [1e3, 1e4, 1e5].iter().map(|&x| (x, 3.0 * x)).collect();
        assert!((exponent(&linear).unwrap() - 1.0).abs() < 1e-9);
        let quadratic: Vec<(f64, f64)> = [10.0, 20.0, 40.0].iter().map(|&x| (x, x * x)).collect();
        assert!((exponent(&quadratic).unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(exponent(&[(1.0, 1.0)]), None);
    }
}
