//! The boundary between the vfio-user shell and the device core.

use crate::interrupt::InterruptSink;
use std::sync::Arc;
use vm_memory::{GuestMemoryAtomic, GuestMemoryMmap};

/// Guest memory as the device sees it for DMA: guest-physical addresses
/// (no IOMMU translation), rebuilt by the shell on every DMA_MAP / DMA_UNMAP.
pub type DmaMemory = GuestMemoryAtomic<GuestMemoryMmap<()>>;

/// The device's BAR0 (registers, shared-memory channel, doorbell pages).
///
/// The shell forwards every guest access to BAR0 here; all device work is
/// done synchronously inside these calls (DMA through [`DmaMemory`], MSI-X
/// through [`InterruptSink`]). Implementations must never panic on any
/// offset, length or value: bad guest input is logged and dropped, reads of
/// nonsense return all-ones.
pub trait Bar0Handler: Send {
    /// Size of BAR0 in bytes (a power of two).
    fn size(&self) -> u64;
    /// Guest read of `data.len()` bytes (1, 2, 4 or 8) at byte `offset` in BAR0.
    fn read(&mut self, offset: u64, data: &mut [u8]);
    /// Guest write of `data.len()` bytes (1, 2, 4 or 8) at byte `offset` in BAR0.
    fn write(&mut self, offset: u64, data: &[u8]);
    /// Function-level / device reset: forget all queues, DMA regions and
    /// registered devices, as after power-on.
    fn reset(&mut self);
}

/// Builds the device core once the shell has its DMA memory and interrupt sink.
pub type Bar0Factory = Box<dyn FnOnce(DmaMemory, Arc<dyn InterruptSink>) -> Box<dyn Bar0Handler> + Send>;
