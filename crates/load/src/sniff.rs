//! Recognising an input by its content, never by its name (see `CONTRACT.md`).

use sqlsource::SQLITE_HEADER;

/// How many leading bytes [`sniff`] wants: enough for a few log lines after a banner, and to
/// tell text from binary.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// What an input file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputKind {
    NcclLog,
    NsysSqlite,
    /// gzip-compressed; decompressed and treated as a log.
    Gzip,
    /// Text with no NCCL line in its head (a log may start with a long preamble: pip output, a
    /// traceback, a configuration dump). Streamed through the parser like a log, and kept as
    /// one only if some line of it is NCCL output ([`crate::LogLoader::finish_sniffed`]);
    /// otherwise refused as [`InputKind::Unknown`]. Never a report's kind.
    Text,
    Unknown,
}

impl InputKind {
    /// The contract's spelling (`nccl-log`, `nsys-sqlite`, `unknown`).
    pub fn label(self) -> &'static str {
        match self {
            InputKind::NcclLog | InputKind::Gzip => "nccl-log",
            InputKind::NsysSqlite => "nsys-sqlite",
            InputKind::Text | InputKind::Unknown => "unknown",
        }
    }
}

/// Classifies a file from its first bytes (up to [`SNIFF_BYTES`]; all of a shorter file).
pub fn sniff(head: &[u8]) -> InputKind {
    if head.starts_with(SQLITE_HEADER) {
        InputKind::NsysSqlite
    } else if head.starts_with(&[0x1f, 0x8b]) {
        InputKind::Gzip
    } else if ingest_nccl::is_nccl_log(head) {
        InputKind::NcclLog
    } else if looks_like_text(head) {
        InputKind::Text
    } else {
        InputKind::Unknown
    }
}

/// Whether `head` may be the start of a text file: not empty, no NUL byte, and hardly any other
/// control character (binary data of any size is refused from its head, never parsed).
fn looks_like_text(head: &[u8]) -> bool {
    if head.is_empty() || head.contains(&0) {
        return false;
    }
    // Tab, line feed, form feed, carriage return and escape (terminal colours) are text.
    let control = head
        .iter()
        .filter(|&&c| (c < 0x20 && !matches!(c, b'\t' | b'\n' | 0x0c | b'\r' | 0x1b)) || c == 0x7f)
        .count();
    control * 100 <= head.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_by_content() {
        assert_eq!(sniff(b"SQLite format 3\0rest"), InputKind::NsysSqlite);
        assert_eq!(sniff(&[0x1f, 0x8b, 8, 0]), InputKind::Gzip);
        let log = b"node1:12:34 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0x2 [nranks=2] stream 0x3\n";
        assert_eq!(sniff(log), InputKind::NcclLog);
        // Text without an NCCL line in its head: streamed, kept only if a later line is one.
        assert_eq!(sniff(b"just some text\n"), InputKind::Text);
        assert_eq!(sniff(b"\x1b[32mpip\x1b[0m installing\r\n"), InputKind::Text);
        assert_eq!(sniff(b""), InputKind::Unknown);
        // Binary: refused from its head.
        assert_eq!(sniff(b"PK\x03\x04\x14\0\0\0"), InputKind::Unknown);
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), InputKind::Unknown);
        let noise: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 | 1)
            .collect();
        assert_eq!(
            sniff(&noise),
            InputKind::Unknown,
            "control bytes without a NUL"
        );
    }
}
