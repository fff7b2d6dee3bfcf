//! `expect <topology file> --kernel <6.1|6.3|6.12|7.x> [--json]`: print the expected table
//! (or `expect --from-lscpu FILE … --kernel K`: of a real machine, see [`super::import`]).

use super::Exit;
use crate::model::{expected_stages, expected_table, KernelGen, UnknownKernel};
use crate::topology::Topology;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `expect`.
#[derive(Debug, clap::Args)]
pub struct ExpectArgs {
    /// Topology file (TOML), e.g. topologies/seed-002.toml (or a machine given with --from-*).
    #[arg(required_unless_present = "from_inputs", conflicts_with = "from_inputs")]
    pub topology: Option<PathBuf>,
    /// A real machine instead of a topology file.
    #[command(flatten)]
    pub from: super::import::FromArgs,
    /// Kernel generation: 6.1, 6.3 (6.3-6.8: one CPU per vector from the
    /// NUMA-hop-aware cpumask_local_spread), 6.12 (6.9-6.16) or 7.x (also 7.3, 6.17+); `run`'s
    /// minimal kernels 6.1-min, 6.12-min and 7.x-min are those generations.
    #[arg(long, value_parser = clap::value_parser!(KernelGenArg))]
    pub kernel: KernelGenArg,
    /// Print JSON instead of the text table.
    #[arg(long)]
    pub json: bool,
    /// Model the machine as a QEMU guest numbers its CPUs (only differs for
    /// `cpu_numbering = "linux-smt-outer"` files).
    #[arg(long)]
    pub qemu_numbering: bool,
}

/// [`KernelGen`] as a clap value.
#[derive(Debug, Clone, Copy)]
pub struct KernelGenArg(pub KernelGen);

/// An `expect --kernel` or `run --model` value that names no modelled generation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kernel {0:?} is not modelled: use 6.1, 6.3 (6.3-6.8), 6.12 (6.9-6.16) or 7.x (6.17 and later); 6.1-min, 6.12-min and 7.x-min name the same generations")]
pub struct UnknownExpectKernel(pub String);

impl std::str::FromStr for KernelGenArg {
    type Err = UnknownExpectKernel;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownExpectKernel(s.to_owned());
        let (generation, minimal) = match s.trim().strip_suffix("-min") {
            Some(g) => (g, true),
            None => (s, false),
        };
        let gen: KernelGen = generation.parse().map_err(|_: UnknownKernel| unknown())?;
        // Only the pinned generations have a minimal kernel (`6.3-min` does not exist).
        if minimal && !KernelGen::PINNED.contains(&gen) {
            return Err(unknown());
        }
        Ok(Self(gen))
    }
}

/// The machine `expect` is asked about cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum ExpectError {
    /// The topology file does not load.
    #[error(transparent)]
    Topology(crate::topology::TopologyError),
    /// The `--from-*` inputs do not import.
    #[error(transparent)]
    Import(crate::import::ImportError),
}

/// `expect`: exit 0 with the table on stdout, or 2 with one error line on stderr.
pub fn run(args: &ExpectArgs) -> ExitCode {
    let loaded = match &args.topology {
        Some(path) if !args.from.given() => Topology::load(path).map_err(ExpectError::Topology),
        _ => args.from.import().map(|i| i.topology).map_err(ExpectError::Import),
    };
    let topo = match loaded {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {}", crate::text::chain(&e));
            return Exit::RigError.into();
        }
    };
    for w in topo.warnings() {
        eprintln!("warning: {w}");
    }
    let topo = if args.qemu_numbering { topo.to_qemu_numbering() } else { topo };
    let table = expected_table(&topo, args.kernel.0);
    let text = if args.json {
        match serde_json::to_string_pretty(&table) {
            Ok(s) => s + "\n",
            Err(e) => {
                eprintln!("error: cannot serialise the table: {e}");
                return Exit::RigError.into();
            }
        }
    } else {
        // With CPU hotplug after the probe (`[scenario]`), each later stage's table too.
        let mut text = table.to_text();
        for (stage, t) in expected_stages(&topo, args.kernel.0).iter().skip(1) {
            text.push_str(&format!("\n# after stage {stage} ({} online CPUs):\n", t.online_cpus));
            text.push_str(&t.to_text());
        }
        text
    };
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    ExitCode::SUCCESS
}
