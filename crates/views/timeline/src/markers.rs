//! The NVTX rows shared above the timeline's tracks: the training iterations and the phases
//! (forward, backward, optimizer) that the program marked, from the lowest global rank whose
//! export has them, in the timeline's clock. NCCL's own per-call ranges are left out: they
//! would repeat the tracks.

use crate::span_facts::track_rank;
use crate::tracks::{Marker, MarkerKind, MarkerRow};
use enrich::ClockSync;
use load::Session;
use pipeline::Analysis;

/// At most this many ranges a row: a program that marks every layer still draws quickly, and
/// the message stays small.
pub const MAX_MARKERS_PER_ROW: usize = 100_000;

/// The phase a range's text names (ASCII case-insensitive), if any.
fn phase_of(text: &str) -> Option<MarkerKind> {
    let t = text.to_ascii_lowercase();
    if t.contains("forward") || t == "fwd" || t.starts_with("fwd ") {
        Some(MarkerKind::Forward)
    } else if t.contains("backward") || t == "bwd" || t.starts_with("bwd ") {
        Some(MarkerKind::Backward)
    } else if t.contains("optimizer") || t.contains("optim_step") {
        Some(MarkerKind::Optimizer)
    } else {
        None
    }
}

/// The iteration row and the phase row of the lowest-ranked process that has either.
pub fn marker_rows(session: &Session, analysis: &Analysis, clocks: &ClockSync) -> Vec<MarkerRow> {
    // (rank, rows) of the best process so far.
    let mut best: Option<(u32, Vec<MarkerRow>)> = None;
    for (x, loaded) in session.exports().iter().enumerate() {
        let e = &loaded.export;
        let iterations: std::collections::BTreeSet<usize> = e.iterations.iter().copied().collect();
        // The ranges are ordered by pid: one run of them per process, each read once.
        let mut first = 0;
        for run in e.nvtx.chunk_by(|a, b| a.pid == b.pid) {
            let offset = first;
            first += run.len();
            let pid = run[0].pid;
            let process = session.export_key(x, pid);
            let rank = track_rank(analysis, &process);
            let key = rank.unwrap_or(u32::MAX);
            if best.as_ref().is_some_and(|(r, _)| *r <= key) {
                continue;
            }
            let time = |t: i64| rank.map_or(t, |r| clocks.to_sync(r, t));
            let mut iters = Vec::new();
            let mut phases = Vec::new();
            for (i, r) in (offset..).zip(run) {
                let Some(end) = r.end_ns else { continue };
                let kind = if iterations.contains(&i) {
                    Some(MarkerKind::Iteration)
                } else {
                    phase_of(&r.text)
                };
                let Some(kind) = kind else { continue };
                let row = if kind == MarkerKind::Iteration {
                    &mut iters
                } else {
                    &mut phases
                };
                if row.len() < MAX_MARKERS_PER_ROW {
                    row.push(Marker {
                        start_ns: time(r.start_ns),
                        end_ns: time(end),
                        kind: kind as u8,
                        text: r.text.clone(),
                    });
                }
            }
            if iters.is_empty() && phases.is_empty() {
                continue;
            }
            let who = rank.map_or_else(|| format!("pid {pid}"), |r| format!("rank {r}"));
            let mut rows = Vec::new();
            for (name, mut ranges) in [("iterations", iters), ("phases", phases)] {
                if !ranges.is_empty() {
                    ranges.sort_by_key(|m| m.start_ns);
                    rows.push(MarkerRow {
                        label: format!("NVTX {name} ({who})"),
                        ranges,
                    });
                }
            }
            best = Some((key, rows));
        }
    }
    best.map(|(_, rows)| rows).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_read_from_the_text() {
        assert_eq!(phase_of("forward"), Some(MarkerKind::Forward));
        assert_eq!(phase_of("Backward pass"), Some(MarkerKind::Backward));
        assert_eq!(phase_of("fwd"), Some(MarkerKind::Forward));
        assert_eq!(phase_of("optimizer.step"), Some(MarkerKind::Optimizer));
        assert_eq!(phase_of("ncclAllReduce"), None);
        assert_eq!(phase_of("fwdsomething"), None);
    }
}
