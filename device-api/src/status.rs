//! The device's status: the PCI function's state as the vfio-user shell
//! keeps it (config, MSI-X, DMA map, refusals) and the device core's
//! [`Snapshot`]. `mana-device` writes it to its status file and answers it
//! on the control channel ([`crate::control::Reply::Status`]) as JSON; the rig
//! reads it back into [`DeviceStatus`].
#![forbid(unsafe_code)]

use crate::config::DeviceConfig;
use crate::snapshot::Snapshot;
use serde::{Deserialize, Serialize};

/// Snapshot of the shell's state, written to the status file as JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShellStatus {
    /// The configuration the device was built with.
    pub config: DeviceConfig,
    /// A vfio-user client has talked to the device.
    pub connected: bool,
    /// PCI command register (bit 1 memory decoding, bit 2 bus master).
    pub pci_command: u16,
    /// Device resets requested by the client.
    pub resets: u64,
    /// MSI-X eventfds, pending bits and delivery counters.
    pub msix: MsixSnapshot,
    /// DMA-mapped guest-physical ranges as (start, size) in bytes.
    pub dma_ranges: Vec<(u64, u64)>,
    /// Malformed requests from the client (bad region, length or offset).
    pub bad_requests: u64,
    /// Client messages refused before they reached the device (framing,
    /// unknown commands; see device-model `shell::vfio_wire`).
    #[serde(default)]
    pub refused_messages: u64,
    /// DMA_MAP, DMA_UNMAP and SET_IRQS requests the device refused (each
    /// answered with its errno).
    #[serde(default)]
    pub refused_requests: u64,
}

/// The device's status: what the status file and the control channel's
/// [`crate::control::Reply::Status`] hold (JSON), and what the rig reads back
/// into this same type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceStatus {
    /// PCI function, MSI-X and DMA state.
    pub shell: ShellStatus,
    /// The device core's snapshot, once the core has been built (`mana-device`
    /// builds it with its server).
    pub core: Option<Snapshot>,
}

/// Counters and state of the MSI-X vectors, for status reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MsixSnapshot {
    /// Entries in the MSI-X table.
    pub table_size: u16,
    /// MSI-X enabled by QEMU (SET_IRQS TRIGGER seen, not disabled since).
    pub enabled: bool,
    /// Vectors that currently have an eventfd.
    pub vectors_with_eventfd: Vec<u16>,
    /// Vectors whose pending bit is set.
    pub pending: Vec<u16>,
    /// Interrupts written to an eventfd, per vector (index = vector).
    pub delivered: Vec<u64>,
    /// Interrupts raised while MSI-X was disabled or for a vector outside the table.
    pub dropped: u64,
    /// Interrupts whose eventfd write failed (EAGAIN: the eventfd's counter
    /// was full); never retried.
    #[serde(default)]
    pub lost: u64,
}
