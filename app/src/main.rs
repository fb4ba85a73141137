//! The ncclscope page. Everything runs in this tab: no byte of a dropped file leaves the machine.
//! This is the main thread: it draws (`page/`), and hands dropped files to the loading worker
//! (`src/bin/ncclscope-worker.rs`), which reads, parses and analyses them.

mod page;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(page::app::App);
}
