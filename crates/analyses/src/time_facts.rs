//! What each aligned process's log stamps are: their resolution, the zone they were printed in
//! (estimated against its kernels' launches in UTC: logs name no zone), whether the alignment
//! used them, and its export's time base. The summary's `ranks[].time` reads it.

use identity::time_base::{estimate_zone, ExportClock, ZoneEstimate};
use load::Session;
use model::log::ProcessKey;
use pipeline::ProcessMatch;

/// One process's time facts.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeFacts {
    pub process: ProcessKey,
    /// The coarsest of 1 s, 1 ms, 1 µs, 1 ns every stamp is a multiple of; `None`: no stamps.
    pub stamp_resolution_ns: Option<i64>,
    /// The stamps' zone, minutes east of UTC, when the data settles it.
    pub zone: Option<ZoneEstimate>,
    /// Whether the alignment used the stamps (finer than [`align::per_process::COARSE_STAMP_NS`]).
    pub stamps_used: bool,
    /// How its export counts time.
    pub export_time_base: &'static str,
}

/// At most this many kernels' launches are read per process for the zone.
const LAUNCHES: usize = 4_096;
/// Clock disagreement allowed between a stamp and its kernel's launch.
const SLACK_NS: i64 = 200_000_000;

/// The time facts of an aligned process.
pub fn time_facts(session: &Session, pm: &ProcessMatch) -> TimeFacts {
    let ops = &pm.log_ops;
    let mut stamps = identity::Stamps::default();
    let mut printed: Vec<i64> = Vec::new();
    for j in 0..ops.len() {
        if let Some(t) = ops.call(j).and_then(|c| c.timestamp_ns) {
            stamps.add(t);
            printed.push(t);
        }
    }
    let clock = pm
        .export
        .and_then(|x| session.exports().get(x))
        .map(|e| ExportClock::of(&e.export));
    let resolution = stamps.resolution_ns();
    let zone = match (resolution, clock) {
        (Some(res), Some(c)) if c.utc_minus_t_ns.is_some() => {
            let n = pm.kernels.len();
            let step = n.div_ceil(LAUNCHES).max(1);
            let mut launches: Vec<i64> = (0..n)
                .step_by(step)
                .filter_map(|k| pm.kernels.get(k))
                .filter_map(|k| c.utc(k.launch_ns.unwrap_or(k.start_ns)))
                .collect();
            launches.sort_unstable();
            estimate_zone(&printed, &launches, res, SLACK_NS)
        }
        _ => None,
    };
    TimeFacts {
        process: pm.process.clone(),
        stamp_resolution_ns: resolution,
        zone,
        stamps_used: resolution.is_some_and(|r| r < align::per_process::COARSE_STAMP_NS),
        export_time_base: clock.map_or("no export", |c| c.describe()),
    }
}

/// The stamps' format in words, as far as the data tells it.
pub fn stamp_format(f: &TimeFacts) -> String {
    let Some(res) = f.stamp_resolution_ns else {
        return "none".into();
    };
    let tick = match res {
        1_000_000_000 => "1 s",
        1_000_000 => "1 ms",
        1_000 => "1 µs",
        _ => "1 ns",
    };
    match f.zone {
        Some(z) if z.minutes == 0 => format!("UTC (epoch or a UTC clock), {tick}"),
        Some(z) => {
            let sign = if z.minutes < 0 { '-' } else { '+' };
            let m = z.minutes.unsigned_abs();
            format!("local time UTC{sign}{:02}:{:02}, {tick}", m / 60, m % 60)
        }
        None => format!("{tick}, zone not settled by the data"),
    }
}
