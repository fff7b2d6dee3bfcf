//! The `manarig` command line (also reached as `cargo xtask …`).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Exit code: the verdict passed.
pub const EXIT_PASS: u8 = 0;
/// Exit code: the verdict found a mismatch between the guest and the model.
pub const EXIT_MISMATCH: u8 = 1;
/// Exit code: the rig itself failed (setup, QEMU, device, guest panic, bad input).
pub const EXIT_RIG_ERROR: u8 = 2;

/// manarig: boot a real kernel on a described topology and check where the
/// `mana` driver puts its MSI-X interrupts.
#[derive(Debug, Parser)]
#[command(name = "manarig", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the IRQ table the kernel's algorithms predict for a topology file.
    Expect(crate::model::ExpectArgs),
    /// Provision QEMU, the pinned guest kernels and busybox into the cache (idempotent).
    Setup(crate::provision::command::SetupArgs),
    /// Boot a built-in machine (seed-002, r17) and check the guest's topology.
    Boot(crate::qemu::command::BootArgs),
    /// Boot a topology with the emulated MANA NIC, check the guest's IRQ
    /// affinities against the model, and report (exit 0 pass, 1 mismatch, 2 rig error).
    Run(crate::rig::command::RunArgs),
    /// Run a topology on two kernels and print the before/after table.
    Compare(crate::rig::command::CompareArgs),
    /// Build a guest kernel from a source tree + patches (`kernel build`), list builds.
    Kernel(crate::kbuild::command::KernelArgs),
}

/// Warnings (the emulated device's "bad guest input", a PVH fallback, …) go to
/// stderr; `MANARIG_LOG` takes a tracing EnvFilter, e.g. `device_model=debug`
/// for every HWC command with a timestamp. For both `manarig` and `cargo xtask`.
fn init_log() {
    use std::io::IsTerminal;
    let filter = match std::env::var("MANARIG_LOG") {
        Ok(spec) => tracing_subscriber::EnvFilter::try_new(&spec).unwrap_or_else(|e| {
            eprintln!("manarig: MANARIG_LOG={spec:?} is not a filter ({e}); logging warnings only");
            tracing_subscriber::EnvFilter::new("warn")
        }),
        Err(_) => tracing_subscriber::EnvFilter::new("warn"),
    };
    // Tests call main_with_args more than once: keep the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(filter)
        .try_init();
}

/// Parse `args` (including argv\[0\]) and run the command.
pub fn main_with_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    init_log();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_RIG_ERROR } else { EXIT_PASS });
        }
    };
    match cli.command {
        Command::Expect(args) => crate::model::run_expect(&args),
        Command::Setup(args) => crate::provision::command::run(&args),
        Command::Boot(args) => crate::qemu::command::run(&args),
        Command::Run(args) => crate::rig::command::run(&args),
        Command::Compare(args) => crate::rig::command::compare(&args),
        Command::Kernel(args) => crate::kbuild::command::run(&args),
    }
}
