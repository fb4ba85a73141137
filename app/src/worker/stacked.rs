//! The loading worker's part in the Compare view's stacked timelines
//! ([`crate::protocol::stacked`]): its run's timeline, synchronised and unfiltered, cut to the
//! step the page asks for. The timeline is built again for each ask and dropped once cut (the
//! worker keeps no second copy of a run's kernels: a 64-rank run's would be tens of MB).

use analyses::steps::session::step_windows;
use analyses::steps::StageMapping;

use crate::protocol::messages::ToPage;
use crate::protocol::stacked::{stacked, step_spans, StackedAsk};
use crate::worker::compare::WithAnalysed;
use crate::worker::post::post;
use crate::worker::result::timeline_buffer;

/// Answers the page's ask for the stacked timeline of a step, if the run is analysed.
pub fn serve(ask: StackedAsk, with_analysed: WithAnalysed<'_>) {
    let mut out = None;
    with_analysed(&mut |session, analysis| {
        let steps = step_windows(session, analysis, &StageMapping::default());
        let (source, spans) = match &steps {
            Some((source, windows)) => {
                let synced: Vec<(u32, u64, i64, i64)> = windows
                    .iter()
                    .map(|w| {
                        let sync = |t| analysis.clocks.to_sync(w.rank, t);
                        (w.rank, w.step, sync(w.start_ns), sync(w.end_ns))
                    })
                    .collect();
                (Some(*source), step_spans(&synced))
            }
            None => (None, Vec::new()),
        };
        let Ok((whole, _)) = timeline::TimelineView::default().timeline(session, analysis) else {
            return;
        };
        let (info, cut) = stacked(&whole, &spans, source, ask.step);
        drop(whole);
        out = Some((info, timeline_buffer(&cut)));
    });
    if let Some((info, bytes)) = out {
        post(&ToPage::Stacked { info }, Some(bytes));
    }
}
