//! What the page's workers hand each other, as bytes (postcard over the records' serde
//! derives: compact and exact, so a record decoded from its bytes equals the record encoded).
//!
//! - [`log`]: a parsed NCCL log, from a parsing worker to the loading worker;
//! - [`export`]: a read Nsight Systems export (or the file's error), likewise;
//! - [`align`]: an alignment job and its result, to and from the alignment workers.

pub mod align;
pub mod export;
pub mod log;
