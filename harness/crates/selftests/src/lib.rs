//! The kernel's own drivers/net selftests against the emulated MANA: the test
//! tree and its C helpers from the guest kernel's source, the guest's remote
//! NIC modules, the tests' catalog, their KTAP and the per-series baselines.
//!
//! Part of the harness (ARCHITECTURE.md has the map). The verdict uses only the
//! pure parts (`catalog`, `ktap`, `baseline`).

pub mod selftests;

// The modules of the crates below, under the names the sources use (`crate::provision`).
use manarig_provision::{kbuild, provision};
