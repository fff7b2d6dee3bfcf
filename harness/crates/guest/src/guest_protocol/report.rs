//! The typed report: what the agent's `key: value` lines say about the guest
//! (guest-images/README.md, "Report lines"), once [`super::parse()`] has read them.
//! Values come from sysfs and procfs: CPU topology from
//! `/sys/devices/system/cpu/cpuN/topology/`, nodes from
//! `/sys/devices/system/node/nodeN/{cpulist,distance,meminfo}`, PCI from
//! `/sys/bus/pci/devices/`, MSI-X from `msi_irqs/` and `/proc/irq/N/`.

use super::Version;
use std::collections::BTreeMap;

/// One guest CPU (sysfs `topology/`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GuestCpu {
    /// `physical_package_id`.
    pub package: i64,
    /// `die_id` (None if the kernel does not expose it).
    pub die: Option<i64>,
    /// `core_id`.
    pub core: i64,
    /// `cluster_id` (arm64 guests' agents report it; None elsewhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<i64>,
    /// `thread_siblings_list`, expanded.
    pub siblings: Vec<u32>,
    /// NUMA node (from the `nodeN` link), -1 if none.
    pub node: i64,
}

/// The guest's CPU masks (Documentation/ABI/testing/sysfs-devices-system-cpu) and
/// `/proc/irq/default_smp_affinity`; None when the file was not in the report (an
/// older agent, or a kernel without it: `nohz_full` needs CONFIG_NO_HZ_FULL).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct GuestCpuState {
    /// `present`.
    pub present: Option<Vec<u32>>,
    /// `possible`.
    pub possible: Option<Vec<u32>>,
    /// `offline` (possible but not online).
    pub offline: Option<Vec<u32>>,
    /// `isolated` (`isolcpus=` domain CPUs).
    pub isolated: Option<Vec<u32>>,
    /// `nohz_full`.
    pub nohz_full: Option<Vec<u32>>,
    /// `/proc/irq/default_smp_affinity` (`irq_default_affinity`), expanded.
    pub default_smp_affinity: Option<Vec<u32>>,
}

/// One guest NUMA node.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GuestNode {
    /// `cpulist`, expanded (empty for a memory-only node).
    pub cpus: Vec<u32>,
    /// `MemTotal` of the node in KiB.
    pub mem_kib: u64,
    /// `distance` row, in node-id order of the nodes the guest has online.
    pub distance: Vec<u32>,
}

/// One PCI function.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GuestPci {
    /// `vendor` (e.g. 0x1414).
    pub vendor: u16,
    /// `device`.
    pub device: u16,
    /// `class` (24 bits).
    pub class: u32,
    /// `numa_node`, -1 for NUMA_NO_NODE.
    pub numa_node: i64,
    /// Bound driver name, if any.
    pub driver: Option<String>,
}

/// One MSI-X vector of the NIC.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GuestIrq {
    /// Linux IRQ number.
    pub irq: u32,
    /// Action name from /proc/interrupts (e.g. `mana_q0@pci:0000:41:00.0`), `-` if none.
    pub name: String,
    /// `smp_affinity_list`, expanded (None if unreadable).
    pub affinity: Option<Vec<u32>>,
    /// `affinity_hint` as printed (a hex cpumask), None if unreadable.
    pub hint: Option<String>,
    /// `effective_affinity_list`, expanded.
    pub effective: Option<Vec<u32>>,
    /// Interrupt counts per CPU, CPU 0 first.
    pub counts: Vec<u64>,
}

impl GuestIrq {
    /// An IRQ seen in /proc/irq before its /proc/interrupts line: no name, no data yet.
    pub(super) fn unnamed(irq: u32) -> Self {
        GuestIrq { irq, name: "-".into(), affinity: None, hint: None, effective: None, counts: Vec::new() }
    }
}

/// The whole guest report.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct GuestReport {
    /// `uname -r`.
    pub kernel: String,
    /// `/proc/cmdline`.
    pub cmdline: String,
    /// The environment the kernel gave `/init` (`/proc/1/environ`, `NAME=VALUE` each, in
    /// order): `HOME=/`, `TERM=linux` and every `name=value` command-line parameter the
    /// kernel did not take: no handler for it is built in, or its handler refused the
    /// value (init/main.c `unknown_bootoption()`). Empty from agents before 2026-12-01.
    pub init_env: Vec<String>,
    /// Milestones in guest seconds since boot (`/proc/uptime`): init, modules,
    /// probe, ifup (`ip link set up` returned), carrier (`carrier` read 1),
    /// ethtool (`ethtool -L` returned), rmmod, settled, report. Absent when the
    /// step did not run.
    pub times: BTreeMap<String, f64>,
    /// What `/init` loaded (`mana` or `none`).
    pub load: String,
    /// Why waiting stopped: `none`, `deadline`, `probe-returned fired=yes|no` (agents before
    /// 2026-11-30 also stopped at `netdev fired=…`, when the netdev appeared)
    /// (`fired=no`: some vector had not fired when the probe returned: it has no EQ).
    pub settle: String,
    /// The driver's network interface (e.g. `eth0`), if one appeared.
    pub netdev: Option<String>,
    /// insmod's exit status, None if it had not returned.
    pub insmod_status: Option<i32>,
    /// `/sys/class/net/<netdev>/carrier` after `ip link set up` (None if not read).
    pub carrier: Option<bool>,
    /// The same just before the final `rmmod mana` of a run with fault
    /// injection (None if not read): what link events (`--inject
    /// link-down@S`) left.
    pub carrier_unload: Option<bool>,
    /// Exit status of `ethtool -L <netdev> combined N` (None if not run;
    /// 127 when the initramfs has no ethtool).
    pub ethtool_status: Option<i32>,
    /// Current combined channels: the count of `/sys/class/net/<netdev>/queues/tx-N`
    /// (mana sets real_num_tx_queues to its combined count, what `ethtool -l` shows), None without a netdev.
    pub channels: Option<u32>,
    /// Exit status of `rmmod mana` (None if not run).
    pub rmmod_status: Option<i32>,
    /// The final `rmmod mana` of a run with fault injection
    /// (`manarig.unload=1`; None if not run).
    pub unload: Option<Unload>,
    /// Whether the host's go-ahead came at the final unload's mark before that
    /// rmmod (`unload-handshake:`; None when there was no final unload, or an
    /// agent from before the handshake).
    pub unload_handshake: Option<UnloadHandshake>,
    /// Whether the agent's CPU hotplug writes succeeded (`0`), one failed (`1`),
    /// None when it did none (`manarig.offline*`, `manarig.online_after`).
    pub hotplug_status: Option<i32>,
    /// The CPU masks of `/sys/devices/system/cpu` and the IRQ default.
    pub cpu_state: GuestCpuState,
    /// What the guest agent's tools wrote to stderr, by tool (`ethtool`, `rmmod`, `hotplug`):
    /// `stderr <tool>: <line>` lines.
    pub stderr: BTreeMap<String, Vec<String>>,
    /// Kernel log lines that are warnings of any origin (`WARNING:`, `BUG:`,
    /// `Oops`, `Call Trace`, lockdep): a clean run has none.
    pub warnings: Vec<String>,
    /// With `manarig.debug=1`: the `debug:` line (`kmemleak=<scan points>` or
    /// `kmemleak=absent`); None when the agent ran without it.
    pub debug: Option<String>,
    /// With `manarig.debug=1`: the lines of `/sys/kernel/debug/kmemleak`
    /// (leading blanks stripped), in order.
    pub kmemleak: Vec<String>,
    /// With `manarig.debug=1`: the kernel log lines of its KASAN, lockdep,
    /// WARN and BUG reports (without timestamps), in order.
    pub klog: Vec<String>,
    /// CPUs by number.
    pub cpus: BTreeMap<u32, GuestCpu>,
    /// Nodes by id.
    pub nodes: BTreeMap<u32, GuestNode>,
    /// PCI functions by BDF (`0000:41:00.0`).
    pub pci: BTreeMap<String, GuestPci>,
    /// BDF of the (first) MANA NIC (vendor 0x1414), if present.
    pub nic: Option<String>,
    /// BDFs of every MANA NIC, in PCI address order (`nic` is the first); one
    /// `nic:` line each.
    pub nics: Vec<String>,
    /// The NICs' MSI-X vectors in IRQ order (each name ends `@pci:<BDF>`).
    pub msix: Vec<GuestIrq>,
    /// mana lines of /proc/interrupts seen while waiting (kept when the probe
    /// failed and freed its IRQs before the report).
    pub seen: Vec<String>,
    /// dmesg lines mentioning mana.
    pub dmesg: Vec<String>,
    /// What `manarig.addr` and `manarig.traffic` did (version 3; all empty otherwise).
    pub traffic: GuestTraffic,
    /// What `manarig.irqbalance` did (empty without it).
    pub irqbalance: super::irqbalance::GuestIrqbalance,
    /// What `manarig.selftests` did (empty without it).
    pub selftests: super::selftests::GuestSelftests,
    /// What `manarig.soak` did (empty without it).
    pub soak: super::soak::GuestSoak,
}

/// How the final `rmmod mana` (`manarig.unload=1`) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unload {
    /// It returned with this exit status (0: the module is gone).
    Exit(i32),
    /// It had not returned at the agent's deadline (`unload: hung`).
    Hung,
}

impl Unload {
    /// The report's value: an exit status, `hung`, or `-` (not run: None).
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "hung" => Some(Unload::Hung),
            v => v.parse().ok().map(Unload::Exit),
        }
    }
}

/// How the final unload's wait for the host's go-ahead
/// ([`super::markers::GO_AHEAD`]) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnloadHandshake {
    /// The go-ahead came: the host had read the device before the rmmod.
    Go,
    /// It did not come within the agent's wait (guest-images/init.sh
    /// `UNLOAD_GO_WAIT`, 10 guest seconds) and the rmmod ran all the same: the
    /// host did not answer (or the agent could not read its port).
    Timeout,
}

impl UnloadHandshake {
    /// The report's value: `go`, `timeout`, or `-` and anything else (None).
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "go" => Some(UnloadHandshake::Go),
            "timeout" => Some(UnloadHandshake::Timeout),
            _ => None,
        }
    }
}

/// The guest's side of a traffic run (`manarig.addr`, `manarig.traffic`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct GuestTraffic {
    /// Exit status of `ip addr add` (None: not run).
    pub addr_status: Option<i32>,
    /// Exit status of `ping -c 3` to the peer (None: not run).
    pub ping_status: Option<i32>,
    /// ping's summary line (`3 packets transmitted, 3 packets received, 0% packet loss`).
    pub ping_summary: String,
    /// Exit status of `manarig-flows guest` (None: not run; 0 every flow
    /// verified, 1 some not, 2 it could not run).
    pub tool_status: Option<i32>,
    /// The counters just before the traffic.
    pub before: TrafficCounts,
    /// The counters just after it.
    pub after: TrafficCounts,
}

/// Counters the agent reads before and after the traffic.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct TrafficCounts {
    /// The NIC's IRQs: interrupt counts indexed by CPU, by Linux IRQ.
    pub irqs: BTreeMap<u32, Vec<u64>>,
    /// NET_RX softirqs indexed by CPU (`/proc/softirqs`).
    pub net_rx: Vec<u64>,
    /// NET_TX softirqs indexed by CPU.
    pub net_tx: Vec<u64>,
    /// The netdev's per-queue counters from `ethtool -S` (`rx_0_packets`,
    /// `tx_3_bytes`, …).
    pub stats: BTreeMap<String, u64>,
}

/// One earlier moment of the run: a block between `MANARIG-STAGE-BEGIN <name>`
/// and `MANARIG-STAGE-END` ([`super::markers`]), with the same items as the report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stage {
    /// The stage's name (`first-probe`).
    pub name: String,
    /// Its items, as they were at that point of the run.
    pub report: GuestReport,
}

/// Everything the agent printed, parsed: the stages in the order they came, then
/// the report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Transcript {
    /// The report's format version (its begin line).
    pub version: Version,
    /// The stages before the report (`first-probe` with `manarig.reprobe=1`).
    pub stages: Vec<Stage>,
    /// The report.
    pub report: GuestReport,
}

/// Format CPUs as a kernel cpulist (`0-3,8`).
pub fn format_cpulist(cpus: &[u32]) -> String {
    cpus.iter().copied().collect::<crate::cpulist::CpuMask>().to_cpulist()
}

impl GuestReport {
    /// The agent stopped waiting for the probe at its deadline, mana's
    /// `insmod` still running (`settle: deadline`).
    pub fn probe_unfinished(&self) -> bool {
        self.settle == "deadline"
    }

    /// Guest seconds from `/init` start to the report, if both were recorded.
    pub fn init_to_report_s(&self) -> Option<f64> {
        Some(self.times.get("report")? - self.times.get("init")?)
    }

    /// Guest seconds from the start of `ip link set <netdev> up` (the probe
    /// milestone) to the carrier reading 1, if both were recorded. Includes
    /// `mana_open()`: every queue's creation and, on 6.x, its RQ fence.
    pub fn ifup_to_carrier_s(&self) -> Option<f64> {
        Some(self.times.get("carrier")? - self.times.get("probe")?)
    }
}
