//! The node ids a guest shows for a machine, and the check that a file uses them.
//!
//! Linux on x86 numbers ACPI proximity domains in the order it first meets them
//! (drivers/acpi/numa/srat.c `acpi_map_pxm_to_node()`, Linux 2.6–7.x): `acpi_numa_init()`
//! walks the SRAT's processor (local APIC and x2APIC) entries first, in table order, then
//! its memory entries. QEMU's x86 SRAT lists one processor entry per possible CPU by CPU
//! index, then the memory ranges node by node. So the guest's node 0 is the node of QEMU
//! CPU 0, the next id goes to the node of the first CPU index not yet placed, and the
//! memory-only nodes follow in the file's order. A file in another order describes the
//! same machine under ids the guest does not show: the model can judge it (it predicts
//! the real machine), but a boot cannot match it node for node.
//!
//! The rule is x86's: an arm64 guest (QEMU `virt`, `[machine] arch = "arm64"`) gets no
//! check and no renumbering here ([`Topology::check_guest_node_ids`],
//! [`TopologyDraft::into_guest_node_order`]) until its own order is established; a rule
//! for it goes into those two `match`es.

use super::numbering::{CpuNumbering, CpuShape};
use super::{Arch, Topology, TopologyDraft, TopologyError};
use crate::cpulist::CpuMask;
use std::fmt;

/// The file's node indices in the order Linux on x86 numbers the nodes: `order[j]` is
/// the file's node that the guest shows as node `j`. Nodes with CPUs come first, by
/// their lowest QEMU CPU index; memory-only nodes (empty `cpus`) follow in file order.
pub(crate) fn x86_order<'a>(
    shape: CpuShape,
    numbering: CpuNumbering,
    nodes: impl IntoIterator<Item = &'a CpuMask>,
) -> Vec<usize> {
    let first: Vec<Option<u32>> = nodes
        .into_iter()
        .map(|cpus| cpus.iter().map(|c| shape.qemu_index(shape.location(numbering, c))).min())
        .collect();
    let mut order: Vec<usize> = (0..first.len()).collect();
    order.sort_by_key(|&i| (first[i].is_none(), first[i], i));
    order
}

/// One node whose id a guest on x86 would show differently from the file's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenumberedNode {
    /// The node's id in the file.
    pub declared: u32,
    /// The id the guest gives it.
    pub guest: u32,
    /// Its CPUs in the file's numbering (empty: a memory-only node).
    pub cpus: CpuMask,
    /// Its lowest QEMU CPU index (what orders it), when the file numbers CPUs otherwise
    /// than QEMU (`linux-smt-outer`) and the node has CPUs.
    pub first_qemu_cpu: Option<u32>,
}

/// How a guest on x86 would renumber a file's nodes (see [`Topology::x86_node_ids`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRenumbering {
    /// The file's node ids in the guest's order: node `order[j]` becomes node `j`.
    pub order: Vec<u32>,
    /// The nodes whose id changes, by their id in the file.
    pub moved: Vec<RenumberedNode>,
}

impl fmt::Display for NodeRenumbering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let moved: Vec<String> = self
            .moved
            .iter()
            .map(|n| {
                let what = match (n.cpus.is_empty(), n.first_qemu_cpu) {
                    (true, _) => "memory-only".to_owned(),
                    (false, None) => n.cpus.named(),
                    (false, Some(q)) => format!("{}, QEMU CPU {q} first", n.cpus.named()),
                };
                format!("node {} ({what}) as node {}", n.declared, n.guest)
            })
            .collect();
        let order: Vec<String> = self.order.iter().map(u32::to_string).collect();
        write!(
            f,
            "a guest on x86 would show {} (Linux numbers nodes in the order it meets them in \
             QEMU's SRAT: nodes with CPUs by their first CPU, QEMU's numbering, then memory-only \
             nodes); the rig compares the guest's node ids with the file's, so this file cannot \
             boot as written (the model, `expect`, takes it); renumber the nodes so that the \
             nodes with CPUs come first in the order of their first CPU and the memory-only \
             nodes last: list the [[numa.nodes]] entries now numbered {} in that order, and \
             move the rows and columns of numa.distances and every nic numa_node with them",
            moved.join(", "),
            order.join(", ")
        )
    }
}

impl Topology {
    /// The file's node ids in the order Linux on x86 numbers this machine's nodes:
    /// `order[j]` is the node the guest shows as node `j` (see the module doc of
    /// `node_order`). The identity when the file is written in that order.
    pub fn x86_node_order(&self) -> Vec<u32> {
        let order = x86_order(self.spec.shape, self.spec.numbering, self.spec.nodes.iter().map(|n| &n.cpus));
        order.into_iter().filter_map(|i| u32::try_from(i).ok()).collect()
    }

    /// Whether a guest on QEMU x86 shows this machine's nodes under the file's ids.
    ///
    /// # Errors
    /// The [`NodeRenumbering`] the guest would apply: which declared node it shows under
    /// which id, and the order to write the nodes in.
    pub fn x86_node_ids(&self) -> Result<(), NodeRenumbering> {
        let order = self.x86_node_order();
        let qemu = self.spec.numbering != CpuNumbering::Qemu;
        let mut moved: Vec<RenumberedNode> = order
            .iter()
            .zip(0u32..)
            .filter(|(declared, guest)| *declared != guest)
            .map(|(&declared, guest)| {
                let cpus = self.node_cpus(declared);
                let first_qemu_cpu = if qemu { self.qemu_node_cpus(declared).first() } else { None };
                RenumberedNode { declared, guest, cpus, first_qemu_cpu }
            })
            .collect();
        if moved.is_empty() {
            return Ok(());
        }
        moved.sort_by_key(|n| n.declared);
        Err(NodeRenumbering { order, moved })
    }

    /// Whether a guest of the machine's architecture shows its nodes under the file's
    /// ids, for a run about to boot it: [`Topology::x86_node_ids`] on x86_64; nothing is
    /// checked on arm64. `path` names the file.
    ///
    /// # Errors
    /// [`TopologyError::NodeOrder`] naming the file, the nodes a guest would renumber and
    /// the order that fixes the file.
    pub fn check_guest_node_ids(&self, path: &str) -> Result<(), TopologyError> {
        let checked = match self.arch() {
            Arch::X86_64 => self.x86_node_ids(),
            Arch::Arm64 => Ok(()),
        };
        checked.map_err(|renumbering| TopologyError::NodeOrder { path: path.to_owned(), renumbering })
    }
}

impl TopologyDraft {
    /// [`Topology::x86_node_order`] of the draft, as indices into `nodes`.
    pub fn x86_node_order(&self) -> Vec<usize> {
        x86_order(self.shape, self.numbering, self.nodes.iter().map(|n| &n.cpus))
    }

    /// The same machine with node `order[j]` as node `j`: its CPUs and memory, the
    /// SLIT's rows and columns and every NIC's node move with it. `order` must be a
    /// permutation of the node indices (as [`TopologyDraft::x86_node_order`] gives);
    /// a NIC on a node `order` leaves out ends up on no node.
    pub fn relabel_nodes(&mut self, order: &[usize]) {
        let new_id = |old: u32| order.iter().position(|&o| o == old as usize).and_then(|j| u32::try_from(j).ok());
        self.nodes = order.iter().filter_map(|&o| self.nodes.get(o).cloned()).collect();
        if let Some(d) = &self.distances {
            let cell = |a: usize, b: usize| {
                d.get(a).and_then(|row| row.get(b)).copied().unwrap_or(if a == b { 10 } else { 20 })
            };
            self.distances = Some(order.iter().map(|&a| order.iter().map(|&b| cell(a, b)).collect()).collect());
        }
        for nic in std::iter::once(&mut self.nic).chain(self.more_nics.iter_mut()) {
            nic.node = nic.node.and_then(new_id);
        }
    }

    /// Renumber the nodes as a guest of the draft's architecture numbers them: as Linux
    /// on x86 does ([`TopologyDraft::into_x86_node_order`]) on x86_64, not at all on
    /// arm64. Whether any id changed.
    pub fn into_guest_node_order(&mut self) -> bool {
        match self.arch {
            Arch::X86_64 => self.into_x86_node_order(),
            Arch::Arm64 => false,
        }
    }

    /// Renumber the nodes as Linux on x86 does ([`TopologyDraft::x86_node_order`]);
    /// whether any id changed.
    pub fn into_x86_node_order(&mut self) -> bool {
        let order = self.x86_node_order();
        let changed = order.iter().enumerate().any(|(j, &o)| j != o);
        if changed {
            self.relabel_nodes(&order);
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A machine of 2 sockets × 2 cores × 2 threads (CPUs 0-7) with `nodes` as
    /// `(cpus, memory_mib)`, a SLIT whose row `i` says `10 + i` to every other node (so
    /// a relabelling shows), and the NIC on `nic`.
    fn machine(numbering: &str, nodes: &[(&str, u64)], nic: u32) -> String {
        let mut text = format!(
            "name = \"t\"\ncpu_numbering = \"{numbering}\"\n[source]\nkind = \"synthetic\"\nwording = \"test\"\n\
             [cpus]\nsockets = 2\ncores = 2\nthreads = 2\n"
        );
        for (cpus, mib) in nodes {
            text.push_str(&format!("[[numa.nodes]]\ncpus = \"{cpus}\"\nmemory_mib = {mib}\n"));
        }
        let n = nodes.len();
        let rows: Vec<String> = (0..n)
            .map(|i| {
                let row: Vec<String> = (0..n)
                    .map(|j| if i == j { "10".into() } else { (20 + i.min(j) * 5 + i.max(j)).to_string() })
                    .collect();
                format!("[{}]", row.join(", "))
            })
            .collect();
        text.push_str(&format!(
            "[numa]\ndistances = [{}]\n[nic]\nnuma_node = {nic}\n[expect]\nverdict = \"pass\"\nsource = \"test\"\n",
            rows.join(", ")
        ));
        text
    }

    fn topo(numbering: &str, nodes: &[(&str, u64)], nic: u32) -> Topology {
        Topology::from_toml_str("topologies/x.toml", &machine(numbering, nodes, nic)).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn nodes_in_the_order_of_their_first_cpu_then_memory_only_ones_are_the_guests_ids() {
        let t = topo("qemu", &[("0-3", 256), ("4-7", 0), ("", 256), ("", 128)], 3);
        assert_eq!(t.x86_node_order(), vec![0, 1, 2, 3]);
        assert_eq!(t.x86_node_ids(), Ok(()));
        assert!(t.check_guest_node_ids("topologies/x.toml").is_ok());
    }

    #[test]
    fn a_memory_only_node_before_the_cpu_nodes_becomes_the_guests_last_node() {
        // The SRAT's processor entries come first: node 1 (QEMU CPU 0) is the guest's
        // node 0, node 2 its node 1, and the memory-only node 0, met only among the
        // memory entries, its node 2.
        let t = topo("qemu", &[("", 256), ("0-3", 256), ("4-7", 256)], 0);
        assert_eq!(t.x86_node_order(), vec![1, 2, 0]);
        let r = t.x86_node_ids().expect_err("out of order");
        let moved: Vec<(u32, u32)> = r.moved.iter().map(|n| (n.declared, n.guest)).collect();
        assert_eq!(moved, vec![(0, 2), (1, 0), (2, 1)]);
    }

    #[test]
    fn cpu_nodes_listed_out_of_order_take_the_ids_of_their_first_cpus_order() {
        let t = topo("qemu", &[("4-5", 256), ("0-3", 256), ("6-7", 256)], 1);
        assert_eq!(t.x86_node_order(), vec![1, 0, 2]);
        let r = t.x86_node_ids().expect_err("out of order");
        let moved: Vec<(u32, u32)> = r.moved.iter().map(|n| (n.declared, n.guest)).collect();
        assert_eq!(moved, vec![(0, 1), (1, 0)], "node 2 keeps its id and is not named");
    }

    #[test]
    fn memory_only_nodes_keep_their_file_order_after_the_cpu_nodes() {
        let t = topo("qemu", &[("0-3", 256), ("", 128), ("4-7", 256), ("", 64)], 0);
        assert_eq!(t.x86_node_order(), vec![0, 2, 1, 3]);
    }

    #[test]
    fn linux_numbered_files_are_ordered_by_qemus_cpu_index() {
        // linux-smt-outer: CPU c and c+4 are one core's threads; QEMU numbers them 2c and
        // 2c+1. The node of cores 2-3 (CPUs 2-3,6-7: QEMU 4-7) comes after that of cores
        // 0-1 (CPUs 0-1,4-5: QEMU 0-3).
        let t = topo("linux-smt-outer", &[("2-3,6-7", 256), ("0-1,4-5", 256)], 0);
        assert_eq!(t.x86_node_order(), vec![1, 0]);
        let r = t.x86_node_ids().expect_err("out of order");
        assert_eq!(r.moved[0].first_qemu_cpu, Some(4));
        assert!(r.to_string().contains("node 0 (CPUs 2-3,6-7, QEMU CPU 4 first) as node 1"), "{r}");
    }

    #[test]
    fn the_error_names_the_file_each_moved_node_and_the_order_that_fixes_it() {
        let t = topo("qemu", &[("", 256), ("4-7", 256), ("0-3", 256)], 0);
        let line = t.check_guest_node_ids("topologies/x.toml").expect_err("refused").to_string();
        assert!(!line.contains('\n'), "one line: {line}");
        assert!(line.starts_with("topologies/x.toml: numa.nodes: a guest on x86 would show "), "{line}");
        assert!(
            line.contains(": a guest on x86 would show node 0 (memory-only) as node 2, node 2 (CPUs 0-3) as node 0 ("),
            "{line}"
        );
        assert!(!line.contains("node 1 (CPUs 4-7)"), "node 1 keeps its id: {line}");
        assert!(line.contains("list the [[numa.nodes]] entries now numbered 2, 1, 0 in that order"), "{line}");
        assert!(line.contains("numa.distances") && line.contains("numa_node"), "{line}");
    }

    #[test]
    fn an_arm64_file_is_neither_checked_nor_renumbered() {
        let text = machine("qemu", &[("", 256), ("4-7", 256), ("0-3", 256)], 0);
        let text = text.replacen("[source]", "[machine]\narch = \"arm64\"\n[source]", 1);
        let t = Topology::from_toml_str("topologies/arm64/x.toml", &text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.arch(), Arch::Arm64);
        assert!(t.x86_node_ids().is_err(), "out of x86's order");
        assert!(t.check_guest_node_ids("topologies/arm64/x.toml").is_ok());
        let mut d = TopologyDraft::from(&t);
        assert!(!d.into_guest_node_order());
        assert_eq!(d, TopologyDraft::from(&t));
    }

    #[test]
    fn renumbering_a_draft_moves_memory_slit_and_nic_with_the_nodes_and_then_passes() {
        let t = topo("qemu", &[("", 256), ("4-7", 128), ("0-3", 64)], 1);
        let mut d = TopologyDraft::from(&t);
        assert!(d.into_x86_node_order());
        assert!(!d.into_x86_node_order(), "already in order");
        let fixed = d.validate("fixed.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fixed.x86_node_ids(), Ok(()));
        let mem: Vec<u64> = fixed.nodes().iter().map(|n| n.memory_mib).collect();
        assert_eq!(mem, vec![64, 128, 256]);
        assert_eq!(fixed.nic().node, Some(1), "old node 1 is still node 1");
        // Old nodes 2, 1, 0 → 0, 1, 2: each distance follows its pair of nodes.
        for (a, b) in [(0u32, 1u32), (0, 2), (1, 2)] {
            assert_eq!(fixed.distance(a, b), t.distance(2 - a, 2 - b), "{a}-{b}");
        }
    }
}
