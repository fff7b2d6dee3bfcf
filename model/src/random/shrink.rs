//! Shrinking a topology on which something disagrees to a smallest one on which it
//! still does: greedy, one simplification at a time, biggest first.

use crate::cpulist::CpuMask;
use crate::text::plural;
use crate::topology::{CpuLocation, CpuNumbering, CpuShape, NodeDraft, Topology, TopologyDraft};
use std::collections::HashSet;

/// Most predicate calls one [`shrink`] or [`shrink_logged`] makes (a guard: every
/// accepted step makes the machine strictly smaller, so the loop ends long before on
/// real machines); [`shrink_within`] takes its own budget.
pub const MAX_TRIES: u32 = 20_000;

/// Memory a node gets when the shrinker turns it into a memory-only node (MiB).
const MEMORY_ONLY_MIB: u64 = 128;

/// What [`shrink_logged`] did.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The smallest machine found, renamed `<name>-min` with the shrink in its
    /// `[source] wording`.
    pub topology: Topology,
    /// The accepted simplifications, in order (`remove node 3`, `SMT off`, …).
    pub steps: Vec<String>,
    /// How many times the predicate was called.
    pub tries: u32,
}

/// A machine's size, compared lexicographically: nodes, CPUs, sockets × dies, SMT
/// threads, MSI-X table, `max_msix`, `max_queues`, SLIT levels, explicit fields, and
/// whether CPUs are numbered Linux-style. Every accepted step lowers it, so shrinking
/// ends.
fn size(d: &TopologyDraft) -> [u64; 10] {
    let table = d.msix_table_size();
    let slit = d.distances.as_ref().map_or(0, |rows| {
        let mut v: Vec<u32> = rows.iter().flatten().copied().collect();
        v.sort_unstable();
        v.dedup();
        v.len() as u64 + 1
    });
    let n = &d.nic;
    let explicit = [n.msix_table_size.is_some(), n.max_msix.is_some(), n.max_queues.is_some(), n.dynamic_msix.is_some()]
        .iter()
        .chain(&[n.mac.is_some(), n.channels.is_some(), d.description.is_some(), d.slow.is_some()])
        .filter(|b| **b)
        .count() as u64;
    [
        d.nodes.len() as u64,
        u64::from(d.ncpu()),
        u64::from(d.shape.sockets * d.shape.dies),
        u64::from(d.shape.threads),
        u64::from(table),
        u64::from(n.max_msix.unwrap_or(table)),
        u64::from(n.max_queues.unwrap_or(64)),
        slit,
        explicit,
        u64::from(d.numbering == CpuNumbering::LinuxSmtOuter),
    ]
}

/// The global cores (`(socket * dies + die) * cores + core`) of each node.
fn node_cores(d: &TopologyDraft) -> Vec<Vec<u32>> {
    d.nodes
        .iter()
        .map(|n| {
            let mut cores: Vec<u32> =
                n.cpus.iter().map(|c| d.shape.global_core(d.shape.location(d.numbering, c))).collect();
            cores.sort_unstable();
            cores.dedup();
            cores
        })
        .collect()
}

/// The draft with each node holding the cores `cores[i]` (old global core ids) with
/// `threads` threads each. When cores go away the shape becomes one socket and one die
/// of the remaining cores, renumbered in their old order.
fn with_cores(d: &TopologyDraft, cores: &[Vec<u32>], threads: u32) -> Option<TopologyDraft> {
    let mut kept: Vec<u32> = cores.iter().flatten().copied().collect();
    kept.sort_unstable();
    let total = u32::try_from(kept.len()).ok().filter(|&t| t > 0)?;
    let shape = if total == d.shape.total_cores() {
        CpuShape { threads, ..d.shape }
    } else {
        CpuShape { sockets: 1, dies: 1, cores: total, threads }
    };
    let new_id = |old: u32| u32::try_from(kept.partition_point(|&k| k < old)).unwrap_or(0);
    let mut out = d.clone();
    out.shape = shape;
    for (node, list) in out.nodes.iter_mut().zip(cores) {
        let mut cpus = CpuMask::new();
        for &old in list {
            let g = if total == d.shape.total_cores() { old } else { new_id(old) };
            let loc = CpuLocation {
                socket: g / (shape.dies * shape.cores),
                die: g / shape.cores % shape.dies,
                core: g % shape.cores,
                thread: 0,
            };
            for thread in 0..threads {
                cpus.insert(shape.cpu_id(d.numbering, CpuLocation { thread, ..loc }));
            }
        }
        node.cpus = cpus;
    }
    Some(out)
}

fn remove_node(d: &TopologyDraft, cores: &[Vec<u32>], i: usize) -> Option<TopologyDraft> {
    let at = u32::try_from(i).ok()?;
    if d.nic.node == Some(at) {
        return None;
    }
    let mut left = cores.to_vec();
    left[i].clear();
    let mut out = with_cores(d, &left, d.shape.threads)?;
    out.nodes.remove(i);
    if let Some(rows) = &mut out.distances {
        rows.remove(i);
        rows.iter_mut().for_each(|r| {
            r.remove(i);
        });
    }
    out.nic.node = d.nic.node.map(|n| if n > at { n - 1 } else { n });
    Some(out)
}

fn memory_only(d: &TopologyDraft, cores: &[Vec<u32>], i: usize) -> Option<TopologyDraft> {
    if cores[i].is_empty() {
        return None;
    }
    let mut left = cores.to_vec();
    left[i].clear();
    let mut out = with_cores(d, &left, d.shape.threads)?;
    out.nodes[i] = NodeDraft { cpus: CpuMask::new(), memory_mib: d.nodes[i].memory_mib.max(MEMORY_ONLY_MIB) };
    Some(out)
}

fn fewer_cores(d: &TopologyDraft, cores: &[Vec<u32>], i: usize, keep: usize) -> Option<TopologyDraft> {
    let mut left = cores.to_vec();
    left[i].truncate(keep);
    with_cores(d, &left, d.shape.threads)
}

/// Smaller values for a limit whose effective value is `now`: 1, half, one less.
fn smaller(now: u32) -> Vec<u32> {
    let mut v: Vec<u32> = [1, now / 2, now.saturating_sub(1)].into_iter().filter(|&x| x >= 1 && x < now).collect();
    v.dedup();
    v
}

/// Every one-step simplification of `d`, biggest first, each with a label, its nodes
/// numbered as a guest on x86 numbers them ([`TopologyDraft::into_guest_node_order`]). Not
/// yet validated or compared by size.
pub(crate) fn candidates(d: &TopologyDraft) -> Vec<(String, TopologyDraft)> {
    let cores = node_cores(d);
    let mut out: Vec<(String, Option<TopologyDraft>)> = Vec::new();
    for i in (0..d.nodes.len()).rev() {
        out.push((format!("remove node {i}"), remove_node(d, &cores, i)));
    }
    for i in 0..d.nodes.len() {
        out.push((format!("node {i} memory-only"), memory_only(d, &cores, i)));
    }
    for (i, list) in cores.iter().enumerate() {
        if list.len() >= 2 {
            out.push((
                format!("node {i}: {} of {} cores", list.len() / 2, list.len()),
                fewer_cores(d, &cores, i, list.len() / 2),
            ));
            out.push((format!("node {i}: one core less"), fewer_cores(d, &cores, i, list.len() - 1)));
        }
    }
    let flat = CpuShape { sockets: 1, dies: 1, cores: d.shape.total_cores(), threads: d.shape.threads };
    out.push(("one socket, one die".into(), Some(TopologyDraft { shape: flat, ..d.clone() })));
    out.push(("SMT off".into(), with_cores(d, &cores, 1)));
    if d.numbering == CpuNumbering::LinuxSmtOuter {
        let mut q = d.clone();
        q.numbering = CpuNumbering::Qemu;
        let renumbered = with_cores(&q, &cores, d.shape.threads);
        out.push(("QEMU CPU numbering".into(), renumbered));
    }
    out.extend(nic_candidates(d));
    if d.distances.is_some() {
        out.push(("no SLIT".into(), Some(TopologyDraft { distances: None, ..d.clone() })));
        out.push(("one SLIT level less".into(), merge_farthest_level(d)));
    }
    // A step can leave the nodes out of the order a guest on x86 numbers them (a CPU
    // node made memory-only before others with CPUs): the same machine under the
    // guest's ids is what a boot can judge.
    out.into_iter()
        .filter_map(|(mut label, c)| {
            let mut c = c?;
            if c.into_guest_node_order() {
                label.push_str(" (nodes renumbered as Linux on x86 does)");
            }
            Some((label, c))
        })
        .collect()
}

fn nic_candidates(d: &TopologyDraft) -> Vec<(String, Option<TopologyDraft>)> {
    let mut out = Vec::new();
    let table = d.msix_table_size();
    for v in smaller(table) {
        let mut c = d.clone();
        c.nic.msix_table_size = Some(v);
        out.push((format!("MSI-X table {v}"), Some(c)));
    }
    for v in smaller(d.nic.max_msix.unwrap_or(table)) {
        let mut c = d.clone();
        c.nic.max_msix = Some(v);
        out.push((format!("max_msix {v}"), Some(c)));
    }
    for v in smaller(d.nic.max_queues.unwrap_or(64)) {
        let mut c = d.clone();
        c.nic.max_queues = Some(v);
        out.push((format!("max_queues {v}"), Some(c)));
    }
    let mut c = d.clone();
    (c.nic.dynamic_msix, c.nic.mac, c.nic.channels, c.description, c.slow) = (None, None, None, None, None);
    out.push(("NIC defaults, no description".into(), Some(c)));
    out
}

/// The SLIT with its largest off-diagonal value replaced by the next smaller one.
fn merge_farthest_level(d: &TopologyDraft) -> Option<TopologyDraft> {
    let rows = d.distances.as_ref()?;
    let mut levels: Vec<u32> = rows.iter().flatten().copied().filter(|&v| v != 10).collect();
    levels.sort_unstable();
    levels.dedup();
    let [.., lower, top] = levels[..] else { return None };
    let mut c = d.clone();
    c.distances = Some(rows.iter().map(|r| r.iter().map(|&v| if v == top { lower } else { v }).collect()).collect());
    Some(c)
}

/// Shrink `topology` while `still_disagrees` holds; see [`shrink_logged`].
pub fn shrink(topology: &Topology, still_disagrees: impl FnMut(&Topology) -> bool) -> Topology {
    shrink_logged(topology, still_disagrees).topology
}

/// Shrink `topology` to a machine on which `still_disagrees` still holds and no single
/// simplification keeps it holding: fewer nodes (a node removed or made memory-only),
/// fewer cores per node, one socket and die, SMT off, QEMU numbering, a smaller MSI-X
/// table, `max_msix` and `max_queues`, NIC fields at their defaults, fewer SLIT levels.
/// [`shrink_within`] with [`MAX_TRIES`].
pub fn shrink_logged(topology: &Topology, still_disagrees: impl FnMut(&Topology) -> bool) -> Shrunk {
    shrink_within(topology, MAX_TRIES, still_disagrees)
}

/// [`shrink_logged`] calling the predicate at most `max_tries` times: for a predicate
/// that boots a guest (seconds a call), say 200; the machine found so far comes back
/// when the budget runs out.
///
/// Greedy: the candidates of one step are tried biggest first, each with its nodes
/// numbered as a guest on x86 numbers them ([`TopologyDraft::into_guest_node_order`], so
/// no try boots a file the rig would refuse); the first that is a valid topology file (checked by [`TopologyDraft::validate`]), smaller by a fixed
/// measure and still disagreeing is taken, and the next step starts from it. The
/// predicate is never called on an invalid machine nor twice on the same one. If it
/// does not hold for `topology` itself, `topology` comes back unchanged but for the
/// name. The result is named `<name>-min`, keeps `[expect]`, and its `[source]
/// wording` says what it was shrunk from: [`Topology::to_toml`] gives a file for
/// topologies/ (set `[expect]` to what the disagreement should become).
pub fn shrink_within(
    topology: &Topology,
    max_tries: u32,
    mut still_disagrees: impl FnMut(&Topology) -> bool,
) -> Shrunk {
    let mut current = TopologyDraft::from(topology);
    current.drop_defaults();
    let mut best = topology.clone();
    let (mut steps, mut tries) = (Vec::new(), 0u32);
    let mut asked: HashSet<String> = HashSet::new();
    'outer: while tries < max_tries {
        let now = size(&current);
        for (label, mut cand) in candidates(&current) {
            cand.drop_defaults();
            if size(&cand) >= now || !asked.insert(cand.to_toml()) {
                continue;
            }
            let Ok(t) = cand.validate(topology.name()) else { continue };
            tries += 1;
            if still_disagrees(&t) {
                steps.push(label);
                current = cand;
                best = t;
                continue 'outer;
            }
            if tries >= max_tries {
                break;
            }
        }
        break;
    }
    let mut named = TopologyDraft::from(&best);
    named.drop_defaults();
    named.name = format!("{}-min", topology.name());
    named.source.wording = format!(
        "{} [shrunk from {} ({}, {}) in {} by manarig_model::random::shrink]",
        named.source.wording,
        topology.name(),
        plural(topology.ncpu(), "CPU"),
        plural(topology.nodes().len(), "node"),
        plural(steps.len(), "step")
    );
    let topology = named.validate(topology.name()).unwrap_or(best);
    Shrunk { topology, steps, tries }
}
