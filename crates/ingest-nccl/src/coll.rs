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
}

const TRUNCATED: &str = "truncated per-collective line (missing fields)";

/// True when the body has the shape `<Name>: opCount `.
pub(crate) fn looks_like(body: &[u8]) -> bool {
    op_name(body).is_some()
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

/// Splits `<key><value>` off the front of `r`: the value runs to the next space (or the end).
fn field<'a>(r: &mut &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let rest = r.strip_prefix(key)?;
    let end = rest.iter().position(|c| *c == b' ').unwrap_or(rest.len());
    let (val, after) = rest.split_at(end);
    *r = after.strip_prefix(b" ").unwrap_or(after);
    Some(val)
}

/// The line exactly as NCCL prints it (fields in order, single spaces, nothing after `stream`):
/// parsed front to back without the key lookup. `None` sends the line to the general parser,
/// which gives the same result for every line this accepts (and names the error otherwise).
fn canonical<'a>(name: &'a [u8], rest: &'a [u8]) -> Option<Coll<'a>> {
    let mut r = rest;
    let op_count = scan::hex_u64(field(&mut r, b"opCount ")?)?;
    let sendbuff = scan::ptr(field(&mut r, b"sendbuff ")?)?;
    let recvbuff = scan::ptr(field(&mut r, b"recvbuff ")?)?;
    let count = scan::dec_u64(field(&mut r, b"count ")?)?;
    let datatype = scan::dec_u32(field(&mut r, b"datatype ")?)?;
    let red_op = scan::dec_u32(field(&mut r, b"op ")?)?;
    let root = scan::dec_i64(field(&mut r, b"root ")?)?;
    let comm = scan::ptr(field(&mut r, b"comm ")?)?;
    let nranks = scan::dec_u32(field(&mut r, b"[nranks=")?.strip_suffix(b"]")?)?;
    let stream = scan::ptr(field(&mut r, b"stream ")?)?;
    if !r.is_empty() {
        return None;
    }
    Some(Coll {
        name,
        op_count,
        sendbuff,
        recvbuff,
        count,
        datatype,
        red_op,
        root,
        comm,
        nranks,
        stream,
        rccl_task: None,
        rccl_global_rank: None,
    })
}

/// Parses a body already known to look like a per-collective line. `Err` names the first
/// missing or malformed field (a truncated or garbled line).
pub(crate) fn parse(body: &[u8]) -> Result<Coll<'_>, &'static str> {
    let (name, rest) = op_name(body).ok_or("not a per-collective line")?;
    if let Some(c) = canonical(name, rest) {
        return Ok(c);
    }
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
                val.and_then(scan::ptr).ok_or("bad acc")?;
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
}
