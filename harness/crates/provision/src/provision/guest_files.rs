//! What goes into a guest's initramfs from the cache: files and links under
//! their guest paths.

use std::path::PathBuf;

/// A symbolic link to put into the initramfs (a package's own links, e.g.
/// `libffi.so.8 -> libffi.so.8.1.4`, or the ELF interpreter path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestLink {
    /// Path in the guest, relative to `/`.
    pub guest_path: String,
    /// What the link points to, as the package has it (relative or absolute).
    pub target: String,
}

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
