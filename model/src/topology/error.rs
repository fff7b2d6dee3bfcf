//! Errors from loading a topology file: one variant per failure class, each printed as
//! one line naming the file and the field (`topologies/x.toml: numa.nodes[2].cpus: CPUs
//! 8-15 overlap node 1`).

use crate::cpulist::{CpuMask, CpulistError};
use crate::text::{agree, plural};

/// Loading or validating a topology file failed.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The file could not be read.
    #[error("{path}: cannot read the topology file: {error}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The file is not valid TOML or does not have the expected fields and types
    /// (includes unknown fields).
    #[error("{path}{location}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// `:line:column` of the problem, or empty.
        location: String,
        /// The parser's message, on one line, after the field's TOML path when the
        /// problem is in a field (`scenario.irqbalance: invalid type: …`).
        message: String,
    },
    /// A field has a value the rig or the kernel cannot use.
    #[error("{path}: {field}: {problem}")]
    Invalid {
        /// The file.
        path: String,
        /// The field, as a TOML path (`numa.nodes[2].cpus`).
        field: String,
        /// What is wrong with it.
        problem: Problem,
    },
    /// A guest on QEMU x86 would show the file's nodes under other ids
    /// ([`Topology::check_guest_node_ids`](super::Topology::check_guest_node_ids)): the file loads (the
    /// model takes it) but cannot boot as written.
    #[error("{path}: numa.nodes: {renumbering}")]
    NodeOrder {
        /// The file.
        path: String,
        /// Which node the guest shows under which id, and the order to write them in.
        renumbering: super::NodeRenumbering,
    },
}

impl TopologyError {
    /// The problem, for [`TopologyError::Invalid`].
    pub fn problem(&self) -> Option<&Problem> {
        match self {
            Self::Invalid { problem, .. } => Some(problem),
            _ => None,
        }
    }

    /// The field, for [`TopologyError::Invalid`].
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }
}

/// What is wrong with one field of a topology file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A count that must be at least 1 is 0.
    #[error("must be at least 1")]
    Zero,
    /// The name is empty.
    #[error("must not be empty")]
    Empty,
    /// More CPUs than the kernel supports.
    #[error("{total} CPUs is more than the kernel's limit of {max}")]
    TooManyCpus {
        /// sockets × dies × cores × threads.
        total: u64,
        /// The limit ([`crate::cpulist::MAX_CPUS`]).
        max: u32,
    },
    /// A `[cpus]` level the architecture's QEMU machine does not show.
    #[error("{count} {level} on {arch}: {}", if *.level == "dies" {
        "QEMU's arm virt machine has no dies (use clusters, or sockets)"
    } else {
        "clusters are declared for arm64 guests only (set [machine] arch = \"arm64\")"
    })]
    ArchLevel {
        /// `dies` or `clusters`.
        level: &'static str,
        /// The architecture.
        arch: super::arch::Arch,
        /// How many the file asks for.
        count: u32,
    },
    /// No NUMA node is described.
    #[error("at least one node is needed")]
    NoNodes,
    /// A cpulist does not parse.
    #[error("{0}")]
    Cpulist(CpulistError),
    /// A node lists CPUs that the `[cpus]` shape does not have.
    #[error("{} {} beyond the {} of {shape}", .cpus.named(), agree(.cpus.count(), "is", "are"), plural(.total, "CPU"))]
    CpusBeyond {
        /// The CPUs that do not exist.
        cpus: CpuMask,
        /// Total CPUs of the shape.
        total: u32,
        /// The shape, e.g. `2 sockets × 1 die × 2 cores × 2 threads`.
        shape: String,
    },
    /// Two nodes claim the same CPUs.
    #[error("{} {} node {other}", .cpus.named(), agree(.cpus.count(), "overlaps", "overlap"))]
    Overlap {
        /// The shared CPUs.
        cpus: CpuMask,
        /// The earlier node that has them.
        other: usize,
    },
    /// Some CPUs are in no node.
    #[error(
        "{} {} in no node (every CPU must belong to exactly one node)",
        .cpus.named(),
        agree(.cpus.count(), "is", "are")
    )]
    Missing {
        /// The unassigned CPUs.
        cpus: CpuMask,
    },
    /// A node has neither CPUs nor memory.
    #[error("the node has no CPUs and no memory")]
    EmptyNode,
    /// No node has memory.
    #[error("no node has memory (the guest needs RAM)")]
    NoMemory,
    /// An SMT sibling group spans two nodes.
    #[error(
        "CPU {cpu} is in node {node} but its SMT sibling {sibling} is in node {sibling_node} \
         (a sibling group must stay in one node)"
    )]
    SiblingSplit {
        /// A CPU of the node.
        cpu: u32,
        /// The node.
        node: usize,
        /// Its sibling elsewhere.
        sibling: u32,
        /// The sibling's node.
        sibling_node: usize,
    },
    /// The distance matrix has the wrong number of rows.
    #[error("{rows} rows for {nodes} nodes (the matrix must be square, one row per node)")]
    Rows {
        /// Rows given.
        rows: usize,
        /// Nodes described.
        nodes: usize,
    },
    /// A distance row has the wrong length.
    #[error("{len} entries for {nodes} nodes (the matrix must be square, one column per node)")]
    RowLength {
        /// Entries given.
        len: usize,
        /// Nodes described.
        nodes: usize,
    },
    /// A diagonal entry is not 10.
    #[error(
        "{value}: a node's distance to itself must be 10 (with any other value Linux \
         discards the whole SLIT, \"SLIT table looks invalid. Not used.\", and uses 10/20)"
    )]
    LocalDistance {
        /// The value given.
        value: i64,
    },
    /// An off-diagonal entry is outside 11..=255.
    #[error(
        "{value}: distances between different nodes must be 11..=255 (a SLIT entry is one \
         byte; with a value <= 10 Linux discards the whole SLIT and uses 10/20)"
    )]
    RemoteDistance {
        /// The value given.
        value: i64,
    },
    /// The NIC's node does not exist.
    #[error("node {node} does not exist (the file has nodes 0-{last})")]
    NoSuchNode {
        /// The node given.
        node: i64,
        /// Highest node id in the file.
        last: usize,
    },
    /// The NIC's node is a string other than `"none"`.
    #[error("{value:?}: use a node number or \"none\" (NUMA_NO_NODE)")]
    NodeName {
        /// The string given.
        value: String,
    },
    /// A count is outside its allowed range.
    #[error("{value}: must be {min}..={max}")]
    Range {
        /// The value given.
        value: u64,
        /// Smallest allowed value.
        min: u64,
        /// Largest allowed value.
        max: u64,
    },
    /// A `[scenario]` field asks for a CPU state or policy the guest cannot have.
    #[error("{0}")]
    Scenario(super::scenario_problem::ScenarioProblem),
    /// The MAC address does not parse.
    #[error("{value:?} is not a MAC address like 00:15:5d:01:02:03")]
    Mac {
        /// The string given.
        value: String,
    },
    /// An `[expect.on]` key that is not a kernel generation.
    #[error("{value:?} is not a kernel generation: use 6.1, 6.3, 6.12 or 7.x")]
    KernelGen {
        /// The key as written.
        value: String,
    },
    /// Two vPorts (of one NIC or of two) would have the same MAC address.
    #[error(
        "{mac} (vPort {port}) is also {other}'s vPort {other_port} address; two NICs with one MAC \
         cannot be told apart (give each NIC its own `mac`; vPort p adds p to the last byte)"
    )]
    SameMac {
        /// The shared address.
        mac: String,
        /// The earlier NIC's TOML path (`nic[0]`).
        other: String,
        /// The vPort of this NIC.
        port: u32,
        /// The vPort of the earlier NIC.
        other_port: u32,
    },
    /// More NICs than the rig can plug in.
    #[error("{count} NICs; the rig plugs in at most {max}")]
    TooManyNics {
        /// NICs listed.
        count: usize,
        /// [`crate::topology::MAX_NICS`].
        max: usize,
    },
    /// A field only NIC 0 may set.
    #[error("only the first NIC may set it (the guest agent runs `ethtool -L` on NIC 0's netdev only)")]
    FirstNicOnly,
}
