//! manarig's model: what the kernel should do, computed without a kernel.
//!
//! - [`cpulist`]: the cpumask type (kernel cpulist and hex-mask text forms);
//! - [`topology`]: topology files (`topologies/*.toml`), validation, CPU numbering and the
//!   file-CPU-id ↔ QEMU-cpu-index mapping;
//! - [`model`]: the kernel reference model (`expected_table(&Topology, KernelGen)`): NUMA
//!   hops, `cpumask_local_spread()` and MANA's `irq_setup()` family, each naming the kernel
//!   function and versions it follows;
//! - [`random`]: random valid topologies and a shrinker to a minimal disagreeing machine;
//! - [`text`]: words for user-facing text (a count with its noun in the right number);
//! - [`packages`]: the Debian packages a run used, against their pins (a report fact).
//!
//! Pure: no processes, no QEMU, no sockets, no environment. The only I/O is
//! [`topology::Topology::load`] reading the file it is given. The harness re-exports the
//! modules under the same names.

#![forbid(unsafe_code)]

pub mod cpulist;
pub mod model;
pub mod packages;
pub mod random;
pub mod text;
pub mod topology;
