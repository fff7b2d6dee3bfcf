//! A real machine's lscpu/numactl paste, sysfs snapshot or hwloc XML turned into a topology file.
//!
//! Part of the harness (ARCHITECTURE.md has the map).

pub mod import;

// The modules of the crates below, under the names the sources use (`crate::topology`).
#[cfg(test)]
use manarig_model::model;
use manarig_model::{cpulist, text, topology};
