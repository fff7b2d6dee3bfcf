//! A verdict judged without the model: the guest's table against the
//! [properties](super::evaluate) plus the checks of the rig's own that never
//! compare with the model's table ([`rig_checks`]). Used where the model cannot
//! judge the kernel: a driver source no model recognises (the matrix's
//! properties and auto oracles), or a Debian image standing in for a pin whose
//! `mana.ko` runs another generation's code than the pin's.
//!
//! Which of the model verdict's checks stay:
//! - kept: `nic_numa_node` (the guest's NIC node against the file's
//!   placement: a rig fact), `effective_within_affinity` (each fired IRQ was
//!   delivered inside its own mask), the stage and queue checks (the IRQ and
//!   queue tables at the first probe and at the report agree, every queue has
//!   its IRQ, `ndo_open` created a queue pair per channel);
//! - dropped: `kernel_generation` (whether the model fits the kernel),
//!   `vector_count`, `no_unexpected_vectors`, each vector's check and a CPU
//!   hotplug stage's `irq_table_at_<stage>` (the model's tables), and `probe`
//!   (whether the driver should bind is the model's prediction: a one-entry
//!   MSI-X table fails the probe on purpose). Without a probe the properties
//!   skip (no vector to judge), so a driver that fails to bind is visible
//!   there and in the baseline's `baseline_vectors`.

use super::evaluate;
use crate::topology::Topology;
use crate::verdict::{stage_irq_table_check, Check, CheckStatus, Observed, Status, Verdict, HOTPLUG_STAGES};

/// The checks of the model's verdict that need no model (see the module's docs).
pub fn rig_checks(model: &Verdict) -> Vec<Check> {
    const MODEL_CHECKS: [&str; 4] = ["kernel_generation", "probe", "vector_count", "no_unexpected_vectors"];
    model
        .checks
        .iter()
        .filter(|c| {
            !MODEL_CHECKS.contains(&c.name.as_str())
                && !model.vectors.iter().any(|r| r.name == c.name)
                && !HOTPLUG_STAGES.iter().any(|s| c.name == stage_irq_table_check(s))
        })
        .cloned()
        .collect()
}

/// `model` with `checks` instead of its own, and the status they give.
pub fn with_checks(model: &Verdict, checks: Vec<Check>) -> Verdict {
    let mut v = model.clone();
    v.status = if checks.iter().any(|c| c.status == CheckStatus::Fail) { Status::Fail } else { Status::Pass };
    v.checks = checks;
    v
}

/// The model's verdict of a run judged again without the model: [`rig_checks`]
/// plus the properties of the guest's table (`guest`: the topology in QEMU
/// numbering); `why` says why the model could not judge, and goes into the
/// verdict's `judged_by`.
pub fn judge_without_model(model: &Verdict, guest: &Topology, observed: &Observed, why: &str) -> Verdict {
    let mut checks = rig_checks(model);
    checks.extend(evaluate(guest, observed));
    let mut v = with_checks(model, checks);
    v.run.judged_by = Some(format!("the properties oracle: {why}"));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 002 with CPUs 2-3 offlined after the probe, on 6.12, where the probe's
    /// table is already the one after the hotplug: `irq_table_at_probe` fails against
    /// the model's table for that moment, so a verdict without the model drops it with
    /// the model's other checks and keeps the rig's.
    #[test]
    fn a_hotplug_stage_s_check_is_one_of_the_model_s() {
        use crate::model::{expected_stages, KernelGen};
        use crate::verdict::{fixtures::offlined_after, judge_staged, table_at, StageFacts};
        let (t, last) = offlined_after("seed-002", "2-3");
        let at = expected_stages(&t.to_qemu_numbering(), KernelGen::V6_12);
        // The model's table after the hotplug, shown at the probe too: a fail path on
        // purpose; the test is about which checks a verdict without the model keeps.
        let seen = Observed::as_model_predicts(table_at(&at, &last), "0000:42:00.0", 40);
        let facts = StageFacts::default();
        let v = judge_staged(&t, &at, &[("probe", &seen, facts.clone())], &last, &seen, facts);
        let stage = v.checks.iter().find(|c| c.name == "irq_table_at_probe").expect("the stage's check");
        assert_eq!((v.status, stage.status), (Status::Fail, CheckStatus::Fail), "{}", stage.message);
        let kept: Vec<String> = rig_checks(&v).into_iter().map(|c| c.name).collect();
        assert!(!kept.contains(&"irq_table_at_probe".to_owned()), "{kept:?}");
        assert!(kept.contains(&"queue_irqs".to_owned()), "{kept:?}");
    }
}
