//! `manarig`: the user-facing command line.

fn main() -> std::process::ExitCode {
    harness::cli::main_with_args(std::env::args_os())
}
