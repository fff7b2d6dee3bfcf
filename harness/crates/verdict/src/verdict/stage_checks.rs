//! The checks a rig run makes on its stages (a first probe kept with `--reprobe`,
//! a CPU hotplug's `probe` and `offline-after`, then the report): every active
//! channel's EQ raises a vector the guest has an IRQ for, a re-probe rebuilds the
//! same IRQ and queue tables, and each hotplug stage's IRQ table is the model's for
//! that stage's CPU state.

use super::check::{Check, CheckStatus, Status};
use super::outcome::Verdict;
use super::stages::{QueueStage, QueueTable, StageFacts, HOTPLUG_STAGES, QUEUE_IRQS_CHECK, REPORT_STAGE};
use crate::text::plural;

/// (vector name, `smp_affinity_list`) of every row, for comparing two moments.
fn irq_cpus(v: &Verdict) -> Vec<(String, String)> {
    v.vectors
        .iter()
        .map(|r| {
            (r.name.clone(), r.observed.as_ref().map_or("missing".to_owned(), |o| o.smp_affinity_list.to_cpulist()))
        })
        .collect()
}

/// Lines naming the entries that differ between two keyed lists.
fn list_differences<K: PartialEq + std::fmt::Display>(
    a: &[(K, String)],
    b: &[(K, String)],
    stage: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for (k, x) in a {
        match b.iter().find(|(kb, _)| kb == k) {
            Some((_, y)) if x == y => {}
            Some((_, y)) => out.push(format!("{k}: {x} at {stage}, {y} at the {REPORT_STAGE}")),
            None => out.push(format!("{k}: {x} at {stage}, absent at the {REPORT_STAGE}")),
        }
    }
    for (k, y) in b.iter().filter(|(k, _)| !a.iter().any(|(ka, _)| ka == k)) {
        out.push(format!("{k}: absent at {stage}, {y} at the {REPORT_STAGE}"));
    }
    out
}

/// A stage name as part of a check name (`first-probe` → `first_probe`).
fn check_word(stage: &str) -> String {
    stage.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// Name of the check comparing the report's IRQ table with `stage`'s.
pub fn same_irq_table_check(stage: &str) -> String {
    format!("same_irq_table_as_{}", check_word(stage))
}

/// Name of the check comparing the report's queue table with `stage`'s.
pub fn same_queue_table_check(stage: &str) -> String {
    format!("same_queue_table_as_{}", check_word(stage))
}

/// Name of the check judging a hotplug stage's IRQ table against the model for that
/// stage's CPU state (`offline-after` → `irq_table_at_offline_after`).
pub fn stage_irq_table_check(stage: &str) -> String {
    format!("irq_table_at_{}", check_word(stage))
}

/// A hotplug stage ([`HOTPLUG_STAGES`]) judged on its own: `v` is [`judge`](super::judge())'s
/// verdict of the stage's IRQ table against the model's table for the CPUs online then.
/// It fails when that verdict does, naming the stage's failed checks (their messages
/// in `detail`), so the run's count of failed checks includes the stage.
fn stage_irq_table(name: &str, v: &Verdict, online: Option<&crate::cpulist::CpuMask>) -> Check {
    let check = stage_irq_table_check(name);
    let at = online.map_or(String::new(), |o| format!(" (online CPUs {})", o.to_cpulist()));
    let all = plural(v.checks.len(), "check");
    let failed: Vec<&Check> = v.failures().collect();
    if v.status == Status::Pass {
        let passed = v.checks.iter().filter(|c| c.status == CheckStatus::Pass).count();
        return Check::new(
            check,
            CheckStatus::Pass,
            format!("at stage {name}{at} the IRQ table is the model's for that CPU state ({passed} of {all} passed)"),
        );
    }
    let names: Vec<&str> = failed.iter().map(|c| c.name.as_str()).collect();
    let mut c = Check::new(
        check,
        CheckStatus::Fail,
        format!(
            "at stage {name}{at} the IRQ table is not the model's for that CPU state: {} of {all} failed: {}",
            failed.len(),
            names.join(", ")
        ),
    );
    c.detail = failed.iter().map(|f| format!("{}: {}", f.name, f.message)).collect();
    c
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Pass => "PASS",
        Status::Fail => "FAIL",
    }
}

/// A re-probe must rebuild the IRQ table it had (`--reprobe`: "require the
/// same IRQ and queue tables"): same verdict, same vectors, same
/// `smp_affinity_list` each.
fn same_irq_table(name: &str, earlier: &Verdict, report: &Verdict) -> Check {
    let (a, b) = (irq_cpus(earlier), irq_cpus(report));
    let mut detail = list_differences(&a, &b, name);
    if earlier.status != report.status {
        detail.insert(
            0,
            format!(
                "verdict {} at {name}, {} at the {REPORT_STAGE}",
                status_word(earlier.status),
                status_word(report.status)
            ),
        );
    }
    let mut c = if detail.is_empty() {
        Check::new(
            same_irq_table_check(name),
            CheckStatus::Pass,
            format!(
                "the IRQ table at the {REPORT_STAGE} is the one at {name} ({}, same smp_affinity_list)",
                plural(b.len(), "IRQ")
            ),
        )
    } else {
        Check::new(
            same_irq_table_check(name),
            CheckStatus::Fail,
            format!("the IRQ table at the {REPORT_STAGE} differs from {name}: {}", detail[0]),
        )
    };
    c.detail = detail.into_iter().skip(1).collect();
    c
}

/// The same for the queue table: each channel on the same MSI-X index and CPUs.
fn same_queue_table(name: &str, earlier: Option<&QueueTable>, report: Option<&QueueTable>) -> Check {
    let check = same_queue_table_check(name);
    let (Some(a), Some(b)) = (earlier, report) else {
        let missing = if earlier.is_none() { name } else { REPORT_STAGE };
        return Check::new(
            check,
            CheckStatus::Skip,
            format!("no queue table at {missing}: the device status was not taken"),
        );
    };
    let keyed = |t: &QueueTable| -> Vec<(usize, String)> {
        t.channel_cpus()
            .into_iter()
            .map(|(ch, msix, cpus)| (ch, format!("MSI-X {msix}, CPUs {}", cpus.unwrap_or_else(|| "-".into()))))
            .collect()
    };
    let detail: Vec<String> =
        list_differences(&keyed(a), &keyed(b), name).into_iter().map(|d| format!("channel {d}")).collect();
    let mut c = if detail.is_empty() {
        Check::new(
            check,
            CheckStatus::Pass,
            format!(
                "the queue table at the {REPORT_STAGE} is the one at {name} ({}, same MSI-X vectors and CPUs)",
                plural(b.rows.len(), "channel")
            ),
        )
    } else {
        Check::new(
            check,
            CheckStatus::Fail,
            format!("the queue table at the {REPORT_STAGE} differs from {name}: {}", detail[0]),
        )
    };
    c.detail = detail.into_iter().skip(1).collect();
    c
}

/// Every active channel's EQ raises an MSI-X vector the guest has an IRQ for
/// (else its interrupts go nowhere the IRQ table shows), at every stage.
fn queue_irqs(stages: &[QueueStage]) -> Check {
    let tables: Vec<(&str, &QueueTable)> =
        stages.iter().filter_map(|s| s.facts.table.as_ref().map(|t| (s.stage.as_str(), t))).collect();
    let channels: usize = tables.iter().map(|(_, t)| t.rows.len()).sum();
    if channels == 0 {
        let why = if tables.is_empty() { "the device status was not taken" } else { "no channel has queues" };
        return Check::new(QUEUE_IRQS_CHECK, CheckStatus::Skip, format!("no active channel to check: {why}"));
    }
    let missing: Vec<String> = tables
        .iter()
        .flat_map(|(stage, t)| {
            t.rows.iter().filter(|r| r.irq.is_none()).map(move |r| {
                format!(
                    "{stage}: channel {} (EQ {}, MSI-X {}) has no guest IRQ for its vector",
                    r.channel, r.eq, r.msix_index
                )
            })
        })
        .collect();
    let per_stage: Vec<String> = tables.iter().map(|(s, t)| format!("{s}: {}", t.rows.len())).collect();
    let mut c = if missing.is_empty() {
        Check::new(
            QUEUE_IRQS_CHECK,
            CheckStatus::Pass,
            format!("every active channel's EQ vector has a guest IRQ (channels {})", per_stage.join(", ")),
        )
    } else {
        Check::new(
            QUEUE_IRQS_CHECK,
            CheckStatus::Fail,
            format!("{} without a guest IRQ for its vector: {}", plural(missing.len(), "active channel"), missing[0]),
        )
    };
    c.detail = missing.into_iter().skip(1).collect();
    c
}

impl Verdict {
    /// Attach a rig run's stages: `earlier` (name, that moment's verdict, its
    /// facts) in run order, then the report's facts. Sets `queues` (earlier
    /// stages first, [`REPORT_STAGE`] last) and appends the checks:
    /// [`QUEUE_IRQS_CHECK`], and per earlier stage [`same_irq_table_check`] and
    /// [`same_queue_table_check`], or for the [`HOTPLUG_STAGES`] (whose tables differ
    /// from the report's on purpose) [`stage_irq_table_check`]. Each earlier stage keeps
    /// its IRQ rows (`vectors`). The status becomes Fail if a check fails.
    pub fn add_stages(&mut self, earlier: Vec<(&str, &Verdict, StageFacts)>, report: StageFacts) {
        let mut stages: Vec<QueueStage> = earlier
            .iter()
            .map(|(name, v, facts)| QueueStage {
                stage: (*name).to_owned(),
                status: v.status,
                facts: StageFacts { vectors: Some(v.vectors.clone()), ..facts.clone() },
            })
            .collect();
        stages.push(QueueStage { stage: REPORT_STAGE.to_owned(), status: self.status, facts: report });
        let report_table = stages.last().and_then(|s| s.facts.table.as_ref());
        let mut checks = vec![queue_irqs(&stages)];
        for (name, v, facts) in &earlier {
            if HOTPLUG_STAGES.contains(name) {
                checks.push(stage_irq_table(name, v, facts.online.as_ref()));
                continue;
            }
            checks.push(same_irq_table(name, v, self));
            checks.push(same_queue_table(name, facts.table.as_ref(), report_table));
        }
        if checks.iter().any(|c| c.status == CheckStatus::Fail) {
            self.status = Status::Fail;
        }
        self.checks.extend(checks);
        self.queues = Some(stages);
    }
}
