//! The machine → topology file text, laid out like the hand-written files in
//! `topologies/` (comments saying where each part comes from, `[[numa.nodes]]` then the
//! SLIT). Strings are quoted by the `toml` crate; the rest are numbers and cpulists.

use super::build::Machine;
use crate::topology::CpuNumbering;
use std::fmt::Write as _;

/// Memory written for a node with CPUs when no input gives its size (MiB). Only zero vs
/// non-zero matters to the rig, which gives every node with memory `--mem-per-node`.
pub(crate) const ASSUMED_MEMORY_MIB: u64 = 1024;

/// A TOML basic string (quoted and escaped by the toml crate).
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// Text for a `#` comment: on one line whatever the input names hold.
fn comment(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// What the generated file says about its origin and the assumptions made.
pub(crate) struct Provenance<'a> {
    /// The topology's name.
    pub(crate) name: &'a str,
    /// Each input with what it held (`seed.txt: lscpu, numactl -H`).
    pub(crate) read: &'a [String],
    /// The input files' names, for `[source] id`.
    pub(crate) files: &'a [String],
}

/// A one-line description: model, shape, nodes, NIC.
pub(crate) fn description(m: &Machine) -> String {
    let s = m.shape;
    let count = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let dies = if s.dies > 1 { format!(" x {}", count(s.dies as usize, "die")) } else { String::new() };
    let nic = match (m.nic_node, &m.nic_interface) {
        (Some(n), Some(i)) => format!("NIC {i} on node {n}"),
        (Some(n), None) => format!("NIC on node {n}"),
        (None, _) => "NIC on no node (NUMA_NO_NODE)".to_owned(),
    };
    let model = m.model_name.as_deref().map_or(String::new(), |n| format!("{}, ", n.trim()));
    format!(
        "{model}{}{dies} x {} x {}, {}, {nic}",
        count(s.sockets as usize, "socket"),
        count(s.cores as usize, "core"),
        count(s.threads as usize, "thread"),
        count(m.nodes.len(), "NUMA node"),
    )
}

/// Notes on what was assumed rather than read (also printed on stderr by the CLI).
pub(crate) fn assumptions(m: &Machine) -> Vec<String> {
    let mut notes = Vec::new();
    if m.numbering_assumed {
        notes.push(format!(
            "CPU numbering assumed linux-smt-outer (siblings N and N+{}, as x86 server firmware usually numbers them): \
             the inputs fit both schemes; lscpu -p or a sysfs snapshot would tell",
            m.shape.total_cores()
        ));
    }
    if m.nodes.iter().any(|n| n.memory_mib.is_none()) {
        notes.push(format!("node memory is in no input: {ASSUMED_MEMORY_MIB} MiB written for each node with CPUs"));
    }
    if m.distances.is_none() && m.nodes.len() > 1 {
        notes.push("no distance matrix in the inputs: the kernel's 10/20 fallback applies (add numactl -H)".to_owned());
    }
    notes
}

/// The topology file text.
pub(crate) fn topology_toml(m: &Machine, p: &Provenance<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Imported by `manarig import` from {}.", comment(&p.read.join("; ")));
    for note in assumptions(m) {
        let _ = writeln!(out, "# Note: {}.", comment(&note));
    }
    let _ = writeln!(out, "name = {}", quoted(p.name));
    let _ = writeln!(out, "description = {}", quoted(&description(m)));
    if m.numbering == CpuNumbering::LinuxSmtOuter {
        let _ = writeln!(out, "\n# Real-machine numbering: the sibling of CPU N is N + {}.", m.shape.total_cores());
        let _ = writeln!(out, "cpu_numbering = \"linux-smt-outer\"");
    }
    let _ = writeln!(out, "\n[source]\nkind = \"report\"");
    let _ = writeln!(out, "id = {}", quoted(&format!("import:{}", p.files.join(","))));
    let wording = format!("imported from {}: {}", p.read.join("; "), description(m));
    let _ = writeln!(out, "wording = {}", quoted(&wording));
    let s = m.shape;
    let _ = writeln!(out, "\n[cpus]\nsockets = {}", s.sockets);
    if s.dies > 1 {
        let _ = writeln!(out, "dies = {}", s.dies);
    }
    let _ = writeln!(out, "cores = {}\nthreads = {}", s.cores, s.threads);
    for n in &m.nodes {
        let memory = n.memory_mib.unwrap_or(if n.cpus.is_empty() { 0 } else { ASSUMED_MEMORY_MIB });
        let _ = writeln!(out, "\n[[numa.nodes]]\ncpus = \"{}\"\nmemory_mib = {memory}", n.cpus.to_cpulist());
    }
    if let Some(rows) = &m.distances {
        let _ = writeln!(out, "\n[numa]\ndistances = [");
        for row in rows {
            let cells: Vec<String> = row.iter().map(u32::to_string).collect();
            let _ = writeln!(out, "  [{}],", cells.join(", "));
        }
        let _ = writeln!(out, "]");
    }
    let node = m.nic_node.map_or("\"none\"".to_owned(), |n| n.to_string());
    let iface = m.nic_interface.as_deref().unwrap_or("the NIC");
    let _ = writeln!(out, "\n[nic]\n# {}", comment(&format!("{iface}: {}", m.nic_from)));
    let _ = writeln!(out, "numa_node = {node}");
    let _ = writeln!(out, "\n[expect]\nverdict = \"pass\"");
    let why = "an imported machine: the guest should match the kernel's algorithms (no known kernel/model difference)";
    let _ = writeln!(out, "source = {}", quoted(why));
    out
}
