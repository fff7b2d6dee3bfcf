//! manarig harness: everything around the emulated NIC.
//!
//! - topology files and the kernel reference model (expected IRQ tables);
//! - provisioning (QEMU, pinned Debian kernels, busybox) and the initramfs;
//! - the QEMU launcher, the guest report parser and the observed-topology check;
//! - the verdict and its output formats.
//!
//! Exit codes of every command: 0 pass, 1 verdict mismatch, 2 rig error.

pub mod accel;
pub mod cli;
pub mod guest_report;
pub mod initramfs;
pub mod observed;
pub mod provision;
pub mod qemu;
