//! What the inputs say about a machine, each fact with where it was read ([`Origin`]),
//! and how the facts of several inputs combine ([`Facts::merge`]: the same fact twice must
//! agree, else a contradiction naming both places).
//!
//! Every reader (lscpu, numactl, sysfs, hwloc) fills a [`Facts`]; [`super::build`] turns
//! the merged facts into a topology.

use super::error::{ErrorKind, ImportError, Origin};
use crate::cpulist::CpuMask;
use crate::text::plural;
use std::collections::{BTreeMap, BTreeSet};

/// A value and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sourced<T> {
    /// The value.
    pub(crate) value: T,
    /// Where it was read.
    pub(crate) origin: Origin,
}

impl<T> Sourced<T> {
    pub(crate) fn new(value: T, origin: Origin) -> Self {
        Self { value, origin }
    }
}

/// The CPU shape as plain `lscpu` states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeclaredShape {
    /// `Socket(s):`.
    pub(crate) sockets: u32,
    /// `Core(s) per socket:`.
    pub(crate) cores_per_socket: u32,
    /// `Thread(s) per core:`.
    pub(crate) threads_per_core: u32,
}

impl DeclaredShape {
    /// `2 sockets × 32 cores × 2 threads` (`1 socket × 4 cores × 1 thread`).
    pub(crate) fn words(&self) -> String {
        format!(
            "{} × {} × {}",
            plural(self.sockets, "socket"),
            plural(self.cores_per_socket, "core"),
            plural(self.threads_per_core, "thread")
        )
    }
}

/// Where one CPU sits. The ids are keys only (lscpu's logical ids, sysfs's physical
/// ids or hwloc's object order): two CPUs with equal `(socket, die, core)` are SMT
/// siblings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CpuPlace {
    /// Linux CPU id.
    pub(crate) cpu: u32,
    /// Socket key.
    pub(crate) socket: u32,
    /// Die key within the socket (0 when the input has no dies).
    pub(crate) die: u32,
    /// Core key within the die.
    pub(crate) core: u32,
}

/// A network interface and its PCI device's node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NicFact {
    /// Interface name (`ens5f0`), if the input names one.
    pub(crate) interface: Option<String>,
    /// `numa_node` (`None` = -1, NUMA_NO_NODE).
    pub(crate) node: Option<u32>,
    /// Whether the device is a MANA VF (PCI 1414:00ba), when the input says.
    pub(crate) mana: bool,
}

/// One NUMA node.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodeFacts {
    /// Its CPUs (empty = memory-only).
    pub(crate) cpus: Option<Sourced<CpuMask>>,
    /// Its memory, MiB.
    pub(crate) memory_mib: Option<Sourced<u64>>,
}

/// The SLIT as an input prints it, with the line of each row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DistanceFacts {
    /// Node ids of the rows and columns, in order.
    pub(crate) nodes: Vec<u32>,
    /// `rows[i][j]` = distance from `nodes[i]` to `nodes[j]`.
    pub(crate) rows: Vec<Vec<u32>>,
    /// Where each row was read.
    pub(crate) row_origins: Vec<Origin>,
}

/// Everything one or more inputs say about the machine.
#[derive(Debug, Clone, Default)]
pub(crate) struct Facts {
    /// What each input held, for the topology's `[source]` (`seed.txt: lscpu, numactl -H`).
    pub(crate) read: Vec<String>,
    /// CPU model name (`AMD EPYC 7763 64-Core Processor`).
    pub(crate) model_name: Option<String>,
    /// Number of CPUs (`CPU(s):`).
    pub(crate) total_cpus: Option<Sourced<u32>>,
    /// On-line CPUs.
    pub(crate) online: Option<Sourced<CpuMask>>,
    /// Off-line CPUs.
    pub(crate) offline: Option<Sourced<CpuMask>>,
    /// The shape as plain lscpu states it.
    pub(crate) shape: Option<Sourced<DeclaredShape>>,
    /// Per-CPU places (lscpu -p/-e, sysfs, hwloc), by CPU id.
    pub(crate) cpus: BTreeMap<u32, Sourced<CpuPlace>>,
    /// The number of NUMA nodes an input announces.
    pub(crate) node_count: Option<Sourced<u32>>,
    /// The node ids an input announces (`available: 2 nodes (0-1)`).
    pub(crate) node_ids: Option<Sourced<BTreeSet<u32>>>,
    /// Nodes by id.
    pub(crate) nodes: BTreeMap<u32, NodeFacts>,
    /// The SLIT.
    pub(crate) distances: Option<Sourced<DistanceFacts>>,
    /// Network interfaces with their device's node.
    pub(crate) nics: Vec<Sourced<NicFact>>,
}

fn contradiction(here: &Origin, message: String) -> ImportError {
    ImportError::new(ErrorKind::Contradiction, here.clone(), message)
}

/// Keep `mine`, or take `theirs`; both present and different is a contradiction
/// reported at `theirs`.
fn merge_one<T: PartialEq>(
    mine: &mut Option<Sourced<T>>,
    theirs: Option<Sourced<T>>,
    what: &str,
    show: impl Fn(&T) -> String,
) -> Result<(), ImportError> {
    match (mine.as_ref(), theirs) {
        (_, None) => Ok(()),
        (None, Some(t)) => {
            *mine = Some(t);
            Ok(())
        }
        (Some(m), Some(t)) if m.value == t.value => Ok(()),
        (Some(m), Some(t)) => Err(contradiction(
            &t.origin,
            format!("{what} is {} here but {} at {}", show(&t.value), show(&m.value), m.origin),
        )),
    }
}

/// SMT sibling groups of per-CPU places: CPU → the CPUs sharing its core.
fn sibling_groups(cpus: &BTreeMap<u32, Sourced<CpuPlace>>) -> BTreeMap<u32, CpuMask> {
    let mut by_core: BTreeMap<(u32, u32, u32), CpuMask> = BTreeMap::new();
    for p in cpus.values() {
        let v = p.value;
        by_core.entry((v.socket, v.die, v.core)).or_default().insert(v.cpu);
    }
    let mut out = BTreeMap::new();
    for group in by_core.values() {
        for cpu in group.iter() {
            out.insert(cpu, group.clone());
        }
    }
    out
}

impl Facts {
    /// Add what another input says. Facts both give must agree.
    ///
    /// # Errors
    /// [`ErrorKind::Contradiction`] at the other input's place: a different CPU count,
    /// shape, node CPU list, node count, distance matrix, SMT sibling grouping, or a
    /// different node for the same interface.
    pub(crate) fn merge(&mut self, other: Facts) -> Result<(), ImportError> {
        self.read.extend(other.read);
        if self.model_name.is_none() {
            self.model_name = other.model_name;
        }
        let list = |m: &CpuMask| if m.is_empty() { "none".to_owned() } else { m.to_cpulist() };
        merge_one(&mut self.total_cpus, other.total_cpus, "the number of CPUs", u32::to_string)?;
        merge_one(&mut self.online, other.online, "the on-line CPU list", list)?;
        merge_one(&mut self.offline, other.offline, "the off-line CPU list", list)?;
        merge_one(&mut self.shape, other.shape, "the CPU shape", DeclaredShape::words)?;
        merge_one(&mut self.node_count, other.node_count, "the number of NUMA nodes", u32::to_string)?;
        merge_one(&mut self.node_ids, other.node_ids, "the set of node ids", |s| {
            s.iter().copied().collect::<CpuMask>().to_cpulist()
        })?;
        merge_one(&mut self.distances, other.distances, "the distance matrix", |d| format!("{:?}", d.rows))?;
        self.merge_cpus(other.cpus)?;
        for (id, theirs) in other.nodes {
            let mine = self.nodes.entry(id).or_default();
            merge_one(&mut mine.cpus, theirs.cpus, &format!("node {id}'s CPU list"), list)?;
            match (&mine.memory_mib, theirs.memory_mib) {
                (None, t) => mine.memory_mib = t,
                // Memory is only told apart as none vs some (the rig gives every node with
                // memory the same amount); the first input's figure stays.
                (Some(m), Some(t)) if (m.value == 0) != (t.value == 0) => {
                    return Err(contradiction(
                        &t.origin,
                        format!("node {id} has {} MiB of memory here but {} MiB at {}", t.value, m.value, m.origin),
                    ))
                }
                _ => {}
            }
        }
        for nic in other.nics {
            let same =
                self.nics.iter().find(|n| n.value.interface.is_some() && n.value.interface == nic.value.interface);
            match same {
                Some(n) if n.value.node != nic.value.node => {
                    let show = |v: Option<u32>| v.map_or("-1".to_owned(), |n| n.to_string());
                    return Err(contradiction(
                        &nic.origin,
                        format!(
                            "{}'s numa_node is {} here but {} at {}",
                            nic.value.interface.as_deref().unwrap_or("the NIC"),
                            show(nic.value.node),
                            show(n.value.node),
                            n.origin
                        ),
                    ));
                }
                Some(_) => {}
                None => self.nics.push(nic),
            }
        }
        Ok(())
    }

    /// Per-CPU places: the first input's stay; a second input must group the same CPUs
    /// as SMT siblings.
    fn merge_cpus(&mut self, theirs: BTreeMap<u32, Sourced<CpuPlace>>) -> Result<(), ImportError> {
        if theirs.is_empty() {
            return Ok(());
        }
        if self.cpus.is_empty() {
            self.cpus = theirs;
            return Ok(());
        }
        let (a, b) = (sibling_groups(&self.cpus), sibling_groups(&theirs));
        for (cpu, place) in &theirs {
            if a.get(cpu) != b.get(cpu) {
                let mine = a.get(cpu).map_or("absent".to_owned(), |m| format!("siblings {m}"));
                let other = self.cpus.get(cpu).map_or_else(|| "the first input".to_owned(), |p| p.origin.to_string());
                return Err(contradiction(
                    &place.origin,
                    format!(
                        "CPU {cpu} has SMT siblings {} here but is {mine} at {other}",
                        b.get(cpu).cloned().unwrap_or_default()
                    ),
                ));
            }
        }
        if let Some((cpu, _)) = self.cpus.iter().find(|(c, _)| !theirs.contains_key(c)) {
            let first = theirs.values().next().map_or_else(|| Origin::file("input"), |p| p.origin.clone());
            return Err(contradiction(&first, format!("CPU {cpu} is missing here but present in another input")));
        }
        Ok(())
    }

    /// Record a node's CPU list; a second list for the same node in this input is a
    /// contradiction unless equal.
    ///
    /// # Errors
    /// [`ErrorKind::Contradiction`] at `origin`.
    pub(crate) fn set_node_cpus(&mut self, node: u32, cpus: CpuMask, origin: Origin) -> Result<(), ImportError> {
        let entry = self.nodes.entry(node).or_default();
        merge_one(&mut entry.cpus, Some(Sourced::new(cpus, origin)), &format!("node {node}'s CPU list"), |m| {
            m.to_cpulist()
        })
    }

    /// Record a node's memory (MiB); the first figure stays.
    pub(crate) fn set_node_memory(&mut self, node: u32, mib: u64, origin: Origin) {
        let entry = self.nodes.entry(node).or_default();
        if entry.memory_mib.is_none() {
            entry.memory_mib = Some(Sourced::new(mib, origin));
        }
    }
}
