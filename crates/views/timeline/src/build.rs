//! The timeline of a session: one track per GPU of each process in the exports.

use crate::tracks::{Lod, Span, Timeline, Track};
use enrich::ClockSync;
use ingest_nsys::KernelNameCache;
use load::Session;
use model::log::ProcessKey;
use pipeline::{Analysis, ProcessSummary, Rerun, TrackInputs};
use std::collections::{BTreeMap, HashMap};

/// One track per GPU of each process in the exports, NCCL kernels only, labelled and
/// ordered by global rank where the logs name the process (`processes`).
/// Every GPU's NCCL kernels as one track, ordered by global rank; a ranked process's times
/// are synchronised to the reference rank's clock with `clocks` (see [`pipeline::Analysis`]).
pub fn build(session: &Session, processes: &[ProcessSummary], clocks: &ClockSync) -> Timeline {
    build_reusing(session, processes, clocks, &mut |_| None)
}

/// [`build`], where `reuse` may hand back the track a GPU would get, built
/// earlier from the same [`TrackInputs`] (the incremental analysis keeps unchanged tracks):
/// that GPU's kernels are then not read again.
fn build_reusing(
    session: &Session,
    processes: &[ProcessSummary],
    clocks: &ClockSync,
    reuse: &mut dyn FnMut(&TrackInputs) -> Option<Track>,
) -> Timeline {
    // The GPUs, and which exports hold their kernels (counted, not yet read). A GPU is keyed
    // by its process as the analysis knows it (the log's host and pid when the export process
    // was paired with one, [`Session::export_key`]); `export_pid` finds its kernels in each
    // export again.
    let mut gpus: BTreeMap<(String, u32, u32), Vec<(u32, u32)>> = BTreeMap::new();
    let mut export_pid: HashMap<(u32, String, u32), u32> = HashMap::new();
    for (x, loaded) in session.exports().iter().enumerate() {
        let ks = &loaded.export.kernels;
        let mut per_gpu: BTreeMap<(u32, u32), u32> = BTreeMap::new();
        for j in 0..ks.len() {
            if let (Some(pid), Some(device)) = (ks.pid(j), ks.device(j)) {
                *per_gpu.entry((pid, device)).or_default() += 1;
            }
        }
        for ((pid, device), n) in per_gpu {
            let key = session.export_key(x, pid);
            export_pid.insert((x as u32, key.host.to_string(), key.pid), pid);
            gpus.entry((key.host.to_string(), key.pid, device))
                .or_default()
                .push((x as u32, n));
        }
    }
    let rank_of = |host: &str, pid: u32| {
        pipeline::log_process(processes, host, pid)
            .map(|p| (p.global_rank, p.process.host.as_str()))
    };
    // Tracks kept whole, and the spans of the others, read in one pass per export.
    let mut kept: Vec<((String, u32, u32), Track)> = Vec::new();
    let mut by_gpu: BTreeMap<(String, u32, u32), Vec<Span>> = BTreeMap::new();
    let mut wanted: Vec<HashMap<(u32, u32), Vec<Span>>> =
        session.exports().iter().map(|_| HashMap::new()).collect();
    for (gpu, sources) in gpus {
        let ranked = rank_of(&gpu.0, gpu.1);
        let inputs = TrackInputs {
            gpu: gpu.clone(),
            sources,
            rank: ranked.map(|(r, h)| (r, h.to_string())),
            clock: ranked.and_then(|(r, _)| {
                clocks.ranks.get(&r).map(|c| {
                    (
                        c.offset_ns.to_bits(),
                        c.drift_ppm.to_bits(),
                        clocks.reference_ns,
                    )
                })
            }),
        };
        if let Some(track) = reuse(&inputs) {
            kept.push((gpu, track));
            continue;
        }
        for &(x, _) in &inputs.sources {
            let pid = export_pid[&(x, gpu.0.clone(), gpu.1)];
            wanted[x as usize].insert((pid, gpu.2), Vec::new());
        }
        by_gpu.insert(gpu, Vec::new());
    }
    let mut names = KernelNameCache::default();
    for (loaded, wanted) in session.exports().iter().zip(&mut wanted) {
        if wanted.is_empty() {
            continue;
        }
        for k in &loaded.export.kernels {
            if let Some(spans) = wanted.get_mut(&(k.pid, k.device)) {
                spans.push(Span::new(
                    k.start_ns,
                    k.end_ns,
                    names.decode(&k.name).and_then(|n| n.op),
                ));
            }
        }
    }
    for (x, wanted) in wanted.into_iter().enumerate() {
        for ((pid, device), spans) in wanted {
            let key = session.export_key(x, pid);
            if let Some(all) = by_gpu.get_mut(&(key.host.to_string(), key.pid, device)) {
                all.extend(spans);
            }
        }
    }
    let mut t = Timeline {
        tracks: Vec::new(),
        start_ns: i64::MAX,
        end_ns: i64::MIN,
        markers: Vec::new(),
    };
    let mut keyed: Vec<((u32, u32, u32), Track)> = Vec::new();
    let mut cover = |spans: &[Span]| {
        t.start_ns = t
            .start_ns
            .min(spans.first().map_or(i64::MAX, |s| s.start_ns));
        t.end_ns = t
            .end_ns
            .max(spans.iter().map(|s| s.end_ns).max().unwrap_or(i64::MIN));
    };
    for ((host, pid, device), track) in kept {
        cover(&track.spans);
        let order = rank_of(&host, pid).map_or(u32::MAX, |(rank, _)| rank);
        keyed.push(((order, pid, device), track));
    }
    for ((host, pid, device), mut spans) in by_gpu {
        let ranked = rank_of(&host, pid);
        if let Some((rank, _)) = ranked {
            for s in &mut spans {
                s.start_ns = clocks.to_sync(rank, s.start_ns);
                s.end_ns = clocks.to_sync(rank, s.end_ns);
            }
        }
        spans.sort_by_key(|s| s.start_ns);
        cover(&spans);
        let (order, label) = match ranked {
            Some((rank, h)) => (rank, format!("rank {rank} · {h} · GPU {device}")),
            None if host.is_empty() => (u32::MAX, format!("pid {pid} · GPU {device}")),
            None => (u32::MAX, format!("{host} pid {pid} · GPU {device}")),
        };
        let source = Some((
            ProcessKey {
                host: host.as_str().into(),
                pid,
            },
            device,
        ));
        keyed.push((
            (order, pid, device),
            Track {
                label,
                lod: Lod::build(&spans),
                par_lod: Lod::default(),
                spans,
                source,
            },
        ));
    }
    keyed.sort_by_key(|(k, _)| *k);
    t.tracks = keyed.into_iter().map(|(_, track)| track).collect();
    if t.tracks.is_empty() {
        t.start_ns = 0;
        t.end_ns = 0;
    }
    t
}

/// The timeline of `analysis` ([`build`]'s), keeping from `previous` (the timeline
/// last built from the analysis `analysis` was derived from by [`pipeline::analyse_incremental`],
/// or from `analysis` itself) every track whose inputs did not change: the same exports' kernels
/// of that GPU, the same rank and host, the same clock correction. Records in `analysis` what
/// the new tracks were built from, and in `rerun` how many were rebuilt.
pub fn build_incremental(
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
    let timeline = build_reusing(
        session,
        &analysis.processes,
        &analysis.clocks,
        &mut |inputs| {
            now.insert(inputs.gpu.clone(), inputs.clone());
            let same = old.remove(&inputs.gpu).is_some_and(|o| &o == inputs);
            let track = tracks.remove(&inputs.gpu).filter(|_| same)?;
            kept += 1;
            Some(track)
        },
    );
    analysis.track_inputs = now;
    rerun.tracks = timeline.tracks.len();
    rerun.tracks_rebuilt = timeline.tracks.len() - kept;
    timeline
}
