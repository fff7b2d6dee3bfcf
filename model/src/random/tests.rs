//! The generator's promises (valid, reproducible, varied), the model's invariants on
//! random machines, and the shrinker's minimality.

use super::*;
use crate::model::{expected_table, KernelGen};
use crate::topology::{CpuNumbering, TopologyDraft};

/// max_cpus values the property tests cycle through.
const SIZES: [u32; 8] = [1, 2, 3, 8, 16, 33, 64, 130];

fn one(seed: u64, index: u64, max_cpus: u32) -> Topology {
    generate_one(seed, index, max_cpus).unwrap_or_else(|e| panic!("seed {seed} #{index} max {max_cpus}: {e}"))
}

#[test]
fn thousands_of_random_topologies_pass_the_file_validation() {
    for seed in 0..4000u64 {
        let max = SIZES[seed as usize % SIZES.len()];
        let t = one(seed, seed % 3, max);
        assert!(t.ncpu() >= 1 && t.ncpu() <= max, "seed {seed}: {} CPUs > {max}", t.ncpu());
        assert!((1..=8).contains(&t.nodes().len()), "seed {seed}");
        // The file text is a topology file too, and loads to the same machine (every
        // 8th seed: the round trip costs as much as the generation).
        if seed % 8 == 0 {
            let again = Topology::from_toml_str("again.toml", &t.to_toml()).expect("to_toml loads");
            assert_eq!(again.to_toml(), t.to_toml(), "seed {seed}");
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_topologies_and_a_longer_run_extends_a_shorter() {
    let text = |v: &[Topology]| v.iter().map(Topology::to_toml).collect::<Vec<_>>();
    let a = text(&generate(42, 20, 64).expect("valid"));
    let b = text(&generate(42, 20, 64).expect("valid"));
    assert_eq!(a, b);
    let longer = text(&generate(42, 30, 64).expect("valid"));
    assert_eq!(a[..], longer[..20], "topology i does not depend on n");
    let other = text(&generate(43, 20, 64).expect("valid"));
    assert_ne!(a, other);
    assert_eq!(one(42, 7, 64).to_toml(), a[7], "generate_one = the i-th of generate");
    assert_eq!(one(42, 7, 64).name(), "random-s42-7");
    assert!(generate(1, 0, 8).expect("none").is_empty());
    // Out-of-range sizes are clamped, not refused.
    assert_eq!(one(5, 0, 0).ncpu(), 1);
    assert!(one(5, 0, u32::MAX).ncpu() <= crate::cpulist::MAX_CPUS);
}

/// What the generator is asked to cover, counted over many seeds.
#[derive(Default, Debug)]
struct Seen {
    smt: u32,
    no_smt: u32,
    sockets: u32,
    dies: u32,
    nodes: [u32; 9],
    memory_only: u32,
    cpu_only: u32,
    nic_none: u32,
    nic_memory_only: u32,
    no_slit: u32,
    ties: u32,
    smt_outer: u32,
    small_table: u32,
    table_1: u32,
    big_table: u32,
    max_msix: u32,
    max_queues: u32,
}

fn count(seen: &mut Seen, t: &Topology) {
    let nic = t.nic();
    let want = t.ncpu().min(64) + 1;
    let shape = t.shape();
    seen.smt += u32::from(shape.threads > 1);
    seen.no_smt += u32::from(shape.threads == 1);
    seen.sockets += u32::from(shape.sockets > 1);
    seen.dies += u32::from(shape.dies > 1);
    assert_eq!(shape.dies, 1, "a generated machine must boot: one die per socket");
    seen.nodes[t.nodes().len()] += 1;
    seen.memory_only += u32::from(t.nodes().iter().any(|n| n.cpus.is_empty()));
    seen.cpu_only += u32::from(t.nodes().iter().any(|n| n.memory_mib == 0));
    seen.nic_none += u32::from(nic.node.is_none());
    seen.nic_memory_only += u32::from(nic.node.is_some_and(|n| t.node_cpus(n).is_empty()));
    let rows = t.distances();
    seen.no_slit += u32::from(rows.iter().flatten().all(|&d| d == 10 || d == 20));
    seen.ties += u32::from(rows.iter().any(|r| {
        let mut far: Vec<u32> = r.iter().copied().filter(|&d| d != 10).collect();
        let n = far.len();
        far.sort_unstable();
        far.dedup();
        far.len() < n
    }));
    seen.smt_outer += u32::from(t.numbering() == CpuNumbering::LinuxSmtOuter);
    seen.small_table += u32::from(nic.msix_table_size < want);
    seen.table_1 += u32::from(nic.msix_table_size == 1);
    seen.big_table += u32::from(nic.msix_table_size > want);
    seen.max_msix += u32::from(nic.max_msix != nic.msix_table_size);
    seen.max_queues += u32::from(nic.max_queues != 64);
    assert!(nic.dynamic_msix, "{}: a generated machine must boot as written, and QEMU x86 has dynamic MSI-X", t.name());
    // Node ids as a guest shows them (TopologyDraft::x86_node_order): nodes with CPUs by their
    // first CPU in QEMU's numbering, then the memory-only ones.
    let guest = t.to_qemu_numbering();
    let firsts: Vec<Option<u32>> = guest.nodes().iter().map(|n| n.cpus.first()).collect();
    let in_order = firsts.windows(2).all(|w| match (w[0], w[1]) {
        (Some(a), Some(b)) => a < b,
        (a, b) => a.is_some() || b.is_none(),
    });
    assert!(in_order, "{}: node ids not in Linux's x86 order: {firsts:?}", t.name());
}

#[test]
fn the_generator_covers_the_shapes_the_brief_names() {
    let mut seen = Seen::default();
    for t in generate(2026, 2000, 64).expect("valid") {
        count(&mut seen, &t);
    }
    let s = &seen;
    let each = [
        ("SMT", s.smt),
        ("no SMT", s.no_smt),
        ("2+ sockets", s.sockets),
        ("memory-only node", s.memory_only),
        ("CPU-only node", s.cpu_only),
        ("NIC on no node", s.nic_none),
        ("NIC on a memory-only node", s.nic_memory_only),
        ("no SLIT", s.no_slit),
        ("distance ties", s.ties),
        ("linux-smt-outer", s.smt_outer),
        ("small MSI-X table", s.small_table),
        ("MSI-X table of 1", s.table_1),
        ("larger MSI-X table", s.big_table),
        ("max_msix", s.max_msix),
        ("max_queues", s.max_queues),
    ];
    for (what, n) in each {
        assert!(n >= 10, "{what}: only {n} of 2000 ({s:?})");
    }
    for k in 1..=8 {
        assert!(s.nodes[k] >= 10, "{k} nodes: {} ({s:?})", s.nodes[k]);
    }
}

/// `(vectors MANA allocates, whether the probe fails)` as each kernel's code computes it.
fn vector_count(t: &Topology, gen: KernelGen) -> (u32, bool) {
    let (ncpu, nic) = (t.ncpu(), t.nic());
    let want = ncpu.min(64) + 1;
    if gen == KernelGen::V7 && nic.dynamic_msix {
        let usable = nic.max_msix.min(ncpu + 1).min(nic.msix_table_size);
        return (usable, usable <= 1);
    }
    let nvec = nic.msix_table_size.min(want);
    (nvec, nic.msix_table_size < 2 || nvec.min(nic.max_msix) <= 1)
}

/// `t` as a platform without dynamic MSI-X would show it (`dynamic_msix = false`), its
/// node ids reversed (an order Linux on x86 never gives, which a file may still use).
fn static_msix_reversed_nodes(t: &Topology) -> Topology {
    let mut draft = TopologyDraft::from(t);
    draft.nic.dynamic_msix = Some(false);
    let reversed: Vec<usize> = (0..draft.nodes.len()).rev().collect();
    draft.relabel_nodes(&reversed);
    draft.validate("static.toml").unwrap_or_else(|e| panic!("{}: {e}", t.name()))
}

#[test]
fn the_model_keeps_its_invariants_on_hundreds_of_random_machines() {
    // Every machine twice: as generated (dynamic MSI-X, as QEMU x86 gives a 7.x guest,
    // node ids as Linux gives them) and as a file for another platform may describe it
    // (the static 7.x path, node ids reversed), which the generator leaves out.
    for (seed, t) in (0..400u64).flat_map(|seed| {
        let t = one(seed, 0, [8, 16, 64, 130][seed as usize % 4]);
        let other = static_msix_reversed_nodes(&t);
        [(seed, t), (seed, other)]
    }) {
        let online = t.online();
        for gen in KernelGen::ALL {
            let table = expected_table(&t, gen);
            let at = format!("seed {seed} ({}, dynamic MSI-X {}) on {gen}", t.name(), t.nic().dynamic_msix);
            let (n, fails) = vector_count(&t, gen);
            assert_eq!(table.probe_error.is_some(), fails, "{at}: {:?}", table.probe_error);
            if fails {
                assert!(table.vectors.is_empty(), "{at}");
                continue;
            }
            assert_eq!(table.vectors.len() as u32, n, "{at}");
            assert_eq!(table.vectors_allocated, n, "{at}");
            let (nic, want) = (t.nic(), t.ncpu().min(64) + 1);
            if nic.msix_table_size == want && nic.max_msix >= want {
                assert_eq!(table.vectors.len() as u32, want, "{at}: one vector per queue plus the HWC");
            }
            for (i, v) in table.vectors.iter().enumerate() {
                assert_eq!(v.msix_index as usize, i, "{at}");
                assert!(!v.smp_affinity_list.is_empty(), "{at}: {} has no CPU", v.name);
                assert!(v.smp_affinity_list.is_subset(&online), "{at}: {} = {}", v.name, v.smp_affinity_list);
                assert!(!v.nodes.is_empty(), "{at}: {}", v.name);
                // Masks are single CPUs, whole sibling groups or the kernel's default.
                let first = v.smp_affinity_list.first().unwrap_or(0);
                let whole = v.smp_affinity_list == *t.siblings(first);
                assert!(
                    v.smp_affinity_list.count() == 1 || whole || v.affinity_hint().is_none(),
                    "{at}: {} = {}",
                    v.name,
                    v.smp_affinity_list
                );
            }
            let queues = table.max_num_queues;
            assert!((1..n).contains(&queues) && queues <= 64, "{at}: {queues} queues");
        }
    }
}

/// The synthetic disagreement of the shrinker test: the NIC's node has 2+ cores and
/// the machine 3+ nodes.
fn nic_node_has_two_cores_of_three_nodes(t: &Topology) -> bool {
    let Some(node) = t.nic().node else { return false };
    let mut cores: Vec<u32> = t.node_cpus(node).iter().map(|c| t.core_of(c)).collect();
    cores.sort_unstable();
    cores.dedup();
    cores.len() >= 2 && t.nodes().len() >= 3
}

fn big_machine() -> Topology {
    let text = r#"
name = "big"
cpu_numbering = "linux-smt-outer"
[source]
kind = "synthetic"
wording = "a big machine"
[cpus]
sockets = 2
dies = 2
cores = 4
threads = 2
[[numa.nodes]]
cpus = "0-3,16-19"
memory_mib = 256
[[numa.nodes]]
cpus = "4-7,20-23"
memory_mib = 0
[[numa.nodes]]
cpus = "8-11,24-27"
memory_mib = 256
[[numa.nodes]]
cpus = "12-15,28-31"
memory_mib = 256
[[numa.nodes]]
cpus = ""
memory_mib = 256
[numa]
distances = [[10, 12, 20, 20, 17], [12, 10, 20, 20, 17], [20, 20, 10, 12, 28], [20, 20, 12, 10, 28], [17, 17, 28, 28, 10]]
[nic]
numa_node = 2
msix_table_size = 20
max_queues = 8
dynamic_msix = false
[expect]
verdict = "mismatch"
source = "the synthetic disagreement"
"#;
    Topology::from_toml_str("big.toml", text).expect("valid")
}

#[test]
fn the_shrinker_reaches_a_minimal_machine_for_a_synthetic_disagreement() {
    let big = big_machine();
    assert!(nic_node_has_two_cores_of_three_nodes(&big));
    let mut calls = 0;
    let out = shrink_logged(&big, |t| {
        calls += 1;
        nic_node_has_two_cores_of_three_nodes(t)
    });
    let t = &out.topology;
    assert_eq!(calls, out.tries);
    assert!(nic_node_has_two_cores_of_three_nodes(t), "{}", t.to_toml());
    // The smallest such machine: three nodes, the NIC's with two cores of one thread,
    // the other two memory-only; one socket; the smallest NIC budget; no SLIT.
    assert_eq!(t.nodes().len(), 3, "{}", t.to_toml());
    assert_eq!(t.ncpu(), 2, "{}", t.to_toml());
    let s = t.shape();
    assert_eq!((s.sockets, s.dies, s.cores, s.threads), (1, 1, 2, 1), "{}", t.to_toml());
    assert_eq!(t.numbering(), CpuNumbering::Qemu);
    let nic = t.nic().node.expect("on a node");
    assert_eq!(t.node_cpus(nic).count(), 2);
    assert_eq!(t.nodes().iter().filter(|n| n.cpus.is_empty()).count(), 2);
    assert_eq!((t.nic().msix_table_size, t.nic().max_msix, t.nic().max_queues), (1, 1, 1));
    assert!(t.distances().iter().flatten().all(|&d| d == 10 || d == 20));
    assert!(t.nic().dynamic_msix);
    // No single simplification left keeps the disagreement.
    let mut draft = TopologyDraft::from(t);
    draft.drop_defaults();
    for (label, cand) in shrink::candidates(&draft) {
        if let Ok(c) = cand.validate("c.toml") {
            assert!(
                !nic_node_has_two_cores_of_three_nodes(&c) || c.to_toml() == t.to_toml(),
                "{label} still disagrees"
            );
        }
    }
    // The file is ready for topologies/: named, sourced, expecting what the input did.
    let file = t.to_toml();
    assert!(file.starts_with("name = \"big-min\""), "{file}");
    assert!(file.contains("shrunk from big (32 CPUs, 5 nodes)"), "{file}");
    assert!(file.contains("[expect]\nverdict = \"mismatch\""), "{file}");
    assert!(!out.steps.is_empty());
}

#[test]
fn every_shrink_candidate_has_the_node_ids_a_guest_on_x86_shows() {
    // Making node 0 of this machine memory-only would put a memory-only node before
    // nodes with CPUs: the candidate is the same machine renumbered, and says so.
    let big = big_machine();
    assert_eq!(big.x86_node_ids(), Ok(()), "the start is in Linux's order");
    let draft = TopologyDraft::from(&big);
    let cands = shrink::candidates(&draft);
    for (label, cand) in &cands {
        let order = cand.x86_node_order();
        assert!(order.iter().enumerate().all(|(j, &o)| j == o), "{label}: {order:?}");
    }
    let (label, cand) = cands.iter().find(|(l, _)| l.starts_with("node 0 memory-only")).expect("candidate");
    assert_eq!(label, "node 0 memory-only (nodes renumbered as Linux on x86 does)");
    let memory_only: Vec<bool> = cand.nodes.iter().map(|n| n.cpus.is_empty()).collect();
    assert_eq!(memory_only, [false, false, false, true, true], "old node 0 goes after the CPU nodes");
    assert_eq!(cand.nic.node, Some(1), "the NIC's node (old 2) moves with it");
}

#[test]
fn a_predicate_that_does_not_hold_leaves_the_machine_as_it_was() {
    let big = big_machine();
    let out = shrink(&big, |_| false);
    let (mut a, mut b) = (TopologyDraft::from(&big), TopologyDraft::from(&out));
    (a.name, a.source.wording) = (String::new(), String::new());
    (b.name, b.source.wording) = (String::new(), String::new());
    assert_eq!(a, b);
}

#[test]
fn a_model_disagreement_shrinks_to_a_small_machine() {
    // 6.1's flat cpumask_local_spread() and 6.3's hop-aware one disagree on machines
    // where CPU-id order is not distance order; find one at random, shrink it.
    let differ = |t: &Topology| {
        let (a, b) = (expected_table(t, KernelGen::V6_1), expected_table(t, KernelGen::V6_3));
        a.vectors.iter().zip(&b.vectors).any(|(x, y)| x.smp_affinity_list != y.smp_affinity_list)
    };
    let start = (0..200u64).map(|s| one(s, 0, 32)).find(|t| differ(t) && t.ncpu() >= 8).expect("some machine differs");
    let out = shrink_logged(&start, differ);
    let t = &out.topology;
    assert!(differ(t));
    assert!(t.ncpu() <= 3 && t.nodes().len() <= 3, "{}", t.to_toml());
    // A budget stops early with the best machine so far, still disagreeing.
    let early = shrink_within(&start, 3, differ);
    assert!(early.tries <= 3 && differ(&early.topology));
    assert!(early.topology.ncpu() >= t.ncpu());
    eprintln!("{} tries, steps {:?}:\n{}", out.tries, out.steps, t.to_toml());
}

#[test]
fn node_ids_are_the_ones_the_7x_guest_showed_for_the_seed_1_matrix() {
    // `matrix --random 8 --seed 1 --max-cpus 64 --kernel 7.x-min`, before the relabelling:
    // random-s1-1 said node 4 = CPUs 46-53 after two memory-only nodes, and the guest put
    // CPU 46 on node 2; random-s1-7 gave CPUs 0, 1, 2 nodes 5, 3, 6, and the guest nodes
    // 0, 1, 2 (acpi_map_pxm_to_node(): first met, first numbered). Same machines, the
    // guest's labels: the SLIT and the NIC move with them.
    let t = one(1, 1, 64);
    let lists: Vec<String> = t.nodes().iter().map(|n| n.cpus.to_cpulist()).collect();
    assert_eq!(lists, ["0-9", "10-45", "46-53", "", ""]);
    assert_eq!(t.nic().node, Some(1));
    assert_eq!(t.distances()[2], [12, 22, 10, 21, 12], "old row 4 [12, 22, 21, 12, 10] in the order 0, 1, 4, 2, 3");
    let t = one(1, 7, 64);
    let lists: Vec<String> = t.nodes().iter().map(|n| n.cpus.to_cpulist()).collect();
    assert_eq!(lists, ["0", "1", "2", "3", "4", "5", "", ""]);
    assert_eq!(t.nic().node, Some(4), "old node 7 = CPU 4");
}
