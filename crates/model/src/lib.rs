//! The types every ncclscope stage shares.
//!
//! Data flows one way: files → parsed records ([`log`], [`nsys`]) → aligned operations → enriched
//! operations → analyses → views. This crate holds only plain data (no I/O, no serde, no browser
//! types) so that every stage, native or wasm, speaks the same language.
//!
//! Conventions: times are `i64` nanoseconds in fields ending `_ns`; byte counts end in `_bytes`;
//! bandwidths are `f64` GB/s (10⁹ bytes per second) in fields ending `_gbps`.

pub mod diag;
pub mod kernel_store;
pub mod log;
pub mod log_ops;
pub mod nccl;
pub mod nsys;
pub mod rng;
pub mod rows;

pub use diag::{Diagnostic, Severity};
pub use nccl::{Algo, DataType, OpType, Proto, RedOp};
