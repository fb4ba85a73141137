//! An export's other (non-NCCL, compute) kernels, compactly: what the step analysis needs of
//! them (issue 32) without a record per kernel. An export can hold 10⁷ compute kernels; kept
//! here is, per GPU, its busy time as merged intervals (kernels on every stream, overlaps counted
//! once), and per kernel name its count, sum, minimum (the baseline: the minimum over repeats is
//! the stable one) and its few longest instances (the worst excesses over that baseline are
//! among them).

use std::sync::Arc;

/// How many of each name's longest instances are kept.
pub const WORST_PER_NAME: usize = 4;

/// One GPU of one process: when it was running compute kernels.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ComputeTrack {
    pub pid: u32,
    pub device: u32,
    /// Disjoint busy intervals `[start, end)`, ascending, GPU clock ns.
    pub busy: Vec<(i64, i64)>,
    pub kernels: u64,
    /// Σ kernel durations (overlapping kernels counted once each).
    pub kernel_ns: i64,
}

impl ComputeTrack {
    /// Busy time within `[from, to)`, ns.
    pub fn busy_between(&self, from: i64, to: i64) -> i64 {
        if to <= from {
            return 0;
        }
        let first = self.busy.partition_point(|&(_, e)| e <= from);
        self.busy[first..]
            .iter()
            .take_while(|&&(s, _)| s < to)
            .map(|&(s, e)| e.min(to) - s.max(from))
            .sum()
    }
}

/// One long instance of a kernel name.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComputeInstance {
    pub pid: u32,
    pub device: u32,
    pub start_ns: i64,
    pub duration_ns: i64,
}

/// Every kernel of one name.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComputeName {
    pub name: Arc<str>,
    pub count: u64,
    pub min_ns: i64,
    pub sum_ns: i64,
    /// The longest instances, longest first (at most [`WORST_PER_NAME`]).
    pub worst: Vec<ComputeInstance>,
}

impl ComputeName {
    /// Counts one instance.
    pub fn add(&mut self, i: ComputeInstance) {
        self.count += 1;
        self.sum_ns += i.duration_ns;
        self.min_ns = self.min_ns.min(i.duration_ns);
        let at = self
            .worst
            .partition_point(|w| w.duration_ns >= i.duration_ns);
        if at < WORST_PER_NAME {
            self.worst.insert(at, i);
            self.worst.truncate(WORST_PER_NAME);
        }
    }
}

/// Everything kept of an export's compute kernels.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ComputeKernels {
    /// By (pid, device).
    pub tracks: Vec<ComputeTrack>,
    /// By name, most total time first.
    pub names: Vec<ComputeName>,
}

impl ComputeKernels {
    pub fn track(&self, pid: u32, device: u32) -> Option<&ComputeTrack> {
        self.tracks
            .iter()
            .find(|t| t.pid == pid && t.device == device)
    }
}

/// Merges kernel spans into disjoint busy intervals as they come: in start order (what a kernel
/// table mostly is) each span costs O(1) and nothing is kept per kernel; spans that come out of
/// order are set aside and merged once at the end.
#[derive(Debug, Default)]
pub struct BusyMerger {
    busy: Vec<(i64, i64)>,
    late: Vec<(i64, i64)>,
}

impl BusyMerger {
    pub fn add(&mut self, start: i64, end: i64) {
        let end = end.max(start);
        match self.busy.last_mut() {
            Some(last) if start >= last.0 => {
                if start <= last.1 {
                    last.1 = last.1.max(end);
                } else {
                    self.busy.push((start, end));
                }
            }
            Some(_) => self.late.push((start, end)),
            None => self.busy.push((start, end)),
        }
    }

    pub fn finish(mut self) -> Vec<(i64, i64)> {
        if self.late.is_empty() {
            return self.busy;
        }
        self.busy.append(&mut self.late);
        self.busy.sort_unstable();
        let mut out: Vec<(i64, i64)> = Vec::with_capacity(self.busy.len());
        for (s, e) in self.busy {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_in_and_out_of_order() {
        let mut m = BusyMerger::default();
        for (s, e) in [(0, 10), (5, 12), (20, 30), (3, 4), (15, 21), (40, 41)] {
            m.add(s, e);
        }
        let busy = m.finish();
        assert_eq!(busy, [(0, 12), (15, 30), (40, 41)]);
        let t = ComputeTrack {
            busy,
            ..ComputeTrack::default()
        };
        assert_eq!(t.busy_between(0, 100), 12 + 15 + 1);
        assert_eq!(t.busy_between(11, 16), 2);
        assert_eq!(t.busy_between(31, 40), 0);
    }

    #[test]
    fn keeps_the_longest_instances() {
        let mut n = ComputeName {
            name: Arc::from("gemm"),
            count: 0,
            min_ns: i64::MAX,
            sum_ns: 0,
            worst: Vec::new(),
        };
        for (k, d) in [5, 9, 1, 7, 3, 9, 2].into_iter().enumerate() {
            n.add(ComputeInstance {
                pid: 1,
                device: 0,
                start_ns: k as i64,
                duration_ns: d,
            });
        }
        assert_eq!((n.count, n.min_ns, n.sum_ns), (7, 1, 36));
        let worst: Vec<(i64, i64)> = n
            .worst
            .iter()
            .map(|w| (w.duration_ns, w.start_ns))
            .collect();
        assert_eq!(worst, [(9, 1), (9, 5), (7, 3), (5, 0)]);
    }
}
