//! manarig harness: everything around the emulated NIC.
//!
//! - [`cpulist`]: the cpumask type (kernel cpulist and hex-mask text forms);
//! - [`topology`]: topology files (`topologies/*.toml`), validation, CPU numbering and the
//!   file-CPU-id ↔ QEMU-cpu-index mapping;
//! - [`model`]: the kernel reference model (`expected_table(&Topology, KernelGen)`) and the
//!   `expect` subcommand;
//! - provisioning (QEMU, pinned Debian kernels, busybox) and the initramfs;
//! - [`guest_protocol`]: the `/init` agent's command-line items, markers and report parser
//!   (spec: guest-images/README.md);
//! - the QEMU launcher and the observed-topology check;
//! - the verdict and its output formats.
//!
//! Exit codes of every command: 0 pass, 1 verdict mismatch, 2 rig error.

pub mod accel;
pub mod children;
pub mod cli;
pub mod cpulist;
pub mod model;
pub mod topology;
pub mod verdict;
pub mod guest_protocol;
pub mod initramfs;
pub mod kbuild;
pub mod observed;
pub mod provision;
pub mod qemu;
pub mod rig;
pub mod scratch;
