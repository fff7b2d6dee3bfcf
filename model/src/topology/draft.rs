//! [`TopologyDraft`]: a topology file as plain, editable data, and its TOML text.
//!
//! A draft is what a file *says* (optional fields stay optional), not yet validated.
//! [`TopologyDraft::validate`] turns it into a [`Topology`] through the same path as a
//! file on disk ([`Topology::from_toml_str`]), so a draft can never yield a topology the
//! file format would refuse. [`Topology::to_toml`] goes the other way: a file that
//! loads back to the same topology, with defaults left out.

use super::numbering::{CpuNumbering, CpuShape};
use super::validate::MANA_MAX_NUM_QUEUES;
use super::{Expectation, ExpectedVerdict, Source, SourceKind, Topology, TopologyError};
use crate::cpulist::CpuMask;
use std::fmt::Write as _;

/// One `[[numa.nodes]]` entry of a draft (node id = position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeDraft {
    /// The node's CPUs in the file's numbering; empty = memory-only node.
    pub cpus: CpuMask,
    /// Memory in MiB; 0 = CPU-only node.
    pub memory_mib: u64,
}

/// The `[nic]` table of a draft; `None` = the field is left out (its default applies).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NicDraft {
    /// `numa_node`: a node id, or `None` for `"none"` (NUMA_NO_NODE).
    pub node: Option<u32>,
    /// `msix_table_size` (default `min(ncpu, 64) + 1`).
    pub msix_table_size: Option<u32>,
    /// `max_msix` (default: the table size).
    pub max_msix: Option<u32>,
    /// `max_queues` (default 64).
    pub max_queues: Option<u32>,
    /// `dynamic_msix` (default true).
    pub dynamic_msix: Option<bool>,
    /// `mac`.
    pub mac: Option<[u8; 6]>,
    /// `channels` (NIC 0 only).
    pub channels: Option<u32>,
    /// `num_ports` (default 1).
    pub num_ports: Option<u32>,
}

/// A whole topology file as editable data (see topologies/README.md for the fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyDraft {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: Option<String>,
    /// `[source]`.
    pub source: Source,
    /// `cpu_numbering`.
    pub numbering: CpuNumbering,
    /// `[machine] arch`.
    pub arch: super::Arch,
    /// `cpus.clusters` (clusters per die; `shape.cores` counts a die's cores).
    pub clusters: u32,
    /// `[cpus]` (its `cores` per die: `cpus.cores` × `clusters`).
    pub shape: CpuShape,
    /// `[[numa.nodes]]`, node 0 first.
    pub nodes: Vec<NodeDraft>,
    /// `numa.distances`; `None` = no SLIT (10 local, 20 remote).
    pub distances: Option<Vec<Vec<u32>>>,
    /// `[nic]`, or NIC 0 of `[[nic]]`.
    pub nic: NicDraft,
    /// NIC 1, 2, … of `[[nic]]` (empty: the file has one `[nic]` table).
    pub more_nics: Vec<NicDraft>,
    /// `[expect]`.
    pub expect: Expectation,
    /// `slow` (default: 96 CPUs or more).
    pub slow: Option<bool>,
    /// `[scenario]` (the default: left out).
    pub scenario: super::Scenario,
}

impl PartialEq for Source {
    fn eq(&self, other: &Self) -> bool {
        (self.kind, &self.id, &self.wording) == (other.kind, &other.id, &other.wording)
    }
}
impl Eq for Source {}

impl PartialEq for Expectation {
    fn eq(&self, other: &Self) -> bool {
        (self.verdict, &self.source, &self.on) == (other.verdict, &other.source, &other.on)
    }
}
impl Eq for Expectation {}

/// A TOML basic string with the escapes TOML needs.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

fn kind_name(kind: SourceKind) -> &'static str {
    match kind {
        SourceKind::Seed => "seed",
        SourceKind::Report => "report",
        SourceKind::Review => "review",
        SourceKind::Synthetic => "synthetic",
    }
}

fn verdict_name(v: ExpectedVerdict) -> &'static str {
    match v {
        ExpectedVerdict::Pass => "pass",
        ExpectedVerdict::Mismatch => "mismatch",
        ExpectedVerdict::RigError => "rig-error",
        ExpectedVerdict::KernelFinding => "kernel-finding",
    }
}

/// The SLIT a file without `distances` gets: 10 on the diagonal, 20 elsewhere.
fn default_slit(n: usize) -> Vec<Vec<u32>> {
    (0..n).map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect()).collect()
}

impl TopologyDraft {
    /// Number of CPUs of the shape (`sockets * dies * cores * threads`, saturating).
    pub fn ncpu(&self) -> u32 {
        let s = &self.shape;
        [s.dies, s.cores, s.threads].iter().fold(s.sockets, |t, &v| t.saturating_mul(v))
    }

    /// The MSI-X table size the file means: the explicit one, else `min(ncpu, 64) + 1`.
    pub fn msix_table_size(&self) -> u32 {
        self.nic.msix_table_size.unwrap_or(self.ncpu().min(MANA_MAX_NUM_QUEUES) + 1)
    }

    /// The topology file text: top-level keys, `[source]`, `[cpus]`, the nodes,
    /// `[numa]`, `[nic]`, `[expect]`, leaving out what is `None` and `dies = 1`.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "name = {}", quoted(&self.name));
        if let Some(d) = &self.description {
            let _ = writeln!(out, "description = {}", quoted(d));
        }
        if self.numbering == CpuNumbering::LinuxSmtOuter {
            out.push_str("cpu_numbering = \"linux-smt-outer\"\n");
        }
        if let Some(slow) = self.slow {
            let _ = writeln!(out, "slow = {slow}");
        }
        let s = &self.source;
        let _ = writeln!(out, "\n[source]\nkind = \"{}\"", kind_name(s.kind));
        if !s.id.is_empty() {
            let _ = writeln!(out, "id = {}", quoted(&s.id));
        }
        let _ = writeln!(out, "wording = {}", quoted(&s.wording));
        if self.arch != super::Arch::X86_64 {
            let _ = writeln!(out, "\n[machine]\narch = \"{}\"", self.arch);
        }
        let c = &self.shape;
        let _ = writeln!(out, "\n[cpus]\nsockets = {}", c.sockets);
        if c.dies != 1 {
            let _ = writeln!(out, "dies = {}", c.dies);
        }
        let clusters = self.clusters.max(1);
        if clusters != 1 {
            let _ = writeln!(out, "clusters = {clusters}");
        }
        let _ = writeln!(out, "cores = {}\nthreads = {}", c.cores / clusters, c.threads);
        for n in &self.nodes {
            let _ =
                writeln!(out, "\n[[numa.nodes]]\ncpus = \"{}\"\nmemory_mib = {}", n.cpus.to_cpulist(), n.memory_mib);
        }
        if let Some(rows) = &self.distances {
            out.push_str("\n[numa]\ndistances = [\n");
            for row in rows {
                let cells: Vec<String> = row.iter().map(u32::to_string).collect();
                let _ = writeln!(out, "  [{}],", cells.join(", "));
            }
            out.push_str("]\n");
        }
        self.nic_toml(&mut out);
        let e = &self.expect;
        let _ = writeln!(out, "\n[expect]\nverdict = \"{}\"\nsource = {}", verdict_name(e.verdict), quoted(&e.source));
        for (gen, (verdict, source)) in &e.on {
            let _ = writeln!(
                out,
                "\n[expect.on.\"{gen}\"]\nverdict = \"{}\"\nsource = {}",
                verdict_name(*verdict),
                quoted(source)
            );
        }
        out.push_str(&self.scenario.to_toml());
        out
    }

    fn nic_toml(&self, out: &mut String) {
        let header = if self.more_nics.is_empty() { "[nic]" } else { "[[nic]]" };
        for n in std::iter::once(&self.nic).chain(&self.more_nics) {
            Self::one_nic_toml(out, header, n);
        }
    }

    fn one_nic_toml(out: &mut String, header: &str, n: &NicDraft) {
        match n.node {
            Some(id) => {
                let _ = writeln!(out, "\n{header}\nnuma_node = {id}");
            }
            None => {
                let _ = writeln!(out, "\n{header}\nnuma_node = \"none\"");
            }
        }
        let numbers = [
            ("msix_table_size", n.msix_table_size),
            ("max_msix", n.max_msix),
            ("max_queues", n.max_queues),
            ("channels", n.channels),
            ("num_ports", n.num_ports),
        ];
        for (key, value) in numbers {
            if let Some(v) = value {
                let _ = writeln!(out, "{key} = {v}");
            }
        }
        if let Some(d) = n.dynamic_msix {
            let _ = writeln!(out, "dynamic_msix = {d}");
        }
        if let Some(m) = n.mac {
            let hex: Vec<String> = m.iter().map(|b| format!("{b:02x}")).collect();
            let _ = writeln!(out, "mac = \"{}\"", hex.join(":"));
        }
    }

    /// Validate the draft exactly as a file: [`Topology::from_toml_str`] on
    /// [`TopologyDraft::to_toml`]. `path` only names the origin in errors.
    ///
    /// # Errors
    /// The [`TopologyError`] the file would get (one line naming `path` and the field).
    pub fn validate(&self, path: &str) -> Result<Topology, TopologyError> {
        Topology::from_toml_str(path, &self.to_toml())
    }

    /// Leave out every field whose value is its default (`msix_table_size` equal to
    /// `min(ncpu, 64) + 1`, `max_msix` equal to the table, `max_queues` 64,
    /// `dynamic_msix` true, a 10/20 SLIT, `slow` as the CPU count implies).
    pub fn drop_defaults(&mut self) {
        let default_table = self.ncpu().min(MANA_MAX_NUM_QUEUES) + 1;
        for n in std::iter::once(&mut self.nic).chain(&mut self.more_nics) {
            let table = n.msix_table_size.unwrap_or(default_table);
            if n.max_msix == Some(table) {
                n.max_msix = None;
            }
            if n.msix_table_size == Some(default_table) {
                n.msix_table_size = None;
            }
            if n.max_queues == Some(MANA_MAX_NUM_QUEUES) {
                n.max_queues = None;
            }
            if n.dynamic_msix == Some(true) {
                n.dynamic_msix = None;
            }
            if n.num_ports == Some(1) {
                n.num_ports = None;
            }
        }
        if self.distances.as_ref().is_some_and(|d| *d == default_slit(self.nodes.len())) {
            self.distances = None;
        }
        if self.slow == Some(self.ncpu() >= super::validate::SLOW_FROM_CPUS) {
            self.slow = None;
        }
    }
}

impl From<&Topology> for TopologyDraft {
    /// The file a topology comes from, with every NIC value explicit (call
    /// [`TopologyDraft::drop_defaults`] for the short form).
    fn from(t: &Topology) -> Self {
        let s = &t.spec;
        Self {
            name: s.name.clone(),
            description: s.description.clone(),
            source: s.source.clone(),
            numbering: s.numbering,
            arch: s.arch,
            clusters: s.clusters,
            shape: s.shape,
            nodes: s.nodes.iter().map(|n| NodeDraft { cpus: n.cpus.clone(), memory_mib: n.memory_mib }).collect(),
            distances: Some(s.distances.clone()),
            nic: NicDraft::from(&s.nics[0]),
            more_nics: s.nics[1..].iter().map(NicDraft::from).collect(),
            expect: s.expect.clone(),
            slow: Some(s.slow),
            scenario: s.scenario.clone(),
        }
    }
}

impl From<&super::Nic> for NicDraft {
    /// Every value explicit.
    fn from(n: &super::Nic) -> Self {
        Self {
            node: n.node,
            msix_table_size: Some(n.msix_table_size),
            max_msix: Some(n.max_msix),
            max_queues: Some(n.max_queues),
            dynamic_msix: Some(n.dynamic_msix),
            mac: n.mac,
            channels: n.channels,
            num_ports: Some(n.num_ports),
        }
    }
}

impl Topology {
    /// A topology file that loads back to this topology ([`Topology::from_toml_str`]),
    /// defaults left out. Comments of the original file are not kept.
    pub fn to_toml(&self) -> String {
        let mut d = TopologyDraft::from(self);
        d.drop_defaults();
        d.to_toml()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<(String, String)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../topologies");
        let arm64 = std::fs::read_dir(dir.join("arm64")).expect("topologies/arm64/");
        let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
            .expect("topologies/")
            .chain(arm64)
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).expect("read")))
            .collect();
        out.sort();
        out
    }

    fn as_json(t: &Topology) -> serde_json::Value {
        serde_json::to_value(t).expect("json")
    }

    #[test]
    fn every_topology_file_survives_to_toml_and_back() {
        let all = files();
        assert!(all.len() >= 10, "{} files", all.len());
        for (path, text) in all {
            let t = Topology::from_toml_str(&path, &text).expect("valid file");
            let again = t.to_toml();
            let back = Topology::from_toml_str(&path, &again).unwrap_or_else(|e| panic!("{e}\n{again}"));
            assert_eq!(as_json(&t), as_json(&back), "{path}:\n{again}");
            assert_eq!(back.to_toml(), again, "{path}: to_toml is stable");
        }
    }

    #[test]
    fn defaults_are_left_out_and_explicit_values_kept() {
        let text = "name = \"t\"\n[source]\nkind = \"synthetic\"\nwording = \"a \\\"quoted\\\" word\"\n\
                    [cpus]\nsockets = 1\ncores = 2\nthreads = 1\n[[numa.nodes]]\ncpus = \"0-1\"\nmemory_mib = 256\n\
                    [numa]\ndistances = [[10]]\n[nic]\nnuma_node = \"none\"\nmsix_table_size = 3\nmax_queues = 4\n\
                    dynamic_msix = false\n[expect]\nverdict = \"mismatch\"\nsource = \"s\"\n";
        let t = Topology::from_toml_str("t.toml", text).expect("valid");
        let out = t.to_toml();
        // 3 = min(2, 64) + 1 is the default table; max_msix = table is the default too.
        assert!(!out.contains("msix_table_size") && !out.contains("max_msix"), "{out}");
        assert!(!out.contains("distances"), "a 1-node 10 SLIT is the default: {out}");
        for want in ["numa_node = \"none\"", "max_queues = 4", "dynamic_msix = false", "verdict = \"mismatch\""] {
            assert!(out.contains(want), "{want}: {out}");
        }
        let back = Topology::from_toml_str("t.toml", &out).expect("loads");
        assert_eq!(back.source().wording, "a \"quoted\" word");
    }

    #[test]
    fn a_bad_draft_gets_the_files_error() {
        let t = Topology::from_toml_str("t.toml", &files()[0].1).expect("valid");
        let mut d = TopologyDraft::from(&t);
        d.nodes[0].cpus = CpuMask::new();
        d.nodes[0].memory_mib = 0;
        let e = d.validate("draft.toml").expect_err("empty node");
        assert!(e.to_string().starts_with("draft.toml: numa.nodes"), "{e}");
    }
}
