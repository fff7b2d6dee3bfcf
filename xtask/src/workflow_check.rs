//! Checks of the GitHub Actions workflow `.github/workflows/manarig-matrix.yml`,
//! which this machine cannot run (no GitHub): its shape against GitHub's
//! workflow schema, and (in the tests) every `cargo xtask …` line of its `run:`
//! steps against manarig's own command line.
//!
//! The schema check is `check-jsonschema` (PyPI, pinned) with the GitHub
//! workflow schema it ships (`--builtin-schema vendor.github-workflows`, the
//! SchemaStore schema, so no download at check time), installed on first use
//! into the private venv `<cache>/venv-check-jsonschema`
//! (harness::provision::pyvenv, as kcidb-io is).

use harness::provision::pyvenv::{self, run_bounded, Failure};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The check-jsonschema release installed (its vendored GitHub workflow schema is the check).
pub const CHECK_JSONSCHEMA_PIN: &str = "check-jsonschema==0.39.0";

/// The workflow, relative to the workspace root.
pub const WORKFLOW: &str = ".github/workflows/manarig-matrix.yml";

/// Time allowed for one validation.
const CHECK_DEADLINE: Duration = Duration::from_secs(120);

/// What went wrong validating a workflow.
#[derive(Debug)]
pub enum WorkflowCheckError {
    /// The validator could not be installed or run (no python3, no PyPI, …).
    Setup(String),
    /// The workflow breaks GitHub's schema: check-jsonschema's words.
    Invalid(String),
}

impl std::fmt::Display for WorkflowCheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Setup(m) => write!(f, "check-jsonschema: {m}"),
            Self::Invalid(m) => write!(f, "not a valid GitHub workflow: {m}"),
        }
    }
}

/// The installed `check-jsonschema` program in `<cache>/venv-check-jsonschema`,
/// installed first when missing. `progress` hears the steps.
///
/// # Errors
/// [`WorkflowCheckError::Setup`] when it cannot be installed.
pub fn validator(cache: &Path, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, WorkflowCheckError> {
    let venv = pyvenv::ensure(cache, "venv-check-jsonschema", &[CHECK_JSONSCHEMA_PIN], progress)
        .map_err(|e| WorkflowCheckError::Setup(e.to_string()))?;
    Ok(venv.join("bin/check-jsonschema"))
}

/// Validate the workflow file `file` against GitHub's workflow schema with
/// the program `tool` from [`validator`].
///
/// # Errors
/// [`WorkflowCheckError::Invalid`] with the failing path and reason, or
/// [`WorkflowCheckError::Setup`] when the check itself cannot run.
pub fn validate(tool: &Path, file: &Path) -> Result<(), WorkflowCheckError> {
    let mut cmd = Command::new(tool);
    cmd.args(["--builtin-schema", "vendor.github-workflows", "--output-format", "text"]).arg(file);
    match run_bounded(cmd, CHECK_DEADLINE, "check-jsonschema") {
        Ok(_) => Ok(()),
        Err(Failure { code: Some(1), output_tail, .. }) => Err(WorkflowCheckError::Invalid(output_tail)),
        Err(f) => Err(WorkflowCheckError::Setup(f.to_string())),
    }
}

/// `cargo xtask check-workflow`: install the validator when missing, validate
/// [`WORKFLOW`]; exit 0 valid, 1 invalid, 2 the check could not run.
pub fn main() -> std::process::ExitCode {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(WORKFLOW);
    let result = harness::provision::cache_dir(None)
        .map_err(|e| WorkflowCheckError::Setup(e.to_string()))
        .and_then(|cache| validator(&cache, &mut |l| eprintln!("cargo xtask check-workflow: {l}")))
        .and_then(|tool| validate(&tool, &file));
    match result {
        Ok(()) => {
            println!("{WORKFLOW}: valid against GitHub's workflow schema ({CHECK_JSONSCHEMA_PIN})");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cargo xtask check-workflow: {WORKFLOW}: {e}");
            std::process::ExitCode::from(if matches!(e, WorkflowCheckError::Invalid(_)) { 1 } else { 2 })
        }
    }
}

#[cfg(test)]
mod tests;
