//! Reading an aggregate a part at a time (the page: header, then overview, then one section per
//! rank asked for) or whole (the command and tests), and writing its tail.

use crate::format::{deflate, inflate, Block, Error, Header, HEADER_LEN};
use crate::overview::{Overview, RankRow};
use crate::section::{self, RankDetail};
use serde::{Deserialize, Serialize};

/// One collective instance's end on one file's time axis: what a merge ties the files' clocks
/// with. Kept for communicators whose members are not all in the file, a sample of their
/// instances (see `build`), so a merge needs no section to synchronise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    /// Index into [`Overview::comms`].
    pub comm: u32,
    pub op_count: u64,
    /// Its kernel's end on one of the file's ranks, in the file's run time.
    pub end_ns: i64,
}

/// Reads the overview from its block's bytes (`header` read from the file's first bytes).
pub fn read_overview(file: &str, header: &Header, block: &[u8]) -> Result<Overview, Error> {
    if block.len() as u64 != header.overview.len {
        return Err(Error::new(
            file,
            "the overview was not read whole: truncated",
        ));
    }
    let overview: Overview = inflate(file, "the overview", block, header.overview.raw_len)?;
    let sections_end = header.overview.offset.min(header.anchors.offset);
    overview.check(file, sections_end)?;
    Ok(overview)
}

/// Reads the clock anchors; every anchor must name a communicator of `overview`.
pub fn read_anchors(
    file: &str,
    header: &Header,
    overview: &Overview,
    block: &[u8],
) -> Result<Vec<Anchor>, Error> {
    if block.len() as u64 != header.anchors.len {
        return Err(Error::new(
            file,
            "the clock anchors were not read whole: truncated",
        ));
    }
    let anchors: Vec<Anchor> = inflate(file, "the clock anchors", block, header.anchors.raw_len)?;
    if anchors
        .iter()
        .any(|a| a.comm as usize >= overview.comms.len())
    {
        return Err(Error::new(
            file,
            "a clock anchor names no communicator: garbled",
        ));
    }
    Ok(anchors)
}

/// Reads `row`'s section from its bytes, its times in run time (the row's clock applied).
pub fn read_rank(file: &str, row: &RankRow, bytes: &[u8]) -> Result<RankDetail, Error> {
    let what = format!("rank {}'s section", row.global_rank);
    if bytes.len() as u64 != row.section.len {
        return Err(Error::new(
            file,
            format!("{what} was not read whole: truncated"),
        ));
    }
    let mut d = section::decode(file, &what, bytes, row.section.raw_len, row.kernels)?;
    d.map_times(&row.clock);
    Ok(d)
}

/// An aggregate held whole in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate<'a> {
    pub file: String,
    pub bytes: &'a [u8],
    pub header: Header,
    pub overview: Overview,
}

impl<'a> Aggregate<'a> {
    /// Reads the header and overview of a whole file's `bytes`.
    pub fn open(file: &str, bytes: &'a [u8]) -> Result<Aggregate<'a>, Error> {
        let header = Header::decode(file, bytes, bytes.len() as u64)?;
        let overview = read_overview(file, &header, slice(bytes, header.overview))?;
        Ok(Aggregate {
            file: file.to_string(),
            bytes,
            header,
            overview,
        })
    }

    pub fn anchors(&self) -> Result<Vec<Anchor>, Error> {
        read_anchors(
            &self.file,
            &self.header,
            &self.overview,
            slice(self.bytes, self.header.anchors),
        )
    }

    /// Global rank `rank`'s kernels, in run time.
    pub fn rank(&self, rank: u32) -> Result<RankDetail, Error> {
        let row = self
            .overview
            .rank(rank)
            .ok_or_else(|| Error::new(&self.file, format!("no rank {rank}")))?;
        read_rank(&self.file, row, slice(self.bytes, row.section))
    }
}

/// A block's bytes (checked against the file's size when the header or overview was read).
fn slice(bytes: &[u8], b: Block) -> &[u8] {
    let end = (b.offset.saturating_add(b.len) as usize).min(bytes.len());
    bytes.get(b.offset as usize..end).unwrap_or(&[])
}

/// The overview and anchors blocks, written after sections that end at `sections_end`, and the
/// header that points at them.
pub fn tail(overview: &Overview, anchors: &[Anchor], sections_end: u64) -> (Header, Vec<u8>) {
    let (o, o_raw) = deflate(overview);
    let (a, a_raw) = deflate(&anchors.to_vec());
    let header = Header {
        overview: Block {
            offset: sections_end,
            len: o.len() as u64,
            raw_len: o_raw,
        },
        anchors: Block {
            offset: sections_end + o.len() as u64,
            len: a.len() as u64,
            raw_len: a_raw,
        },
    };
    let mut out = o;
    out.extend_from_slice(&a);
    (header, out)
}

/// A whole file: header, `sections` (each row's `section` block must already say where its bytes
/// go, in this order from [`HEADER_LEN`]), then the tail.
pub fn assemble(overview: &Overview, anchors: &[Anchor], sections: &[Vec<u8>]) -> Vec<u8> {
    let sections_end = HEADER_LEN as u64 + sections.iter().map(|s| s.len() as u64).sum::<u64>();
    let (header, tail) = tail(overview, anchors, sections_end);
    let mut out = Vec::with_capacity(sections_end as usize + tail.len());
    out.extend_from_slice(&header.encode());
    for s in sections {
        out.extend_from_slice(s);
    }
    out.extend_from_slice(&tail);
    out
}
