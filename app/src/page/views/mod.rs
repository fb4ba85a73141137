//! The views: the registry the view bar lists ([`registry`]), the Overview ([`overview`]), the
//! files ([`inputs`]) and the analyses' views ([`analyses`]). The timeline's view is its pane
//! (`page::timeline::pane`).

pub mod analyses;
pub mod inputs;
pub mod overview;
pub mod registry;
