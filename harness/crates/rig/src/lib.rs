//! One run end to end: provision, boot the guest with the emulated NIC, judge it.
//!
//! Part of the harness (ARCHITECTURE.md has the map).

pub mod rig;

// The modules of the crates below, under the names the sources use (`crate::topology`).
use manarig_guest::guest_protocol;
use manarig_model::{cpulist, model, text, topology};
use manarig_proc::{children, scratch, workspace_bin};
use manarig_provision::{kbuild, provision};
use manarig_qemu::{accel, guest_topology, qemu};
use manarig_selftests::selftests;
use manarig_traffic::traffic;
use manarig_verdict::verdict;
