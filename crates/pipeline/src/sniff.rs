//! Recognising an input by its content, never by its name (see `CONTRACT.md`).

use sqlsource::SQLITE_HEADER;

/// How many leading bytes [`sniff`] wants: enough for a few log lines after a banner.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// What an input file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputKind {
    NcclLog,
    NsysSqlite,
    /// gzip-compressed; decompressed and treated as a log.
    Gzip,
    Unknown,
}

impl InputKind {
    /// The contract's spelling (`nccl-log`, `nsys-sqlite`, `unknown`).
    pub fn label(self) -> &'static str {
        match self {
            InputKind::NcclLog | InputKind::Gzip => "nccl-log",
            InputKind::NsysSqlite => "nsys-sqlite",
            InputKind::Unknown => "unknown",
        }
    }
}

/// Classifies a file from its first bytes (up to [`SNIFF_BYTES`]).
pub fn sniff(head: &[u8]) -> InputKind {
    if head.starts_with(SQLITE_HEADER) {
        InputKind::NsysSqlite
    } else if head.starts_with(&[0x1f, 0x8b]) {
        InputKind::Gzip
    } else if ingest_nccl::is_nccl_log(head) {
        InputKind::NcclLog
    } else {
        InputKind::Unknown
    }
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
        assert_eq!(sniff(b"just some text\n"), InputKind::Unknown);
        assert_eq!(sniff(b""), InputKind::Unknown);
    }
}
