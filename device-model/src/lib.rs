//! An emulated MANA (Microsoft Azure Network Adapter) virtual function.
//!
//! The device speaks the GDMA protocol that Linux's unmodified `mana` driver
//! (drivers/net/ethernet/microsoft/mana) expects, and is served to QEMU over
//! vfio-user (`vfio-user-pci`). It knows nothing about topologies or QEMU
//! command lines. What it exchanges with whoever runs it (configuration,
//! status, control requests, `--inject` specs, flow records) is the
//! `mana-device-api` crate's.
//!
//! Layers, each a folder, from the bottom (a layer imports only those below it):
//! - [`defs`]: the GDMA/HWC/BNIC wire formats (structs, bitfields, open enums);
//! - [`inject`]: faults the device shows the guest driver on purpose
//!   (`--inject SPEC`: error statuses, late responses, spurious or silent
//!   vectors, bad owner bits, corrupt RX completions, timed events);
//! - [`queues`]: EQ/CQ/SQ/RQ rings in guest memory, owner bits, arming,
//!   and the GDMA DMA regions (guest page lists) they are built on;
//! - [`datapath`]: SQ WQEs to frames, frames to RQ buffers, RSS, offloads,
//!   behind a packet-backend trait;
//! - [`device`]: the device core, [`ManaDevice`]: BAR0 registers, the
//!   shared-memory channel (SMC), the hardware channel (HWC), GDMA and BNIC
//!   commands, resource budgets;
//! - [`shell`]: the vfio-user shell: the server (regions, IRQs, the socket),
//!   the front that checks every client message, PCI configuration space,
//!   MSI-X eventfds, guest memory from DMA_MAP fds, the core behind a lock;
//! - [`process`]: what runs around it in `mana-device` (src/main.rs): the
//!   control channel, the TAP event loop, test faults of the process itself.
//!
//! The seam between shell and core: [`bar`] (the [`bar::Bar0Handler`] the
//! shell forwards BAR0 accesses to, and the guest memory it hands over) and
//! [`interrupt`] (the [`interrupt::InterruptSink`] through which the core
//! raises MSI-X vectors: eventfds in production, a recorder in tests).

pub mod bar;
pub mod interrupt;

pub mod datapath;
pub mod defs;
pub mod device;
pub mod inject;
pub mod process;
pub mod queues;
pub mod shell;

pub use device::{factory, ManaDevice};
