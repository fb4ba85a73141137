//! The container: a fixed header that says where the overview and the anchors are, the per-rank
//! sections, and the two blocks. Every block is a zlib stream (its Adler-32 catches garbled
//! bytes) of a postcard encoding (varints; `docs/AGGREGATE.md` gives the layout field by field).
//!
//! ```text
//! offset  size  field (little-endian)
//!      0     8  magic  89 4E 43 41 47 47 0D 0A  ("\x89NCAGG\r\n": binary, and a text-mode
//!                                                 copy that rewrites line ends is caught)
//!      8     2  format version (2; 1 is read too)
//!     10     2  header length (88; 64 in format 1)
//!     12     4  flags (0; a reader refuses a file with flags it does not know)
//!     16    24  overview block: offset, length, inflated length (three u64)
//!     40    24  anchors block:  offset, length, inflated length
//!     64    24  matrix block:   offset, length, inflated length (format 2; length 0: none)
//!     88     …  one section per rank (its place is in the overview's rank row), then the blocks
//! ```
//!
//! Format 1 files (no matrix block) still read: their matrix is absent (`Header::matrix`).
//!
//! Why a header with offsets: the page reads 64 bytes, then the overview, then one rank's section
//! when asked (`Blob.slice`), never the whole file. Why the overview last: a merge streams the
//! sections through and only knows the overview once they are all read.
//!
//! Hostile input: every length is checked against the file's size before anything is read or
//! allocated, an inflated size is bounded (and by zlib's largest ratio to its compressed size),
//! and decoding stops at the stated size, so a small file cannot make a large allocation or a
//! long loop. Errors name the file ([`Error`]).

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::{Read, Write};

/// The first eight bytes of every aggregate.
pub const MAGIC: [u8; 8] = *b"\x89NCAGG\r\n";
/// The format this code writes and reads. Any change to what is encoded, however small, is a new
/// version (postcard is not self-describing: a reader of version 1 cannot skip a field it does not
/// know); readers say which version a file has and which they read.
pub const VERSION: u16 = 2;
/// Bytes of the header this code writes; sections start here.
pub const HEADER_LEN: usize = 88;
/// Bytes of a format 1 header (no matrix block): the least any file's sections start at.
pub const HEADER_LEN_V1: usize = 64;

/// Largest inflated overview or anchors block (a 100 000-rank run's overview is far smaller).
pub const MAX_BLOCK_BYTES: u64 = 1 << 30;
/// Largest inflated rank section (tens of millions of kernels).
pub const MAX_SECTION_BYTES: u64 = 1 << 30;
/// zlib cannot inflate beyond about 1032 times its input: a stated size beyond this is a lie.
const MAX_RATIO: u64 = 1100;

/// What went wrong, and in which file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub file: String,
    pub message: String,
}

impl Error {
    pub fn new(file: &str, message: impl Into<String>) -> Error {
        Error {
            file: file.to_string(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.message)
    }
}

impl std::error::Error for Error {}

/// Where a zlib block lies in the file and how large it inflates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Block {
    pub offset: u64,
    pub len: u64,
    pub raw_len: u64,
}

impl Block {
    /// The block's bytes as a range of the file.
    pub fn range(&self) -> std::ops::Range<u64> {
        self.offset..self.offset + self.len
    }

    /// Checks that the block lies after the header and inside a file of `file_len` bytes, and
    /// that its inflated size is believable.
    pub fn check(&self, file: &str, what: &str, file_len: u64, max_raw: u64) -> Result<(), Error> {
        let end = self.offset.checked_add(self.len);
        if self.offset < HEADER_LEN_V1 as u64 || end.is_none_or(|e| e > file_len) {
            return Err(Error::new(
                file,
                format!(
                    "{what} at bytes {}..+{} lies outside the file ({file_len} bytes): truncated or not an aggregate",
                    self.offset, self.len
                ),
            ));
        }
        if self.raw_len > max_raw || self.raw_len > self.len.saturating_mul(MAX_RATIO) {
            return Err(Error::new(
                file,
                format!(
                    "{what} claims {} bytes from {} compressed: garbled",
                    self.raw_len, self.len
                ),
            ));
        }
        Ok(())
    }
}

/// The fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    pub overview: Block,
    pub anchors: Block,
    /// The rank-to-rank matrix (`None`: a format 1 file, or a writer that had none).
    pub matrix: Option<Block>,
}

/// Whether `head` (a file's first bytes) starts like an aggregate: the page and the command
/// recognise aggregates by content, not by name.
pub fn is_aggregate(head: &[u8]) -> bool {
    head.starts_with(&MAGIC)
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[..8].copy_from_slice(&MAGIC);
        out[8..10].copy_from_slice(&VERSION.to_le_bytes());
        out[10..12].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
        let mut at = 16;
        for b in [self.overview, self.anchors, self.matrix.unwrap_or_default()] {
            for v in [b.offset, b.len, b.raw_len] {
                out[at..at + 8].copy_from_slice(&v.to_le_bytes());
                at += 8;
            }
        }
        out
    }

    /// Reads the header from a file's first [`HEADER_LEN`] bytes (or fewer: an error) and checks
    /// it against the file's size.
    pub fn decode(file: &str, head: &[u8], file_len: u64) -> Result<Header, Error> {
        if !is_aggregate(head) {
            return Err(Error::new(
                file,
                "not an ncclscope aggregate (no magic bytes)",
            ));
        }
        if head.len() < HEADER_LEN_V1 {
            return Err(Error::new(
                file,
                format!(
                    "truncated: {} bytes, the header alone has {HEADER_LEN_V1}",
                    head.len()
                ),
            ));
        }
        let u16_at = |i: usize| u16::from_le_bytes([head[i], head[i + 1]]);
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&head[i..i + 8]);
            u64::from_le_bytes(b)
        };
        let version = u16_at(8);
        if version != VERSION && version != 1 {
            let why = if version > VERSION {
                "written by a newer ncclscope"
            } else {
                "an unknown format"
            };
            return Err(Error::new(
                file,
                format!(
                    "aggregate format {version} ({why}); this ncclscope reads format {VERSION}"
                ),
            ));
        }
        let len = if version == 1 {
            HEADER_LEN_V1
        } else {
            HEADER_LEN
        };
        if u16_at(10) as usize != len || head[12..16] != [0; 4] {
            return Err(Error::new(file, "garbled header (length or flags)"));
        }
        if head.len() < len {
            return Err(Error::new(
                file,
                format!(
                    "truncated: {} bytes, the header alone has {len}",
                    head.len()
                ),
            ));
        }
        let block = |i: usize| Block {
            offset: u64_at(i),
            len: u64_at(i + 8),
            raw_len: u64_at(i + 16),
        };
        let header = Header {
            overview: block(16),
            anchors: block(40),
            matrix: (version > 1).then(|| block(64)).filter(|b| b.len > 0),
        };
        if let Some(m) = header.matrix {
            m.check(file, "the matrix", file_len, MAX_BLOCK_BYTES)?;
        }
        header
            .overview
            .check(file, "the overview", file_len, MAX_BLOCK_BYTES)?;
        header
            .anchors
            .check(file, "the clock anchors", file_len, MAX_BLOCK_BYTES)?;
        Ok(header)
    }
}

/// `value` encoded and compressed; returns the bytes and the encoded (inflated) size.
pub fn deflate<T: Serialize>(value: &T) -> (Vec<u8>, u64) {
    // Encoding plain data into a Vec cannot fail (postcard fails only on a full buffer or on
    // types it cannot encode, which these are not).
    let raw = postcard::to_allocvec(value).expect("plain data encodes");
    let mut z = ZlibEncoder::new(Vec::with_capacity(raw.len() / 3 + 64), Compression::new(6));
    z.write_all(&raw).expect("writing to a Vec cannot fail");
    (
        z.finish().expect("writing to a Vec cannot fail"),
        raw.len() as u64,
    )
}

/// Inflates a block of exactly `raw_len` bytes (its checksum verified) and decodes it; `what`
/// names it in errors.
pub fn inflate<T: DeserializeOwned>(
    file: &str,
    what: &str,
    bytes: &[u8],
    raw_len: u64,
) -> Result<T, Error> {
    let raw = inflate_bytes(file, what, bytes, raw_len)?;
    let (value, rest) = postcard::take_from_bytes::<T>(&raw)
        .map_err(|e| Error::new(file, format!("{what} does not decode ({e}): garbled")))?;
    if !rest.is_empty() {
        return Err(Error::new(
            file,
            format!("{what} has {} bytes past its end: garbled", rest.len()),
        ));
    }
    Ok(value)
}

fn inflate_bytes(file: &str, what: &str, bytes: &[u8], raw_len: u64) -> Result<Vec<u8>, Error> {
    // Grown as the data comes, never allocated at a stated size up front.
    let mut raw = Vec::with_capacity(raw_len.min(1 << 24) as usize);
    // One byte more than stated, to tell a longer stream; reading to the stream's end is what
    // verifies its checksum.
    let read = ZlibDecoder::new(bytes)
        .take(raw_len.saturating_add(1))
        .read_to_end(&mut raw);
    match read {
        Err(e) => Err(Error::new(
            file,
            format!("{what} is corrupt ({e}): garbled or truncated"),
        )),
        Ok(n) if n as u64 != raw_len => Err(Error::new(
            file,
            format!("{what} inflates to {n} bytes, the header says {raw_len}: garbled"),
        )),
        Ok(_) => Ok(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_checks_its_blocks() {
        let h = Header {
            overview: Block {
                offset: 100,
                len: 20,
                raw_len: 50,
            },
            anchors: Block {
                offset: 120,
                len: 10,
                raw_len: 10,
            },
            matrix: None,
        };
        let bytes = h.encode();
        assert!(is_aggregate(&bytes));
        assert_eq!(Header::decode("f", &bytes, 130), Ok(h));
        // The anchors would end past a file of 129 bytes.
        let e = Header::decode("run.agg", &bytes, 129).unwrap_err();
        assert_eq!(e.file, "run.agg");
        assert!(e.to_string().starts_with("run.agg: "), "{e}");
        // Newer format, flags, wrong magic, short header.
        let mut newer = bytes;
        newer[8] = 3;
        let e = Header::decode("f", &newer, 130).unwrap_err();
        assert!(e.message.contains("newer"), "{e}");
        let mut flagged = bytes;
        flagged[12] = 1;
        assert!(Header::decode("f", &flagged, 130).is_err());
        assert!(Header::decode("f", b"SQLite format 3\0", 16).is_err());
        assert!(Header::decode("f", &bytes[..40], 40).is_err());
        assert!(Header::decode("f", &bytes[..70], 130).is_err());
        // A matrix block is read back, and checked like the others.
        let with = Header {
            matrix: Some(Block {
                offset: 130,
                len: 5,
                raw_len: 9,
            }),
            ..h
        };
        assert_eq!(Header::decode("f", &with.encode(), 135), Ok(with));
        assert!(Header::decode("f", &with.encode(), 134).is_err());
        // A format 1 header (64 bytes, no matrix) still reads: its matrix is absent.
        let mut v1 = bytes[..HEADER_LEN_V1].to_vec();
        v1[8] = 1;
        v1[10] = HEADER_LEN_V1 as u8;
        assert_eq!(
            Header::decode("old.agg", &v1, 130),
            Ok(Header { matrix: None, ..h })
        );
        v1[10] = HEADER_LEN as u8;
        assert!(Header::decode("old.agg", &v1, 130).is_err());
    }

    #[test]
    fn blocks_inflate_only_to_their_stated_size() {
        let value: Vec<u64> = (0..1000).collect();
        let (z, raw) = deflate(&value);
        assert_eq!(inflate::<Vec<u64>>("f", "x", &z, raw), Ok(value.clone()));
        // Stated size too small or too large, a flipped byte, a cut stream.
        assert!(inflate::<Vec<u64>>("f", "x", &z, raw - 1).is_err());
        assert!(inflate::<Vec<u64>>("f", "x", &z, raw + 1).is_err());
        // A flipped bit is refused, unless it lands where the decoder never looks (the padding
        // bits after the last block): never a different value.
        for i in 0..z.len() {
            for bit in 0..8 {
                let mut bad = z.clone();
                bad[i] ^= 1 << bit;
                match inflate::<Vec<u64>>("f", "x", &bad, raw) {
                    Ok(v) => assert_eq!(v, value, "byte {i} bit {bit}"),
                    Err(e) => assert_eq!(e.file, "f"),
                }
            }
        }
        for len in 0..z.len() {
            assert!(inflate::<Vec<u64>>("f", "x", &z[..len], raw).is_err());
        }
        // A block that claims more than zlib can give from its size is refused unread.
        let b = Block {
            offset: 64,
            len: 10,
            raw_len: 1 << 20,
        };
        assert!(b.check("f", "x", 1000, MAX_BLOCK_BYTES).is_err());
    }
}
