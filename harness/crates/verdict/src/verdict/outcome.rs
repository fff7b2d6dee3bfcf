//! The verdict value: the run's facts, its IRQ table rows ([`super::row`]), summary and
//! checks ([`super::check`]), as every format renders them and `--format json`
//! serialises them.

use super::check::{Check, CheckStatus, Status};
use super::kernel_serde;
use super::row::VectorRow;
use super::stages::QueueStage;
use super::summary::Summary;
use super::traffic::TrafficReport;
use crate::cpulist::CpuMask;
use crate::model::KernelGen;
use crate::topology::{CpuNumbering, ExpectedVerdict};
use serde::{Deserialize, Serialize};

/// Version of the serialised [`Verdict`] (the `--format json` schema). Bumped on any
/// change a consumer could notice (renamed or removed field, changed meaning).
pub const SCHEMA_VERSION: u32 = 1;

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
    /// Debian package whose code the model follows (`upstream 6.3-6.8` for the 6.3 model).
    pub model_version: String,
    /// What the model does, in one phrase (`per-vector cpumask_local_spread, NUMA-hop-aware …`).
    #[serde(default)]
    pub model: String,
    /// Why this model judges the run (`the kernel's release`, `detected from the source: …`,
    /// `--model`).
    #[serde(default)]
    pub model_basis: String,
    /// QEMU accelerator, the speed-ups used and the user's extra kernel
    /// command-line items: `tcg,thread=single (speed-ups: cmdline, pvh, cpu, acpi)`,
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
    /// The Debian packages the run used (QEMU, the kernel or its source,
    /// busybox, the guest tools), each naming its pin in
    /// guest-images/kernels.lock when it differs (a fallback).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<crate::packages::UsedPackage>,
    /// What judged the run when the model could not (`the properties oracle:
    /// <why>`); absent when the model judged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_by: Option<String>,
}

/// The verdict of one run: a serde value that every output format renders.
///
/// Built by [`judge`](super::judge()); its [`Status`] decides the process exit code (in the CLI).
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
    /// A traffic run's flows, queues and CPUs under load
    /// ([`Verdict::add_traffic`]); absent from the JSON otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<TrafficReport>,
    /// NIC 1, 2, … of a `[[nic]]` machine and the combined per-CPU load
    /// ([`Verdict::add_nics`]); absent from the JSON for one NIC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nics: Option<NicsReport>,
    /// How irqbalance moved the NIC's IRQs (`run --irqbalance`,
    /// [`Verdict::add_irqbalance`]); absent from the JSON otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irqbalance: Option<super::irqbalance::IrqbalanceReport>,
    /// The kernel's drivers/net selftests (`selftests`, [`Verdict::add_selftests`]);
    /// absent from the JSON otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selftests: Option<super::selftests::SelftestsReport>,
    /// A soak's figures (`cargo xtask soak`, [`Verdict::add_soak`]); absent
    /// from the JSON otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<super::soak::SoakReport>,
}

impl Verdict {
    /// Checks that failed.
    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.status == CheckStatus::Fail)
    }

    /// Append a check made outside [`judge`](super::judge()) (`cpu_state`,
    /// `vport_vectors`, `driver_unloaded`, …); a failing one fails the verdict.
    pub fn add_check(&mut self, check: Check) {
        self.add_checks([check]);
    }

    /// Append checks made outside [`judge`](super::judge()), in order; the
    /// status becomes Fail if one of them fails.
    pub fn add_checks(&mut self, checks: impl IntoIterator<Item = Check>) {
        for check in checks {
            if check.status == CheckStatus::Fail {
                self.status = Status::Fail;
            }
            self.checks.push(check);
        }
    }

    /// Attaches a traffic run's [`TrafficReport`] and its checks
    /// ([`super::traffic::judge_traffic`]); the status becomes Fail if one of them fails.
    pub fn add_traffic(&mut self, report: TrafficReport, checks: Vec<Check>) {
        self.add_checks(checks);
        self.traffic = Some(report);
    }

    /// Attaches [`super::irqbalance::judge_irqbalance`]'s report and check; the status
    /// becomes Fail when the check fails (irqbalance did not run through the sampling).
    pub fn add_irqbalance(&mut self, report: super::irqbalance::IrqbalanceReport, check: Check) {
        self.add_check(check);
        self.irqbalance = Some(report);
    }

    /// Attaches [`super::selftests::judge_selftests`]'s report and checks; the
    /// status becomes Fail when one of them fails.
    pub fn add_selftests(&mut self, report: super::selftests::SelftestsReport, checks: Vec<Check>) {
        self.add_checks(checks);
        self.selftests = Some(report);
    }

    /// Attaches [`super::soak::judge_soak`]'s report and checks; the status
    /// becomes Fail when one of them fails.
    pub fn add_soak(&mut self, report: super::soak::SoakReport, checks: Vec<Check>) {
        self.add_checks(checks);
        self.soak = Some(report);
    }

    /// Whether this outcome is what the topology file's `[expect] verdict` says
    /// for the run's kernel (`pass` ↔ PASS, `mismatch` ↔ FAIL, `kernel-finding`
    /// ↔ FAIL by the `guest_machine` check; `rig-error` never matches a verdict).
    pub fn as_topology_expects(&self) -> bool {
        match (self.run.topology_expects, self.status) {
            (ExpectedVerdict::Pass, Status::Pass) | (ExpectedVerdict::Mismatch, Status::Fail) => true,
            (ExpectedVerdict::KernelFinding, Status::Fail) => self.kernel_finding().is_some(),
            _ => false,
        }
    }
}

/// The verdict of one NIC beyond NIC 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NicVerdict {
    /// The NIC's index in the topology file (`[[nic]]` order; 1, 2, …).
    pub index: usize,
    /// Its PCI address in the guest, if the guest has it.
    pub bdf: Option<String>,
    /// Its node in the topology (`None` = NUMA_NO_NODE).
    pub node: Option<u32>,
    /// Its IRQ table judged against the model on the machine with only this NIC
    /// (`Topology::with_only_nic`).
    pub verdict: Verdict,
}

/// One CPU's MANA vectors, per NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuLoad {
    /// Guest CPU id.
    pub cpu: u32,
    /// Its node.
    pub node: u32,
    /// Vectors per NIC (index = NIC) delivered to this CPU: `effective_affinity_list`
    /// when the guest shows one, else a one-CPU `smp_affinity_list`.
    pub delivered: Vec<u32>,
    /// Vectors per NIC whose `smp_affinity_list` in the guest holds this CPU.
    pub in_affinity: Vec<u32>,
    /// Vectors per NIC whose affinity in the model holds this CPU.
    pub in_model: Vec<u32>,
}

impl CpuLoad {
    /// Vectors delivered to this CPU over every NIC.
    pub fn delivered_total(&self) -> u32 {
        self.delivered.iter().sum()
    }
    /// Vectors allowed on this CPU over every NIC, in the guest.
    pub fn affinity_total(&self) -> u32 {
        self.in_affinity.iter().sum()
    }
    /// Vectors allowed on this CPU over every NIC, in the model.
    pub fn model_total(&self) -> u32 {
        self.in_model.iter().sum()
    }
}

/// Every NIC beyond NIC 0 and the combined load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NicsReport {
    /// NIC 1, 2, ….
    pub nics: Vec<NicVerdict>,
    /// One row per online CPU, guest numbering.
    pub load: Vec<CpuLoad>,
}
