//! Communicator life-cycle lines (all shapes since NCCL 2.4), the body after `NCCL INFO `:
//! ```text
//! comm 0x7fd694002360 rank 1 nranks 16 cudaDev 1 nvmlDev 1 - Init COMPLETE                       (2.4)
//! comm 0x7fdf08000d00 rank 15 nranks 16 cudaDev 7 busId e7000 - Init COMPLETE                    (2.9–2.12)
//! comm 0x72a6b00 rank 0 nranks 2 cudaDev 0 busId 81000 commId 0xb2f794396f6d0bd1 - Init COMPLETE (2.16)
//! ncclCommInitRank comm 0x55555b0ba430 rank 6 nranks 8 cudaDev 6 nvmlDev 6 busId bb000 commId 0xb1a3.. - Init COMPLETE
//! ncclCommInitRankConfig_impl comm 0x2bc1f840 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 3000 commId 0x.. - Init COMPLETE (RCCL)
//! ncclCommSplit comm 0x.. rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 1b000 parent 0x.. color 1 key 0 commId 0x.. - Init COMPLETE
//! comm 0x1277bf60 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 65000 commId 0x.. - Init START
//! comm 0x87952f0 rank 6 nRanks 8 nNodes 1 localRanks 8 localRank 6 MNNVL 0
//! Init timings: rank 2 nranks 8 total 0.66 (kernels 0.42, bootstrap 0.07, ..., rest 0.00)          (2.22)
//! Init timings - ncclCommInitRank: rank 15 nranks 16 total 1.53 (kernels 0.24, alloc 0.99, ...)  (2.23+)
//! comm 0x.. rank 0 nranks 8 cudaDev 0 busId 1b000 - Destroy COMPLETE          (also `- Abort COMPLETE`)
//! ```
//! Fields are read as key/value pairs, so their order and the optional ones do not matter.

use crate::scan;

/// Key/value fields shared by init, start and destroy lines.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CommFields<'a> {
    pub func: Option<&'a [u8]>,
    pub comm: Option<u64>,
    pub rank: Option<u32>,
    pub nranks: Option<u32>,
    pub cuda_dev: Option<u32>,
    pub nvml_dev: Option<u32>,
    pub bus_id: Option<&'a [u8]>,
    pub comm_id: Option<u64>,
    pub parent: Option<u64>,
    pub color: Option<i64>,
    pub key: Option<i64>,
    pub n_nodes: Option<u32>,
    pub local_ranks: Option<u32>,
    pub local_rank: Option<u32>,
    pub mnnvl: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    InitComplete,
    InitStart,
    Destroy,
    Abort,
    /// `comm 0x.. rank N nRanks N nNodes N ...` (2.19+), printed before the channels.
    Summary,
}

pub(crate) fn classify(body: &[u8]) -> Option<Event> {
    let b = body.trim_ascii_end();
    if b.ends_with(b"- Init COMPLETE") {
        Some(Event::InitComplete)
    } else if b.ends_with(b"- Init START") {
        Some(Event::InitStart)
    } else if b.ends_with(b"- Destroy COMPLETE") {
        Some(Event::Destroy)
    } else if b.ends_with(b"- Abort COMPLETE") {
        Some(Event::Abort)
    } else if b.starts_with(b"comm 0x") && scan::contains(b, b" nNodes ") {
        Some(Event::Summary)
    } else {
        None
    }
}

/// Reads the fields; `Err` when the mandatory comm/rank/nranks are missing or malformed.
pub(crate) fn fields(body: &[u8]) -> Result<CommFields<'_>, &'static str> {
    let mut f = CommFields::default();
    let mut it = scan::tokens(body);
    let mut first = true;
    while let Some(k) = it.next() {
        if first && k.starts_with(b"nccl") {
            f.func = Some(k);
            first = false;
            continue;
        }
        first = false;
        if k == b"-" {
            break;
        }
        let v = it.next();
        match k {
            b"comm" => f.comm = Some(v.and_then(scan::ptr).ok_or("bad comm")?),
            b"rank" => f.rank = Some(v.and_then(scan::dec_u32).ok_or("bad rank")?),
            b"nranks" | b"nRanks" => {
                f.nranks = Some(v.and_then(scan::dec_u32).ok_or("bad nranks")?)
            }
            b"cudaDev" => f.cuda_dev = Some(v.and_then(scan::dec_u32).ok_or("bad cudaDev")?),
            b"nvmlDev" => f.nvml_dev = Some(v.and_then(scan::dec_u32).ok_or("bad nvmlDev")?),
            b"busId" => {
                f.bus_id = Some(
                    v.filter(|b| scan::hex_u64(b).is_some())
                        .ok_or("bad busId")?,
                )
            }
            b"commId" => f.comm_id = Some(v.and_then(scan::hex_u64).ok_or("bad commId")?),
            b"parent" => f.parent = Some(v.and_then(scan::ptr).ok_or("bad parent")?),
            b"color" => f.color = Some(v.and_then(scan::dec_i64).ok_or("bad color")?),
            b"key" => f.key = Some(v.and_then(scan::dec_i64).ok_or("bad key")?),
            b"nNodes" => f.n_nodes = Some(v.and_then(scan::dec_u32).ok_or("bad nNodes")?),
            b"localRanks" => {
                f.local_ranks = Some(v.and_then(scan::dec_u32).ok_or("bad localRanks")?)
            }
            b"localRank" => f.local_rank = Some(v.and_then(scan::dec_u32).ok_or("bad localRank")?),
            b"MNNVL" => f.mnnvl = Some(v.and_then(scan::dec_u32).ok_or("bad MNNVL")?),
            // splitCount, ...: not needed.
            _ => {}
        }
    }
    if f.comm.is_none() || f.rank.is_none() || f.nranks.is_none() {
        return Err("communicator line without comm, rank or nranks");
    }
    Ok(f)
}

/// One `Init timings` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Timings<'a> {
    pub func: Option<&'a [u8]>,
    pub rank: u32,
    pub nranks: u32,
    pub total_s: f64,
    pub phases: Vec<(&'a [u8], f64)>,
}

pub(crate) fn is_timings(body: &[u8]) -> bool {
    body.starts_with(b"Init timings")
}

pub(crate) fn timings(body: &[u8]) -> Result<Timings<'_>, &'static str> {
    let rest = body.strip_prefix(b"Init timings").ok_or("not timings")?;
    let colon = memchr::memchr(b':', rest).ok_or("garbled Init timings line")?;
    let func = rest.get(..colon).unwrap_or_default().trim_ascii();
    let func = func
        .strip_prefix(b"-")
        .map(|f| f.trim_ascii())
        .filter(|f| !f.is_empty());
    let rest = rest.get(colon + 1..).unwrap_or_default();
    let (main, phases_txt) = match memchr::memchr(b'(', rest) {
        Some(i) => (
            rest.get(..i).unwrap_or_default(),
            rest.get(i + 1..).unwrap_or_default(),
        ),
        None => (rest, &rest[..0]),
    };
    let rank = scan::value_after(main, b"rank")
        .and_then(scan::dec_u32)
        .ok_or("bad rank")?;
    let nranks = scan::value_after(main, b"nranks")
        .and_then(scan::dec_u32)
        .ok_or("bad nranks")?;
    let total_s = scan::value_after(main, b"total")
        .and_then(scan::float)
        .ok_or("bad total")?;
    let phases_txt = phases_txt.strip_suffix(b")").unwrap_or(phases_txt);
    let mut phases = Vec::new();
    for part in phases_txt.split(|c| *c == b',') {
        let mut t = scan::tokens(part);
        if let (Some(name), Some(v)) = (t.next(), t.next()) {
            if let Some(v) = scan::float(v) {
                phases.push((name, v));
            }
        }
    }
    Ok(Timings {
        func,
        rank,
        nranks,
        total_s,
        phases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let b = b"ncclCommSplit comm 0x10 rank 1 nranks 4 cudaDev 1 nvmlDev 1 busId 1b000 parent 0x20 color -1 key 3 commId 0xab - Init COMPLETE";
        assert_eq!(classify(b), Some(Event::InitComplete));
        let f = fields(b).unwrap();
        assert_eq!(
            (f.comm, f.parent, f.color, f.key, f.comm_id),
            (Some(0x10), Some(0x20), Some(-1), Some(3), Some(0xab))
        );
        let b = b"comm 0x7fd694002360 rank 1 nranks 16 cudaDev 1 nvmlDev 1 - Init COMPLETE";
        assert_eq!(fields(b).unwrap().bus_id, None);
        let t = timings(b"Init timings - ncclCommInitRank: rank 15 nranks 16 total 1.53 (kernels 0.24, alloc 0.99, rest 0.00)").unwrap();
        assert_eq!(
            (t.func, t.rank, t.phases.len()),
            (Some(&b"ncclCommInitRank"[..]), 15, 3)
        );
        let t = timings(b"Init timings: rank 2 nranks 8 total 0.66 (kernels 0.42, bootstrap 0.07)")
            .unwrap();
        assert_eq!((t.func, t.nranks, t.total_s), (None, 8, 0.66));
    }
}
