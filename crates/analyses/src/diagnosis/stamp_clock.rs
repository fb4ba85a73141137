//! The log stamps' clocks, from an analysis with exports: each aligned process's stamps
//! against its kernels (the median of kernel start − the stamp of the line it ran), composed
//! with its rank's synchronised clock, so that an error's stamp maps into the time every
//! rank shares. A host whose clock (or zone) is off shifts its stamps and its offset alike, so
//! its errors land where they happened.

use enrich::{ClockSync, RankClock};
use std::collections::BTreeMap;

/// At most this many matched kernels per process are read.
const SAMPLES: usize = 4_096;
/// Fewer stamped matches than this settle no offset.
const MIN_SAMPLES: usize = 3;

/// The clocks of the log stamps, per global rank (`None` when no process has both stamps and
/// a synchronised clock).
pub fn stamp_clocks(analysis: &pipeline::Analysis) -> Option<ClockSync> {
    let mut ranks = BTreeMap::new();
    for pm in &analysis.alignments.processes {
        let Some(rank) = analysis.communicators.rank_of(&pm.process) else {
            continue;
        };
        let Some(clock) = analysis.clocks.ranks.get(&rank) else {
            continue;
        };
        let step = pm.kernels.len().div_ceil(SAMPLES).max(1);
        let mut gaps: Vec<i64> = pm
            .matched_spans()
            .step_by(step)
            .filter_map(|(k, m)| {
                let stamp = pm.log_ops.call(m.first_line())?.timestamp_ns?;
                k.start_ns.checked_sub(stamp)
            })
            .collect();
        if gaps.len() < MIN_SAMPLES {
            continue;
        }
        let mid = gaps.len() / 2;
        let (_, &mut stamp_to_export, _) = gaps.select_nth_unstable(mid);
        // stamp + stamp_to_export is the rank's export clock; the rank's clock maps that to
        // the reference: so its stamps run `offset − stamp_to_export` ahead of the reference.
        ranks.insert(
            rank,
            RankClock {
                offset_ns: clock.offset_ns - stamp_to_export as f64,
                ..*clock
            },
        );
    }
    (!ranks.is_empty()).then_some(ClockSync {
        reference_rank: analysis.clocks.reference_rank,
        reference_ns: analysis.clocks.reference_ns,
        ranks,
    })
}
