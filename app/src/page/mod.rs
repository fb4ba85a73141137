//! The page (main thread): the app ([`app`]: its state, the worker's messages, the intake of
//! files, the shell), the shell's parts ([`shell`]: header, view bar, status, details drawer),
//! the views ([`views`]) and what they are made of: the timeline ([`timeline`]), the panels
//! ([`panels`]), the tables ([`tables`]); share links and bundles ([`sharing`]), the link to the
//! loading worker ([`client`]), two runs compared ([`compare`]), and the theme, folders and budget dialog.

pub mod app;
pub mod budget_dialog;
pub mod client;
pub mod compare;
pub mod folders;
pub mod panels;
pub mod sharing;
pub mod shell;
pub mod tables;
pub mod theme;
pub mod timeline;
pub mod url;
pub mod views;
