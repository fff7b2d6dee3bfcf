//! The kernel reference model: where the `mana` driver puts each MSI-X vector's
//! affinity on a given topology and kernel generation.
//!
//! Public API:
//! - [`expected_table`]`(&Topology, KernelGen) -> ExpectedTable`: the whole table
//!   (vector names, `smp_affinity_list`, hex `smp_affinity`, nodes, cores, hop, and which
//!   algorithm set it); [`ExpectedTable::to_text`] prints it like the seeds;
//! - [`KernelGen`]: `6.1` / `6.3` / `6.12` / `7.x` (parsable, with the Debian versions modelled),
//!   and [`ModelBasis`]: why a run is judged by one of them;
//! - the algorithms one by one, each naming the kernel function it models:
//!   [`NumaLevels`] (sched_init_numa, hop masks, numa_nearest_node, SLIT fallback),
//!   [`local_spread_flat`] / [`local_spread_hops`] (cpumask_local_spread),
//!   [`irq_setup`], [`irq_setup_numa_aware`], [`irq_setup_linear`] (MANA);
//! - [`vport_plan`]: which vectors each vPort's channels use (`num_ports` > 1);
//!
//! - [`expected_stages`]: the table at the probe and after each CPU hotplug stage of
//!   the topology's `[scenario]` (`offline_after`, `online_after`).
//!
//! All CPU ids are the topology file's. The model takes the CPUs online at the probe
//! and `irq_default_affinity` from the topology's `[scenario]` (`maxcpus`, `offline`,
//! `irqaffinity`; see [`crate::topology::Scenario`]), and assumes irqbalance is off.
//! What reads `cpu_online_mask` (Debian 6.1.192 / 6.12.117 gdma_main.c and the kernel):
//! `num_online_cpus()` in `mana_gd_setup_irqs()` and `mana_gd_query_max_resources()`
//! (vector and queue counts), `cpumask_local_spread()` (both flavours),
//! `for_each_numa_hop_mask()` (NUMA_NO_NODE: `cpu_online_mask`; a node: the scheduler's
//! hop masks, which hold online CPUs only), `topology_sibling_cpumask()` (online
//! siblings only on x86), `irq_setup_affinity()` (the default) and `migrate_one_irq()`
//! (hotplug). `isolcpus=` and `nohz_full=` change none of these for MANA's non-managed
//! vectors (only managed ones honour `HK_TYPE_MANAGED_IRQ` in `irq_do_set_affinity()`).

mod hotplug;
mod irq_setup;
mod kernel;
mod mana;
mod numa;
mod spread;
mod table;
mod vports;

pub use hotplug::{expected_stages, PROBE_STAGE};
pub use irq_setup::{irq_setup, irq_setup_linear, irq_setup_numa_aware, Siblings};
pub use kernel::{KernelGen, ModelBasis, UnknownKernel};
pub use mana::{default_affinity, expected_table, numa_levels, numa_levels_at};
pub use numa::{effective_slit, NumaLevels, LOCAL_DISTANCE, NR_DISTANCE_VALUES, REMOTE_DISTANCE};
pub use spread::{local_spread_flat, local_spread_hops, local_spread_order};
pub use table::{Algorithm, ExpectedTable, ExpectedVector, BDF_PLACEHOLDER};
pub use vports::{vport_plan, EqScope, PlannedEq, VportPlan};

#[cfg(test)]
mod golden_tests;
