//! Temporary folders of runs and boots (`$TMPDIR/manarig-run-*`,
//! `manarig-boot-*`: sockets, the initramfs, status files). Each holds an
//! exclusive flock(2) on its `.owner` file for as long as its process lives.
//! A folder is removed when its owner drops it; one left by a process that was
//! killed with SIGKILL (a CI job's timeout, the OOM killer), which no handler
//! sees, is removed by the next run or boot ([`sweep_stale`]): its lock is free.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Prefixes of the folders made here.
const PREFIXES: [&str; 2] = ["manarig-run-", "manarig-boot-"];
/// The lock file inside each folder.
const OWNER: &str = ".owner";

/// A temporary folder removed on drop, locked while this process holds it.
#[derive(Debug)]
pub struct ScratchDir {
    dir: tempfile::TempDir,
    _owner: File,
}

impl ScratchDir {
    /// Make `$TMPDIR/<prefix>XXXXXX` (prefix `manarig-run-` or
    /// `manarig-boot-`) and lock it. The first one made in a process removes
    /// stale folders first (a run makes two: its own and its boot's).
    ///
    /// # Errors
    /// The folder or its lock file cannot be made, or the lock cannot be taken.
    pub fn new(prefix: &str) -> io::Result<ScratchDir> {
        debug_assert!(PREFIXES.contains(&prefix), "{prefix} is not swept");
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| {
            sweep_stale();
        });
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        // Locked under another name, then renamed: a sweeper never sees an
        // unlocked `.owner` in a live folder.
        let pending = dir.path().join(".owner.pending");
        let owner = File::create(&pending)?;
        if !try_lock(&owner)? {
            return Err(io::Error::new(io::ErrorKind::WouldBlock, "lock of a new temporary folder is taken"));
        }
        std::fs::rename(&pending, dir.path().join(OWNER))?;
        Ok(ScratchDir { dir, _owner: owner })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Remove every `manarig-run-*`/`manarig-boot-*` folder in `$TMPDIR` whose
/// `.owner` lock is free (its process is gone). Folders without `.owner`
/// (older manarig versions, or still being made) are left alone. Best effort:
/// errors are ignored. Returns the folders removed.
pub fn sweep_stale() -> Vec<PathBuf> {
    sweep_in(&std::env::temp_dir())
}

fn sweep_in(tmp: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(tmp) else { return Vec::new() };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !PREFIXES.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let dir = e.path();
        let Ok(owner) = File::open(dir.join(OWNER)) else { continue };
        if try_lock(&owner).unwrap_or(false) && std::fs::remove_dir_all(&dir).is_ok() {
            tracing::debug!(dir = %dir.display(), "removed the temporary folder of a killed manarig");
            removed.push(dir);
        }
    }
    removed
}

/// flock(LOCK_EX | LOCK_NB): Ok(false) when another open file holds it.
pub fn try_lock(f: &File) -> io::Result<bool> {
    // SAFETY: flock(2) on a file descriptor we own; no pointers.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_folder_stays_and_a_dead_ones_goes() {
        let tmp = tempfile::tempdir().expect("tmp");
        // Live: this process holds the lock (a separate open file, as another
        // process would).
        let live = tmp.path().join("manarig-run-live");
        std::fs::create_dir(&live).expect("mkdir");
        let held = File::create(live.join(OWNER)).expect("owner");
        assert!(try_lock(&held).expect("lock"));
        // Dead: the lock file exists, nobody holds it.
        let dead = tmp.path().join("manarig-boot-dead");
        std::fs::create_dir(&dead).expect("mkdir");
        File::create(dead.join(OWNER)).expect("owner");
        std::fs::write(dead.join("initramfs.cpio"), b"x").expect("file");
        // Unknown: no lock file (an older version, or one being made).
        let unknown = tmp.path().join("manarig-run-old");
        std::fs::create_dir(&unknown).expect("mkdir");
        // Not ours.
        let other = tmp.path().join("other-dead");
        std::fs::create_dir(&other).expect("mkdir");
        File::create(other.join(OWNER)).expect("owner");

        assert_eq!(sweep_in(tmp.path()), vec![dead.clone()]);
        assert!(live.exists() && unknown.exists() && other.exists() && !dead.exists());
        drop(held);
        assert_eq!(sweep_in(tmp.path()), vec![live.clone()]);
    }

    #[test]
    fn a_new_folder_is_locked_until_dropped() {
        let d = ScratchDir::new("manarig-run-").expect("scratch");
        let path = d.path().to_path_buf();
        let other = File::open(path.join(OWNER)).expect("open");
        assert!(!try_lock(&other).expect("try"), "held while the ScratchDir lives");
        drop(d);
        assert!(!path.exists());
    }
}
