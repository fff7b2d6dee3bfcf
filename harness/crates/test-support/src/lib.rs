//! What the harness crates' tests share (a dev-dependency only).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root folder (where `topologies/` and `guest-images/` are).
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors().nth(3).map_or_else(|| here.to_path_buf(), Path::to_path_buf)
}

/// Run git in `repo` with no user or system config (fixed identity and dates);
/// its trimmed stdout.
///
/// # Panics
/// When git cannot run or fails: a test's own setup is broken.
pub fn git_in(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=Tester", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main"])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", "2024-01-09T10:51:00Z")
        .env("GIT_COMMITTER_DATE", "2024-01-09T10:51:00Z")
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// An executable shell script `dir/name` that runs `body`: a stand-in for a
/// program a test must not run for real (QEMU, `mana-device`, `manarig-flows`,
/// busybox).
///
/// # Panics
/// When the file cannot be written or made executable: a test's own setup is broken.
pub fn shell_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
    path
}

/// Whether `tools` are all on PATH. A missing one makes the calling test a
/// SKIP (this returns false and says so on stderr), except under `CI=true`,
/// where it fails the test: CI must run every test.
///
/// # Panics
/// Under `CI=true` when a tool is missing.
pub fn tools_present(test: &str, tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| {
            Command::new("sh").args(["-c", &format!("command -v {t}")]).output().map_or(true, |o| !o.status.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    skip(&format!("{test}: SKIP: {} not on PATH", missing.join(", ")))
}

/// Whether `path` (what `what` names, e.g. `the provisioned busybox`) is a
/// file. A missing one makes the calling test a SKIP, except under `CI=true`,
/// as [`tools_present`].
///
/// # Panics
/// Under `CI=true` when the file is missing.
pub fn file_present(test: &str, what: &str, path: &Path) -> bool {
    path.is_file() || skip(&format!("{test}: SKIP: no {what} ({})", path.display()))
}

/// Say why a test is skipped and return false; under `CI=true`, fail instead.
fn skip(why: &str) -> bool {
    assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{why} (CI=true: a missing tool fails the test)");
    eprintln!("{why}");
    false
}

/// The first 4 KiB of an x86 bzImage whose setup header carries `version`
/// as its `kernel_version` string (Documentation/arch/x86/boot.rst: the
/// "HdrS" magic at 0x202, at 0x20e a u16 pointer to the string, counted from
/// 0x200; here the string is at 0x800). `version` ends with its NUL and is at
/// most 2 KiB.
pub fn bzimage_with_version(version: &[u8]) -> Vec<u8> {
    let mut image = vec![0u8; 0x1000];
    image[0x202..0x206].copy_from_slice(b"HdrS");
    image[0x20e..0x210].copy_from_slice(&(0x800u16 - 0x200).to_le_bytes());
    image[0x800..0x800 + version.len()].copy_from_slice(version);
    image
}
