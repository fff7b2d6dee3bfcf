//! The data path's event loop for a packet backend with a readiness fd (a
//! TAP, [`crate::datapath::tap`]): one thread, rust-vmm `event-manager` on
//! epoll, watching the backend's fd and a stop eventfd.
//!
//! - The backend's fd readable: pull frames into the guest in batches of
//!   [`RX_BATCH`] (`ManaDevice::poll_backend`) until a batch comes back short,
//!   taking the core's lock for one batch at a time (a vCPU's doorbell write
//!   waits on that lock: at most one batch, tens of microseconds). At most
//!   [`MAX_BATCHES_PER_WAKEUP`] batches per wakeup; epoll is level-triggered,
//!   so frames left for later wake the loop again at once.
//! - After every wakeup, and at least every [`IDLE_TICK`]: while
//!   `ManaDevice::has_pending_work` (SQ entries beyond a doorbell's batch),
//!   `ManaDevice::poll`, one batch per lock. Doorbells continue such work too
//!   (see [`crate::datapath::engine`]); the tick bounds how long it can wait
//!   when the driver rings none.
//! - The stop eventfd: the loop ends; [`BackendLoop::stop`] joins it.
//!
//! Nothing here blocks on the guest or the backend: the fd is non-blocking
//! and every wait has the tick as its deadline.

use crate::datapath::engine::RX_BATCH;
use crate::shell::locked_core::CoreObserver;
use crate::ManaDevice;
use event_manager::{EventManager, EventOps, EventSet, Events, MutEventSubscriber, SubscriberOps};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};

/// Batches of [`RX_BATCH`] frames pulled per wakeup before epoll is asked again.
pub const MAX_BATCHES_PER_WAKEUP: usize = 16;
/// Longest wait without a check for pending SQ work.
pub const IDLE_TICK: Duration = Duration::from_millis(10);
/// `ManaDevice::poll` calls per check (each one batch of SQ entries).
const MAX_POLLS_PER_CHECK: usize = 64;

/// Errors starting or running the loop.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// epoll or the eventfd could not be set up.
    #[error("data-path event loop: {0}")]
    Setup(String),
    /// The loop's thread could not start or panicked.
    #[error("data-path event loop thread: {0}")]
    Thread(String),
}

/// What the loop did, for the device's log.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LoopStats {
    /// Wakeups with the backend's fd readable.
    pub wakeups: u64,
    /// Frames pulled from the backend.
    pub frames: u64,
    /// `ManaDevice::poll` calls for pending SQ work.
    pub polls: u64,
}

/// The subscriber: the backend's fd and the stop eventfd.
struct Pump {
    core: CoreObserver<ManaDevice>,
    ready: OwnedFd,
    stop: EventFd,
    stopped: Arc<AtomicBool>,
    stats: LoopStats,
}

impl Pump {
    /// Pulls frames in batches until a batch comes back short (or the
    /// per-wakeup limit).
    fn drain(&mut self) {
        self.stats.wakeups += 1;
        for _ in 0..MAX_BATCHES_PER_WAKEUP {
            let pulled = self.core.with_mut(|d| d.poll_backend(RX_BATCH)).unwrap_or(0);
            self.stats.frames += pulled as u64;
            if pulled < RX_BATCH {
                break;
            }
        }
    }

    /// Continues pending data-path work, one batch per lock.
    fn continue_pending(&mut self) {
        for _ in 0..MAX_POLLS_PER_CHECK {
            let more = self.core.with_mut(|d| {
                d.has_pending_work() && {
                    d.poll();
                    true
                }
            });
            if more != Some(true) {
                break;
            }
            self.stats.polls += 1;
        }
    }
}

impl MutEventSubscriber for Pump {
    fn process(&mut self, events: Events, ops: &mut EventOps) {
        if events.fd() == self.stop.as_raw_fd() {
            self.stopped.store(true, Ordering::SeqCst);
            return;
        }
        let set = events.event_set();
        if set.contains(EventSet::IN) {
            self.drain();
        }
        if set.intersects(EventSet::ERROR | EventSet::HANG_UP) {
            tracing::warn!(?set, "data-path backend fd reports an error or hang-up; no longer watched");
            let _ = ops.remove(Events::new(&self.ready, EventSet::IN));
        }
    }

    fn init(&mut self, ops: &mut EventOps) {
        for (fd, what) in [(self.ready.as_raw_fd(), "backend"), (self.stop.as_raw_fd(), "stop")] {
            if let Err(e) = ops.add(Events::new_raw(fd, EventSet::IN)) {
                tracing::error!("data-path event loop: cannot watch the {what} fd: {e}");
                self.stopped.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// A running event loop; [`BackendLoop::stop`] (or drop) ends it.
#[derive(Debug)]
pub struct BackendLoop {
    stop: EventFd,
    thread: Option<JoinHandle<LoopStats>>,
}

impl BackendLoop {
    /// Starts the loop for `core`, whose backend's readiness fd is `ready` (a
    /// duplicate the loop owns: `OwnedFd::try_clone` of the backend's fd).
    ///
    /// # Errors
    /// [`LoopError::Setup`] when epoll or the eventfd cannot be created,
    /// [`LoopError::Thread`] when the thread cannot start.
    pub fn start(core: CoreObserver<ManaDevice>, ready: OwnedFd) -> Result<Self, LoopError> {
        let stop = EventFd::new(EFD_NONBLOCK).map_err(|e| LoopError::Setup(format!("eventfd: {e}")))?;
        let stop_clone = stop.try_clone().map_err(|e| LoopError::Setup(format!("eventfd: {e}")))?;
        let mut manager = EventManager::<Arc<Mutex<dyn MutEventSubscriber + Send>>>::new()
            .map_err(|e| LoopError::Setup(e.to_string()))?;
        let stopped = Arc::new(AtomicBool::new(false));
        let pump = Arc::new(Mutex::new(Pump {
            core,
            ready,
            stop: stop_clone,
            stopped: Arc::clone(&stopped),
            stats: LoopStats::default(),
        }));
        manager.add_subscriber(pump.clone());
        let thread = std::thread::Builder::new()
            .name("data-path".into())
            .spawn(move || {
                let tick = i32::try_from(IDLE_TICK.as_millis()).unwrap_or(i32::MAX);
                while !stopped.load(Ordering::SeqCst) {
                    if let Err(e) = manager.run_with_timeout(tick) {
                        tracing::error!("data-path event loop: {e}; stopping");
                        break;
                    }
                    pump.lock().unwrap_or_else(|p| p.into_inner()).continue_pending();
                }
                let stats = pump.lock().unwrap_or_else(|p| p.into_inner()).stats;
                stats
            })
            .map_err(|e| LoopError::Thread(e.to_string()))?;
        Ok(Self { stop, thread: Some(thread) })
    }

    /// Ends the loop and waits for its thread (at most one [`IDLE_TICK`] and a batch).
    ///
    /// # Errors
    /// [`LoopError::Thread`] when the thread panicked.
    pub fn stop(mut self) -> Result<LoopStats, LoopError> {
        self.end()
    }

    fn end(&mut self) -> Result<LoopStats, LoopError> {
        let _ = self.stop.write(1);
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| LoopError::Thread("panicked".into())),
            None => Ok(LoopStats::default()),
        }
    }
}

impl Drop for BackendLoop {
    fn drop(&mut self) {
        let _ = self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::tap::Tap;
    use crate::interrupt::NoInterrupts;
    use crate::shell::locked_core::mana_core_with;
    use mana_device_api::config::DeviceConfig;
    use std::os::unix::net::UnixDatagram;
    use vm_memory::{GuestMemoryAtomic, GuestMemoryMmap};

    #[test]
    fn frames_on_the_backend_fd_are_pulled_by_the_loop_and_stop_ends_it() {
        let (ours, wire) = UnixDatagram::pair().expect("socketpair");
        ours.set_nonblocking(true).expect("nonblocking");
        let fd = OwnedFd::from(ours);
        let ready = fd.try_clone().expect("dup");
        let tap = Tap::new(fd);
        let stats = tap.stats();
        let (factory, status, core) = mana_core_with(&DeviceConfig::default(), Box::new(tap), 4, Vec::new());
        let memory = GuestMemoryAtomic::new(GuestMemoryMmap::new());
        let _bar0 = factory(memory, Arc::new(NoInterrupts));
        let lp = BackendLoop::start(core, ready).expect("loop");
        (0..3).for_each(|_| {
            wire.send(&[0u8; 60]).expect("send");
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while stats.rx_frames.load(Ordering::Relaxed) < 3 {
            assert!(std::time::Instant::now() < deadline, "frames not pulled");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(lp.stop().expect("stopped").frames, 3);
        // No vPort is configured: every frame was dropped unsteered.
        let snapshot = status().expect("core");
        assert_eq!((snapshot.counters.traffic.rx_unsteered, snapshot.flows.capacity), (3, 4));
    }
}
