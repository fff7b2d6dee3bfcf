//! The moments of a rig run beside the IRQ table: at each stage (a first
//! probe kept with `--reprobe`, then the report), the link as the guest saw it
//! and the queue table (SQ/RQ → CQ → EQ → `eq_pci_msix_index` → Linux IRQ →
//! `smp_affinity_list`), plus the checks the rig makes on them.
//!
//! The rig fills these from the guest's report and the device's snapshot
//! ([`crate::rig::queues::queue_table`], [`crate::rig::observe::stage_facts`])
//! and hands them to [`Verdict::add_stages`]; every format then renders them
//! from the verdict's `queues` field (schema: `report-schema.md`).

use super::outcome::{Check, CheckStatus, Status, Verdict};
use crate::cpulist::CpuMask;
use serde::{Deserialize, Serialize};

/// Name of the last stage: the guest's report (after `ethtool -L`, and after
/// the re-probe with `--reprobe`).
pub const REPORT_STAGE: &str = "report";

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
}

impl QueueTable {
    /// The channel → (MSI-X index, CPUs) mapping, for comparing two moments
    /// (first probe and re-probe) regardless of queue ids and IRQ numbers.
    pub fn channel_cpus(&self) -> Vec<(usize, u16, Option<String>)> {
        self.rows.iter().map(|r| (r.channel, r.msix_index, r.cpus.as_ref().map(ToString::to_string))).collect()
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
}

/// One stage of a run as the reports carry it (`queues[]` in the JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueStage {
    /// `first-probe` (with `--reprobe`) or [`REPORT_STAGE`].
    pub stage: String,
    /// The verdict of that stage's IRQ table against the model (the checks
    /// of [`judge`](super::judge()), without the stage checks below).
    pub status: Status,
    /// Link, rmmod, warnings and queue table.
    #[serde(flatten)]
    pub facts: StageFacts,
}

/// (vector name, `smp_affinity_list`) of every row, for comparing two moments.
fn irq_cpus(v: &Verdict) -> Vec<(String, String)> {
    v.vectors
        .iter()
        .map(|r| (r.name.clone(), r.observed.as_ref().map_or("missing".to_owned(), |o| o.smp_affinity_list.to_cpulist())))
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
        detail.insert(0, format!("verdict {} at {name}, {} at the {REPORT_STAGE}", status_word(earlier.status), status_word(report.status)));
    }
    let mut c = if detail.is_empty() {
        Check::new(
            same_irq_table_check(name),
            CheckStatus::Pass,
            format!("the IRQ table at the {REPORT_STAGE} is the one at {name} ({} IRQs, same smp_affinity_list)", b.len()),
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
        return Check::new(check, CheckStatus::Skip, format!("no queue table at {missing}: the device status was not taken"));
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
            format!("the queue table at the {REPORT_STAGE} is the one at {name} ({} channels, same MSI-X vectors and CPUs)", b.rows.len()),
        )
    } else {
        Check::new(check, CheckStatus::Fail, format!("the queue table at the {REPORT_STAGE} differs from {name}: {}", detail[0]))
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
                format!("{stage}: channel {} (EQ {}, MSI-X {}) has no guest IRQ for its vector", r.channel, r.eq, r.msix_index)
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
            format!("{} active channels raise a vector without a guest IRQ: {}", missing.len(), missing[0]),
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
    /// [`same_queue_table_check`]. The status becomes Fail if one of them fails.
    pub fn add_stages(&mut self, earlier: Vec<(&str, &Verdict, StageFacts)>, report: StageFacts) {
        let mut stages: Vec<QueueStage> = earlier
            .iter()
            .map(|(name, v, facts)| QueueStage { stage: (*name).to_owned(), status: v.status, facts: facts.clone() })
            .collect();
        stages.push(QueueStage { stage: REPORT_STAGE.to_owned(), status: self.status, facts: report });
        let report_table = stages.last().and_then(|s| s.facts.table.as_ref());
        let mut checks = vec![queue_irqs(&stages)];
        for (name, v, facts) in &earlier {
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
