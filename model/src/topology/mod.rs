//! Topology files: one machine (CPU shape, NUMA nodes, SLIT, MANA NIC) plus where it
//! comes from and what a rig run should conclude.
//!
//! Public API:
//! - [`Topology::load`] / [`Topology::from_toml_str`] → a validated [`Topology`] or one
//!   [`TopologyError`] (one line: `file: field: problem`);
//! - accessors for the kernel's view: [`Topology::ncpu`], [`Topology::node_cpus`],
//!   [`Topology::distance`], [`Topology::siblings`] (`topology_sibling_cpumask`),
//!   [`Topology::core_of`], [`Topology::node_of`];
//! - the CPU numbering bridge for the QEMU launcher: [`Topology::qemu_index`],
//!   [`Topology::cpu_of_qemu_index`], [`Topology::qemu_node_cpus`], and
//!   [`Topology::to_qemu_numbering`] (the machine as a QEMU guest numbers it, which is
//!   what the guest kernel's algorithms see);
//! - the node ids a guest on x86 shows: [`Topology::x86_node_order`], and
//!   [`Topology::check_guest_node_ids`] (a [`TopologyError::NodeOrder`] for a file the rig
//!   cannot boot as written);
//! - [`TopologyDraft`]: a file as editable data ([`TopologyDraft::validate`] through the
//!   file path), and [`Topology::to_toml`]: a topology back to file text.
//!
//! The file format is documented with examples in `topologies/README.md`.

mod arch;
mod draft;
mod error;
mod file;
mod nics;
mod node_order;
mod numbering;
mod scenario;
mod scenario_problem;
mod validate;

pub use arch::{Arch, ArchParseError};
pub use draft::{NicDraft, NodeDraft, TopologyDraft};
pub use error::{Problem, TopologyError};
pub use file::{ExpectedVerdict, SourceKind};
pub use nics::{default_mac, port_mac, MAX_NICS};
pub use node_order::{NodeRenumbering, RenumberedNode};
pub use numbering::{CpuLocation, CpuNumbering, CpuShape};
pub use scenario::{CpuStep, Isolcpus, Scenario, ScenarioFile, ISOLCPUS_FLAGS};
pub use scenario_problem::ScenarioProblem;

use crate::cpulist::CpuMask;
use serde::Serialize;
use std::path::Path;

/// Where a topology comes from.
#[derive(Debug, Clone, Serialize)]
pub struct Source {
    /// Seed, public report, review or synthetic.
    pub kind: SourceKind,
    /// Seed number or report id (`002`, `R08`).
    pub id: String,
    /// What the source says, in our words.
    pub wording: String,
}

/// One NUMA node.
#[derive(Debug, Clone, Serialize)]
pub struct Node {
    /// Node id (position in the file).
    pub id: u32,
    /// Its CPUs, in the file's numbering; empty for a memory-only node.
    pub cpus: CpuMask,
    /// Its memory in MiB; 0 for a CPU-only node.
    pub memory_mib: u64,
}

/// The emulated MANA NIC, with defaults resolved.
#[derive(Debug, Clone, Serialize)]
pub struct Nic {
    /// PCI device node; `None` = NUMA_NO_NODE (`numa_node` reads -1 in the guest).
    pub node: Option<u32>,
    /// MSI-X table size (entries).
    pub msix_table_size: u32,
    /// `max_msix` reported by GDMA_QUERY_MAX_RESOURCES.
    pub max_msix: u32,
    /// `max_eq` = `max_cq` = `max_sq` = `max_rq` reported by GDMA_QUERY_MAX_RESOURCES.
    pub max_queues: u32,
    /// Whether `pci_msix_can_alloc_dyn()` is true (QEMU x86: yes).
    pub dynamic_msix: bool,
    /// vport 0's MAC address, if the file sets one.
    pub mac: Option<[u8; 6]>,
    /// Combined channels to set with `ethtool -L` in the guest, if the file sets them.
    pub channels: Option<u32>,
    /// `inject`: fault-injection specs for the emulated NIC, as written (the
    /// harness parses them: device_model::inject); empty by default.
    pub inject: Vec<String>,
    /// vPorts reported in MANA_QUERY_DEV_CONFIG (`max_num_vports`, ≥ 1).
    pub num_ports: u32,
}

/// What a rig run on this machine should conclude.
#[derive(Debug, Clone, Serialize)]
pub struct Expectation {
    /// The expected verdict.
    pub verdict: ExpectedVerdict,
    /// Why (seed, report, kernel algorithm).
    pub source: String,
    /// What one kernel generation is expected to do instead (`[expect.on."7.x"]`),
    /// keyed by the generation's name ([`GENERATIONS`]): its verdict and source.
    pub on: std::collections::BTreeMap<String, (ExpectedVerdict, String)>,
}

/// The kernel generations `[expect.on]` takes, by the names the model gives
/// them (`KernelGen::as_str`).
pub const GENERATIONS: [&str; 4] = ["6.1", "6.3", "6.12", "7.x"];

impl Expectation {
    /// The expectation of a run on the generation named `gen` (`7.x`): its
    /// `[expect.on]` entry, else the file's.
    pub fn on(&self, gen: &str) -> (ExpectedVerdict, &str) {
        match self.on.get(gen) {
            Some((v, s)) => (*v, s.as_str()),
            None => (self.verdict, self.source.as_str()),
        }
    }
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// What a topology file declares, validated (see [`Topology`] for the derived parts).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Spec {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) source: Source,
    pub(crate) numbering: CpuNumbering,
    /// `[machine] arch` (left out of the JSON when x86_64, as before it existed).
    #[serde(skip_serializing_if = "Arch::is_x86_64")]
    pub(crate) arch: Arch,
    /// Clusters per die; `shape.cores` counts the cores of all of a die's clusters.
    #[serde(skip_serializing_if = "is_one")]
    pub(crate) clusters: u32,
    pub(crate) shape: CpuShape,
    pub(crate) nodes: Vec<Node>,
    /// `distances[i][j]`, always n×n (10/20 when the file has no SLIT).
    pub(crate) distances: Vec<Vec<u32>>,
    /// NIC 0 first; never empty.
    pub(crate) nics: Vec<Nic>,
    pub(crate) expect: Expectation,
    pub(crate) slow: bool,
    /// `[scenario]` (the default when the file has none).
    pub(crate) scenario: Scenario,
    /// What the file asks for that the kernel accepts with a warning (an asymmetric
    /// SLIT), one line each, naming the field.
    #[serde(skip)]
    pub(crate) warnings: Vec<String>,
}

/// A validated machine description. All CPUs are present; which are online at the
/// probe and after it is the [`Scenario`]'s business.
#[derive(Debug, Clone, Serialize)]
pub struct Topology {
    #[serde(flatten)]
    spec: Spec,
    /// Node of each CPU id.
    #[serde(skip)]
    cpu_node: Vec<u32>,
    /// `topology_sibling_cpumask()` of each CPU id.
    #[serde(skip)]
    siblings: Vec<CpuMask>,
}

/// The file's TOML as [`file::TopologyFile`]; a wrong type, unknown field or bad
/// variant names the field's TOML path (`numa.nodes[0].cpus`) after `:line:column`,
/// the way [`TopologyError::Invalid`] does.
fn parse(path: &str, text: &str) -> Result<file::TopologyFile, TopologyError> {
    serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
        // `.` is the document itself (TOML syntax errors): no field to name.
        let field = e.path().to_string();
        let field = (field != ".").then_some(field);
        syntax_error(path, text, field.as_deref(), e.inner())
    })
}

fn syntax_error(path: &str, text: &str, field: Option<&str>, e: &toml::de::Error) -> TopologyError {
    let location = match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |p| p + 1) + 1;
            format!(":{line}:{col}")
        }
        None => String::new(),
    };
    let message = e.message().lines().collect::<Vec<_>>().join(" ");
    let message = field.map_or_else(|| message.clone(), |f| format!("{f}: {message}"));
    TopologyError::Syntax { path: path.to_owned(), location, message }
}

impl Topology {
    /// Read and validate a topology file.
    ///
    /// # Errors
    /// [`TopologyError`]: unreadable file, TOML syntax/unknown field/type errors (with
    /// `:line:column`), or the first invalid field.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, TopologyError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| TopologyError::Read { path: shown.clone(), error })?;
        Self::from_toml_str(&shown, &text)
    }

    /// Parse and validate topology TOML; `path` only names the origin in errors.
    ///
    /// # Errors
    /// As [`Topology::load`], minus the read error.
    pub fn from_toml_str(path: &str, text: &str) -> Result<Self, TopologyError> {
        validate::validate(path, parse(path, text)?)
    }

    fn assemble(spec: Spec) -> Self {
        let (shape, numbering) = (spec.shape, spec.numbering);
        let ncpu = shape.total_cpus();
        let mut cpu_node = vec![0; ncpu as usize];
        for n in &spec.nodes {
            for cpu in n.cpus.iter() {
                cpu_node[cpu as usize] = n.id;
            }
        }
        let siblings = (0..ncpu)
            .map(|cpu| {
                let loc = shape.location(numbering, cpu);
                (0..shape.threads).map(|t| shape.cpu_id(numbering, CpuLocation { thread: t, ..loc })).collect()
            })
            .collect();
        Self { spec, cpu_node, siblings }
    }

    /// Machine name (`seed-002`).
    pub fn name(&self) -> &str {
        &self.spec.name
    }
    /// Free-text description, if any.
    pub fn description(&self) -> Option<&str> {
        self.spec.description.as_deref()
    }
    /// Where the machine comes from.
    pub fn source(&self) -> &Source {
        &self.spec.source
    }
    /// The file's CPU numbering.
    pub fn numbering(&self) -> CpuNumbering {
        self.spec.numbering
    }
    /// The `-smp` shape (its `cores` are per die: all of a die's clusters).
    pub fn shape(&self) -> CpuShape {
        self.spec.shape
    }
    /// The guest architecture (`[machine] arch`, default x86_64).
    pub fn arch(&self) -> Arch {
        self.spec.arch
    }
    /// Clusters per die (1 unless the file sets `cpus.clusters`).
    pub fn clusters(&self) -> u32 {
        self.spec.clusters
    }
    /// Cores per cluster (`shape().cores / clusters()`).
    pub fn cores_per_cluster(&self) -> u32 {
        self.spec.shape.cores / self.spec.clusters
    }
    /// This machine as another architecture boots it (`--arch`), or the
    /// problem that architecture has with it (more than one die on arm64,
    /// clusters on x86_64).
    ///
    /// # Errors
    /// [`TopologyError::Invalid`] naming the `[cpus]` field, as a file with
    /// `[machine] arch` set so would get.
    pub fn with_arch(&self, arch: Arch, path: &str) -> Result<Self, TopologyError> {
        validate::check_arch(path, arch, self.spec.shape.dies, self.spec.clusters)?;
        let mut t = self.clone();
        t.spec.arch = arch;
        Ok(t)
    }
    /// The NUMA nodes, node id = index.
    pub fn nodes(&self) -> &[Node] {
        &self.spec.nodes
    }
    /// NIC 0 (the only NIC of a `[nic]` file), defaults resolved.
    pub fn nic(&self) -> &Nic {
        &self.spec.nics[0]
    }
    /// Every NIC, NIC 0 first (`[[nic]]` order), defaults resolved.
    pub fn nics(&self) -> &[Nic] {
        &self.spec.nics
    }
    /// NIC `index`'s vPort 0 MAC address: the file's, else [`default_mac`]`(index)`.
    /// `None` for an index beyond [`Topology::nics`].
    pub fn nic_mac(&self, index: usize) -> Option<[u8; 6]> {
        self.spec.nics.get(index).map(|n| n.mac.unwrap_or_else(|| default_mac(index)))
    }
    /// The same machine with NIC `index` as its only NIC: what the kernel's per-device
    /// algorithms see for that NIC (MANA spreads each device's vectors on its own;
    /// nothing in gdma_main.c looks at another device's IRQs, Linux 6.1-7.3). `None`
    /// for an index beyond [`Topology::nics`].
    pub fn with_only_nic(&self, index: usize) -> Option<Self> {
        let nic = self.spec.nics.get(index)?.clone();
        let mac = self.nic_mac(index);
        Some(Self {
            spec: Spec { nics: vec![Nic { mac, ..nic }], ..self.spec.clone() },
            cpu_node: self.cpu_node.clone(),
            siblings: self.siblings.clone(),
        })
    }
    /// The most combined channels `ethtool -L` accepts on this machine (see
    /// `nic.channels` in topologies/README.md).
    pub fn max_channels(&self) -> u32 {
        let n = self.nic();
        validate::max_channels(self.ncpu(), n.max_queues, n.msix_table_size, n.max_msix)
    }
    /// The expected outcome.
    pub fn expect(&self) -> &Expectation {
        &self.spec.expect
    }
    /// Whether a guest boot of this machine is slow (≥ 96 CPUs unless the file says).
    pub fn slow(&self) -> bool {
        self.spec.slow
    }

    /// Lines to show the user (on stderr) about values the kernel accepts with a
    /// warning: each names the file, the field and what the kernel does with it.
    pub fn warnings(&self) -> &[String] {
        &self.spec.warnings
    }

    /// Number of CPUs (all present; also `nr_cpu_ids`).
    pub fn ncpu(&self) -> u32 {
        self.spec.shape.total_cpus()
    }
    /// All CPUs (`cpu_present_mask`; `cpu_online_mask` without a [`Scenario`]: see
    /// [`Topology::probe_online`]).
    pub fn online(&self) -> CpuMask {
        CpuMask::first_n(self.ncpu())
    }
    /// `cpumask_of_node(node)`: the node's CPUs (empty for a memory-only node or an
    /// unknown id).
    pub fn node_cpus(&self, node: u32) -> CpuMask {
        self.spec.nodes.get(node as usize).map(|n| n.cpus.clone()).unwrap_or_default()
    }
    /// `node_distance(a, b)` as the kernel sees it (SLIT, or 10/20 without one).
    /// Unknown node ids give 20 (REMOTE_DISTANCE) like x86's `__node_distance()`.
    pub fn distance(&self, a: u32, b: u32) -> u32 {
        self.spec.distances.get(a as usize).and_then(|row| row.get(b as usize)).copied().unwrap_or(if a == b {
            10
        } else {
            20
        })
    }
    /// The full distance matrix (n×n).
    pub fn distances(&self) -> &[Vec<u32>] {
        &self.spec.distances
    }
    /// Node of a CPU (`cpu_to_node`); `None` for an id beyond the machine.
    pub fn node_of(&self, cpu: u32) -> Option<u32> {
        self.cpu_node.get(cpu as usize).copied()
    }
    /// `topology_sibling_cpumask(cpu)`: the CPU's SMT sibling group (itself included);
    /// empty for an id beyond the machine.
    pub fn siblings(&self, cpu: u32) -> &CpuMask {
        static EMPTY: CpuMask = CpuMask::new();
        self.siblings.get(cpu as usize).unwrap_or(&EMPTY)
    }
    /// Physical core id of a CPU (`(socket * dies + die) * cores + core`), as the seeds'
    /// "Cores" column counts them.
    pub fn core_of(&self, cpu: u32) -> u32 {
        self.spec.shape.global_core(self.spec.shape.location(self.spec.numbering, cpu))
    }
    /// Socket/die/core/thread of a CPU id (`cpu < ncpu()`).
    pub fn location(&self, cpu: u32) -> CpuLocation {
        self.spec.shape.location(self.spec.numbering, cpu)
    }

    /// QEMU cpu index of a file CPU id (`cpu < ncpu()`); identity for `qemu` numbering.
    pub fn qemu_index(&self, cpu: u32) -> u32 {
        self.spec.shape.qemu_index(self.location(cpu))
    }
    /// File CPU id of a QEMU cpu index (= the guest's Linux CPU id), `idx < ncpu()`.
    pub fn cpu_of_qemu_index(&self, idx: u32) -> u32 {
        self.spec.shape.cpu_id(self.spec.numbering, self.spec.shape.location_of_qemu_index(idx))
    }
    /// A node's CPUs as QEMU cpu indices (for `-numa node,cpus=`).
    pub fn qemu_node_cpus(&self, node: u32) -> CpuMask {
        self.node_cpus(node).iter().map(|c| self.qemu_index(c)).collect()
    }

    /// The same machine numbered as a QEMU guest numbers it (Linux CPU id = QEMU cpu
    /// index). Identity for `qemu` numbering. The guest kernel's spreading algorithms walk
    /// CPU ids in ascending order, so for a `linux-smt-outer` file the guest's expected
    /// table is `expected_table(&topo.to_qemu_numbering(), …)`, not the file's.
    pub fn to_qemu_numbering(&self) -> Self {
        if self.spec.numbering == CpuNumbering::Qemu {
            return self.clone();
        }
        let nodes = self
            .spec
            .nodes
            .iter()
            .map(|n| Node { id: n.id, cpus: self.qemu_node_cpus(n.id), memory_mib: n.memory_mib })
            .collect();
        let scenario = self.spec.scenario.map_cpus(|c| self.qemu_index(c));
        Self::assemble(Spec { numbering: CpuNumbering::Qemu, nodes, scenario, ..self.spec.clone() })
    }
}

#[cfg(test)]
mod tests;
