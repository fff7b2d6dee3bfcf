//! Helpers of the matrix command tests: run the `manarig` binary from the
//! repository's root and read its matrix documents.

use harness::matrix::report::MatrixReport;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `manarig ARGS` in the repository's root, to its end.
pub fn manarig(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_manarig")).current_dir(repo()).args(args).output().expect("manarig runs")
}

/// A command's exit code, stdout and stderr, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A matrix document from a file.
pub fn load(path: &Path) -> MatrixReport {
    MatrixReport::from_json(&std::fs::read_to_string(path).expect("matrix.json")).expect("a matrix document")
}
