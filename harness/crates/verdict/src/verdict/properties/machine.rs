//! The guest machine as the properties see it: online CPUs, sibling groups (cores),
//! and NUMA hops from the NIC's node by SLIT distance.

use crate::cpulist::CpuMask;
use crate::model::effective_slit;
use crate::topology::Topology;
use std::collections::BTreeMap;

/// A core: its physical id and its SMT sibling group (guest CPU ids).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Core {
    pub(super) id: u32,
    pub(super) cpus: CpuMask,
}

/// Guest-numbered facts the properties need.
pub(super) struct Machine {
    pub(super) guest: Topology,
    pub(super) online: CpuMask,
    /// CPUs each hop adds, nearest first; one hop of every online CPU for NUMA_NO_NODE.
    pub(super) hops: Vec<CpuMask>,
}

impl Machine {
    /// `topo` in either numbering (the guest's is derived; deriving it twice is a no-op).
    ///
    /// Hop k = the CPU nodes at the k-th smallest `node_distance(nic, node)` (the SLIT
    /// as Linux x86 accepts it, `effective_slit`). For a NIC node with CPUs these are
    /// exactly the CPUs `for_each_numa_hop_mask()` adds at each step
    /// (include/linux/topology.h; `sched_init_numa()` levels with no node at a level's
    /// distance add nothing and are left out). For a memory-only NIC node the kernel's
    /// iterator yields nothing; the same distance rule still says which CPUs are near.
    pub(super) fn new(topo: &Topology, nic_node: Option<u32>) -> Self {
        let guest = topo.to_qemu_numbering();
        let online = guest.online();
        let hops = match nic_node {
            None => vec![online.clone()],
            Some(nic) => {
                let slit = effective_slit(guest.distances());
                let dist = |n: u32| slit.get(nic as usize).and_then(|r| r.get(n as usize)).copied().unwrap_or(u32::MAX);
                let mut by_distance: BTreeMap<u32, CpuMask> = BTreeMap::new();
                for node in guest.nodes().iter().filter(|n| !n.cpus.is_empty()) {
                    by_distance.entry(dist(node.id)).or_default().or_assign(&node.cpus.and(&online));
                }
                by_distance.into_values().collect()
            }
        };
        Self { guest, online, hops }
    }

    /// The hop that holds `cpu`.
    pub(super) fn hop_of(&self, cpu: u32) -> Option<usize> {
        self.hops.iter().position(|h| h.contains(cpu))
    }

    /// The farthest hop any CPU of `mask` is in (`None` if one is in no hop).
    pub(super) fn farthest_hop(&self, mask: &CpuMask) -> Option<usize> {
        mask.iter().map(|c| self.hop_of(c)).try_fold(0, |far, h| h.map(|h| far.max(h)))
    }

    /// The core whose sibling group holds all of `mask`, if one does.
    pub(super) fn core_holding(&self, mask: &CpuMask) -> Option<Core> {
        let first = mask.first().filter(|&c| c < self.guest.ncpu())?;
        let cpus = self.guest.siblings(first).and(&self.online);
        mask.is_subset(&cpus).then(|| Core { id: self.guest.core_of(first), cpus })
    }

    /// The cores of hop `h`, by core id.
    pub(super) fn cores_of_hop(&self, h: usize) -> Vec<Core> {
        let mut cores: BTreeMap<u32, CpuMask> = BTreeMap::new();
        for cpu in self.hops.get(h).into_iter().flat_map(CpuMask::iter) {
            cores.entry(self.guest.core_of(cpu)).or_insert_with(|| self.guest.siblings(cpu).and(&self.online));
        }
        cores.into_iter().map(|(id, cpus)| Core { id, cpus }).collect()
    }

    /// `2-3 (node 0, core 1, hop 0)`.
    pub(super) fn describe(&self, mask: &CpuMask) -> String {
        let list = if mask.is_empty() { "(empty)".to_owned() } else { mask.to_cpulist() };
        let nodes: CpuMask = self.guest.nodes().iter().filter(|n| n.cpus.intersects(mask)).map(|n| n.id).collect();
        let cores: CpuMask = mask.iter().filter(|&c| c < self.guest.ncpu()).map(|c| self.guest.core_of(c)).collect();
        let hop = self.farthest_hop(mask).map_or("no hop".to_owned(), |h| format!("hop {h}"));
        // Id sets in cpulist form (`0-47`), which keeps a whole-machine mask short.
        let ids = |v: &CpuMask, one: &str| match v.count() {
            0 => format!("no {one}"),
            1 => format!("{one} {v}"),
            _ => format!("{one}s {v}"),
        };
        format!("{list} ({}, {}, {hop})", ids(&nodes, "node"), ids(&cores, "core"))
    }
}
