//! The oracles beside the model: [`PropertiesOracle`] (rules any sane spreading
//! keeps, [`crate::verdict::properties`]), [`BaselineOracle`] (the same pair on
//! a baseline kernel K0, [`crate::verdict::baseline`]) and [`AutoOracle`] (the
//! default: the model where the kernel's driver source is recognised,
//! properties otherwise).
//!
//! Which of the rig's checks an oracle without a model keeps: see
//! [`crate::verdict::properties::rig_checks`].

use super::kernels::KernelSpec;
use super::oracle::{Evidence, Judged, ModelOracle, Oracle, OracleError};
use super::pair_runner::PairRunner;
use super::spec::PlannedPair;
use crate::model::ModelBasis;
use crate::rig::kernel_choice::ResolvedKernel;
use crate::verdict::baseline::compare;
use crate::verdict::properties::{evaluate, rig_checks, with_checks};

/// Judges the guest's table by [`crate::verdict::properties::evaluate`] (in the
/// guest's CPU numbering) plus the rig's own checks ([`rig_checks`]). Each
/// property check names its rule's source and the kernels that keep it.
#[derive(Debug, Clone, Copy, Default)]
pub struct PropertiesOracle;

impl Oracle for PropertiesOracle {
    fn name(&self) -> &str {
        "properties"
    }

    fn judge(&self, evidence: &Evidence<'_>) -> Result<Judged, OracleError> {
        let model = evidence.observation.model_verdict();
        let guest = evidence.topology.to_qemu_numbering();
        let mut checks = rig_checks(model);
        checks.extend(evaluate(&guest, evidence.observation.observed()));
        Ok(with_checks(model, checks).into())
    }
}

/// Whether the model can judge `kernel`: a pinned kernel, a build whose driver
/// source `kbuild::detect` recognised, or a model named with `--model`; not an
/// image taken at its release's word.
pub fn model_recognises(kernel: &ResolvedKernel) -> bool {
    kernel.custom.is_none() || !matches!(kernel.basis, ModelBasis::Release)
}

/// The default oracle: [`ModelOracle`] where [`model_recognises`] the kernel,
/// [`PropertiesOracle`] otherwise.
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoOracle;

impl Oracle for AutoOracle {
    fn name(&self) -> &str {
        "auto"
    }

    fn judge(&self, evidence: &Evidence<'_>) -> Result<Judged, OracleError> {
        if model_recognises(evidence.kernel) {
            ModelOracle.judge(evidence)
        } else {
            PropertiesOracle.judge(evidence)
        }
    }
}

/// Runs each pair also on a baseline kernel K0 (same topology) and judges the
/// pair by [`crate::verdict::baseline::Baseline::checks`] ("not worse than
/// K0") plus the rig's own checks ([`rig_checks`]); the comparison itself
/// (moved vectors, the numbers before and after) goes with the verdict.
pub struct BaselineOracle {
    kernel: ResolvedKernel,
    spec: KernelSpec,
    runner: Box<dyn PairRunner>,
}

impl std::fmt::Debug for BaselineOracle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaselineOracle").field("kernel", &self.spec.label).finish_non_exhaustive()
    }
}

impl BaselineOracle {
    /// The oracle for K0 = `kernel` (resolved and bootable for `runner`),
    /// recorded in the matrix's spec as `spec`.
    pub fn new(kernel: ResolvedKernel, spec: KernelSpec, runner: Box<dyn PairRunner>) -> Self {
        Self { kernel, spec, runner }
    }

    /// The baseline's pair for `pair`: the same topology file on K0, on the
    /// same architecture.
    pub fn baseline_pair(&self, pair: &PlannedPair) -> PlannedPair {
        let mut p = pair.clone();
        p.kernel.clone_from(&self.spec.label);
        p.name = super::spec::pair_name(&pair.topology, &self.spec.label, pair.arch);
        p
    }
}

impl Oracle for BaselineOracle {
    fn name(&self) -> &str {
        "baseline"
    }

    fn identity(&self) -> String {
        format!("baseline {} = {}", self.spec.label, self.spec.identity)
    }

    fn judge(&self, evidence: &Evidence<'_>) -> Result<Judged, OracleError> {
        let err = |message: String| OracleError { oracle: "baseline".into(), message };
        let pair = self.baseline_pair(evidence.pair);
        let k0 = self
            .runner
            .run(&pair, evidence.topology, &self.kernel)
            .map_err(|e| err(format!("the baseline run {}: {}", pair.name, crate::verdict::format::error_text(&e))))?;
        let mut before = k0.model_verdict().clone();
        before.run.name.clone_from(&pair.name);
        let after = evidence.observation.model_verdict();
        let baseline = compare(&before, after).map_err(|e| err(e.to_string()))?;
        let mut checks = rig_checks(after);
        checks.extend(baseline.checks());
        Ok(Judged { verdict: with_checks(after, checks), baseline: Some(Box::new(baseline)) })
    }
}

/// The oracles `--oracle` knows (`baseline` needs `--baseline K0`: see
/// [`BaselineOracle`]; `auto` is the default).
pub const ORACLES: &[&str] = &["model", "properties", "baseline", "auto"];

/// An `--oracle` name that is not in [`ORACLES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("oracle {0:?}: known oracles are {ORACLES:?}")]
pub struct UnknownOracle(pub String);

/// The oracle called `name`, for the oracles that need nothing else
/// (`model`, `properties`, `auto`; `baseline` is made by
/// [`BaselineOracle::new`] with its kernel).
///
/// # Errors
/// [`UnknownOracle`] (also for `baseline`, which this cannot make).
pub fn by_name(name: &str) -> Result<Box<dyn Oracle>, UnknownOracle> {
    match name {
        "model" => Ok(Box::new(ModelOracle)),
        "properties" => Ok(Box::new(PropertiesOracle)),
        "auto" => Ok(Box::new(AutoOracle)),
        other => Err(UnknownOracle(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_oracle_is_the_model_and_unknown_names_are_refused() {
        let o = by_name("model").expect("model");
        assert_eq!((o.name(), o.identity().as_str()), ("model", "model"));
        let e = by_name("astrology").err().expect("unknown");
        assert!(e.to_string().contains("\"model\""), "{e}");
        for name in ["properties", "auto"] {
            assert_eq!(by_name(name).expect(name).identity(), name);
        }
        assert!(by_name("baseline").is_err(), "baseline needs its kernel");
    }
}
