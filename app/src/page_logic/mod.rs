//! The page's logic that needs no browser, tested natively: share links ([`link`]), the views
//! ([`views`]), timeline arithmetic ([`timeline_math`]) and its rows ([`track_rows`]), a
//! kernel's fields as people read them ([`fields`]), which rows a long table or list renders
//! ([`table_window`], [`list_window`]), the memory budget of dropped files ([`budget`]), the
//! demo's files ([`files`]), the Compare view's figures ([`compare`]), work spread over
//! animation frames ([`deferred`], used by the worker too), and a file's lines around an
//! evidence line ([`file_lines`], read by the worker).

pub mod budget;
pub mod compare;
pub mod deferred;
pub mod fields;
pub mod file_lines;
pub mod files;
pub mod link;
pub mod list_window;
pub mod table_window;
pub mod timeline_math;
pub mod track_rows;
pub mod views;
