//! The page (main thread): the app ([`app`]), its link to the loading worker ([`client`]), the
//! timeline ([`timeline`]), the panels ([`panels`]), the tables ([`tables`]), share links and
//! bundles ([`sharing`]), and the header's theme, folders and budget dialog.

pub mod app;
pub mod budget_dialog;
pub mod client;
pub mod folders;
pub mod panels;
pub mod sharing;
pub mod tables;
pub mod theme;
pub mod timeline;
pub mod url;
