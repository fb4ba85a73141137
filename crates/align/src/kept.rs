//! What [`crate::Reuse`] keeps of a process's alignment for a later call, compactly.
//!
//! An analysis keeps it for every kernel of the run as long as the run is open. As
//! `Vec<Option<usize>>` and `Vec<Option<(u64, u64)>>` that was 40 bytes per kernel; here 5.

use model::log::LogOp;

/// The first pass as the consensus reads it: per kernel, the first log line matched to it
/// ([`crate::consensus::first_lines`]), 4 bytes each.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FirstLines(Vec<u32>);

/// A kernel without a line.
const NO_LINE: u32 = u32::MAX;

impl FirstLines {
    pub fn from_lines(lines: &[Option<usize>]) -> Self {
        let narrow = |l: usize| u32::try_from(l).ok().filter(|&l| l != NO_LINE);
        let v: Vec<u32> = lines
            .iter()
            .map(|l| {
                l.map_or(NO_LINE, |l| {
                    narrow(l).expect("a process's log has under 2^32 - 1 lines")
                })
            })
            .collect();
        FirstLines(v)
    }

    /// Kernel `k`'s first line.
    pub fn get(&self, k: usize) -> Option<usize> {
        self.0
            .get(k)
            .copied()
            .filter(|&l| l != NO_LINE)
            .map(|l| l as usize)
    }

    /// As the consensus reads them.
    pub fn to_lines(&self) -> Vec<Option<usize>> {
        (0..self.0.len()).map(|k| self.get(k)).collect()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The hints a second pass ran with, kept only to tell whether new hints are the same. Most
/// hints name the call of the kernel's own first line: those are one tag byte; the others are
/// kept whole. The encoding is relative to the process's log and first lines, which are the same
/// whenever two encodings are compared (a process's kept alignment is only reused while its
/// inputs are unchanged), so two hint lists are equal exactly when their encodings are.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeptHints {
    /// Per kernel: [`NONE`], [`OWN`] or [`OTHER`]; empty when no kernel was hinted.
    tags: Vec<u8>,
    /// The [`OTHER`] hints, in kernel order.
    others: Vec<(u64, u64)>,
}

const NONE: u8 = 0;
/// The call of the kernel's own first line.
const OWN: u8 = 1;
const OTHER: u8 = 2;

impl KeptHints {
    /// `hints` encoded against the process's `log_ops` and `first` lines.
    pub fn encode(hints: &[Option<(u64, u64)>], first: &FirstLines, log_ops: &[LogOp]) -> Self {
        let mut out = KeptHints {
            tags: Vec::with_capacity(hints.len()),
            others: Vec::new(),
        };
        for (k, hint) in hints.iter().enumerate() {
            let own = first
                .get(k)
                .and_then(|l| log_ops.get(l))
                .map(|o| (o.comm, o.op_count));
            out.tags.push(match hint {
                None => NONE,
                Some(call) if Some(*call) == own => OWN,
                Some(call) => {
                    out.others.push(*call);
                    OTHER
                }
            });
        }
        out.others.shrink_to_fit();
        out
    }

    /// Whether these are exactly `hints` (same log and first lines as when encoded).
    pub fn same_as(
        &self,
        hints: &[Option<(u64, u64)>],
        first: &FirstLines,
        log_ops: &[LogOp],
    ) -> bool {
        *self == KeptHints::encode(hints, first, log_ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_lines_read_back() {
        let lines = vec![Some(0), None, Some(7), Some(3), None];
        let kept = FirstLines::from_lines(&lines);
        assert_eq!(kept.to_lines(), lines);
        assert_eq!(kept.get(99), None);
    }

    #[test]
    fn hints_are_equal_exactly_when_their_encodings_are() {
        let log = crate::warmup::process(4).log_ops;
        let call = |l: usize| (log[l].comm, log[l].op_count);
        // Three lines of three calls (grouped Send/Recv lines share one).
        let mut lines: Vec<usize> = Vec::new();
        for l in 0..log.len() {
            if lines.len() < 3 && lines.iter().all(|&m| call(m) != call(l)) {
                lines.push(l);
            }
        }
        let [l0, l1, l2] = lines[..] else {
            panic!("the made-up log has three calls")
        };
        // A call no line of the log has.
        let other = (call(l0).0, u64::MAX);
        let first = FirstLines::from_lines(&[Some(l0), Some(l1), None, Some(l2)]);
        let (a, b, c) = (Some(call(l0)), Some(call(l1)), Some(call(l2)));
        let lists: Vec<Vec<Option<(u64, u64)>>> = vec![
            vec![],
            vec![None, None, None, None],
            vec![a, b, None, c],
            vec![a, Some(other), None, c],
            vec![a, b, c, c],
            vec![b, a, None, c],
            vec![a, b, None],
        ];
        for x in &lists {
            let kept = KeptHints::encode(x, &first, &log);
            for y in &lists {
                assert_eq!(kept.same_as(y, &first, &log), x == y, "{x:?} vs {y:?}");
            }
        }
        // Hints that confirm the first lines are a byte each.
        let own = KeptHints::encode(&lists[2], &first, &log);
        assert!(own.others.is_empty());
    }
}
