//! QEMU's human monitor (HMP) on a unix socket, for looking into a guest that
//! has stopped: `info registers -a` gives every vCPU's PC, which the guest
//! kernel's `System.map` names (docs/rig-pitfalls.md, *An arm64 guest that
//! stops under a starved host*). Off unless asked for (`run --monitor`,
//! `boot --monitor`); QEMU's `-monitor none` otherwise.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// The longest path a unix socket address holds (`sun_path` is 108 bytes with
/// its terminating NUL; unix(7)).
const SUN_PATH_MAX: usize = 107;

/// A monitor socket path for one QEMU: checked before QEMU starts, removed when
/// this is dropped (after QEMU has been reaped).
#[derive(Debug)]
pub struct MonitorSocket {
    path: PathBuf,
}

/// Why a monitor socket path cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// QEMU's option syntax would split the path, or the kernel cannot bind it.
    #[error("--monitor {path}: {why}")]
    BadPath {
        /// The path as given.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Something that is not a socket is there already; it is left alone.
    #[error("--monitor {path}: exists and is not a socket; choose another path (it is left as it is)")]
    NotASocket {
        /// The path as given.
        path: PathBuf,
    },
    /// A stale socket there could not be removed.
    #[error("--monitor {path}: removing the old socket: {error}")]
    Stale {
        /// The path as given.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

impl MonitorSocket {
    /// Checks `path` for QEMU's `-monitor unix:PATH,server=on,wait=off`: UTF-8,
    /// no comma (QEMU's option separator), at most 107 bytes, in a folder that
    /// exists, and nothing but an old socket there (which is removed: a socket
    /// left by an earlier run).
    ///
    /// # Errors
    /// [`MonitorError`] naming the path and the reason.
    pub fn new(path: &Path) -> Result<Self, MonitorError> {
        let bad = |why: &str| MonitorError::BadPath { path: path.to_owned(), why: why.to_owned() };
        let text = path.to_str().ok_or_else(|| bad("not UTF-8"))?;
        if text.is_empty() {
            return Err(bad("empty"));
        }
        if text.contains(',') {
            return Err(bad("contains a comma, which QEMU's -monitor option cannot take"));
        }
        if text.len() > SUN_PATH_MAX {
            return Err(bad(&format!("{} bytes; a unix socket path holds at most {SUN_PATH_MAX}", text.len())));
        }
        let folder = path.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !folder.is_dir() {
            return Err(bad(&format!("its folder {} does not exist", folder.display())));
        }
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_socket() => {
                std::fs::remove_file(path).map_err(|error| MonitorError::Stale { path: path.to_owned(), error })?
            }
            Ok(_) => return Err(MonitorError::NotASocket { path: path.to_owned() }),
            Err(_) => {}
        }
        Ok(MonitorSocket { path: path.to_owned() })
    }

    /// The value of QEMU's `-monitor`: a server socket QEMU does not wait on.
    pub fn qemu_value(&self) -> String {
        format!("unix:{},server=on,wait=off", self.path.display())
    }
}

impl Drop for MonitorSocket {
    fn drop(&mut self) {
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.file_type().is_socket()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_good_path_becomes_a_server_socket_qemu_does_not_wait_on() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("m.sock");
        let m = MonitorSocket::new(&p).expect("ok");
        assert_eq!(m.qemu_value(), format!("unix:{},server=on,wait=off", p.display()));
    }

    #[test]
    fn bad_paths_are_refused_with_the_reason_and_a_file_is_left_alone() {
        let d = tempfile::tempdir().expect("tmp");
        let comma = d.path().join("a,b");
        assert!(MonitorSocket::new(&comma).expect_err("comma").to_string().contains("comma"));
        let long = d.path().join("x".repeat(120));
        assert!(MonitorSocket::new(&long).expect_err("long").to_string().contains("at most 107"));
        let nowhere = d.path().join("missing").join("m.sock");
        let err = MonitorSocket::new(&nowhere).expect_err("no folder").to_string();
        assert!(err.contains("missing does not exist"), "{err}");
        let file = d.path().join("notes.txt");
        std::fs::write(&file, "keep me").expect("w");
        assert!(matches!(MonitorSocket::new(&file), Err(MonitorError::NotASocket { .. })));
        assert_eq!(std::fs::read_to_string(&file).expect("r"), "keep me");
    }

    #[test]
    fn an_old_socket_is_replaced_and_the_socket_goes_with_the_guard() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("m.sock");
        let old = std::os::unix::net::UnixListener::bind(&p).expect("bind");
        drop(old);
        assert!(p.exists(), "a socket outlives its listener");
        let m = MonitorSocket::new(&p).expect("ok");
        assert!(!p.exists(), "the stale socket was removed");
        let _qemu = std::os::unix::net::UnixListener::bind(&p).expect("bind again");
        drop(m);
        assert!(!p.exists(), "removed with the guard");
    }
}
