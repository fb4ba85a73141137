//! Channel and ring lines printed while a communicator is set up, body after `NCCL INFO `:
//! ```text
//! Channel 00/02 :    0   1   2   3                    (ring order of channel 0; 2 channels)
//! Ring 00 : 1 -> 0 -> 1                                (prev -> me -> next, older versions)
//! 2 coll channels, 2 p2p channels, 2 p2p channels per peer
//! 16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels per peer
//! comm:0x2bc1f840, nRanks:2, nNodes:1, coll channels:2 collnet channels:2, nvls channels:0, p2p channels:2, ...  (RCCL)
//! ```
//! Connection lines (`Channel 00/0 : 5[2c000] -> 0[26000] [receive] via NET/IB/0`, `Ring 00 : 155[3d000] ->
//! 157[b2000] via P2P/IPC`) are not ring orders and are left alone. These lines do not name their
//! communicator; the parser ties them to one by the thread that prints them (see `parser.rs`).

use crate::scan;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RingLine {
    /// `Channel cc/nn : r r r`
    Order {
        channel: u32,
        nchannels: u32,
        order: Vec<u32>,
    },
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

impl RingLine {
    /// A summary that says nothing (what is left where a line was taken from).
    pub(crate) const EMPTY: RingLine = RingLine::Summary {
        comm: None,
        coll: None,
        nvls: None,
        p2p: None,
    };
}

pub(crate) fn parse(body: &[u8]) -> Option<RingLine> {
    let b = body.trim_ascii();
    if let Some(rest) = b.strip_prefix(b"Channel ") {
        let colon = scan::find(rest, b" : ")?;
        let head = rest.get(..colon)?;
        let slash = memchr::memchr(b'/', head)?;
        let channel = scan::dec_u32(head.get(..slash)?)?;
        let nchannels = scan::dec_u32(head.get(slash + 1..)?)?;
        let mut order = Vec::new();
        for t in scan::tokens(rest.get(colon + 3..)?) {
            order.push(scan::dec_u32(t)?);
        }
        if order.is_empty() {
            return None;
        }
        return Some(RingLine::Order {
            channel,
            nchannels,
            order,
        });
    }
    if let Some(rest) = b.strip_prefix(b"Ring ") {
        let mut t = scan::tokens(rest);
        let channel = scan::dec_u32(t.next()?)?;
        let (Some(b":"), Some(p), Some(b"->"), Some(m), Some(b"->"), Some(n), None) = (
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
        assert_eq!(
            parse(b"Channel 01/02 :    0   3   2   1"),
            Some(RingLine::Order {
                channel: 1,
                nchannels: 2,
                order: vec![0, 3, 2, 1]
            })
        );
        assert_eq!(
            parse(b"Channel 00/0 : 5[2c000] -> 0[26000] [receive] via NET/IB/0/GDRDMA"),
            None
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
        assert_eq!(
            parse(b"Ring 00 : 155[3d000] -> 157[b2000] via P2P/IPC"),
            None
        );
        assert_eq!(
            parse(b"16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels per peer"),
            Some(RingLine::Summary { comm: None, coll: Some(16), nvls: Some(0), p2p: Some(16) })
        );
        assert_eq!(
            parse(b"comm:0x2bc1f840, nRanks:2, nNodes:1, coll channels:2 collnet channels:2, nvls channels:0, p2p channels:2, p2p channels per peer:2"),
            Some(RingLine::Summary { comm: Some(0x2bc1f840), coll: Some(2), nvls: Some(0), p2p: Some(2) })
        );
    }
}
