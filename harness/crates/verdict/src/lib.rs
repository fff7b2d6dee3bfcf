//! The verdict: the guest's IRQ table judged against the model, and every report format and picture.
//!
//! Part of the harness (ARCHITECTURE.md has the map).

pub mod picture;
pub mod verdict;

// The modules of the crates below, under the names the sources use (`crate::topology`).
use manarig_guest::guest_protocol;
#[cfg(test)]
use manarig_model::random;
use manarig_model::{cpulist, model, packages, text, topology};
use manarig_selftests::selftests;
use manarig_traffic::traffic;
