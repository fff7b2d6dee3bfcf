//! The vfio-user shell: what QEMU's `vfio-user-pci` talks to.
//!
//! - [`server`]: the PCI function (regions, IRQs, DMA map) and the socket;
//! - [`front`] and [`vfio_wire`]: every client message checked before the
//!   `vfio_user` crate reads it; refusals answered with their errno;
//! - [`pci`]: configuration space; [`msix`]: eventfds and pending bits;
//! - [`dma_map`]: guest memory from the DMA_MAP fds;
//! - [`locked_core`]: the device core behind a lock, so that a status
//!   reader or an event loop on another thread can reach it.

pub mod dma_map;
pub mod front;
pub mod locked_core;
pub mod msix;
pub mod pci;
pub mod server;
pub mod vfio_wire;
