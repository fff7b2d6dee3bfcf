//! The `manarig` command line (also reached as `cargo xtask …`): one module per
//! command, and [`Exit`], the one exit-code type. Only this layer knows about
//! exit codes, argument parsing and printing to the terminal; the domain modules
//! (model, rig, verdict, kbuild, provision, qemu) return values and errors.

pub mod boot;
pub mod exit;
pub mod expect;
pub mod import;
pub mod kernel;
pub mod matrix;
pub mod matrix_output;
pub mod matrix_progress;
pub mod pictures;
pub mod run;
pub mod setup;
pub mod soak;

pub use exit::Exit;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// manarig: boot a real kernel on a described topology and check where the
/// `mana` driver puts its MSI-X interrupts.
#[derive(Debug, Parser)]
#[command(name = "manarig", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Use exactly the versions guest-images/kernels.lock pins: a pin that has
    /// left the Debian archive is an error instead of a fallback to the newest
    /// version of its track (also MANARIG_LOCKED=1).
    #[arg(long, global = true)]
    locked: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the IRQ table the kernel's algorithms predict for a topology file.
    Expect(expect::ExpectArgs),
    /// Write a topology file for a real machine from lscpu/numactl output, a sysfs
    /// snapshot or hwloc XML.
    Import(import::ImportArgs),
    /// Provision QEMU, the pinned guest kernels and busybox into the cache (idempotent).
    Setup(setup::SetupArgs),
    /// Boot a built-in machine (seed-002, r17) and check the guest's topology.
    Boot(boot::BootArgs),
    /// Boot a topology with the emulated MANA NIC, check the guest's IRQ
    /// affinities against the model, and report (exit 0 pass, 1 mismatch, 2 rig error).
    Run(Box<run::RunArgs>),
    /// Run the kernel's own drivers/net selftests (from the guest kernel's
    /// source) in the guest against the emulated MANA: `run --selftests`
    /// (every case a check, judged against the series' baseline).
    Selftests(Box<run::RunArgs>),
    /// Run a topology on two kernels and print the before/after table.
    Compare(Box<run::CompareArgs>),
    /// Build a guest kernel from a source tree + patches (`kernel build`), list builds.
    Kernel(kernel::KernelArgs),
    /// Run every topology × kernel pair (up to --jobs guests at once, or one
    /// --shard K/N of them) and write the summary, JUnit, KTAP, JSON and KCIDB
    /// (exit 0 all pass, 1 a mismatch, 2 a rig error or an interrupted run).
    Matrix(Box<matrix::MatrixArgs>),
    /// Merge the JSON documents of a matrix's shards into one and write every format.
    MatrixMerge(matrix::MergeArgs),
    /// Soak the emulated NIC: minutes of TCP flows while every minute the
    /// guest changes the channels, the link goes down and up and mana is
    /// reloaded; judged by the device process staying flat (memory,
    /// descriptors) and every byte verified (exit 0 pass, 1 a check failed, 2 a rig error).
    Soak(Box<soak::SoakArgs>),
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
            return (if e.use_stderr() { Exit::RigError } else { Exit::Pass }).into();
        }
    };
    if cli.locked {
        crate::provision::fallback::set_locked();
    }
    match cli.command {
        Command::Expect(args) => expect::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Setup(args) => setup::run(&args),
        Command::Boot(args) => boot::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Selftests(mut args) => {
            args.selftests.selftests = true;
            run::run(&args)
        }
        Command::Compare(args) => run::compare(&args),
        Command::Kernel(args) => kernel::run(&args),
        Command::Matrix(args) => matrix::run(&args),
        Command::MatrixMerge(args) => matrix::merge_cmd(&args),
        Command::Soak(args) => soak::run(&args),
    }
}
