//! Child processes that never outlive a run, temporary folders, and the workspace's helper binaries.
//!
//! Part of the harness (ARCHITECTURE.md has the map).

pub mod children;
pub mod scratch;
pub mod workspace_bin;
