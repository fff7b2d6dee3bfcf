//! Validation: [`TopologyFile`] → [`Topology`], stopping at the first problem.
//!
//! Checks, in order: name; `[cpus]` counts (≥ 1, ≤ 8192 CPUs); nodes (cpulist syntax,
//! CPUs within the shape, no overlap, none missing, not empty, some memory, SMT sibling
//! groups within one node); the SLIT (square, diagonal 10, others 11..=255; an asymmetric
//! one is accepted with a warning);
//! the NIC (node exists or `"none"`, MSI-X table 1..=2048, `max_msix` ≥ 1,
//! `max_queues` ≥ 1, MAC syntax, `channels` within what the driver allows); `[scenario]`
//! (`scenario.rs`).

use super::arch::Arch;
use super::error::{Problem, TopologyError};
use super::file::{NicFile, NicNodeFile, TopologyFile};
use super::numbering::{CpuNumbering, CpuShape};
use super::{Expectation, Nic, Node, Source, Spec, Topology};
use crate::cpulist::{CpuMask, MAX_CPUS};
use crate::text::plural;

/// PCI MSI-X tables hold at most 2048 entries (Table Size field is 11 bits).
const MSIX_TABLE_MAX: u32 = 2048;
/// MANA_MAX_NUM_QUEUES in include/net/mana/gdma.h (all three kernels).
pub(crate) const MANA_MAX_NUM_QUEUES: u32 = 64;
/// vPorts a NIC may report here. The driver takes up to MAX_PORTS_IN_MANA_DEV (256,
/// include/net/mana/mana.h, Debian 6.12.117); the rig stops at 16 netdevs per NIC,
/// which keeps every vPort's MAC (last byte + port) distinct.
const MAX_PORTS: u32 = 16;
/// Boots with this many CPUs or more are marked slow by default.
pub(super) const SLOW_FROM_CPUS: u32 = 96;

struct Ctx<'a> {
    path: &'a str,
}

impl Ctx<'_> {
    fn err(&self, field: impl Into<String>, problem: Problem) -> TopologyError {
        TopologyError::Invalid { path: self.path.to_owned(), field: field.into(), problem }
    }
}

/// Validate a parsed file. `path` is only used in error messages.
pub(super) fn validate(path: &str, mut file: TopologyFile) -> Result<Topology, TopologyError> {
    let ctx = Ctx { path };
    if file.name.trim().is_empty() {
        return Err(ctx.err("name", Problem::Empty));
    }
    let shape = shape(&ctx, &file)?;
    let arch = file.machine.as_ref().map(|m| m.arch).unwrap_or_default();
    check_arch(path, arch, file.cpus.dies, file.cpus.clusters)?;
    let numbering = file.cpu_numbering;
    let nodes = nodes(&ctx, &file, shape)?;
    check_siblings(&ctx, &nodes, shape, numbering)?;
    let distances = distances(&ctx, &file, nodes.len())?;
    let warnings = asymmetry_warnings(path, &distances);
    let ncpu = shape.total_cpus();
    let entries = file.nic.entries();
    let names: Vec<String> = entries.iter().map(|(name, _)| name.clone()).collect();
    let mut nics = Vec::with_capacity(entries.len());
    for (k, (name, f)) in entries.iter().enumerate() {
        if k > 0 && f.channels.is_some() {
            return Err(ctx.err(format!("{name}.channels"), Problem::FirstNicOnly));
        }
        nics.push(nic(&ctx, name, f, nodes.len(), ncpu)?);
    }
    if nics.is_empty() {
        return Err(ctx.err("nic", Problem::Empty));
    }
    super::nics::check_across(path, &names, &nics)?;
    let scenario = super::scenario::validate(path, file.scenario.take(), shape, numbering)?;
    Ok(Topology::assemble(Spec {
        name: file.name,
        description: file.description,
        source: Source { kind: file.source.kind, id: file.source.id, wording: file.source.wording },
        numbering,
        arch,
        clusters: file.cpus.clusters,
        shape,
        nodes,
        distances,
        nics,
        expect: expectation(path, file.expect)?,
        slow: file.slow.unwrap_or(ncpu >= SLOW_FROM_CPUS),
        scenario,
        warnings,
    }))
}

/// One warning per asymmetric pair `i < j` of the SLIT. ACPI allows such a table and
/// Linux accepts it: `sched_init_numa()` (kernel/sched/topology.c, Debian 6.1.192 and
/// 6.12.117 read) prints "Node-distance not symmetric" only with `sched_verbose`, and
/// builds node j's hop masks from row j (`node_distance(j, k)`); the levels come from
/// every entry.
fn asymmetry_warnings(path: &str, d: &[Vec<u32>]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, row) in d.iter().enumerate() {
        for (j, &value) in row.iter().enumerate().skip(i + 1) {
            let reverse = d[j][i];
            if value != reverse {
                out.push(format!(
                    "{path}: numa.distances[{i}][{j}]: {value} but the reverse distance is {reverse}: an asymmetric \
                     SLIT; Linux accepts it (sched_init_numa() warns \"Node-distance not symmetric\" only with \
                     sched_verbose) and builds node {i}'s hop masks from row {i}, node {j}'s from row {j}"
                ));
            }
        }
    }
    out
}

fn shape(ctx: &Ctx<'_>, file: &TopologyFile) -> Result<CpuShape, TopologyError> {
    let c = &file.cpus;
    for (field, v) in
        [("sockets", c.sockets), ("dies", c.dies), ("clusters", c.clusters), ("cores", c.cores), ("threads", c.threads)]
    {
        if v == 0 {
            return Err(ctx.err(format!("cpus.{field}"), Problem::Zero));
        }
    }
    // Saturating: four u32 factors can exceed u64 (the error then names u64::MAX).
    let total = [c.dies, c.clusters, c.cores, c.threads]
        .iter()
        .fold(u64::from(c.sockets), |t, &v| t.saturating_mul(u64::from(v)));
    if total > u64::from(MAX_CPUS) {
        return Err(ctx.err("cpus", Problem::TooManyCpus { total, max: MAX_CPUS }));
    }
    // A cluster is a group of a die's cores: numbering (threads innermost, then
    // cores, clusters, dies, sockets, as QEMU's `-smp`) is the same as with the
    // die's cores in one run, so the shape counts cores per die.
    Ok(CpuShape { sockets: c.sockets, dies: c.dies, cores: c.clusters * c.cores, threads: c.threads })
}

/// What `arch` allows of the `[cpus]` levels: QEMU's arm `virt` machine has
/// no dies (`-smp dies=` is refused there), and clusters are shown to the
/// guest only on arm64 here (QEMU's x86 machines call them modules and the
/// rig does not declare them).
///
/// # Errors
/// [`Problem::ArchLevel`] for `cpus.dies` on arm64 or `cpus.clusters` on x86_64.
pub(super) fn check_arch(path: &str, arch: Arch, dies: u32, clusters: u32) -> Result<(), TopologyError> {
    let ctx = Ctx { path };
    if arch == Arch::Arm64 && dies > 1 {
        return Err(ctx.err("cpus.dies", Problem::ArchLevel { level: "dies", arch, count: dies }));
    }
    if arch == Arch::X86_64 && clusters > 1 {
        return Err(ctx.err("cpus.clusters", Problem::ArchLevel { level: "clusters", arch, count: clusters }));
    }
    Ok(())
}

fn nodes(ctx: &Ctx<'_>, file: &TopologyFile, shape: CpuShape) -> Result<Vec<Node>, TopologyError> {
    if file.numa.nodes.is_empty() {
        return Err(ctx.err("numa.nodes", Problem::NoNodes));
    }
    let total = shape.total_cpus();
    let all = CpuMask::first_n(total);
    let mut nodes: Vec<Node> = Vec::with_capacity(file.numa.nodes.len());
    for (i, n) in file.numa.nodes.iter().enumerate() {
        let field = format!("numa.nodes[{i}].cpus");
        let cpus = CpuMask::parse_cpulist(&n.cpus).map_err(|e| ctx.err(&field, Problem::Cpulist(e)))?;
        let beyond = cpus.andnot(&all);
        if !beyond.is_empty() {
            let shape_text = format!(
                "{} × {} × {} × {}",
                plural(shape.sockets, "socket"),
                plural(shape.dies, "die"),
                plural(shape.cores, "core"),
                plural(shape.threads, "thread")
            );
            return Err(ctx.err(field, Problem::CpusBeyond { cpus: beyond, total, shape: shape_text }));
        }
        if let Some((other, shared)) =
            nodes.iter().enumerate().map(|(j, o)| (j, o.cpus.and(&cpus))).find(|(_, s)| !s.is_empty())
        {
            return Err(ctx.err(field, Problem::Overlap { cpus: shared, other }));
        }
        if cpus.is_empty() && n.memory_mib == 0 {
            return Err(ctx.err(format!("numa.nodes[{i}]"), Problem::EmptyNode));
        }
        nodes.push(Node { id: i as u32, cpus, memory_mib: n.memory_mib });
    }
    let assigned = nodes.iter().fold(CpuMask::new(), |acc, n| acc.or(&n.cpus));
    let missing = all.andnot(&assigned);
    if !missing.is_empty() {
        return Err(ctx.err("numa.nodes", Problem::Missing { cpus: missing }));
    }
    if nodes.iter().all(|n| n.memory_mib == 0) {
        return Err(ctx.err("numa.nodes", Problem::NoMemory));
    }
    Ok(nodes)
}

fn check_siblings(
    ctx: &Ctx<'_>,
    nodes: &[Node],
    shape: CpuShape,
    numbering: CpuNumbering,
) -> Result<(), TopologyError> {
    let node_of = |cpu: u32| nodes.iter().position(|n| n.cpus.contains(cpu)).unwrap_or(usize::MAX);
    for (i, node) in nodes.iter().enumerate() {
        for cpu in node.cpus.iter() {
            let loc = shape.location(numbering, cpu);
            for t in 0..shape.threads {
                let sibling = shape.cpu_id(numbering, super::numbering::CpuLocation { thread: t, ..loc });
                let sibling_node = node_of(sibling);
                if sibling_node != i {
                    return Err(ctx.err(
                        format!("numa.nodes[{i}].cpus"),
                        Problem::SiblingSplit { cpu, node: i, sibling, sibling_node },
                    ));
                }
            }
        }
    }
    Ok(())
}

fn distances(ctx: &Ctx<'_>, file: &TopologyFile, n: usize) -> Result<Vec<Vec<u32>>, TopologyError> {
    let Some(rows) = &file.numa.distances else {
        // No SLIT: node_distance() is 10 on the diagonal, 20 elsewhere (arch/x86/mm/numa.c).
        return Ok((0..n).map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect()).collect());
    };
    if rows.len() != n {
        return Err(ctx.err("numa.distances", Problem::Rows { rows: rows.len(), nodes: n }));
    }
    for (i, row) in rows.iter().enumerate() {
        if row.len() != n {
            return Err(ctx.err(format!("numa.distances[{i}]"), Problem::RowLength { len: row.len(), nodes: n }));
        }
        for (j, &value) in row.iter().enumerate() {
            let field = format!("numa.distances[{i}][{j}]");
            if i == j && value != 10 {
                return Err(ctx.err(field, Problem::LocalDistance { value }));
            }
            if i != j && !(11..=255).contains(&value) {
                return Err(ctx.err(field, Problem::RemoteDistance { value }));
            }
        }
    }
    // Range-checked above: every value is 10..=255.
    Ok(rows.iter().map(|r| r.iter().map(|&v| v as u32).collect()).collect())
}

/// One NIC's fields; `name` is its TOML path in errors (`nic`, `nic[1]`).
fn nic(ctx: &Ctx<'_>, name: &str, f: &NicFile, nnodes: usize, ncpu: u32) -> Result<Nic, TopologyError> {
    let field = |leaf: &str| format!("{name}.{leaf}");
    let node = match &f.numa_node {
        NicNodeFile::Id(id) if (0..nnodes as i64).contains(id) => Some(*id as u32),
        NicNodeFile::Id(id) => {
            return Err(ctx.err(field("numa_node"), Problem::NoSuchNode { node: *id, last: nnodes - 1 }))
        }
        NicNodeFile::Name(s) if s == "none" => None,
        NicNodeFile::Name(s) => return Err(ctx.err(field("numa_node"), Problem::NodeName { value: s.clone() })),
    };
    let table = f.msix_table_size.unwrap_or(ncpu.min(MANA_MAX_NUM_QUEUES) + 1);
    if !(1..=MSIX_TABLE_MAX).contains(&table) {
        let problem = Problem::Range { value: table.into(), min: 1, max: MSIX_TABLE_MAX.into() };
        return Err(ctx.err(field("msix_table_size"), problem));
    }
    let max_msix = f.max_msix.unwrap_or(table);
    if max_msix == 0 {
        return Err(ctx.err(field("max_msix"), Problem::Zero));
    }
    let max_queues = f.max_queues.unwrap_or(MANA_MAX_NUM_QUEUES);
    if max_queues == 0 {
        return Err(ctx.err(field("max_queues"), Problem::Zero));
    }
    // ethtool -L refuses more combined channels than the driver's maximum
    // (mana_get_channels(): max_combined = max_num_queues), which is at most
    // min(ncpu, MANA_MAX_NUM_QUEUES, max_eq.., MSI-X vectors - 1 for the HWC)
    // (mana_gd_query_max_resources(), gdma_main.c, Linux 6.1-7.3).
    if let Some(channels) = f.channels {
        let most = max_channels(ncpu, max_queues, table, max_msix);
        if channels == 0 || channels > most {
            let problem = Problem::Range { value: channels.into(), min: 1, max: most.into() };
            return Err(ctx.err(field("channels"), problem));
        }
    }
    let mac = match &f.mac {
        None => None,
        Some(s) => Some(parse_mac(s).ok_or_else(|| ctx.err(field("mac"), Problem::Mac { value: s.clone() }))?),
    };
    let num_ports = f.num_ports.unwrap_or(1);
    if !(1..=MAX_PORTS).contains(&num_ports) {
        let problem = Problem::Range { value: num_ports.into(), min: 1, max: MAX_PORTS.into() };
        return Err(ctx.err(field("num_ports"), problem));
    }
    Ok(Nic {
        num_ports,
        node,
        msix_table_size: table,
        max_msix,
        max_queues,
        dynamic_msix: f.dynamic_msix.unwrap_or(true),
        mac,
        channels: f.channels,
        inject: f.inject.clone(),
    })
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return None;
    }
    let mut mac = [0u8; 6];
    for (b, p) in mac.iter_mut().zip(parts) {
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    Some(mac)
}

/// The most combined channels `ethtool -L` accepts: the driver's
/// max_num_queues = min(CPUs, MANA_MAX_NUM_QUEUES, the device's max_queues,
/// MSI-X vectors - 1 for the HWC) (mana_gd_query_max_resources(), gdma_main.c,
/// Linux 6.1-7.3).
pub(crate) fn max_channels(ncpu: u32, max_queues: u32, msix_table_size: u32, max_msix: u32) -> u32 {
    ncpu.min(MANA_MAX_NUM_QUEUES).min(max_queues).min(msix_table_size.min(max_msix).saturating_sub(1))
}

/// `[expect]` with its `[expect.on."GEN"]` entries, each key a kernel generation.
fn expectation(path: &str, e: super::file::ExpectFile) -> Result<Expectation, TopologyError> {
    let mut on = std::collections::BTreeMap::new();
    for (key, o) in e.on {
        if !super::GENERATIONS.contains(&key.as_str()) {
            return Err(TopologyError::Invalid {
                path: path.to_owned(),
                field: format!("expect.on.\"{key}\""),
                problem: super::error::Problem::KernelGen { value: key.clone() },
            });
        }
        on.insert(key, (o.verdict, o.source));
    }
    Ok(Expectation { verdict: e.verdict, source: e.source, on })
}
