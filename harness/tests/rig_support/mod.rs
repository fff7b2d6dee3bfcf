//! Shared by the VM tests that run the rig in-process (lifecycle, traffic,
//! injection): a request for a topology file of the repository on a kernel,
//! and a run that prints the human report and panics on a rig error.

use harness::rig::kernel_choice::{self, KernelChoice};
use harness::rig::{run_one, RunOutcome, RunRequest};
use std::path::PathBuf;

/// `topologies/<file>.toml` of the repository.
pub fn topology_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../topologies").join(format!("{file}.toml"))
}

/// The request for `topologies/<file>.toml` on `kernel` (`6.12`, `6.1`,
/// `7.x` or `6.12-min`).
pub fn request(file: &str, kernel: &str) -> RunRequest {
    let choice: KernelChoice = kernel.parse().expect("a kernel choice");
    let k = kernel_choice::resolve(&choice, None, None).unwrap_or_else(|e| panic!("kernel {kernel}: {e}"));
    k.request(topology_path(file))
}

/// Runs `req`, prints the human report (IRQ table, stages, checks) and
/// returns the outcome; a rig error fails the test naming `what`.
pub fn run_printed(req: &RunRequest, what: &str) -> RunOutcome {
    match run_one(req) {
        Ok(outcome) => {
            eprintln!(
                "{}",
                harness::verdict::render(&outcome.verdict, harness::verdict::Format::Human).unwrap_or_default()
            );
            outcome
        }
        Err(e) => panic!("{what}: rig error: {}", harness::text::chain(&e)),
    }
}
