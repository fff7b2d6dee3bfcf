//! Searching the topology space: random valid machines, and shrinking a machine on
//! which something disagrees (model vs guest, properties vs guest, K0 vs patch) to a
//! smallest one that goes into topologies/.
//!
//! Public API:
//! - [`generate`]`(seed, n, max_cpus)`: `n` random topologies, the same for the same
//!   seed on every machine (a SplitMix64 stream per topology, so topology `i` does not
//!   depend on `n`); [`generate_one`] makes only topology `i` (a matrix shard);
//! - [`shrink`]`(&Topology, still_disagrees)`, [`shrink_logged`] (with the steps) and
//!   [`shrink_within`] (with a budget of predicate calls, for predicates that boot a
//!   guest): greedy shrinking to a minimal machine, returned as a [`Topology`] whose
//!   [`Topology::to_toml`] is a topology file with `[source]` and `[expect]` filled.
//!
//! Pure: no I/O, no clock, no global state.

mod generate;
mod prng;
mod shrink;

pub use prng::Rng;
pub use shrink::{shrink, shrink_logged, shrink_within, Shrunk, MAX_TRIES};

use crate::topology::{Topology, TopologyError};

/// `n` random valid topologies for `seed`, each with at most `max_cpus` CPUs (clamped
/// to 1..=8192).
///
/// What varies: SMT on or off (1 or 2 threads), 1-4 sockets (one die each: the rig boots no more), the
/// cores; 1-8 NUMA nodes made of runs of consecutive cores (so SMT sibling groups never
/// straddle nodes), sometimes with 1-2 memory-only nodes and CPU-only nodes, numbered as
/// Linux on x86 numbers them (nodes with CPUs in the order of their first CPU, then the
/// memory-only ones: what a guest shows, so the rig can boot the file as written); a symmetric SLIT from a few values (ties are common) or
/// none; Linux-style CPU numbering (`linux-smt-outer`) now and then; the NIC on any
/// node, memory-only ones included, or on none (NUMA_NO_NODE); half the time the
/// default MSI-X budget, else a small table (down to 1 entry, on which the probe
/// fails), a larger one, a smaller `max_msix` or `max_queues` (never static MSI-X,
/// which a QEMU x86 guest cannot have). The machine has 1 GiB of memory spread over its memory nodes. Names are
/// `random-s<seed>-<i>`; `[source]` is synthetic and says how it was made; `[expect]`
/// is `pass` (the model's table).
///
/// # Errors
/// A [`TopologyError`] if a generated machine fails validation: a generator bug (the
/// tests check thousands of seeds), reported rather than hidden.
pub fn generate(seed: u64, n: usize, max_cpus: u32) -> Result<Vec<Topology>, TopologyError> {
    (0..n as u64).map(|i| generate_one(seed, i, max_cpus)).collect()
}

/// Topology `index` of [`generate`]`(seed, _, max_cpus)`.
///
/// # Errors
/// As [`generate`].
pub fn generate_one(seed: u64, index: u64, max_cpus: u32) -> Result<Topology, TopologyError> {
    let draft = generate::draft(seed, index, max_cpus);
    draft.validate(&format!("{}.toml", draft.name))
}

#[cfg(test)]
mod tests;
