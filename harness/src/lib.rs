//! manarig harness: everything around the emulated NIC (ARCHITECTURE.md has the map).
//!
//! - [`cpulist`], [`topology`], [`model`], [`random`]: re-exported from the pure
//!   `manarig-model` crate (cpumasks, topology files, the kernel reference model, random
//!   topologies and the shrinker) and [`text`] (a count with its noun in the right number);
//! - [`provision`]: QEMU, pinned Debian kernels, busybox and ethtool into the cache;
//!   [`kbuild`]: guest kernels built from a source tree plus patches;
//! - [`qemu`]: the machine description and the launcher; [`initramfs`]; [`accel`]
//!   (TCG or KVM); [`children`] and [`scratch`]: child processes and temporary
//!   folders that never outlive a run;
//! - [`guest_protocol`]: the `/init` agent's command-line items, markers and report
//!   parser (spec: guest-images/README.md); [`guest_topology`]: the guest's topology
//!   checked against the machine QEMU was given;
//! - [`rig`]: one run, end to end; [`traffic`]: packets through the emulated NIC
//!   in a run (the peer in a private network namespace, the flow plan);
//!   [`selftests`]: the kernel's drivers/net selftests run in the guest against
//!   the emulated NIC (their tree, helpers, KTAP and baselines);
//!   [`verdict`]: the judgement and its formats; [`workspace_bin`]: finding the
//!   workspace's helper binaries; [`matrix`]: many runs (topologies × kernels),
//!   sharded, merged, reported;
//! - [`import`]: a real machine's lscpu/numactl paste, sysfs snapshot or hwloc XML → a
//!   topology file; [`picture`]: the machine with its IRQs as SVG and an HTML report;
//! - [`cli`]: the command line, the only layer that knows exit codes.

pub mod cli;

pub use manarig_guest::guest_protocol;
pub use manarig_import::import;
pub use manarig_matrix::matrix;
pub use manarig_model::{cpulist, model, packages, random, text, topology};
pub use manarig_proc::{children, scratch, workspace_bin};
pub use manarig_provision::{kbuild, provision};
pub use manarig_qemu::{accel, guest_topology, initramfs, qemu};
pub use manarig_rig::rig;
pub use manarig_selftests::selftests;
pub use manarig_traffic::traffic;
pub use manarig_verdict::{picture, verdict};
