//! The page's logic that needs no browser, tested natively: share links ([`link`], the Steps
//! view's part in them: [`steps_link`], and where its outliers open: [`steps_target`]), the views
//! ([`views`]), timeline arithmetic ([`timeline_math`]) and its rows ([`track_rows`]), a
//! kernel's fields as people read them ([`fields`]), which rows a long table or list renders
//! ([`table_window`], [`list_window`]), the memory budget of dropped files ([`budget`]), the
//! demo's files ([`files`]), the Compare view's figures ([`compare`]), the rank-to-rank heat
//! map's cells ([`heat_grid`]) and the Patterns view's state ([`patterns_state`]), work spread
//! over animation frames ([`deferred`], used by the worker too), and a file's lines around an
//! evidence line ([`file_lines`], read by the worker).

pub mod budget;
pub mod compare;
pub mod deferred;
pub mod fields;
pub mod file_lines;
pub mod files;
pub mod heat_grid;
pub mod link;
pub mod list_window;
pub mod patterns_state;
pub mod pct;
pub mod steps_link;
pub mod steps_target;
pub mod table_window;
pub mod timeline_math;
pub mod track_rows;
pub mod views;
