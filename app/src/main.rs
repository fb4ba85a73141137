//! The ncclscope page. Everything runs in this tab: no byte of a dropped file leaves the machine.
//! This is the main thread: it draws, and hands dropped files to the loading worker
//! (`src/bin/ncclscope-worker.rs`), which reads, parses and analyses them.

mod aggregate_view;
mod app;
mod budget_dialog;
mod bundle;
mod client;
mod communicators;
mod details_panel;
mod folders;
mod minimap;
mod notes_view;
mod nvtx_rows;
mod panel_nav;
mod panels;
mod ranks;
mod share;
mod table;
mod theme;
mod timeline_canvas;
mod timeline_controls;
mod tooltip;
mod window_panel;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
