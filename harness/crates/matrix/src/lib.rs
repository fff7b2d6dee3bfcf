//! Many runs: topologies x kernels, sharded, merged, reported (KTAP, JUnit, JSON, KCIDB).
//!
//! Part of the harness (ARCHITECTURE.md has the map).

pub mod matrix;

// The modules of the crates below, under the names the sources use (`crate::topology`).
use manarig_model::{cpulist, model, random, text, topology};
use manarig_provision::{kbuild, provision};
use manarig_qemu::{accel, qemu};
use manarig_rig::rig;
use manarig_verdict::{picture, verdict};
