//! The oracle seam: who decides whether a pair passes.
//!
//! A runner ([`super::pair_runner`]) boots a pair (or asks the model, in a dry run)
//! and hands the [`Evidence`] to an [`Oracle`], which returns the pair's
//! [`Verdict`]: the one value every format (summary, JUnit, KTAP, JSON, KCIDB)
//! renders. The default, [`ModelOracle`], is what `run` does: the guest's
//! `/proc/irq` table against the kernel reference model, with the rig's stage
//! and queue checks. Other oracles (invariants that must hold on any topology,
//! a diff against a baseline run, …) judge the same evidence their own way and
//! say so in their checks (the `other_oracles` module beside this one: properties,
//! baseline, auto, and `by_name`); they plug in by implementing [`Oracle`]. An oracle's [`Oracle::identity`] is part of the
//! matrix's spec, so shards judged differently refuse to merge.

use super::kernels::KernelSpec;
use super::pair_runner::Observation;
use super::spec::PlannedPair;
use crate::rig::kernel_choice::ResolvedKernel;
use crate::topology::Topology;
use crate::verdict::baseline::Baseline;
use crate::verdict::Verdict;

/// Everything known about one pair once it ran.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    /// The pair (name, files, kernel label, cost, shard).
    pub pair: &'a PlannedPair,
    /// The topology as loaded from the pair's file (the file's CPU numbering).
    pub topology: &'a Topology,
    /// The kernel that ran, resolved (generation, model basis, build).
    pub kernel: &'a ResolvedKernel,
    /// The kernel as the spec records it (identity, patch set).
    pub kernel_spec: &'a KernelSpec,
    /// What the run produced: the guest's vectors, the model's verdict and,
    /// for a boot, the whole run.
    pub observation: &'a Observation,
}

/// An oracle that cannot judge a pair (the pair becomes a rig error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("oracle {oracle}: {message}")]
pub struct OracleError {
    /// The oracle's name.
    pub oracle: String,
    /// Why it cannot judge.
    pub message: String,
}

/// An oracle's judgement of one pair: the verdict every format renders and,
/// for the baseline oracle, the comparison with the baseline kernel's run.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The pair's verdict (its checks are the oracle's).
    pub verdict: Verdict,
    /// The baseline comparison (`--oracle baseline` only).
    pub baseline: Option<Box<Baseline>>,
}

impl From<Verdict> for Judged {
    fn from(verdict: Verdict) -> Self {
        Judged { verdict, baseline: None }
    }
}

/// Decides a pair's verdict from its evidence.
pub trait Oracle: Send + Sync {
    /// Its name in reports and on the command line (`model`).
    fn name(&self) -> &str;

    /// What decides its judgements, for the matrix's spec: the name, plus
    /// whatever input it reads (e.g. a baseline file's hash). Default: the name.
    fn identity(&self) -> String {
        self.name().to_owned()
    }

    /// The pair's verdict. Its `run.name` should stay the pair's name.
    ///
    /// # Errors
    /// [`OracleError`] when the evidence cannot be judged (e.g. no baseline
    /// for the pair); the pair is then a rig error.
    fn judge(&self, evidence: &Evidence<'_>) -> Result<Judged, OracleError>;
}

/// The kernel reference model, as `run` judges: the model's verdict that the
/// runner computed, unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelOracle;

impl Oracle for ModelOracle {
    fn name(&self) -> &str {
        "model"
    }

    fn judge(&self, evidence: &Evidence<'_>) -> Result<Judged, OracleError> {
        Ok(evidence.observation.model_verdict().clone().into())
    }
}
