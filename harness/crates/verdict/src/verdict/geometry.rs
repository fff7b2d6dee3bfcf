//! CPU-set facts in the guest's numbering (nodes, cores, NUMA hops of a cpumask), and the
//! file-numbering bridge for topologies that number CPUs differently from QEMU.

use crate::cpulist::CpuMask;
use crate::topology::{CpuNumbering, Topology};

/// CPU-set facts in the guest's numbering: nodes, cores and hops of a cpumask.
pub(super) struct Geometry<'a> {
    /// The topology as the guest numbers it.
    pub(super) guest: Topology,
    /// The topology file as written.
    pub(super) file: &'a Topology,
    /// CPUs each hop adds.
    pub(super) hops: &'a [CpuMask],
}

impl<'a> Geometry<'a> {
    pub(super) fn new(file: &'a Topology, hops: &'a [CpuMask]) -> Self {
        Self { guest: file.to_qemu_numbering(), file, hops }
    }

    /// CPUs of `mask` that exist on the machine (odd guest data must not index past it).
    fn in_machine<'m>(&'m self, mask: &'m CpuMask) -> impl Iterator<Item = u32> + 'm {
        let n = self.guest.ncpu();
        mask.iter().take_while(move |&c| c < n)
    }

    pub(super) fn nodes(&self, mask: &CpuMask) -> Vec<u32> {
        self.guest.nodes().iter().filter(|n| n.cpus.intersects(mask)).map(|n| n.id).collect()
    }

    pub(super) fn cores(&self, mask: &CpuMask) -> Vec<u32> {
        let mut cores: Vec<u32> = self.in_machine(mask).map(|c| self.guest.core_of(c)).collect();
        cores.sort_unstable();
        cores.dedup();
        cores
    }

    /// First hop whose cumulative CPUs contain `mask`.
    pub(super) fn hop(&self, mask: &CpuMask) -> Option<u32> {
        let mut seen = CpuMask::new();
        for (i, h) in self.hops.iter().enumerate() {
            seen.or_assign(h);
            if mask.is_subset(&seen) {
                return u32::try_from(i).ok();
            }
        }
        None
    }

    /// The set in the file's numbering, when that differs from the guest's.
    pub(super) fn file_cpus(&self, mask: &CpuMask) -> Option<CpuMask> {
        (self.file.numbering() != CpuNumbering::Qemu)
            .then(|| self.in_machine(mask).map(|c| self.file.cpu_of_qemu_index(c)).collect())
    }

    /// `2-3 (node 0, hop 0)`.
    pub(super) fn describe(&self, mask: &CpuMask) -> String {
        let list = if mask.is_empty() { "(empty)".to_owned() } else { mask.to_cpulist() };
        let node_ids = self.nodes(mask);
        let nodes = match node_ids.len() {
            0 => "no node".to_owned(),
            1 => format!("node {}", node_ids[0]),
            _ => format!("nodes {}", ids(&node_ids)),
        };
        let hop = self.hop(mask).map_or("no hop".to_owned(), |h| format!("hop {h}"));
        format!("{list} ({nodes}, {hop})")
    }
}

/// A list of ids in cpulist form (`0-3,8`).
pub(super) fn ids(v: &[u32]) -> String {
    v.iter().copied().collect::<CpuMask>().to_cpulist()
}
