//! For the VM tests: a run request for a topology file on a kernel choice, and
//! one run with its human report on stderr (a rig error fails the test).

use harness::rig::kernel_choice::{self, KernelChoice};
use harness::rig::{run_one, RunOutcome, RunRequest};
use std::path::PathBuf;

/// `topologies/<file>.toml`.
pub fn topology_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../topologies").join(format!("{file}.toml"))
}

/// The request for `topologies/<file>.toml` on `kernel` (`6.12`, `6.1`, `7.x`,
/// `6.12-min`: pinned Debian kernels or the minimal build).
pub fn request(file: &str, kernel: &str) -> RunRequest {
    let choice: KernelChoice = kernel.parse().expect("a kernel choice");
    let k = kernel_choice::resolve(&choice, None, None).unwrap_or_else(|e| panic!("kernel {kernel}: {e}"));
    k.request(topology_path(file))
}

/// Run `req`; print the human report (IRQ table, stages, traffic) on stderr.
pub fn run(req: &RunRequest) -> RunOutcome {
    match run_one(req) {
        Ok(outcome) => {
            eprintln!(
                "{}",
                harness::verdict::render(&outcome.verdict, harness::verdict::Format::Human).unwrap_or_default()
            );
            outcome
        }
        Err(e) => panic!("{} ({:?}): rig error: {e:#}", req.topology.display(), req.kernel),
    }
}
