//! Golden tables: the model against the seeds, the public reports and the kernel's rules.
//! Each test names its source; topology files come from `topologies/`.

use super::*;
use crate::cpulist::CpuMask;
use crate::topology::Topology;

fn path(name: &str) -> String {
    format!("{}/../topologies/{name}.toml", env!("CARGO_MANIFEST_DIR"))
}

fn topo(name: &str) -> Topology {
    Topology::load(path(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// A topology file with one text substitution (e.g. another NIC node).
fn topo_with(name: &str, from: &str, to: &str) -> Topology {
    let text = std::fs::read_to_string(path(name)).expect("topology file");
    assert!(text.contains(from), "{name}: {from:?} not found");
    Topology::from_toml_str(name, &text.replacen(from, to, 1)).unwrap_or_else(|e| panic!("{e}"))
}

fn table(t: &Topology, k: &str) -> ExpectedTable {
    expected_table(t, k.parse().expect("kernel"))
}

fn cpus(t: &ExpectedTable) -> Vec<String> {
    t.vectors.iter().map(|v| v.smp_affinity_list.to_cpulist()).collect()
}

fn algs(t: &ExpectedTable) -> Vec<Algorithm> {
    t.vectors.iter().map(|v| v.algorithm).collect()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// Seed 002's table (commit message of 91bfe210e196): queue IRQs 0..7.
const SEED_002: [&str; 8] = ["0-1", "2-3", "0-1", "2-3", "4-5", "6-7", "4-5", "6-7"];

#[test]
fn seed_002_on_6_12_hwc_on_cpu_0_then_the_commit_message_table() {
    // Seed 002 + R01: 8 CPUs, 9-entry table, so nvec = 9 > 8 and the HWC vector gets
    // cpumask_local_spread(0, 0) = CPU 0; mana_q0..q7 follow the seed's table.
    let t = table(&topo("seed-002"), "6.12");
    assert_eq!(t.vectors_allocated, 9);
    assert_eq!(cpus(&t)[0], "0");
    assert_eq!(cpus(&t)[1..], strs(&SEED_002));
    assert_eq!(t.vectors[0].algorithm, Algorithm::LocalSpreadHops);
    assert!(t.vectors[1..].iter().all(|v| v.algorithm == Algorithm::IrqSetup));
    // Names as /proc/interrupts shows them (R07: mana_hwc@pci:, mana_q<k>@pci:).
    assert_eq!(t.vectors[0].irq_name("7870:00:00.0"), "mana_hwc@pci:7870:00:00.0");
    assert_eq!(t.vectors[8].irq_name("7870:00:00.0"), "mana_q7@pci:7870:00:00.0");
    // Seed 002's Nodes/Cores columns (its nodes are 1-based, ours 0-based).
    let nodes: Vec<Vec<u32>> = t.vectors[1..].iter().map(|v| v.nodes.clone()).collect();
    assert_eq!(nodes, [[0], [0], [0], [0], [1], [1], [1], [1]]);
    let cores: Vec<Vec<u32>> = t.vectors[1..].iter().map(|v| v.cores.clone()).collect();
    assert_eq!(cores, [[0], [1], [0], [1], [2], [3], [2], [3]]);
    let q7 = t.vector_by_name("mana_q7@pci:7870:00:00.0").expect("mana_q7");
    assert_eq!(q7.msix_index, 8);
    // Hex masks as smp_affinity prints them for 8 CPUs (bitmap_string(): 2 digits).
    assert_eq!(t.vectors[5].smp_affinity, "30");
}

#[test]
fn seed_002_on_6_1_is_one_cpu_per_vector_by_id() {
    // Debian 6.1 mana_gd_setup_irqs(): vector i → cpumask_local_spread(i, 0) (flat), 9 vectors
    // on 8 CPUs, so the 9th wraps to CPU 0 (i %= num_online_cpus()).
    let t = table(&topo("seed-002"), "6.1");
    assert_eq!(cpus(&t), strs(&["0", "1", "2", "3", "4", "5", "6", "7", "0"]));
    assert!(algs(&t).iter().all(|a| *a == Algorithm::LocalSpreadFlat));
}

#[test]
fn seed_002_on_7x_dynamic_msix_goes_linear() {
    // Debian 7.3 with dynamic MSI-X: HWC → siblings of the first CPU of hop 0 = 0-1;
    // U = min(max_msix 9, ncpu + 1 = 9, table 9) = 9 > 8 → mana_irq_setup_linear().
    let t = table(&topo("seed-002"), "7.x");
    assert_eq!(cpus(&t), strs(&["0-1", "0", "1", "2", "3", "4", "5", "6", "7"]));
    assert_eq!(t.vectors[3].irq_name("b"), "mana_msi3@pci:b");
    // Without dynamic MSI-X, 7.x behaves like 6.12 (mana_gd_setup_irqs(), no skip).
    let t = table(&topo_with("seed-002", "numa_node = 0", "numa_node = 0\ndynamic_msix = false"), "7.x");
    assert_eq!(cpus(&t)[1..], strs(&SEED_002));
    assert_eq!(t.vectors[1].algorithm, Algorithm::NumaAware);
}

#[test]
fn seed_000_case_1_on_6_12_and_case_2_on_6_1() {
    // Seed 000, Souradeep's 4-channel test on 1 node × 4 cores × 2 threads.
    // Case 1 (irq_setup): IRQ 0..3 → 0-1, 2-3, 4-5, 6-7 on cores 0..3.
    // Case 2 (cpumask_local_spread): IRQ 0..3 → 0, 1, 2, 3 on cores 0, 0, 1, 1.
    let t = topo("seed-000-4ch");
    let new = table(&t, "6.12");
    assert_eq!(cpus(&new)[..4], strs(&["0-1", "2-3", "4-5", "6-7"]));
    let cores: Vec<Vec<u32>> = new.vectors[..4].iter().map(|v| v.cores.clone()).collect();
    assert_eq!(cores, [[0], [1], [2], [3]]);
    let old = table(&t, "6.1");
    assert_eq!(cpus(&old)[..4], strs(&["0", "1", "2", "3"]));
    let cores: Vec<Vec<u32>> = old.vectors[..4].iter().map(|v| v.cores.clone()).collect();
    assert_eq!(cores, [[0], [0], [1], [1]]);
    assert_eq!(new.max_num_queues, 4, "4 channels");
    // With a 9-entry table (HWC apart), the 4 queues mana_q0..q3 are Case 1 as well.
    let t9 = table(&topo_with("seed-000-4ch", "msix_table_size = 5", "msix_table_size = 9"), "6.12");
    assert_eq!(cpus(&t9)[1..5], strs(&["0-1", "2-3", "4-5", "6-7"]));
}

#[test]
fn yury_norov_walk_through_one_irq_at_a_time() {
    // Seed 000, Yury Norov: 2 IRQs → 0-1, 2-3; a 3rd → 0-1 (NUMA locality trumps sibling
    // dislocality); a 4th → 2-3; from the 5th on node 1 fills the same way. With a table of
    // n ≤ 8 vectors the HWC joins the spread (nvec ≤ ncpu), so the n vectors are the
    // first n rows of the seed 002 table.
    for n in 2..=8 {
        let t =
            table(&topo_with("seed-002", "numa_node = 0", &format!("numa_node = 0\nmsix_table_size = {n}")), "6.12");
        assert_eq!(cpus(&t), strs(&SEED_002[..n]), "{n} vectors");
        assert_eq!(t.vectors[0].algorithm, Algorithm::IrqSetup, "HWC joins the spread (R02)");
    }
}

/// R08 hop-aware cpumask_local_spread(i, node) for i = 0..15.
fn r08_order(node: u32) -> Vec<u32> {
    let r = |a: u32, b: u32| (a..=b).collect::<Vec<_>>();
    match node {
        0 => [r(0, 3), r(6, 7), r(4, 5), r(8, 15)].concat(),
        1 => [r(4, 5), r(8, 15), r(0, 3), r(6, 7)].concat(),
        2 => [r(6, 7), r(0, 3), r(8, 15), r(4, 5)].concat(),
        _ => [r(8, 15), r(4, 5), r(6, 7), r(0, 3)].concat(),
    }
}

#[test]
fn r08_queue_order_follows_the_local_spread_order_on_every_node() {
    // R08 (inferred): without SMT, irq_setup() visits the same node order as the hop-aware
    // cpumask_local_spread, so queue k gets the k-th CPU of R08's table.
    for node in 0..4u32 {
        let t = topo_with("r08-four-nodes", "numa_node = 0", &format!("numa_node = {node}"));
        let numa = numa_levels(&t);
        assert_eq!(local_spread_order(&numa, Some(node)), r08_order(node), "node {node}");
        let tab = table(&t, "6.12");
        let queues: Vec<String> = r08_order(node).iter().map(u32::to_string).collect();
        assert_eq!(cpus(&tab)[1..], queues, "node {node}");
        assert_eq!(cpus(&tab)[0], r08_order(node)[0].to_string(), "HWC = local_spread(0)");
    }
}

/// Seed 003's affinity hints: (before, after) as CPU lists in IRQ order.
fn seed_003_hints() -> (Vec<CpuMask>, Vec<CpuMask>, Vec<String>, Vec<String>) {
    let text = include_str!("testdata/seed-003-affinity-hints.txt");
    let (mut before, mut after, mut before_hex, mut after_hex) = (vec![], vec![], vec![], vec![]);
    let mut in_after = false;
    for line in text.lines() {
        match line {
            "[before]" => in_after = false,
            "[after]" => in_after = true,
            l if l.starts_with('#') => {}
            l => {
                let (_, hex) = l.split_once(": ").expect("IRQ: mask");
                let m = CpuMask::parse_mask_string(hex).expect("hex mask");
                let (v, h) = if in_after { (&mut after, &mut after_hex) } else { (&mut before, &mut before_hex) };
                v.push(m);
                h.push(hex.to_owned());
            }
        }
    }
    (before, after, before_hex, after_hex)
}

#[test]
fn seed_003_before_is_the_flat_spread_and_after_the_hop_order() {
    // Seed 003: 127 mlx5 IRQs on the EPYC 7763 (NIC node 14). Before = flat
    // cpumask_local_spread(i, 14); After = for_each_numa_hop_mask(14) order. Compare both
    // the CPUs and the exact smp_affinity/affinity_hint strings (nr_cpu_ids = 256).
    let t = topo("seed-003-epyc-7763");
    let numa = numa_levels(&t);
    let (before, after, before_hex, after_hex) = seed_003_hints();
    assert_eq!((before.len(), after.len()), (127, 127));
    for i in 0..127u32 {
        let flat = local_spread_flat(&numa, i, Some(14)).expect("cpu");
        assert_eq!(CpuMask::single(flat), before[i as usize], "before, IRQ #{i}");
        assert_eq!(CpuMask::single(flat).to_mask_string(256), before_hex[i as usize]);
        let hop = local_spread_hops(&numa, i, Some(14)).expect("cpu");
        assert_eq!(CpuMask::single(hop), after[i as usize], "after, IRQ #{i}");
        assert_eq!(CpuMask::single(hop).to_mask_string(256), after_hex[i as usize]);
    }
}

#[test]
fn seed_003_on_the_6_3_model_is_the_after_list_and_on_6_1_the_before_list() {
    // Seed 003: 6.3+ cpumask_local_spread() walks NUMA hops, so a driver that takes one
    // CPU per vector from it (MANA of Linux 6.3-6.8, the reverted 6.12 tree) hands out
    // exactly seed 003's "After" hints; the flat 6.1 helper gives its "Before" hints.
    // MANA asks for min(256, 64) + 1 = 65 vectors, HWC included, all one CPU each.
    let t = topo("seed-003-epyc-7763");
    let (before, after, _, _) = seed_003_hints();
    for (k, hints, alg) in [("6.3", &after, Algorithm::LocalSpreadHops), ("6.1", &before, Algorithm::LocalSpreadFlat)] {
        let tab = table(&t, k);
        assert_eq!(tab.vectors.len(), 65, "{k}");
        for (v, hint) in tab.vectors.iter().zip(hints.iter()) {
            assert_eq!(&v.smp_affinity_list, hint, "{k}: {}", v.name);
            assert_eq!(v.algorithm, alg, "{k}: {}", v.name);
        }
        assert_eq!(tab.vectors[1].name, "mana_q0@pci:{bdf}", "{k}: the 6.x queue names");
    }
    // The node order of the 6.3 table: node 14, then 12, 13, 15 (distance 11), then 8-11.
    let tab = table(&t, "6.3");
    let first_node = |v: &ExpectedVector| v.nodes[0];
    let nodes: Vec<u32> = tab.vectors.iter().map(first_node).collect();
    assert!(nodes[..16].iter().all(|&n| n == 14), "{nodes:?}");
    assert_eq!(nodes[16..64].iter().copied().collect::<std::collections::BTreeSet<_>>(), [12, 13, 15].into());
    assert_eq!(nodes[64], 8);
    assert_eq!(tab.model, KernelGen::V6_3.algorithm());
    assert!(tab.to_text().contains("NUMA-hop-aware"), "{}", tab.to_text());
}

#[test]
fn seed_003_node_visiting_order_from_node_14() {
    // Seed 003 matrix: 14 → {12, 13, 15} (11) → {8..11} (12) → {0..7} (32).
    let t = topo("seed-003-epyc-7763");
    let tab = table(&t, "6.12");
    assert_eq!(tab.numa_levels, [10, 11, 12, 32]);
    let node_sets: Vec<Vec<u32>> =
        tab.hops.iter().map(|h| t.nodes().iter().filter(|n| n.cpus.intersects(h)).map(|n| n.id).collect()).collect();
    assert_eq!(node_sets, [vec![14], vec![12, 13, 15], vec![8, 9, 10, 11], (0..8).collect()]);
    // irq_setup on 6.12: 65 vectors (nvec 65 ≤ 256, HWC joins). Node 14's 8 cores twice
    // (16 vectors), then the 24 cores of nodes 12, 13, 15 twice (48), then node 8's core 64.
    assert_eq!(tab.vectors.len(), 65);
    assert_eq!(cpus(&tab)[0], "112,240", "sibling of 112 is 240 (linux-smt-outer numbering)");
    assert_eq!(cpus(&tab)[8], "112,240", "second pass over node 14");
    assert_eq!(cpus(&tab)[16], "96,224");
    assert_eq!(cpus(&tab)[40], "96,224", "second pass over hop 1");
    assert_eq!(cpus(&tab)[64], "64,192");
    assert!(tab.vectors[..16].iter().all(|v| v.nodes == [14] && v.hop == Some(0) && v.distance == Some(10)));
    assert!(tab.vectors[16..64].iter().all(|v| v.hop == Some(1) && v.distance == Some(11)));
    assert_eq!((tab.vectors[64].hop, tab.vectors[64].distance), (Some(2), Some(12)));
}

#[test]
fn seed_003_in_a_qemu_guest_is_numbered_differently() {
    // The guest numbers siblings N, N+1 (QEMU cpu index = Linux CPU id), so node 14 is
    // CPUs 224-239 there and the HWC lands on 224-225; the rig must model the guest view.
    let t = topo("seed-003-epyc-7763");
    assert_eq!(t.qemu_node_cpus(14).to_cpulist(), "224-239");
    assert_eq!(t.cpu_of_qemu_index(225), 240);
    let g = table(&t.to_qemu_numbering(), "6.12");
    assert_eq!(cpus(&g)[..2], strs(&["224-225", "226-227"]));
}

#[test]
fn seed_001_azure_128_vcpus() {
    // Seed 001 table, new design: IRQ 1..32 → CPUs 0-1 .. 62-63 (cores 0..31), IRQ 33..64
    // → 0-1 .. 62-63 again, all node 0. Its "IRQ n" is MSI-X index n-1: nvec = 65 ≤ 128,
    // so the HWC vector takes part. Old design: IRQ n → CPU n-1.
    let t = topo("seed-001-azure-128");
    let new = table(&t, "6.12");
    for i in 0..64u32 {
        let core = i % 32;
        let v = &new.vectors[i as usize];
        assert_eq!(v.smp_affinity_list.to_cpulist(), format!("{}-{}", 2 * core, 2 * core + 1), "IRQ {}", i + 1);
        assert_eq!((v.nodes.as_slice(), v.cores.as_slice()), (&[0][..], &[core][..]));
    }
    // Vector 65 (not in the seed): node 0 is full, the next hop starts at core 32 (inferred).
    assert_eq!(cpus(&new)[64], "64-65");
    let old = table(&t, "6.1");
    for i in 0..64u32 {
        assert_eq!(old.vectors[i as usize].smp_affinity_list, CpuMask::single(i), "IRQ {}", i + 1);
    }
}

#[test]
fn kelley_96_vcpus_fill_node_0_then_one_irq_per_core_on_node_1() {
    // Seed 000 (Michael Kelley): "all 48 vCPUs in NUMA node 0 will all be assigned IRQs. The
    // remaining [IRQs] will be spread out on the 48 CPUs in NUMA node 1 in a way that avoids
    // sharing a core." 65 vectors: 48 on node 0 (each of its 24 cores twice), 17 on node 1.
    let t = table(&topo("seed-000-kelley-96"), "6.12");
    assert_eq!(t.vectors.len(), 65);
    let on = |n: u32| t.vectors.iter().filter(|v| v.nodes == [n]).count();
    assert_eq!((on(0), on(1)), (48, 17));
    let node1_cores: Vec<u32> = t.vectors[48..].iter().map(|v| v.cores[0]).collect();
    assert_eq!(node1_cores, (24..41).collect::<Vec<_>>(), "distinct cores on node 1");
}

fn hop_lists(t: &ExpectedTable) -> Vec<String> {
    t.hops.iter().map(CpuMask::to_cpulist).collect()
}

#[test]
fn r16_and_r17_hop_orders() {
    // R16: from node 1 the hops are {1}, {0,2}, {3} (levels 10/20/30 from all rows).
    let t = table(&topo("r16-row0"), "6.12");
    assert_eq!(t.numa_levels, [10, 20, 30]);
    assert_eq!(hop_lists(&t), ["2-3", "0-1,4-5", "6-7"]);
    // R17: from node 1 the hops are {1}, {0}, {2}, {3}; level 20 adds nothing for node 1.
    let t = table(&topo("r17-diameter"), "6.12");
    assert_eq!(t.numa_levels, [10, 12, 20, 22, 24]);
    assert_eq!(hop_lists(&t), ["2-3", "0-1", "", "4-5", "6-7"]);
    assert_eq!(cpus(&t)[1..], strs(&["2", "3", "0", "1", "4", "5", "6", "7"]));
}

#[test]
fn nic_without_a_node() {
    // R13/R23: NUMA_NO_NODE. 6.12: HWC = cpumask_local_spread(0, -1) = first online CPU; the
    // queues get one pass over all online CPUs (R09: hop 0 is cpu_online_mask).
    let t = topo("r23-no-node");
    let tab = table(&t, "6.12");
    assert_eq!(cpus(&tab), strs(&["0", "0-1", "2-3", "4-5", "6-7", "0-1", "2-3", "4-5", "6-7"]));
    assert_eq!(hop_lists(&tab), ["0-7"]);
    assert!(tab.vectors.iter().all(|v| v.hop == Some(0) && v.distance.is_none()));
    // 6.1: i-th online CPU. 7.x: HWC = siblings of the first online CPU.
    assert_eq!(cpus(&table(&t, "6.1"))[..3], strs(&["0", "1", "2"]));
    assert_eq!(cpus(&table(&t, "7.x"))[0], "0-1");
}

#[test]
fn nic_on_a_memory_only_node() {
    // R15 + R09 (inferred): node 2 has no CPUs → sched_numa_hop_mask(2, 0) is NULL → irq_setup
    // assigns nothing; every vector keeps irq_setup_affinity()'s default = all online CPUs
    // (node 2's cpumask is empty, so no narrowing). 6.12: nvec 65 ≤ 96, HWC included.
    let t = topo("r15-memory-only");
    let tab = table(&t, "6.12");
    assert_eq!(tab.numa_levels, [10, 21], "R15: 2 levels, max 21");
    assert!(tab.hops.is_empty());
    assert!(tab
        .vectors
        .iter()
        .all(|v| v.algorithm == Algorithm::Default && v.smp_affinity_list.to_cpulist() == "0-95"));
    // 7.x: the HWC's numa_aware call also has zero passes; queue vectors too.
    assert!(table(&t, "7.x").vectors.iter().all(|v| v.algorithm == Algorithm::Default));
    // 6.1: flat local_spread with an empty local node = i-th online CPU.
    assert_eq!(cpus(&table(&t, "6.1"))[..2], strs(&["0", "1"]));
    // Small variant: nvec 9 > 8 CPUs, so the HWC uses cpumask_local_spread(0, 3), which
    // remaps node 3 to the nearest CPU node (node 1, distance 17): CPU 4.
    let small = table(&topo("r15-memory-only-small"), "6.12");
    assert_eq!(cpus(&small)[0], "4");
    assert_eq!(small.vectors[0].distance, Some(17));
    assert!(small.vectors[1..].iter().all(|v| v.smp_affinity_list.to_cpulist() == "0-7"));
}

#[test]
fn r05_skip_first_with_dynamic_msix_and_no_skip_without() {
    // R05: HWC on {0,1}, the first queue IRQ on {2,3} (U = 9 ≤ 16 CPUs).
    let t = topo("r05-dyn-skip");
    let dynamic = table(&t, "7.x");
    assert_eq!(dynamic.vectors_allocated, 9);
    assert_eq!(cpus(&dynamic), strs(&["0-1", "2-3", "4-5", "6-7", "0-1", "2-3", "4-5", "6-7", "8-9"]));
    assert_eq!(dynamic.vectors[1].algorithm, Algorithm::NumaAwareSkipFirst);
    // Static allocation on the same machine does not skip: nvec = 17 > 16 → HWC on CPU 0,
    // queues from {0,1}.
    let stat = table(&topo_with("r05-dyn-skip", "max_msix = 9", "max_msix = 9\ndynamic_msix = false"), "7.x");
    assert_eq!(cpus(&stat)[..3], strs(&["0", "0-1", "2-3"]));
}

#[test]
fn r06_low_vcpu_linear() {
    // R06 with the fix: 4 vCPUs, 5 vectors; U = 5 > 4 → linear: queues 0, 1, 2, 3
    // (effective affinity 0, 0, 1, 2, 3 counting the HWC's effective CPU 0).
    let t = topo("r06-low-vcpu");
    let tab = table(&t, "7.x");
    assert_eq!(cpus(&tab), strs(&["0-1", "0", "1", "2", "3"]));
    assert_eq!(tab.vectors[1].algorithm, Algorithm::Linear);
    // 6.12 on the same machine: HWC via local_spread, queues by sibling group.
    assert_eq!(cpus(&table(&t, "6.12")), strs(&["0", "0-1", "2-3", "0-1", "2-3"]));
}

/// A machine of `matrix --random 8 --seed 1 --max-cpus 64` (the generator's
/// `random-s1-<index>`, SLIT and memory as generated), with `nic` as its `[nic]` table.
fn random_s1(index: u32, cpus: (u32, u32, u32), nodes: &[(&str, u32)], slit: &str, nic: &str) -> Topology {
    let (sockets, cores, threads) = cpus;
    let mut text = format!(
        "name = \"random-s1-{index}\"\n[source]\nkind = \"synthetic\"\nwording = \"random-s1-{index}\"\n\
         [cpus]\nsockets = {sockets}\ncores = {cores}\nthreads = {threads}\n"
    );
    for (list, mib) in nodes {
        text += &format!("[[numa.nodes]]\ncpus = \"{list}\"\nmemory_mib = {mib}\n");
    }
    text += &format!("{slit}\n[nic]\n{nic}\n[expect]\nverdict = \"pass\"\nsource = \"the model\"\n");
    Topology::from_toml_str("random-s1.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn random_s1_machines_on_7x_take_the_dynamic_path_qemu_x86_gives_them() {
    // The three disagreements of the 7.x-min random matrix (seed 1, 64 CPUs at most): the
    // generator wrote `dynamic_msix = false`, so the model took the static path, but
    // pci_msix_can_alloc_dyn() is true on QEMU x86 (X86_VECTOR_MSI_FLAGS_SUPPORTED, with or
    // without interrupt remapping; docs/mana-protocol.md), so 7.3.4 took the dynamic one.
    // Expected values by hand from gdma_main.c: mana_gd_setup_hwc_irqs() →
    // mana_gd_setup_irqs(nvec 1) → mana_irq_setup_numa_aware(len 1, no skip) for the HWC;
    // mana_gd_query_max_resources(): U = min(max_msix, ncpu + 1, table);
    // mana_gd_setup_dyn_irqs(): numa_aware with the skip when U ≤ ncpu, else linear.
    let two_node_slit = "[numa]\ndistances = [[10, 11], [11, 10]]";

    // random-s1-5: 3 sockets × 2 cores × 2 threads, NIC on node 0 = CPUs 0-1. HWC = the
    // first sibling group of hop 0 = 0-1; U = min(13, 13, 13) = 13 > 12 → linear. The
    // 7.x-min guest showed exactly this (mana_hwc 0-1, mana_msi1..12 on CPUs 0..11,
    // "MSI sharing mode 0 max queues 12").
    let slit = "[numa]\ndistances = [[10, 16, 16, 28, 16], [16, 10, 16, 20, 21], [16, 16, 10, 32, 16], \
                [28, 20, 32, 10, 17], [16, 21, 16, 17, 10]]";
    let nodes = [("0-1", 0), ("2-3", 256), ("4-7", 256), ("8-9", 256), ("10-11", 256)];
    let t = random_s1(5, (3, 2, 2), &nodes, slit, "numa_node = 0");
    let dynamic = table(&t, "7.x");
    let linear: Vec<String> = (0..12).map(|c| c.to_string()).collect();
    assert_eq!(cpus(&dynamic)[0], "0-1");
    assert_eq!(cpus(&dynamic)[1..], linear[..]);
    assert_eq!(dynamic.vectors[0].algorithm, Algorithm::NumaAware);
    assert!(dynamic.vectors[1..].iter().all(|v| v.algorithm == Algorithm::Linear));
    assert_eq!((dynamic.vectors_allocated, dynamic.max_num_queues), (13, 12));
    // What the matrix expected (static: nvec 13 > 12 → cpumask_local_spread(0, 0) = 0).
    let stat = table(&random_s1(5, (3, 2, 2), &nodes, slit, "numa_node = 0\ndynamic_msix = false"), "7.x");
    assert_eq!(cpus(&stat)[0], "0");

    // random-s1-3: 4 sockets × 4 cores × 2 threads, no SLIT, NIC on node 3 = CPUs 12-17.
    // HWC = siblings of CPU 12 = 12-13; U = 33 > 32 → linear (the matrix expected the
    // static path's cpumask_local_spread(0, 3) = 12).
    let nodes = [("0-5", 192), ("6-7", 192), ("8-11", 192), ("12-17", 192), ("18-19", 192), ("20-31", 0)];
    let t = random_s1(3, (4, 4, 2), &nodes, "", "numa_node = 3");
    let dynamic = table(&t, "7.x");
    let linear: Vec<String> = (0..32).map(|c| c.to_string()).collect();
    assert_eq!(cpus(&dynamic)[0], "12-13");
    assert_eq!(cpus(&dynamic)[1..], linear[..]);
    let stat = table(&random_s1(3, (4, 4, 2), &nodes, "", "numa_node = 3\ndynamic_msix = false"), "7.x");
    assert_eq!(cpus(&stat)[0], "12");

    // random-s1-0: 50 cores, no SMT, NIC on node 0 = CPUs 0-24, table 35, max_msix 6.
    // U = min(6, 51, 35) = 6 ≤ 50 → numa_aware(len 5, skip first): HWC 0, then 1..5;
    // max_num_queues = min(50, 64, U − 1) = 5. The static path would keep all 35 table
    // vectors (pci_alloc_irq_vectors(2, 51) up front), mana_msi6 included.
    let nodes = [("0-24", 0), ("25-49", 1024)];
    let nic = "numa_node = 0\nmsix_table_size = 35\nmax_msix = 6";
    let dynamic = table(&random_s1(0, (1, 50, 1), &nodes, two_node_slit, nic), "7.x");
    assert_eq!(cpus(&dynamic), strs(&["0", "1", "2", "3", "4", "5"]));
    assert!(dynamic.vectors[1..].iter().all(|v| v.algorithm == Algorithm::NumaAwareSkipFirst));
    assert_eq!((dynamic.vectors_allocated, dynamic.max_num_queues), (6, 5));
    let stat = table(&random_s1(0, (1, 50, 1), &nodes, two_node_slit, &format!("{nic}\ndynamic_msix = false")), "7.x");
    assert_eq!(stat.vectors.len(), 35);
}

/// A one-node machine with `n` CPUs and no SMT (R02's sweep).
fn flat_machine(n: u32) -> Topology {
    let text = format!(
        "name = \"r02-{n}\"\n[source]\nkind = \"synthetic\"\nid = \"R02\"\nwording = \"vCPU sweep\"\n\
         [cpus]\nsockets = 1\ncores = {n}\nthreads = 1\n[[numa.nodes]]\ncpus = \"0-{}\"\nmemory_mib = 512\n\
         [nic]\nnuma_node = 0\n[expect]\nverdict = \"pass\"\nsource = \"R02\"\n",
        n - 1
    );
    Topology::from_toml_str("r02", &text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn r02_vcpu_sweep_hwc_joins_the_spread_when_nvec_fits() {
    // R02: nvec = min(ncpu, 64) + 1. When nvec ≤ ncpu (ncpu ≥ 65) the HWC takes part in the
    // spread; otherwise it gets cpumask_local_spread(0) and shares CPU 0 with mana_q0.
    for n in [2u32, 4, 8, 63, 64, 65, 96] {
        let tab = table(&flat_machine(n), "6.12");
        let nvec = n.min(64) + 1;
        assert_eq!(tab.vectors_allocated, nvec, "{n} CPUs");
        let joins = nvec <= n;
        assert_eq!(tab.vectors[0].algorithm == Algorithm::IrqSetup, joins, "{n} CPUs");
        let queues: Vec<&CpuMask> = tab.vectors[1..].iter().map(|v| &v.smp_affinity_list).collect();
        let distinct = queues.iter().collect::<std::collections::HashSet<_>>().len();
        assert_eq!(distinct, queues.len(), "{n} CPUs: queue IRQs are on distinct CPUs");
        if joins {
            assert_ne!(tab.vectors[0].smp_affinity_list, tab.vectors[1].smp_affinity_list, "{n}");
        } else {
            assert_eq!(cpus(&tab)[..2], strs(&["0", "0"]), "{n} CPUs: IRQ0 and IRQ1 share a CPU");
        }
    }
}

#[test]
fn probe_fails_without_enough_vectors() {
    // pci_alloc_irq_vectors(pdev, 2, …) needs 2 vectors on 6.x; num_msix_usable ≤ 1 → -ENOSPC.
    let t = topo_with("seed-002", "numa_node = 0", "numa_node = 0\nmsix_table_size = 1");
    assert!(table(&t, "6.12").probe_error.is_some());
    assert!(table(&t, "7.x").probe_error.is_some(), "U = min(max_msix, 9, 1) = 1");
    let t = topo_with("seed-002", "numa_node = 0", "numa_node = 0\nmax_msix = 1");
    assert!(table(&t, "6.1").probe_error.is_some());
    assert!(table(&t, "6.1").vectors.is_empty());
}

#[test]
fn every_topology_file_loads_and_gives_a_table_for_every_kernel() {
    let dir = format!("{}/../topologies", env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    // topologies/arm64/: the arm64 guests' machines, kept apart from the x86
    // matrices' folder.
    let arm64 = std::fs::read_dir(format!("{dir}/arm64")).expect("topologies/arm64/");
    for entry in std::fs::read_dir(&dir).expect("topologies/").chain(arm64) {
        let p = entry.expect("entry").path();
        if p.extension().is_some_and(|e| e == "toml") {
            let t = Topology::load(&p).unwrap_or_else(|e| panic!("{e}"));
            assert!(!t.source().wording.is_empty() && !t.expect().source.is_empty(), "{}", p.display());
            assert_eq!(t.slow(), t.ncpu() >= 96, "{}: 96+ vCPUs are marked slow", p.display());
            // Every file boots as written: its node ids are the ones a guest on x86 shows.
            t.check_guest_node_ids(&p.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
            for k in KernelGen::ALL {
                let tab = expected_table(&t, k);
                assert!(tab.probe_error.is_none(), "{} {k}", p.display());
                assert!(!tab.to_text().is_empty());
            }
            n += 1;
        }
    }
    assert!(n >= 12, "only {n} topology files");
}

#[test]
fn json_has_cpulists_and_masks() {
    let tab = table(&topo("seed-002"), "6.12");
    let v: serde_json::Value = serde_json::to_value(&tab).expect("json");
    assert_eq!(v["kernel"], "6.12");
    assert_eq!(v["vectors"][1]["smp_affinity_list"], "0-1");
    assert_eq!(v["vectors"][1]["smp_affinity"], "03");
    assert_eq!(v["vectors"][1]["name"], "mana_q0@pci:{bdf}");
    assert_eq!(v["vectors"][1]["algorithm"], "irq-setup");
    assert_eq!(v["hops"][1], "4-7");
}
