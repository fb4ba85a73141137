//! What a load sends the page beside the analysis' own rows, built the same way by a load and
//! by the warm-up: the view's timeline as the page's bytes (and what the worker keeps of it to
//! resolve picks), the communicators and the panels.

use crate::protocol::overview::{for_each_kernel_fact, KernelTally, OverviewView};
use crate::protocol::panels::{BandwidthBins, Panels};
use crate::protocol::views::CommPanel;
use crate::worker::align_pool::{HelperRunner, Helpers};
use js_sys::Uint8Array;
use load::Session;
use pipeline::Analysis;
use timeline::{Timeline, TimelineView};

/// What the worker keeps of a timeline it sent: each track's process and GPU and its spans'
/// starts, enough to find the kernel the page picks (track and span) or to find a kernel's span
/// (its process, GPU and start). The spans themselves, and their summaries, live in the page:
/// keeping them here too cost some 40 bytes an operation.
#[derive(Default)]
pub struct SentTimeline {
    pub tracks: Vec<SentTrack>,
}

pub struct SentTrack {
    pub source: Option<(model::log::ProcessKey, u32)>,
    /// Sorted, as the track's spans are.
    pub starts: Vec<i64>,
}

impl SentTimeline {
    pub fn of(t: &Timeline) -> SentTimeline {
        SentTimeline {
            tracks: t
                .tracks
                .iter()
                .map(|tr| SentTrack {
                    source: tr.source.clone(),
                    starts: tr.spans.iter().map(|s| s.start_ns).collect(),
                })
                .collect(),
        }
    }
}

/// A timeline as the page's bytes, written into a JavaScript buffer a track at a time: the
/// whole encoding never sits in wasm memory (whose size, once grown, stays).
pub fn timeline_buffer(t: &Timeline) -> js_sys::ArrayBuffer {
    let len = crate::protocol::timeline_codec::encoded_len(t);
    let out = Uint8Array::new_with_length(len as u32);
    let mut at = 0u32;
    crate::protocol::timeline_codec::encode_timeline_in_parts(t, &mut |part| {
        // SAFETY: the view over wasm memory is used at once, before anything allocates.
        let view = unsafe { Uint8Array::view(part) };
        out.set(&view, at);
        at += part.len() as u32;
    });
    out.buffer()
}

/// `future` polled through a pointer, so that its code stays a function of its own. Inlined (by
/// LLVM, then by wasm-opt, which inlines every function called from one place) the request's
/// futures made one 436 KB wasm function, which V8 compiled for 150 ms before the first drop's
/// first step.
pub fn out_of_line<'a, T>(
    future: impl std::future::Future<Output = T> + 'a,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>> {
    Box::pin(future)
}

/// What a result carries beside the analysis' own rows, built as a load builds it.
pub struct ResultViews {
    /// The view's timeline, as the page's bytes.
    pub timeline: js_sys::ArrayBuffer,
    /// What the worker keeps of it.
    pub sent: SentTimeline,
    pub counts: timeline::FilterCounts,
    pub comms: CommPanel,
    pub panels: Panels,
    pub overview: OverviewView,
}

impl ResultViews {
    /// Builds the views of `analysis` for `view`; `stage(name)` after each step (the load
    /// records its heap there).
    pub fn build(
        analysis: &Analysis,
        session: &Session,
        view: &TimelineView,
        stage: &mut dyn FnMut(&str),
    ) -> ResultViews {
        // The page's filter was read when it was set: it cannot fail now, but if it did, the
        // whole timeline is better than none.
        let (built, counts) = view
            .timeline(session, analysis)
            .or_else(|_| {
                TimelineView {
                    filter: String::new(),
                    ..view.clone()
                }
                .timeline(session, analysis)
            })
            .unwrap_or_default();
        stage("timeline built");
        // Each track's host and time span, for the overview's captures.
        let track_spans: Vec<(String, i64, i64)> = built
            .tracks
            .iter()
            .filter_map(|t| {
                let host = t
                    .source
                    .as_ref()
                    .map_or(String::new(), |(p, _)| p.host.to_string());
                Some((
                    host,
                    t.spans.first()?.start_ns,
                    t.spans.iter().map(|s| s.end_ns).max()?,
                ))
            })
            .collect();
        let timeline = timeline_buffer(&built);
        let sent = SentTimeline::of(&built);
        drop(built);
        stage("timeline encoded");
        // One pass over the matched kernels feeds the bandwidth panel, the overview and the
        // communicators' scalar check.
        let bottlenecks = analyses::comm_bottlenecks(session, analysis);
        let mut bins = BandwidthBins::default();
        let mut tally = KernelTally::default();
        for_each_kernel_fact(analysis, &bottlenecks, |k| {
            bins.add_fact(&k);
            tally.add(&k);
        });
        let comms = CommPanel::from_analysis(analysis, session, &tally);
        stage("communicators");
        let panels = Panels::from_analysis(analysis, session, &bottlenecks, bins);
        stage("panels built");
        let overview = OverviewView::build(analysis, session, &bottlenecks, &tally, &track_spans);
        stage("overview built");
        ResultViews {
            timeline,
            sent,
            counts,
            comms,
            panels,
            overview,
        }
    }
}

/// Analyses `session` (the warm-up's) as a load would, aligning in place, and builds what a
/// result carries; all of it is thrown away ([`crate::worker::warm_up`]).
pub async fn warm_up_analysis(session: &Session) {
    let runner = HelperRunner::new(Helpers::Exactly(0));
    let (analysis, _) = out_of_line(pipeline::analyse_incremental_with(
        session,
        &pipeline::UserSizes::default(),
        None,
        &runner,
    ))
    .await;
    drop(ResultViews::build(
        &analysis,
        session,
        &TimelineView::default(),
        &mut |_| (),
    ));
}
