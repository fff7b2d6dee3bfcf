//! The on-disk shape of a topology file (TOML, `deny_unknown_fields` everywhere).
//!
//! These structs are only the syntax; [`super::validate`] turns them into a
//! [`super::Topology`] or one [`super::TopologyError`]. The format is documented with
//! an example in `topologies/README.md`.

use super::numbering::CpuNumbering;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// A whole topology file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyFile {
    /// Short machine name, e.g. `seed-002`.
    pub name: String,
    /// Free text shown in reports.
    #[serde(default)]
    pub description: Option<String>,
    /// Where this machine comes from.
    pub source: SourceFile,
    /// How the file's CPU ids map to socket/die/core/thread (default `qemu`).
    #[serde(default)]
    pub cpu_numbering: CpuNumbering,
    /// `[machine]`: the guest architecture (default x86_64).
    #[serde(default)]
    pub machine: Option<MachineFile>,
    /// The CPU shape (`-smp`).
    pub cpus: CpusFile,
    /// NUMA nodes and distances.
    pub numa: NumaFile,
    /// The emulated MANA NIC: one `[nic]` table, or a `[[nic]]` array of them.
    pub nic: NicsFile,
    /// The expected outcome of a rig run.
    pub expect: ExpectFile,
    /// Whether a guest boot is slow (default: true from 96 online CPUs on).
    #[serde(default)]
    pub slow: Option<bool>,
    /// The CPU state around the probe and the guest's command-line policies.
    #[serde(default)]
    pub scenario: Option<super::scenario::ScenarioFile>,
}

/// `[source]`: where the machine comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceFile {
    /// `seed`, `report`, `review` or `synthetic`.
    pub kind: SourceKind,
    /// Seed file number (`002`) or public report id (`R08`); empty for synthetic.
    #[serde(default)]
    pub id: String,
    /// What the source says about this machine, in our words.
    pub wording: String,
}

/// Kind of source a topology comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// One of the seeds the project started from (`docs/seeds.md`, id `NNN`).
    Seed,
    /// A public report (id `Rnn`; the file's `[source]` quotes it).
    Report,
    /// A reviewer's question in a review thread.
    Review,
    /// Made up to exercise one rule of the model.
    Synthetic,
}

/// `[cpus]`: the QEMU `-smp` shape.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpusFile {
    /// Sockets (≥ 1).
    pub sockets: u32,
    /// Dies per socket (≥ 1, default 1).
    #[serde(default = "one")]
    pub dies: u32,
    /// Clusters per die (≥ 1, default 1; more than 1 on arm64 only, as
    /// QEMU's `virt` machine shows them in the guest's `cluster_cpus_list`).
    #[serde(default = "one")]
    pub clusters: u32,
    /// Cores per cluster (≥ 1; per die when there is one cluster).
    pub cores: u32,
    /// Threads per core (≥ 1).
    pub threads: u32,
}

/// `[machine]`: what machine the guest is.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineFile {
    /// `x86_64` (QEMU `q35`) or `arm64` (QEMU `virt`).
    pub arch: super::arch::Arch,
}

fn one() -> u32 {
    1
}

/// `[numa]`: nodes (node id = position in `nodes`) and the SLIT.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumaFile {
    /// Node 0, node 1, …
    pub nodes: Vec<NodeFile>,
    /// The full SLIT, `distances[i][j]` = distance from node i to node j. Optional:
    /// without it the kernel uses 10 (same node) and 20 (other nodes).
    #[serde(default)]
    pub distances: Option<Vec<Vec<i64>>>,
}

/// One `[[numa.nodes]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeFile {
    /// The node's CPUs in cpulist syntax (`0-7,128-135`); empty = memory-only node.
    pub cpus: String,
    /// The node's memory in MiB; 0 = CPU-only (memoryless) node.
    pub memory_mib: u64,
}

/// `nic.numa_node`: a node id or the string `"none"` (NUMA_NO_NODE).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum NicNodeFile {
    /// A node id.
    Id(i64),
    /// Must be `"none"`.
    Name(String),
}

/// `[nic]`: the emulated MANA VF.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicFile {
    /// PCI device node (`/sys/bus/pci/devices/*/numa_node`), or `"none"`.
    pub numa_node: NicNodeFile,
    /// MSI-X table size (default `min(ncpu, 64) + 1`: one vector per queue plus the HWC).
    #[serde(default)]
    pub msix_table_size: Option<u32>,
    /// `max_msix` in the GDMA_QUERY_MAX_RESOURCES answer (default: the table size).
    #[serde(default)]
    pub max_msix: Option<u32>,
    /// `max_eq`/`max_cq`/`max_sq`/`max_rq` in that answer (default 64 = MANA_MAX_NUM_QUEUES).
    #[serde(default)]
    pub max_queues: Option<u32>,
    /// Whether the MSI-X domain can allocate vectors dynamically
    /// (`pci_msix_can_alloc_dyn()`; true on QEMU x86, the default).
    #[serde(default)]
    pub dynamic_msix: Option<bool>,
    /// MAC address `aa:bb:cc:dd:ee:ff` of vport 0 (default chosen by the device model).
    #[serde(default)]
    pub mac: Option<String>,
    /// Combined channels the guest sets with `ethtool -L <netdev> combined N`
    /// after `ip link set up` (default: leave the driver's count; NIC 0 only).
    #[serde(default)]
    pub channels: Option<u32>,
    /// Faults the emulated NIC shows the driver on purpose (`--inject SPEC`
    /// strings; the harness parses them, device_model::inject).
    #[serde(default)]
    pub inject: Vec<String>,
    /// vPorts the device reports in MANA_QUERY_DEV_CONFIG (`max_num_vports`,
    /// default 1); the driver creates one netdev per vPort.
    #[serde(default)]
    pub num_ports: Option<u32>,
}

/// `[expect]`: the expected outcome of a rig run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectFile {
    /// `pass` (guest matches the model), `mismatch` (a known kernel/model difference),
    /// `rig-error` (the rig cannot run it, e.g. it needs KVM) or `kernel-finding`
    /// (the kernel does not bring up the declared machine).
    pub verdict: ExpectedVerdict,
    /// Why this outcome is expected (seed, report id, kernel algorithm).
    pub source: String,
    /// `[expect.on."7.x"]`: what one kernel generation (`6.1`, `6.3`, `6.12`,
    /// `7.x`) is expected to do instead, with its own source.
    #[serde(default)]
    pub on: std::collections::BTreeMap<String, ExpectOnFile>,
}

/// `[expect.on."GEN"]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectOnFile {
    /// As [`ExpectFile::verdict`], for this generation.
    pub verdict: ExpectedVerdict,
    /// Why (the kernel's own words for a kernel finding).
    pub source: String,
}

/// The outcome a topology file expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExpectedVerdict {
    /// The guest's IRQ table matches the model.
    Pass,
    /// The guest differs from the model (a known kernel bug or an open question).
    Mismatch,
    /// The rig cannot run this machine here.
    RigError,
    /// The kernel does not bring up the declared machine (CPUs that never come
    /// online): a finding about the kernel, with its own words as the source.
    KernelFinding,
}

/// The `nic` key as the file spells it.
#[derive(Debug)]
pub enum NicsFile {
    /// `[nic]`: one NIC; errors name `nic.FIELD`.
    One(NicFile),
    /// `[[nic]]`: NIC 0, 1, …; errors name `nic[K].FIELD`.
    Many(Vec<NicFile>),
}

impl NicsFile {
    /// The NICs, each with the TOML path errors name it by (`nic` or `nic[K]`).
    pub fn entries(&self) -> Vec<(String, &NicFile)> {
        match self {
            Self::One(n) => vec![("nic".to_owned(), n)],
            Self::Many(list) => list.iter().enumerate().map(|(k, n)| (format!("nic[{k}]"), n)).collect(),
        }
    }
}

impl<'de> Deserialize<'de> for NicsFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NicsFile;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a [nic] table or a [[nic]] array of tables")
            }
            // Both arms hand the content to NicFile's own derive: its unknown-field and
            // type errors keep their words and positions.
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<NicsFile, A::Error> {
                NicFile::deserialize(de::value::MapAccessDeserializer::new(map)).map(NicsFile::One)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<NicsFile, A::Error> {
                Vec::<NicFile>::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(NicsFile::Many)
            }
        }
        d.deserialize_any(V)
    }
}
