//! `manarig`: the user-facing command line.

fn main() -> std::process::ExitCode {
    // Warnings (the emulated device's "bad guest input", a PVH fallback, …) go
    // to stderr; `MANARIG_LOG` takes an EnvFilter, e.g. `device_model=debug`
    // for every HWC command with a timestamp.
    let filter = tracing_subscriber::EnvFilter::try_from_env("MANARIG_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter).init();
    harness::cli::main_with_args(std::env::args_os())
}
