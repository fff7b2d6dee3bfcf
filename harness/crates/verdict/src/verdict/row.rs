//! One row of the IRQ table: a vector as the model expects it and as the guest shows it.

use crate::cpulist::CpuMask;
use serde::{Deserialize, Serialize};

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
