//! Random valid topologies: the machine shapes the seeds, the reports and the topology
//! README describe, drawn at random (see [`super::generate`] for the distribution).

use super::prng::Rng;
use crate::cpulist::{CpuMask, MAX_CPUS};
use crate::topology::{
    CpuLocation, CpuNumbering, CpuShape, Expectation, ExpectedVerdict, NicDraft, NodeDraft, Source, SourceKind,
    TopologyDraft,
};

/// Most NUMA nodes a random machine gets.
pub(crate) const MAX_NODES: u32 = 8;
/// Guest memory a random machine gets in total, spread over its memory nodes (MiB).
const TOTAL_MEMORY_MIB: u64 = 1024;
/// The least memory a node with memory gets (MiB).
const MIN_NODE_MEMORY_MIB: u64 = 128;
/// SLIT values the generator draws from: few, so that ties are common.
const DISTANCES: [u32; 9] = [11, 12, 16, 17, 20, 21, 22, 28, 32];

/// The shape: SMT on or off, 1-4 sockets, one die per socket, cores to fit `max_cpus`.
/// Never several dies: the rig refuses them (QEMU 11.1 cannot show dies to a guest,
/// and mana's spreading looks at nodes and SMT siblings, not dies), and a generated
/// machine must boot.
fn shape(rng: &mut Rng, max_cpus: u32) -> CpuShape {
    let threads = if max_cpus >= 2 && rng.chance(1, 2) { 2 } else { 1 };
    let max_cores = (max_cpus / threads).max(1);
    let sockets = rng.range(1, max_cores.min(4));
    let dies = 1;
    let cores = rng.range(1, max_cores / (sockets * dies));
    CpuShape { sockets, dies, cores, threads }
}

/// Split cores `0..total` into `k` non-empty runs of consecutive cores.
fn core_runs(rng: &mut Rng, total: u32, k: u32) -> Vec<std::ops::Range<u32>> {
    let mut cuts: Vec<u32> = if total % k == 0 && rng.chance(1, 2) {
        (1..k).map(|i| i * total / k).collect()
    } else {
        let mut all: Vec<u32> = (1..total).collect();
        rng.shuffle(&mut all);
        all.truncate((k - 1) as usize);
        all
    };
    cuts.sort_unstable();
    let mut bounds = vec![0];
    bounds.extend(cuts);
    bounds.push(total);
    bounds.windows(2).map(|w| w[0]..w[1]).collect()
}

/// The CPUs of a run of global cores under `numbering` (every thread of each core, so
/// sibling groups never straddle nodes).
fn cpus_of(shape: CpuShape, numbering: CpuNumbering, cores: std::ops::Range<u32>) -> CpuMask {
    let per_die = shape.cores;
    let mut out = CpuMask::new();
    for g in cores {
        let loc = CpuLocation {
            socket: g / (shape.dies * per_die),
            die: g / per_die % shape.dies,
            core: g % per_die,
            thread: 0,
        };
        for thread in 0..shape.threads {
            out.insert(shape.cpu_id(numbering, CpuLocation { thread, ..loc }));
        }
    }
    out
}

/// CPU nodes from contiguous core runs, sometimes shuffled, plus up to two memory-only
/// nodes at random places; memory spread so that the machine has [`TOTAL_MEMORY_MIB`],
/// some CPU nodes CPU-only. [`draft`] then gives the nodes Linux's x86 ids
/// ([`TopologyDraft::into_x86_node_order`]): the shuffle and the places decide which node gets which SLIT
/// row and memory, not the ids.
fn nodes(rng: &mut Rng, shape: CpuShape, numbering: CpuNumbering) -> Vec<NodeDraft> {
    let total = shape.total_cores();
    let k = rng.range(1, total.min(MAX_NODES));
    let mut cpu_nodes: Vec<CpuMask> =
        core_runs(rng, total, k).into_iter().map(|r| cpus_of(shape, numbering, r)).collect();
    if rng.chance(1, 4) {
        rng.shuffle(&mut cpu_nodes);
    }
    let memory_only = if k < MAX_NODES && rng.chance(1, 4) { rng.range(1, (MAX_NODES - k).min(2)) } else { 0 };
    let mut nodes: Vec<(CpuMask, bool)> = cpu_nodes.into_iter().map(|c| (c, !rng.chance(1, 6))).collect();
    for _ in 0..memory_only {
        let at = rng.range(0, u32::try_from(nodes.len()).unwrap_or(0)) as usize;
        nodes.insert(at, (CpuMask::new(), true));
    }
    if nodes.iter().all(|(_, mem)| !mem) {
        nodes[0].1 = true;
    }
    let with_memory = nodes.iter().filter(|(_, mem)| *mem).count() as u64;
    let each = (TOTAL_MEMORY_MIB / with_memory.max(1) / 64 * 64).max(MIN_NODE_MEMORY_MIB);
    nodes.into_iter().map(|(cpus, mem)| NodeDraft { cpus, memory_mib: if mem { each } else { 0 } }).collect()
}

/// A symmetric SLIT, or none (a quarter of the time): nodes fall into 1-3 groups,
/// near inside a group and far across, then a few pairs get another value; the small
/// value set makes ties (several nodes at one distance) the rule.
fn distances(rng: &mut Rng, n: usize) -> Option<Vec<Vec<u32>>> {
    if n == 1 || rng.chance(1, 4) {
        return None;
    }
    let groups = rng.range(1, 3);
    let group: Vec<u32> = (0..n).map(|_| rng.below(groups)).collect();
    let near = rng.pick(&DISTANCES[..4]).unwrap_or(11);
    let far = rng.pick(&DISTANCES[4..]).unwrap_or(20);
    let mut d = vec![vec![10; n]; n];
    for i in 0..n {
        for j in i + 1..n {
            let v = if rng.chance(1, 4) {
                rng.pick(&DISTANCES).unwrap_or(20)
            } else if group[i] == group[j] {
                near
            } else {
                far
            };
            d[i][j] = v;
            d[j][i] = v;
        }
    }
    Some(d)
}

/// The NIC: on any node (memory-only ones too) or NUMA_NO_NODE; half the time the
/// default MSI-X budget, else a small table (1 entry too: the probe must fail), now and
/// then a larger one; sometimes `max_msix` or `max_queues`.
///
/// Never `dynamic_msix = false`: a generated machine must boot as written, and QEMU's
/// x86 MSI domains always allow dynamic MSI-X, so a 7.x guest never takes the static
/// path such a file describes (the rig refuses it: `harness/crates/rig/src/rig/machine.rs`). The
/// model's static 7.x path is exercised on generated machines by flipping the field
/// in the tests instead.
fn nic(rng: &mut Rng, ncpu: u32, nnodes: u32) -> NicDraft {
    let want = ncpu.min(64) + 1;
    let node = if rng.chance(1, 8) { None } else { Some(rng.below(nnodes)) };
    let msix_table_size = match rng.below(8) {
        0..=3 => None,
        4..=6 => Some(rng.range(1, want)),
        _ => Some(want + rng.range(1, 64)),
    };
    let table = msix_table_size.unwrap_or(want);
    NicDraft {
        node,
        msix_table_size,
        max_msix: rng.chance(1, 3).then(|| rng.range(1, table + 2)),
        max_queues: rng.chance(1, 4).then(|| rng.range(1, 16)),
        dynamic_msix: None,
        mac: None,
        channels: None,
        num_ports: None,
    }
}

/// Topology `index` of `seed` as a draft (valid by construction; [`super::generate`]
/// checks it through the file path anyway).
pub(crate) fn draft(seed: u64, index: u64, max_cpus: u32) -> TopologyDraft {
    let max_cpus = max_cpus.clamp(1, MAX_CPUS);
    let mut rng = Rng::for_item(seed, index);
    let shape = shape(&mut rng, max_cpus);
    let numbering =
        if shape.threads > 1 && rng.chance(1, 6) { CpuNumbering::LinuxSmtOuter } else { CpuNumbering::Qemu };
    let nodes = nodes(&mut rng, shape, numbering);
    let distances = distances(&mut rng, nodes.len());
    let nic = nic(&mut rng, shape.total_cpus(), u32::try_from(nodes.len()).unwrap_or(1));
    let mut draft = TopologyDraft {
        name: format!("random-s{seed}-{index}"),
        description: None,
        source: Source {
            kind: SourceKind::Synthetic,
            id: String::new(),
            wording: format!("manarig_model::random::generate(seed {seed}, max_cpus {max_cpus}), topology #{index}"),
        },
        numbering,
        arch: crate::topology::Arch::X86_64,
        clusters: 1,
        shape,
        nodes,
        distances,
        nic,
        more_nics: Vec::new(),
        expect: Expectation {
            on: std::collections::BTreeMap::new(),
            verdict: ExpectedVerdict::Pass,
            source: "a random machine: the reference model's table is the expectation".to_owned(),
        },
        slow: None,
        scenario: crate::topology::Scenario::default(),
    };
    // Node ids as a guest on x86 shows them (TopologyDraft::x86_node_order): the rig
    // compares the guest's ids with the file's, so the file must use them.
    draft.into_x86_node_order();
    draft
}
