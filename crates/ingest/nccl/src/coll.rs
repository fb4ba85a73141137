//! Per-collective lines (`src/enqueue.cc`, stable from NCCL 2.4 to 2.30), the body after `NCCL INFO `:
//! ```text
//! AllReduce: opCount 1a sendbuff 0x7fd9f7780000 recvbuff 0x7fd9f7780000 count 131072 datatype 6 op 0 root 0 comm 0x447b8890 [nranks=4] stream 0x32dc6760
//! Send: opCount 0 sendbuff (nil) recvbuff 0x7c29d4000000 count 7077888 datatype 9 op 0 root 1 comm 0x566f01ecaf80 [nranks=2] stream 0x566eff4ffb70
//! AllReduce: opCount 0 sendbuff 0x79.. recvbuff 0x79.. acc (nil) count 1 datatype 7 op 0 root 0 comm 0x2bc1f840 [nranks=2] stream (nil) task 0 globalrank 0   (RCCL)
//! ```
//! `opCount` is hex without `0x`; null pointers print as `(nil)`; Send/Recv put the peer in `root`.
//! Any `<Name>: opCount ` is taken as a per-collective line, so newer operations are recognised; a
//! name this build does not know is reported, not guessed.

use crate::scan;

/// Fields of one per-collective line, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Coll<'a> {
    pub name: &'a [u8],
    pub op_count: u64,
    pub sendbuff: u64,
    pub recvbuff: u64,
    pub count: u64,
    pub datatype: u32,
    pub red_op: u32,
    pub root: i64,
    pub comm: u64,
    pub nranks: u32,
    pub stream: u64,
    pub rccl_task: Option<u64>,
    pub rccl_global_rank: Option<u32>,
    pub rccl_acc: Option<u64>,
}

/// The numbers of a per-collective line (what [`Coll`] holds besides the name and RCCL's
/// fields): what the fast path hands over, a few dozen bytes a line.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Values {
    pub op_count: u64,
    pub sendbuff: u64,
    pub recvbuff: u64,
    pub count: u64,
    pub root: i64,
    pub comm: u64,
    pub stream: u64,
    pub datatype: u32,
    pub red_op: u32,
    pub nranks: u32,
}

impl Values {
    /// The [`Coll`] of these numbers under operation name `name` (no RCCL fields).
    fn coll(self, name: &[u8]) -> Coll<'_> {
        Coll {
            name,
            op_count: self.op_count,
            sendbuff: self.sendbuff,
            recvbuff: self.recvbuff,
            count: self.count,
            datatype: self.datatype,
            red_op: self.red_op,
            root: self.root,
            comm: self.comm,
            nranks: self.nranks,
            stream: self.stream,
            rccl_task: None,
            rccl_global_rank: None,
            rccl_acc: None,
        }
    }
}

impl Coll<'_> {
    pub(crate) fn values(&self) -> Values {
        Values {
            op_count: self.op_count,
            sendbuff: self.sendbuff,
            recvbuff: self.recvbuff,
            count: self.count,
            root: self.root,
            comm: self.comm,
            stream: self.stream,
            datatype: self.datatype,
            red_op: self.red_op,
            nranks: self.nranks,
        }
    }
}

const TRUNCATED: &str = "truncated per-collective line (missing fields)";

/// True when the body has the shape `<Name>: opCount `.
pub(crate) fn looks_like(body: &[u8]) -> bool {
    op_name(body).is_some()
}

/// Parses a body of the shape [`looks_like`] accepts; `None` for any other body (the shape is
/// checked once). `Err` names the first missing or malformed field (a truncated or garbled
/// line).
pub(crate) fn parse_if(body: &[u8]) -> Option<Result<Coll<'_>, &'static str>> {
    let (name, rest) = op_name(body)?;
    Some(match canonical(name, rest) {
        Some(c) => Ok(c),
        None => general(name, rest),
    })
}

fn op_name(body: &[u8]) -> Option<(&[u8], &[u8])> {
    // Stop at the first non-alphanumeric byte: most bodies fail here within one word.
    let colon = body.iter().position(|c| !c.is_ascii_alphanumeric())?;
    if colon == 0 || body.get(colon) != Some(&b':') {
        return None;
    }
    let name = body.get(..colon)?;
    let rest = body.get(colon + 1..)?.trim_ascii_start();
    rest.starts_with(b"opCount ").then_some((name, rest))
}

/// Strips the literal `key` off the front of `r`. A fixed-size key compiles to a couple of
/// integer compares instead of a `memcmp` call (this runs ten times per operation line).
#[inline(always)]
fn lit<const N: usize>(r: &mut &[u8], key: &[u8; N]) -> Option<()> {
    let (head, rest) = r.split_first_chunk::<N>()?;
    if head != key {
        return None;
    }
    *r = rest;
    Some(())
}

/// After a value of `n` bytes: the value must end the text or be followed by a space, which is
/// consumed (the field splitter's rule: a value runs to the next space).
#[inline(always)]
fn end_value(r: &mut &[u8], n: usize) -> Option<()> {
    match r.get(n) {
        None => *r = &[],
        Some(b' ') => *r = r.get(n + 1..)?,
        Some(_) => return None,
    }
    Some(())
}

/// A `scan::hex_u64` value read in the same pass that finds its end (eight digits at a time).
#[inline(always)]
fn hex_value(r: &mut &[u8]) -> Option<u64> {
    if let Some(rest) = r.strip_prefix(b"0x").or_else(|| r.strip_prefix(b"0X")) {
        *r = rest;
    }
    let (n, v) = scan::hex_run(r);
    if n == 0 || n > 16 {
        return None;
    }
    end_value(r, n)?;
    Some(v)
}

/// A `scan::ptr` value: `(nil)` or hex.
#[inline(always)]
fn ptr_value(r: &mut &[u8]) -> Option<u64> {
    if r.starts_with(b"(nil)") {
        end_value(r, 5)?;
        return Some(0);
    }
    hex_value(r)
}

/// The decimal digits at the front of `b` (at most 21: more can never parse).
#[inline(always)]
fn digits(b: &[u8]) -> usize {
    b.iter().take(21).take_while(|c| c.is_ascii_digit()).count()
}

/// The decimal number at the front of `b` and its length, as `scan::dec_u64` reads the digit
/// run: eight digits at a time up to 16 (every count and pointer NCCL prints), else one by one.
#[inline(always)]
fn dec_front(b: &[u8]) -> Option<(usize, u64)> {
    match scan::dec_run16(b) {
        Some((0, _)) => None,
        Some(nv) => Some(nv),
        None => {
            let n = digits(b);
            Some((n, scan::dec_u64(b.get(..n)?)?))
        }
    }
}

#[inline(always)]
fn dec_value(r: &mut &[u8]) -> Option<u64> {
    let (n, v) = dec_front(r)?;
    end_value(r, n)?;
    Some(v)
}

#[inline(always)]
fn dec_u32_value(r: &mut &[u8]) -> Option<u32> {
    u32::try_from(dec_value(r)?).ok()
}

#[inline(always)]
fn dec_i64_value(r: &mut &[u8]) -> Option<i64> {
    let neg = r.first() == Some(&b'-');
    let sign = usize::from(neg);
    let (n, v) = dec_front(r.get(sign..)?)?;
    let v = i64::try_from(v).ok()?;
    end_value(r, sign + n)?;
    Some(if neg { -v } else { v })
}

/// The line exactly as NCCL prints it (fields in order, single spaces, nothing after `stream`):
/// parsed front to back in one pass, without the key lookup. `None` sends the line to the
/// general parser, which gives the same result for every line this accepts (and names the
/// error otherwise). Each value is read as the general parser reads the text up to the next
/// space; a value followed by anything else is refused.
fn canonical<'a>(name: &'a [u8], rest: &'a [u8]) -> Option<Coll<'a>> {
    canonical_values(rest).map(|v| v.coll(name))
}

/// The numbers of a [`canonical`] line's text after `Name: `, read in full (no remembered tail).
pub(crate) fn canonical_values(rest: &[u8]) -> Option<Values> {
    let mut v = Values::default();
    let at = canonical_head_into(rest, &mut v)?;
    canonical_tail(rest.get(at..)?)?.fill(&mut v);
    Some(v)
}

/// What repeats from call to call of one site: `datatype … op … root … comm … [nranks=…]
/// stream …` to the end of the body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tail {
    datatype: u32,
    red_op: u32,
    root: i64,
    comm: u64,
    nranks: u32,
    stream: u64,
}

/// The part of a [`canonical`] line that changes from call to call (`opCount … sendbuff …
/// recvbuff … count … `), written into `v`'s first four fields (the others are left as they
/// are); where the rest starts (after `count`'s value and its space). In place: the fast path
/// reads into the buffer that carries the line to the applying thread, and a copy through a
/// returned value stalled on the just-written bytes.
#[inline]
pub(crate) fn canonical_head_into(rest: &[u8], v: &mut Values) -> Option<usize> {
    let mut r = rest;
    lit(&mut r, b"opCount ")?;
    let op_count = hex_value(&mut r)?;
    lit(&mut r, b"sendbuff ")?;
    let send_at = r;
    let sendbuff = ptr_value(&mut r)?;
    lit(&mut r, b"recvbuff ")?;
    // In place (the usual AllReduce): the same text as `sendbuff`'s, the same value.
    let send_text = send_at.get(..(send_at.len() - r.len()).checked_sub(10)?)?;
    let recvbuff = match r.get(..send_text.len() + 1) {
        Some(t) if t.last() == Some(&b' ') && scan::same(&t[..send_text.len()], send_text) => {
            r = &r[send_text.len() + 1..];
            sendbuff
        }
        _ => ptr_value(&mut r)?,
    };
    lit(&mut r, b"count ")?;
    let count = dec_value(&mut r)?;
    v.op_count = op_count;
    v.sendbuff = sendbuff;
    v.recvbuff = recvbuff;
    v.count = count;
    Some(rest.len() - r.len())
}

/// The rest of a [`canonical`] line, from `datatype` to the end of the body.
pub(crate) fn canonical_tail(tail: &[u8]) -> Option<Tail> {
    let mut r = tail;
    lit(&mut r, b"datatype ")?;
    let datatype = dec_u32_value(&mut r)?;
    lit(&mut r, b"op ")?;
    let red_op = dec_u32_value(&mut r)?;
    lit(&mut r, b"root ")?;
    let root = dec_i64_value(&mut r)?;
    lit(&mut r, b"comm ")?;
    let comm = ptr_value(&mut r)?;
    lit(&mut r, b"[nranks=")?;
    let (n, nranks) = dec_front(r)?;
    let nranks = u32::try_from(nranks).ok()?;
    if r.get(n) != Some(&b']') {
        return None;
    }
    r = r.get(n + 1..)?;
    end_value(&mut r, 0)?;
    lit(&mut r, b"stream ")?;
    let stream = ptr_value(&mut r)?;
    if !r.is_empty() {
        return None;
    }
    Some(Tail {
        datatype,
        red_op,
        root,
        comm,
        nranks,
        stream,
    })
}

impl Tail {
    /// Writes the tail's fields into `v` (its head fields are left as they are).
    #[inline]
    pub(crate) fn fill(&self, v: &mut Values) {
        v.root = self.root;
        v.comm = self.comm;
        v.stream = self.stream;
        v.datatype = self.datatype;
        v.red_op = self.red_op;
        v.nranks = self.nranks;
    }
}

#[cfg(test)]
fn parse(body: &[u8]) -> Result<Coll<'_>, &'static str> {
    parse_if(body).unwrap_or(Err("not a per-collective line"))
}

/// Any field order, extra (RCCL) fields, padding; names the first bad field.
fn general<'a>(name: &'a [u8], rest: &'a [u8]) -> Result<Coll<'a>, &'static str> {
    let mut c = Coll {
        name,
        op_count: 0,
        sendbuff: 0,
        recvbuff: 0,
        count: 0,
        datatype: 0,
        red_op: 0,
        root: 0,
        comm: 0,
        nranks: 0,
        stream: 0,
        rccl_task: None,
        rccl_global_rank: None,
        rccl_acc: None,
    };
    // Bit per required field, so a line cut short anywhere is caught.
    const ALL: u32 = (1 << 10) - 1;
    let mut seen = 0u32;
    let mut it = scan::tokens(rest);
    while let Some(key) = it.next() {
        if let Some(n) = key
            .strip_prefix(b"[nranks=")
            .and_then(|t| t.strip_suffix(b"]"))
        {
            c.nranks = scan::dec_u32(n).ok_or("bad nranks")?;
            seen |= 1 << 8;
            continue;
        }
        let val = it.next();
        let bit = match key {
            b"opCount" => {
                c.op_count = val.and_then(scan::hex_u64).ok_or("bad opCount")?;
                0
            }
            b"sendbuff" => {
                c.sendbuff = val.and_then(scan::ptr).ok_or("bad sendbuff")?;
                1
            }
            b"recvbuff" => {
                c.recvbuff = val.and_then(scan::ptr).ok_or("bad recvbuff")?;
                2
            }
            b"count" => {
                c.count = val.and_then(scan::dec_u64).ok_or("bad count")?;
                3
            }
            b"datatype" => {
                c.datatype = val.and_then(scan::dec_u32).ok_or("bad datatype")?;
                4
            }
            b"op" => {
                c.red_op = val.and_then(scan::dec_u32).ok_or("bad op")?;
                5
            }
            b"root" => {
                c.root = val.and_then(scan::dec_i64).ok_or("bad root")?;
                6
            }
            b"comm" => {
                c.comm = val.and_then(scan::ptr).ok_or("bad comm")?;
                7
            }
            b"stream" => {
                c.stream = val.and_then(scan::ptr).ok_or("bad stream")?;
                9
            }
            b"acc" => {
                c.rccl_acc = Some(val.and_then(scan::ptr).ok_or("bad acc")?);
                continue;
            }
            b"task" => {
                c.rccl_task = Some(val.and_then(scan::dec_u64).ok_or("bad task")?);
                continue;
            }
            b"globalrank" => {
                c.rccl_global_rank = Some(val.and_then(scan::dec_u32).ok_or("bad globalrank")?);
                continue;
            }
            // A cut-off last token (`[nra`) is a truncation; anything else mid-line is garbage.
            _ if val.is_none() => return Err(TRUNCATED),
            _ => return Err("unexpected field in per-collective line (garbled)"),
        };
        if seen & (1 << bit) != 0 {
            return Err("field repeated (garbled line)");
        }
        seen |= 1 << bit;
    }
    if seen != ALL {
        return Err(TRUNCATED);
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rccl_and_nil() {
        let b = b"AllReduce: opCount 1f sendbuff 0x10 recvbuff 0x20 acc (nil) count 1 datatype 7 op 0 root -1 comm 0x2bc1f840 [nranks=2] stream (nil) task 3 globalrank 1";
        let c = parse(b).unwrap();
        assert_eq!(
            (
                c.op_count,
                c.root,
                c.stream,
                c.rccl_task,
                c.rccl_global_rank
            ),
            (0x1f, -1, 0, Some(3), Some(1))
        );
        assert!(parse(b"AllReduce: opCount 1f sendbuff 0x10 recvbuff 0x20 count 1 datatype 7 op 0 root 0 comm 0x2b").is_err());
        assert!(!looks_like(b"Bootstrap : Using"));
        assert!(looks_like(b"AllToAll: opCount 3 sendbuff"));
    }

    /// The one-pass reader accepts only what the general one reads the same way: every line
    /// below, and every cut and one-byte change of it, gives `None` or the general result.
    #[test]
    fn canonical_agrees_with_general() {
        let lines: [&[u8]; 4] = [
            b"opCount 1a sendbuff 0x7fd9f7780000 recvbuff 0x7fd9f7780000 count 131072 datatype 6 op 0 root 0 comm 0x447b8890 [nranks=4] stream 0x32dc6760",
            b"opCount 0 sendbuff (nil) recvbuff 0X7c29d4000000 count 18446744073709551615 datatype 9 op 0 root -1 comm 0x566f01ecaf80 [nranks=2] stream (nil)",
            b"opCount ffffffffffffffff sendbuff 0x1 recvbuff 0x2 count 00 datatype 4294967295 op 4294967296 root -9223372036854775808 comm 0x3 [nranks=1] stream 0x4",
            b"opCount 0x10 sendbuff 0x1 recvbuff 0x2 count 1 datatype 1 op 1 root 9223372036854775807 comm 0x3 [nranks=4294967295] stream 0x4",
        ];
        let subs = [
            b' ', b'\t', b'0', b'9', b'a', b'f', b'g', b'x', b'-', b']', b'(', b'[', b'=',
        ];
        let mut accepted = 0;
        for line in lines {
            let mut variants: Vec<Vec<u8>> = (0..=line.len()).map(|n| line[..n].to_vec()).collect();
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
                if let Some(c) = canonical(b"AllReduce", v) {
                    accepted += 1;
                    assert_eq!(
                        Ok(c),
                        general(b"AllReduce", v),
                        "{}",
                        String::from_utf8_lossy(v)
                    );
                }
            }
        }
        assert!(accepted > 500, "{accepted}");
    }
}
