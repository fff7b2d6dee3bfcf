//! The moments of a rig run beside the IRQ table: at each stage (a first
//! probe kept with `--reprobe`, then the report), the link as the guest saw it
//! and the queue table (SQ/RQ → CQ → EQ → `eq_pci_msix_index` → Linux IRQ →
//! `smp_affinity_list`), plus the checks the rig makes on them.
//!
//! The rig fills these from the guest's report and the device's snapshot and
//! hands them to [`Verdict::add_stages`](super::Verdict::add_stages) (the checks
//! are in [`super::stage_checks`]); every format then renders them from the
//! verdict's `queues` field (schema: `report-schema.md`).

use super::check::Status;
use crate::cpulist::CpuMask;
use serde::{Deserialize, Serialize};

/// Name of the last stage: the guest's report (after `ethtool -L`, and after
/// the re-probe with `--reprobe`).
pub const REPORT_STAGE: &str = "report";

/// Stages a CPU hotplug follows (`[scenario]` `offline_after`/`online_after`): their
/// IRQ tables differ from the report's on purpose, so no `same_*_table` check compares
/// them; each is judged against the model's table for its own CPU state.
pub const HOTPLUG_STAGES: [&str; 2] = ["probe", "offline-after"];

/// Name of the check that every active channel's EQ raises a vector the guest
/// has an IRQ for.
pub const QUEUE_IRQS_CHECK: &str = "queue_irqs";

/// One channel: its queues, their EQ and the vector it raises.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueRow {
    /// Channel index: the Ethernet EQs that have work queues, in EQ-id order
    /// (mana creates `eqs[i]` for channel i in order: `mana_create_eq()`,
    /// and the device gives out the lowest free id).
    pub channel: usize,
    /// SQ ids whose CQ reports to this EQ.
    pub sqs: Vec<u32>,
    /// RQ ids whose CQ reports to this EQ.
    pub rqs: Vec<u32>,
    /// EQ id.
    pub eq: u32,
    /// `eq_pci_msix_index` of the EQ (GDMA_CREATE_QUEUE).
    pub msix_index: u16,
    /// The guest's IRQ for that MSI-X index, if the guest reported one.
    pub irq: Option<u32>,
    /// Its name without `@pci:…` (`mana_q3`).
    pub name: Option<String>,
    /// Its `smp_affinity_list`.
    pub cpus: Option<CpuMask>,
    /// Its `effective_affinity_list`.
    pub effective: Option<CpuMask>,
}

/// The queue table of one moment of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct QueueTable {
    /// Active channels, by channel index.
    pub rows: Vec<QueueRow>,
    /// Ethernet EQs without work queues (6.x keeps one per possible channel
    /// after `ethtool -L` lowers the count: they are created at probe).
    pub idle_eqs: Vec<u32>,
    /// The Ethernet SQs and RQs the device holds per vPort, by vPort index
    /// (QUERY_VPORT_CONFIG's `vport_index`: the driver's port, so vPort 0 of
    /// the first NIC is its first netdev, `eth0`); a vPort without queues is
    /// absent. Empty in reports from before 2026-12-03.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vports: Vec<VportQueues>,
}

/// How many Ethernet work queues of each kind one vPort has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VportQueues {
    /// vPort index.
    pub vport: u16,
    /// Its SQs (one per channel once `ndo_open` succeeded: mana_create_txq()).
    pub sqs: u32,
    /// Its RQs (one per channel: mana_add_rx_queues()).
    pub rqs: u32,
}

impl QueueTable {
    /// The channel → (MSI-X index, CPUs) mapping, for comparing two moments
    /// (first probe and re-probe) regardless of queue ids and IRQ numbers.
    pub fn channel_cpus(&self) -> Vec<(usize, u16, Option<String>)> {
        self.rows.iter().map(|r| (r.channel, r.msix_index, r.cpus.as_ref().map(ToString::to_string))).collect()
    }

    /// vPort `vport`'s queues (zero of each when it has none).
    pub fn vport(&self, vport: u16) -> VportQueues {
        self.vports.iter().find(|v| v.vport == vport).copied().unwrap_or(VportQueues { vport, sqs: 0, rqs: 0 })
    }
}

/// The link at one stage, as the guest's `/init` measured it (guest clock:
/// seconds since boot from `/proc/uptime`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StageLink {
    /// The driver's network interface (`eth0`), if one appeared.
    pub netdev: Option<String>,
    /// When `ip link set <netdev> up` returned, guest seconds.
    pub ifup_s: Option<f64>,
    /// `/sys/class/net/<netdev>/carrier` after `ip link set up` (None if not read).
    pub carrier: Option<bool>,
    /// When the carrier read 1, guest seconds.
    pub carrier_s: Option<f64>,
    /// Seconds from the start of `ip link set up` to the carrier (includes
    /// `mana_open()`: every queue's creation and, on 6.x, its RQ fence).
    pub ifup_to_carrier_s: Option<f64>,
    /// Exit status of `ethtool -L <netdev> combined N` (None if not run).
    pub ethtool_status: Option<i32>,
    /// When `ethtool -L` returned, guest seconds.
    pub ethtool_s: Option<f64>,
    /// Combined channels: the netdev's `queues/tx-N` count, equal to `ethtool -l`'s Combined for mana (None without a netdev).
    pub channels: Option<u32>,
}

/// What the rig saw at one stage, besides the IRQ table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StageFacts {
    /// The link.
    pub link: StageLink,
    /// Exit status of `rmmod mana` before this stage (None if it did not run).
    pub rmmod_status: Option<i32>,
    /// Kernel log lines that are warnings of any origin (`WARNING:`, `BUG:`,
    /// `Oops`, `Call Trace`, lockdep) up to this stage; a clean run has none.
    pub warnings: Vec<String>,
    /// The queue table (None when the device status could not be taken).
    pub table: Option<QueueTable>,
    /// The guest's online CPUs at this stage (None: not reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online: Option<CpuMask>,
    /// An earlier stage's IRQ table against the model for that moment (the report's
    /// is the verdict's `vectors`); None for the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors: Option<Vec<super::row::VectorRow>>,
}

/// One stage of a run as the reports carry it (`queues[]` in the JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueStage {
    /// `first-probe` (with `--reprobe`) or [`REPORT_STAGE`].
    pub stage: String,
    /// The verdict of that stage's IRQ table against the model (the checks
    /// of [`judge`](super::judge()), without the stage checks).
    pub status: Status,
    /// Link, rmmod, warnings and queue table.
    #[serde(flatten)]
    pub facts: StageFacts,
}
