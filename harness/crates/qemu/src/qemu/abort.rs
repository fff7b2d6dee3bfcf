//! [`BootAbort`]: how a caller ends a running boot from another thread.

use super::watch::Msg;
use std::sync::mpsc;

/// Ends a [`super::boot`] from another thread, e.g. when a process the guest
/// depends on (the emulated NIC, harness/crates/rig/src/rig/device.rs) fails: QEMU is
/// killed and reaped at once and the boot returns [`super::LaunchError::Aborted`]
/// with the reason. An abort that comes before the boot has started QEMU ends
/// the boot as soon as it has; one that comes after the boot returned changes
/// nothing. Clones share the same state.
#[derive(Clone, Default)]
pub struct BootAbort(std::sync::Arc<std::sync::Mutex<AbortState>>);

#[derive(Default)]
struct AbortState {
    /// The first reason given.
    reason: Option<String>,
    /// The running boot's console channel, while it runs.
    boot: Option<mpsc::Sender<Msg>>,
    /// The boot has stopped listening.
    ended: bool,
}

impl BootAbort {
    fn state(&self) -> std::sync::MutexGuard<'_, AbortState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// End the boot (`reason` says why, e.g. the device's exit status and its
    /// last log lines). Only the first reason is kept. Returns false when the
    /// boot had already ended (or was about to stop QEMU itself): then the
    /// reason is not the boot's, and is dropped.
    pub fn abort(&self, reason: String) -> bool {
        let mut state = self.state();
        if state.ended {
            return false;
        }
        if state.reason.is_none() {
            state.reason = Some(reason);
        }
        if let Some(boot) = &state.boot {
            let _ = boot.send(Msg::Abort);
        }
        true
    }

    /// The reason given to [`Self::abort`], if it reached a boot.
    pub fn reason(&self) -> Option<String> {
        self.state().reason.clone()
    }

    /// The boot that starts now listens on `boot`.
    pub(super) fn attach(&self, boot: mpsc::Sender<Msg>) {
        let mut state = self.state();
        if state.reason.is_some() {
            let _ = boot.send(Msg::Abort);
        }
        state.boot = Some(boot);
    }

    /// The boot is over (QEMU is being stopped or has exited): later aborts
    /// are not its cause. The reason given before, if any.
    pub(super) fn detach(&self) -> Option<String> {
        let mut state = self.state();
        state.boot = None;
        state.ended = true;
        state.reason.clone()
    }
}

impl std::fmt::Debug for BootAbort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BootAbort").field(&self.state().reason).finish()
    }
}
