//! The expected IRQ table: what `/proc/irq/N/` should show for each MANA MSI-X vector,
//! and its text rendering in the seeds' layout (IRQ, Nodes, Cores, CPUs).

use super::kernel::KernelGen;
use crate::cpulist::CpuMask;
use crate::text::plural;
use serde::Serialize;
use std::fmt::Write as _;

/// The placeholder for the PCI address in [`ExpectedVector::name`].
pub const BDF_PLACEHOLDER: &str = "{bdf}";

/// Which code set a vector's affinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// `cpumask_of(cpumask_local_spread(i, node))`, flat flavour (6.1).
    LocalSpreadFlat,
    /// `cpumask_of(cpumask_local_spread(i, node))`, hop-aware flavour (6.3+).
    LocalSpreadHops,
    /// MANA `irq_setup()` (6.9–6.16): a whole sibling group.
    IrqSetup,
    /// MANA `mana_irq_setup_numa_aware(…, skip_first_cpu = false)` (7.x).
    NumaAware,
    /// MANA `mana_irq_setup_numa_aware(…, skip_first_cpu = true)` (7.x dynamic MSI-X).
    NumaAwareSkipFirst,
    /// MANA `mana_irq_setup_linear()` (7.x): one online CPU per vector.
    Linear,
    /// Not set by MANA: the kernel's default from `irq_setup_affinity()`
    /// (`irq_default_affinity` ∩ online CPUs, narrowed to the device node's CPUs when
    /// that node has any).
    Default,
    /// Moved by CPU hotplug: the last online CPU of its mask went offline, and
    /// `migrate_one_irq()` gave it every online CPU (kernel/irq/cpuhotplug.c).
    Migrated,
}

impl Algorithm {
    /// Short name for the text table.
    pub fn short(self) -> &'static str {
        match self {
            Self::LocalSpreadFlat => "local_spread(flat)",
            Self::LocalSpreadHops => "local_spread(hops)",
            Self::IrqSetup => "irq_setup",
            Self::NumaAware => "numa_aware",
            Self::NumaAwareSkipFirst => "numa_aware(skip)",
            Self::Linear => "linear",
            Self::Default => "default",
            Self::Migrated => "migrated",
        }
    }
}

/// One MSI-X vector of the MANA device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpectedVector {
    /// MSI-X table index (0 = HWC).
    pub msix_index: u32,
    /// IRQ name in `/proc/interrupts`, with [`BDF_PLACEHOLDER`] for the PCI address
    /// (`mana_hwc@pci:{bdf}`, 6.x `mana_q3@pci:{bdf}`, 7.x `mana_msi4@pci:{bdf}`).
    pub name: String,
    /// The queue number this vector serves (the seeds' "IRQ" column): `None` for the
    /// HWC, else `msix_index - 1`.
    pub queue: Option<u32>,
    /// Expected `/proc/irq/N/smp_affinity_list` (also `affinity_hint` when MANA set it).
    pub smp_affinity_list: CpuMask,
    /// The same set as `/proc/irq/N/smp_affinity` prints it (`nr_cpu_ids` bits).
    pub smp_affinity: String,
    /// NUMA nodes the set touches.
    pub nodes: Vec<u32>,
    /// Physical cores the set touches (`(socket * dies + die) * cores + core`).
    pub cores: Vec<u32>,
    /// Index of the first hop mask (from the NIC's node) that contains the whole set;
    /// `None` when the NIC's node gives no hop masks (memory-only node).
    pub hop: Option<u32>,
    /// Largest `node_distance(nic node, n)` over the set's nodes; `None` for NUMA_NO_NODE.
    pub distance: Option<u32>,
    /// Which code set the affinity.
    pub algorithm: Algorithm,
    /// The expected `affinity_hint`: what MANA gave `irq_set_affinity_and_hint()`
    /// (drivers/net/ethernet/microsoft/mana/gdma_main.c, Linux 6.1–7.x); `None` for a
    /// vector MANA left at the kernel's default. CPU hotplug does not change it.
    pub hint: Option<CpuMask>,
}

impl ExpectedVector {
    /// The IRQ name for a device at `bdf` (`0000:41:00.0`).
    pub fn irq_name(&self, bdf: &str) -> String {
        self.name.replace(BDF_PLACEHOLDER, bdf)
    }

    /// The name without `@pci:…` (`mana_q3`).
    pub fn short_name(&self) -> &str {
        self.name.split('@').next().unwrap_or(&self.name)
    }
}

/// Everything the model predicts for one (topology, kernel) pair.
#[derive(Debug, Clone, Serialize)]
pub struct ExpectedTable {
    /// Topology name.
    pub topology: String,
    /// Kernel generation.
    pub kernel: KernelGen,
    /// Debian package version whose code the model follows (`None` for the 6.3 model,
    /// which no pinned Debian kernel runs).
    pub debian_version: Option<&'static str>,
    /// What the model does, in one phrase ([`KernelGen::algorithm`]).
    pub model: &'static str,
    /// `num_online_cpus()`.
    pub online_cpus: u32,
    /// `nr_cpu_ids` (width of the hex masks).
    pub nr_cpu_ids: u32,
    /// The PCI device's node (`None` = NUMA_NO_NODE).
    pub nic_node: Option<u32>,
    /// `sched_domains_numa_distance[]`.
    pub numa_levels: Vec<u32>,
    /// CPUs each hop from the NIC's node adds (what `for_each_numa_hop_mask` walks).
    pub hops: Vec<CpuMask>,
    /// MSI-X table size of the device.
    pub msix_table_size: u32,
    /// Vectors MANA ends up with (6.x: `nvec`; 7.x dynamic: `num_msix_usable`).
    pub vectors_allocated: u32,
    /// `gc->max_num_queues` after GDMA_QUERY_MAX_RESOURCES.
    pub max_num_queues: u32,
    /// Set when the probe is expected to fail (then `vectors` is empty).
    pub probe_error: Option<String>,
    /// One entry per MSI-X vector, by index.
    pub vectors: Vec<ExpectedVector>,
}

fn ids(v: &[u32]) -> String {
    v.iter().copied().collect::<CpuMask>().to_cpulist()
}

impl ExpectedVector {
    /// The `affinity_hint` the model expects ([`ExpectedVector::hint`]): MANA sets every
    /// vector it places with `irq_set_affinity_and_hint()`, so at the probe the hint
    /// equals the affinity; a vector left at the kernel's default has no hint (`None`).
    pub fn affinity_hint(&self) -> Option<CpuMask> {
        self.hint.clone()
    }
}

impl ExpectedTable {
    /// The vector whose `/proc/interrupts` name (with or without `@pci:…`) is `name`,
    /// e.g. `mana_q3` or `mana_q3@pci:7870:00:00.0`.
    pub fn vector_by_name(&self, name: &str) -> Option<&ExpectedVector> {
        let short = name.split('@').next().unwrap_or(name);
        self.vectors.iter().find(|v| v.short_name() == short)
    }

    /// Render as text: a `#` header, then one row per vector with the seeds' columns
    /// (IRQ = queue number, Nodes, Cores, CPUs) plus MSI-X index, name, hop, distance and
    /// algorithm.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let node = self.nic_node.map_or("none (NUMA_NO_NODE)".to_owned(), |n| n.to_string());
        let _ = writeln!(
            out,
            "# {} on Linux {} ({}): {}, NIC node {}, MSI-X table {}, {}, {}",
            self.topology,
            self.kernel,
            self.debian_version.map_or_else(|| self.kernel.model_version().to_owned(), |d| format!("Debian {d}")),
            plural(self.online_cpus, "online CPU"),
            node,
            self.msix_table_size,
            plural(self.vectors_allocated, "vector"),
            plural(self.max_num_queues, "queue")
        );
        let hops: Vec<String> =
            self.hops.iter().map(|h| if h.is_empty() { "(nothing new)".to_owned() } else { h.to_cpulist() }).collect();
        let hops = if hops.is_empty() { "none (the NIC's node has no CPUs)".to_owned() } else { hops.join(" | ") };
        let levels: Vec<String> = self.numa_levels.iter().map(u32::to_string).collect();
        let _ = writeln!(out, "# model: {}", self.model);
        let _ = writeln!(out, "# NUMA levels: {}; hops from the NIC node: {hops}", levels.join(" "));
        if let Some(e) = &self.probe_error {
            let _ = writeln!(out, "# probe fails: {e}");
            return out;
        }
        let header = ["IRQ", "MSI-X", "Name", "Nodes", "Cores", "CPUs", "Hop", "Dist", "Set by"];
        let rows: Vec<[String; 9]> = self
            .vectors
            .iter()
            .map(|v| {
                [
                    v.queue.map_or("-".to_owned(), |q| q.to_string()),
                    v.msix_index.to_string(),
                    v.short_name().to_owned(),
                    ids(&v.nodes),
                    ids(&v.cores),
                    v.smp_affinity_list.to_cpulist(),
                    v.hop.map_or("-".to_owned(), |h| h.to_string()),
                    v.distance.map_or("-".to_owned(), |d| d.to_string()),
                    v.algorithm.short().to_owned(),
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let mut line = |cells: &[&str]| {
            let padded: Vec<String> = cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
            let _ = writeln!(out, "{}", padded.join("  ").trim_end());
        };
        line(&header);
        for row in &rows {
            line(&row.each_ref().map(String::as_str));
        }
        out
    }
}
