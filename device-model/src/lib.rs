//! An emulated MANA (Microsoft Azure Network Adapter) virtual function.
//!
//! The device speaks the GDMA protocol that Linux's unmodified `mana` driver
//! (drivers/net/ethernet/microsoft/mana) expects, and is served to QEMU over
//! vfio-user (`vfio-user-pci`). It knows nothing about topologies or QEMU
//! command lines.
//!
//! Layers:
//! - [`config`]: the knobs a topology file's NIC section sets (MSI-X table size,
//!   `max_msix`, queue limits, MAC).
//! - [`interrupt`]: the [`interrupt::InterruptSink`] trait through which the
//!   device raises MSI-X vectors (eventfds in production, a recorder in tests).
//! - the device core: BAR0 registers, shared-memory channel (SMC), hardware
//!   channel (HWC), GDMA and BNIC commands, queues, DMA through `vm-memory`.
//! - the vfio-user shell: [`server`] (regions, IRQs, the socket), [`front`]
//!   and [`wire`] (every client message checked before the `vfio_user`
//!   crate reads it; refusals answered with their errno), [`pci`]
//!   (configuration space), [`msix`] (eventfds and pending bits), [`dma`]
//!   (guest memory from DMA_MAP fds), [`shared`] (the core behind a lock for
//!   status snapshots), [`backend_loop`] (the event loop that feeds frames
//!   from a backend with a readiness fd, a TAP, into the core).
//! - the process around it (`mana-device`, src/main.rs): [`control`] (status
//!   and liveness requests from whoever started it, over stdin/stdout) and
//!   [`fault`] (test-only faults of the device process itself);
//! - [`inject`]: faults the device shows the guest driver on purpose
//!   (`--inject SPEC`: error statuses, late responses, spurious or silent
//!   vectors, bad owner bits, corrupt RX completions).

pub mod backend_loop;
pub mod bar;
pub mod config;
pub mod control;
pub mod dma;
pub mod fault;
pub mod front;
pub mod inject;
pub mod interrupt;
pub mod msix;
pub mod pci;
pub mod server;
pub mod shared;
pub mod wire;

// Device core (behind `bar::Bar0Handler`).
pub mod bnic;
pub mod budget;
pub mod commands;
pub mod datapath;
pub mod defs;
pub mod device;
pub mod dma_region;
pub mod framing;
pub mod gdma;
pub mod hwc;
pub mod queues;
pub mod regs;
pub mod resources;
pub mod smc;
pub mod snapshot;

pub use device::{factory, ManaDevice};
pub use snapshot::Snapshot;
