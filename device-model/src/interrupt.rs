//! How the device raises MSI-X vectors.

/// Something that delivers MSI-X vector `vector` (0-based MSI-X table index)
/// to the guest.
///
/// Production: the per-vector eventfds that QEMU hands over with
/// `VFIO_USER_DEVICE_SET_IRQS`; a vector without an eventfd is dropped (QEMU
/// has not enabled it yet). Tests: a recorder.
pub trait InterruptSink: Send + Sync {
    /// Raise MSI-X vector `vector`. Must not block.
    fn raise(&self, vector: u16);
}

/// A sink that drops every vector: a core driven without a guest (tests,
/// benchmarks of the data path alone).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoInterrupts;

impl InterruptSink for NoInterrupts {
    fn raise(&self, _vector: u16) {}
}
