//! The properties on the model's own tables (which kernels keep which, on the
//! topologies/ machines and on random ones) and on deliberately bad tables.

use super::*;
use crate::model::{expected_table, KernelGen};
use crate::verdict::fixtures::{guest_report, Run, BDF, FIRST_IRQ};
use crate::verdict::guest_irqs::Observed;
use Property::{Balance as B, Locality as L, Placed as P};

fn failing(checks: &[Check]) -> Vec<&str> {
    checks.iter().filter(|c| c.status == CheckStatus::Fail).map(|c| c.name.as_str()).collect()
}

fn check(checks: &[Check], p: Property) -> &Check {
    checks.iter().find(|c| c.name == p.check_name()).unwrap_or_else(|| panic!("no {p:?} check"))
}

/// The properties each kernel's model table breaks on each machine of topologies/
/// (6.1, 6.3, 6.12, 7.x), as worked out in `Property::applies_to`.
const BROKEN: &[(&str, [&[Property]; 4])] = &[
    ("seed-002", [&[B], &[B], &[], &[B]]),
    ("seed-000-4ch", [&[B], &[B], &[], &[]]),
    ("seed-000-ethtool", [&[B], &[B], &[], &[B]]),
    ("seed-000-kelley-96", [&[B], &[B], &[], &[]]),
    ("seed-001-azure-128", [&[B], &[B], &[], &[]]),
    ("seed-003-epyc-7763", [&[L, B], &[B], &[], &[]]),
    ("r01-nic-node1", [&[B], &[B], &[], &[L, B]]),
    ("r02-small-table", [&[B], &[B], &[], &[]]),
    ("r05-dyn-skip", [&[B], &[B], &[], &[]]),
    ("r06-low-vcpu", [&[], &[], &[], &[B]]),
    ("r08-four-nodes", [&[L], &[], &[], &[L]]),
    ("r15-memory-only", [&[B], &[B], &[P], &[P]]),
    ("r15-memory-only-small", [&[L, B], &[B], &[P], &[P, L, B]]),
    ("r16-row0", [&[B], &[B], &[], &[B]]),
    ("r17-diameter", [&[], &[], &[], &[L]]),
    ("r23-no-node", [&[B], &[B], &[], &[B]]),
    ("r24-no-smt", [&[], &[], &[], &[]]),
];

// The model's own tables (Run::new, as_model_predicts) are the subject here: the
// properties oracle, which does not use the model, judges them; not the verdict
// against the same model.
#[test]
fn the_model_tables_keep_the_properties_their_kernel_keeps() {
    for (file, per_kernel) in BROKEN {
        for (gen, broken) in KernelGen::ALL.iter().zip(per_kernel) {
            let run = Run::new(file, gen.as_str());
            let checks = evaluate(&run.topo, &run.observed);
            assert_eq!(checks.len(), Property::ALL.len());
            let want: Vec<&str> = Property::ALL.iter().filter(|p| broken.contains(p)).map(|p| p.check_name()).collect();
            assert_eq!(failing(&checks), want, "{file} on {gen}: {checks:#?}");
            for c in checks.iter().filter(|c| c.status == CheckStatus::Pass) {
                assert!(c.message.contains("source: "), "{file} on {gen}: {}", c.message);
            }
        }
    }
}

#[test]
fn hop_aware_sibling_aware_spreads_keep_every_property_on_random_machines() {
    for seed in 0..300u64 {
        let t = crate::random::generate_one(seed, 0, 64).expect("valid random machine");
        let guest = t.to_qemu_numbering();
        let memory_only_nic = t.nic().node.is_some_and(|n| t.node_cpus(n).is_empty());
        for gen in KernelGen::ALL {
            let table = expected_table(&guest, gen);
            // The model's table on a random machine is the subject: the properties
            // oracle (no model) judges it.
            let checks = evaluate(&t, &Observed::as_model_predicts(&table, BDF, FIRST_IRQ));
            let at = format!("{} on {gen}: {checks:#?}", t.name());
            for always in [Property::Online, Property::SiblingGroups] {
                assert_ne!(check(&checks, always).status, CheckStatus::Fail, "{at}");
            }
            if gen == KernelGen::V6_12 {
                let broken = failing(&checks);
                let want: &[&str] =
                    if memory_only_nic && table.probe_error.is_none() { &["property_placed"] } else { &[] };
                assert_eq!(broken, want, "{at}");
            }
            if gen == KernelGen::V6_3 && !memory_only_nic {
                // On a memory-only NIC node 6.3 walks the hops of numa_nearest_node(),
                // which are not the NIC node's own distances (see Property::applies_to).
                assert_ne!(check(&checks, Property::Locality).status, CheckStatus::Fail, "{at}");
            }
        }
    }
}

/// Seed 002 on 6.12 (HWC 0; queues 0-1 2-3 0-1 2-3 4-5 6-7 4-5 6-7: the seed's
/// table, topologies/seed-002.toml), then `edit`.
fn seed_002(edit: impl FnOnce(&mut Run)) -> Vec<Check> {
    let rows = ["0", "0-1", "2-3", "0-1", "2-3", "4-5", "6-7", "4-5", "6-7"];
    let mut run = Run::seen("seed-002", "6.12", guest_report(KernelGen::V6_12, Some(0), 8, &rows, &[]));
    assert!(failing(&evaluate(&run.topo, &run.observed)).is_empty());
    edit(&mut run);
    evaluate(&run.topo, &run.observed)
}

#[test]
fn an_irq_on_the_far_node_while_the_near_hop_has_a_free_core_breaks_locality() {
    // q0 (MSI-X 1) on node 1 while core 1 of node 0 has no IRQ yet (the HWC has core 0).
    let checks = seed_002(|r| r.set_affinity(1, "4-5"));
    let c = check(&checks, Property::Locality);
    assert_eq!(c.status, CheckStatus::Fail);
    assert_eq!(
        c.message,
        "mana_q0 (MSI-X 1, IRQ 25) on 4-5 (node 1, core 2, hop 1) while hop 0 still had core 1 (CPUs 2-3) without an IRQ"
    );
    assert!(
        c.detail.last().is_some_and(|d| d.starts_with("rule: no IRQ leaves the nearest NUMA hop")),
        "{:?}",
        c.detail
    );
    assert_eq!(check(&checks, Property::SiblingGroups).status, CheckStatus::Pass);
}

#[test]
fn a_second_irq_on_a_core_while_another_has_none_breaks_balance() {
    // q1 (MSI-X 2) on core 0 again, core 1 still empty.
    let checks = seed_002(|r| r.set_affinity(2, "0-1"));
    let c = check(&checks, Property::Balance);
    assert_eq!(c.status, CheckStatus::Fail);
    assert_eq!(
        c.message,
        "mana_q1 (MSI-X 2, IRQ 26) gives core 0 (CPUs 0-1) its 2nd IRQ while core 1 (CPUs 2-3) of the same hop has none"
    );
    assert_eq!(failing(&checks), ["property_balance"]);
}

#[test]
fn a_mask_across_two_sibling_groups_breaks_sibling_groups() {
    let checks = seed_002(|r| r.set_affinity(3, "1-2"));
    let c = check(&checks, Property::SiblingGroups);
    assert_eq!(
        c.message,
        "mana_q2 (MSI-X 3, IRQ 27): smp_affinity_list 1-2 is neither one CPU nor a whole sibling group: it takes 1 of \
         sibling group 0-1, 2 of sibling group 2-3"
    );
}

#[test]
fn half_a_sibling_group_of_four_threads_breaks_sibling_groups() {
    let text = "name = \"smt4\"\n[source]\nkind = \"synthetic\"\nwording = \"SMT-4\"\n[cpus]\nsockets = 1\ncores = 2\n\
                threads = 4\n[[numa.nodes]]\ncpus = \"0-7\"\nmemory_mib = 512\n[nic]\nnuma_node = 0\n\
                [expect]\nverdict = \"pass\"\nsource = \"t\"\n";
    let topo = Topology::from_toml_str("smt4.toml", text).expect("valid");
    // 6.12 on 8 CPUs with a 9-entry table (kernel algorithm): the HWC gets
    // cpumask_local_spread(0, 0) = CPU 0; irq_setup() gives the 8 queues whole
    // sibling groups of hop 0, each group once a round: 0-3, 4-7, 0-3, …
    let rows = ["0", "0-3", "4-7", "0-3", "4-7", "0-3", "4-7", "0-3", "4-7"];
    let mut observed = guest_report(KernelGen::V6_12, Some(0), 8, &rows, &[]);
    assert!(failing(&evaluate(&topo, &observed)).is_empty(), "6.12 gives whole groups 0-3, 4-7");
    let half: crate::cpulist::CpuMask = "4-5".parse().expect("cpulist");
    observed.vectors[2].smp_affinity = half.clone();
    observed.vectors[2].affinity_hint = Some(half);
    let checks = evaluate(&topo, &observed);
    assert_eq!(failing(&checks), ["property_sibling_groups"]);
    assert!(check(&checks, Property::SiblingGroups).message.ends_with("it takes 4-5 of sibling group 4-7"));
}

#[test]
fn offline_cpus_a_moved_irq_and_a_missing_hint_are_named() {
    let checks = seed_002(|r| {
        let off: crate::cpulist::CpuMask = "8-9".parse().expect("cpulist");
        let q3 = r.vector_mut("mana_q3");
        (q3.smp_affinity, q3.affinity_hint) = (off.clone(), Some(off));
        r.vector_mut("mana_q4").smp_affinity = "2".parse().expect("cpulist");
        let q5 = r.vector_mut("mana_q5");
        q5.affinity_hint = None;
    });
    let c = check(&checks, Property::Online);
    assert_eq!(
        c.message,
        "mana_q3 (MSI-X 4, IRQ 28): smp_affinity_list 8-9 has CPUs 8-9 that are not online (online: 0-7)"
    );
    assert!(
        c.detail.iter().any(|d| d.starts_with("mana_q3 (MSI-X 4, IRQ 28): affinity_hint 8-9 names CPUs")),
        "{c:#?}"
    );
    assert!(
        c.detail.iter().any(|d| d.contains("mana_q4 (MSI-X 5, IRQ 29): smp_affinity_list 2 leaves the driver's affinity_hint 4-5")),
        "{c:#?}"
    );
    let p = check(&checks, Property::Placed);
    assert_eq!(
        p.message,
        "mana_q5 (MSI-X 6, IRQ 30): no affinity_hint: the driver left it at the kernel's default 6-7 (node 1, core 3, hop 1)"
    );
    assert_eq!(
        check(&checks, Property::SiblingGroups).status,
        CheckStatus::Pass,
        "8-9 is off the machine, not a group"
    );
}

#[test]
fn a_guest_without_mana_vectors_skips_every_property() {
    let checks = seed_002(|r| r.observed.vectors.clear());
    assert!(checks.iter().all(|c| c.status == CheckStatus::Skip), "{checks:#?}");
}

#[test]
fn prefixes_count_seven_x_linear_puts_two_channels_on_one_core() {
    // 7.x on seed 002 (9 vectors > 8 CPUs: mana_irq_setup_linear): msi1 → CPU 0, msi2 →
    // CPU 1. With `ethtool -L combined 2` both channels share core 0: seed 000's Case 2.
    let run = Run::new("seed-002", "7.x");
    let checks = evaluate(&run.topo, &run.observed);
    assert_eq!(
        check(&checks, Property::Balance).message,
        "mana_msi2 (MSI-X 2, IRQ 26) gives core 0 (CPUs 0-1) its 2nd IRQ while core 1 (CPUs 2-3) of the same hop has none"
    );
}

#[test]
fn every_property_names_a_source_and_the_kernels_it_holds_for() {
    for p in Property::ALL {
        assert!(p.check_name().starts_with("property_"));
        assert!(p.source().contains('"'), "{p:?} quotes its source");
        assert!(!p.applies_to().is_empty() && !p.rule().is_empty());
    }
}
