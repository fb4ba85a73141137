//! A parsed log ([`ParsedLog`]) as bytes: what a parsing worker of the page posts back to the
//! loading worker. Postcard over the records' serde derives: compact (operations travel as
//! their interned call sites and 64-byte rows) and exact (floats as their bits), so a log
//! decoded from its bytes equals the log that was encoded.
//!
//! A log parsed on a worker does not know its final place in the session (a file before it
//! may fail to open and take no index): [`ParsedLog::set_file_index`] renumbers it on arrival.

use ingest_nccl::ParsedLog;

/// The bytes of `log`.
pub fn encode(log: &ParsedLog) -> Vec<u8> {
    // Serialising plain records into a growing vector has no failure mode.
    postcard::to_allocvec(log).unwrap_or_default()
}

/// The log `bytes` were made from, or why they are not one (truncated or foreign bytes never
/// panic).
pub fn decode(bytes: &[u8]) -> Result<ParsedLog, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("not a parsed log: {e}"))
}
