//! Tuning lines: which algorithm/protocol/channels NCCL chose for one operation.
//! ```text
//! 262144 Bytes -> Algo 1 proto 2 time 54.707825                                   (2.20–2.22, numeric)
//! AllGather: 37756928 Bytes -> Algo 1 proto 2 time 2860.208008                    (2.23, op in front)
//! AllReduce: 262144 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..7}            (2.24+, names)
//! AllReduce [Symmetric]: 4096 Bytes -> Kernel ncclSymDevKernel_... nchannels 2 nthreads 512   (2.27+)
//! ```
//! Algo numbers: 0 Tree, 1 Ring, 2 CollNetDirect, 3 CollNetChain, 4 NVLS, 5 NVLSTree, 6 PAT;
//! proto numbers: 0 LL, 1 LL128, 2 Simple. `Bytes` is NCCL's nBytes, which for AllGather and
//! ReduceScatter is the whole buffer (`count × size × nranks`); a `[Symmetric]` line prints
//! `count × size` for every operation ([`Facts::expects`]).

use crate::scan;
use model::{Algo, OpType, Proto};

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tuning<'a> {
    pub op_name: Option<&'a [u8]>,
    pub symmetric: bool,
    pub bytes: u64,
    pub algo: Option<Algo>,
    pub proto: Option<Proto>,
    pub nchannels: Option<u32>,
    pub kernel: Option<&'a [u8]>,
}

impl Tuning<'_> {
    pub fn op(&self) -> Option<OpType> {
        self.op_name.and_then(scan::op_type)
    }

    /// What an operation is matched against and given, without the borrowed text.
    pub(crate) fn facts(&self) -> Facts {
        Facts {
            op: self.op(),
            bytes: self.bytes,
            algo: self.algo,
            proto: self.proto,
            nchannels: self.nchannels,
            symmetric: self.symmetric,
        }
    }
}

/// What a tuning line tells about the operation it follows: the operation it names, if any,
/// its byte count (to find it), and the algorithm, protocol and channels (to give it).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Facts {
    pub op: Option<OpType>,
    pub bytes: u64,
    pub algo: Option<Algo>,
    pub proto: Option<Proto>,
    pub nchannels: Option<u32>,
    /// A 2.27+ `[Symmetric]` kernel line.
    pub symmetric: bool,
}

impl Facts {
    /// Whether this line's byte count is the one NCCL prints for an operation of type `op`,
    /// `msg_bytes` (`count × size`) and `nranks`: the whole buffer for AllGather and
    /// ReduceScatter, except on `[Symmetric]` lines.
    pub(crate) fn expects(&self, op: OpType, msg_bytes: u64, nranks: u32) -> bool {
        let whole = matches!(op, OpType::AllGather | OpType::ReduceScatter) && !self.symmetric;
        let want = if whole {
            msg_bytes.saturating_mul(u64::from(nranks))
        } else {
            msg_bytes
        };
        want == self.bytes
    }
}

/// Cheap gate first (a digit, or a word then `:`/` [`), so most lines skip the search.
pub(crate) fn looks_like(body: &[u8]) -> bool {
    arrow(body).is_some()
}

/// [`looks_like`] and, when it holds, the position of ` Bytes -> ` in `body` (for [`parse_at`]).
pub(crate) fn arrow(body: &[u8]) -> Option<usize> {
    let b = body.trim_ascii_start();
    let word = b
        .iter()
        .position(|c| !c.is_ascii_alphanumeric())
        .unwrap_or(b.len());
    let gate = b.first().is_some_and(u8::is_ascii_digit)
        || (word > 0 && matches!(b.get(word..word + 2), Some(b": ") | Some(b" [")));
    if !gate {
        return None;
    }
    // The first match in the trimmed text is the first in the body: a match starting in the
    // dropped spaces would need the text to start with `Bytes -> `, which fails the gate.
    let lead = body.len() - b.len();
    // Where the arrow is on NCCL's own lines, `N Bytes` or `Op: N Bytes`: no space before it
    // is followed by `B`, so a match there is the first one, without the search's set-up.
    let num_at = if b.first().is_some_and(u8::is_ascii_digit) {
        0
    } else if b.get(word..word + 2) == Some(b": ") {
        word + 2
    } else {
        usize::MAX
    };
    if let Some(num) = b.get(num_at..) {
        let n = num.iter().take_while(|c| c.is_ascii_digit()).count();
        if n > 0 && num.get(n..).is_some_and(|t| t.starts_with(b" Bytes -> ")) {
            return Some(lead + num_at + n);
        }
    }
    scan::FINDERS.bytes_arrow.find(b).map(|i| i + lead)
}

/// An algorithm's or protocol's name as NCCL prints them: upper-case letters, digits, `_`.
fn is_name(v: &[u8]) -> bool {
    v.first().is_some_and(u8::is_ascii_uppercase)
        && v.len() <= 32
        && v.iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
}

/// `channel{Lo..Hi}={0..7}` → 8.
fn channel_range(tok: &[u8]) -> Option<u32> {
    let v = tok.strip_prefix(b"channel{Lo..Hi}={")?.strip_suffix(b"}")?;
    let dots = scan::find(v, b"..")?;
    let lo = scan::dec_u32(v.get(..dots)?)?;
    let hi = scan::dec_u32(v.get(dots + 2..)?)?;
    hi.checked_sub(lo)?.checked_add(1)
}

/// `Algo::from_name` without its allocation: names are ASCII and at most 16 bytes, so anything
/// longer (or not UTF-8) cannot match.
fn algo_name(v: &[u8]) -> Option<Algo> {
    let mut buf = [0u8; 16];
    let up = upper(v, &mut buf)?;
    match Algo::ALL.iter().copied().find(|a| a.name() == up) {
        Some(a) => Some(a),
        None => Algo::from_name(up),
    }
}

/// `Proto::from_name` without its allocation.
fn proto_name(v: &[u8]) -> Option<Proto> {
    match v {
        b"SIMPLE" => Some(Proto::Simple),
        b"LL" => Some(Proto::LL),
        b"LL128" => Some(Proto::LL128),
        _ => {
            let mut buf = [0u8; 16];
            Proto::from_name(upper(v, &mut buf)?)
        }
    }
}

/// ASCII upper case of a short UTF-8 token, in `buf`.
fn upper<'b>(v: &[u8], buf: &'b mut [u8; 16]) -> Option<&'b str> {
    let dst = buf.get_mut(..v.len())?;
    dst.copy_from_slice(v);
    dst.make_ascii_uppercase();
    std::str::from_utf8(dst).ok()
}

/// The two tails almost every tuning line has, single-spaced, read without the token loop:
/// `Algo RING proto LL channel{Lo..Hi}={0..7}` (2.24+) and `Algo 1 proto 2 time 54.7` (2.20–2.23).
/// `None` for anything else (the token loop then reads it); what this accepts, the loop reads
/// the same way.
fn common_tail(tail: &[u8]) -> Option<(Algo, Proto, Option<u32>)> {
    let r = tail.strip_prefix(b"Algo ")?;
    // Short tokens: a plain loop beats a SIMD search's set-up.
    let sp = r.iter().position(|c| *c == b' ')?;
    let algo = match r.get(..sp)? {
        b"RING" => Algo::Ring,
        b"TREE" => Algo::Tree,
        b"NVLS" => Algo::Nvls,
        b"NVLS_TREE" => Algo::NvlsTree,
        b"COLLNET_DIRECT" => Algo::CollNetDirect,
        b"COLLNET_CHAIN" => Algo::CollNetChain,
        b"PAT" => Algo::Pat,
        &[d @ b'0'..=b'6'] => Algo::from_code(u32::from(d - b'0'))?,
        _ => return None,
    };
    let r = r.get(sp + 1..)?.strip_prefix(b"proto ")?;
    let sp = r.iter().position(|c| *c == b' ')?;
    let proto = match r.get(..sp)? {
        b"LL" => Proto::LL,
        b"LL128" => Proto::LL128,
        b"SIMPLE" => Proto::Simple,
        &[d @ b'0'..=b'2'] => Proto::from_code(u32::from(d - b'0'))?,
        _ => return None,
    };
    let r = r.get(sp + 1..)?;
    if let Some(v) = r.strip_prefix(b"time ") {
        // An ignored value: any single token (no space or tab inside, not empty).
        if v.is_empty() || v.iter().any(|c| *c == b' ' || *c == b'\t') {
            return None;
        }
        return Some((algo, proto, None));
    }
    Some((algo, proto, Some(channel_range_digits(r)?)))
}

/// [`channel_range`] for the exact `channel{Lo..Hi}={<digits>..<digits>}` (what NCCL prints),
/// read front to back; `None` for anything else.
fn channel_range_digits(tok: &[u8]) -> Option<u32> {
    let (head, v) = tok.split_first_chunk::<17>()?;
    if head != b"channel{Lo..Hi}={" {
        return None;
    }
    let digits = |b: &[u8]| b.iter().take(11).take_while(|c| c.is_ascii_digit()).count();
    let n = digits(v);
    let lo = scan::dec_u32(v.get(..n)?)?;
    let w = v.get(n..)?.strip_prefix(b"..")?;
    let m = digits(w);
    let hi = scan::dec_u32(w.get(..m)?)?;
    if w.get(m..)? != b"}" {
        return None;
    }
    hi.checked_sub(lo)?.checked_add(1)
}

#[cfg(test)]
pub(crate) fn parse(body: &[u8]) -> Result<Tuning<'_>, &'static str> {
    let arrow = scan::FINDERS
        .bytes_arrow
        .find(body)
        .ok_or("not a tuning line")?;
    parse_at(body, arrow)
}

/// A tuning line in the shape NCCL prints, from its number on: `rest` is the body after the
/// operation's `Name: ` (`name` given) or the whole body (`name` `None`, 2.20–2.22). The result
/// is what [`arrow`] and [`parse_at`] give for the same body, read front to back without the
/// searches; `None` for any other shape (read it the general way then).
pub(crate) fn parse_shaped<'a>(name: Option<&'a [u8]>, rest: &'a [u8]) -> Option<Tuning<'a>> {
    let (n, bytes) = scan::dec_run16(rest)?;
    let tail = rest.get(n..)?.strip_prefix(b" Bytes -> ")?;
    if n == 0 {
        return None;
    }
    let (algo, proto, nchannels) = common_tail(tail)?;
    Some(Tuning {
        op_name: name,
        symmetric: false,
        bytes,
        algo: Some(algo),
        proto: Some(proto),
        nchannels,
        kernel: None,
    })
}

/// Parses a tuning line whose ` Bytes -> ` is at `arrow` (from [`arrow`]).
pub(crate) fn parse_at(body: &[u8], arrow: usize) -> Result<Tuning<'_>, &'static str> {
    let head = body.get(..arrow).unwrap_or_default().trim_ascii_start();
    let tail = body.get(arrow + 10..).unwrap_or_default();
    // head: `N`, `Op: N` or `Op [Symmetric]: N`.
    let (op_part, num) = match head.iter().rposition(|c| *c == b' ') {
        Some(i) => (head.get(..i), head.get(i + 1..).unwrap_or_default()),
        None => (None, head),
    };
    let bytes = scan::dec_u64(num).ok_or("bad byte count in tuning line")?;
    let mut t = Tuning {
        op_name: None,
        symmetric: false,
        bytes,
        algo: None,
        proto: None,
        nchannels: None,
        kernel: None,
    };
    if let Some(p) = op_part {
        let p = p
            .strip_suffix(b":")
            .ok_or("garbled operation in tuning line")?;
        let (name, sym) = match p.strip_suffix(b" [Symmetric]") {
            Some(n) => (n, true),
            None => (p, false),
        };
        if name.is_empty() || !name.iter().all(|c| c.is_ascii_alphanumeric()) {
            return Err("garbled operation in tuning line");
        }
        t.op_name = Some(name);
        t.symmetric = sym;
    }
    if let Some((algo, proto, nchannels)) = common_tail(tail) {
        t.algo = Some(algo);
        t.proto = Some(proto);
        t.nchannels = nchannels;
        return Ok(t);
    }
    tokens_tail(t, tail)
}

/// The text after ` Bytes -> ` as `key value` tokens, in any order.
fn tokens_tail<'a>(mut t: Tuning<'a>, tail: &'a [u8]) -> Result<Tuning<'a>, &'static str> {
    let mut it = scan::tokens(tail);
    let mut any = false;
    while let Some(key) = it.next() {
        if let Some(n) = channel_range(key) {
            t.nchannels = Some(n);
            continue;
        }
        let val = it.next();
        match key {
            b"Algo" => {
                let v = val.ok_or("missing algorithm")?;
                t.algo = match scan::dec_u32(v) {
                    Some(code) => Algo::from_code(code),
                    None => algo_name(v),
                };
                // A name of NCCL's shape this build does not know (a newer algorithm) is still
                // a tuning line: its operation gets the channels, without an algorithm.
                if t.algo.is_none() && !is_name(v) {
                    return Err("unknown algorithm in tuning line");
                }
                any = true;
            }
            b"proto" => {
                let v = val.ok_or("missing protocol")?;
                t.proto = match scan::dec_u32(v) {
                    Some(code) => Proto::from_code(code),
                    None => proto_name(v),
                };
                if t.proto.is_none() && !is_name(v) {
                    return Err("unknown protocol in tuning line");
                }
            }
            b"Kernel" => {
                t.kernel = Some(val.ok_or("missing kernel name")?);
                any = true;
            }
            b"nchannels" => {
                t.nchannels = Some(val.and_then(scan::dec_u32).ok_or("bad nchannels")?);
            }
            // Known but unused fields.
            b"time" | b"nthreads" => {}
            _ => {}
        }
    }
    if !any {
        return Err("tuning line without algorithm or kernel");
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let t = parse(b"262144 Bytes -> Algo 0 proto 1 time 54.707825").unwrap();
        assert_eq!(
            (t.bytes, t.algo, t.proto, t.op_name),
            (262144, Some(Algo::Tree), Some(Proto::LL128), None)
        );
        let t = parse(b"AllGather: 37756928 Bytes -> Algo 1 proto 2 time 2860.2").unwrap();
        assert_eq!(
            (t.op(), t.algo, t.proto),
            (
                Some(OpType::AllGather),
                Some(Algo::Ring),
                Some(Proto::Simple)
            )
        );
        let t = parse(b"AllReduce: 4 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..7}").unwrap();
        assert_eq!(
            (t.algo, t.proto, t.nchannels),
            (Some(Algo::Tree), Some(Proto::LL), Some(8))
        );
        let t = parse(b"AllReduce [Symmetric]: 4096 Bytes -> Kernel ncclSymDevKernel_AllReduce_AGxLL_R_f32 nchannels 2 nthreads 512").unwrap();
        assert_eq!((t.symmetric, t.nchannels, t.algo), (true, Some(2), None));
        assert!(t.kernel.is_some());
        assert!(parse(b"12 Bytes -> Algo").is_err());
    }

    /// The front-to-back reader of NCCL's own shapes accepts only what the general one reads the
    /// same way, on every cut and one-byte change of typical bodies.
    #[test]
    fn shaped_agrees_with_general() {
        let bodies: [&[u8]; 4] = [
            b"AllReduce: 4194304 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}",
            b"AllGather: 37756928 Bytes -> Algo 1 proto 2 time 2860.208008",
            b"262144 Bytes -> Algo 1 proto 2 time 54.707825",
            b"Broadcast: 18446744073709551615 Bytes -> Algo TREE proto LL channel{Lo..Hi}={3..3}",
        ];
        let subs = [b' ', b'\t', b'0', b'9', b':', b'.', b'x', b'B', b'[', b'>'];
        let mut accepted = 0;
        for body in bodies {
            let mut variants: Vec<Vec<u8>> = (0..=body.len()).map(|n| body[..n].to_vec()).collect();
            for i in 0..body.len() {
                for s in subs {
                    let mut v = body.to_vec();
                    v[i] = s;
                    variants.push(v.clone());
                    v.insert(i, s);
                    variants.push(v);
                }
                let mut v = body.to_vec();
                v.remove(i);
                variants.push(v);
            }
            for v in &variants {
                let shaped = match v.iter().position(|c| !c.is_ascii_alphanumeric()) {
                    Some(w) if w > 0 && v.get(w..w + 2) == Some(b": ") => {
                        parse_shaped(Some(&v[..w]), &v[w + 2..])
                    }
                    _ => parse_shaped(None, v),
                };
                if let Some(t) = shaped {
                    accepted += 1;
                    let general = arrow(v).map(|a| parse_at(v, a));
                    assert_eq!(Some(Ok(t)), general, "{}", String::from_utf8_lossy(v));
                }
            }
        }
        assert!(accepted > 300, "{accepted}");
    }

    /// The fixed-shape tail reader accepts only what the token loop reads the same way.
    #[test]
    fn common_tail_agrees_with_tokens() {
        let tails: [&[u8]; 5] = [
            b"Algo RING proto LL channel{Lo..Hi}={0..7}",
            b"Algo COLLNET_DIRECT proto SIMPLE channel{Lo..Hi}={3..3}",
            b"Algo NVLS_TREE proto LL128 channel{Lo..Hi}={9..2}",
            b"Algo 1 proto 2 time 54.707825",
            b"Algo 6 proto 0 time x",
        ];
        let subs = [b' ', b'\t', b'0', b'7', b'9', b'.', b'}', b'R', b'r', b'x'];
        let blank = Tuning {
            op_name: None,
            symmetric: false,
            bytes: 0,
            algo: None,
            proto: None,
            nchannels: None,
            kernel: None,
        };
        let mut accepted = 0;
        for tail in tails {
            let mut variants: Vec<Vec<u8>> = (0..=tail.len()).map(|n| tail[..n].to_vec()).collect();
            for i in 0..tail.len() {
                for s in subs {
                    let mut v = tail.to_vec();
                    v[i] = s;
                    variants.push(v.clone());
                    v.insert(i, s);
                    variants.push(v);
                }
                let mut v = tail.to_vec();
                v.remove(i);
                variants.push(v);
            }
            for v in &variants {
                if let Some((algo, proto, nchannels)) = common_tail(v) {
                    accepted += 1;
                    let want = tokens_tail(blank, v);
                    let got = Tuning {
                        algo: Some(algo),
                        proto: Some(proto),
                        nchannels,
                        ..blank
                    };
                    assert_eq!(Ok(got), want, "{}", String::from_utf8_lossy(v));
                }
            }
        }
        assert!(accepted > 100, "{accepted}");
        // The arrow where NCCL puts it is the first one.
        for body in [
            &b"AllReduce: 4 Bytes -> Algo RING"[..],
            b"  12 Bytes -> Bytes -> ",
            b"Op: 1 2 Bytes -> x",
            b"Op [Symmetric]: 4096 Bytes -> Kernel k",
            b"Op:  4 Bytes -> x",
        ] {
            let b = body.trim_ascii_start();
            let lead = body.len() - b.len();
            let want = scan::FINDERS.bytes_arrow.find(b).map(|i| i + lead);
            assert_eq!(arrow(body), want, "{}", String::from_utf8_lossy(body));
        }
    }
}
