//! Who is who, and which clock: the rules of `docs/design/identity-and-time.md`.
//!
//! Why a crate of its own: the logs and the exports of one run name their processes
//! differently (a full host name in the export, NCCL's name cut at its first dot; a container's
//! id and pid namespace against the host's; every process `cudaDev 0` under
//! `CUDA_VISIBLE_DEVICES`), and each input counts time its own way (an export relative to its
//! session or in its node's system clock, a log in epoch seconds, in local time to the second,
//! or not at all). Both the loading session (which keys every kernel by a process) and the
//! analysis (alignment, clocks) read the answers, which depend on the inputs alone.
//!
//! - [`features`]: what each log and export process says about itself, computed once per file.
//! - [`pairing`]: the one-to-one pairing of log and export processes from all of it, each pair
//!   with how it was made and a confidence, and a note for every pairing that is ambiguous or
//!   impossible.
//! - [`time_base`]: an export's times as UTC, a log's stamp resolution and zone.

pub mod features;
pub mod pairing;
pub mod time_base;

pub use features::{export_processes, log_processes, ExportProcess, LogProcess};
pub use pairing::{pair, Evidence, Identity, Pairing};
pub use time_base::{ExportClock, Stamps};
