//! The page's loading worker (see `ncclscope_app::loader`): every file is read, parsed, queried
//! and analysed here, off the page's main thread.

fn main() {
    ncclscope_app::loader::start();
}
