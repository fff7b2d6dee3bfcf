//! The verdict value: checks, IRQ table rows and run facts, as every format renders them
//! and `--format json` serialises them.

use super::kernel_serde;
use super::stages::QueueStage;
use super::summary::Summary;
use crate::cli::{EXIT_MISMATCH, EXIT_PASS};
use crate::cpulist::CpuMask;
use crate::model::KernelGen;
use crate::topology::{CpuNumbering, ExpectedVerdict};
use serde::{Deserialize, Serialize};

/// Version of the serialised [`Verdict`] (the `--format json` schema). Bumped on any
/// change a consumer could notice (renamed or removed field, changed meaning).
pub const SCHEMA_VERSION: u32 = 1;

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

/// How a vector compares with the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowOutcome {
    /// Present, `smp_affinity_list`, `affinity_hint` and PCI address as the model says.
    Match,
    /// Present but something differs.
    Mismatch,
    /// The model expects it; the guest has no such IRQ.
    Missing,
    /// The guest has it; the model does not expect it (or it is a duplicate).
    Unexpected,
}

/// What the model expects for one vector (guest CPU numbering).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedSide {
    /// Expected `smp_affinity_list`.
    pub smp_affinity_list: CpuMask,
    /// Expected `affinity_hint`: the same set when MANA sets the affinity
    /// (`irq_set_affinity_and_hint()`), `None` when the vector keeps the default.
    pub affinity_hint: Option<CpuMask>,
    /// Which kernel code sets it (`irq_setup`, `local_spread(hops)`, `default`, …).
    pub set_by: String,
    /// NUMA nodes of the set.
    pub nodes: Vec<u32>,
    /// Physical cores of the set.
    pub cores: Vec<u32>,
    /// First hop (from the NIC's node) containing the whole set.
    pub hop: Option<u32>,
}

/// What the guest shows for one vector (guest CPU numbering).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedSide {
    /// Linux IRQ number.
    pub irq: u32,
    /// Full `/proc/interrupts` name (`mana_q3@pci:0000:41:00.0`).
    pub irq_name: String,
    /// `smp_affinity_list`.
    pub smp_affinity_list: CpuMask,
    /// `affinity_hint` (`None` = no hint).
    pub affinity_hint: Option<CpuMask>,
    /// `effective_affinity_list` (meaningful only when `interrupts > 0`).
    pub effective: Option<CpuMask>,
    /// Total interrupts counted on all CPUs.
    pub interrupts: u64,
    /// NUMA nodes of `smp_affinity_list`.
    pub nodes: Vec<u32>,
    /// Physical cores of `smp_affinity_list`.
    pub cores: Vec<u32>,
    /// First hop (from the NIC's node) containing `smp_affinity_list`.
    pub hop: Option<u32>,
    /// `smp_affinity_list` in the topology file's CPU numbering (only for files that
    /// number CPUs differently from QEMU, e.g. seed 003's `linux-smt-outer`).
    pub file_cpus: Option<CpuMask>,
}

/// One row of the IRQ table: a vector the model expects, the guest has, or both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorRow {
    /// MSI-X index (0 = HWC); `None` for an unexpected IRQ whose name follows no scheme.
    pub msix_index: Option<u32>,
    /// Short IRQ name (`mana_q3`).
    pub name: String,
    /// Queue number (the seeds' "IRQ" column): `msix_index - 1`, `None` for the HWC.
    pub queue: Option<u32>,
    /// How it compares.
    pub outcome: RowOutcome,
    /// The model's side (`None` for an unexpected IRQ).
    pub expected: Option<ExpectedSide>,
    /// The guest's side (`None` for a missing IRQ).
    pub observed: Option<ObservedSide>,
}

impl VectorRow {
    /// The effective CPU if the vector has fired (`None` if it never fired or the kernel
    /// shows no effective affinity): the first CPU of `effective_affinity_list` (x86
    /// delivers a vector to one CPU).
    pub fn effective_cpu(&self) -> Option<u32> {
        let o = self.observed.as_ref()?;
        if o.interrupts == 0 {
            return None;
        }
        o.effective.as_ref()?.first()
    }
}

/// Facts about the run that every format prints in its header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Test name of the run: `<topology>@<kernel>` (`seed-002@6.12`).
    pub name: String,
    /// Topology name.
    pub topology: String,
    /// Where the topology comes from (`seed 002`, `report R08`).
    pub source: String,
    /// What the topology file expects of a run.
    pub topology_expects: ExpectedVerdict,
    /// Kernel generation modelled.
    #[serde(with = "kernel_serde")]
    pub kernel: KernelGen,
    /// Guest `uname -r`.
    pub kernel_release: String,
    /// Debian package whose code the model follows (`upstream 6.3-6.7` for the 6.3 model).
    pub model_version: String,
    /// What the model does, in one phrase (`per-vector cpumask_local_spread, NUMA-hop-aware …`).
    #[serde(default)]
    pub model: String,
    /// Why this model judges the run (`the kernel's release`, `detected from the source: …`,
    /// `--model`).
    #[serde(default)]
    pub model_basis: String,
    /// QEMU accelerator, the speed-ups used and the user's extra kernel
    /// command-line items: `tcg,thread=single (speed-ups: cmdline, pvh, cpu)`,
    /// `…, kernel command line + initcall_debug`.
    pub accel: String,
    /// The topology file's CPU numbering (the tables use guest = QEMU numbering).
    pub cpu_numbering: CpuNumbering,
    /// Online CPUs.
    pub online_cpus: u32,
    /// `nr_cpu_ids` (width of the hex masks).
    pub nr_cpu_ids: u32,
    /// The NIC's node in the topology (`None` = NUMA_NO_NODE).
    pub nic_node: Option<u32>,
    /// The NIC's `numa_node` in the guest (`None` = -1, NUMA_NO_NODE).
    pub nic_numa_node_observed: Option<i32>,
    /// The NIC's PCI address in the guest.
    pub nic_bdf: Option<String>,
    /// CPUs each hop from the NIC's node adds (guest numbering).
    pub hops: Vec<CpuMask>,
    /// MSI-X table size.
    pub msix_table_size: u32,
    /// Vectors the model expects.
    pub vectors_expected: u32,
    /// MANA IRQs the guest shows.
    pub vectors_observed: u32,
    /// Whether the probe succeeded in the guest.
    pub probe_ok: bool,
    /// Why the model expects the probe to fail, if it does.
    pub probe_error_expected: Option<String>,
}

/// The verdict of one run: a serde value that every output format renders.
///
/// Built by [`judge`](super::judge()); [`Verdict::exit_code`] gives the process exit code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Pass when no check failed.
    pub status: Status,
    /// Header facts.
    pub run: RunInfo,
    /// The IRQ table, by MSI-X index, then unexpected IRQs.
    pub vectors: Vec<VectorRow>,
    /// Reviewers' questions answered from `effective_affinity_list`.
    pub summary: Summary,
    /// Every check, in report order.
    pub checks: Vec<Check>,
    /// The driver's kernel log lines.
    pub dmesg_mana: Vec<String>,
    /// The run's stages (earlier moments, then the report) with the link and
    /// the queue table of each: only for rig runs ([`Verdict::add_stages`]),
    /// absent from the JSON otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queues: Option<Vec<QueueStage>>,
}

impl Verdict {
    /// Process exit code: [`EXIT_PASS`] (0) or [`EXIT_MISMATCH`] (1).
    pub fn exit_code(&self) -> u8 {
        match self.status {
            Status::Pass => EXIT_PASS,
            Status::Fail => EXIT_MISMATCH,
        }
    }

    /// Checks that failed.
    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.status == CheckStatus::Fail)
    }

    /// Whether this outcome is what the topology file's `[expect] verdict` says
    /// (`pass` ↔ PASS, `mismatch` ↔ FAIL; `rig-error` never matches a verdict).
    pub fn as_topology_expects(&self) -> bool {
        matches!(
            (self.run.topology_expects, self.status),
            (ExpectedVerdict::Pass, Status::Pass) | (ExpectedVerdict::Mismatch, Status::Fail)
        )
    }
}

