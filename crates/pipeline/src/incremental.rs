//! Adding a file re-runs only what depends on it (issue 9): what an incremental analysis
//! recomputed ([`Rerun`]), and the timeline rebuilt keeping the tracks whose inputs did not
//! change ([`timeline_incremental`]). The alignment side is [`crate::analyse_incremental`].

use crate::alignment::Alignments;
use crate::analysis::Analysis;
use crate::session::Session;
use crate::timeline::{Timeline, Track};
use align::Redone;
use model::log::ProcessKey;
use std::collections::BTreeMap;

/// What an incremental analysis and timeline recomputed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rerun {
    /// Processes aligned (in a log and an export).
    pub processes: usize,
    /// Processes aligned from the start: new, or their own inputs changed.
    pub realigned: Vec<ProcessKey>,
    /// Processes whose inputs did not change but whose cross-rank consensus hints did (a rank
    /// joined their export's clock domain): their second alignment pass re-ran.
    pub rehinted: Vec<ProcessKey>,
    /// Timeline tracks (one per GPU), and how many were built again (the others were kept with
    /// their level-of-detail summaries). Filled by [`timeline_incremental`].
    pub tracks: usize,
    pub tracks_rebuilt: usize,
}

impl Rerun {
    pub(crate) fn of_alignment(alignments: &Alignments, redone: &[Redone]) -> Rerun {
        let mut rerun = Rerun {
            processes: alignments.processes.len(),
            ..Rerun::default()
        };
        for (p, r) in alignments.processes.iter().zip(redone) {
            match r {
                Redone::Kept => {}
                Redone::Hints => rerun.rehinted.push(p.process.clone()),
                Redone::Inputs => rerun.realigned.push(p.process.clone()),
            }
        }
        rerun
    }

    /// One line for the page: "re-aligned 1 of 8 processes; rebuilt 1 of 8 timeline tracks".
    pub fn summary(&self) -> String {
        let mut s = format!(
            "re-aligned {} of {} processes",
            self.realigned.len(),
            self.processes
        );
        if !self.rehinted.is_empty() {
            s += &format!(" ({} more re-ran the cross-rank pass)", self.rehinted.len());
        }
        s += &format!(
            "; rebuilt {} of {} timeline tracks",
            self.tracks_rebuilt, self.tracks
        );
        s
    }
}

/// The timeline of `analysis` ([`Session::timeline`]'s), keeping from `previous` (the timeline
/// last built from the analysis `analysis` was derived from by [`crate::analyse_incremental`],
/// or from `analysis` itself) every track whose inputs did not change: the same exports' kernels
/// of that GPU, the same rank and host, the same clock correction. Records in `analysis` what
/// the new tracks were built from, and in `rerun` how many were rebuilt.
pub fn timeline_incremental(
    session: &Session,
    analysis: &mut Analysis,
    previous: Option<Timeline>,
    rerun: &mut Rerun,
) -> Timeline {
    let mut old = std::mem::take(&mut analysis.track_inputs);
    let mut tracks: BTreeMap<(String, u32, u32), Track> = BTreeMap::new();
    for track in previous.map(|t| t.tracks).unwrap_or_default() {
        if let Some((process, device)) = &track.source {
            let gpu = (process.host.to_string(), process.pid, *device);
            if old.contains_key(&gpu) {
                tracks.insert(gpu, track);
            }
        }
    }
    let mut now = BTreeMap::new();
    let mut kept = 0;
    let timeline = session.timeline_reusing(&analysis.processes, &analysis.clocks, &mut |inputs| {
        now.insert(inputs.gpu.clone(), inputs.clone());
        let same = old.remove(&inputs.gpu).is_some_and(|o| &o == inputs);
        let track = tracks.remove(&inputs.gpu).filter(|_| same)?;
        kept += 1;
        Some(track)
    });
    analysis.track_inputs = now;
    rerun.tracks = timeline.tracks.len();
    rerun.tracks_rebuilt = timeline.tracks.len() - kept;
    timeline
}
