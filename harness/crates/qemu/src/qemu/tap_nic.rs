//! A guest NIC of QEMU's own on a TAP the caller opened (the selftests'
//! remote end: a virtio-net NIC whose TAP sits in the rig's private network
//! namespace). QEMU inherits the TAP's descriptor under a fixed number
//! ([`FIRST_FD`] + the NIC's index) and takes it with `-netdev tap,fd=N`:
//! QEMU needs no privilege and the host's network is never touched.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

/// The descriptor number the first TAP has in QEMU (the next ones follow):
/// above stdin/stdout/stderr and the few QEMU's launcher opens itself.
pub const FIRST_FD: i32 = 20;

/// A virtio-net NIC on a TAP.
#[derive(Debug, Clone)]
pub struct TapNic {
    /// The TAP (an `IFF_TAP | IFF_NO_PI` descriptor: no vnet header).
    pub fd: Arc<OwnedFd>,
    /// Its MAC (`52:54:…` style, colon-separated).
    pub mac: String,
}

impl TapNic {
    /// QEMU's arguments for NIC `index`: the netdev on the inherited
    /// descriptor and a `virtio-net-pci` device on it (no vhost: the TAP was
    /// not opened for it; checksum and segmentation in the guest's software),
    /// on the root bus (q35's `pcie.0`: the NUMA expander buses take bridges only).
    pub fn qemu_args(&self, index: usize) -> Vec<String> {
        let fd = FIRST_FD + index as i32;
        vec![
            "-netdev".into(),
            format!("tap,id=tapnic{index},fd={fd},vhost=off"),
            "-device".into(),
            format!("virtio-net-pci,netdev=tapnic{index},mac={},bus=pcie.0", self.mac),
        ]
    }
}

/// In the child between fork and exec: put each NIC's TAP at
/// [`FIRST_FD`] + its index, inherited (not close-on-exec).
///
/// Only async-signal-safe calls (dup2, fcntl).
///
/// # Errors
/// The OS error of dup2 or fcntl.
pub fn inherit(raw: &[i32]) -> std::io::Result<()> {
    for (k, &fd) in raw.iter().enumerate() {
        let target = FIRST_FD + k as i32;
        // SAFETY: dup2 and fcntl act on descriptor numbers of this (child)
        // process only; `fd` is open (the parent holds it).
        unsafe {
            if fd == target {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(fd, target) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// The raw descriptors of `nics`, in order, for [`inherit`].
pub fn raw_fds(nics: &[TapNic]) -> Vec<i32> {
    nics.iter().map(|n| n.fd.as_raw_fd()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nic_is_a_netdev_on_its_descriptor_and_a_virtio_device_with_its_mac() {
        let file = std::fs::File::open("/dev/null").expect("open");
        let nic = TapNic { fd: Arc::new(OwnedFd::from(file)), mac: "02:00:00:00:0e:02".into() };
        assert_eq!(
            nic.qemu_args(1),
            [
                "-netdev",
                "tap,id=tapnic1,fd=21,vhost=off",
                "-device",
                "virtio-net-pci,netdev=tapnic1,mac=02:00:00:00:0e:02,bus=pcie.0"
            ]
        );
    }
}
