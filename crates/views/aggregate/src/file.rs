//! Reading an aggregate a part at a time (the page: header, then overview, then one section per
//! rank asked for) or whole (the command and tests), and writing its tail.

use crate::format::{deflate, inflate, Block, Error, Header, HEADER_LEN};
use crate::matrix::Matrix;
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

/// Reads the rank-to-rank matrix from its block's bytes; `Ok(None)` when the file has none (a
/// format 1 file).
pub fn read_matrix(
    file: &str,
    header: &Header,
    overview: &Overview,
    block: &[u8],
) -> Result<Option<Matrix>, Error> {
    let Some(b) = header.matrix else {
        return Ok(None);
    };
    if block.len() as u64 != b.len {
        return Err(Error::new(file, "the matrix was not read whole: truncated"));
    }
    let m: Matrix = inflate(file, "the matrix", block, b.raw_len)?;
    m.check(file, overview)?;
    Ok(Some(m))
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

    /// The rank-to-rank matrix, if the file carries one.
    pub fn matrix(&self) -> Result<Option<Matrix>, Error> {
        let block = self.header.matrix.map_or(&[][..], |b| slice(self.bytes, b));
        read_matrix(&self.file, &self.header, &self.overview, block)
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

/// The overview, anchors and matrix blocks, written after sections that end at `sections_end`,
/// and the header that points at them.
pub fn tail(
    overview: &Overview,
    anchors: &[Anchor],
    matrix: Option<&Matrix>,
    sections_end: u64,
) -> (Header, Vec<u8>) {
    let (o, o_raw) = deflate(overview);
    let (a, a_raw) = deflate(&anchors.to_vec());
    let m = matrix.map(deflate);
    let matrix_at = sections_end + o.len() as u64 + a.len() as u64;
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
        matrix: m.as_ref().map(|(bytes, raw_len)| Block {
            offset: matrix_at,
            len: bytes.len() as u64,
            raw_len: *raw_len,
        }),
    };
    let mut out = o;
    out.extend_from_slice(&a);
    if let Some((bytes, _)) = &m {
        out.extend_from_slice(bytes);
    }
    (header, out)
}

/// A whole file: header, `sections` (each row's `section` block must already say where its bytes
/// go, in this order from [`HEADER_LEN`]), then the tail.
pub fn assemble(
    overview: &Overview,
    anchors: &[Anchor],
    matrix: Option<&Matrix>,
    sections: &[Vec<u8>],
) -> Vec<u8> {
    let sections_end = HEADER_LEN as u64 + sections.iter().map(|s| s.len() as u64).sum::<u64>();
    let (header, tail) = tail(overview, anchors, matrix, sections_end);
    let mut out = Vec::with_capacity(sections_end as usize + tail.len());
    out.extend_from_slice(&header.encode());
    for s in sections {
        out.extend_from_slice(s);
    }
    out.extend_from_slice(&tail);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::deflate;
    use crate::overview::{Heat, Source};
    use crate::section::{encode, RankDetail};

    /// A well-formed file of one rank with `kernels` kernels.
    fn one_rank(kernels: usize) -> (Overview, Vec<Vec<u8>>) {
        let mut d = RankDetail::default();
        let op = d.intern("AllReduce");
        for i in 0..kernels as i64 {
            d.kernels.push(crate::Kernel {
                start_ns: i * 10,
                end_ns: i * 10 + 5,
                op,
                kernel: op,
                ..crate::Kernel::default()
            });
        }
        let (bytes, raw_len) = encode(&d);
        let o = Overview {
            sources: vec![Source::default()],
            ranks: vec![RankRow {
                kernels: kernels as u64,
                section: Block {
                    offset: HEADER_LEN as u64,
                    len: bytes.len() as u64,
                    raw_len,
                },
                ..RankRow::default()
            }],
            heat: Heat {
                bins: 4,
                busy: vec![0; 4],
                ..Heat::default()
            },
            ..Overview::default()
        };
        (o, vec![bytes])
    }

    fn read_all(bytes: &[u8]) -> Result<(), Error> {
        let a = Aggregate::open("hostile.agg", bytes)?;
        a.anchors()?;
        a.rank(0)?;
        Ok(())
    }

    #[test]
    fn a_well_formed_file_reads() {
        let (o, s) = one_rank(10);
        let file = assemble(&o, &[], None, &s);
        let a = Aggregate::open("ok.agg", &file).unwrap();
        assert_eq!(a.rank(0).unwrap().kernels.len(), 10);
        assert!(a.rank(1).is_err());
    }

    /// Overviews that decode but lie: each is refused with the file's name, before any
    /// allocation the lie would ask for.
    #[test]
    fn hostile_overviews_are_refused() {
        type Lie = Box<dyn Fn(&mut Overview)>;
        let lies: Vec<(&str, Lie)> = vec![
            (
                "a section past the sections",
                Box::new(|o| o.ranks[0].section.offset = 1 << 40),
            ),
            (
                "a section that inflates to 1 TB",
                Box::new(|o| o.ranks[0].section.raw_len = 1 << 40),
            ),
            (
                "a trillion kernels",
                Box::new(|o| o.ranks[0].kernels = 1 << 40),
            ),
            ("no such source", Box::new(|o| o.ranks[0].source = 7)),
            ("a strip of the wrong size", Box::new(|o| o.heat.bins = 5)),
            (
                "a strip of a billion bins",
                Box::new(|o| {
                    o.heat.bins = 1 << 30;
                    o.heat.busy = Vec::new();
                }),
            ),
            (
                "a clock 50 % fast",
                Box::new(|o| o.ranks[0].clock.scale = 1.5),
            ),
            (
                "a NaN clock",
                Box::new(|o| o.ranks[0].clock.shift_ns = f64::NAN),
            ),
            (
                "more matched than kernels",
                Box::new(|o| o.ranks[0].matched = 11),
            ),
            (
                "ranks out of order",
                Box::new(|o| {
                    let mut r = o.ranks[0].clone();
                    r.global_rank = 0;
                    o.ranks[0].global_rank = 5;
                    o.ranks.push(r);
                    o.heat.busy = vec![0; 8];
                }),
            ),
        ];
        for (what, lie) in lies {
            let (mut o, s) = one_rank(10);
            lie(&mut o);
            let file = assemble(&o, &[], None, &s);
            let e = read_all(&file).expect_err(what);
            assert_eq!(e.file, "hostile.agg", "{what}: {e}");
        }
        // An anchor naming no communicator.
        let (o, s) = one_rank(10);
        let anchor = Anchor {
            comm: 3,
            op_count: 0,
            end_ns: 0,
        };
        assert!(read_all(&assemble(&o, &[anchor], None, &s)).is_err());
        // A block that claims a sequence of 2⁶⁰ strings in a few bytes.
        let (o, s) = one_rank(10);
        let mut file = assemble(&o, &[], None, &s);
        let (huge, raw) = deflate(&(u64::MAX >> 4, 0u8));
        let header = Header::decode("f", &file, file.len() as u64).unwrap();
        file.truncate(header.overview.offset as usize);
        let at = file.len() as u64;
        file.extend_from_slice(&huge);
        let h = Header {
            overview: Block {
                offset: at,
                len: huge.len() as u64,
                raw_len: raw,
            },
            anchors: Block {
                offset: at,
                len: huge.len() as u64,
                raw_len: raw,
            },
            matrix: None,
        };
        file[..HEADER_LEN].copy_from_slice(&h.encode());
        assert!(read_all(&file).is_err());
    }
}
