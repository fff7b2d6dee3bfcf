//! `cargo xtask lint`: the gates every change passes before its tests run (and
//! `cargo xtask test` runs them first): formatting, clippy, rustdoc and shellcheck.
//!
//! 1. `cargo fmt --all --check` (rustfmt.toml at the root);
//! 2. `cargo clippy --workspace --all-targets -- -D warnings` (lints in the
//!    workspace Cargo.toml `[workspace.lints]`);
//! 3. `RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps` (broken
//!    intra-doc links, missing docs);
//! 4. `shellcheck guest-images/init.sh` (Debian's shellcheck, installed with the
//!    host's apt-get when missing and running as root).
//!
//! Every gate runs even when an earlier one failed, so one run lists every problem.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shell scripts shellcheck reads (busybox `sh`: POSIX).
const SHELL_SCRIPTS: &[&str] = &["guest-images/init.sh"];

/// The workspace root (xtask's parent folder).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Run one gate; `false` when it failed or could not run (said on stderr).
fn gate(name: &str, cmd: &mut Command) -> bool {
    eprintln!("lint: {name}");
    match cmd.current_dir(root()).status() {
        Ok(s) if s.success() => true,
        Ok(s) => {
            eprintln!("lint: {name}: failed ({s})");
            false
        }
        Err(e) => {
            eprintln!("lint: {name}: cannot run: {e}");
            false
        }
    }
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Run every gate. `Ok(true)` when all passed.
///
/// # Errors
/// Only when shellcheck is missing and cannot be installed (not root, no apt-get).
pub fn run() -> anyhow::Result<bool> {
    let mut ok = gate("cargo fmt --all --check", Command::new(cargo()).args(["fmt", "--all", "--check"]));
    ok &= gate(
        "cargo clippy --workspace --all-targets -- -D warnings",
        Command::new(cargo()).args(["clippy", "--quiet", "--workspace", "--all-targets", "--", "-D", "warnings"]),
    );
    ok &= gate(
        "RUSTDOCFLAGS=\"-D warnings\" cargo doc --workspace --no-deps",
        Command::new(cargo()).args(["doc", "--quiet", "--workspace", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings"),
    );
    if !have("shellcheck") {
        harness::provision::host_packages::apt_install(&["shellcheck"], "the shellcheck gate", true, &mut |l| {
            eprintln!("lint: {l}")
        })?;
    }
    ok &= gate(&format!("shellcheck {}", SHELL_SCRIPTS.join(" ")), Command::new("shellcheck").args(SHELL_SCRIPTS));
    Ok(ok)
}
