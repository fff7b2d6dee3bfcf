//! The verdict: does the guest's `/proc/irq` table match the kernel reference model,
//! and the reports that say so.
//!
//! Public API (the `run` and `compare` commands call these):
//! - inputs: [`Observed`] / [`ObservedVector`] (filled from the guest's console report),
//!   the [`Topology`](crate::topology::Topology) and the model's
//!   [`ExpectedTable`](crate::model::ExpectedTable) for the guest's CPU numbering;
//! - [`judge`]`(&Topology, &Observed, &ExpectedTable) -> Verdict`: a serde value with the
//!   header facts ([`RunInfo`]), the IRQ table ([`VectorRow`]), the reviewers' summary
//!   ([`Summary`]) and every [`Check`]; its [`Status`] is pass or fail;
//! - [`Verdict::add_stages`]: a rig run's stages (link and queue table at the first probe
//!   and at the report, [`QueueStage`]) with the checks on them, and
//!   [`Verdict::add_queue_pairs`]: `ndo_open` created a queue pair per channel;
//! - [`Verdict::add_debug_reports`]: a debug kernel's run, the `debug_reports` check on
//!   the kernel's KASAN, kmemleak, lockdep, WARN and BUG reports ([`debug_reports`]);
//! - [`judge_traffic`] and [`Verdict::add_traffic`]: a traffic run's flows, queues and
//!   CPUs under load ([`TrafficReport`]) with the `traffic_flows`, `rss_steering` and
//!   `traffic_interrupts` checks;
//! - [`judge_irqbalance`] and [`Verdict::add_irqbalance`]: a run with `--irqbalance`, how
//!   irqbalance moved each NIC IRQ after the driver placed it ([`IrqbalanceReport`]),
//!   reported, with the `irqbalance_ran` check;
//! - [`judge_soak`] and [`Verdict::add_soak`]: a soak (`cargo xtask soak`), its device
//!   process's samples judged by the [`flatness`] rule, its rounds' bytes, its
//!   disruptions and the kernel log ([`SoakReport`]);
//! - [`driver_survived`] and [`Verdict::judge_by_survival`]: a run with fault injection
//!   (`--inject`) is judged by whether the driver survived (no oops, no hang, it unloads);
//! - [`render`]`(&Verdict, Format)`: the human table, KTAP, JUnit XML or JSON
//!   ([`Format`] parses from the command line); [`render_many`] renders a matrix of runs
//!   as one document; [`render_rig_error`] reports a rig failure in the same format; [`render_before_after`] puts two runs side by side (seed 001's
//!   table) with seed 003's hex `affinity_hint` masks.
//!
//! Oracles beside the model: [`properties`]`::evaluate(&Topology, &Observed)` judges the
//! guest's table by rules any sane spreading keeps (no model needed);
//! [`baseline`]`::compare(&Verdict, &Verdict)` says which vectors moved between a
//! baseline kernel and a patched one and how the reviewers' numbers changed.
//!
//! The JSON schema is documented in [`format::json`].
//!
//! CPU ids are the guest's (QEMU numbering); rows also carry the file's numbering for
//! topologies that number CPUs differently.

pub mod baseline;
mod check;
mod cpu_state;
pub mod debug_against;
pub mod debug_reports;
pub mod flatness;
pub mod format;
mod geometry;
mod guest_irqs;
pub mod irqbalance;
mod judge;
mod kernel_finding;
mod kernel_log;
pub mod nics;
mod outcome;
pub mod properties;
mod queue_pairs;
mod row;
pub mod selftest_missed;
pub mod selftest_rx;
pub mod selftests;
pub mod soak;
mod stage_checks;
mod stages;
mod summary;
mod survival;
pub mod traffic;
pub mod vports;

pub use check::{Check, CheckStatus, Status};
pub use cpu_state::{check_cpu_state, CPU_STATE_CHECK};
pub use debug_reports::{DebugLog, DEBUG_REPORTS_CHECK};
pub use format::{
    render, render_before_after, render_ktap_test, render_many, render_rig_error, Format, RenderError, RigErrorReport,
    UnknownFormat,
};
pub use guest_irqs::{Observed, ObservedVector, VectorName};
pub use irqbalance::{judge_irqbalance, IrqbalanceInput, IrqbalanceReport, IRQBALANCE_RAN};
pub use judge::judge;
pub use kernel_finding::{KernelFinding, SchedDomainsNotBuilt, ARCH_TOPOLOGY_BORKEN, GUEST_MACHINE};
pub use nics::{combined_load, judge_staged, table_at};
pub use outcome::{CpuLoad, NicVerdict, NicsReport, RunInfo, Verdict, SCHEMA_VERSION};
pub use queue_pairs::QUEUE_PAIRS_CHECK;
pub use row::{ExpectedSide, ObservedSide, RowOutcome, VectorRow};
pub use selftests::{judge_selftests, DeviceMark, DeviceRx, ProgramRx, RxAccount, SelftestsInput, SelftestsReport};
pub use soak::{judge_soak, RaisedEvent, RoundEnd, SoakInput, SoakReport};
pub use stage_checks::{same_irq_table_check, same_queue_table_check, stage_irq_table_check};
pub use stages::{
    QueueRow, QueueStage, QueueTable, StageFacts, StageLink, VportQueues, HOTPLUG_STAGES, QUEUE_IRQS_CHECK,
    REPORT_STAGE,
};
pub use summary::{CoreCount, NodeCount, RemoteIrq, SiblingShare, Summary};
pub use survival::{driver_did_not_survive, driver_survived, driver_unloaded, DRIVER_SURVIVED, DRIVER_UNLOADED};
pub use traffic::{judge_traffic, TrafficInput, TrafficReport};

/// Serde for [`KernelGen`](crate::model::KernelGen) as its short name (`6.1`, `6.12`,
/// `7.x`).
mod kernel_serde {
    use crate::model::KernelGen;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(k: &KernelGen, s: S) -> Result<S::Ok, S::Error> {
        k.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<KernelGen, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod stage_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod traffic_tests;
