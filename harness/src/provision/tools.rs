//! Guest tools beyond busybox: Debian's `ethtool` (busybox has no ethtool
//! applet, and `ethtool -L` is how the seeds set channels) with the shared
//! libraries it loads, laid out as the guest expects them.
//!
//! `<cache>/ethtool/` holds the files under their guest paths (below) and a
//! `stamp.json` naming the pinned packages they came from.

use super::apt::{self, AptRoot};
use super::lock::ToolPin;
use super::ProvisionError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// (path inside the unpacked packages, path in the guest) for ethtool:
/// the binary, the libraries its ELF `NEEDED` entries name (libm, libmnl, libc:
/// `readelf -d` on Debian trixie's ethtool 6.14) in Debian's multiarch folder,
/// which glibc's loader searches without an ld.so.cache, and the loader at the
/// ELF interpreter path `/lib64/ld-linux-x86-64.so.2`. Symlinks in the
/// packages (libmnl.so.0, the loader) are followed.
pub const ETHTOOL_FILES: &[(&str, &str)] = &[
    ("usr/sbin/ethtool", "sbin/ethtool"),
    ("usr/lib/x86_64-linux-gnu/libc.so.6", "lib/x86_64-linux-gnu/libc.so.6"),
    ("usr/lib/x86_64-linux-gnu/libm.so.6", "lib/x86_64-linux-gnu/libm.so.6"),
    ("usr/lib/x86_64-linux-gnu/libmnl.so.0", "lib/x86_64-linux-gnu/libmnl.so.0"),
    ("usr/lib64/ld-linux-x86-64.so.2", "lib64/ld-linux-x86-64.so.2"),
];

/// A file to put into the initramfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestFile {
    /// Path in the guest, relative to `/` (`sbin/ethtool`).
    pub guest_path: String,
    /// The file on the host.
    pub host: PathBuf,
    /// Permission bits (0o755 for programs and the loader, 0o644 for libraries).
    pub mode: u32,
}

#[derive(Serialize, Deserialize, PartialEq)]
struct ToolStamp {
    pin: ToolPin,
}

fn mode_of(guest_path: &str) -> u32 {
    if guest_path.starts_with("sbin/") || guest_path.starts_with("lib64/") {
        0o755
    } else {
        0o644
    }
}

/// The ethtool files of a provisioned cache, in [`ETHTOOL_FILES`] order.
pub fn ethtool_files(dir: &Path) -> Vec<GuestFile> {
    ETHTOOL_FILES
        .iter()
        .map(|&(_, guest)| GuestFile { guest_path: guest.to_string(), host: dir.join(guest), mode: mode_of(guest) })
        .collect()
}

/// Whether `dir` holds ethtool from exactly `pin`.
pub fn ethtool_ready(dir: &Path, pin: &ToolPin) -> bool {
    super::read_stamp::<ToolStamp>(&dir.join("stamp.json")).is_some_and(|s| &s.pin == pin)
        && ethtool_files(dir).iter().all(|f| f.host.is_file())
}

/// Unpack the pinned packages (`debs`, already verified) and copy the files of
/// [`ETHTOOL_FILES`] into `dir`, then write the stamp.
///
/// # Errors
/// [`ProvisionError::Package`] when a package lacks one of the files;
/// I/O errors with the path.
pub fn install_ethtool(cache: &Path, debs: &[PathBuf], pin: &ToolPin, dir: &Path) -> Result<(), ProvisionError> {
    let tmp = tempfile::tempdir_in(cache).map_err(|e| ProvisionError::io(cache, e))?;
    for deb in debs {
        apt::extract_deb(deb, tmp.path())?;
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| ProvisionError::io(dir, e))?;
    }
    for &(from, to) in ETHTOOL_FILES {
        let src = tmp.path().join(from);
        if !src.exists() {
            let names: Vec<&str> = pin.packages.iter().map(|p| p.name.as_str()).collect();
            return Err(ProvisionError::Package(format!("ethtool: no {from} in the packages {}", names.join(", "))));
        }
        let dst = dir.join(to);
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent).map_err(|e| ProvisionError::io(parent, e))?;
        }
        // fs::copy follows symlinks (libmnl.so.0, the loader): the guest gets the files.
        std::fs::copy(&src, &dst).map_err(|e| ProvisionError::io(&dst, e))?;
    }
    super::write_stamp(&dir.join("stamp.json"), &ToolStamp { pin: pin.clone() })
}

/// Download (or reuse) the pinned packages of `pin` into `<cache>/debs`.
pub(super) fn fetch(
    a: &AptRoot,
    cache: &Path,
    pin: &ToolPin,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<PathBuf>, ProvisionError> {
    pin.packages.iter().map(|p| super::fetch_pinned(a, cache, p, progress)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethtool_files_keep_the_elf_interpreter_path_and_executable_bits() {
        let files = ethtool_files(Path::new("/c/ethtool"));
        let loader = files.iter().find(|f| f.guest_path == "lib64/ld-linux-x86-64.so.2").expect("loader");
        assert_eq!(loader.mode, 0o755);
        assert_eq!(loader.host, Path::new("/c/ethtool/lib64/ld-linux-x86-64.so.2"));
        assert_eq!(files[0].guest_path, "sbin/ethtool");
        assert_eq!(files[0].mode, 0o755);
        assert!(files.iter().filter(|f| f.guest_path.ends_with(".so.6")).all(|f| f.mode == 0o644));
    }

    #[test]
    fn an_empty_folder_is_not_ready() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pin = ToolPin { packages: vec![] };
        assert!(!ethtool_ready(dir.path(), &pin));
    }
}
