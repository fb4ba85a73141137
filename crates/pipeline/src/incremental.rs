//! Adding a file re-runs only what depends on it (issue 9): what an incremental analysis
//! recomputed ([`Rerun`]). The alignment side is [`crate::analyse_incremental`]; the timeline
//! side, which keeps the tracks whose inputs did not change, is `timeline::incremental`.

use crate::alignment::Alignments;
use align::Redone;
use model::log::ProcessKey;

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
    /// their level-of-detail summaries). Filled by `timeline::incremental`.
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
