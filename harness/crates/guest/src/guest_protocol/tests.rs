//! The parser against hand-written reports and the recorded consoles in
//! harness/tests/fixtures (version 1 agents, and console-seed002-6.12-v3.txt of
//! the current one).

use super::*;

/// The report of `text` (its stages dropped).
fn parse_report(text: &str) -> Result<GuestReport, ReportError> {
    parse(text).map(|t| t.report)
}

#[test]
fn cpulists_format_as_the_kernel_prints_them() {
    assert_eq!(format_cpulist(&[0, 1, 2, 3, 8]), "0-3,8");
    assert_eq!(format_cpulist(&[]), "");
}

#[test]
fn missing_markers_are_errors() {
    assert_eq!(parse("hello").expect_err("must fail"), ReportError::NoBegin);
    assert_eq!(
        parse("x\nMANARIG-REPORT-BEGIN 2\nkernel: 6.1").expect_err("must fail"),
        ReportError::NoEnd { line: 2, end: "MANARIG-REPORT-END" }
    );
}

#[test]
fn an_unknown_version_is_refused_naming_both_versions() {
    let e = parse("MANARIG-REPORT-BEGIN 9\nkernel: 6.1\nMANARIG-REPORT-END").expect_err("version 9");
    assert_eq!(e, ReportError::Version { got: "9".into() });
    let text = e.to_string();
    assert!(
        text.contains("version \"9\"") && text.contains("reads versions 1, 2, 3") && text.contains("prints 3"),
        "{text}"
    );
}

/// A version 2 report, as guest-images/init.sh prints it (CR LF from the serial port).
const SAMPLE: &str = "noise before\r
MANARIG-REPORT-BEGIN 2\r
kernel: 6.12.117+deb13-cloud-amd64\r
time init: 5.81\r
f /sys/devices/system/cpu/online: 0-1\r
f /sys/devices/system/cpu/cpu0/topology/physical_package_id: 0\r
f /sys/devices/system/cpu/cpu1/topology/physical_package_id: 0\r
f /sys/devices/system/cpu/cpu0/topology/core_id: 0\r
f /sys/devices/system/cpu/cpu1/topology/core_id: 0\r
f /sys/devices/system/cpu/cpu0/topology/thread_siblings_list: 0-1\r
f /sys/devices/system/cpu/cpu1/topology/thread_siblings_list: 0-1\r
link /sys/devices/system/cpu/cpu0/node0\r
link /sys/devices/system/cpu/cpu1/node0\r
f /sys/devices/system/node/node0/cpulist: 0-1\r
f /sys/devices/system/node/node0/distance: 10\r
f /sys/devices/system/node/node0/meminfo: 255780\r
f /sys/bus/pci/devices/0000:41:00.0/vendor: 0x1414\r
f /sys/bus/pci/devices/0000:41:00.0/device: 0x00ba\r
f /sys/bus/pci/devices/0000:41:00.0/numa_node: 0\r
f /sys/bus/pci/devices/0000:41:00.0/driver: ../../../../bus/pci/drivers/mana\r
nic: 0000:41:00.0\r
f /proc/irq/24/smp_affinity_list: 0\r
f /proc/irq/24/affinity_hint: 1\r
f /proc/irq/24/effective_affinity_list: 0\r
irqcount: 24 0=3 | PCI-MSIX-0000:41:00.0 0-edge mana_hwc@pci:0000:41:00.0\r
time report: 7.29\r
MANARIG-REPORT-END\r
";

#[test]
fn sysfs_dump_lines_assemble_into_cpus_nodes_pci_and_msix() {
    let r = parse_report(SAMPLE).expect("report");
    assert_eq!(r.kernel, "6.12.117+deb13-cloud-amd64");
    assert_eq!(r.cpus.len(), 2);
    assert_eq!(r.cpus[&1].siblings, vec![0, 1]);
    assert_eq!(r.cpus[&1].node, 0);
    assert_eq!(r.nodes[&0].distance, vec![10]);
    assert_eq!(r.nodes[&0].mem_kib, 255_780);
    let nic = &r.pci["0000:41:00.0"];
    assert_eq!((nic.vendor, nic.device, nic.numa_node), (0x1414, 0x00ba, 0));
    assert_eq!(nic.driver.as_deref(), Some("mana"));
    assert_eq!(r.msix.len(), 1);
    assert_eq!(r.msix[0].name, "mana_hwc@pci:0000:41:00.0");
    assert_eq!(r.msix[0].counts, vec![3, 0]);
    assert_eq!(r.msix[0].effective, Some(vec![0]));
    assert_eq!(r.init_to_report_s().map(|s| (s * 100.0).round()), Some(148.0));
}

#[test]
fn tool_stderr_lines_are_kept_by_tool() {
    let text = SAMPLE.replace(
        "time report: 7.29\r\n",
        "rmmod: 1\r\nstderr rmmod: rmmod: can't unload module 'mana': Resource temporarily unavailable\r\n\
         stderr ethtool: netlink error: Invalid argument\r\nstderr ethtool: second line\r\ntime report: 7.29\r\n",
    );
    let r = parse_report(&text).expect("report");
    assert_eq!(r.rmmod_status, Some(1));
    assert_eq!(r.stderr["rmmod"], ["rmmod: can't unload module 'mana': Resource temporarily unavailable"]);
    assert_eq!(r.stderr["ethtool"], ["netlink error: Invalid argument", "second line"]);
    assert!(parse_report(SAMPLE).expect("report").stderr.is_empty());
}

/// `initenv:` lines, as a -min kernel's agent printed them for `isolcpus=2-3
/// nohz_full=6-7` (no CONFIG_CPU_ISOLATION: both handed to /init), in order; a report
/// without them (an older agent) has none.
#[test]
fn initenv_lines_are_the_environment_the_kernel_gave_init() {
    let text = SAMPLE.replace(
        "time report: 7.29\r\n",
        "initenv: HOME=/\r\ninitenv: TERM=linux\r\ninitenv: isolcpus=2-3\r\ninitenv: nohz_full=6-7\r\ntime report: 7.29\r\n",
    );
    let r = parse_report(&text).expect("report");
    assert_eq!(r.init_env, ["HOME=/", "TERM=linux", "isolcpus=2-3", "nohz_full=6-7"]);
    assert!(parse_report(SAMPLE).expect("report").init_env.is_empty());
}

/// `manarig.irqbalance`'s lines, as the agent printed them on Debian 6.12 with
/// topologies/scen-irqbalance.toml (two of the nine IRQs); a garbled sample names its line.
#[test]
fn irqbalance_lines_give_its_state_and_samples() {
    let lines = "irqbalance: stopped\r\nirqbalance-sample 0: 41.02 25=0/0 26=0-1/1\r\n\
                 irqbalance-sample 1: 42.19 25=0/0 26=0-1/1\r\nirqbalance-sample 2: 43.35 25=3/0 26=3/1\r\n\
                 time irqbalance: 41.03\r\ntime report: 7.29\r\n";
    let r = parse_report(&SAMPLE.replace("time report: 7.29\r\n", lines)).expect("report");
    assert_eq!(r.irqbalance.state, Some(IrqbalanceState::Stopped));
    assert_eq!(r.irqbalance.samples.len(), 3);
    assert_eq!(r.irqbalance.samples[2].irqs[&26].affinity, [3]);
    assert_eq!(r.irqbalance.samples[2].irqs[&26].effective, [1]);
    assert_eq!(r.times["irqbalance"], 41.03);
    assert!(parse_report(SAMPLE).expect("report").irqbalance.state.is_none());
    let bad = SAMPLE.replace("time report: 7.29\r\n", "irqbalance-sample 1: 42.19 25=0\r\ntime report: 7.29\r\n");
    let e = parse_report(&bad).expect_err("garbled").to_string();
    assert!(e.contains("\"25=0\" is not IRQ="), "{e}");
}

/// SAMPLE as a version 1 agent printed it: the raw /proc/interrupts form.
fn sample_v1() -> String {
    let v1 = SAMPLE.replace("MANARIG-REPORT-BEGIN 2", "MANARIG-REPORT-BEGIN 1").replace(
        "irqcount: 24 0=3 | PCI-MSIX-0000:41:00.0 0-edge mana_hwc@pci:0000:41:00.0\r\n",
        "interrupts-header: CPU0 CPU1\r\ninterrupts: 24: 3 0 PCI-MSIX-0000:41:00.0 0-edge mana_hwc@pci:0000:41:00.0\r\n",
    );
    assert_ne!(v1, SAMPLE);
    v1
}

/// The compact `irqcount:` form (guest-images/init.sh `IRQ_AWK`): only the
/// CPUs with a non-zero count, so a 256-CPU line stays short. Version 1 agents
/// printed raw lines; version 2 has only the compact form.
#[test]
fn compact_irq_lines_give_the_same_vector_as_version_1_raw_lines() {
    let v1 = parse_report(&sample_v1()).expect("version 1 report");
    assert_eq!(v1.msix, parse_report(SAMPLE).expect("report").msix);
    let raw_in_v2 = sample_v1().replace("MANARIG-REPORT-BEGIN 1", "MANARIG-REPORT-BEGIN 2");
    assert_eq!(parse_report(&raw_in_v2).expect("report").msix[0].name, "-", "raw lines are not version 2 items");
    // Kernel messages on the console between the markers are not report items.
    let noisy = SAMPLE.replace(
        "nic: 0000:41:00.0\r\n",
        "nic: 0000:41:00.0\r\nirq 9: nobody cared (try booting with the \"irqpoll\" option)\r\nirq: no irq domain found for foo !\r\n",
    );
    assert_ne!(noisy, SAMPLE);
    assert_eq!(parse_report(&noisy).expect("noisy report").msix, parse_report(SAMPLE).expect("report").msix);
}

#[test]
fn malformed_value_names_its_console_line() {
    let text = SAMPLE.replace(
        "thread_siblings_list: 0-1\r\nf /sys/devices/system/cpu/cpu1",
        "thread_siblings_list: 1-0\r\nf /sys/devices/system/cpu/cpu1",
    );
    match parse_report(&text) {
        Err(ReportError::Line { line, .. }) => assert_eq!(line, 10),
        other => panic!("expected a line error, got {other:?}"),
    }
}

/// Captured console of a real boot (seed 002, Debian 6.12.117, mana loaded,
/// no MANA device yet).
#[test]
fn captured_console_without_nic_parses() {
    let r = parse_report(include_str!("../../../../tests/fixtures/console-seed002-6.12.txt")).expect("report");
    assert_eq!(r.kernel, "6.12.117+deb13-cloud-amd64");
    assert_eq!(r.cpus.len(), 8);
    assert_eq!(r.cpus[&5].siblings, vec![4, 5]);
    assert_eq!(r.nodes[&1].cpus, vec![4, 5, 6, 7]);
    assert_eq!(r.nodes[&1].distance, vec![20, 10]);
    assert_eq!(r.nic, None);
    assert_eq!(r.pci["0000:40:00.0"].numa_node, 0);
    assert_eq!(r.insmod_status, Some(0));
}

/// Captured console of a real boot with QEMU's NVMe controller in the NIC
/// slot (`manarig.nic=0x1b36:0x0010`): 9 MSI-X vectors, nvme0q0..q8.
#[test]
fn captured_console_with_msix_vectors_parses() {
    let r = parse_report(include_str!("../../../../tests/fixtures/console-seed002-6.12-nvme.txt")).expect("report");
    assert_eq!(r.nic.as_deref(), Some("0000:41:00.0"));
    assert_eq!(r.msix.len(), 9);
    assert_eq!(r.msix[0].name, "nvme0q0");
    assert_eq!(r.msix[0].counts.len(), 8);
    assert!(r.msix[0].counts[0] > 0, "the admin queue fired on CPU 0");
    assert_eq!(r.msix[1].affinity, Some(vec![4]));
    assert_eq!(r.msix[1].hint.as_deref(), Some("00"));
}

/// smp_affinity_list of each reported vector, in IRQ order, as cpulists.
fn affinities(r: &GuestReport) -> Vec<String> {
    r.msix.iter().map(|v| format_cpulist(v.affinity.as_deref().unwrap_or(&[]))).collect()
}

/// Captured console of a real run: seed 002's machine, Debian 6.12.117,
/// the emulated NIC (mana-device) over vfio-user, mana probed, eth0 up.
/// The table is seed 002's (docs/seeds.md, seed 002: IRQ 0..7 -> 0-1, 2-3, 0-1,
/// 2-3, 4-5, 6-7, 4-5, 6-7), after mana_hwc on CPU 0.
#[test]
fn captured_mana_probe_on_6_12_gives_seed_002_table() {
    let r = parse_report(include_str!("../../../../tests/fixtures/console-seed002-6.12-mana.txt")).expect("report");
    assert_eq!(r.settle, "probe-returned fired=yes");
    assert_eq!(r.netdev.as_deref(), Some("eth0"));
    assert_eq!(r.pci[r.nic.as_deref().expect("nic")].device, 0x00ba);
    assert_eq!(affinities(&r), ["0", "0-1", "2-3", "0-1", "2-3", "4-5", "6-7", "4-5", "6-7"]);
    assert!(r.msix[1].name.starts_with("mana_q0@"));
    // Every vector fired, so the effective CPU lies in the mask (deferred
    // affinity moves are applied on a fire).
    for v in &r.msix {
        let eff = v.effective.as_deref().expect("effective");
        assert!(eff.iter().all(|c| v.affinity.as_deref().expect("affinity").contains(c)), "{v:?}");
    }
}

/// The current agent's report as `run --console` recorded it (seed 002,
/// Debian 6.12.117, the emulated NIC; the report came on ttyS1, whose first
/// line is the agent's empty probe write): version 3 with every item the
/// agent prints when no traffic, hotplug or unload ran, and seed 002's table.
#[test]
fn a_recorded_version_3_report_parses_with_its_items() {
    let t = parse(include_str!("../../../../tests/fixtures/console-seed002-6.12-v3.txt")).expect("transcript");
    assert_eq!((t.version, t.stages.len()), (Version::V3, 0));
    assert_eq!(Version::CURRENT, Version::V3, "a new version wants a new recorded report beside this one");
    let r = t.report;
    assert_eq!(r.kernel, "6.12.117+deb13-cloud-amd64");
    assert_eq!(r.init_env, ["HOME=/", "TERM=linux"]);
    assert_eq!(r.settle, "probe-returned fired=yes");
    assert_eq!((r.insmod_status, r.carrier, r.channels), (Some(0), Some(true), Some(8)));
    assert_eq!(r.netdev.as_deref(), Some("eth0"));
    // Version 3's items, `-` when their step did not run.
    assert_eq!((r.unload, r.carrier_unload, r.hotplug_status), (None, None, None));
    assert_eq!((r.traffic.addr_status, r.traffic.ping_status, r.traffic.tool_status), (None, None, None));
    assert_eq!(r.irqbalance.state, None);
    assert!(r.times["probe"] < r.times["settled"] && r.times["settled"] < r.times["report"], "{:?}", r.times);
    assert_eq!((r.cpus.len(), r.nodes.len()), (8, 2));
    assert_eq!(r.nodes[&1].distance, [20, 10]);
    assert_eq!(r.cpu_state.present.as_deref(), Some(&[0, 1, 2, 3, 4, 5, 6, 7][..]));
    assert_eq!(r.pci[r.nic.as_deref().expect("nic")].driver.as_deref(), Some("mana"));
    assert_eq!(affinities(&r), ["0", "0-1", "2-3", "0-1", "2-3", "4-5", "6-7", "4-5", "6-7"]);
    assert_eq!(r.msix[5].hint.as_deref(), Some("30"));
    assert!(r.warnings.is_empty() && r.stderr.is_empty(), "{:?} {:?}", r.warnings, r.stderr);
}

/// Linux 6.1 (before irq_setup): one CPU per queue from
/// cpumask_local_spread(i, node) starting at i = 1 for q0 (captured run).
#[test]
fn captured_mana_probe_on_6_1_spreads_one_cpu_per_vector() {
    let r = parse_report(include_str!("../../../../tests/fixtures/console-seed002-6.1-mana.txt")).expect("report");
    assert_eq!(affinities(&r), ["0", "1", "2", "3", "4", "5", "6", "7", "0"]);
}

/// Linux 7.3 (captured run): HWC on 0-1, the queue vectors named mana_msiN
/// one CPU each; they only fire after `ip link set eth0 up`.
#[test]
fn captured_mana_probe_on_7_names_vectors_msi() {
    let r = parse_report(include_str!("../../../../tests/fixtures/console-seed002-7-mana.txt")).expect("report");
    assert_eq!(affinities(&r), ["0-1", "0", "1", "2", "3", "4", "5", "6", "7"]);
    assert!(r.msix[1].name.starts_with("mana_msi1@"), "{}", r.msix[1].name);
    assert_eq!(r.settle, "probe-returned fired=yes");
}

/// Captured run of R17's machine (topologies/r17-diameter.toml: nodes 0-1, 2-3,
/// 4-5, 6-7; from node 0 the distances 12, 20, 22 give the hops {0}, {1},
/// {2}, {3}) on 6.12 with the NIC on node 0: no SMT, so each queue gets one
/// CPU, in hop order 0-1, 2-3, 4-5, 6-7; the guest's distance rows are R17's.
#[test]
fn captured_mana_probe_on_r17_follows_the_hop_order() {
    let r = parse_report(include_str!("../../../../tests/fixtures/console-r17-6.12-mana.txt")).expect("report");
    assert_eq!(r.nodes[&0].distance, vec![10, 12, 20, 22]);
    assert_eq!(r.nodes[&1].distance, vec![12, 10, 22, 24]);
    assert_eq!(affinities(&r), ["0", "0", "1", "2", "3", "4", "5", "6", "7"]);
}

/// Captured console of a real run: seed 002's machine, Debian 6.1.192,
/// `manarig.channels=4 manarig.reprobe=1`: the first probe as a stage, then
/// rmmod, the second probe and the report.
#[test]
fn captured_reprobe_run_has_a_first_probe_stage_and_the_lifecycle_items() {
    let t = parse(include_str!("../../../../tests/fixtures/console-seed002-6.1-reprobe.txt")).expect("transcript");
    assert_eq!(t.version, Version::V1);
    assert_eq!(t.stages.len(), 1);
    let Stage { name, report: first } = &t.stages[0];
    assert_eq!(name, "first-probe");
    assert_eq!(
        (first.carrier, first.ethtool_status, first.channels, first.rmmod_status),
        (Some(true), Some(0), Some(4), None)
    );
    let r = &t.report;
    assert_eq!((r.carrier, r.ethtool_status, r.channels, r.rmmod_status), (Some(true), Some(0), Some(4), Some(0)));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert!(r.ifup_to_carrier_s().is_some_and(|s| s >= 0.0));
    // Linux 6.1 (cpumask_local_spread per vector): the same table after the re-probe.
    assert_eq!(affinities(first), affinities(r));
    assert_eq!(affinities(r), ["0", "1", "2", "3", "4", "5", "6", "7", "0"]);
}

#[test]
fn a_stage_without_its_end_before_the_report_is_an_error() {
    let text = format!("MANARIG-STAGE-BEGIN first-probe\nkernel: 6.1\n{SAMPLE}");
    assert_eq!(parse(&text).expect_err("must fail"), ReportError::NoEnd { line: 1, end: "MANARIG-STAGE-END" });
}

#[test]
fn stages_come_in_their_order_before_the_report() {
    let stage = |name: &str| format!("MANARIG-STAGE-BEGIN {name}\nkernel: stage {name}\nMANARIG-STAGE-END\n");
    let t = parse(&format!("{}{}{SAMPLE}", stage("a"), stage("b"))).expect("transcript");
    let names: Vec<(&str, &str)> = t.stages.iter().map(|s| (s.name.as_str(), s.report.kernel.as_str())).collect();
    assert_eq!(names, [("a", "stage a"), ("b", "stage b")]);
    assert_eq!(t.report.kernel, "6.12.117+deb13-cloud-amd64");
    assert!(parse(SAMPLE).expect("transcript").stages.is_empty());
}

/// Captured report channel (ttyS1) of a real run, version 2: seed 002's machine,
/// the minimal 6.12 kernel, `manarig.channels=4 manarig.reprobe=1 manarig.report=ttyS1`:
/// the first probe as a stage, then the report; each block after the empty line
/// `/init` writes to check the port. Seed 002's table both times (docs/seeds.md).
#[test]
fn captured_report_channel_of_version_2_has_the_stage_and_the_report() {
    let t =
        parse(include_str!("../../../../tests/fixtures/report-seed002-6.12-min-reprobe-v2.txt")).expect("transcript");
    assert_eq!((t.version, t.stages.len()), (Version::V2, 1));
    let first = &t.stages[0].report;
    assert_eq!((first.channels, first.rmmod_status), (Some(4), None));
    assert_eq!((t.report.channels, t.report.rmmod_status, t.report.carrier), (Some(4), Some(0), Some(true)));
    assert!(t.report.cmdline.contains("manarig.report=ttyS1"), "{}", t.report.cmdline);
    let seed_002 = ["0", "0-1", "2-3", "0-1", "2-3", "4-5", "6-7", "4-5", "6-7"];
    assert_eq!(affinities(first), seed_002);
    assert_eq!(affinities(&t.report), seed_002);
    assert!(t.report.msix.iter().all(|v| v.counts.iter().sum::<u64>() > 0), "every vector fired");
    assert!(t.report.warnings.is_empty(), "{:?}", t.report.warnings);
}

/// Whatever the guest cut off or garbled, the parser answers with a value: every
/// prefix of a real channel, and the channel with any one line cut in half.
#[test]
fn truncated_or_garbled_output_is_an_error_not_a_panic() {
    let text = include_str!("../../../../tests/fixtures/report-seed002-6.12-min-reprobe-v2.txt");
    let lines: Vec<&str> = text.lines().collect();
    for n in 0..lines.len() {
        let _ = parse(&lines[..n].join("\n"));
        let mut garbled = lines.clone();
        let cut: String = lines[n].chars().take(lines[n].chars().count() / 2).collect();
        garbled[n] = &cut;
        let _ = parse(&garbled.join("\n"));
    }
    assert!(matches!(parse(&lines[..lines.len() - 1].join("\n")), Err(ReportError::NoEnd { .. })));
}

#[test]
fn version_3_reads_the_traffic_items_and_version_2_skips_them() {
    let traffic = "addr: 0\r
ping: 0 3 packets transmitted, 3 packets received, 0% packet loss\r
traffic: 1\r
time traffic: 2.50\r
traffic-irq before: 26 0=5 | PCI-MSIX-0000:41:00.0 1 mana_q0@pci:0000:41:00.0\r
traffic-irq after: 26 0=9,1=2 | PCI-MSIX-0000:41:00.0 1 mana_q0@pci:0000:41:00.0\r
traffic-softirq before NET_RX: -\r
traffic-softirq after NET_RX: 1=7\r
traffic-softirq after NET_TX: 0=3\r
traffic-stats after: rx_0_packets=12 rx_0_bytes=3400\r
";
    let v3 = SAMPLE
        .replace("MANARIG-REPORT-BEGIN 2", "MANARIG-REPORT-BEGIN 3")
        .replace("time init: 5.81\r\n", &format!("time init: 5.81\r\n{traffic}"));
    let t = parse(&v3).expect("v3 parses");
    let tr = &t.report.traffic;
    assert_eq!((tr.addr_status, tr.ping_status, tr.tool_status), (Some(0), Some(0), Some(1)));
    assert!(tr.ping_summary.starts_with("3 packets transmitted"), "{}", tr.ping_summary);
    assert_eq!(tr.before.irqs.get(&26).map(|c| c[0]), Some(5));
    assert_eq!(tr.after.irqs.get(&26).map(|c| c[..2].to_vec()), Some(vec![9, 2]));
    assert!(tr.before.net_rx.iter().all(|&c| c == 0));
    assert_eq!((tr.after.net_rx.get(1), tr.after.net_tx.first()), (Some(&7), Some(&3)));
    assert_eq!(tr.after.stats.get("rx_0_bytes"), Some(&3400));
    assert_eq!(t.report.times.get("traffic"), Some(&2.5));
    // A version 2 report has no such keys: the lines are skipped, not read.
    let v2 = SAMPLE.replace("time init: 5.81\r\n", &format!("time init: 5.81\r\n{traffic}"));
    assert_eq!(parse(&v2).expect("v2 parses").report.traffic, GuestTraffic::default());
    let bad = v3.replace("traffic-softirq after NET_TX: 0=3", "traffic-softirq later NET_TX: 0=3");
    let e = parse(&bad).expect_err("bad moment");
    assert!(e.to_string().contains("neither before nor after"), "{e}");
}
