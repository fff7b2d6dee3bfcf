//! Guest tools beyond busybox, each with the shared libraries it loads, laid
//! out as the guest expects them: Debian's `ethtool` (busybox has no ethtool
//! applet, and `ethtool -L` is how the seeds set channels) and `irqbalance`
//! (`run --irqbalance`).
//!
//! `<cache>/<tool>/` holds the files under their guest paths (below) and a
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

/// (path inside the unpacked packages, path in the guest) for irqbalance: the
/// binary and the libraries of its ELF `NEEDED` closure (`readelf -d` on Debian
/// trixie's irqbalance 1.9.4 and each library: libcap-ng, glib → libatomic,
/// libpcre2-8; libnuma; libsystemd → libcap; libm, libc, the loader), under the
/// same guest paths as [`ETHTOOL_FILES`] where both have a file (identical:
/// the same libc6 pin).
pub const IRQBALANCE_FILES: &[(&str, &str)] = &[
    ("usr/sbin/irqbalance", "sbin/irqbalance"),
    ("usr/lib/x86_64-linux-gnu/libcap-ng.so.0", "lib/x86_64-linux-gnu/libcap-ng.so.0"),
    ("usr/lib/x86_64-linux-gnu/libglib-2.0.so.0", "lib/x86_64-linux-gnu/libglib-2.0.so.0"),
    ("usr/lib/x86_64-linux-gnu/libatomic.so.1", "lib/x86_64-linux-gnu/libatomic.so.1"),
    ("usr/lib/x86_64-linux-gnu/libpcre2-8.so.0", "lib/x86_64-linux-gnu/libpcre2-8.so.0"),
    ("usr/lib/x86_64-linux-gnu/libnuma.so.1", "lib/x86_64-linux-gnu/libnuma.so.1"),
    ("usr/lib/x86_64-linux-gnu/libsystemd.so.0", "lib/x86_64-linux-gnu/libsystemd.so.0"),
    ("usr/lib/x86_64-linux-gnu/libcap.so.2", "lib/x86_64-linux-gnu/libcap.so.2"),
    ("usr/lib/x86_64-linux-gnu/libc.so.6", "lib/x86_64-linux-gnu/libc.so.6"),
    ("usr/lib/x86_64-linux-gnu/libm.so.6", "lib/x86_64-linux-gnu/libm.so.6"),
    ("usr/lib64/ld-linux-x86-64.so.2", "lib64/ld-linux-x86-64.so.2"),
];

/// A guest tool: its name (the cache folder's and the errors') and its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// `ethtool`, `irqbalance`: `<cache>/<name>/`.
    pub name: &'static str,
    /// (path in the unpacked packages, path in the guest).
    pub files: &'static [(&'static str, &'static str)],
}

/// ethtool ([`ETHTOOL_FILES`]).
pub const ETHTOOL: Tool = Tool { name: "ethtool", files: ETHTOOL_FILES };
/// irqbalance ([`IRQBALANCE_FILES`]).
pub const IRQBALANCE: Tool = Tool { name: "irqbalance", files: IRQBALANCE_FILES };

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

/// A symbolic link to put into the initramfs (a package's own links, e.g.
/// `libffi.so.8 -> libffi.so.8.1.4`, or the ELF interpreter path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestLink {
    /// Path in the guest, relative to `/`.
    pub guest_path: String,
    /// What the link points to, as the package has it (relative or absolute).
    pub target: String,
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
    tool_files(ETHTOOL, dir)
}

/// `tool`'s files in its provisioned folder `dir`, in the tool's order.
pub fn tool_files(tool: Tool, dir: &Path) -> Vec<GuestFile> {
    tool.files
        .iter()
        .map(|&(_, guest)| GuestFile { guest_path: guest.to_string(), host: dir.join(guest), mode: mode_of(guest) })
        .collect()
}

/// Whether `dir` holds ethtool from exactly `pin`.
pub fn ethtool_ready(dir: &Path, pin: &ToolPin) -> bool {
    tool_ready(ETHTOOL, dir, pin)
}

/// Whether `dir` holds `tool` from exactly `pin`.
pub fn tool_ready(tool: Tool, dir: &Path, pin: &ToolPin) -> bool {
    super::read_stamp::<ToolStamp>(&dir.join("stamp.json")).is_some_and(|s| &s.pin == pin)
        && tool_files(tool, dir).iter().all(|f| f.host.is_file())
}

/// Unpack the pinned packages (`debs`, already verified) and copy the files of
/// [`ETHTOOL_FILES`] into `dir`, then write the stamp.
///
/// # Errors
/// As [`install_tool`].
pub fn install_ethtool(cache: &Path, debs: &[PathBuf], pin: &ToolPin, dir: &Path) -> Result<(), ProvisionError> {
    install_tool(ETHTOOL, cache, debs, pin, dir)
}

/// Unpack the pinned packages (`debs`, already verified) and copy `tool`'s
/// files into `dir`, then write the stamp.
///
/// # Errors
/// [`ProvisionError::Package`] when a package lacks one of the files;
/// I/O errors with the path.
pub fn install_tool(
    tool: Tool,
    cache: &Path,
    debs: &[PathBuf],
    pin: &ToolPin,
    dir: &Path,
) -> Result<(), ProvisionError> {
    let tmp = tempfile::tempdir_in(cache).map_err(|e| ProvisionError::io(cache, e))?;
    for deb in debs {
        apt::extract_deb(deb, tmp.path())?;
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| ProvisionError::io(dir, e))?;
    }
    for &(from, to) in tool.files {
        let src = tmp.path().join(from);
        if !src.exists() {
            let names: Vec<&str> = pin.packages.iter().map(|p| p.name.as_str()).collect();
            let tool = tool.name;
            return Err(ProvisionError::Package(format!("{tool}: no {from} in the packages {}", names.join(", "))));
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
    fn irqbalance_shares_ethtools_libc_paths_and_modes() {
        let ours = tool_files(IRQBALANCE, Path::new("/c/irqbalance"));
        let theirs = ethtool_files(Path::new("/c/ethtool"));
        assert_eq!(ours[0].guest_path, "sbin/irqbalance");
        for f in &theirs[1..] {
            if f.guest_path.contains("libmnl") {
                continue;
            }
            let same = ours.iter().find(|o| o.guest_path == f.guest_path).expect("libc, libm and the loader");
            assert_eq!(same.mode, f.mode);
        }
    }

    #[test]
    fn an_empty_folder_is_not_ready() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pin = ToolPin { packages: vec![] };
        assert!(!ethtool_ready(dir.path(), &pin));
    }
}
