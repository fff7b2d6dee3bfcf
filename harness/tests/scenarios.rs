//! Scenarios around the probe in a real guest: several MANA NICs,
//! several vPorts per NIC. Each test boots one small topology with the emulated
//! NIC(s) (TCG) and asserts what a user of the rig would check; no timing
//! assertions. They need the cache that `cargo xtask setup` fills.

mod rig_support;
mod support;

use harness::rig::RunOutcome;
use harness::verdict::Status;

fn run(file: &str, kernel: &str) -> RunOutcome {
    rig_support::run_printed(&rig_support::request(file, kernel), &format!("{file} on {kernel}"))
}

/// topologies/two-nics-small.toml: two device processes, two NICs in the guest
/// (0000:41:00.0 on node 0, 0000:51:00.0 on node 1), each NIC's 5 vectors
/// matching the 6.12 model of the machine with that NIC alone, and the combined
/// load counting all 10 vectors, each NIC's HWC on its own node's first CPU.
#[test]
fn two_nics_on_two_nodes_each_spread_from_their_own_node_on_linux_6_12() {
    let o = run("two-nics-small", "6.12-min");
    assert_eq!(o.report.nics, ["0000:41:00.0", "0000:51:00.0"], "the guest's MANA NICs");
    assert_eq!(o.verdict.status, Status::Pass);
    assert_eq!(o.verdict.run.nic_bdf.as_deref(), Some("0000:41:00.0"));
    assert_eq!(o.verdict.vectors.len(), 5, "NIC 0's vectors only");
    let nics = o.verdict.nics.as_ref().expect("NIC 1's verdict and the load");
    assert_eq!(nics.nics.len(), 1);
    let one = &nics.nics[0];
    assert_eq!((one.bdf.as_deref(), one.node, one.verdict.status), (Some("0000:51:00.0"), Some(1), Status::Pass));
    assert_eq!(one.verdict.run.nic_numa_node_observed, Some(1));
    assert_eq!(nics.load.iter().map(|r| r.affinity_total()).sum::<u32>(), 18, "2 × (HWC on 1 CPU + 4 queues × 2 CPUs)");
    for r in &nics.load {
        assert_eq!(r.in_affinity, r.in_model, "CPU {}: per-NIC vectors allowed there, guest vs model", r.cpu);
    }
    // Each NIC leans on its own node: its HWC vector's CPU (CPU 0 / CPU 2) holds 3 of its vectors.
    assert_eq!(nics.load[0].in_model, [3, 2]);
    assert_eq!(nics.load[2].in_model, [2, 3]);
    assert_eq!(nics.load.iter().map(|r| r.delivered_total()).sum::<u32>(), 10, "every vector fired once");
}

/// two-nics-small with CPU 3 (node 1: NIC 1's node) offlined after the probe: NIC 1
/// is judged at the probe and at the report, each against the model's table for that
/// moment, as NIC 0 is. Its sibling-group hint for the queues on CPUs 2-3 shrinks to
/// CPU 2 once CPU 3 is offline (the kernel shows the source CPU's online siblings); a
/// judge with the probe's table at the report failed the NIC there.
#[test]
fn a_second_nic_is_judged_at_every_stage_of_a_cpu_hotplug_on_linux_6_12() {
    let mut req = rig_support::request("two-nics-small", "6.12-min");
    req.scenario.offline_after = Some("3".into());
    let o = rig_support::run_printed(&req, "two-nics-small (offline_after = 3) on 6.12-min");
    assert_eq!(o.verdict.status, Status::Pass);
    let nic1 = &o.verdict.nics.as_ref().expect("NIC 1's verdict").nics[0];
    assert_eq!(nic1.verdict.status, Status::Pass);
    let stages: Vec<(&str, Status)> =
        nic1.verdict.queues.iter().flatten().map(|s| (s.stage.as_str(), s.status)).collect();
    assert_eq!(stages, [("probe", Status::Pass), (harness::verdict::REPORT_STAGE, Status::Pass)]);
    let q0 = nic1.verdict.vectors.iter().find(|r| r.name == "mana_q0").expect("mana_q0");
    let hint = q0.observed.as_ref().and_then(|o| o.affinity_hint.as_ref()).map(|h| h.to_cpulist());
    assert_eq!(hint.as_deref(), Some("2"), "the hint at the report: CPU 3 is offline");
}

/// topologies/vports-dedicated.toml on Debian's 7.3: the driver makes one netdev per
/// vPort, the IRQ table is the one-vPort table (every vector is set up at probe), and
/// as each vPort opens its EQs take the vectors `vport_plan` predicts from the 7.3
/// source: dedicated, vPort 0 on MSI-X 1-4 and vPort 1 on 5-8 (the device's queue
/// table: EQs in creation order with their eq_pci_msix_index).
#[test]
fn two_vports_get_dedicated_vectors_in_open_order_on_linux_7() {
    let o = run("vports-dedicated", "7.x");
    assert_eq!(o.verdict.status, Status::Pass);
    let topo = harness::topology::Topology::load(rig_support::topology_path("vports-dedicated")).expect("loads");
    let plan = harness::model::vport_plan(&topo.to_qemu_numbering(), harness::model::KernelGen::V7).expect("probes");
    assert!(!plan.sharing, "{plan:?}");
    let t = o.queues.as_ref().expect("queue table");
    let got: Vec<u32> = t.rows.iter().map(|r| u32::from(r.msix_index)).collect();
    assert_eq!(got, plan.vectors.concat(), "EQ vectors in creation order (vPort 0's channels, then vPort 1's)");
    assert!(o.report.warnings.is_empty(), "kernel warnings: {:#?}", o.report.warnings);
    let check = o.verdict.checks.iter().find(|c| c.name == "vport_vectors").expect("the vPort check");
    assert_eq!(check.status, harness::verdict::CheckStatus::Pass, "{}", check.message);
}

/// The same file on 6.12-min: the EQs are the device's, made once at probe
/// (`mana_create_eq(ac)`, mana_en.c 6.12), so the queue table has four EQs on vectors
/// 1-4, each holding channel i of both vPorts (two SQs, two RQs), and `vport_vectors`
/// passes against the model's device-scope plan.
#[test]
fn two_vports_share_the_devices_four_eqs_on_linux_6_12() {
    let o = run("vports-dedicated", "6.12-min");
    assert_eq!(o.verdict.status, Status::Pass);
    let t = o.queues.as_ref().expect("queue table");
    let got: Vec<(u16, usize, usize)> = t.rows.iter().map(|r| (r.msix_index, r.sqs.len(), r.rqs.len())).collect();
    assert_eq!(got, [(1, 2, 2), (2, 2, 2), (3, 2, 2), (4, 2, 2)], "EQ vector, SQs and RQs per EQ");
    let check = o.verdict.checks.iter().find(|c| c.name == "vport_vectors").expect("the vPort check");
    assert_eq!(check.status, harness::verdict::CheckStatus::Pass, "{}", check.message);
}

/// A scenario that cannot happen stops before anything starts: one error line naming
/// the file and the field, exit 2 (bad input is one line), for a NIC on a node the
/// file does not have and for two NICs with one MAC.
#[test]
fn impossible_nic_scenarios_are_one_line_errors_with_exit_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let base = std::fs::read_to_string(rig_support::topology_path("two-nics-small")).expect("read");
    let cases = [
        ("numa_node = 1\n", "numa_node = 2\n", "nic[1].numa_node: node 2 does not exist (the file has nodes 0-1)"),
        (
            "numa_node = 1\n",
            "numa_node = 1\nmac = \"00:15:5d:00:00:01\"\n",
            "nic[1].mac: 00:15:5d:00:00:01 (vPort 0) is also nic[0]'s vPort 0 address",
        ),
    ];
    for (from, to, want) in cases {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, base.replacen(from, to, 1)).expect("write");
        let shown = path.display().to_string();
        let (code, _, stderr) = support::manarig(&["run", &shown, "--kernel", "6.12-min"]);
        assert_eq!(code, 2, "{stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("rig error")).collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        assert!(errors[0].contains(&format!("{shown}: {want}")), "{stderr}");
    }
}
