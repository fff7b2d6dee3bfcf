//! Packets through the emulated NIC: the peer process in a private network namespace and the flow plan.
//!
//! Part of the harness (ARCHITECTURE.md has the map).

pub mod traffic;

// The modules of the crates below, under the names the sources use (`crate::topology`).
use manarig_proc::{children, workspace_bin};
