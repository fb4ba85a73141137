//! Bodies a reader has seen before. A training run prints the same few tuning lines over and
//! over (`AllReduce: 4194304 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}` once per
//! call), and operation lines whose second half repeats for every call of one site
//! (`datatype 9 op 0 root 0 comm 0x5538… [nranks=4] stream 0x55cc…`); only the opCount, the
//! buffers and the count change. So a reader remembers recent tuning bodies and operation-line
//! tails with what it read from them, and a byte-identical text is not read again.
//!
//! Only speed depends on this, never the result: the readers are pure functions of the text,
//! so the same text reads the same.

use crate::coll::{self, Tail, Values};
use crate::scan;
use crate::tuning::{self, Facts};

/// Slots of remembered texts of each kind (on a hash of the length and four words).
const SLOTS: usize = 128;

/// Recent operation-line tails and tuning bodies, and what they said.
#[derive(Default)]
pub(crate) struct Repeats {
    tails: Vec<Option<(Vec<u8>, Tail)>>,
    /// Per slot of `tails`, the way read or written last.
    newer: Vec<u8>,
    tunings: Vec<Option<SeenTuning>>,
}

/// A tuning line's whole body and what it said.
struct SeenTuning {
    body: Vec<u8>,
    facts: Facts,
}

/// A text's slot: a hash of its length and four words (the first two, the middle and the end:
/// tails differ in their datatype and reduction op, which follow the constant `datatype `,
/// and in their pointers; tuning bodies in their operation and byte count). Without the
/// second word the 28 tails of a run fell into 8 slots.
fn slot(text: &[u8]) -> usize {
    let n = text.len();
    let mix = |h: u64, w: u64| (h.rotate_left(23) ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let h = mix(n as u64, scan::word_at(text, 0));
    let h = mix(h, scan::word_at(text, 8));
    let h = mix(h, scan::word_at(text, n / 2));
    let h = mix(h, scan::word_at(text, n.saturating_sub(8)));
    (h >> 57) as usize % SLOTS
}

impl Repeats {
    /// The numbers of the canonical operation line `Name: rest` (what `coll::canonical`
    /// reads), its tail from a remembered one when the text repeats.
    #[cfg(test)]
    pub(crate) fn op(&mut self, rest: &[u8]) -> Option<Values> {
        let mut v = Values::default();
        self.op_into(rest, &mut v).then_some(v)
    }

    /// [`Repeats::op`] written into `v` (in place: see `coll::canonical_head_into`); `false`
    /// when the line is not canonical, with `v` partly written.
    #[inline]
    pub(crate) fn op_into(&mut self, rest: &[u8], v: &mut Values) -> bool {
        let Some(at) = coll::canonical_head_into(rest, v) else {
            return false;
        };
        let Some(text) = rest.get(at..) else {
            return false;
        };
        if self.tails.is_empty() {
            self.tails.resize_with(2 * SLOTS, || None);
            self.newer.resize(SLOTS, 0);
        }
        // Two ways per slot: a run's tails (one per communicator, operation and stream) are a
        // few dozen, and one way lost a seventh of them to collisions.
        let i = slot(text);
        for way in 0..2 {
            if let Some(Some((seen, tail))) = self.tails.get(2 * i + way) {
                if scan::same(seen, text) {
                    if let Some(n) = self.newer.get_mut(i) {
                        *n = way as u8;
                    }
                    tail.fill(v);
                    return true;
                }
            }
        }
        let Some(tail) = coll::canonical_tail(text) else {
            return false;
        };
        tail.fill(v);
        // The way not used last makes room.
        let way = 1 - usize::from(self.newer.get(i).copied().unwrap_or(0) & 1);
        if let Some(entry) = self.tails.get_mut(2 * i + way) {
            *entry = Some((text.to_vec(), tail));
        }
        if let Some(n) = self.newer.get_mut(i) {
            *n = way as u8;
        }
        true
    }

    /// What [`tuning::parse_shaped`] reads from a tuning body (`rest` is the part after
    /// `name`), from a remembered identical body when there is one.
    #[cfg(test)]
    pub(crate) fn tuning(
        &mut self,
        body: &[u8],
        name: Option<&[u8]>,
        rest: &[u8],
    ) -> Option<Facts> {
        let mut f = Facts::default();
        self.tuning_into(body, name, rest, &mut f).then_some(f)
    }

    /// [`Repeats::tuning`] written into `f` (in place, as [`Repeats::op_into`]).
    #[inline]
    pub(crate) fn tuning_into(
        &mut self,
        body: &[u8],
        name: Option<&[u8]>,
        rest: &[u8],
        f: &mut Facts,
    ) -> bool {
        if self.tunings.is_empty() {
            self.tunings.resize_with(SLOTS, || None);
        }
        let i = slot(body);
        if let Some(Some(t)) = self.tunings.get(i) {
            if scan::same(&t.body, body) {
                *f = t.facts;
                return true;
            }
        }
        let Some(facts) = tuning::parse_shaped(name, rest).map(|t| t.facts()) else {
            return false;
        };
        *f = facts;
        if let Some(entry) = self.tunings.get_mut(i) {
            *entry = Some(SeenTuning {
                body: body.to_vec(),
                facts,
            });
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Operation lines read with a remembered tail give what the full reader gives: every cut
    /// and one-byte change of a line, after any other line of the set was remembered.
    #[test]
    fn reread_ops_agree_with_canonical() {
        let lines: [&[u8]; 4] = [
            b"opCount 1a sendbuff 0x7fd9f7780000 recvbuff 0x7fd9f7780000 count 131072 datatype 6 op 0 root 0 comm 0x447b8890 [nranks=4] stream 0x32dc6760",
            b"opCount 1b sendbuff 0x7fd9f7790000 recvbuff 0x7fd9f7780000 count 131073 datatype 7 op 0 root 0 comm 0x447b8890 [nranks=4] stream 0x32dc6760",
            b"opCount 0 sendbuff (nil) recvbuff 0X7c29d4000000 count 18446744073709551615 datatype 9 op 0 root -1 comm 0x566f01ecaf80 [nranks=2] stream (nil)",
            b"opCount ffffffffffffffff sendbuff 0x1 recvbuff 0x2 count 00 datatype 4294967295 op 4 root -9223372036854775807 comm 0x3 [nranks=1] stream 0x4",
        ];
        let subs = [b' ', b'0', b'9', b'a', b'f', b'g', b'x', b'-', b']', b'('];
        let mut variants: Vec<Vec<u8>> = Vec::new();
        for line in lines {
            variants.extend((0..=line.len()).map(|n| line[..n].to_vec()));
            for i in 0..line.len() {
                for s in subs {
                    let mut v = line.to_vec();
                    v[i] = s;
                    variants.push(v);
                }
            }
        }
        let mut reread = 0;
        for teacher in lines {
            for v in &variants {
                let mut r = Repeats::default();
                r.op(teacher);
                let repeated = r.op(v);
                let full = coll::canonical_values(v);
                assert_eq!(repeated, full, "{}", String::from_utf8_lossy(v));
                if repeated.is_some() {
                    reread += 1;
                }
            }
        }
        assert!(reread > 500, "{reread}");
    }

    #[test]
    fn repeated_tunings_agree_with_the_reader() {
        let bodies: [(&[u8], usize); 3] = [
            (
                b"AllReduce: 4194304 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}",
                11,
            ),
            (
                b"AllGather: 3775 Bytes -> Algo 1 proto 2 time 2860.208008",
                11,
            ),
            (b"262144 Bytes -> Algo 1 proto 2 time 54.707825", 0),
        ];
        let mut r = Repeats::default();
        for round in 0..3 {
            for (body, at) in bodies {
                let name = (at > 0).then(|| &body[..at - 2]);
                let want = tuning::parse_shaped(name, &body[at..]).map(|t| t.facts());
                assert!(want.is_some());
                assert_eq!(r.tuning(body, name, &body[at..]), want, "round {round}");
            }
        }
    }
}
