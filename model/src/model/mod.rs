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
//! All CPU ids are the topology file's. The model assumes every CPU is online and
//! `irq_default_affinity` is all CPUs (no `irqaffinity=`), and that irqbalance is off.

mod irq_setup;
mod kernel;
mod mana;
mod numa;
mod spread;
mod table;
mod vports;

pub use irq_setup::{irq_setup, irq_setup_linear, irq_setup_numa_aware, Siblings};
pub use kernel::{KernelGen, ModelBasis, UnknownKernel};
pub use mana::{default_affinity, expected_table, numa_levels};
pub use numa::{effective_slit, NumaLevels, LOCAL_DISTANCE, NR_DISTANCE_VALUES, REMOTE_DISTANCE};
pub use spread::{local_spread_flat, local_spread_hops, local_spread_order};
pub use table::{Algorithm, ExpectedTable, ExpectedVector, BDF_PLACEHOLDER};
pub use vports::{vport_plan, VportPlan};

#[cfg(test)]
mod golden_tests;
