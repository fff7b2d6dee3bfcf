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
/// returns the outcome; a rig error fails the test naming `what`. Unless the
/// request keeps its console itself, the console goes to a temporary file
/// whose agent timings and last lines are printed when the verdict is not a
/// PASS or the rig fails: a VM test that fails in CI shows what the guest did.
pub fn run_printed(req: &RunRequest, what: &str) -> RunOutcome {
    let kept = tempfile::tempdir().expect("a temporary folder for the console");
    let own_console = req.console_log.is_none().then(|| kept.path().join("console.log"));
    let mut req = req.clone();
    if own_console.is_some() {
        req.console_log.clone_from(&own_console);
    }
    let outcome = run_one(&req);
    if let Ok(o) = &outcome {
        eprintln!("{}", harness::verdict::render(&o.verdict, harness::verdict::Format::Human).unwrap_or_default());
    }
    let passed = outcome.as_ref().is_ok_and(|o| o.verdict.status == harness::verdict::Status::Pass);
    if let (false, Some(console)) = (passed, &own_console) {
        print_console(console);
    }
    outcome.unwrap_or_else(|e| panic!("{what}: rig error: {}", harness::text::chain(&e)))
}

/// The agent's timings and settle line, then the last 60 lines of the
/// console at `path`, on stderr.
fn print_console(path: &std::path::Path) {
    let Ok(text) = std::fs::read_to_string(path) else {
        eprintln!("console: {} could not be read", path.display());
        return;
    };
    let lines: Vec<&str> = text.lines().collect();
    let agent = |l: &str| l.starts_with("time ") || l.starts_with("settle:") || l.starts_with("load:");
    eprintln!("console: the agent's timings (guest seconds):");
    lines.iter().filter(|l| agent(l)).for_each(|l| eprintln!("  {l}"));
    eprintln!("console: its last {} of {} lines:", lines.len().min(60), lines.len());
    lines[lines.len().saturating_sub(60)..].iter().for_each(|l| eprintln!("  {l}"));
}
