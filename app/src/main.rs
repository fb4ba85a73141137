//! The ncclscope page. Everything runs in this tab: no byte of a dropped file leaves the machine.

mod app;
#[allow(dead_code)]
mod charts;
mod communicators;
mod files;
mod load;
mod ranks;
mod timeline_canvas;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
