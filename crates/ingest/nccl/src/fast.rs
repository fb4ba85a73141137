//! The hot path of reading a line. Almost every line of a big log is an `NCCL INFO` line of a
//! process and thread that printed before, optionally after an epoch timestamp:
//! ```text
//! 1712345678.123456 host:12:34 [0] NCCL INFO AllReduce: opCount 1a sendbuff 0x7f.. ...
//! └ timestamp ─────┘└ head: seen before, compared as bytes ┘└ body ──────────────────
//! ```
//! [`FastHeads`] remembers the heads (origin token through `NCCL INFO `) that the general reader
//! ([`crate::prefix::split_line_cached`]) has already split, with what it read from them. A line
//! made of a timestamp, one space and a remembered head then needs no marker search and no
//! header parse: its [`Split`] is the remembered one with this line's timestamp and body, which
//! is exactly what the general reader gives, because that reader's result depends only on the
//! head's bytes and the timestamp token before them (both checked when a head is learned).
//!
//! The body is read by the general body reader. One step of the general split remains: a body
//! that holds a second `NCCL INFO` marker may be two writers' lines merged, which only the
//! general reader sorts out. The two shapes that make up nearly every line of a big log (an
//! operation line as NCCL prints it, and a tuning line with NCCL's own tail) are read by a
//! closed grammar that cannot contain a marker, so they skip that search; any other body is
//! searched, and a line with a marker in it goes to the general reader.

use crate::coll::Values;
use crate::prefix::{self, Level, Origin, Split};
use crate::read::{read_body, FastBody, FastLine, Read};
use crate::repeats::Repeats;
use crate::scan;
use crate::tuning::Facts;
use model::OpType;

/// How many heads are remembered (direct-mapped on the origin token). A process's threads and
/// the ranks of a combined log each have their own head.
const SLOTS: usize = 64;
/// `NCCL INFO ` and the space after it: the end of every remembered head.
const MARKER: &[u8] = b"NCCL INFO ";

/// Heads the general reader has split, for [`FastHeads::read`].
#[derive(Default)]
pub(crate) struct FastHeads {
    /// [`SLOTS`] entries once the first head is learned; an empty `text` is a free slot.
    slots: Vec<Head>,
    /// The slot of the last hit: consecutive lines mostly come from one thread.
    last: usize,
    /// The last `%s.%6f` timestamp read, for the lines that repeat it.
    stamp: Stamp,
}

/// A timestamp token of NCCL's shape (`1712345678.123456 `: ten digits, a dot, six digits, a
/// space) and its value. An operation line and its tuning line are mostly printed in the same
/// microsecond, and the seconds stay the same for thousands of lines: the first 18 bytes of a
/// line compared with these say whether the whole value, or its seconds, can be taken as read.
#[derive(Default)]
struct Stamp {
    text: [u8; 18],
    secs: u64,
    ns: i64,
}

impl Stamp {
    /// [`prefix::epoch_lead`] of `line`, through the remembered token.
    #[inline]
    fn lead(&mut self, line: &[u8]) -> Option<(i64, usize)> {
        let Some(head) = line.first_chunk::<18>() else {
            return prefix::epoch_lead(line);
        };
        // Nothing remembered yet: a token always ends with its space.
        if self.text[17] != b' ' {
            return self.learn(line, head);
        }
        if head == &self.text {
            return Some((self.ns, 17));
        }
        // The same second of a ten-digit token: only the microseconds are new.
        if self.text[10] == b'.' && head[..11] == self.text[..11] && head[17] == b' ' {
            let (n, micros) = scan::dec_word(scan::word_at(line, 11));
            if n == 6 {
                let ns = i64::try_from(self.secs * 1_000_000_000 + micros * 1_000).ok()?;
                self.text = *head;
                self.ns = ns;
                return Some((ns, 17));
            }
        }
        self.learn(line, head)
    }

    fn learn(&mut self, line: &[u8], head: &[u8; 18]) -> Option<(i64, usize)> {
        let (ns, len) = prefix::epoch_lead(line)?;
        if len == 17 {
            self.text = *head;
            self.secs = (ns / 1_000_000_000) as u64;
            self.ns = ns;
        }
        Some((ns, len))
    }
}

#[derive(Default)]
struct Head {
    /// From the origin token through [`MARKER`].
    text: Vec<u8>,
    /// The host within `text`.
    host_start: usize,
    host_len: usize,
    pid: u32,
    tid: u32,
    dev: u32,
}

impl FastHeads {
    /// The line read as the general reader reads it, when it is an INFO line with a remembered
    /// head and a body that holds no second marker; `false` otherwise (then read it the general
    /// way and [`FastHeads::learn`] from the result). `line` has its trailing whitespace
    /// trimmed; `seen` remembers bodies for this reader.
    ///
    /// The read is written into `out` (whose old value is dropped) and `true` returned; on
    /// `false`, `out` holds no read yet (it may hold part of one) and must be written. In place
    /// rather than returned: copying reads through returns stalled on bytes just stored, about
    /// a fifth of a parse (docs/PERFORMANCE.md, *Third round*).
    #[inline]
    pub(crate) fn read_into<'a>(
        &mut self,
        line: &'a [u8],
        seen: &mut Repeats,
        out: &mut Read<'a>,
    ) -> bool {
        let (timestamp_ns, at) = match self.stamp.lead(line) {
            Some((ns, len)) => (Some(ns), len + 1),
            None => (None, 0),
        };
        let Some(rest) = line.get(at..) else {
            return false;
        };
        let Some(head) = self.find(rest).and_then(|slot| self.slots.get(slot)) else {
            return false;
        };
        let (Some(host), Some(body)) = (
            rest.get(head.host_start..head.host_start + head.host_len),
            rest.get(head.text.len()..),
        ) else {
            return false;
        };
        if let Some(shape) = closed_shape(body) {
            // The line's numbers are read straight into `out` (see `coll::canonical_head_into`).
            let who = (head.pid, head.tid, head.dev);
            let read = match (
                shape,
                FastLine::write(out, line, host, body, who, timestamp_ns, shape.blank()),
            ) {
                (Closed::Op(_, rest), Some(FastBody::Op(_, v))) => seen.op_into(rest, v),
                (Closed::Tuning(name, rest), Some(FastBody::Tuning(f))) => {
                    seen.tuning_into(body, name, rest, f)
                }
                _ => false,
            };
            if read {
                return true;
            }
        }
        // Any other body: the general split looks for another writer's marker after this one's.
        if prefix::has_marker(body) {
            return false;
        }
        let split = Split {
            level: Level::Info,
            origin: Some(Origin {
                host,
                pid: head.pid,
                tid: head.tid,
            }),
            dev: Some(head.dev),
            timestamp_ns,
            timestamp_text: timestamp_ns.and_then(|_| line.get(..at - 1)),
            body,
            merged: false,
            first_host: None,
        };
        *out = Read::nccl(line, split, read_body(body));
        true
    }

    /// [`FastHeads::read_into`], returned.
    #[cfg(test)]
    pub(crate) fn read<'a>(&mut self, line: &'a [u8], seen: &mut Repeats) -> Option<Read<'a>> {
        let mut out = Read::Blank;
        self.read_into(line, seen, &mut out).then_some(out)
    }

    /// The slot whose head starts `rest`.
    fn find(&mut self, rest: &[u8]) -> Option<usize> {
        let hit = |h: &Head| {
            !h.text.is_empty()
                && rest
                    .get(..h.text.len())
                    .is_some_and(|r| scan::same(r, &h.text))
        };
        if self.slots.get(self.last).is_some_and(hit) {
            return Some(self.last);
        }
        let slot = slot_of(rest)?;
        if self.slots.get(slot).is_some_and(hit) {
            self.last = slot;
            return Some(slot);
        }
        None
    }

    /// Remembers the head of a line the general reader split as `s`, when a later line with
    /// the same head bytes is read the same way by [`FastHeads::read`]: an INFO line of one
    /// writer, its origin token first on the line or right after an epoch timestamp and one
    /// space, its marker followed by a space and a body.
    pub(crate) fn learn(&mut self, line: &[u8], s: &Split<'_>) {
        if s.level != Level::Info || s.merged || s.body.is_empty() {
            return;
        }
        let (Some(o), Some(dev)) = (s.origin, s.dev) else {
            return;
        };
        let (Some(body_at), Some(host_at)) = (offset_in(line, s.body), offset_in(line, o.host))
        else {
            return;
        };
        let Some(marker_at) = body_at.checked_sub(MARKER.len()) else {
            return;
        };
        if line.get(marker_at..body_at) != Some(MARKER) {
            return;
        }
        let at = match prefix::epoch_lead(line) {
            Some((ns, len)) if s.timestamp_ns == Some(ns) => len + 1,
            Some(_) => return,
            None if s.timestamp_ns.is_none() => 0,
            None => return,
        };
        // The origin token (which may carry a glued prefix before the host) starts at `at`.
        let token_at = line
            .get(..host_at)
            .and_then(|b| b.iter().rposition(|c| *c == b' ' || *c == b'\t'))
            .map_or(0, |i| i + 1);
        if token_at != at || host_at < at || marker_at <= host_at {
            return;
        }
        let Some(text) = line.get(at..body_at) else {
            return;
        };
        let Some(slot) = slot_of(text) else { return };
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, Head::default);
        }
        if let Some(h) = self.slots.get_mut(slot) {
            h.text.clear();
            h.text.extend_from_slice(text);
            h.host_start = host_at - at;
            h.host_len = o.host.len();
            h.pid = o.pid;
            h.tid = o.tid;
            h.dev = dev;
            self.last = slot;
        }
    }
}

/// The two body shapes read by a grammar that admits no `NCCL INFO` inside: an operation line
/// exactly as NCCL prints it (of an operation this build knows) and a tuning line with NCCL's
/// own tail. What they give is what [`read_body`] gives for the same body.
#[derive(Clone, Copy)]
enum Closed<'b> {
    /// `Name: opCount …`: the operation and the text from `opCount`.
    Op(OpType, &'b [u8]),
    /// A tuning line, maybe: its `Name` if it has one, and the text after `Name: `.
    Tuning(Option<&'b [u8]>, &'b [u8]),
}

impl Closed<'_> {
    /// What a read of this shape starts from, before its numbers are read into it.
    #[inline(always)]
    fn blank(&self) -> FastBody {
        match self {
            Closed::Op(op, _) => FastBody::Op(*op, Values::default()),
            Closed::Tuning(..) => FastBody::Tuning(Facts::default()),
        }
    }
}

/// Which closed shape `body` may have, from its first word (not yet read to its end).
#[inline]
fn closed_shape(body: &[u8]) -> Option<Closed<'_>> {
    // `Name: ` first (both shapes but the oldest tuning lines), read once for both. Longer
    // names (none that NCCL prints) go the general way.
    let w = scan::alnum_run16(body);
    if w == 0 || w == 16 {
        return None;
    }
    match (body.get(w..w + 2), body.get(w + 2..)) {
        (Some(b": "), Some(rest)) => {
            let name = &body[..w];
            if rest.starts_with(b"opCount ") {
                Some(Closed::Op(scan::op_type(name)?, rest))
            } else {
                Some(Closed::Tuning(Some(name), rest))
            }
        }
        _ => Some(Closed::Tuning(None, body)),
    }
}

/// Where `part` (a sub-slice of `whole`) starts in `whole`.
fn offset_in(whole: &[u8], part: &[u8]) -> Option<usize> {
    let off = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (off + part.len() <= whole.len()).then_some(off)
}

/// The slot of a head: a hash of its origin token (up to the first space).
fn slot_of(rest: &[u8]) -> Option<usize> {
    let end = scan::find_byte(rest, b' ')?;
    let token = rest.get(..end)?;
    let mut h: u64 = token.len() as u64;
    for c in token.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    Some((h >> 58) as usize % SLOTS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::split_line;
    use crate::read::{read_line_general, Body};

    /// A read as the general reader would have made it (a fast read turned back into its
    /// split and body), printed; the timestamp's text, which only WARN lines keep, is left out.
    fn general_form(r: Read<'_>) -> String {
        match r {
            Read::Fast(f) => {
                let what = match f.what {
                    FastBody::Op(op, v) => format!("{op:?} {v:?}"),
                    FastBody::Tuning(t) => format!("{t:?}"),
                };
                let who = format!("{:?} {} {} {}", f.host(), f.pid, f.tid, f.dev);
                let (level, merged) = (Level::Info, false);
                format!(
                    "{:?} {level:?} {merged} {who} {:?} {:?} {what}",
                    f.line,
                    f.timestamp_ns(),
                    f.body()
                )
            }
            Read::Nccl(n) => {
                let s = &n.split;
                let o = s
                    .origin
                    .expect("an INFO line the fast path takes has an origin");
                let what = match &n.body {
                    Body::Coll(Ok(c)) => match scan::op_type(c.name) {
                        Some(op) => format!("{op:?} {:?}", c.values()),
                        None => format!("{:?}", n.body),
                    },
                    Body::Tuning(Ok(t)) => format!("{:?}", t.facts()),
                    other => format!("{other:?}"),
                };
                let who = format!(
                    "{:?} {} {} {}",
                    o.host,
                    o.pid,
                    o.tid,
                    s.dev.unwrap_or(u32::MAX)
                );
                let (level, merged) = (s.level, s.merged);
                format!(
                    "{:?} {level:?} {merged} {who} {:?} {:?} {what}",
                    n.line, s.timestamp_ns, s.body
                )
            }
            other => format!("{other:?}"),
        }
    }

    /// Lines in every header shape the general reader knows, and bodies of every family.
    fn corpus() -> Vec<Vec<u8>> {
        let heads: [&[u8]; 14] = [
            b"node1:12:34 [0] NCCL INFO ",
            b"1712345678.123456 node1:12:34 [0] NCCL INFO ",
            b"1712345678.123456 node1:12:35 [0] NCCL INFO ",
            b"1712345678.5 node1:12:34 [0] NCCL INFO ",
            b"1712345678.123456  node1:12:34 [0] NCCL INFO ",
            b"1712345678.123456\tnode1:12:34 [0] NCCL INFO ",
            b"[1712345678.5] node1:12:34 [0] NCCL INFO ",
            b"3: node1:12:34 [0] NCCL INFO ",
            b"3: 1712345678.123456 node1:12:34 [0] NCCL INFO ",
            b"[1,0]<stdout>:node1:12:34 [0] NCCL INFO ",
            b"10.0.0.1:12:34 [1] NCCL INFO ",
            b"1712345678.1 10.0.0.1:12:34 [1] NCCL INFO ",
            b"node1:12:34 [0]  NCCL INFO ",
            b"other:1:2 [2] NCCL INFO node1:12:34 [7] NCCL INFO ",
        ];
        let bodies: [&[u8]; 10] = [
            b"AllReduce: opCount 1a sendbuff 0x7f00ac6f4000 recvbuff 0x7f00ac6f4000 count 2097152 datatype 9 op 0 root 0 comm 0x553898189c70 [nranks=4] stream 0x55ccf4d8bec0",
            b"AllReduce: 4194304 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}",
            b"262144 Bytes -> Algo 1 proto 2 time 54.707825",
            b"AllReduce: 4 Bytes -> Algo RING proto LL time NCCL",
            b"Send: opCount 0 sendbuff (nil) recvbuff 0x7c29 count 7 datatype 9 op 0 root 1 comm 0x5 [nranks=2] stream 0x5 x:1:2 [0] NCCL INFO Recv: opCount 1",
            b"comm 0x554977c06080 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 commId 0xe3ae05a0af139605 - Init COMPLETE",
            b"Channel 00/02 :    0   1   2   3",
            b"NCCL version 2.27.5+cuda12.2",
            b"Bootstrap : Using eth0:10.0.0.10<0> NCCL INFO x",
            b"=== System : maxBw 150.0 totalBw 450.0 ===",
        ];
        let mut out = Vec::new();
        for h in heads {
            for b in bodies {
                out.push([h, b].concat());
            }
        }
        out
    }

    /// Every line the fast path accepts, after learning from any other line, is read exactly
    /// as the general reader reads it; and the common shapes are accepted.
    #[test]
    fn fast_reads_what_the_general_reader_reads() {
        let lines = corpus();
        let mut accepted = 0;
        for teacher in &lines {
            let mut fast = FastHeads::default();
            if let Some(s) = split_line(teacher) {
                fast.learn(teacher, &s);
            }
            for l in &lines {
                if let Some(r) = fast.read(l, &mut Repeats::default()) {
                    accepted += 1;
                    assert_eq!(
                        general_form(r),
                        general_form(read_line_general(l)),
                        "{} after learning {}",
                        String::from_utf8_lossy(l),
                        String::from_utf8_lossy(teacher)
                    );
                }
            }
        }
        assert!(accepted > 200, "{accepted}");
        // The shapes of a big log are read fast once their head is known.
        let mut fast = FastHeads::default();
        let first = b"1712345678.123456 node1:12:34 [0] NCCL INFO NCCL version 2.27.5+cuda12.2";
        fast.learn(first, &split_line(first).unwrap());
        for l in &lines[10..14] {
            assert!(
                fast.read(l, &mut Repeats::default()).is_some(),
                "{}",
                String::from_utf8_lossy(l)
            );
        }
    }

    /// The remembered timestamp reads every line as `epoch_lead` does, whatever came before:
    /// repeats, the same second, other seconds, other shapes, garbage.
    #[test]
    fn remembered_stamps_read_as_epoch_lead() {
        let lines: [&[u8]; 12] = [
            b"1712345678.123456 a",
            b"1712345678.123456 b",
            b"1712345678.999999 c",
            b"1712345679.000001 d",
            b"1712345679.00000x e",
            b"171234567.1234567 f",
            b"171234567.1999999 g",
            b"1712345679.0000011 h",
            b"\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0 i",
            b"9999999999.999999 j",
            b"0000000000.000000 k",
            b"1712345678.123456",
        ];
        for a in lines {
            for b in lines {
                let mut st = Stamp::default();
                for l in [a, b, a, b, b] {
                    assert_eq!(
                        st.lead(l),
                        prefix::epoch_lead(l),
                        "{} after {}",
                        String::from_utf8_lossy(l),
                        String::from_utf8_lossy(a)
                    );
                }
            }
        }
    }

    /// Cuts and one-byte changes of real-shaped lines, fast against general.
    #[test]
    fn fast_agrees_on_mutations() {
        let base: [&[u8]; 3] = [
            b"1712345678.123456 node1:12:34 [0] NCCL INFO AllReduce: opCount 1a sendbuff 0x7f recvbuff 0x7f count 2 datatype 9 op 0 root 0 comm 0x55 [nranks=4] stream 0x55",
            b"1712345678.123456 node1:12:34 [0] NCCL INFO AllReduce: 4194304 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}",
            b"node1:12:34 [3] NCCL INFO comm 0x5 rank 0 nranks 4 cudaDev 0 busId 18000 - Init COMPLETE",
        ];
        let subs = [b' ', b'\t', b'0', b'9', b'.', b':', b'[', b']', b'N', b'x'];
        let mut accepted = 0;
        for teacher in base {
            let mut fast = FastHeads::default();
            fast.learn(teacher, &split_line(teacher).unwrap());
            for line in base {
                let mut variants: Vec<Vec<u8>> =
                    (1..=line.len()).map(|n| line[..n].to_vec()).collect();
                for i in 0..line.len() {
                    for s in subs {
                        let mut v = line.to_vec();
                        v[i] = s;
                        variants.push(v.clone());
                        v.insert(i, s);
                        variants.push(v);
                    }
                    let mut v = line.to_vec();
                    v.remove(i);
                    variants.push(v);
                }
                for v in &variants {
                    let v = v.trim_ascii_end();
                    if v.is_empty() {
                        continue;
                    }
                    if let Some(r) = fast.read(v, &mut Repeats::default()) {
                        accepted += 1;
                        assert_eq!(
                            general_form(r),
                            general_form(read_line_general(v)),
                            "{}",
                            String::from_utf8_lossy(v)
                        );
                    }
                }
            }
        }
        assert!(accepted > 1000, "{accepted}");
    }
}
