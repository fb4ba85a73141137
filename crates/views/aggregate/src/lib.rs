//! The compact aggregate of a run: what the page needs to show a run of any size, in one file it
//! reads a part at a time.
//!
//! A per-node job (`ncclscope analyze --aggregate FILE`) writes one with [`build`]: an
//! [`Overview`] (every rank's counts, bytes per operation type, busy time and bandwidth; the
//! communicators with their parallelism; the layout; an activity strip per rank) and one detail
//! section per rank (its enriched kernels, [`RankDetail`]), with the overview pointing at each
//! section's bytes. [`Merge`] combines the jobs' files into one run aggregate, labelling the
//! communicators and tying the nodes' clocks as one analysis of the whole run would. Since
//! format 2 a file also carries the run's rank-to-rank matrix ([`Matrix`]), merged with it. The page
//! reads the header and overview first and a rank's section when asked (`Blob.slice`).
//!
//! The file layout is in [`format`] and `docs/AGGREGATE.md`. No I/O here: bytes in, values out,
//! so the same code runs natively and in the page (wasm32). A truncated, garbled or hostile file
//! is an [`Error`] naming it, never a panic or an unbounded allocation.

pub mod build;
pub mod file;
pub mod format;
pub mod heat;
pub mod matrix;
pub mod merge;
pub mod overview;
pub mod section;

pub use build::{build, Builder};
pub use file::{read_anchors, read_matrix, read_overview, read_rank, Aggregate, Anchor};
pub use format::{is_aggregate, Error, Header, HEADER_LEN, MAGIC, VERSION};
pub use matrix::Matrix;
pub use merge::{merge_files, Input, Merge};
pub use overview::{Clock, CommRow, Overview, RankRow, Totals};
pub use section::{Kernel, RankDetail};
