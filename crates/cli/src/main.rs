//! `ncclscope`: glue around the `pipeline` crate; see `lib.rs`.

fn main() -> std::process::ExitCode {
    ncclscope_cli::run(std::env::args_os())
}
