//! MANA's MSI-X vector accounting per kernel generation: how many vectors, which code
//! sets each one's affinity, and what the vectors are called.

use super::irq_setup::{irq_setup, irq_setup_linear, irq_setup_numa_aware};
use super::kernel::KernelGen;
use super::numa::{effective_slit, NumaLevels};
use super::spread::{local_spread_flat, local_spread_hops};
use super::table::{Algorithm, ExpectedTable, ExpectedVector, BDF_PLACEHOLDER};
use crate::cpulist::CpuMask;
use crate::topology::Topology;

/// MANA_MAX_NUM_QUEUES (include/net/mana/gdma.h).
const MANA_MAX_NUM_QUEUES: u32 = 64;

/// The vectors MANA has after probe and where their affinity comes from.
struct Plan {
    vectors: Vec<(Algorithm, CpuMask)>,
    allocated: u32,
    max_num_queues: u32,
    probe_error: Option<String>,
}

impl Plan {
    fn failed(allocated: u32, error: String) -> Self {
        Self { vectors: Vec::new(), allocated, max_num_queues: 0, probe_error: Some(error) }
    }
}

/// The kernel's default for a vector MANA does not set.
///
/// Models `irq_setup_affinity()` in kernel/irq/manage.c (Linux 4.x–7.x; Debian 6.1.192
/// and 6.12.117 read) for a non-managed MSI-X vector: `irq_default_affinity` ∩ online
/// CPUs (all online CPUs when that is empty), narrowed to the device node's CPUs when
/// they intersect. `irq_default_affinity` is all CPUs unless the guest got
/// `irqaffinity=` ([`Topology::irq_default_affinity`]).
pub fn default_affinity(numa: &NumaLevels, node: Option<u32>, irq_default_affinity: &CpuMask) -> CpuMask {
    let online = numa.online().clone();
    let mut mask = online.and(irq_default_affinity);
    if mask.is_empty() {
        mask = online;
    }
    match node {
        Some(n) if numa.node_cpus(n).intersects(&mask) => mask.and(numa.node_cpus(n)),
        _ => mask,
    }
}

/// `max_num_queues` from GDMA_QUERY_MAX_RESOURCES: min(ncpu, 64, max_eq/cq/sq/rq,
/// num_msix_usable − 1) (`mana_gd_query_max_resources()`, all three kernels).
fn max_num_queues(topo: &Topology, ncpu: u32, usable: u32) -> u32 {
    ncpu.min(MANA_MAX_NUM_QUEUES).min(topo.nic().max_queues).min(usable.saturating_sub(1))
}

/// Fill `len` vectors from a list of masks; the rest keep the default affinity.
fn fill(out: &mut Vec<(Algorithm, CpuMask)>, masks: Vec<CpuMask>, len: usize, alg: Algorithm, default: &CpuMask) {
    let n = masks.len();
    out.extend(masks.into_iter().map(|m| (alg, m)));
    out.extend((n..len).map(|_| (Algorithm::Default, default.clone())));
}

/// Static MSI-X: `pci_alloc_irq_vectors(pdev, 2, min(ncpu, 64) + 1, PCI_IRQ_MSIX)`.
///
/// Models gdma_main.c `mana_gd_setup_irqs()` (Debian 6.1.192 and 6.12.117) and, for
/// `gen = V7`, `mana_gd_setup_hwc_irqs()` + `mana_gd_setup_irqs()` without dynamic MSI-X
/// (Debian 7.3.4). 6.1: vector i → `cpumask_local_spread(i, node)` (flat), HWC included.
/// 6.3 (Linux 6.3–6.8, `mana_gd_setup_irqs()` unchanged since 6.1): the same loop over
/// the hop-aware `cpumask_local_spread()`. 6.12/7.x: if nvec > ncpu the HWC vector gets `cpumask_local_spread(0, node)` and the
/// other nvec − 1 go through `irq_setup()`; otherwise all nvec do (the HWC joins the
/// spread, R02).
fn static_plan(topo: &Topology, numa: &NumaLevels, gen: KernelGen) -> Plan {
    let ncpu = numa.online().count();
    let node = topo.nic().node;
    let table = topo.nic().msix_table_size;
    let want = ncpu.min(MANA_MAX_NUM_QUEUES) + 1;
    if table < 2 {
        return Plan::failed(0, format!("pci_alloc_irq_vectors(2, {want}) fails: the MSI-X table has {table} entry"));
    }
    let nvec = table.min(want);
    let usable = nvec.min(topo.nic().max_msix);
    if usable <= 1 {
        return Plan::failed(
            nvec,
            format!("num_msix_usable = min(nvec {nvec}, max_msix {}) <= 1: -ENOSPC", topo.nic().max_msix),
        );
    }
    let siblings = |cpu: u32| topo.siblings(cpu).and(numa.online());
    let default = default_affinity(numa, node, &topo.irq_default_affinity());
    let mut vectors = Vec::with_capacity(nvec as usize);
    if matches!(gen, KernelGen::V6_1 | KernelGen::V6_3) {
        let hops = gen == KernelGen::V6_3;
        let alg = if hops { Algorithm::LocalSpreadHops } else { Algorithm::LocalSpreadFlat };
        for i in 0..nvec {
            let cpu = if hops { local_spread_hops(numa, i, node) } else { local_spread_flat(numa, i, node) };
            match cpu {
                Some(cpu) => vectors.push((alg, CpuMask::single(cpu))),
                None => vectors.push((Algorithm::Default, default.clone())),
            }
        }
    } else {
        let alg = if gen == KernelGen::V6_12 { Algorithm::IrqSetup } else { Algorithm::NumaAware };
        let start = if nvec <= ncpu { 0 } else { 1 };
        if start == 1 {
            match local_spread_hops(numa, 0, node) {
                Some(cpu) => vectors.push((Algorithm::LocalSpreadHops, CpuMask::single(cpu))),
                None => vectors.push((Algorithm::Default, default.clone())),
            }
        }
        let len = (nvec - start) as usize;
        fill(&mut vectors, irq_setup(numa, &siblings, len, node), len, alg, &default);
    }
    Plan { vectors, allocated: nvec, max_num_queues: max_num_queues(topo, ncpu, usable), probe_error: None }
}

/// Dynamic MSI-X (7.x on QEMU x86).
///
/// Models gdma_main.c `mana_gd_setup_hwc_irqs()` (one vector, set up with
/// `mana_irq_setup_numa_aware(len 1, no skip)`: the first sibling group of the first
/// non-empty hop), `mana_gd_query_max_resources()` (U = min(max_msix, ncpu + 1, MSI-X
/// table size); U ≤ 1 → -ENOSPC) and `mana_gd_setup_remaining_irqs()` →
/// `mana_gd_setup_dyn_irqs()` (vectors 1..U−1: `mana_irq_setup_numa_aware(skip first)`
/// when U ≤ ncpu, else `mana_irq_setup_linear()`), Linux 6.17–7.x, Debian 7.3.4.
fn dynamic_plan(topo: &Topology, numa: &NumaLevels) -> Plan {
    let ncpu = numa.online().count();
    let node = topo.nic().node;
    let nic = topo.nic();
    let siblings = |cpu: u32| topo.siblings(cpu).and(numa.online());
    let default = default_affinity(numa, node, &topo.irq_default_affinity());
    let mut vectors = Vec::new();
    fill(&mut vectors, irq_setup_numa_aware(numa, &siblings, 1, node, false), 1, Algorithm::NumaAware, &default);
    let usable = nic.max_msix.min(ncpu + 1).min(nic.msix_table_size);
    if usable <= 1 {
        return Plan::failed(
            1,
            format!(
                "num_msix_usable = min(max_msix {}, ncpu + 1 = {}, table {}) <= 1: -ENOSPC",
                nic.max_msix,
                ncpu + 1,
                nic.msix_table_size
            ),
        );
    }
    let len = (usable - 1) as usize;
    if usable <= ncpu {
        let masks = irq_setup_numa_aware(numa, &siblings, len, node, true);
        fill(&mut vectors, masks, len, Algorithm::NumaAwareSkipFirst, &default);
    } else {
        fill(&mut vectors, irq_setup_linear(numa, len), len, Algorithm::Linear, &default);
    }
    Plan { vectors, allocated: usable, max_num_queues: max_num_queues(topo, ncpu, usable), probe_error: None }
}

fn vector_name(gen: KernelGen, index: u32) -> String {
    match (index, gen) {
        (0, _) => format!("mana_hwc@pci:{BDF_PLACEHOLDER}"),
        (i, KernelGen::V7) => format!("mana_msi{i}@pci:{BDF_PLACEHOLDER}"),
        (i, _) => format!("mana_q{}@pci:{BDF_PLACEHOLDER}", i - 1),
    }
}

/// The scheduler's view of a topology when mana probes: its online CPUs
/// ([`Topology::probe_online`]), nodes and SLIT (after x86's `slit_valid()` check).
pub fn numa_levels(topo: &Topology) -> NumaLevels {
    numa_levels_at(topo, &topo.probe_online())
}

/// The scheduler's view with `online` as `cpu_online_mask`: the hop masks hold online
/// CPUs only (`sched_domains_numa_masks_set()`/`_clear()` on CPU (de)activation, and
/// `sched_update_numa()` rebuilds the levels when a node gains its first or loses its
/// last CPU; kernel/sched/topology.c, Linux 5.18–7.x).
pub fn numa_levels_at(topo: &Topology, online: &CpuMask) -> NumaLevels {
    let node_cpus: Vec<CpuMask> = topo.nodes().iter().map(|n| n.cpus.clone()).collect();
    let distances: Vec<Vec<u32>> = topo.distances().to_vec();
    NumaLevels::build(&node_cpus, &effective_slit(&distances), online)
}

/// The expected `/proc/irq` table of a MANA device on `topo` under kernel `gen`.
///
/// Vector counts: 6.x and 7.x without dynamic MSI-X allocate
/// `min(table, min(ncpu, 64) + 1)` vectors up front (at least 2, else the probe fails);
/// 7.x with dynamic MSI-X allocates the HWC vector, then `U − 1` more with
/// `U = min(max_msix, ncpu + 1, table)`. Names: `mana_hwc@pci:{bdf}` for vector 0;
/// `mana_q{k}@pci:{bdf}` for vector k + 1 on 6.x; `mana_msi{k}@pci:{bdf}` for vector k
/// on 7.x. CPU ids are the topology's own (see [`Topology::to_qemu_numbering`] for a QEMU
/// guest's view).
pub fn expected_table(topo: &Topology, gen: KernelGen) -> ExpectedTable {
    let numa = numa_levels(topo);
    let plan = if gen == KernelGen::V7 && topo.nic().dynamic_msix {
        dynamic_plan(topo, &numa)
    } else {
        static_plan(topo, &numa, gen)
    };
    let vectors = plan
        .vectors
        .into_iter()
        .map(|(algorithm, mask)| {
            let hint = (algorithm != Algorithm::Default).then(|| mask.clone());
            (algorithm, mask, hint)
        })
        .collect();
    let shape =
        TableShape { allocated: plan.allocated, max_num_queues: plan.max_num_queues, probe_error: plan.probe_error };
    describe(topo, gen, &numa, vectors, shape)
}

/// The parts of an [`ExpectedTable`] that CPU hotplug does not change.
pub(super) struct TableShape {
    pub(super) allocated: u32,
    pub(super) max_num_queues: u32,
    pub(super) probe_error: Option<String>,
}

impl TableShape {
    pub(super) fn of(t: &ExpectedTable) -> Self {
        Self { allocated: t.vectors_allocated, max_num_queues: t.max_num_queues, probe_error: t.probe_error.clone() }
    }
}

/// The table for vectors given as (who set it, `smp_affinity_list`, `affinity_hint`),
/// by MSI-X index, on the CPUs `numa` has online.
pub(super) fn describe(
    topo: &Topology,
    gen: KernelGen,
    numa: &NumaLevels,
    vectors: Vec<(Algorithm, CpuMask, Option<CpuMask>)>,
    shape: TableShape,
) -> ExpectedTable {
    let node = topo.nic().node;
    let hop_masks = numa.hop_masks(node);
    let mut prev = CpuMask::new();
    let hops = hop_masks
        .iter()
        .map(|m| {
            let fresh = m.andnot(&prev);
            prev = (*m).clone();
            fresh
        })
        .collect();
    let nr_cpu_ids = topo.ncpu();
    let vectors = vectors
        .into_iter()
        .enumerate()
        .map(|(i, (algorithm, mask, hint))| {
            let nodes: Vec<u32> = topo.nodes().iter().filter(|n| n.cpus.intersects(&mask)).map(|n| n.id).collect();
            let mut cores: Vec<u32> = mask.iter().map(|c| topo.core_of(c)).collect();
            cores.sort_unstable();
            cores.dedup();
            ExpectedVector {
                msix_index: i as u32,
                name: vector_name(gen, i as u32),
                queue: (i as u32).checked_sub(1),
                smp_affinity: mask.to_mask_string(nr_cpu_ids),
                hop: hop_masks.iter().position(|h| mask.is_subset(h)).map(|h| h as u32),
                distance: node.map(|n| nodes.iter().map(|&k| numa.distance(n, k)).max().unwrap_or(0)),
                nodes,
                cores,
                smp_affinity_list: mask,
                algorithm,
                hint,
            }
        })
        .collect();
    ExpectedTable {
        topology: topo.name().to_owned(),
        kernel: gen,
        debian_version: gen.debian_version(),
        model: gen.algorithm(),
        online_cpus: numa.online().count(),
        nr_cpu_ids,
        nic_node: node,
        numa_levels: numa.levels().to_vec(),
        hops,
        msix_table_size: topo.nic().msix_table_size,
        vectors_allocated: shape.allocated,
        max_num_queues: shape.max_num_queues,
        probe_error: shape.probe_error,
        vectors,
    }
}
