//! The shell around the views: the header with the actions ([`header`]), the view bar and its
//! keys ([`nav`]), the status and share lines ([`status`]) and the details drawer ([`drawer`]).

pub mod drawer;
pub mod header;
pub mod nav;
pub mod status;
