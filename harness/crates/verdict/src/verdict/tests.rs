//! Verdict and report tests. A pass path judges a guest report written out from a
//! seed's table or the kernel's algorithm (`guest_report`), never the model's own
//! table; a fail path may start from the model's table and make the guest differ.
//! Every hard-coded value names its source.

use super::fixtures::*;
use super::*;
use crate::cpulist::CpuMask;
use crate::model::KernelGen;

// ---------------------------------------------------------------- verdict

/// Seed 002 on 6.12 as a guest shows it, MSI-X 0..8: the HWC on CPU 0 (9 vectors on
/// 8 CPUs, so mana_gd_setup_irqs() gives it cpumask_local_spread(0, 0)), then the
/// seed's table for the 8 queues (topologies/seed-002.toml: the commit message of
/// 91bfe210e196, irq_setup()).
const SEED_002_6_12: [&str; 9] = ["0", "0-1", "2-3", "0-1", "2-3", "4-5", "6-7", "4-5", "6-7"];

#[test]
fn seed_002_on_6_12_showing_the_seed_s_table_passes() {
    let run = Run::seen("seed-002", "6.12", guest_report(KernelGen::V6_12, Some(0), 8, &SEED_002_6_12, &[]));
    let v = run.judge();
    assert_eq!(v.status, Status::Pass, "{:#?}", v.failures().collect::<Vec<_>>());
    assert_eq!(v.status, Status::Pass);
    // kernel, NIC node, probe, count, 9 vectors (HWC + 8 queues), extras, effective.
    assert_eq!(v.checks.len(), 15);
    assert!(v.checks.iter().all(|c| c.status == CheckStatus::Pass));
    assert!(v.as_topology_expects(), "seed-002.toml expects pass");
    // Seed 002's table, MSI-X 1..8 (commit message of 91bfe210e196).
    let cpus: Vec<String> =
        v.vectors[1..].iter().map(|r| r.observed.as_ref().expect("present").smp_affinity_list.to_cpulist()).collect();
    assert_eq!(cpus, ["0-1", "2-3", "0-1", "2-3", "4-5", "6-7", "4-5", "6-7"]);
    assert!(v.vectors.iter().all(|r| r.outcome == RowOutcome::Match));
}

#[test]
fn checks_added_after_judging_keep_their_order_and_a_failing_one_fails_the_verdict() {
    let run = Run::seen("seed-002", "6.12", guest_report(KernelGen::V6_12, Some(0), 8, &SEED_002_6_12, &[]));
    let mut v = run.judge();
    let judged = v.checks.len();
    v.add_check(Check::new("first", CheckStatus::Pass, "ok"));
    v.add_checks([Check::new("second", CheckStatus::Skip, "-"), Check::new("third", CheckStatus::Pass, "ok")]);
    assert_eq!(v.status, Status::Pass, "passing and skipped checks leave it passing");
    v.add_checks([Check::new("fourth", CheckStatus::Fail, "no"), Check::new("fifth", CheckStatus::Pass, "ok")]);
    assert_eq!(v.status, Status::Fail);
    let added: Vec<&str> = v.checks[judged..].iter().map(|c| c.name.as_str()).collect();
    assert_eq!(added, ["first", "second", "third", "fourth", "fifth"]);
}

#[test]
fn seed_002_on_7x_matches_the_msi_names() {
    // 7.x names vectors mana_msi<k> for MSI-X k (gdma_main.c mana_gd_setup_dyn_irqs()).
    // Its table (kernel algorithm, as model/src/model/golden_tests.rs's
    // seed_002_on_7x_dynamic_msix_goes_linear): the HWC on the siblings of hop 0's
    // first CPU, 0-1; 9 vectors > 8 CPUs, so mana_irq_setup_linear() gives queue k CPU k.
    let rows = ["0-1", "0", "1", "2", "3", "4", "5", "6", "7"];
    let run = Run::seen("seed-002", "7.x", guest_report(KernelGen::V7, Some(0), 8, &rows, &[]));
    let v = run.judge();
    assert_eq!(v.status, Status::Pass, "{:#?}", v.failures().collect::<Vec<_>>());
    assert_eq!(v.vectors[4].name, "mana_msi4");
    assert_eq!(v.vectors[4].msix_index, Some(4));
}

/// A guest report for seed-000-4ch with MSI-X 0..3 set from one of the seed's tables and
/// MSI-X 4 from `last` (the seed shows only 4 IRQs).
fn seed_000_guest(k: &str, first_four: [&str; 4], last: &str) -> Run {
    let mut run = Run::new("seed-000-4ch", k);
    for (i, cpus) in first_four.into_iter().chain([last]).enumerate() {
        run.set_affinity(i, cpus);
    }
    run
}

/// Seed 000, Souradeep Chakrabarti's answer to Michael Kelley: "Case 1" (irq_setup) IRQ
/// 0..3 → 0-1, 2-3, 4-5, 6-7 and "Case 2" (cpumask_local_spread) IRQ 0..3 → 0, 1, 2, 3.
const CASE_1: [&str; 4] = ["0-1", "2-3", "4-5", "6-7"];
const CASE_2: [&str; 4] = ["0", "1", "2", "3"];

#[test]
fn seed_000_case_1_is_6_12_and_case_2_is_6_1() {
    // MSI-X 4 (mana_q3): irq_setup() wraps to the first sibling group 0-1 on 6.12; the
    // flat cpumask_local_spread(4, 0) gives CPU 4 on 6.1 (kernel algorithms).
    let case1 = seed_000_guest("6.12", CASE_1, "0-1").judge();
    assert_eq!(case1.status, Status::Pass, "{:#?}", case1.failures().collect::<Vec<_>>());
    let case2 = seed_000_guest("6.1", CASE_2, "4").judge();
    assert_eq!(case2.status, Status::Pass, "{:#?}", case2.failures().collect::<Vec<_>>());
}

#[test]
fn seed_000_case_2_on_a_6_12_kernel_fails_on_every_vector() {
    // A 6.12 guest that still spread like 6.1 (Case 2) must fail, naming each vector.
    let v = seed_000_guest("6.12", CASE_2, "4").judge();
    assert_eq!(v.status, Status::Fail);
    assert_eq!(v.status, Status::Fail);
    let failed: Vec<&str> = v.failures().map(|c| c.name.as_str()).collect();
    assert_eq!(failed, ["mana_hwc", "mana_q0", "mana_q1", "mana_q2", "mana_q3"]);
    let q0 = check(&v, "mana_q0");
    assert!(
        q0.message.contains("smp_affinity_list expected 2-3 (node 0, hop 0), got 1 (node 0, hop 0)"),
        "{}",
        q0.message
    );
}

#[test]
fn r08_queues_follow_the_hop_aware_local_spread_order() {
    // R08 (cd7f55359c90, v6.3): cpumask_local_spread(i, 0) = 0 1 2 3 6 7 4 5 8..15; with one
    // thread per core irq_setup() visits the same order (R08 inferred). 17 vectors > 16
    // CPUs, so the HWC gets cpumask_local_spread(0, 0) = CPU 0.
    let mut run = Run::new("r08-four-nodes", "6.12");
    let order = ["0", "0", "1", "2", "3", "6", "7", "4", "5", "8", "9", "10", "11", "12", "13", "14", "15"];
    for (i, cpu) in order.into_iter().enumerate() {
        run.set_affinity(i, cpu);
    }
    let v = run.judge();
    assert_eq!(v.status, Status::Pass, "{:#?}", v.failures().collect::<Vec<_>>());
    // Hops from node 0: {0-3}, {6-7} (distance 30), {4-5} (50), {8-15} (70).
    assert_eq!(v.run.hops.iter().map(CpuMask::to_cpulist).collect::<Vec<_>>(), ["0-3", "6-7", "4-5", "8-15"]);
    let q4 = v.vectors[5].expected.as_ref().expect("expected");
    assert_eq!((q4.nodes.as_slice(), q4.hop), ([2].as_slice(), Some(1)));
}

#[test]
fn one_wrong_vector_fails_naming_the_vector_both_cpulists_node_and_hop() {
    // mana_q3 should be 2-3 on node 0 (seed 002); a guest that put it on 4-5 (node 1).
    let mut run = Run::new("seed-002", "6.12");
    run.set_affinity(4, "4-5");
    let v = run.judge();
    assert_eq!(v.status, Status::Fail);
    assert_eq!(v.status, Status::Fail);
    let failed: Vec<&str> = v.failures().map(|c| c.name.as_str()).collect();
    assert_eq!(failed, ["mana_q3"]);
    let c = check(&v, "mana_q3");
    assert_eq!(
        c.message,
        "mana_q3 (MSI-X 4, IRQ 28, mana_q3@pci:0000:41:00.0): smp_affinity_list expected 2-3 (node 0, hop 0), got 4-5 (node 1, hop 1)"
    );
    // The hint moved with it (irq_set_affinity_and_hint), so it differs too.
    assert_eq!(c.detail.len(), 1);
    assert!(c.detail[0].ends_with("affinity_hint expected 2-3, got 4-5"), "{}", c.detail[0]);
    assert_eq!(v.vectors[4].outcome, RowOutcome::Mismatch);
    let text = render(&v, Format::Human).expect("render");
    assert!(text.ends_with("verdict: FAIL (1 of 15 checks failed: mana_q3)\n"), "{text}");
    assert!(text.contains("want 2-3"), "{text}");
}

#[test]
fn a_missing_vector_fails_the_count_and_names_the_vector() {
    let mut run = Run::new("seed-002", "6.12");
    run.observed.vectors.retain(|v| !v.name.starts_with("mana_q7@"));
    let v = run.judge();
    assert_eq!(v.status, Status::Fail);
    let failed: Vec<&str> = v.failures().map(|c| c.name.as_str()).collect();
    assert_eq!(failed, ["vector_count", "mana_q7"]);
    assert!(check(&v, "vector_count").message.contains("expects 9 MSI-X vectors (table 9), the guest shows 8"));
    assert_eq!(
        check(&v, "mana_q7").message,
        "mana_q7 (MSI-X 8): missing: the model expects smp_affinity_list 6-7 (node 1, hop 1) set by irq_setup, the guest has no such IRQ"
    );
    assert_eq!(v.vectors[8].outcome, RowOutcome::Missing);
}

#[test]
fn extra_and_duplicate_vectors_fail() {
    let mut run = Run::new("seed-002", "6.12");
    let mut extra = run.observed.vectors[8].clone();
    extra.irq = 40;
    extra.name = format!("mana_q8@pci:{BDF}");
    let mut dup = run.observed.vectors[1].clone();
    dup.irq = 41;
    run.observed.vectors.extend([extra, dup]);
    let v = run.judge();
    let failed: Vec<&str> = v.failures().map(|c| c.name.as_str()).collect();
    assert_eq!(failed, ["vector_count", "no_unexpected_vectors"]);
    let c = check(&v, "no_unexpected_vectors");
    assert!(
        c.message.starts_with("2 MANA IRQs the model does not expect: mana_q8@pci:0000:41:00.0 (IRQ 40"),
        "{}",
        c.message
    );
    assert!(c.detail[0].contains("a second IRQ named mana_q0 (the first is IRQ 25)"), "{:?}", c.detail);
    let unexpected: Vec<_> = v.vectors.iter().filter(|r| r.outcome == RowOutcome::Unexpected).collect();
    assert_eq!(unexpected.len(), 2);
    assert_eq!(unexpected[0].msix_index, Some(9));
}

#[test]
fn wrong_pci_address_missing_hint_wrong_node_and_failed_probe_each_fail() {
    let mut run = Run::new("seed-002", "6.12");
    run.vector_mut("mana_q1").name = "mana_q1@pci:0000:42:00.0".to_owned();
    run.vector_mut("mana_q2").affinity_hint = None;
    run.observed.nic_numa_node = Some(1);
    run.observed.probe_ok = false;
    let v = run.judge();
    let failed: Vec<&str> = v.failures().map(|c| c.name.as_str()).collect();
    assert_eq!(failed, ["nic_numa_node", "probe", "mana_q1", "mana_q2"]);
    assert!(check(&v, "mana_q1")
        .message
        .ends_with("IRQ name mana_q1@pci:0000:42:00.0 does not carry the NIC's PCI address 0000:41:00.0"));
    assert!(check(&v, "mana_q2").message.ends_with("affinity_hint expected 0-1, got none"));
    assert!(check(&v, "nic_numa_node")
        .message
        .contains("the guest reads numa_node 1, the topology puts the NIC on node 0"));
}

#[test]
fn a_guest_on_another_kernel_fails_the_kernel_check() {
    let mut run = Run::new("seed-002", "6.12");
    run.observed.kernel_release = "6.1.0-37-cloud-amd64".to_owned();
    let v = run.judge();
    assert_eq!(check(&v, "kernel_generation").status, CheckStatus::Fail);
    assert!(check(&v, "kernel_generation").message.contains("a 6.1 kernel, not 6.12"));
}

#[test]
fn vectors_left_at_the_default_expect_no_hint() {
    // R15: the NIC on a memory-only node gives no hop masks, so irq_setup() places nothing
    // and the queue vectors keep the default affinity (all online CPUs) with no hint.
    // The HWC (9 vectors on 8 CPUs): cpumask_local_spread(0, 3) walks node 3's
    // distances, whose nearest CPUs are node 1's (17), so CPU 4 (the file's [expect]).
    let rows = ["4", "0-7", "0-7", "0-7", "0-7", "0-7", "0-7", "0-7", "0-7"];
    let run = Run::seen(
        "r15-memory-only-small",
        "6.12",
        guest_report(KernelGen::V6_12, Some(3), 8, &rows, &[1, 2, 3, 4, 5, 6, 7, 8]),
    );
    assert_eq!(run.observed.vectors[1].affinity_hint, None);
    let v = run.judge();
    assert_eq!(v.status, Status::Pass, "{:#?}", v.failures().collect::<Vec<_>>());
    let mut run = Run::new("r15-memory-only-small", "6.12");
    let all = run.observed.vectors[1].smp_affinity.clone();
    run.observed.vectors[1].affinity_hint = Some(all);
    let v = run.judge();
    assert!(check(&v, "mana_q0").message.ends_with("affinity_hint expected none, got 0-7"));
}

#[test]
fn a_predicted_probe_failure_passes_when_the_probe_fails() {
    // pci_alloc_irq_vectors(pdev, 2, …) fails on a 1-entry MSI-X table (kernel algorithm).
    let mut topo_text =
        std::fs::read_to_string(format!("{}/../../../topologies/seed-002.toml", env!("CARGO_MANIFEST_DIR")))
            .expect("file");
    topo_text = topo_text.replace("numa_node = 0\n", "numa_node = 0\nmsix_table_size = 1\n");
    let topo = crate::topology::Topology::from_toml_str("seed-002-tiny", &topo_text).expect("valid");
    let table = guest_table(&topo, "6.12");
    assert!(table.probe_error.is_some());
    // The guest: probe failed, so no MANA IRQs in /proc/interrupts.
    let observed = Observed { probe_ok: false, ..guest_report(KernelGen::V6_12, Some(0), 8, &[], &[]) };
    assert!(!observed.probe_ok && observed.vectors.is_empty());
    let v = judge(&topo, &observed, &table);
    assert_eq!(v.status, Status::Pass, "{:#?}", v.failures().collect::<Vec<_>>());
    assert!(check(&v, "probe").message.starts_with("mana failed to probe, as the model predicts"));
    assert_eq!(check(&v, "effective_within_affinity").status, CheckStatus::Skip);
}

/// A probe still running at the agent's deadline fails `probe` as any
/// missing bind does, but says so: the agent stopped waiting, the driver did
/// not report a failure.
#[test]
fn a_probe_unfinished_at_the_agents_deadline_is_named_as_such() {
    let topo = topo("seed-002");
    let table = guest_table(&topo, "6.12");
    let base = Observed { probe_ok: false, ..guest_report(KernelGen::V6_12, Some(0), 8, &[], &[]) };
    let failed = judge(&topo, &base, &table);
    assert!(check(&failed, "probe").message.starts_with("mana failed to probe the device"));
    let unfinished = judge(&topo, &Observed { probe_unfinished: true, ..base }, &table);
    assert_eq!(check(&unfinished, "probe").status, CheckStatus::Fail);
    assert!(check(&unfinished, "probe").message.contains("had not returned at the agent's deadline"));
}

#[test]
fn odd_guest_data_is_reported_not_panicked_on() {
    let mut run = Run::new("seed-002", "6.12");
    let v = run.vector_mut("mana_q0");
    v.smp_affinity = mask("0-1,8000-8001");
    v.effective = Some(CpuMask::single(8000));
    v.counts = vec![3];
    run.vector_mut("mana_q1").effective = None;
    run.observed.vectors.push(ObservedVector {
        irq: 99,
        name: "mana_weird".to_owned(),
        smp_affinity: CpuMask::new(),
        affinity_hint: None,
        effective: None,
        counts: Vec::new(),
    });
    let v = run.judge();
    assert_eq!(v.status, Status::Fail);
    assert!(check(&v, "mana_q0").message.contains("got 0-1,8000-8001"));
    for f in Format::ALL {
        render(&v, f).expect("renders");
    }
}

#[test]
fn effective_cpu_outside_the_affinity_after_firing_fails() {
    // After a vector fired, x86 has applied the pending move, so the effective CPU must lie
    // inside smp_affinity_list (kernel/irq/migration.c, CONFIG_GENERIC_PENDING_IRQ).
    let mut run = Run::new("seed-002", "6.12");
    run.set_effective(&[0, 0, 2, 1, 3, 4, 6, 5, 7]);
    run.vector_mut("mana_q1").effective = Some(CpuMask::single(1));
    let v = run.judge();
    let c = check(&v, "effective_within_affinity");
    assert_eq!(c.status, CheckStatus::Fail);
    assert!(c.message.starts_with("mana_q1 (IRQ 26): effective_affinity_list 1 is not inside smp_affinity_list 2-3"));
    // The docs/rig-pitfalls.md observation (mana_q1: affinity 2-3, effective 1) before
    // any interrupt is not a failure: the effective CPU is not yet meaningful.
    let v = {
        let q1 = run.vector_mut("mana_q1");
        q1.counts.iter_mut().for_each(|c| *c = 0);
        run.judge()
    };
    let c = check(&v, "effective_within_affinity");
    assert_eq!(c.status, CheckStatus::Pass);
    assert!(c.message.ends_with("1 never fired, their effective CPU is not yet meaningful: mana_q1"), "{}", c.message);
}

// ---------------------------------------------------------------- summary

#[test]
fn seed_002_summary_counts_from_effective_cpus() {
    // Effective CPUs of MSI-X 0..8 = 0,0,2,1,3,4,6,5,7 (each inside seed 002's masks:
    // HWC 0; q0 0-1 → 0; q1 2-3 → 2; q2 0-1 → 1; q3 2-3 → 3; q4 4-5 → 4; q5 6-7 → 6;
    // q6 4-5 → 5; q7 6-7 → 7). Cores are sibling pairs {0,1} {2,3} {4,5} {6,7} (QEMU
    // numbering, threads innermost). By hand:
    //   per core: core 0 gets CPUs 0,0,1 = 3 IRQs; core 1: 2,3 = 2; core 2: 4,5 = 2;
    //             core 3: 6,7 = 2;
    //   per node: node 0 (cores 0-1) = 5; node 1 (cores 2-3) = 4;
    //   both siblings busy: every core (0&1, 2&3, 4&5, 6&7) = 4 of 4;
    //   outside node 0: q4..q7 on node 1, hop 1, distance 20 (SLIT of seed-002.toml).
    let mut run = Run::new("seed-002", "6.12");
    run.set_effective(&[0, 0, 2, 1, 3, 4, 6, 5, 7]);
    let v = run.judge();
    assert_eq!(v.status, Status::Pass, "{:#?}", v.failures().collect::<Vec<_>>());
    let s = &v.summary;
    assert_eq!((s.vectors, s.fired), (9, 9));
    assert_eq!(s.per_core.iter().map(|c| c.irqs).collect::<Vec<_>>(), [3, 2, 2, 2]);
    assert_eq!(s.per_node.iter().map(|n| (n.node, n.irqs)).collect::<Vec<_>>(), [(0, 5), (1, 4)]);
    assert_eq!(s.both_siblings.iter().map(|b| b.core).collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert_eq!(s.both_siblings[0].irqs, ["mana_hwc", "mana_q0", "mana_q2"]);
    let remote: Vec<_> = s.remote.iter().map(|r| (r.name.as_str(), r.cpu, r.node, r.hop, r.distance)).collect();
    assert_eq!(
        remote,
        [
            ("mana_q4", 4, Some(1), Some(1), Some(20)),
            ("mana_q5", 6, Some(1), Some(1), Some(20)),
            ("mana_q6", 5, Some(1), Some(1), Some(20)),
            ("mana_q7", 7, Some(1), Some(1), Some(20)),
        ]
    );
    let text = render(&v, Format::Human).expect("render");
    assert!(text.contains("  per node: node 0: 5, node 1: 4 (NIC on node 0)\n"), "{text}");
    assert!(text.contains("  per core: 3 on core 0; 2 on cores 1-3\n"), "{text}");
    assert!(
        text.contains(
            "IRQs on two or more SMT siblings of one core: 4 of 4 cores: core 0 (CPUs 0-1: mana_hwc, mana_q0, mana_q2)"
        ),
        "{text}"
    );
    assert!(
        text.contains("IRQs outside the NIC's node: 4: node 1 (hop 1, distance 20): mana_q4 on CPU 4, mana_q5 on CPU 6, mana_q6 on CPU 5, mana_q7 on CPU 7"),
        "{text}"
    );
}

#[test]
fn the_guest_smoke_run_on_debian_6_12_passes_and_core_1_keeps_one_sibling_idle() {
    // The device model's guest smoke run (device-model/tests/guest-smoke.md, commit
    // fa1bd60: seed 002's machine, Debian 6.12.117, QEMU 11.1, after `ip link set eth0 up`):
    // IRQs 25..33 = mana_hwc, mana_q0..q7; smp_affinity_list as seed 002; effective
    // 0, 0, 3, 1, 3, 4, 6, 5, 7. By hand: core 0 gets CPUs 0,0,1 (3 IRQs); core 1 gets
    // CPU 3 twice (mana_q1, mana_q3: CPU 2 idle); cores 2 and 3 get 4,5 and 6,7. So cores
    // 0, 2, 3 have IRQs on both siblings, core 1 does not.
    let mut run = Run::new("seed-002", "6.12");
    for (i, v) in run.observed.vectors.iter_mut().enumerate() {
        v.irq = 25 + i as u32;
    }
    run.observed.kernel_release = "6.12.117+deb13-cloud-amd64".to_owned();
    run.set_effective(&[0, 0, 3, 1, 3, 4, 6, 5, 7]);
    let v = run.judge();
    assert_eq!(v.status, Status::Pass, "{:#?}", v.failures().collect::<Vec<_>>());
    assert_eq!(v.summary.per_core.iter().map(|c| c.irqs).collect::<Vec<_>>(), [3, 2, 2, 2]);
    assert_eq!(v.summary.both_siblings.iter().map(|b| b.core).collect::<Vec<_>>(), [0, 2, 3]);
}

#[test]
fn unfired_vectors_are_listed_not_counted() {
    let mut run = Run::new("seed-002", "6.12");
    run.set_effective(&[0, 0, 2, 1, 3, 4, 6, 5, 7]);
    run.vector_mut("mana_q7").counts.iter_mut().for_each(|c| *c = 0);
    let v = run.judge();
    assert_eq!((v.summary.fired, v.summary.not_fired.as_slice()), (8, ["mana_q7".to_owned()].as_slice()));
    assert_eq!(v.summary.per_node[1].irqs, 3);
    let text = render(&v, Format::Human).expect("render");
    assert!(text.contains("never fired, effective CPU not yet meaningful (not counted): mana_q7"), "{text}");
    assert!(text.contains("* never fired"), "{text}");
}

#[test]
fn no_smt_and_no_node_are_said_plainly() {
    let v = Run::new("r24-no-smt", "6.12").judge();
    assert!(v.summary.both_siblings.is_empty());
    let text = render(&v, Format::Human).expect("render");
    assert!(text.contains("none: no SMT (1 thread per core)"), "{text}");
    let v = Run::new("r23-no-node", "6.12").judge();
    assert_eq!(v.status, Status::Pass, "{:#?}", v.failures().collect::<Vec<_>>());
    let text = render(&v, Format::Human).expect("render");
    assert!(text.contains("n/a: the NIC has no node (NUMA_NO_NODE)"), "{text}");
}

#[test]
fn file_numbering_is_shown_next_to_the_guests() {
    // Seed 003 numbers CPUs Linux-style (node 0 = 0-7,128-135): guest CPUs 0-1 (QEMU
    // siblings) are file CPUs 0 and 128.
    let mut run = Run::new("seed-003-epyc-7763", "6.12");
    run.set_affinity(1, "0-1");
    let v = run.judge();
    let o = v.vectors[1].observed.as_ref().expect("present");
    assert_eq!(o.file_cpus.as_ref().map(CpuMask::to_cpulist).as_deref(), Some("0,128"));
    let text = render(&v, Format::Human).expect("render");
    assert!(text.lines().any(|l| l.starts_with("IRQ") && l.ends_with("File CPUs")), "{text}");
}

// ---------------------------------------------------------------- formats

#[test]
fn ktap_follows_the_spec_for_pass_fail_skip_and_rig_error() {
    let pass = Run::new("seed-002", "6.12").judge();
    let text = render(&pass, Format::Ktap).expect("ktap");
    assert_eq!(parse_ktap(&text), [true]);
    assert!(text.starts_with("KTAP version 1\n1..1\n  KTAP version 1\n"), "{text}");
    assert!(text.contains("\n  1..15\n  ok 1 kernel_generation\n"), "{text}");
    assert!(text.ends_with("\nok 1 seed-002@6.12\n"), "{text}");

    let mut run = Run::new("seed-002", "6.12");
    run.set_affinity(4, "4-5");
    run.observed.vectors.iter_mut().for_each(|v| v.counts.iter_mut().for_each(|c| *c = 0));
    run.observed.dmesg_mana = vec!["mana 0000:41:00.0: probe ok".to_owned()];
    let fail = run.judge();
    let text = render(&fail, Format::Ktap).expect("ktap");
    assert_eq!(parse_ktap(&text), [false]);
    assert!(text.contains("  # mana_q3 (MSI-X 4, IRQ 28, mana_q3@pci:0000:41:00.0): smp_affinity_list expected 2-3 (node 0, hop 0), got 4-5 (node 1, hop 1)\n"), "{text}");
    assert!(text.contains("\n  not ok 9 mana_q3\n"), "{text}");
    assert!(text.contains("\n  ok 15 effective_within_affinity # SKIP no vector has fired"), "{text}");
    assert!(text.contains("\n# dmesg: mana 0000:41:00.0: probe ok\n"), "{text}");

    // A matrix of runs under one plan.
    let text = render_many(&[pass, fail], Format::Ktap).expect("ktap");
    assert_eq!(parse_ktap(&text), [true, false]);

    let text = render_rig_error(&rig_error(), "seed-002@6.12", Format::Ktap).expect("ktap");
    assert_eq!(parse_ktap(&text), [false]);
    assert!(text.ends_with(
        "not ok 1 seed-002@6.12 # ERROR guest boot of seed-002 (#1) failed: QEMU exited with status 1 before the guest report\n"
    ), "{text}");
}

#[test]
fn junit_parses_back_with_one_testcase_per_check() {
    let mut run = Run::new("seed-002", "6.12");
    run.set_affinity(4, "4-5");
    let v = run.judge();
    let xml = render(&v, Format::Junit).expect("junit");
    let report = quick_junit::Report::deserialize_from_str(&xml).expect("valid JUnit XML");
    assert_eq!(report.name.as_ref().map(|n| n.as_str()), Some("manarig"));
    assert_eq!(report.test_suites.len(), 1);
    let suite = &report.test_suites[0];
    assert_eq!(suite.name.as_str(), "seed-002@6.12");
    assert_eq!((suite.tests, suite.failures, suite.errors), (15, 1, 0));
    let q3 = suite.test_cases.iter().find(|c| c.name.as_str() == "mana_q3").expect("mana_q3 case");
    match &q3.status {
        quick_junit::TestCaseStatus::NonSuccess { kind, message, .. } => {
            assert_eq!(*kind, quick_junit::NonSuccessKind::Failure);
            assert!(message.as_ref().expect("message").as_str().contains("expected 2-3 (node 0, hop 0), got 4-5"));
        }
        other => panic!("{other:?}"),
    }
    let kr = suite.properties.iter().find(|p| p.name.as_str() == "kernel").expect("kernel property");
    assert_eq!(kr.value.as_str(), "6.12");

    // A matrix: one suite per run.
    let xml = render_many(&[v, Run::new("seed-002", "6.1").judge()], Format::Junit).expect("junit");
    let report = quick_junit::Report::deserialize_from_str(&xml).expect("valid JUnit XML");
    let suites: Vec<&str> = report.test_suites.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(suites, ["seed-002@6.12", "seed-002@6.1"]);
    assert_eq!((report.tests, report.failures), (30, 1));

    let xml = render_rig_error(&rig_error(), "seed-002@6.12", Format::Junit).expect("junit");
    let report = quick_junit::Report::deserialize_from_str(&xml).expect("valid JUnit XML");
    assert_eq!((report.tests, report.errors), (1, 1));
}

#[test]
fn json_round_trips_through_the_schema_struct() {
    let mut run = Run::new("seed-003-epyc-7763", "6.12");
    run.set_affinity(3, "7");
    run.observed.vectors.truncate(10);
    let v = run.judge();
    let text = render(&v, Format::Json).expect("json");
    let back: Verdict = serde_json::from_str(&text).expect("schema");
    assert_eq!(back, v);
    let value: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(value["schema_version"], SCHEMA_VERSION);
    assert_eq!(value["status"], "fail");
    assert_eq!(value["run"]["kernel"], "6.12");
    assert_eq!(value["run"]["cpu_numbering"], "linux-smt-outer");

    let text = render_rig_error(&rig_error(), "seed-002@6.12", Format::Json).expect("json");
    let back: RigErrorReport = serde_json::from_str(&text).expect("schema");
    let value: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(value["status"], "rig-error");
    assert_eq!(back.causes.len(), 2);
}

#[test]
fn human_rig_error_ends_with_a_verdict_line() {
    let text = render_rig_error(&rig_error(), "seed-002@6.12", Format::Human).expect("human");
    assert!(text.ends_with("verdict: RIG ERROR (guest boot of seed-002 (#1) failed: QEMU exited with status 1 before the guest report)\n"), "{text}");
}

#[test]
fn before_after_puts_6_1_and_6_12_side_by_side_with_hex_hints() {
    // Seed 002's machine: 6.1 gives one CPU per vector (flat cpumask_local_spread), 6.12
    // sibling pairs (irq_setup): mana_q0 is CPU 1 before, 0-1 after.
    let before = Run::new("seed-002", "6.1").judge();
    let after = Run::new("seed-002", "6.12").judge();
    let text = render_before_after(&before, &after);
    let q0 = text.lines().find(|l| l.starts_with("0 ")).expect("queue 0 row");
    assert_eq!(
        q0.split_whitespace().collect::<Vec<_>>(),
        ["0", "1", "mana_q0", "0", "|", "0", "0", "|", "0", "1", "|", "0-1", "1", "|", "0"]
    );
    // Hex masks as /proc/irq/N/affinity_hint prints them for nr_cpu_ids = 8 (seed 003's
    // form, 2 hex digits): IRQ 25 (mana_q0) = CPU 1 → 02 before, CPUs 0-1 → 03 after.
    let (b, a) = text.split_once("After (").expect("after block");
    assert!(
        b.contains("Before (6.1.192-3 (model)): affinity hints (9 IRQs, nr_cpu_ids = 8):\n24: 01\n25: 02\n"),
        "{text}"
    );
    assert!(a.contains("\n24: 01\n25: 03\n26: 0c\n"), "{text}");
    // 6.12 vs 7.x: names differ, rows are matched by MSI-X index.
    let after7 = Run::new("seed-002", "7.x").judge();
    let text = render_before_after(&after, &after7);
    assert!(text.contains("mana_q0 | mana_msi1"), "{text}");
}

#[test]
fn the_schema_doc_names_every_json_field() {
    // A verdict with every kind of row, remote IRQs and siblings both busy, so every
    // field of the schema has a value.
    let mut run = Run::new("seed-002", "6.12");
    run.set_effective(&[0, 0, 2, 1, 3, 4, 6, 5, 7]);
    run.set_affinity(4, "4-5");
    run.observed.vectors.retain(|v| !v.name.starts_with("mana_q7@"));
    let mut extra = run.observed.vectors[1].clone();
    extra.name = format!("mana_q9@pci:{BDF}");
    run.observed.vectors.push(extra);
    let value = serde_json::to_value(run.judge()).expect("json");
    let rig = serde_json::to_value(RigErrorReport::new(&rig_error(), "x")).expect("json");
    fn keys(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    out.insert(k.clone());
                    keys(v, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
            _ => {}
        }
    }
    let mut all = std::collections::BTreeSet::new();
    keys(&value, &mut all);
    keys(&rig, &mut all);
    let doc = include_str!("format/report-schema.md");
    let undocumented: Vec<&String> = all.iter().filter(|k| !doc.contains(&format!("`{k}`"))).collect();
    assert!(undocumented.is_empty(), "fields missing from report-schema.md: {undocumented:?}");
}

#[test]
fn a_passing_debug_reports_check_shows_its_evidence_in_the_human_report() {
    let mut v = Run::new("seed-002", "6.12").judge();
    let state = "kmemleak=2".to_string();
    let log = debug_reports::DebugLog { state: Some(&state), kmemleak: &[], klog: &[], vectors: &[], nr_cpus: 8 };
    v.checks.push(debug_reports::debug_reports(&log));
    let text = render(&v, Format::Human).expect("render");
    assert!(
        text.contains("Debug reports: no KASAN, kmemleak, lockdep, WARN or BUG report touches mana and no hint reads freed memory (kmemleak scanned at 2 point(s)"),
        "{text}"
    );
}

/// A failed check from outside the model (here the guest's machine) is listed under
/// the failed checks, counted once with its detail lines below it.
#[test]
fn failed_checks_are_counted_by_check_with_their_detail_below_them() {
    let mut v = Run::new("seed-002", "6.12").judge();
    let mut check = Check::new("guest_machine", CheckStatus::Fail, "the guest's CPUs differ from the topology");
    check.detail = vec!["CPUs 4-7 never came up".into(), "WARNING at kernel/time/timer_migration.c".into()];
    v.add_check(check);
    let text = render(&v, Format::Human).expect("render");
    assert!(
        text.contains(
            "Failed checks (1):\n  the guest's CPUs differ from the topology\n    CPUs 4-7 never came up\n    WARNING at"
        ),
        "{text}"
    );
    assert!(!text.contains("Differences from the model"), "{text}");
}
