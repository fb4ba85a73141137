//! The loading worker ([`loader`]: owns the session, answers the page's requests) and its
//! helpers: the pool of helper workers ([`pool`]) that parse logs, read exports
//! ([`parse_pool`], [`parse_jobs`], [`export_read`]) and align processes ([`align_pool`]); the
//! warm-up before the first drop ([`warm_up`]); two runs compared ([`compare`]); file notes
//! ([`notes`]); aggregate files ([`aggregate`]); the heap count ([`heap`]); a file's lines around
//! an evidence line ([`file_lines`]).

pub mod aggregate;
pub mod align_pool;
pub mod compare;
pub mod export_read;
pub mod file_lines;
pub mod heap;
pub mod loader;
pub mod notes;
pub mod parse_jobs;
pub mod parse_pool;
pub mod pool;
pub mod post;
pub mod result;
pub mod stacked;
pub mod warm_up;
