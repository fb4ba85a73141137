//! The run's own performance model on generated runs: the fitted α and β recover the link
//! parameters the generator drew its kernels from, and every kernel's measured time sits beside
//! both predictions, the furthest off the curve listed with what the timeline needs to find it.
//!
//! The generator (`synth::timing`) times a transfer of `x` bus bytes as
//! `(α + x/β) · U(0.95, 1.08)` with α = 6 µs and β = 150 GB/s inside a node (NVLink), α = 20 µs
//! and β = the run's network bandwidth (25 GB/s) between nodes; a collective's members end
//! within ±0.5 µs of the first one resolved, and a kernel's duration also holds its wait for the
//! last member to arrive. So the kernels that waited for no one lie between 0.95× and 1.08×
//! the line, and the lower envelope the fit goes through (each size's 10th percentile) lies
//! between 0.95× and about 1.0× it, shifted by at most the ±0.5 µs end jitter (8 % of the
//! NVLink α). Hence the tolerance: ±10 % on α and on β.

mod support;

use analyses::patterns::model::for_each_prediction;
use analyses::patterns::{perf_model, LinkClass, Prepared};
use model::OpType;

/// The generator's (α ns, β GB/s) for a link class.
fn truth(class: LinkClass, cfg: &synth::RunConfig) -> Option<(f64, f64)> {
    match class {
        LinkClass::NVLink => Some((6_000.0, 150.0)),
        LinkClass::Network => Some((20_000.0, cfg.net_gbps)),
        _ => None,
    }
}

#[test]
fn fitted_alpha_and_beta_recover_the_generator_links() {
    let mut fitted = Vec::new();
    for name in support::small_presets() {
        let cfg = support::preset(name);
        // With a fifth of the kernels or lines dropped, some kernels are aligned to the wrong
        // operation: their sizes are not their own (the alignment's accuracy, not the fit's).
        if cfg.imperfections.drop_kernel_pct >= 5.0 || cfg.imperfections.drop_log_pct >= 5.0 {
            continue;
        }
        let (_run, session, analysis) = support::analysed(&cfg);
        let hw = analyses::hardware_from_topology(&session).expect("the logs print a topology");
        let m = perf_model(&analysis, &Prepared::of(&session, &analysis), &hw);
        for g in &m.groups {
            // The generator times a receive as its latency alone: no bandwidth to recover.
            if g.fit.status != "fitted" || g.op == "Recv" {
                continue;
            }
            let (alpha, beta) = truth(g.link_class, &cfg).expect("a class the generator has");
            let a = g.fit.alpha_ns.unwrap();
            let b = g.fit.beta_gbps.unwrap();
            assert!(
                (a - alpha).abs() <= 0.1 * alpha,
                "{name} {:?} {}: α {a:.0} ns, the generator's {alpha}",
                g.link_class,
                g.op
            );
            assert!(
                (b - beta).abs() <= 0.1 * beta,
                "{name} {:?} {}: β {b:.1} GB/s, the generator's {beta}",
                g.link_class,
                g.op
            );
            // The fitted curve reaches 90 % of β at 9·α·β bus bytes.
            let sat = g.saturation.fitted_bus_bytes.unwrap() as f64;
            assert!((sat - 9.0 * a * b).abs() <= 1.0, "{name}: {sat}");
            fitted.push((name, g.link_class, g.op.clone()));
        }
    }
    // Not a pass by default: the NVLink collectives of most presets and the demo's network
    // AllReduce were fitted.
    let nvlink = fitted
        .iter()
        .filter(|f| f.1 == LinkClass::NVLink && f.2 == "AllReduce")
        .count();
    assert!(nvlink >= 9, "{fitted:?}");
    assert!(
        fitted
            .iter()
            .any(|f| f.0 == "demo" && f.1 == LinkClass::Network && f.2 == "AllReduce"),
        "{fitted:?}"
    );
    assert!(
        fitted
            .iter()
            .any(|f| f.2 == "AllGather" || f.2 == "ReduceScatter"),
        "{fitted:?}"
    );
}

#[test]
fn every_kernel_beside_both_predictions_and_the_outliers_on_the_timeline() {
    let cfg = support::preset("demo");
    let (_run, session, analysis) = support::analysed(&cfg);
    let hw = analyses::hardware_from_topology(&session).unwrap();
    let prepared = Prepared::of(&session, &analysis);
    let m = perf_model(&analysis, &prepared, &hw);
    // The groups hold every matched kernel of positive duration once.
    let in_groups: u64 = m.groups.iter().map(|g| g.kernels).sum();
    let mut visited = 0u64;
    let mut fitted = 0u64;
    for_each_prediction(&analysis, &prepared.facts, &prepared.totals, &hw, &m, |p| {
        visited += 1;
        assert!(p.lbnl_ns > 0.0, "{p:?}");
        assert!(p.measured_ns() > 0);
        fitted += u64::from(p.fitted_ns.is_some());
    });
    assert_eq!(visited, in_groups);
    assert_eq!(fitted, visited, "every group has at least a latency");
    let matched: u64 = analysis
        .alignments
        .processes
        .iter()
        .map(|p| p.matched_kernels())
        .sum();
    assert!(
        in_groups <= matched && in_groups * 100 >= matched * 95,
        "{in_groups} of {matched}"
    );
    // Residuals: the lower envelope is the line, so few kernels run faster than it, while
    // waiting makes many slower.
    for g in m.groups.iter().filter(|g| g.fit.status == "fitted") {
        let r = &g.fitted_residuals;
        assert_eq!(r.kernels, g.kernels);
        assert_eq!(r.histogram.iter().sum::<u64>(), g.kernels);
        let p5 = r.quantiles.iter().find(|q| q.0 == 0.05).unwrap().1;
        assert!(
            p5 > 0.85 && p5 < 1.1,
            "{:?} {}: p5 {p5}",
            g.link_class,
            g.op
        );
        assert_eq!(g.lbnl_residuals.kernels, g.kernels);
        assert!(g
            .bins
            .iter()
            .all(|b| b.fitted_ns.is_some() && b.lbnl_ns > 0.0));
    }
    // The outliers: furthest first, each a real kernel of its rank with its opCount.
    assert!(!m.outliers.is_empty() && m.outliers.len() <= 50);
    let far = |o: &analyses::patterns::model::Outlier| o.ratio.ln().abs();
    assert!(m.outliers.windows(2).all(|w| far(&w[0]) >= far(&w[1])));
    for o in &m.outliers {
        let pm = analysis
            .alignments
            .processes
            .iter()
            .find(|p| p.process.host.as_str() == o.host && p.process.pid == o.pid)
            .expect("the outlier's process");
        let (span, line) = pm
            .matched_spans()
            .find(|(k, _)| k.start_ns == o.start_ns && k.end_ns == o.end_ns)
            .expect("the outlier's kernel");
        let call = pm.log_ops.call(line.first_line()).unwrap();
        assert_eq!(format!("{:x}", call.op_count), o.op_count);
        assert_eq!(o.measured_ns, span.end_ns - span.start_ns);
        assert_eq!(o.rank, analysis.communicators.rank_of(&pm.process).unwrap());
        assert_eq!(o.sync_start_ns, analysis.clocks.to_sync(o.rank, o.start_ns));
        let comm = &analysis.communicators.comms;
        assert!(comm.iter().any(|c| c.id == o.comm));
        assert!(OpType::from_name(&o.op).is_some());
    }
}
