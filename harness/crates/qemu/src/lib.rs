//! The machine description, the initramfs, the accelerator and the QEMU launcher; the guest's topology checked against the machine.
//!
//! Part of the harness (ARCHITECTURE.md has the map).

pub mod accel;
pub mod guest_topology;
pub mod initramfs;
pub mod qemu;

// The modules of the crates below, under the names the sources use (`crate::topology`).
use manarig_guest::guest_protocol;
use manarig_model::{cpulist, topology};
use manarig_proc::{children, scratch};
use manarig_provision::provision;
