//! Sharing a view: links ([`share`]) and the self-contained bundle ([`bundle`]).

pub mod bundle;
pub mod share;
