//! Time bases: an export's times as UTC, and what a log's stamps resolve and which zone they
//! are in.
//!
//! An export counts time one way for all its processes (one capture, one clock):
//! - schema 3.25 and later count in the node's system clock: `UTC = utcEpochNs + t −
//!   systemClockNs` (`TARGET_INFO_SESSION_START_TIME`);
//! - earlier schemas (3.16, 3.17) count from the session's start: `UTC = utcEpochNs + t`
//!   (`ANALYSIS_DETAILS.startTime` is when collection started, after the session did: kernels of
//!   the real 3.16 fixture start before it).
//!
//! A log's stamps are what `NCCL_DEBUG_TIMESTAMP_FORMAT` printed: epoch seconds (`%s.%6f`, UTC),
//! or a date and time in the node's local zone, unnamed (`[%F %T]`, to the second; `%3f`
//! fractions). The parser reads both as epoch ns, so what is left to find out is the
//! resolution (the coarsest unit every stamp is a multiple of) and the zone (from the data:
//! the offset, in quarter hours, that puts the stamps on the export's kernels).

use model::nsys::NsysExport;

/// An export's time base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportClock {
    /// `UTC − t` for the export's times `t`; `None` when the export has no session start.
    pub utc_minus_t_ns: Option<i64>,
    /// Whether times are in the node's system clock (3.25+) rather than from the session start.
    pub system_clock: bool,
}

/// `major.minor` of a schema version string (`3.25.0` → (3, 25)).
fn schema_of(version: Option<&str>) -> Option<(u32, u32)> {
    let mut it = version?.split('.').map(|p| p.trim().parse::<u32>().ok());
    Some((it.next()??, it.next()??))
}

impl ExportClock {
    pub fn of(e: &NsysExport) -> ExportClock {
        let system = schema_of(e.schema_version.as_deref()).is_some_and(|v| v >= (3, 25));
        let Some(start) = e.session_start else {
            return ExportClock {
                utc_minus_t_ns: None,
                system_clock: system,
            };
        };
        let origin = if system {
            start.host_clock_ns.unwrap_or(0)
        } else {
            0
        };
        ExportClock {
            utc_minus_t_ns: start.utc_epoch_ns.checked_sub(origin),
            system_clock: system,
        }
    }

    /// Export time `t` as UTC epoch ns.
    pub fn utc(&self, t: i64) -> Option<i64> {
        self.utc_minus_t_ns?.checked_add(t)
    }

    /// How the export counts time, in words.
    pub fn describe(&self) -> &'static str {
        match (self.utc_minus_t_ns, self.system_clock) {
            (None, _) => "no session start: times are the export's own",
            (Some(_), true) => "system clock (UTC = utcEpochNs + t − systemClockNs)",
            (Some(_), false) => "from the session start (UTC = utcEpochNs + t)",
        }
    }
}

/// What a process's operation stamps are multiples of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stamps {
    pub count: u64,
    /// Stamps that are whole seconds, whole milliseconds, whole microseconds.
    pub whole_s: u64,
    pub whole_ms: u64,
    pub whole_us: u64,
    pub first: Option<i64>,
    pub last: Option<i64>,
}

impl Stamps {
    pub fn add(&mut self, t: i64) {
        self.count += 1;
        self.whole_s += u64::from(t % 1_000_000_000 == 0);
        self.whole_ms += u64::from(t % 1_000_000 == 0);
        self.whole_us += u64::from(t % 1_000 == 0);
        self.first = Some(self.first.map_or(t, |f| f.min(t)));
        self.last = Some(self.last.map_or(t, |l| l.max(t)));
    }

    pub fn merge(&mut self, o: &Stamps) {
        self.count += o.count;
        self.whole_s += o.whole_s;
        self.whole_ms += o.whole_ms;
        self.whole_us += o.whole_us;
        self.first = match (self.first, o.first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last = match (self.last, o.last) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }

    /// The stamps' resolution: the coarsest of 1 s, 1 ms, 1 µs, 1 ns that every stamp is a
    /// multiple of (a stamp of a finer clock lands on a whole second once in 10⁶ or more);
    /// `None` without stamps.
    pub fn resolution_ns(&self) -> Option<i64> {
        if self.count == 0 {
            return None;
        }
        Some(if self.whole_s == self.count {
            1_000_000_000
        } else if self.whole_ms == self.count {
            1_000_000
        } else if self.whole_us == self.count {
            1_000
        } else {
            1
        })
    }
}

/// The zone of stamps that are local time, and how sure: the whole number of quarter hours
/// that, subtracted from the stamps, puts most of them on a kernel launch of the same process
/// (a launch follows its line by microseconds; a stamp cut to its resolution is early by up to
/// that much).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZoneEstimate {
    /// Minutes east of UTC (0 for epoch stamps, which are UTC).
    pub minutes: i32,
    /// Share of the sampled stamps that fell on a launch with this zone.
    pub support: f64,
    /// The runner-up's share.
    pub runner_up: f64,
}

/// Zones tried: UTC−14:00 to UTC+14:00 in quarter hours.
const ZONES: std::ops::RangeInclusive<i32> = -56..=56;
/// At most this many stamps are tried against every zone.
const SAMPLE: usize = 512;

/// Estimates the zone of `stamps` (epoch ns as printed, parsed as if UTC) against `launches`
/// (UTC epoch ns, sorted) of the same process, at stamp resolution `resolution_ns`, allowing
/// `slack_ns` of clock error. `None` when no zone puts a tenth of the stamps on a launch.
pub fn estimate_zone(
    stamps: &[i64],
    launches: &[i64],
    resolution_ns: i64,
    slack_ns: i64,
) -> Option<ZoneEstimate> {
    if stamps.is_empty() || launches.is_empty() {
        return None;
    }
    let step = stamps.len().div_ceil(SAMPLE).max(1);
    let sample: Vec<i64> = stamps.iter().copied().step_by(step).collect();
    let hits = |zone_min: i32| -> usize {
        let z = i64::from(zone_min) * 60_000_000_000;
        sample
            .iter()
            .filter(|&&s| {
                let lo = s - z - slack_ns;
                let hi = s - z + resolution_ns + slack_ns;
                let i = launches.partition_point(|&k| k < lo);
                launches.get(i).is_some_and(|&k| k <= hi)
            })
            .count()
    };
    let mut scored: Vec<(usize, i32)> = ZONES.map(|q| (hits(q * 15), q * 15)).collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.abs().cmp(&b.1.abs())));
    let (best, minutes) = scored[0];
    let n = sample.len() as f64;
    if (best as f64) < 0.1 * n {
        return None;
    }
    Some(ZoneEstimate {
        minutes,
        support: best as f64 / n,
        runner_up: scored.get(1).map_or(0.0, |s| s.0 as f64 / n),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::nsys::SessionStart;

    #[test]
    fn resolution_is_what_every_stamp_is_a_multiple_of() {
        let mut s = Stamps::default();
        assert_eq!(s.resolution_ns(), None);
        for t in [1_000_000_000, 5_000_000_000] {
            s.add(t);
        }
        assert_eq!(s.resolution_ns(), Some(1_000_000_000));
        s.add(5_123_000_000);
        assert_eq!(s.resolution_ns(), Some(1_000_000));
        s.add(5_123_456_000);
        assert_eq!(s.resolution_ns(), Some(1_000));
    }

    #[test]
    fn export_clocks_follow_the_schema() {
        let mut e = NsysExport {
            schema_version: Some("3.25.0".into()),
            session_start: Some(SessionStart {
                utc_epoch_ns: 1_000_000_000_000,
                host_clock_ns: Some(300_000),
            }),
            ..NsysExport::default()
        };
        let c = ExportClock::of(&e);
        assert!(c.system_clock);
        assert_eq!(c.utc(300_000), Some(1_000_000_000_000));
        // 3.17: relative to the session; ANALYSIS_DETAILS.startTime is not the origin.
        e.schema_version = Some("3.17.1".into());
        let c = ExportClock::of(&e);
        assert!(!c.system_clock);
        assert_eq!(c.utc(300_000), Some(1_000_000_300_000));
        e.session_start = None;
        assert_eq!(ExportClock::of(&e).utc(1), None);
    }

    #[test]
    fn the_zone_is_the_offset_that_puts_stamps_on_launches() {
        // Launches every 137 ms for 20 s; stamps printed at +02:00 to the second, a few µs
        // before each launch.
        let t0 = 1_732_150_400_000_000_000i64;
        let launches: Vec<i64> = (0..150).map(|i| t0 + i * 137_000_000 + 7_000).collect();
        let zone = 120 * 60_000_000_000i64;
        let stamps: Vec<i64> = launches
            .iter()
            .map(|k| (k - 7_000 + zone).div_euclid(1_000_000_000) * 1_000_000_000)
            .collect();
        let z = estimate_zone(&stamps, &launches, 1_000_000_000, 50_000_000).unwrap();
        assert_eq!(z.minutes, 120);
        assert!(z.support > 0.99, "{z:?}");
        // Epoch stamps are UTC.
        let z = estimate_zone(&launches, &launches, 1_000, 1_000_000).unwrap();
        assert_eq!(z.minutes, 0);
        assert_eq!(estimate_zone(&[], &launches, 1, 1), None);
    }
}
