//! Makes the device *process* fail on purpose (`mana-device --inject-fault
//! KIND:N`, [`mana_device_api::fault`]: the spec and its kinds): the core is
//! wrapped so that the N-th guest write to BAR0 panics, exits, kills the
//! process or hangs holding the device's lock (so that
//! [`crate::shell::server::StatusHandle::ping`] blocks). Test-only: it checks that
//! whoever runs the device turns a broken device into a clear error. Each
//! logs `injected fault: …` at error level first.

use crate::bar::{Bar0Factory, Bar0Handler};
use mana_device_api::fault::{DeviceFault, FaultKind};

/// The core `factory` builds, failing as `fault` says.
pub fn inject(factory: Bar0Factory, fault: DeviceFault) -> Bar0Factory {
    Box::new(move |memory, sink| Box::new(Faulty { inner: factory(memory, sink), fault, writes: 0 }))
}

/// A core that counts BAR0 writes and fails at [`DeviceFault::at_bar0_write`].
struct Faulty {
    inner: Box<dyn Bar0Handler>,
    fault: DeviceFault,
    writes: u64,
}

impl Faulty {
    fn strike(&self) {
        tracing::error!("injected fault: {} at BAR0 write {}", self.fault, self.writes);
        match self.fault.kind {
            FaultKind::Panic => panic!("injected fault: {}", self.fault),
            FaultKind::Exit => std::process::exit(3),
            FaultKind::Kill => {
                // SAFETY: kill(2) of this very process; no memory is involved.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
            FaultKind::Hang => loop {
                // The fault is the hang: park until the process is killed.
                std::thread::park();
            },
        }
    }
}

impl Bar0Handler for Faulty {
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read(&mut self, offset: u64, data: &mut [u8]) {
        self.inner.read(offset, data);
    }
    fn write(&mut self, offset: u64, data: &[u8]) {
        self.writes += 1;
        if self.writes == self.fault.at_bar0_write {
            self.strike();
        }
        self.inner.write(offset, data);
    }
    fn reset(&mut self) {
        self.inner.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interrupt::InterruptSink;
    use mana_device_api::config::DeviceConfig;
    use std::sync::Arc;
    use vm_memory::{GuestMemoryAtomic, GuestMemoryMmap};

    #[test]
    fn a_panic_fault_strikes_at_its_write_and_not_before() {
        struct Sink;
        impl InterruptSink for Sink {
            fn raise(&self, _vector: u16) {}
        }
        let fault = DeviceFault { kind: FaultKind::Panic, at_bar0_write: 3 };
        let factory = inject(crate::factory(DeviceConfig::default()), fault);
        let mut core = factory(GuestMemoryAtomic::new(GuestMemoryMmap::new()), Arc::new(Sink));
        // Doorbell-page writes to nothing: dropped by the core, counted here.
        let offset = crate::device::regs::DB_PAGE_OFFSET;
        core.write(offset, &[0; 8]);
        core.write(offset, &[0; 8]);
        let third = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| core.write(offset, &[0; 8])));
        let message = third.expect_err("the third write panics");
        let message = message.downcast_ref::<String>().cloned().unwrap_or_default();
        assert_eq!(message, "injected fault: panic:3");
    }
}
