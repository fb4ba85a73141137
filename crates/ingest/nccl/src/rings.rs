//! Channel and ring lines printed while a communicator is set up, body after `NCCL INFO `:
//! ```text
//! Channel 00/02 :    0   1   2   3                    (ring order of channel 0; 2 channels)
//! Channel 00 :    0   1                                (2.4: the same without the channel count)
//! Ring 00 : 1 -> 0 -> 1                                (prev -> me -> next, older versions)
//! Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1          (per channel: down/down/down->me->up)
//! Trees [0] 1/-1/-1->0->-1|-1->0->1/-1/-1 [1] ...      (split trees: the part after `|` is the second tree)
//! Tree 0 : -1 -> 0 -> 1/-1/-1                          (older: up -> me -> down/down/down)
//! 2 coll channels, 2 p2p channels, 2 p2p channels per peer
//! 16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels per peer
//! comm:0x2bc1f840, nRanks:2, nNodes:1, coll channels:2 collnet channels:2, nvls channels:0, p2p channels:2, ...  (RCCL)
//! Channel 00/0 : 5[2c000] -> 0[26000] [receive] via NET/IB/0/GDRDMA   (a connection: the transport
//! Channel 00 : 0[a000] -> 1[c000] via P2P/IPC/read                     to a ring or tree neighbour;
//! Ring 00 : 155[3d000] -> 157[b2000] via P2P/IPC                       2.4 and 2.5 shapes)
//! ```
//! These lines do not name their communicator; the parser ties them to one by the thread that
//! prints them (see `parser.rs`).

use crate::scan;
use smol_str::SmolStr;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RingLine {
    /// `Channel cc/nn : r r r` (`nchannels` is `None` for 2.4's `Channel cc : r r r`)
    Order {
        channel: u32,
        nchannels: Option<u32>,
        order: Vec<u32>,
    },
    /// `Trees [c] d/d/d->me->up ...` (one line, every channel) or `Tree c : up -> me -> d/d/d`
    Trees(Vec<TreeLinks>),
    /// `Channel cc/nn : a[bus] -> b[bus] [send] via NET/IB/0/GDRDMA`
    Connection(Connection),
    /// `Ring cc : prev -> me -> next`
    Neighbors {
        channel: u32,
        prev: i64,
        rank: i64,
        next: i64,
    },
    /// `N coll channels, …` / RCCL `comm:0x…, nRanks:…, coll channels:N …`
    Summary {
        comm: Option<u64>,
        coll: Option<u32>,
        nvls: Option<u32>,
        p2p: Option<u32>,
    },
}

/// One channel's tree around the printing rank: its parent and children (`-1`: none).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeLinks {
    pub channel: u32,
    pub up: i64,
    pub rank: i64,
    /// The children as printed (NCCL prints three slots, `-1` where empty).
    pub down: Vec<i64>,
}

/// One channel's connection to a peer and the transport NCCL chose for it. Its texts are short
/// and inline (`SmolStr`): a run prints thousands of these lines.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub channel: u32,
    pub from_rank: u32,
    /// What NCCL prints in brackets after the rank: the GPU's bus id (or its index).
    pub from_gpu: SmolStr,
    pub to_rank: u32,
    pub to_gpu: SmolStr,
    /// `[send]` / `[receive]` for network connections, `None` otherwise.
    pub direction: Option<SmolStr>,
    /// The transport as printed after `via` (`P2P/IPC/read`, `NET/IB/0/GDRDMA/Shared`, `SHM`).
    pub via: SmolStr,
}

fn small(b: &[u8]) -> SmolStr {
    SmolStr::new(String::from_utf8_lossy(b))
}

impl RingLine {
    /// A summary that says nothing (what is left where a line was taken from).
    pub(crate) const EMPTY: RingLine = RingLine::Summary {
        comm: None,
        coll: None,
        nvls: None,
        p2p: None,
    };
}

/// The line's channel or ring facts; `None` for any other line, `Err` for a ring-order line
/// whose ranks are damaged (cut short or glued to other text).
pub(crate) fn parse(body: &[u8]) -> Option<Result<RingLine, &'static str>> {
    let b = body.trim_ascii();
    if let Some(c) = connection(b) {
        return Some(Ok(RingLine::Connection(c)));
    }
    if let Some(rest) = b.strip_prefix(b"Channel ") {
        return channel_order(rest);
    }
    if let Some(rest) = b.strip_prefix(b"Trees ") {
        return Some(trees(rest).map(RingLine::Trees).ok_or("garbled tree line"));
    }
    if let Some(rest) = b.strip_prefix(b"Tree ") {
        return old_tree(rest).map(|t| Ok(RingLine::Trees(vec![t])));
    }
    other(b).map(Ok)
}

/// `cc/nn : r r r` or `cc : r r r` after `Channel `. Connection lines (`cc/nn : 5[2c000] -> 0[26000]
/// via ...`) are `None`; a line of ranks only, one of them damaged (`3xx`), is `Err`.
fn channel_order(rest: &[u8]) -> Option<Result<RingLine, &'static str>> {
    let colon = scan::find(rest, b" : ")?;
    let head = rest.get(..colon)?;
    let (channel, nchannels) = match memchr::memchr(b'/', head) {
        Some(slash) => (
            scan::dec_u32(head.get(..slash)?)?,
            Some(scan::dec_u32(head.get(slash + 1..)?)?),
        ),
        None => (scan::dec_u32(head)?, None),
    };
    let tail = rest.get(colon + 3..)?;
    let mut order = Vec::new();
    let mut damaged = false;
    for t in scan::tokens(tail) {
        match scan::dec_u32(t) {
            Some(r) => order.push(r),
            // A connection line's peers (`5[2c000]`, `->`, `via`) are not damage.
            None if t.first().is_some_and(u8::is_ascii_digit)
                && !t.contains(&b'[')
                && !scan::contains(tail, b"->") =>
            {
                damaged = true
            }
            None => return None,
        }
    }
    if damaged {
        return Some(Err("garbled ring order line"));
    }
    if order.is_empty() {
        return None;
    }
    Some(Ok(RingLine::Order {
        channel,
        nchannels,
        order,
    }))
}

/// `Channel cc[/nn] : a[gpu] -> b[gpu] [dir] via T` or 2.5's `Ring cc : a[gpu] -> b[gpu] via T`.
fn connection(b: &[u8]) -> Option<Connection> {
    let rest = b
        .strip_prefix(b"Channel ")
        .or_else(|| b.strip_prefix(b"Ring "))?;
    let colon = scan::find(rest, b" : ")?;
    let head = rest.get(..colon)?;
    let channel = scan::dec_u32(head.split(|c| *c == b'/').next()?)?;
    let tail = rest.get(colon + 3..)?;
    let via_at = scan::find(tail, b" via ")?;
    let via = tail.get(via_at + 5..)?.trim_ascii();
    let mut t = scan::tokens(tail.get(..via_at)?);
    let peer = |tok: &[u8]| -> Option<(u32, SmolStr)> {
        let open = memchr::memchr(b'[', tok)?;
        let gpu = tok.get(open + 1..)?.strip_suffix(b"]")?;
        Some((scan::dec_u32(tok.get(..open)?)?, small(gpu)))
    };
    let (from_rank, from_gpu) = peer(t.next()?)?;
    if t.next()? != b"->" {
        return None;
    }
    let (to_rank, to_gpu) = peer(t.next()?)?;
    let direction = match t.next() {
        Some(d) => Some(small(d.strip_prefix(b"[")?.strip_suffix(b"]")?)),
        None => None,
    };
    if t.next().is_some() || via.is_empty() {
        return None;
    }
    Some(Connection {
        channel,
        from_rank,
        from_gpu,
        to_rank,
        to_gpu,
        direction,
        via: small(via),
    })
}

/// `[0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1|...` after `Trees `.
fn trees(rest: &[u8]) -> Option<Vec<TreeLinks>> {
    let mut out = Vec::new();
    let mut it = scan::tokens(rest);
    while let Some(tok) = it.next() {
        let channel = scan::dec_u32(tok.strip_prefix(b"[")?.strip_suffix(b"]")?)?;
        let links = it.next()?;
        // A split tree prints its second tree after `|`: the first describes the channel.
        let first = links.split(|c| *c == b'|').next()?;
        let mut parts = first
            .split(|c| *c == b'>')
            .map(|p| p.strip_suffix(b"-").unwrap_or(p));
        let (Some(down), Some(me), Some(up), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        out.push(TreeLinks::read(channel, up, me, down)?);
    }
    (!out.is_empty()).then_some(out)
}

/// `c : up -> me -> d/d/d` after `Tree ` (older versions).
fn old_tree(rest: &[u8]) -> Option<TreeLinks> {
    let c = chain(rest)?;
    TreeLinks::read(c.channel, c.parts[0], c.parts[1], c.parts[2])
}

/// A `Ring` or old `Tree` line's channel and its three parts (`c : a -> b -> c`).
struct Chain<'a> {
    channel: u32,
    parts: [&'a [u8]; 3],
}

/// `c : a -> b -> c`, the shape of `Ring` and old `Tree` lines.
fn chain(rest: &[u8]) -> Option<Chain<'_>> {
    let mut t = scan::tokens(rest);
    let channel = scan::dec_u32(t.next()?)?;
    let (Some(b":"), Some(a), Some(b"->"), Some(b), Some(b"->"), Some(c), None) = (
        t.next(),
        t.next(),
        t.next(),
        t.next(),
        t.next(),
        t.next(),
        t.next(),
    ) else {
        return None;
    };
    Some(Chain {
        channel,
        parts: [a, b, c],
    })
}

impl TreeLinks {
    /// The tree of `channel` from its printed parent, rank and `d/d/d` children.
    fn read(channel: u32, up: &[u8], me: &[u8], down: &[u8]) -> Option<TreeLinks> {
        Some(TreeLinks {
            channel,
            up: scan::dec_i64(up)?,
            rank: scan::dec_i64(me)?,
            down: down
                .split(|c| *c == b'/')
                .map(scan::dec_i64)
                .collect::<Option<Vec<_>>>()?,
        })
    }
}

/// `Ring cc : prev -> me -> next` and the channel-count summaries.
fn other(b: &[u8]) -> Option<RingLine> {
    if let Some(rest) = b.strip_prefix(b"Ring ") {
        let Chain {
            channel,
            parts: [p, m, n],
        } = chain(rest)?;
        return Some(RingLine::Neighbors {
            channel,
            prev: scan::dec_i64(p)?,
            rank: scan::dec_i64(m)?,
            next: scan::dec_i64(n)?,
        });
    }
    // `16 coll channels, ...` or RCCL's `comm:0x..., ... coll channels:2`.
    let gate = b.first().is_some_and(u8::is_ascii_digit) || b.starts_with(b"comm:");
    if gate && scan::FINDERS.coll_channels.find(b).is_some() {
        let mut s = RingLine::Summary {
            comm: None,
            coll: None,
            nvls: None,
            p2p: None,
        };
        if let RingLine::Summary {
            comm,
            coll,
            nvls,
            p2p,
        } = &mut s
        {
            for part in b.split(|c| *c == b',') {
                let part = part.trim_ascii();
                if let Some(v) = part.strip_prefix(b"comm:") {
                    *comm = scan::ptr(v);
                    continue;
                }
                // NCCL: `16 coll channels`; RCCL: `coll channels:2 collnet channels:2`.
                let mut toks = scan::tokens(part);
                let first = toks.next().unwrap_or_default();
                let (num, name) = match scan::dec_u32(first) {
                    Some(n) => (Some(n), toks.next().unwrap_or_default()),
                    None => {
                        let v = part
                            .iter()
                            .position(|c| *c == b':')
                            .and_then(|i| part.get(i + 1..));
                        (
                            v.and_then(|v| {
                                scan::dec_u32(scan::tokens(v).next().unwrap_or_default())
                            }),
                            first,
                        )
                    }
                };
                let per_peer = scan::contains(part, b"per peer");
                match name {
                    b"coll" => *coll = num.or(*coll),
                    b"nvls" => *nvls = num.or(*nvls),
                    b"p2p" if !per_peer => *p2p = num.or(*p2p),
                    _ => {}
                }
            }
        }
        return Some(s);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let parse = |b: &[u8]| super::parse(b).map(|r| r.unwrap());
        assert_eq!(
            parse(b"Channel 01/02 :    0   3   2   1"),
            Some(RingLine::Order {
                channel: 1,
                nchannels: Some(2),
                order: vec![0, 3, 2, 1]
            })
        );
        assert_eq!(
            parse(b"Channel 00 :    0   1"),
            Some(RingLine::Order {
                channel: 0,
                nchannels: None,
                order: vec![0, 1]
            })
        );
        assert!(matches!(
            parse(b"Channel 00 : 0[a000] -> 1[c000] via P2P/IPC/read"),
            Some(RingLine::Connection(Connection {
                channel: 0,
                from_rank: 0,
                to_rank: 1,
                ..
            }))
        ));
        assert_eq!(
            parse(b"Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1|1->0->-1/-1/-1"),
            Some(RingLine::Trees(vec![
                TreeLinks {
                    channel: 0,
                    up: -1,
                    rank: 0,
                    down: vec![1, -1, -1]
                },
                TreeLinks {
                    channel: 1,
                    up: 1,
                    rank: 0,
                    down: vec![-1, -1, -1]
                },
            ]))
        );
        assert_eq!(
            parse(b"Tree 0 : -1 -> 0 -> 1/-1/-1"),
            Some(RingLine::Trees(vec![TreeLinks {
                channel: 0,
                up: -1,
                rank: 0,
                down: vec![1, -1, -1]
            }]))
        );
        assert_eq!(
            parse(b"Channel 00/0 : 5[2c000] -> 0[26000] [receive] via NET/IB/0/GDRDMA"),
            Some(RingLine::Connection(Connection {
                channel: 0,
                from_rank: 5,
                from_gpu: "2c000".into(),
                to_rank: 0,
                to_gpu: "26000".into(),
                direction: Some("receive".into()),
                via: "NET/IB/0/GDRDMA".into(),
            }))
        );
        assert_eq!(
            parse(b"Channel 02/1 : 0[0] -> 1[1] via P2P/direct pointer"),
            Some(RingLine::Connection(Connection {
                channel: 2,
                from_rank: 0,
                from_gpu: "0".into(),
                to_rank: 1,
                to_gpu: "1".into(),
                direction: None,
                via: "P2P/direct pointer".into(),
            }))
        );
        assert_eq!(
            parse(b"Ring 00 : 6 -> 7 -> 0"),
            Some(RingLine::Neighbors {
                channel: 0,
                prev: 6,
                rank: 7,
                next: 0
            })
        );
        assert!(matches!(
            parse(b"Ring 00 : 155[3d000] -> 157[b2000] via P2P/IPC"),
            Some(RingLine::Connection(Connection {
                channel: 0,
                from_rank: 155,
                to_rank: 157,
                ..
            }))
        ));
        assert_eq!(
            parse(b"16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels per peer"),
            Some(RingLine::Summary { comm: None, coll: Some(16), nvls: Some(0), p2p: Some(16) })
        );
        assert_eq!(
            parse(b"comm:0x2bc1f840, nRanks:2, nNodes:1, coll channels:2 collnet channels:2, nvls channels:0, p2p channels:2, p2p channels per peer:2"),
            Some(RingLine::Summary { comm: Some(0x2bc1f840), coll: Some(2), nvls: Some(0), p2p: Some(2) })
        );
    }

    /// Ring-order lines cut short or glued to other text are damaged, not other lines.
    #[test]
    fn damaged_ring_orders() {
        for b in [
            &b"Channel 00/02 :    0   1   2   3xx"[..],
            b"Channel 01/04 :    0   1   2   3   4   5   6   7h1:2:3",
            b"Channel 00 :    0   1x",
        ] {
            assert_eq!(
                parse(b),
                Some(Err("garbled ring order line")),
                "{:?}",
                String::from_utf8_lossy(b)
            );
        }
        assert_eq!(
            parse(b"Trees [0] 1/-1/-1->0"),
            Some(Err("garbled tree line"))
        );
    }
}
