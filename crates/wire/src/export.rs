//! A read Nsight Systems export as bytes: what a helper worker of the page posts back to the
//! loading worker after reading an export in its own sql.js. Postcard over the records' serde
//! derives, as `wire::log` does for logs: compact (kernels travel as their interned launch sites
//! and 40-byte rows) and exact (floats as their bits), so an export decoded from its bytes
//! equals the export that was encoded.
//!
//! The export's compute kernels travel beside it when they were read (compact already: per GPU
//! its merged busy intervals, per name a few numbers; `model::compute`), or why they were not.
//!
//! An export that could not be read travels too, as the message the loading worker would have
//! reported: a bad file is the file's error, not the helper's, so the helper stays in service.
//! An export has no file index (unlike a log's operations): nothing is renumbered on arrival.

use model::compute::ComputeKernels;
use model::nsys::NsysExport;

/// What reading one export gave.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ExportRead {
    /// Boxed: the export is a few hundred bytes of headers, the failure a message. Beside it
    /// its compute kernels, when asked for: read, or the reason they were not.
    Read(Box<NsysExport>, Option<Result<Box<ComputeKernels>, String>>),
    /// The file's error, worded as the file's report words it.
    Failed(String),
}

/// The bytes of `read`.
pub fn encode(read: &ExportRead) -> Vec<u8> {
    // Serialising plain records into a growing vector has no failure mode.
    postcard::to_allocvec(read).unwrap_or_default()
}

/// What `bytes` were made from, or why they are not an encoding (truncated or foreign bytes
/// never panic).
pub fn decode(bytes: &[u8]) -> Result<ExportRead, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("not a read export: {e}"))
}
