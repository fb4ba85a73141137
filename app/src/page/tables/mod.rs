//! Tables: what every table shares ([`table`]: sorting, filtering, CSV, virtual rows) and the
//! rank and communicator tables.

pub mod communicators;
pub mod ranks;
pub mod table;
