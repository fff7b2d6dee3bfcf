//! What the host asks of the guest agent: the `manarig.*` kernel command-line
//! items guest-images/init.sh reads (guest-images/README.md, "Kernel
//! command-line items"). [`AgentOptions::cmdline_items`] is the only place in
//! the harness that writes them.

use crate::cpulist::CpuMask;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

/// The prefix of every agent item on the kernel command line.
pub const PREFIX: &str = "manarig.";

/// The name of every item [`AgentOptions`] renders (after [`PREFIX`]), in the
/// order it renders them.
pub const NAMES: [&str; 22] = [
    "load",
    "deadline",
    "poll",
    "nic",
    "ifup",
    "channels",
    "pin",
    "reprobe",
    "report",
    "addr",
    "traffic",
    "debug",
    "unload",
    "offline",
    "offline_after",
    "online_after",
    "irqbalance",
    "selftests",
    "selftest_timeout",
    "selftest_slack",
    "soak",
    "soak_channels",
];

/// The value of `manarig.load`: what `/init` loads (`/lib/modules/manarig/order`,
/// the last module in the background).
pub const LOAD_MANA: &str = "mana";

/// True when a kernel command-line word is one of the agent's items (or any
/// other `manarig.` word): the host sets those only through [`AgentOptions`].
/// A double quote in front is skipped (`x="y manarig.load=z"` hides one).
pub fn is_agent_item(word: &str) -> bool {
    word.trim_start_matches('"').starts_with(PREFIX)
}

/// A PCI vendor and, optionally, device id as sysfs prints them (`0x1414`,
/// `0x1b36:0x0010`): the device whose MSI-X vectors the agent reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PciId {
    /// `vendor` (include/linux/pci_ids.h).
    pub vendor: u16,
    /// `device`; None matches any device of the vendor.
    pub device: Option<u16>,
}

impl PciId {
    /// Microsoft's vendor id (include/linux/pci_ids.h PCI_VENDOR_ID_MICROSOFT):
    /// the agent's default.
    pub const MICROSOFT: PciId = PciId { vendor: 0x1414, device: None };
}

impl std::fmt::Display for PciId {
    /// `0x1414` or `0x1b36:0x0010`: lower-case, four digits, as in sysfs
    /// `vendor`/`device`, which the agent compares as text.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#06x}", self.vendor)?;
        if let Some(d) = self.device {
            write!(f, ":{d:#06x}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for PciId {
    type Err = String;

    /// `VENDOR[:DEVICE]`, each hex with or without `0x`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = |t: &str| {
            u16::from_str_radix(t.trim_start_matches("0x").trim_start_matches("0X"), 16)
                .map_err(|_| format!("{s:?}: {t:?} is not a 16-bit hex PCI id (VENDOR[:DEVICE], e.g. 0x1b36:0x0010)"))
        };
        let (v, d) = match s.split_once(':') {
            Some((v, d)) => (v, Some(d)),
            None => (s, None),
        };
        Ok(PciId { vendor: hex(v)?, device: d.map(hex).transpose()? })
    }
}

/// Where the agent writes its report and stages (`manarig.report`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReportChannel {
    /// The console (`/dev/console`, ttyS0), shared with kernel messages.
    #[default]
    Console,
    /// The second serial port, `/dev/ttyS1` (QEMU's second `-serial`): nothing
    /// else writes there. An agent that cannot open it says so on the console
    /// and reports there.
    Ttys1,
}

impl ReportChannel {
    /// The device the agent opens.
    pub fn device(self) -> &'static str {
        match self {
            ReportChannel::Console => "/dev/console",
            ReportChannel::Ttys1 => "/dev/ttyS1",
        }
    }
}

/// Everything guest-images/init.sh reads from the kernel command line. The
/// defaults ([`Default`]) are the agent's own: a default field renders nothing
/// but `manarig.deadline`, which the host always states.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOptions {
    /// `manarig.load=mana`: load the initramfs' modules, mana last and in the background.
    pub load_mana: bool,
    /// `manarig.deadline=S`: stop waiting for the driver S guest seconds after
    /// mana's `insmod` starts (default 180: past the driver's own longest
    /// waits, 60 s for the HWC's INIT_DONE and 30 s per `mana_gd_test_eq()`,
    /// and the probe of a 16-vCPU guest on a starved host, which a 60-s
    /// deadline cut short in CI; the boot does not count, see
    /// docs/rig-pitfalls.md).
    pub deadline_s: u32,
    /// `manarig.poll=S`: interval between checks of the probe and IRQ state
    /// (None: the agent's 0.02 s). Rendered in seconds, to the millisecond.
    pub poll: Option<Duration>,
    /// `manarig.nic=V[:D]`: the device whose vectors are reported (None: the agent's
    /// [`PciId::MICROSOFT`]).
    pub nic: Option<PciId>,
    /// `manarig.ifup=0` when false: do not bring the netdev up.
    pub ifup: bool,
    /// `manarig.channels=N`: `ethtool -L <netdev> combined N` once the link is up.
    pub channels: Option<u32>,
    /// `manarig.pin=CPULIST`: `/init` pins itself, and every process it starts,
    /// to these CPUs (a boot speed-up, see `qemu::speed` in manarig-qemu).
    pub pin: Option<CpuMask>,
    /// `manarig.reprobe=1`: print the first probe as stage `first-probe`, `rmmod
    /// mana`, load it again, then report.
    pub reprobe: bool,
    /// `manarig.report=ttyS1`: where the report and the stages go (default: the console).
    pub report: ReportChannel,
    /// `manarig.addr=A.B.C.D/P`: after the probe, `ip addr add` this address on the netdev.
    pub addr: Option<(Ipv4Addr, u8)>,
    /// `manarig.traffic=IP:PORT`: then ping that peer and run `manarig-flows
    /// guest` against its control port, recording the NIC's interrupts,
    /// NET_RX/NET_TX softirqs and per-queue counters before and after.
    pub traffic: Option<SocketAddrV4>,
    /// `manarig.debug=1` (debug kernels): mount debugfs, have kmemleak scan
    /// between the loads and before the report, and report kmemleak's
    /// suspected leaks (`kmemleak:`) and the kernel log's KASAN, lockdep, WARN
    /// and BUG reports (`klog:`).
    pub debug: bool,
    /// `manarig.unload=1`: at the end, just before the report, `rmmod mana`
    /// (waited for until the deadline; `unload: hung` if it has not returned):
    /// runs with fault injection check that the driver still unloads.
    pub unload: bool,
    /// `manarig.offline=CPULIST`: offline these CPUs (sysfs) before mana loads.
    pub offline: Option<CpuMask>,
    /// `manarig.offline_after=CPULIST`: after the probe, print it as stage `probe`
    /// and offline these CPUs, one by one in ascending order.
    pub offline_after: Option<CpuMask>,
    /// `manarig.online_after=CPULIST`: then (after stage `offline-after` when CPUs
    /// went offline) online these CPUs, in ascending order.
    pub online_after: Option<CpuMask>,
    /// `manarig.irqbalance=S`: last before the report (after hotplug and
    /// traffic, before `manarig.unload`), keep the NIC's IRQ lines as they are,
    /// start `/sbin/irqbalance --foreground --interval=1`, sample every MANA
    /// IRQ's smp_affinity_list and effective_affinity_list about once a guest
    /// second for S guest seconds, then stop it.
    pub irqbalance: Option<u32>,
    /// `manarig.selftests=FILE,…`: after the probe (and before hotplug,
    /// traffic and irqbalance), set up the selftests' remote end (the
    /// second NIC's driver, netns `remote`, the addresses of the tests'
    /// `net.config`) and run each kernel selftest (paths relative to
    /// `/ksrc/tools/testing/selftests/drivers/net/`), reporting its output.
    pub selftests: Option<Vec<String>>,
    /// `manarig.selftest_timeout=S`: guest seconds one selftest may take
    /// (agent default 600); past it the test is stopped (`timeout`).
    pub selftest_timeout: Option<u32>,
    /// `manarig.selftest_slack=NS`: the timer slack, in nanoseconds, of every
    /// program the agent starts for a selftest (`/proc/self/timerslack_ns`,
    /// inherited); unset: the kernel's own (50 µs).
    pub selftest_slack_ns: Option<u64>,
    /// `manarig.soak=M` (with `manarig.traffic`): instead of one run of the
    /// flows, M guest minutes of traffic rounds (`manarig-flows guest` again
    /// and again) while each minute the agent prints `MANARIG-SOAK sample`,
    /// changes the channels, has the rig raise link-down and link-up, and
    /// unloads and loads mana again (guest-images/README.md).
    pub soak: Option<u32>,
    /// `manarig.soak_channels=A,B,…`: the combined channels each soak minute's
    /// `ethtool -L` sets, in turn (minute k: entry k mod n).
    pub soak_channels: Option<Vec<u32>>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            load_mana: false,
            deadline_s: 180,
            poll: None,
            nic: None,
            ifup: true,
            channels: None,
            pin: None,
            reprobe: false,
            report: ReportChannel::Console,
            addr: None,
            traffic: None,
            debug: false,
            unload: false,
            offline: None,
            offline_after: None,
            online_after: None,
            irqbalance: None,
            selftests: None,
            selftest_timeout: None,
            selftest_slack_ns: None,
            soak: None,
            soak_channels: None,
        }
    }
}

impl AgentOptions {
    /// The `manarig.*` items, in the order of [`NAMES`]: `manarig.deadline` always,
    /// the others only when they differ from the agent's defaults.
    pub fn cmdline_items(&self) -> Vec<String> {
        let values: [(&str, Option<String>); 22] = [
            ("load", self.load_mana.then(|| LOAD_MANA.to_string())),
            ("deadline", Some(self.deadline_s.to_string())),
            ("poll", self.poll.map(|d| format!("{:.3}", d.as_secs_f64()))),
            ("nic", self.nic.map(|n| n.to_string())),
            ("ifup", (!self.ifup).then(|| "0".to_string())),
            ("channels", self.channels.map(|n| n.to_string())),
            ("pin", self.pin.as_ref().map(CpuMask::to_cpulist)),
            ("reprobe", self.reprobe.then(|| "1".to_string())),
            ("report", (self.report == ReportChannel::Ttys1).then(|| "ttyS1".to_string())),
            ("addr", self.addr.map(|(ip, prefix)| format!("{ip}/{prefix}"))),
            ("traffic", self.traffic.map(|peer| peer.to_string())),
            ("debug", self.debug.then(|| "1".to_string())),
            ("unload", self.unload.then(|| "1".to_string())),
            ("offline", self.offline.as_ref().map(CpuMask::to_cpulist)),
            ("offline_after", self.offline_after.as_ref().map(CpuMask::to_cpulist)),
            ("online_after", self.online_after.as_ref().map(CpuMask::to_cpulist)),
            ("irqbalance", self.irqbalance.map(|s| s.to_string())),
            ("selftests", self.selftests.as_ref().map(|t| t.join(","))),
            ("selftest_timeout", self.selftest_timeout.map(|s| s.to_string())),
            ("selftest_slack", self.selftest_slack_ns.map(|ns| ns.to_string())),
            ("soak", self.soak.map(|m| m.to_string())),
            (
                "soak_channels",
                self.soak_channels.as_ref().map(|c| c.iter().map(u32::to_string).collect::<Vec<_>>().join(",")),
            ),
        ];
        debug_assert!(values.iter().map(|(n, _)| *n).eq(NAMES));
        values.into_iter().filter_map(|(name, v)| Some(format!("{PREFIX}{name}={}", v?))).collect()
    }

    /// [`AgentOptions::cmdline_items`] joined by spaces.
    pub fn cmdline(&self) -> String {
        self.cmdline_items().join(" ")
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn the_defaults_render_only_the_deadline() {
        assert_eq!(AgentOptions::default().cmdline(), "manarig.deadline=180");
    }

    /// Every option set to something other than its default (also for
    /// agent_tests: each of these items reaches init.sh's variable).
    pub(in crate::guest_protocol) fn every_option_set() -> AgentOptions {
        AgentOptions {
            load_mana: true,
            deadline_s: 90,
            poll: Some(Duration::from_millis(50)),
            nic: Some("1b36:0x10".parse().expect("id")),
            ifup: false,
            channels: Some(4),
            pin: Some(CpuMask::parse_cpulist("0-1,4").expect("cpulist")),
            reprobe: true,
            report: ReportChannel::Ttys1,
            addr: Some((Ipv4Addr::new(192, 0, 2, 2), 24)),
            traffic: Some(SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 7000)),
            debug: true,
            unload: true,
            offline: Some(CpuMask::single(3)),
            offline_after: Some(CpuMask::parse_cpulist("2,4").expect("cpulist")),
            online_after: Some(CpuMask::parse_cpulist("2-4").expect("cpulist")),
            irqbalance: Some(6),
            selftests: Some(vec!["queues.py".into(), "hw/csum.py".into()]),
            selftest_timeout: Some(300),
            selftest_slack_ns: Some(4_000_000),
            soak: Some(10),
            soak_channels: Some(vec![4, 2]),
        }
    }

    #[test]
    fn every_option_renders_one_item_in_the_order_of_names() {
        let all = every_option_set();
        assert_eq!(
            all.cmdline(),
            "manarig.load=mana manarig.deadline=90 manarig.poll=0.050 manarig.nic=0x1b36:0x0010 manarig.ifup=0 \
             manarig.channels=4 manarig.pin=0-1,4 manarig.reprobe=1 manarig.report=ttyS1 manarig.addr=192.0.2.2/24 \
             manarig.traffic=192.0.2.1:7000 manarig.debug=1 manarig.unload=1 manarig.offline=3 manarig.offline_after=2,4 manarig.online_after=2-4 \
             manarig.irqbalance=6 manarig.selftests=queues.py,hw/csum.py manarig.selftest_timeout=300 \
             manarig.selftest_slack=4000000 manarig.soak=10 manarig.soak_channels=4,2"
        );
        let names: Vec<String> = all
            .cmdline_items()
            .iter()
            .map(|i| i.strip_prefix(PREFIX).and_then(|r| r.split_once('=')).expect("name=value").0.to_string())
            .collect();
        assert_eq!(names, NAMES);
        assert!(all.cmdline_items().iter().all(|i| is_agent_item(i)));
    }

    #[test]
    fn pci_ids_print_as_sysfs_does_and_bad_ones_are_named() {
        assert_eq!(PciId::MICROSOFT.to_string(), "0x1414");
        assert_eq!("0x1B36:0010".parse::<PciId>().expect("id").to_string(), "0x1b36:0x0010");
        let e = "0x1b36:nvme".parse::<PciId>().expect_err("bad");
        assert!(e.contains("\"nvme\" is not a 16-bit hex PCI id"), "{e}");
        assert!("12345".parse::<PciId>().is_err());
    }

    #[test]
    fn agent_items_are_recognised_also_behind_a_quote() {
        assert!(is_agent_item("manarig.channels=4"));
        assert!(is_agent_item("\"manarig.load=z"));
        assert!(!is_agent_item("mana.dyndbg=+p"));
    }
}
