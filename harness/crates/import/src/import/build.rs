//! Merged facts → the machine a topology file describes: nodes (dense ids, no CPU in
//! two nodes, as many as announced and as the distance matrix has), the CPU shape and
//! numbering, the SLIT and the NIC's node. Every refusal names the input and line.
//!
//! CPU numbering: with per-CPU places (lscpu -p/-e, sysfs, hwloc) the shape and the
//! numbering scheme follow from the places (cores ordered by their first CPU); with only
//! plain lscpu's counts, the scheme is the one under which every node keeps its SMT
//! sibling groups whole, then the one under which every node stays in one socket, and
//! `linux-smt-outer` (what x86 servers' firmware usually gives) when both still fit.

use super::error::{ErrorKind, ImportError, Origin};
use super::facts::{CpuPlace, Facts, NicFact, Sourced};
use crate::cpulist::CpuMask;
use crate::text::{agree, plural};
use crate::topology::{CpuLocation, CpuNumbering, CpuShape};
use std::collections::BTreeMap;

/// The NIC's node as the user gives it (`--nic-node N` or `--nic-node none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NicNode {
    /// A node id.
    Node(u32),
    /// NUMA_NO_NODE (`numa_node` reads -1).
    NoNode,
}

impl std::str::FromStr for NicNode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "none" | "-1" => Ok(NicNode::NoNode),
            t => t.parse().map(NicNode::Node).map_err(|_| format!("{s:?}: use a node number or \"none\"")),
        }
    }
}

/// One node of the machine.
#[derive(Debug, Clone)]
pub(crate) struct MachineNode {
    pub(crate) cpus: CpuMask,
    /// MiB; `None` when no input says.
    pub(crate) memory_mib: Option<u64>,
}

/// The machine, ready to be written as a topology file.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    pub(crate) shape: CpuShape,
    pub(crate) numbering: CpuNumbering,
    /// Whether the numbering is an assumption (plain lscpu, both schemes fit).
    pub(crate) numbering_assumed: bool,
    pub(crate) nodes: Vec<MachineNode>,
    /// `None` when no input has one (the kernel then uses 10/20).
    pub(crate) distances: Option<Vec<Vec<u32>>>,
    pub(crate) nic_node: Option<u32>,
    pub(crate) nic_interface: Option<String>,
    /// Where the NIC's node comes from (`seed.txt:66`, `--nic-node`).
    pub(crate) nic_from: String,
    pub(crate) model_name: Option<String>,
}

fn err(kind: ErrorKind, origin: &Origin, message: impl Into<String>) -> ImportError {
    ImportError::new(kind, origin.clone(), message)
}

/// The inputs as one origin for facts no single line holds.
fn all_inputs(inputs: &[String]) -> Origin {
    Origin::file(&inputs.join(", "))
}

struct Nodes {
    nodes: Vec<MachineNode>,
    origins: Vec<Origin>,
}

/// Dense node ids, no CPU in two nodes, the announced count and the matrix agree.
fn nodes(facts: &Facts, inputs: &[String]) -> Result<Nodes, ImportError> {
    let mut origins = Vec::new();
    let mut nodes = Vec::new();
    for (expected, (&id, n)) in facts.nodes.iter().enumerate() {
        let origin = n.cpus.as_ref().map(|c| c.origin.clone());
        let origin =
            origin.or_else(|| n.memory_mib.as_ref().map(|m| m.origin.clone())).unwrap_or_else(|| all_inputs(inputs));
        if id as usize != expected {
            return Err(err(
                ErrorKind::Unsupported,
                &origin,
                format!(
                    "node {id} follows node {}: topology files number nodes 0, 1, 2, … without gaps",
                    expected.saturating_sub(1)
                ),
            ));
        }
        let Some(cpus) = &n.cpus else {
            return Err(err(ErrorKind::Truncated, &origin, format!("node {id}'s CPU list is in no input")));
        };
        for (other, prev) in nodes.iter().enumerate() {
            let prev: &MachineNode = prev;
            let shared = prev.cpus.and(&cpus.value);
            if !shared.is_empty() {
                return Err(err(
                    ErrorKind::Contradiction,
                    &cpus.origin,
                    format!(
                        "{} {} in node {id} here and in node {other} at {}",
                        shared.named(),
                        agree(shared.count(), "is", "are"),
                        origins[other]
                    ),
                ));
            }
        }
        nodes.push(MachineNode { cpus: cpus.value.clone(), memory_mib: n.memory_mib.as_ref().map(|m| m.value) });
        origins.push(cpus.origin.clone());
    }
    if let Some(ids) = &facts.node_ids {
        let listed: Vec<u32> = facts.nodes.keys().copied().collect();
        if !listed.is_empty() && ids.value.iter().copied().collect::<Vec<_>>() != listed {
            return Err(err(
                ErrorKind::Contradiction,
                &ids.origin,
                "these node ids differ from the nodes the inputs list",
            ));
        }
    }
    if let Some(d) = &facts.distances {
        let (rows, count) = (d.value.rows.len(), nodes.len());
        let announced = facts.node_count.as_ref().map(|c| (c.value as usize, c.origin.clone()));
        match announced {
            Some((c, origin)) if c != rows => {
                return Err(err(
                    ErrorKind::Contradiction,
                    &d.origin,
                    format!(
                        "the distance matrix has {} but {origin} announces {}",
                        plural(rows, "row"),
                        plural(c, "NUMA node")
                    ),
                ))
            }
            _ if count > 0 && count != rows => {
                return Err(err(
                    ErrorKind::Contradiction,
                    &d.origin,
                    format!("the distance matrix has {} for {}", plural(rows, "row"), plural(count, "node")),
                ))
            }
            _ => {}
        }
        if d.value.nodes.iter().enumerate().any(|(i, &n)| n as usize != i) {
            return Err(err(ErrorKind::Unsupported, &d.origin, "the matrix's nodes are not 0, 1, 2, … in order"));
        }
    }
    if let Some(count) = &facts.node_count {
        let n = nodes.len() as u32;
        if n > 0 && n < count.value {
            return Err(err(
                ErrorKind::Truncated,
                &count.origin,
                format!("{} NUMA nodes announced but the inputs list only nodes 0-{}", count.value, n - 1),
            ));
        }
        if n > count.value {
            return Err(err(
                ErrorKind::Contradiction,
                &origins[count.value as usize],
                format!("node {} but {} announces {}", count.value, count.origin, plural(count.value, "NUMA node")),
            ));
        }
    }
    Ok(Nodes { nodes, origins })
}

/// The CPU ids: 0..n-1, all on-line, the same count in every input that gives one.
fn cpu_count(facts: &Facts, nodes: &Nodes, inputs: &[String]) -> Result<u32, ImportError> {
    if let Some(off) = facts.offline.as_ref().filter(|o| !o.value.is_empty()) {
        return Err(err(
            ErrorKind::Unsupported,
            &off.origin,
            format!(
                "{} {} off-line: the model and the rig bring every CPU up (online them, or import the machine as it boots)",
                off.value.named(),
                agree(off.value.count(), "is", "are")
            ),
        ));
    }
    let union = nodes.nodes.iter().fold(CpuMask::new(), |a, n| a.or(&n.cpus));
    let from_places = facts.cpus.keys().last().map(|&c| c + 1);
    let declared = facts.shape.as_ref().map(|s| s.value.sockets * s.value.cores_per_socket * s.value.threads_per_core);
    let n = facts
        .total_cpus
        .as_ref()
        .map(|t| t.value)
        .or(from_places)
        .or(declared)
        .or_else(|| union.last().map(|c| c + 1))
        .ok_or_else(|| err(ErrorKind::Missing, &all_inputs(inputs), "no CPUs in the inputs"))?;
    if n == 0 || n > crate::cpulist::MAX_CPUS {
        let o = facts.total_cpus.as_ref().map_or_else(|| all_inputs(inputs), |t| t.origin.clone());
        return Err(err(
            ErrorKind::Unsupported,
            &o,
            format!("{n} CPUs (the rig takes 1-{})", crate::cpulist::MAX_CPUS),
        ));
    }
    let all = CpuMask::first_n(n);
    if let Some(total) = &facts.total_cpus {
        if let Some((&cpu, place)) = facts.cpus.iter().find(|(&c, _)| c >= n) {
            return Err(err(
                ErrorKind::Contradiction,
                &place.origin,
                format!("CPU {cpu} but {} says {}", total.origin, plural(n, "CPU")),
            ));
        }
    }
    if !facts.cpus.is_empty() {
        let listed: CpuMask = facts.cpus.keys().copied().collect();
        let missing = all.andnot(&listed);
        if !missing.is_empty() {
            let o = facts.cpus.values().next().map_or_else(|| all_inputs(inputs), |p| p.origin.clone());
            return Err(err(
                ErrorKind::Truncated,
                &Origin::file(&o.file),
                format!(
                    "{} {} not listed (CPU ids must run 0-{})",
                    missing.named(),
                    agree(missing.count(), "is", "are"),
                    n - 1
                ),
            ));
        }
    }
    if let Some(online) = &facts.online {
        if online.value != all {
            let off = all.andnot(&online.value);
            let (kind, text) = if off.is_empty() {
                (
                    ErrorKind::Contradiction,
                    format!("on-line CPUs {} but the machine has {}", online.value, plural(n, "CPU")),
                )
            } else {
                (
                    ErrorKind::Unsupported,
                    format!("CPUs {off} are not on-line: the model and the rig bring every CPU up"),
                )
            };
            return Err(err(kind, &online.origin, text));
        }
    }
    if !nodes.nodes.is_empty() {
        let beyond = union.andnot(&all);
        if let Some(i) = nodes.nodes.iter().position(|m| m.cpus.intersects(&beyond)) {
            return Err(err(
                ErrorKind::Contradiction,
                &nodes.origins[i],
                format!("{} but the machine has {}", beyond.named(), plural(n, "CPU")),
            ));
        }
        let orphans = all.andnot(&union);
        if !orphans.is_empty() {
            return Err(err(
                ErrorKind::Truncated,
                &nodes.origins[nodes.origins.len() - 1],
                format!(
                    "{} {} in no node's list (after node {})",
                    orphans.named(),
                    agree(orphans.count(), "is", "are"),
                    nodes.nodes.len() - 1
                ),
            ));
        }
    }
    Ok(n)
}

/// Shape and numbering from per-CPU places.
fn from_places(cpus: &BTreeMap<u32, Sourced<CpuPlace>>) -> Result<(CpuShape, CpuNumbering), ImportError> {
    // socket → die → core → CPUs, each ordered by its first CPU.
    let mut tree: BTreeMap<u32, BTreeMap<u32, BTreeMap<u32, Vec<u32>>>> = BTreeMap::new();
    for p in cpus.values() {
        let v = p.value;
        tree.entry(v.socket).or_default().entry(v.die).or_default().entry(v.core).or_default().push(v.cpu);
    }
    let first = |cpus: &[u32]| cpus.iter().copied().min().unwrap_or(u32::MAX);
    let mut sockets: Vec<Vec<Vec<Vec<u32>>>> = tree
        .into_values()
        .map(|dies| {
            let mut dies: Vec<Vec<Vec<u32>>> = dies
                .into_values()
                .map(|cores| {
                    let mut cores: Vec<Vec<u32>> = cores.into_values().collect();
                    cores.iter_mut().for_each(|c| c.sort_unstable());
                    cores.sort_by_key(|c| first(c));
                    cores
                })
                .collect();
            dies.sort_by_key(|d| d.iter().map(|c| first(c)).min().unwrap_or(u32::MAX));
            dies
        })
        .collect();
    sockets.sort_by_key(|s| s.iter().flatten().map(|c| first(c)).min().unwrap_or(u32::MAX));
    let origin_of = |cpu: u32| cpus.get(&cpu).map_or_else(|| Origin::file("input"), |p| p.origin.clone());
    let (dies, cores, threads) = (sockets[0].len(), sockets[0][0].len(), sockets[0][0][0].len());
    let uneven = |what: String, cpu: u32| {
        err(
            ErrorKind::Unsupported,
            &origin_of(cpu),
            format!("{what}: topology files describe sockets × dies × cores × threads, all alike"),
        )
    };
    for (s, socket) in sockets.iter().enumerate() {
        if socket.len() != dies {
            return Err(uneven(
                format!("socket {s} has {}, socket 0 has {dies}", plural(socket.len(), "die")),
                first(&socket[0][0]),
            ));
        }
        for die in socket {
            if die.len() != cores {
                let what = format!(
                    "the die of CPU {} has {}, the first die has {cores}",
                    first(&die[0]),
                    plural(die.len(), "core")
                );
                return Err(uneven(what, first(&die[0])));
            }
            if let Some(core) = die.iter().find(|c| c.len() != threads) {
                let what = format!(
                    "the core of CPU {} has {}, the first core has {threads}",
                    first(core),
                    plural(core.len(), "thread")
                );
                return Err(uneven(what, first(core)));
            }
        }
    }
    let shape =
        CpuShape { sockets: sockets.len() as u32, dies: dies as u32, cores: cores as u32, threads: threads as u32 };
    let fits = |numbering: CpuNumbering| {
        sockets.iter().enumerate().all(|(s, socket)| {
            socket.iter().enumerate().all(|(d, die)| {
                die.iter().enumerate().all(|(c, core)| {
                    core.iter().enumerate().all(|(t, &cpu)| {
                        let loc = CpuLocation { socket: s as u32, die: d as u32, core: c as u32, thread: t as u32 };
                        shape.cpu_id(numbering, loc) == cpu
                    })
                })
            })
        })
    };
    for numbering in [CpuNumbering::Qemu, CpuNumbering::LinuxSmtOuter] {
        if fits(numbering) {
            return Ok((shape, numbering));
        }
    }
    let (s0, c0) = (&sockets[0][0], &sockets[0][0][0]);
    let example = if threads > 1 {
        format!("core 0's threads are CPUs {c0:?}")
    } else {
        format!("die 0 of socket 0 has CPUs {:?}", s0.iter().map(|c| c[0]).collect::<Vec<_>>())
    };
    Err(err(
        ErrorKind::Unsupported,
        &origin_of(c0[0]),
        format!(
            "the CPU numbering is neither QEMU's (siblings N, N+1) nor linux-smt-outer (siblings N, N+{}), e.g. {example}; a QEMU guest cannot number CPUs this way",
            shape.total_cores()
        ),
    ))
}

/// Whether every node keeps each SMT sibling group whole under `numbering`.
fn keeps_siblings(shape: CpuShape, numbering: CpuNumbering, nodes: &[MachineNode]) -> bool {
    nodes.iter().all(|n| {
        n.cpus.iter().all(|cpu| {
            let loc = shape.location(numbering, cpu);
            (0..shape.threads).all(|t| n.cpus.contains(shape.cpu_id(numbering, CpuLocation { thread: t, ..loc })))
        })
    })
}

/// Whether every node's CPUs sit in one socket under `numbering`.
fn nodes_within_sockets(shape: CpuShape, numbering: CpuNumbering, nodes: &[MachineNode]) -> bool {
    nodes.iter().all(|n| {
        let mut sockets = n.cpus.iter().map(|cpu| shape.location(numbering, cpu).socket);
        let first = sockets.next();
        sockets.all(|s| Some(s) == first)
    })
}

/// Shape and numbering from plain lscpu's counts.
fn from_counts(
    facts: &Facts,
    n: u32,
    nodes: &Nodes,
    inputs: &[String],
) -> Result<(CpuShape, CpuNumbering, bool), ImportError> {
    let Some(declared) = &facts.shape else {
        return Err(err(
            ErrorKind::Missing,
            &all_inputs(inputs),
            "the CPU shape (threads per core, cores per socket, sockets) is in no input: add lscpu, lscpu -p, a sysfs snapshot or hwloc XML",
        ));
    };
    let d = declared.value;
    let shape = CpuShape { sockets: d.sockets, dies: 1, cores: d.cores_per_socket, threads: d.threads_per_core };
    if [d.sockets, d.cores_per_socket, d.threads_per_core].contains(&0)
        || u64::from(shape.sockets) * u64::from(shape.cores) * u64::from(shape.threads) != u64::from(n)
    {
        return Err(err(
            ErrorKind::Contradiction,
            &declared.origin,
            format!("{} is not the {} listed", d.words(), plural(n, "CPU")),
        ));
    }
    if shape.threads == 1 {
        return Ok((shape, CpuNumbering::Qemu, false));
    }
    let fits: Vec<CpuNumbering> = [CpuNumbering::Qemu, CpuNumbering::LinuxSmtOuter]
        .into_iter()
        .filter(|&num| keeps_siblings(shape, num, &nodes.nodes))
        .collect();
    // Real nodes do not span sockets: when both schemes keep the siblings together, the
    // one that keeps each node inside one socket is the machine's.
    let within_sockets: Vec<CpuNumbering> =
        fits.iter().copied().filter(|&num| nodes_within_sockets(shape, num, &nodes.nodes)).collect();
    let fits = if within_sockets.len() == 1 { within_sockets } else { fits };
    match fits.as_slice() {
        [one] => Ok((shape, *one, false)),
        [] => Err(err(
            ErrorKind::Unsupported,
            nodes.origins.first().unwrap_or(&declared.origin),
            format!(
                "the nodes' CPU lists split SMT sibling groups under both numbering schemes (siblings N, N+1 and N, N+{}): add lscpu -p or a sysfs snapshot",
                shape.total_cores()
            ),
        )),
        _ => Ok((shape, CpuNumbering::LinuxSmtOuter, true)),
    }
}

/// Diagonal 10, others 11..=255 (what the kernel accepts as a SLIT). An asymmetric
/// table is kept: the topology file's validation warns about it, as for a file written by hand.
fn check_distances(facts: &Facts) -> Result<Option<Vec<Vec<u32>>>, ImportError> {
    let Some(d) = &facts.distances else { return Ok(None) };
    let rows = &d.value.rows;
    for (i, row) in rows.iter().enumerate() {
        let here = d.value.row_origins.get(i).unwrap_or(&d.origin);
        for (j, &v) in row.iter().enumerate() {
            let bad = if i == j { v != 10 } else { !(11..=255).contains(&v) };
            if bad {
                let rule = if i == j {
                    "a node's distance to itself must be 10"
                } else {
                    "distances between nodes must be 11-255"
                };
                return Err(err(
                    ErrorKind::Unsupported,
                    here,
                    format!("distance {i}→{j} is {v}: {rule} (Linux discards such a SLIT)"),
                ));
            }
        }
    }
    Ok(Some(rows.clone()))
}

/// The NIC: the input's (one, or the MANA one, or the one named), else `--nic-node`.
fn nic(
    facts: &Facts,
    opts_node: Option<NicNode>,
    interface: Option<&str>,
    inputs: &[String],
) -> Result<(Option<u32>, Option<String>, String), ImportError> {
    let candidates: Vec<&Sourced<NicFact>> = match interface {
        Some(name) => {
            let found: Vec<_> = facts.nics.iter().filter(|n| n.value.interface.as_deref() == Some(name)).collect();
            if found.is_empty() && opts_node.is_none() {
                let have: Vec<&str> = facts.nics.iter().filter_map(|n| n.value.interface.as_deref()).collect();
                return Err(err(
                    ErrorKind::Missing,
                    &all_inputs(inputs),
                    format!(
                        "no interface {name} in the inputs (they have: {})",
                        if have.is_empty() { "none".to_owned() } else { have.join(", ") }
                    ),
                ));
            }
            found
        }
        None => {
            let mana: Vec<_> = facts.nics.iter().filter(|n| n.value.mana).collect();
            if mana.is_empty() {
                facts.nics.iter().collect()
            } else {
                mana
            }
        }
    };
    let show = |n: Option<u32>| n.map_or("-1".to_owned(), |n| n.to_string());
    let from_input = match candidates.as_slice() {
        [] => None,
        [one] => Some(*one),
        many if many.iter().all(|n| n.value.node == many[0].value.node) => Some(many[0]),
        many => {
            let list: Vec<String> = many
                .iter()
                .map(|n| format!("{} on node {}", n.value.interface.as_deref().unwrap_or("?"), show(n.value.node)))
                .collect();
            return Err(err(
                ErrorKind::Missing,
                &many[0].origin,
                format!("several NICs ({}): name one with --nic-if IF, or give --nic-node N", list.join(", ")),
            ));
        }
    };
    match (from_input, opts_node) {
        (Some(n), Some(given)) => {
            let given = match given {
                NicNode::Node(g) => Some(g),
                NicNode::NoNode => None,
            };
            if given != n.value.node {
                return Err(err(
                    ErrorKind::Contradiction,
                    &n.origin,
                    format!("--nic-node {} but this input says the NIC's numa_node is {} (leave --nic-node out)", show(given), show(n.value.node)),
                ));
            }
            Ok((n.value.node, n.value.interface.clone(), n.origin.to_string()))
        }
        (Some(n), None) => Ok((n.value.node, n.value.interface.clone(), n.origin.to_string())),
        (None, Some(NicNode::Node(g))) => Ok((Some(g), interface.map(str::to_owned), "--nic-node".to_owned())),
        (None, Some(NicNode::NoNode)) => Ok((None, interface.map(str::to_owned), "--nic-node".to_owned())),
        (None, None) => Err(err(
            ErrorKind::Missing,
            &all_inputs(inputs),
            "the NIC's node is in no input: give --nic-node N (or none), or add `cat /sys/class/net/IF/device/numa_node`",
        )),
    }
}

/// Build the machine from merged facts.
///
/// # Errors
/// One [`ImportError`] naming the input and line: contradictions, truncation, what
/// topology files cannot describe, or what no input gives.
pub(crate) fn machine(
    facts: &Facts,
    nic_node: Option<NicNode>,
    nic_if: Option<&str>,
    inputs: &[String],
) -> Result<Machine, ImportError> {
    let mut nodes = nodes(facts, inputs)?;
    let n = cpu_count(facts, &nodes, inputs)?;
    if nodes.nodes.is_empty() {
        // No NUMA information: one node holding every CPU, as the kernel builds it.
        nodes.nodes.push(MachineNode { cpus: CpuMask::first_n(n), memory_mib: None });
        nodes.origins.push(all_inputs(inputs));
    }
    let (shape, numbering, numbering_assumed) = if facts.cpus.is_empty() {
        from_counts(facts, n, &nodes, inputs)?
    } else {
        let (shape, numbering) = from_places(&facts.cpus)?;
        if let Some(d) = &facts.shape {
            let s = d.value;
            if (s.sockets, s.cores_per_socket, s.threads_per_core)
                != (shape.sockets, shape.dies * shape.cores, shape.threads)
            {
                return Err(err(
                    ErrorKind::Contradiction,
                    &d.origin,
                    format!(
                        "{} here, but the per-CPU list gives {} × {} × {}",
                        s.words(),
                        shape.sockets,
                        shape.dies * shape.cores,
                        shape.threads
                    ),
                ));
            }
        }
        if !keeps_siblings(shape, numbering, &nodes.nodes) {
            let i = nodes
                .nodes
                .iter()
                .position(|m| !keeps_siblings(shape, numbering, std::slice::from_ref(m)))
                .unwrap_or(0);
            return Err(err(
                ErrorKind::Unsupported,
                &nodes.origins[i],
                format!("node {i} splits an SMT sibling group (the kernel keeps siblings in one node)"),
            ));
        }
        (shape, numbering, false)
    };
    let distances = check_distances(facts)?;
    let (nic_node, nic_interface, nic_from) = nic(facts, nic_node, nic_if, inputs)?;
    if let Some(node) = nic_node.filter(|&node| node as usize >= nodes.nodes.len()) {
        return Err(err(
            ErrorKind::Contradiction,
            &Origin::file(&nic_from),
            format!("the NIC's numa_node is {node} but the machine has nodes 0-{}", nodes.nodes.len() - 1),
        ));
    }
    Ok(Machine {
        shape,
        numbering,
        numbering_assumed,
        nodes: nodes.nodes,
        distances,
        nic_node,
        nic_interface,
        nic_from,
        model_name: facts.model_name.clone(),
    })
}
