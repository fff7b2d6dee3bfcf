//! Shared by the command-line tests: run the `manarig` binary from the repository root.

use std::process::Command;

/// Run `manarig ARGS` in the repository root: (exit code, stdout, stderr).
pub fn manarig(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_manarig"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("run manarig");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
