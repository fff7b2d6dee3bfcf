//! The guest agent's protocol: its command-line items, markers and report parser (spec: guest-images/README.md).
//!
//! Part of the harness (ARCHITECTURE.md has the map).

pub mod guest_protocol;

// The modules of the crates below, under the names the sources use (`crate::topology`).
use manarig_model::cpulist;
