//! Child processes that must not outlive a Ctrl-C: QEMU guests and kernel
//! builds. One signal thread per process (SIGINT, SIGTERM, SIGHUP) kills every
//! tracked child (a QEMU by pid, a `make` by process group), and marks the
//! process interrupted so that loops over several boots or builds stop; their
//! owners reap the children and return an error. With no child running, the
//! signal ends the process with 128 + signal, like the default action, unless
//! an [`ExitDeferral`] lives (a matrix writing its partial results): then only
//! a second signal does.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

/// Tracked children: a pid (> 0) or a process group (< 0, as kill(2) takes it).
static ACTIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static SIGNALS: Once = Once::new();
/// Live [`ExitDeferral`]s.
static DEFERRALS: AtomicUsize = AtomicUsize::new(0);

/// Install the signal thread (once per process).
pub fn install_signal_thread() {
    SIGNALS.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            tracing::warn!("cannot install SIGINT/SIGTERM/SIGHUP handling; Ctrl-C may leave QEMU or make running");
            return;
        };
        std::thread::spawn(move || {
            for sig in signals.forever() {
                let first = !INTERRUPTED.swap(true, Ordering::SeqCst);
                let active = lock();
                let deferred = first && DEFERRALS.load(Ordering::SeqCst) > 0;
                if active.is_empty() && !deferred {
                    std::process::exit(128 + sig);
                }
                for &target in active.iter() {
                    // SAFETY: kill(2) on a child (or its process group) that
                    // we spawned and have not reaped: owners untrack it under
                    // this lock before reaping.
                    unsafe { libc::kill(target, libc::SIGKILL) };
                }
            }
        });
    });
}

fn lock() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    ACTIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// While it lives, the first signal does not end a process that has no child
/// running: it only marks it interrupted (and kills the children it has), so
/// that a loop over many runs can stop and write what it has (a matrix's
/// partial summary). A second signal ends the process as usual.
#[derive(Debug)]
pub struct ExitDeferral(());

/// Defer the exit on the first signal (see [`ExitDeferral`]); installs the signal thread.
pub fn defer_exit() -> ExitDeferral {
    install_signal_thread();
    DEFERRALS.fetch_add(1, Ordering::SeqCst);
    ExitDeferral(())
}

impl Drop for ExitDeferral {
    fn drop(&mut self) {
        DEFERRALS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Track a child: `target` is its pid, or minus its process group id.
pub fn track(target: i32) {
    lock().insert(target);
}

/// Stop tracking (before reaping, so a tracked id is never a recycled one).
pub fn untrack(target: i32) {
    lock().remove(&target);
}

/// Kill a tracked child now (no-op once untracked, i.e. reaped or about to be).
pub fn kill_if_tracked(target: i32) {
    let active = lock();
    if active.contains(&target) {
        // SAFETY: as in the signal thread: tracked means not yet reaped.
        unsafe { libc::kill(target, libc::SIGKILL) };
    }
}

/// Make the child of `cmd` get SIGKILL when the thread that spawns it exits
/// (prctl PR_SET_PDEATHSIG): a SIGKILL of manarig (a CI job's timeout, the OOM
/// killer) reaches no handler, and QEMU or `make` would run on without anyone
/// to reap them. The spawning thread must outlive the child, as every owner
/// here does: it waits for the child before it returns.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before the prctl: then nobody waits.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    };
}

/// True once SIGINT, SIGTERM or SIGHUP arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Block until child `pid` has exited, leaving it unreaped (waitid WNOWAIT).
pub fn wait_exit_unreaped(pid: i32) {
    loop {
        // SAFETY: siginfo_t is plain data; all-zero is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid on our own child with a valid out-pointer; WNOWAIT
        // leaves the child to be reaped by Child::wait.
        let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if rc == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    }
}
