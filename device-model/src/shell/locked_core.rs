//! Sharing the device core between the vfio-user shell, which forwards
//! BAR0 accesses to it, and a status reader on another thread.
//!
//! The shell owns its core as a `Box<dyn Bar0Handler>` built by a
//! [`Bar0Factory`]; [`observed_factory`] wraps the core in a mutex so that
//! the caller keeps a typed handle ([`CoreObserver`]) for snapshots.

use crate::bar::{Bar0Factory, Bar0Handler, DmaMemory};
use crate::datapath::backend::{Discard, PacketBackend};
use crate::interrupt::InterruptSink;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// A core behind a mutex; forwards every [`Bar0Handler`] call under the lock.
struct LockedCore<C>(Arc<Mutex<C>>);

fn lock<C>(core: &Mutex<C>) -> MutexGuard<'_, C> {
    // A panic inside the core is a bug that the shell already reports; keep
    // serving the state as it is rather than wedge every later access.
    core.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<C: Bar0Handler> Bar0Handler for LockedCore<C> {
    fn size(&self) -> u64 {
        lock(&self.0).size()
    }
    fn read(&mut self, offset: u64, data: &mut [u8]) {
        lock(&self.0).read(offset, data);
    }
    fn write(&mut self, offset: u64, data: &[u8]) {
        lock(&self.0).write(offset, data);
    }
    fn reset(&mut self) {
        lock(&self.0).reset();
    }
}

/// A typed handle on the core built by an [`observed_factory`].
pub struct CoreObserver<C> {
    slot: Arc<OnceLock<Arc<Mutex<C>>>>,
}

impl<C> Clone for CoreObserver<C> {
    fn clone(&self) -> Self {
        Self { slot: Arc::clone(&self.slot) }
    }
}

impl<C> CoreObserver<C> {
    /// Runs `f` on the core under its lock; `None` before the factory has run.
    /// Must not be called from inside the core (the lock is not reentrant).
    pub fn with<R>(&self, f: impl FnOnce(&C) -> R) -> Option<R> {
        self.slot.get().map(|core| f(&lock(core)))
    }

    /// Runs `f` on the core under its lock, mutably (an event loop feeding it
    /// frames); `None` before the factory has run. Must not be called from
    /// inside the core.
    pub fn with_mut<R>(&self, f: impl FnOnce(&mut C) -> R) -> Option<R> {
        self.slot.get().map(|core| f(&mut lock(core)))
    }
}

/// Turns `build` into a [`Bar0Factory`] whose core stays reachable through
/// the returned [`CoreObserver`].
pub fn observed_factory<C, F>(build: F) -> (Bar0Factory, CoreObserver<C>)
where
    C: Bar0Handler + 'static,
    F: FnOnce(DmaMemory, Arc<dyn InterruptSink>) -> C + Send + 'static,
{
    let observer = CoreObserver { slot: Arc::new(OnceLock::new()) };
    let slot = Arc::clone(&observer.slot);
    let factory: Bar0Factory = Box::new(move |memory, sink| {
        let core = Arc::new(Mutex::new(build(memory, sink)));
        // The factory is FnOnce, so the slot is always empty here.
        let _ = slot.set(Arc::clone(&core));
        Box::new(LockedCore(core))
    });
    (factory, observer)
}

/// The MANA device core ([`crate::ManaDevice`]) for `config`, and a
/// [`crate::shell::server::CoreStatus`] that snapshots it for status files and the
/// control channel. This is what `mana-device` serves.
pub fn mana_core(config: &mana_device_api::config::DeviceConfig) -> (Bar0Factory, crate::shell::server::CoreStatus) {
    let (factory, status, _) = mana_core_with(config, Box::new(Discard), 0, Vec::new());
    (factory, status)
}

/// [`mana_core`] with the vPorts connected to `backend`, up to
/// `record_flows` flows recorded ([`crate::ManaDevice::record_flows`]) and
/// the faults of `inject` ([`crate::ManaDevice::inject`]); also
/// the typed handle an event loop uses to feed the core
/// ([`crate::process::backend_loop`]).
pub fn mana_core_with(
    config: &mana_device_api::config::DeviceConfig,
    backend: Box<dyn PacketBackend>,
    record_flows: usize,
    inject: Vec<mana_device_api::inject::InjectSpec>,
) -> (Bar0Factory, crate::shell::server::CoreStatus, CoreObserver<crate::ManaDevice>) {
    let config = config.clone();
    let (factory, observer) = observed_factory(move |memory, sink| {
        let mut device = crate::ManaDevice::with_backend(config, memory, sink, backend);
        device.record_flows(record_flows);
        device.inject(&inject);
        device
    });
    let status_observer = observer.clone();
    let status: crate::shell::server::CoreStatus = Box::new(move || status_observer.with(crate::ManaDevice::snapshot));
    (factory, status, observer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::regs::{BAR0_SIZE, DB_PAGE_OFFSET, REG_DB_PAGE_OFFSET};
    use crate::ManaDevice;
    use mana_device_api::config::DeviceConfig;
    use vm_memory::{GuestMemoryAtomic, GuestMemoryMmap};

    struct Sink;
    impl InterruptSink for Sink {
        fn raise(&self, _vector: u16) {}
    }

    #[test]
    fn observer_sees_the_core_the_factory_built() {
        let (factory, observer) =
            observed_factory(|memory, sink| ManaDevice::new(DeviceConfig::default(), memory, sink));
        assert!(observer.with(|_| ()).is_none(), "nothing built yet");
        let mut core = factory(GuestMemoryAtomic::new(GuestMemoryMmap::new()), Arc::new(Sink));
        let mut data = [0u8; 8];
        core.read(REG_DB_PAGE_OFFSET, &mut data);
        assert_eq!(u64::from_le_bytes(data), DB_PAGE_OFFSET);
        assert_eq!(observer.with(|c| c.size()), Some(BAR0_SIZE));
        assert_eq!(observer.with(|c| c.snapshot().counters.resets), Some(0));
        core.reset();
        assert_eq!(observer.with(|c| c.snapshot().counters.resets), Some(1));
    }
}
