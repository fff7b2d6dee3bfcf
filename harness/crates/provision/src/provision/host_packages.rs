//! Installing the host's own Debian packages (kernel build tools, shellcheck) with
//! the host's `apt-get`, as root, from the host's own suites. Used only where a
//! command needs a tool the machine lacks and says so; the cache's pinned guest
//! packages go through [`super::apt`] instead and never touch the host.

use std::path::Path;
use std::process::Command;

/// Why the host packages could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum HostPackageError {
    /// Not root, no apt-get, or installing was not allowed: the user must install them.
    #[error("{why} needs these host packages: {list}; install them (apt-get install {list}) or run as root")]
    NotAllowed {
        /// What needs them (`a kernel build`, `the shellcheck gate`).
        why: String,
        /// The packages, space-separated.
        list: String,
    },
    /// apt-get could not be started.
    #[error("cannot run apt-get: {0}")]
    Spawn(std::io::Error),
    /// apt-get failed, with its stderr.
    #[error("apt-get {step} failed:\n{stderr}")]
    Apt {
        /// `update` or `install PKGS`.
        step: String,
        /// What apt-get said.
        stderr: String,
    },
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid() has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Install `packages` with the host's apt-get (`-y --no-install-recommends`); when the
/// install fails on stale package lists, run `apt-get update` once and try again.
/// `allowed` = false (a `--no-install-deps`) refuses with [`HostPackageError::NotAllowed`].
/// `progress` gets one line saying what is installed and why.
///
/// # Errors
/// [`HostPackageError`]: not allowed (not root, no apt-get, `allowed` false), apt-get
/// missing or failing.
pub fn apt_install(
    packages: &[&str],
    why: &str,
    allowed: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<(), HostPackageError> {
    let list = packages.join(" ");
    if !allowed || !is_root() || !Path::new("/usr/bin/apt-get").exists() {
        return Err(HostPackageError::NotAllowed { why: why.to_owned(), list });
    }
    progress(&format!("host: installing {why}'s host packages with apt-get: {list}"));
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .map_err(HostPackageError::Spawn)
    };
    let install: Vec<&str> =
        ["install", "-y", "-q", "--no-install-recommends"].into_iter().chain(packages.iter().copied()).collect();
    let mut out = apt(&install)?;
    if !out.status.success() {
        // A machine image's package lists may be older than the archive
        // (versions gone: 404); refresh them once and try again.
        progress("host: apt-get install failed; running apt-get update and trying again");
        let update = apt(&["update", "-q"])?;
        if !update.status.success() {
            return Err(HostPackageError::Apt {
                step: "update".into(),
                stderr: String::from_utf8_lossy(&update.stderr).into_owned(),
            });
        }
        out = apt(&install)?;
    }
    if !out.status.success() {
        return Err(HostPackageError::Apt {
            step: format!("install {list}"),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(())
}
