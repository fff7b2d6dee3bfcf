//! Provisioning (QEMU, pinned Debian kernels, busybox, guest tools, fallbacks) and guest kernels built from source.
//!
//! Part of the harness (ARCHITECTURE.md has the map).

pub mod kbuild;
pub mod provision;

// The modules of the crates below, under the names the sources use (`crate::topology`).
use manarig_model::{model, text, topology};
use manarig_proc::{children, scratch};
