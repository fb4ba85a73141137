//! The views: the registry the view bar lists ([`registry`]), the Overview ([`overview`]), the
//! files ([`inputs`]) the analyses' views ([`analyses`]) and two runs compared ([`compare`]). The timeline's view is its pane
//! (`page::timeline::pane`).

pub mod analyses;
pub mod compare;
pub mod inputs;
pub mod overview;
pub mod registry;
