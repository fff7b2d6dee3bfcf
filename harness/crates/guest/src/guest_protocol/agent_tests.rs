//! The guest agent (guest-images/init.sh) and this parser tested against each
//! other on the host, without a guest: init.sh is sourced under the provisioned
//! busybox with `MANARIG_AGENT_LIB=1` (it then only defines its functions and
//! defaults) and `MANARIG_AGENT_ROOT` naming a fake /proc and /sys tree the
//! test builds; what its functions print is read by [`parse()`]. A change on
//! either side that the other does not follow fails here. Without the
//! provisioned busybox (`cargo xtask setup`) these tests SKIP, and fail under
//! `CI=true`. The last test reads init.sh's text alone: every record it prints
//! is a [`Key`] the parser knows.

use super::markers::REPORT_BEGIN;
use super::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// guest-images/init.sh.
const INIT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../guest-images/init.sh");

/// How long one run of the agent's functions may take (they take milliseconds).
const RUN_DEADLINE: Duration = Duration::from_secs(30);

/// The NIC of the fake guest, and the PCI function beside it that is not one.
const NIC: &str = "0000:41:00.0";
const BRIDGE: &str = "0000:40:00.0";

/// The provisioned busybox, or None when it is missing (the test SKIPs).
fn busybox(test: &str) -> Option<PathBuf> {
    let bin = manarig_provision::provision::cache_dir(None).unwrap_or_default().join("busybox/busybox");
    manarig_test_support::file_present(test, "provisioned busybox (cargo xtask setup)", &bin).then_some(bin)
}

/// A guest's /proc and /sys as files below a temporary folder: seed 002's
/// layout made small. Two packages of one core with two threads each (CPUs
/// 0-1 and 2-3), one node per package 20 apart, a MANA NIC on node 0 with
/// three MSI-X vectors (IRQ 24 the HWC on CPU 0, 25 queue 0 on 0-1, 26 queue
/// 1 on 2-3) and a PCI bridge that is not a NIC.
struct FakeGuest {
    root: tempfile::TempDir,
}

impl FakeGuest {
    fn new() -> FakeGuest {
        let g = FakeGuest { root: tempfile::tempdir().expect("temporary folder") };
        g.file("proc/sys/kernel/osrelease", "6.12.117+deb13-cloud-amd64\n");
        g.file("proc/1/environ", "HOME=/\0TERM=linux\0foo=bar\0");
        g.file("proc/uptime", "12.34 40.00\n");
        g.file("proc/cmdline", "console=ttyS0 quiet manarig.load=mana manarig.deadline=60\n");
        g.file("proc/irq/default_smp_affinity", "f\n");
        let cpu = "sys/devices/system/cpu";
        for mask in ["online", "present", "possible"] {
            g.file(&format!("{cpu}/{mask}"), "0-3\n");
        }
        for c in 0..4 {
            let (package, node) = (c / 2, c / 2);
            let topo = format!("{cpu}/cpu{c}/topology");
            g.file(&format!("{topo}/physical_package_id"), &format!("{package}\n"));
            g.file(&format!("{topo}/die_id"), "0\n");
            g.file(&format!("{topo}/core_id"), "0\n");
            g.file(&format!("{topo}/thread_siblings_list"), &format!("{}-{}\n", 2 * package, 2 * package + 1));
            g.link(&format!("{cpu}/cpu{c}/node{node}"), &format!("../../node/node{node}"));
            if c > 0 {
                g.file(&format!("{cpu}/cpu{c}/online"), "1\n");
            }
        }
        let node = "sys/devices/system/node";
        g.file(&format!("{node}/node0/cpulist"), "0-1\n");
        g.file(&format!("{node}/node1/cpulist"), "2-3\n");
        g.file(&format!("{node}/node0/distance"), "10 20\n");
        g.file(&format!("{node}/node1/distance"), "20 10\n");
        g.file(&format!("{node}/node0/meminfo"), "Node 0 MemTotal:       255780 kB\nNode 0 MemFree:        1000 kB\n");
        g.file(&format!("{node}/node1/meminfo"), "Node 1 MemTotal:       262144 kB\n");
        for (bdf, vendor, device, class, numa) in
            [(NIC, "0x1414", "0x00ba", "0x020000", "0"), (BRIDGE, "0x1b36", "0x000b", "0x060000", "-1")]
        {
            let d = format!("sys/bus/pci/devices/{bdf}");
            g.file(&format!("{d}/vendor"), &format!("{vendor}\n"));
            g.file(&format!("{d}/device"), &format!("{device}\n"));
            g.file(&format!("{d}/class"), &format!("{class}\n"));
            g.file(&format!("{d}/numa_node"), &format!("{numa}\n"));
        }
        g.link(&format!("sys/bus/pci/devices/{NIC}/driver"), "../../../../bus/pci/drivers/mana");
        for (irq, affinity, hint, effective) in
            [(24, "0", "00000000,00000001", "0"), (25, "0-1", "3", "1"), (26, "2-3", "c", "3")]
        {
            g.file(&format!("sys/bus/pci/devices/{NIC}/msi_irqs/{irq}"), "msix\n");
            g.file(&format!("proc/irq/{irq}/smp_affinity_list"), &format!("{affinity}\n"));
            g.file(&format!("proc/irq/{irq}/affinity_hint"), &format!("{hint}\n"));
            g.file(&format!("proc/irq/{irq}/effective_affinity_list"), &format!("{effective}\n"));
        }
        g.interrupts([3, 5, 7]);
        g.file(
            "proc/softirqs",
            "                    CPU0       CPU1       CPU2       CPU3\n\
             \x20         HI:          0          0          0          0\n\
             \x20     NET_TX:          1          0          0          2\n\
             \x20     NET_RX:         10          0         30          0\n",
        );
        g.file(
            "dmesg",
            "[    1.200000] mana 0000:41:00.0: Microsoft Azure Network Adapter (MANA)\n\
             [    1.300000] WARNING: CPU: 0 PID: 1 at drivers/net/x.c:1 f+0x1/0x2\n",
        );
        g.file("ethtool-S", "NIC statistics:\n     rx_0_packets: 4\n     tx_0_bytes: 800\n     hc_rx_bytes: 9\n");
        std::fs::create_dir_all(g.path("tmp")).expect("tmp");
        g
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    fn file(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }

    fn link(&self, rel: &str, target: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(target, &p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }

    /// /proc/interrupts with the NIC's vectors at these counts, on the CPU
    /// each is effective on (0, 1 and 3), and a line of another device.
    fn interrupts(&self, counts: [u64; 3]) {
        let [hwc, q0, q1] = counts;
        self.file(
            "proc/interrupts",
            &format!(
                "           CPU0       CPU1       CPU2       CPU3\n\
                 \x20 1:          9          0          0          0  IO-APIC   1-edge      i8042\n\
                 \x2024: {hwc:>10}          0          0          0  PCI-MSIX-{NIC}   0-edge      mana_hwc@pci:{NIC}\n\
                 \x2025:          0 {q0:>10}          0          0  PCI-MSIX-{NIC}   1-edge      mana_q0@pci:{NIC}\n\
                 \x2026:          0          0          0 {q1:>10}  PCI-MSIX-{NIC}   2-edge      mana_q1@pci:{NIC}\n"
            ),
        );
    }

    /// busybox sh sourcing init.sh and running `script` (with `dmesg` and
    /// `ethtool` reading the fake tree's files).
    fn agent(&self, busybox: &Path, script: &str) -> Command {
        let preamble = format!(
            ". {INIT} || exit 99\n\
             dmesg() {{ cat \"$R/dmesg\"; }}\n\
             ethtool() {{ cat \"$R/ethtool-S\"; }}\n"
        );
        let mut cmd = Command::new(busybox);
        cmd.args(["sh", "-c", &format!("{preamble}{script}")])
            .env_clear()
            .env("MANARIG_AGENT_LIB", "1")
            .env("MANARIG_AGENT_ROOT", self.root.path());
        cmd
    }

    /// Run `script` ([`FakeGuest::agent`]) with its standard input closed; its
    /// standard output.
    fn run(&self, busybox: &Path, script: &str) -> String {
        self.run_on(busybox, script, Console::Closed).text()
    }

    /// Run `script` as [`FakeGuest::run`] does, but with its standard input
    /// held open as a guest's console is (QEMU's stdin): `answer` after the
    /// `MANARIG-UNLOAD` line arrived, the host's go-ahead is written there;
    /// without it nothing is.
    fn run_answering(&self, busybox: &Path, script: &str, answer: Option<Duration>) -> Answered {
        self.run_on(busybox, script, Console::Open { answer })
    }

    /// Run `script` ([`FakeGuest::agent`]) with `console` as its standard
    /// input, each output line stamped when it arrived; panics when it fails
    /// or runs past [`RUN_DEADLINE`].
    fn run_on(&self, busybox: &Path, script: &str, console: Console) -> Answered {
        use std::io::{BufRead, Read, Write};
        let (stdin, answer) = match console {
            Console::Closed => (Stdio::null(), None),
            Console::Open { answer } => (Stdio::piped(), answer),
        };
        let mut child = self
            .agent(busybox, script)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("busybox sh");
        let mut stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let mut stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send((Instant::now(), line));
            }
        });
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let deadline = Instant::now() + RUN_DEADLINE;
        let mut out = Answered { lines: Vec::new(), answered: None };
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok((t, line)) => {
                    let mark = line == markers::UNLOAD;
                    out.lines.push((t, line));
                    if let (true, Some(after), Some(stdin)) = (mark, answer, stdin.as_mut()) {
                        std::thread::sleep(after);
                        // Stamped before the write: the agent may act on it
                        // before this thread runs again.
                        out.answered = Some(Instant::now());
                        stdin.write_all(format!("{}\n", markers::GO_AHEAD).as_bytes()).expect("the go-ahead");
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("the agent's functions ran past {RUN_DEADLINE:?}:\n{script}\n{}", out.text());
                }
            }
        }
        let status = child.wait().expect("wait");
        drop(stdin);
        let errors = errors.join().unwrap_or_default();
        assert!(status.success(), "{status}:\n{script}\n--- stdout:\n{}\n--- stderr:\n{errors}", out.text());
        out
    }
}

/// The agent's standard input while a script runs.
enum Console {
    /// `/dev/null`: a read sees the end at once.
    Closed,
    /// A pipe held open; `answer`: see [`FakeGuest::run_answering`].
    Open { answer: Option<Duration> },
}

/// What [`FakeGuest::run_on`] read: each line of the agent's standard
/// output with the moment it arrived, and when the go-ahead's write began.
struct Answered {
    lines: Vec<(Instant, String)>,
    answered: Option<Instant>,
}

impl Answered {
    /// When `line` arrived (the first time).
    fn at(&self, line: &str) -> Instant {
        let found = self.lines.iter().find(|(_, l)| l == line).map(|(t, _)| *t);
        found.unwrap_or_else(|| panic!("no {line:?} in {}", self.text()))
    }

    /// The standard output, a line feed after each line.
    fn text(&self) -> String {
        self.lines.iter().map(|(_, l)| format!("{l}\n")).collect()
    }
}

#[test]
fn the_agents_report_on_a_fake_guest_parses_into_that_guest() {
    let Some(bb) = busybox("the_agents_report_on_a_fake_guest_parses_into_that_guest") else { return };
    let g = FakeGuest::new();
    let out = g.run(
        &bb,
        "parse_cmdline\n\
         T_INIT=1.50 T_PROBE=2.25 NETDEV=eth0 CARRIER=1 CHANNELS_NOW=2 INSMOD_RC=0\n\
         SETTLE='probe-returned fired=yes'\n\
         ETHTOOL_RC=1; echo 'netlink error: Invalid argument' > \"$R/tmp/ethtool.err\"\n\
         print_report\n",
    );
    let t = parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
    assert_eq!(t.version, Version::CURRENT);
    let r = t.report;
    assert_eq!(r.kernel, "6.12.117+deb13-cloud-amd64");
    assert_eq!(r.cmdline, "console=ttyS0 quiet manarig.load=mana manarig.deadline=60");
    assert_eq!(r.init_env, ["HOME=/", "TERM=linux", "foo=bar"]);
    assert_eq!((r.times["init"], r.times["probe"], r.times["report"]), (1.5, 2.25, 12.34));
    assert!(!r.times.contains_key("ifup"), "`-`: the step did not run");
    assert_eq!(r.load, "mana");
    assert_eq!(r.settle, "probe-returned fired=yes");
    assert_eq!((r.insmod_status, r.carrier, r.channels), (Some(0), Some(true), Some(2)));
    assert_eq!(r.netdev.as_deref(), Some("eth0"));
    assert_eq!(r.ethtool_status, Some(1));
    assert_eq!(r.stderr["ethtool"], ["netlink error: Invalid argument"]);
    assert_eq!((r.rmmod_status, r.unload, r.hotplug_status), (None, None, None));
    // The machine, from the sysfs dump and the node links.
    assert_eq!(r.cpus.len(), 4);
    assert_eq!((r.cpus[&1].package, r.cpus[&1].core, r.cpus[&1].node), (0, 0, 0));
    assert_eq!(r.cpus[&3].siblings, [2, 3]);
    assert_eq!(r.cpus[&3].node, 1);
    assert_eq!(r.nodes[&1].cpus, [2, 3]);
    assert_eq!(r.nodes[&1].distance, [20, 10]);
    assert_eq!((r.nodes[&0].mem_kib, r.nodes[&1].mem_kib), (255_780, 262_144));
    assert_eq!(r.cpu_state.present.as_deref(), Some(&[0, 1, 2, 3][..]));
    assert_eq!(r.cpu_state.default_smp_affinity.as_deref(), Some(&[0, 1, 2, 3][..]));
    // The NIC and its vectors; the bridge is a PCI function, not a NIC.
    assert_eq!((r.nic.as_deref(), r.nics.len()), (Some(NIC), 1));
    let nic = &r.pci[NIC];
    assert_eq!((nic.vendor, nic.device, nic.class, nic.numa_node), (0x1414, 0x00ba, 0x020000, 0));
    assert_eq!(nic.driver.as_deref(), Some("mana"));
    assert_eq!((r.pci[BRIDGE].numa_node, r.pci[BRIDGE].driver.as_deref()), (-1, None));
    let names: Vec<&str> = r.msix.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, [format!("mana_hwc@pci:{NIC}"), format!("mana_q0@pci:{NIC}"), format!("mana_q1@pci:{NIC}")]);
    let q1 = &r.msix[2];
    assert_eq!((q1.irq, q1.affinity.as_deref(), q1.effective.as_deref()), (26, Some(&[2, 3][..]), Some(&[3][..])));
    assert_eq!(q1.hint.as_deref(), Some("c"));
    assert_eq!(q1.counts, [0, 0, 0, 7]);
    assert_eq!(r.msix[0].hint.as_deref(), Some("00000001"), "the leading zero words are left out");
    assert_eq!(r.dmesg.len(), 1);
    assert!(r.dmesg[0].contains("Microsoft Azure Network Adapter"), "{:?}", r.dmesg);
    assert_eq!(r.warnings.len(), 1);
}

/// The clusters are read on an arm64 guest only, which the agent tells by the
/// CPUs' `regs/identification/midr_el1` (no `uname -m`: a fork and an exec).
#[test]
fn the_clusters_are_reported_only_where_the_cpus_show_an_arm64_midr() {
    let Some(bb) = busybox("the_clusters_are_reported_only_where_the_cpus_show_an_arm64_midr") else { return };
    let g = FakeGuest::new();
    let cpu = "sys/devices/system/cpu";
    for c in 0..4 {
        g.file(&format!("{cpu}/cpu{c}/topology/cluster_id"), &format!("{}\n", c / 2));
    }
    let clusters = |g: &FakeGuest| {
        let out = g.run(&bb, "parse_cmdline\nprint_report\n");
        let r = parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}")).report;
        r.cpus.values().map(|c| c.cluster).collect::<Vec<_>>()
    };
    assert_eq!(clusters(&g), [None; 4], "x86: no cluster_id read");
    for c in 0..4 {
        g.file(&format!("{cpu}/cpu{c}/regs/identification/midr_el1"), "0x00000000410fd4f1\n");
    }
    assert_eq!(clusters(&g), [Some(0), Some(0), Some(1), Some(1)]);
}

#[test]
fn a_stage_carries_the_items_of_the_report_under_its_name() {
    let Some(bb) = busybox("a_stage_carries_the_items_of_the_report_under_its_name") else { return };
    let g = FakeGuest::new();
    let out = g.run(&bb, "NETDEV=eth0\nprint_stage first-probe\nRMMOD_RC=0 T_RMMOD=3.5\nprint_report\n");
    let t = parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
    assert_eq!(t.stages.len(), 1);
    let stage = &t.stages[0];
    assert_eq!((stage.name.as_str(), stage.report.rmmod_status), ("first-probe", None));
    assert_eq!(stage.report.msix.len(), 3);
    assert_eq!((t.report.rmmod_status, t.report.times.get("rmmod")), (Some(0), Some(&3.5)));
}

#[test]
fn the_traffic_counters_and_irqbalance_samples_parse() {
    let Some(bb) = busybox("the_traffic_counters_and_irqbalance_samples_parse") else { return };
    let g = FakeGuest::new();
    // The agent runs `ethtool -S` when the initramfs has it (the preamble's function answers).
    g.file("sbin/ethtool", "");
    std::fs::set_permissions(g.path("sbin/ethtool"), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    // The counts after the traffic, copied over /proc/interrupts between the readings.
    g.interrupts([3, 105, 207]);
    std::fs::rename(g.path("proc/interrupts"), g.path("interrupts.after")).expect("keep the later counts");
    g.interrupts([3, 5, 7]);
    let out = g.run(
        &bb,
        "NETDEV=eth0 ADDR_RC=0 PING='0 3 packets transmitted, 3 packets received, 0% packet loss' TRAFFIC_RC=0\n\
         traffic_counts before > \"$R/tmp/traffic.before\"\n\
         cp \"$R/interrupts.after\" \"$R/proc/interrupts\"\n\
         traffic_counts after > \"$R/tmp/traffic.after\"\n\
         IRQB_F=\"$R/proc/irq/25/smp_affinity_list $R/proc/irq/25/effective_affinity_list\"\n\
         irqb_sample 0 > \"$R/tmp/irqbalance.samples\"\n\
         IRQB=stopped\n\
         print_report\n",
    );
    let r = parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}")).report;
    let t = &r.traffic;
    assert_eq!((t.addr_status, t.ping_status, t.tool_status), (Some(0), Some(0), Some(0)));
    assert!(t.ping_summary.starts_with("3 packets transmitted"), "{}", t.ping_summary);
    assert_eq!(t.before.irqs[&25], [0, 5], "up to the last CPU with a count");
    assert_eq!(t.after.irqs[&26], [0, 0, 0, 207]);
    assert_eq!((t.before.net_rx.clone(), t.before.net_tx.clone()), (vec![10, 0, 30], vec![1, 0, 0, 2]));
    assert_eq!(t.before.stats.get("rx_0_packets"), Some(&4));
    assert_eq!(t.after.stats.get("tx_0_bytes"), Some(&800));
    assert!(!t.before.stats.contains_key("hc_rx_bytes"), "per-queue counters only");
    assert_eq!(r.irqbalance.state, Some(IrqbalanceState::Stopped));
    let sample = &r.irqbalance.samples[0];
    assert_eq!((sample.index, sample.time), (0, 12.34));
    assert_eq!((sample.irqs[&25].affinity.clone(), sample.irqs[&25].effective.clone()), (vec![0, 1], vec![1]));
}

#[test]
fn cpu_hotplug_writes_each_cpu_in_order_and_reports_a_failed_write() {
    let Some(bb) = busybox("cpu_hotplug_writes_each_cpu_in_order_and_reports_a_failed_write") else { return };
    let g = FakeGuest::new();
    // CPU 5 does not exist: its write fails, the others are made.
    let out = g.run(&bb, "set_cpus 0 1-2,5\nprint_report\n");
    let online = |c: u32| std::fs::read_to_string(g.path(&format!("sys/devices/system/cpu/cpu{c}/online")));
    assert_eq!(
        (online(1).ok().as_deref(), online(2).ok().as_deref(), online(3).ok().as_deref()),
        (Some("0\n"), Some("0\n"), Some("1\n"))
    );
    let r = parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}")).report;
    assert_eq!(r.hotplug_status, Some(1));
    let said = &r.stderr["hotplug"];
    assert!(said.iter().any(|l| l.ends_with("/cpu5/online failed")), "{said:?}");
}

/// kmemleak reports an object only once it is 5 s old: a debug run's scan
/// waits until 6 s after the last work that allocates (the traffic's skbs,
/// not only the probe's objects), and at once when nothing ran.
#[test]
fn kmemleak_scans_6_s_after_the_last_step_that_allocates() {
    let Some(bb) = busybox("kmemleak_scans_6_s_after_the_last_step_that_allocates") else { return };
    let g = FakeGuest::new();
    let at = |vars: &str| g.run(&bb, &format!("{vars}\nscan_at\necho \"$SCAN_AT\"\n")).trim().to_owned();
    assert_eq!(at(""), "-");
    assert_eq!(at("T_SETTLED=10.50"), "16");
    assert_eq!(at("T_SETTLED=10.50 T_TRAFFIC_END=31.02"), "37");
    assert_eq!(at("T_SETTLED=10.50 T_TRAFFIC_END=31.02 T_IRQB_END=40.9"), "46");
    assert_eq!(at("T_SETTLED=50.1 T_TRAFFIC_END=31.02 T_SELFTESTS_END=-"), "56");
    assert_eq!(at("T_SETTLED=- T_SOAK_END=700.2"), "706");
}

#[test]
fn the_mana_netdevs_receive_counters_after_the_selftests_reach_the_report() {
    let Some(bb) = busybox("the_mana_netdevs_receive_counters_after_the_selftests_reach_the_report") else { return };
    let g = FakeGuest::new();
    let stats = "sys/class/net/eth0/statistics";
    g.file(&format!("{stats}/rx_packets"), "726\n");
    g.file(&format!("{stats}/rx_dropped"), "3\n");
    g.file(&format!("{stats}/tx_packets"), "650\n");
    // No rx_missed_errors file: the counter is `-`, not a failure.
    let out = g.run(&bb, "NETDEV=eth0\nselftest_netdev_counters\nprint_report\n");
    assert!(
        out.contains("selftest-netdev eth0: rx_packets=726 rx_dropped=3 rx_missed_errors=- tx_packets=650"),
        "{out}"
    );
    let r = parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}")).report;
    let c = r.selftests.netdev.expect("selftest-netdev parsed");
    assert_eq!((c.netdev.as_str(), c.packets, c.dropped, c.missed), ("eth0", Some(726), Some(3), None));
    assert_eq!(c.tx_packets, Some(650));
    // Without a netdev folder the agent says nothing.
    let out = FakeGuest::new().run(&bb, "NETDEV=eth9\nselftest_netdev_counters\nprint_report\n");
    assert!(!out.contains("selftest-netdev"), "{out}");
}

#[test]
fn the_remote_nics_and_udp_counters_are_read_inside_its_netns() {
    let Some(bb) = busybox("the_remote_nics_and_udp_counters_are_read_inside_its_netns") else { return };
    let g = FakeGuest::new();
    // The remote netns's own /sys and /proc/net, as `ip netns exec` shows them.
    let stats = "sys/class/net/eth1/statistics";
    g.file(&format!("{stats}/rx_packets"), "1210\n");
    g.file(&format!("{stats}/rx_dropped"), "0\n");
    g.file(&format!("{stats}/rx_missed_errors"), "0\n");
    g.file(&format!("{stats}/tx_packets"), "1190\n");
    g.file(
        "proc/net/snmp",
        "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
         Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n\
         Udp: 200 30 2 10 0 0 2 0 0\n\
         UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n\
         UdpLite: 9 9 9 9 9 9 9 9 9\n",
    );
    g.file(
        "proc/net/snmp6",
        "Ip6InReceives                   \t1500\nUdp6InDatagrams                 \t100\nUdp6NoPorts                     \t70\n\
         Udp6InErrors                    \t0\nUdpLite6InDatagrams             \t5\nUdpLite6NoPorts                 \t5\n",
    );
    // `ip netns exec NAME CMD…` runs CMD: the fake tree is the netns's view.
    let script = "fake_ip() { [ \"$1 $2 $3\" = 'netns exec remote' ] || exit 7; shift 3; \"$@\"; }\n\
                  IPR=fake_ip REMOTE_ARGS=remote RIF=eth1\n\
                  selftest_remote_counters\nprint_report\n";
    let out = g.run(&bb, script);
    let line = "selftest-remote eth1: rx_packets=1210 rx_dropped=0 rx_missed_errors=0 tx_packets=1190 udp_in=300 udp_no_ports=100 udp_in_errors=2";
    assert!(out.contains(line), "{out}");
    let r = parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}")).report;
    let c = r.selftests.remote.expect("selftest-remote parsed");
    assert_eq!(
        (c.nic.netdev.as_str(), c.nic.packets, c.nic.dropped, c.nic.tx_packets),
        ("eth1", Some(1210), Some(0), Some(1190))
    );
    assert_eq!((c.udp_in, c.udp_no_ports, c.udp_in_errors), (Some(300), Some(100), Some(2)));
    // A netns the agent cannot enter: every counter unknown, the line still there.
    let out = g.run(
        &bb,
        "fake_ip() { return 1; }\nIPR=fake_ip REMOTE_ARGS=remote RIF=eth1\nselftest_remote_counters\nprint_report\n",
    );
    assert!(out.contains("selftest-remote eth1: rx_packets=- rx_dropped=- rx_missed_errors=- tx_packets=- udp_in=- udp_no_ports=- udp_in_errors=-"), "{out}");
    // Without a remote NIC (the setup failed) the agent says nothing.
    let out = g.run(&bb, "RIF=\nselftest_remote_counters\nprint_report\n");
    assert!(!out.contains("selftest-remote"), "{out}");
}

/// Each mark reads both ends' counters, then prints `MANARIG-SELFTEST <k>`
/// outside the report; the report lists the counters of every mark, and its
/// `selftest-netdev` line is the last mark's.
#[test]
fn each_selftest_mark_reads_both_ends_counters_before_its_marker_line() {
    let Some(bb) = busybox("each_selftest_mark_reads_both_ends_counters_before_its_marker_line") else { return };
    let g = FakeGuest::new();
    let stats = "sys/class/net/eth0/statistics";
    g.file(&format!("{stats}/rx_packets"), "100\n");
    g.file(&format!("{stats}/rx_dropped"), "0\n");
    g.file("sys/class/net/eth1/statistics/rx_packets", "90\n");
    // The remote netns seen through a stand-in for `ip netns exec`.
    let script = "fake_ip() { shift 3; \"$@\"; }\nIPR=fake_ip REMOTE_ARGS=remote RIF=eth1 NETDEV=eth0\n\
                  selftest_mark 0\n\
                  echo 250 > \"$R\"/sys/class/net/eth0/statistics/rx_packets\n\
                  selftest_mark 1\nprint_report\n";
    let out = g.run(&bb, script);
    let at = |l: &str| out.lines().position(|x| x == l).unwrap_or_else(|| panic!("no {l:?} in {out}"));
    assert!(at("MANARIG-SELFTEST 0") < at("MANARIG-SELFTEST 1"), "{out}");
    assert!(at("MANARIG-SELFTEST 1") < at(&format!("MANARIG-REPORT-BEGIN {}", Version::CURRENT)), "{out}");
    let r = parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}")).report;
    let packets = |k: u32| r.selftests.mark(k).and_then(|m| m.netdev.as_ref()).and_then(|c| c.packets);
    assert_eq!((packets(0), packets(1)), (Some(100), Some(250)));
    let remote = r.selftests.mark(1).and_then(|m| m.remote.as_ref()).expect("the remote end's counters at mark 1");
    assert_eq!((remote.nic.netdev.as_str(), remote.nic.packets, remote.nic.dropped), ("eth1", Some(90), None));
    assert_eq!(r.selftests.netdev.and_then(|c| c.packets), Some(250), "the last mark's counters");
}

/// The final unload prints `MANARIG-UNLOAD` (the rig reads the device's
/// queues then) before its rmmod runs, and the report still follows it. Its
/// console input at an end (stdin /dev/null: no go-ahead can come) ends the
/// wait for the host's answer at once: `timeout`.
#[test]
fn the_final_unload_prints_its_mark_before_the_rmmod() {
    let Some(bb) = busybox("the_final_unload_prints_its_mark_before_the_rmmod") else { return };
    let g = FakeGuest::new();
    let out = g.run(&bb, UNLOAD_SCRIPT);
    let at = |l: &str| out.lines().position(|x| x == l).unwrap_or_else(|| panic!("no {l:?} in {out}"));
    assert!(at("MANARIG-UNLOAD") < at("rmmod mana"), "{out}");
    assert!(at("rmmod mana") < at(&format!("MANARIG-REPORT-BEGIN {}", Version::CURRENT)), "{out}");
    let r = parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}")).report;
    assert_eq!(r.unload, Some(super::report::Unload::Exit(0)), "{out}");
    assert_eq!(r.unload_handshake, Some(UnloadHandshake::Timeout), "{out}");
}

/// The final unload with a stand-in rmmod that prints its arguments.
const UNLOAD_SCRIPT: &str =
    "rmmod() { echo \"rmmod $*\"; }\nLAST_MOD=mana.ko\nnap_setup\nunload_driver\nprint_report\n";

/// The host's go-ahead ends the final unload's wait at once: the rmmod runs
/// after it (and not before), long before the agent's wait (20 s here) would
/// have ended, and the report says `unload-handshake: go`.
#[test]
fn the_final_unload_runs_its_rmmod_when_the_hosts_go_ahead_arrives() {
    let Some(bb) = busybox("the_final_unload_runs_its_rmmod_when_the_hosts_go_ahead_arrives") else { return };
    let g = FakeGuest::new();
    let wait = Duration::from_secs(20);
    let script = format!("UNLOAD_GO_WAIT={}\n{UNLOAD_SCRIPT}", wait.as_secs());
    // The host takes a while to answer: the agent must not go on meanwhile.
    let out = g.run_answering(&bb, &script, Some(Duration::from_millis(300)));
    let answered = out.answered.expect("the mark arrived and was answered");
    let rmmod = out.at("rmmod mana");
    assert!(rmmod > answered, "the rmmod ran before the go-ahead:\n{}", out.text());
    assert!(rmmod - out.at(markers::UNLOAD) < wait, "the agent waited out its wait:\n{}", out.text());
    let text = out.text();
    let r = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}")).report;
    assert_eq!((r.unload_handshake, r.unload), (Some(UnloadHandshake::Go), Some(Unload::Exit(0))), "{text}");
    assert!(r.times.contains_key("unload-mark") && r.times.contains_key("unload-go"), "{text}");
}

/// A host that never answers (one from before the handshake) costs the
/// agent's wait, no more: then the rmmod runs all the same and the report
/// says `unload-handshake: timeout`.
#[test]
fn the_final_unload_without_a_go_ahead_waits_its_deadline_then_unloads_and_says_so() {
    let Some(bb) = busybox("the_final_unload_without_a_go_ahead_waits_its_deadline_then_unloads_and_says_so") else {
        return;
    };
    let g = FakeGuest::new();
    let script = format!("UNLOAD_GO_WAIT=2\n{UNLOAD_SCRIPT}");
    let out = g.run_answering(&bb, &script, None);
    let waited = out.at("rmmod mana") - out.at(markers::UNLOAD);
    // busybox's `read -t 2` on an open input that stays silent lasts its 2 s;
    // the mark's line may reach this test late on a loaded host: 1 s of slack.
    assert!(waited >= Duration::from_secs(1), "the rmmod came after {waited:?}:\n{}", out.text());
    let text = out.text();
    let r = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}")).report;
    assert_eq!((r.unload_handshake, r.unload), (Some(UnloadHandshake::Timeout), Some(Unload::Exit(0))), "{text}");
}

/// The agent's deadline counts from mana's `insmod`, not from `/init`: a
/// guest whose clock passed `/init` + 60 s while the modules before mana
/// loaded (a starved host: the CI failure in docs/rig-pitfalls.md) still
/// waits for the probe's return and says `probe-returned`, not `deadline`.
#[test]
fn the_deadline_counts_from_manas_insmod_not_from_init() {
    let Some(bb) = busybox("the_deadline_counts_from_manas_insmod_not_from_init") else { return };
    let g = FakeGuest::new();
    g.file("lib/modules/manarig/order", "mana_dep.ko\nmana.ko\n");
    // /init started at 12 s; the module before mana leaves the clock at 500 s.
    let script = "insmod() { case \"$1\" in *mana_dep.ko) echo '500.00 0' > \"$R\"/proc/uptime ;; esac; }\n\
                  DEADLINE=60\nup; T_INIT=$UP; DEADLINE_AT=$((${T_INIT%.*} + DEADLINE))\n\
                  nap_setup\nload_and_probe\nprint_report\n";
    let out = g.run(&bb, script);
    let r = parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}")).report;
    assert!(r.settle.starts_with("probe-returned"), "{out}");
    assert_eq!(r.times.get("modules").copied(), Some(500.0), "{out}");
}

/// Each `manarig.*` item and the variable init.sh's `parse_cmdline` keeps it in.
const ITEM_VARIABLES: [(&str, &str); 22] = [
    ("load", "LOAD"),
    ("deadline", "DEADLINE"),
    ("poll", "POLL"),
    ("nic", "NIC_ID"),
    ("ifup", "IFUP"),
    ("channels", "CHANNELS"),
    ("pin", "PIN"),
    ("reprobe", "REPROBE"),
    ("report", "REPORT"),
    ("addr", "ADDR"),
    ("traffic", "TRAFFIC"),
    ("debug", "DEBUG"),
    ("unload", "UNLOAD"),
    ("offline", "OFFLINE"),
    ("offline_after", "OFFLINE_AFTER"),
    ("online_after", "ONLINE_AFTER"),
    ("irqbalance", "IRQBALANCE"),
    ("selftests", "SELFTESTS"),
    ("selftest_timeout", "SELFTEST_TIMEOUT"),
    ("selftest_slack", "SELFTEST_SLACK"),
    ("soak", "SOAK"),
    ("soak_channels", "SOAK_CHANNELS"),
];

#[test]
fn every_item_the_options_write_reaches_the_agents_variable() {
    let Some(bb) = busybox("every_item_the_options_write_reaches_the_agents_variable") else { return };
    assert!(ITEM_VARIABLES.iter().map(|(item, _)| *item).eq(options::NAMES), "one variable per item of NAMES");
    let all = options::tests::every_option_set();
    let items = all.cmdline_items();
    assert_eq!(items.len(), ITEM_VARIABLES.len(), "every item rendered");
    let g = FakeGuest::new();
    g.file("proc/cmdline", &format!("console=ttyS0 {} quiet\n", all.cmdline()));
    let echo: String = ITEM_VARIABLES.iter().map(|(_, var)| format!("echo \"{var}=${var}\"\n")).collect();
    let out = g.run(&bb, &format!("parse_cmdline\n{echo}"));
    let got: Vec<&str> = out.lines().collect();
    for ((item, var), line) in ITEM_VARIABLES.iter().zip(&got) {
        let value = items
            .iter()
            .find_map(|i| i.strip_prefix(&format!("{}{item}=", options::PREFIX)))
            .unwrap_or_else(|| panic!("no manarig.{item} in {items:?}"));
        assert_eq!(*line, format!("{var}={value}"), "manarig.{item}");
    }
}

/// The record names (`key` of `key: value`, `key id: value`) init.sh prints:
/// the `echo "…` lines of `report_body` and the `print "…` and `pre="…` of its
/// awk programs (the lines of the files the report replays: the NIC's IRQs,
/// the traffic counters, irqbalance's samples).
fn init_sh_records() -> BTreeSet<String> {
    let text = std::fs::read_to_string(INIT).expect("init.sh");
    let body_start = text.find("\nreport_body() {").expect("init.sh defines report_body");
    let body_end = body_start + text[body_start..].find("\n}\n").expect("report_body ends");
    let body = &text[body_start..body_end];
    let word = |rest: &str| -> Option<String> {
        let w: String =
            rest.chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-').collect();
        let next = rest[w.len()..].chars().next();
        (!w.is_empty() && matches!(next, Some(':' | ' '))).then_some(w)
    };
    let after = |hay: &str, needle: &str| -> Vec<String> {
        hay.match_indices(needle).filter_map(|(i, _)| word(&hay[i + needle.len()..])).collect()
    };
    let mut records: BTreeSet<String> = after(body, "echo \"").into_iter().collect();
    records.extend(after(&text, "print \""));
    records.extend(after(&text, "pre=\""));
    // Lines appended to a file that report_body replays as it is (the soak's
    // steps and rounds): the `echo "…" >> /tmp/NAME` anywhere in init.sh.
    let replayed = replayed_files(body);
    for line in text.lines() {
        let Some((echo, target)) = line.split_once(">> ") else { continue };
        let target = target.trim().trim_start_matches("\"$R\"").trim_matches('"');
        let Some(name) = target.strip_prefix("/tmp/") else { continue };
        if replayed.contains(name) {
            records.extend(after(echo, "echo \""));
        }
    }
    records
}

/// The files report_body copies line by line into the report (`while read -r
/// l; do echo "$l"; done < FILE`), with `for t in A B` loops over
/// `tmp/PREFIX.$t` expanded: their names under /tmp.
fn replayed_files(body: &str) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    let mut words: Vec<String> = Vec::new();
    for line in body.lines().map(str::trim) {
        if let Some(list) = line.strip_prefix("for t in ").and_then(|l| l.strip_suffix("; do")) {
            words = list.split_whitespace().map(str::to_owned).collect();
            continue;
        }
        let Some((_, from)) = line.split_once("do echo \"$l\"; done < ") else { continue };
        let path = from.replace("\"$R\"", "").replace("$R", "").replace('"', "");
        let Some(name) = path.trim().strip_prefix("/tmp/") else { continue };
        match name.strip_suffix("$t") {
            Some(prefix) => files.extend(words.iter().map(|w| format!("{prefix}{w}"))),
            None => {
                files.insert(name.to_owned());
            }
        }
    }
    files
}

#[test]
fn every_record_init_sh_prints_is_a_key_the_parser_reads() {
    let records = init_sh_records();
    for expected in ["kernel", "time", "f", "link", "irqcount", "traffic-softirq", "irqbalance-sample", "klog"] {
        assert!(records.contains(expected), "the scan of init.sh misses {expected:?}: {records:?}");
    }
    let unknown: Vec<&String> =
        records.iter().filter(|r| !Key::ALL.iter().any(|k| k.name() == *r && k.in_version(Version::CURRENT))).collect();
    assert!(
        unknown.is_empty(),
        "guest-images/init.sh prints records the parser does not read in version {}: {unknown:?}",
        Version::CURRENT
    );
    // And the other way (spec_tests checks each key's text is in init.sh): every
    // key of the current version is among the records init.sh prints.
    let missing: Vec<&str> = Key::ALL
        .iter()
        .filter(|k| k.in_version(Version::CURRENT) && !records.contains(k.name()))
        .map(|k| k.name())
        .collect();
    assert!(missing.is_empty(), "keys of version {} init.sh does not print: {missing:?}", Version::CURRENT);
    assert!(
        std::fs::read_to_string(INIT).expect("init.sh").contains(&format!("echo \"{REPORT_BEGIN} $PROTOCOL_VERSION\"")),
        "init.sh's begin line carries PROTOCOL_VERSION"
    );
}
