//! Pass/fail facts: a run's [`Status`] and each [`Check`] that decides it.

use serde::{Deserialize, Serialize};

/// Outcome of a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Every check passed (or was skipped).
    Pass,
    /// At least one check failed: the guest differs from the model.
    Fail,
}

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckStatus {
    /// The guest agrees with the model.
    Pass,
    /// The guest differs from the model.
    Fail,
    /// Nothing to check (e.g. no vector fired, so effective affinity means nothing yet).
    Skip,
}

/// One pass/fail fact about the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// Stable identifier, a single word usable as a KTAP description or a JUnit test
    /// case name: `kernel_generation`, `nic_numa_node`, `probe`, `vector_count`, the
    /// vector's short IRQ name (`mana_q3`), `no_unexpected_vectors`,
    /// `effective_within_affinity`.
    pub name: String,
    /// Pass, fail or skip.
    pub status: CheckStatus,
    /// One line saying what was compared and what was found (for a failure: vector, IRQ
    /// name, expected vs got cpulists, node, hop).
    pub message: String,
    /// Further lines (one per difference when there are several).
    pub detail: Vec<String>,
}

impl Check {
    pub(super) fn new(name: impl Into<String>, status: CheckStatus, message: impl Into<String>) -> Self {
        Self { name: name.into(), status, message: message.into(), detail: Vec::new() }
    }

    pub(super) fn pass_if(name: &str, ok: bool, message: String) -> Self {
        Self::new(name, if ok { CheckStatus::Pass } else { CheckStatus::Fail }, message)
    }
}
