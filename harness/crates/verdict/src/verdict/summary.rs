//! Reviewers' questions answered from the guest's `effective_affinity_list`: where did
//! each IRQ actually land?
//!
//! An x86 MSI vector is delivered to one CPU, its effective affinity. Without interrupt
//! remapping the kernel applies an affinity change when the vector next fires
//! (`CONFIG_GENERIC_PENDING_IRQ`), so `effective_affinity_list` is only meaningful after
//! the vector has fired once; vectors with no interrupts are listed, not counted.

use super::geometry::Geometry;
use super::row::VectorRow;
use crate::cpulist::CpuMask;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// IRQs whose effective CPU is on one NUMA node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeCount {
    /// Node id.
    pub node: u32,
    /// MANA IRQs delivered to its CPUs.
    pub irqs: u32,
}

/// IRQs whose effective CPU is on one physical core.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoreCount {
    /// Physical core id (`(socket * dies + die) * cores + core`).
    pub core: u32,
    /// The core's node.
    pub node: Option<u32>,
    /// Its SMT sibling group (`topology_sibling_cpumask`), guest CPU ids.
    pub cpus: CpuMask,
    /// MANA IRQs delivered to it.
    pub irqs: u32,
}

/// A core where two or more SMT siblings each receive a MANA IRQ (Michael Kelley's
/// question in seed 000: does `irq_setup()` keep IRQs off both hyper-threads?).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiblingShare {
    /// Physical core id.
    pub core: u32,
    /// The siblings that receive IRQs.
    pub cpus: CpuMask,
    /// The IRQs (short names), by CPU, then MSI-X index.
    pub irqs: Vec<String>,
}

/// An IRQ delivered outside the NIC's node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteIrq {
    /// Short IRQ name.
    pub name: String,
    /// Linux IRQ number.
    pub irq: u32,
    /// Effective CPU.
    pub cpu: u32,
    /// Its node.
    pub node: Option<u32>,
    /// Hop from the NIC's node (`for_each_numa_hop_mask` order, 0 = the NIC's node).
    pub hop: Option<u32>,
    /// `node_distance(nic node, node)`.
    pub distance: Option<u32>,
}

/// The compact answer block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// MANA IRQs the guest shows.
    pub vectors: u32,
    /// Of those, how many fired (their effective CPU is counted below).
    pub fired: u32,
    /// Short names of IRQs that never fired (effective CPU not yet meaningful).
    pub not_fired: Vec<String>,
    /// The NIC's node (`None` = NUMA_NO_NODE).
    pub nic_node: Option<u32>,
    /// Threads per core (1 = no SMT).
    pub threads_per_core: u32,
    /// IRQs per node, every node with CPUs.
    pub per_node: Vec<NodeCount>,
    /// IRQs per physical core, every core.
    pub per_core: Vec<CoreCount>,
    /// Cores where two or more siblings each receive an IRQ.
    pub both_siblings: Vec<SiblingShare>,
    /// IRQs delivered outside the NIC's node (empty for NUMA_NO_NODE).
    pub remote: Vec<RemoteIrq>,
}

impl Summary {
    pub(super) fn new(geo: &Geometry<'_>, nic_node: Option<u32>, rows: &[VectorRow]) -> Self {
        let guest = &geo.guest;
        let mut cores: BTreeMap<u32, CoreCount> = BTreeMap::new();
        for cpu in 0..guest.ncpu() {
            cores.entry(guest.core_of(cpu)).or_insert_with(|| CoreCount {
                core: guest.core_of(cpu),
                node: guest.node_of(cpu),
                cpus: guest.siblings(cpu).clone(),
                irqs: 0,
            });
        }
        let mut nodes: BTreeMap<u32, u32> =
            guest.nodes().iter().filter(|n| !n.cpus.is_empty()).map(|n| (n.id, 0)).collect();
        let mut per_cpu: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        let mut summary = Self {
            vectors: 0,
            fired: 0,
            not_fired: Vec::new(),
            nic_node,
            threads_per_core: guest.shape().threads,
            per_node: Vec::new(),
            per_core: Vec::new(),
            both_siblings: Vec::new(),
            remote: Vec::new(),
        };
        for row in rows {
            let Some(o) = &row.observed else { continue };
            summary.vectors += 1;
            let Some(cpu) = row.effective_cpu() else {
                summary.not_fired.push(row.name.clone());
                continue;
            };
            summary.fired += 1;
            if cpu >= guest.ncpu() {
                continue;
            }
            let node = guest.node_of(cpu);
            if let Some(c) = cores.get_mut(&guest.core_of(cpu)) {
                c.irqs += 1;
            }
            if let Some(n) = node.and_then(|n| nodes.get_mut(&n)) {
                *n += 1;
            }
            per_cpu.entry(cpu).or_default().push(row.name.clone());
            if let Some(nic) = nic_node.filter(|&nic| node != Some(nic)) {
                summary.remote.push(RemoteIrq {
                    name: row.name.clone(),
                    irq: o.irq,
                    cpu,
                    node,
                    hop: geo.hop(&CpuMask::single(cpu)),
                    distance: node.map(|n| guest.distance(nic, n)),
                });
            }
        }
        for core in cores.values() {
            let hit: CpuMask = core.cpus.iter().filter(|c| per_cpu.contains_key(c)).collect();
            if hit.count() >= 2 {
                let irqs = hit.iter().flat_map(|c| per_cpu[&c].iter().cloned()).collect();
                summary.both_siblings.push(SiblingShare { core: core.core, cpus: hit, irqs });
            }
        }
        summary.per_node = nodes.into_iter().map(|(node, irqs)| NodeCount { node, irqs }).collect();
        summary.per_core = cores.into_values().collect();
        summary
    }

    /// Cores that receive at least one IRQ.
    pub fn cores_with_irqs(&self) -> usize {
        self.per_core.iter().filter(|c| c.irqs > 0).count()
    }
}
