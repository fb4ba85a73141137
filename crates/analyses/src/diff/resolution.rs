//! Two runs compared at what both can tell. A run without NCCL logs (exports alone) has only
//! its kernels, by the operation their names give: the other run is then compared by its
//! kernels too ([`RunProfile::kernel_level`]). A run whose files cover too little of its world to
//! infer the layout (one node's logs, a rank's trace) has every communicator's parallelism
//! `unknown`, so its signatures merge what the other run tells apart (a TP and a DP AllReduce of
//! one size). Compared as they are, nothing would match; so when one run tells no parallelism
//! and the other does, the other's signatures are merged by (operation, size, datatype) too,
//! and the comparison says so.

use crate::diff::profile::{CommSamples, RunProfile, SignatureProfile};
use crate::diff::stats;
use std::borrow::Cow;
use std::collections::BTreeMap;

const UNKNOWN: &str = "unknown";

/// Whether any of the run's signatures carries a parallelism.
fn tells_parallelism(p: &RunProfile) -> bool {
    p.signatures.iter().any(|s| s.key.parallelism != UNKNOWN)
}

/// Both runs at the resolution both have, with the sentence that says what was given up (none
/// when nothing was).
pub fn common_resolution<'a>(
    base: &'a RunProfile,
    new: &'a RunProfile,
) -> (Cow<'a, RunProfile>, Cow<'a, RunProfile>, Option<String>) {
    let kernels_only = |p: &RunProfile| {
        !p.signatures.is_empty() && p.signatures.iter().all(|s| s.key.kernels_only)
    };
    let (kb, kn) = (kernels_only(base), kernels_only(new));
    if kb != kn && !base.signatures.is_empty() && !new.signatures.is_empty() {
        let which = if kb { "base" } else { "new" };
        let logged = if kb { new } else { base };
        if logged.kernel_level.is_empty() {
            let note = format!(
                "The {which} run has no NCCL log: its kernels carry no message size or \
                 communicator, so they do not match the other run's logged operations, which \
                 have no kernels to compare instead (give both runs' logs, or both runs' exports)."
            );
            return (Cow::Borrowed(base), Cow::Borrowed(new), Some(note));
        }
        // The logged run at the other's resolution: its kernels by the names' operation.
        let at_kernels = RunProfile {
            signatures: logged.kernel_level.clone(),
            ..logged.clone()
        };
        let note = format!(
            "The {which} run has no NCCL log: both runs' NCCL kernels are compared by the \
             operation their names give (message sizes unknown)."
        );
        return if kb {
            (Cow::Borrowed(base), Cow::Owned(at_kernels), Some(note))
        } else {
            (Cow::Owned(at_kernels), Cow::Borrowed(new), Some(note))
        };
    }
    let (tb, tn) = (tells_parallelism(base), tells_parallelism(new));
    if tb == tn || base.signatures.is_empty() || new.signatures.is_empty() {
        return (Cow::Borrowed(base), Cow::Borrowed(new), None);
    }
    let which = if tb { "new" } else { "base" };
    let note = format!(
        "The {which} run's files do not tell its communicators' parallelism (too little of the \
         world to infer the layout): operations are compared by operation, size and datatype alone."
    );
    if tb {
        (Cow::Owned(blind(base)), Cow::Borrowed(new), Some(note))
    } else {
        (Cow::Borrowed(base), Cow::Owned(blind(new)), Some(note))
    }
}

/// `p` with every signature's parallelism `unknown`, those that then share a key merged.
pub fn blind(p: &RunProfile) -> RunProfile {
    let mut merged: BTreeMap<_, SignatureProfile> = BTreeMap::new();
    for s in &p.signatures {
        let mut s = s.clone();
        s.key.parallelism = UNKNOWN.to_string();
        match merged.remove(&s.key) {
            Some(had) => {
                let key = s.key.clone();
                merged.insert(key, merge(had, s));
            }
            None => {
                merged.insert(s.key.clone(), s);
            }
        }
    }
    RunProfile {
        signatures: merged.into_values().collect(),
        ..p.clone()
    }
}

/// One signature of two with the same key: counts summed, samples joined, times recomputed.
fn merge(a: SignatureProfile, b: SignatureProfile) -> SignatureProfile {
    // A bandwidth is a median of single-operation kernels: the side with more of them stands.
    let (bw, eff) = if a.timed >= b.timed {
        (a.bus_bw_gbps, a.bus_efficiency)
    } else {
        (b.bus_bw_gbps, b.bus_efficiency)
    };
    let mut out = SignatureProfile {
        key: a.key,
        count: a.count + b.count,
        total_bytes: a.total_bytes.saturating_add(b.total_bytes),
        // The two groups' ranks may overlap; the larger is what is known for certain.
        ranks: a.ranks.max(b.ranks),
        comm_sizes: union(a.comm_sizes, b.comm_sizes),
        timed: a.timed + b.timed,
        median_ns: None,
        p95_ns: None,
        bus_bw_gbps: bw,
        bus_efficiency: eff,
        algorithms: add_counts(a.algorithms, b.algorithms),
        protocols: add_counts(a.protocols, b.protocols),
        channels: add_counts(a.channels, b.channels),
        samples: join_samples(a.samples, b.samples),
        unassigned_ns: [a.unassigned_ns, b.unassigned_ns].concat(),
        transfer: join_samples(a.transfer, b.transfer),
    };
    let mut all = out.durations();
    out.median_ns = stats::median(&mut all);
    out.p95_ns = stats::quantile(&mut all, 0.95);
    out
}

fn union<T: Ord>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a.sort();
    a.dedup();
    a
}

fn add_counts<T: Ord>(a: Vec<(T, u64)>, b: Vec<(T, u64)>) -> Vec<(T, u64)> {
    let mut m: BTreeMap<T, u64> = BTreeMap::new();
    for (k, n) in a.into_iter().chain(b) {
        *m.entry(k).or_default() += n;
    }
    m.into_iter().collect()
}

/// Samples by communicator, in communicator order (as the profile keeps them).
fn join_samples(a: Vec<CommSamples>, b: Vec<CommSamples>) -> Vec<CommSamples> {
    let mut m: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for s in a.into_iter().chain(b) {
        m.entry(s.comm).or_default().extend(s.durations_ns);
    }
    m.into_iter()
        .map(|(comm, durations_ns)| CommSamples { comm, durations_ns })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::profile::SigKey;

    fn sig(par: &str, count: u64, comm: usize, durations: &[f64]) -> SignatureProfile {
        let mut d = durations.to_vec();
        SignatureProfile {
            key: SigKey {
                parallelism: par.into(),
                op: "AllReduce".into(),
                bytes: 1024,
                dtype: "float16".into(),
                kernels_only: false,
            },
            count,
            total_bytes: count * 1024,
            ranks: 2,
            comm_sizes: vec![2],
            timed: durations.len() as u64,
            median_ns: stats::median(&mut d),
            p95_ns: None,
            bus_bw_gbps: None,
            bus_efficiency: None,
            algorithms: vec![("RING".into(), count)],
            protocols: Vec::new(),
            channels: Vec::new(),
            samples: vec![CommSamples {
                comm,
                durations_ns: durations.to_vec(),
            }],
            unassigned_ns: Vec::new(),
            transfer: Vec::new(),
        }
    }

    #[test]
    fn a_run_that_tells_parallelism_is_merged_to_the_other_runs_resolution() {
        let told = RunProfile {
            signatures: vec![
                sig("DP", 3, 0, &[10.0, 20.0, 30.0]),
                sig("TP", 1, 1, &[40.0]),
            ],
            ..RunProfile::default()
        };
        let blind_run = RunProfile {
            signatures: vec![sig("unknown", 4, 0, &[10.0, 20.0, 30.0, 40.0])],
            ..RunProfile::default()
        };
        let (b, n, note) = common_resolution(&told, &blind_run);
        assert!(note.unwrap().starts_with("The new run's files"));
        assert!(matches!(n, Cow::Borrowed(_)));
        assert_eq!(b.signatures.len(), 1);
        let s = &b.signatures[0];
        assert_eq!(
            (s.key.parallelism.as_str(), s.count, s.timed),
            ("unknown", 4, 4)
        );
        assert_eq!(s.median_ns, Some(25.0));
        assert_eq!(s.samples.len(), 2);
        assert_eq!(s.algorithms, vec![("RING".to_string(), 4)]);
        // Two runs that both tell (or both do not) stay as they are.
        let (b, n, note) = common_resolution(&told, &told);
        assert!(note.is_none() && matches!((b, n), (Cow::Borrowed(_), Cow::Borrowed(_))));
    }
}
