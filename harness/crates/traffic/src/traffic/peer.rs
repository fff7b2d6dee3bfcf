//! The peer child process (`manarig-flows peer`) of one run, seen from the
//! rig: start it, take the TAP descriptor it sends, answer its request for a
//! plan, collect both ends' results, stop and reap it.
//!
//! - Start: a Unix sequenced-packet socket pair; one end is inherited by the
//!   peer (`--fd-socket N`), which sends the TAP's descriptor on it, then
//!   prints [`PeerEvent::Ready`] on stdout (within [`READY_DEADLINE`]).
//! - Plan: when the guest says hello the peer prints [`PeerEvent::Hello`];
//!   a thread calls the [`Planner`] set with [`PeerProcess::set_planner`]
//!   and writes [`RigCommand::Plan`] (or `Refuse`) on the peer's stdin.
//! - Results: [`PeerEvent::Done`] with both ends' [`Outcome`], once per guest
//!   session (a soak's guest runs sessions, rounds, back to back); a session
//!   whose connection broke before its flows is [`PeerEvent::Dropped`].
//! - Lifetime: tracked in [`crate::children`] (Ctrl-C kills it), SIGKILL when
//!   the rig dies ([`crate::children::die_with_parent`]); closing its stdin
//!   ends it at once; [`PeerProcess::finish`] (or drop) reaps it. Its
//!   namespace and TAP need no cleanup (see [`super`]).

use manarig_flows::fdpass::{recv_fd, socket_pair};
use manarig_flows::proto::{decode, encode, GuestHello, Outcome, PeerEvent, Plan, RigCommand};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long the peer may take to send the TAP and say it is ready.
pub const READY_DEADLINE: Duration = Duration::from_secs(10);
/// How long [`PeerProcess::finish`] waits for the peer to exit after its
/// stdin closed, before killing it.
const STOP_DEADLINE: Duration = Duration::from_secs(5);
/// Peer log lines kept for errors.
const TAIL_LINES: usize = 20;
/// How long the readers of a peer that exited may take to pass its last lines on.
const DRAIN: Duration = Duration::from_secs(2);

/// Makes the plan for the guest that said hello (the rig reads the device's
/// RSS state); an `Err` is sent to the peer as the reason there is none.
pub type Planner = Box<dyn FnMut(&GuestHello) -> Result<Plan, String> + Send>;

/// Errors starting the peer.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// Spawning it or the socket pair failed.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// It did not get ready.
    #[error("the traffic peer ({bin}) {what}{}", log_lines(tail))]
    NotReady {
        /// The binary.
        bin: PathBuf,
        /// What happened instead.
        what: String,
        /// Its last log lines.
        tail: Vec<String>,
    },
}

fn log_lines(tail: &[String]) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its last lines:\n  {}", tail.join("\n  "))
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the peer's threads share with the rig.
#[derive(Default)]
struct Shared {
    stdin: Mutex<Option<ChildStdin>>,
    planner: Mutex<Option<Planner>>,
    hello: Mutex<Option<GuestHello>>,
    tail: Mutex<VecDeque<String>>,
}

impl Shared {
    fn keep(&self, line: String) {
        let mut tail = lock(&self.tail);
        if tail.len() == TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }

    fn tail(&self) -> Vec<String> {
        lock(&self.tail).iter().cloned().collect()
    }

    /// Answers a hello with a plan (or the reason there is none).
    fn answer(&self, hello: GuestHello) {
        let command = match lock(&self.planner).as_mut() {
            Some(planner) => match planner(&hello) {
                Ok(plan) => RigCommand::Plan(plan),
                Err(why) => RigCommand::Refuse(why),
            },
            None => RigCommand::Refuse("the rig has no planner (the device never started)".into()),
        };
        *lock(&self.hello) = Some(hello);
        if let Some(stdin) = lock(&self.stdin).as_mut() {
            let _ = stdin.write_all(encode(&command).as_bytes()).and_then(|()| stdin.flush());
        }
    }
}

/// How the flows ended, seen from the rig.
#[derive(Debug, Clone, Default)]
pub struct PeerReport {
    /// The guest said hello (the guest tool ran and reached the peer).
    pub hello: Option<GuestHello>,
    /// Both ends' results of the first session, when the peer got that far.
    pub outcome: Option<Outcome>,
    /// Why there is no outcome (the peer's `Failed` line or its exit, or a
    /// session that ended without one), or why the last session has none.
    pub error: Option<String>,
    /// Every session's end, in order (one for a plain traffic run; a soak's
    /// rounds): [`PeerReport::outcome`] is the first one's.
    pub sessions: Vec<SessionEnd>,
}

/// One guest session as the rig saw it end.
#[derive(Debug, Clone)]
pub struct SessionEnd {
    /// When the rig read its end (host clock).
    pub at: Instant,
    /// Both ends' results, or why the session ended before its flows ran.
    pub result: Result<Outcome, String>,
}

/// A running peer; [`PeerProcess::finish`] (or drop) stops and reaps it.
pub struct PeerProcess {
    child: Option<Child>,
    pid: u32,
    shared: Arc<Shared>,
    events: mpsc::Receiver<(Instant, PeerEvent)>,
    exited: mpsc::Receiver<()>,
    /// Closes when the stderr reader has read everything.
    stderr_done: mpsc::Receiver<()>,
}

/// Where the peer puts itself: its TAP, address and control port, and how
/// long it may live.
#[derive(Debug, Clone)]
pub struct PeerOptions {
    /// The TAP's name in the namespace.
    pub tap: String,
    /// A second TAP, bridged with the first in the namespace (the selftests'
    /// remote NIC); its descriptor is [`PeerTaps::remote`].
    pub remote_tap: Option<String>,
    /// The peer's address and prefix length.
    pub host: (Ipv4Addr, u8),
    /// The control port.
    pub port: u16,
    /// The peer gives up after this long.
    pub deadline: Duration,
}

/// The TAP descriptors a peer sends.
#[derive(Debug)]
pub struct PeerTaps {
    /// The NIC's wire (for the `mana-device` process).
    pub tap: OwnedFd,
    /// The remote TAP, with [`PeerOptions::remote_tap`] (for QEMU's second NIC).
    pub remote: Option<OwnedFd>,
}

impl PeerProcess {
    /// Starts `bin` as the peer and waits for its TAP descriptors and its
    /// readiness (within [`READY_DEADLINE`]).
    ///
    /// # Errors
    /// [`PeerError::Io`] (socket pair, spawn), [`PeerError::NotReady`] (it
    /// exited or said nothing in time; it is reaped either way).
    pub fn start(bin: &Path, opts: &PeerOptions) -> Result<(Self, PeerTaps), PeerError> {
        let io = |what: &str| {
            let what = what.to_string();
            move |source| PeerError::Io { what, error: source }
        };
        let (ours, theirs) = socket_pair().map_err(io("a socket pair for the TAP's descriptor"))?;
        let theirs_raw = theirs.as_raw_fd();
        let mut cmd = Command::new(bin);
        cmd.args(["peer", "--fd-socket", &theirs_raw.to_string(), "--tap", &opts.tap])
            .args(["--host", &format!("{}/{}", opts.host.0, opts.host.1), "--port", &opts.port.to_string()])
            .args(["--deadline", &opts.deadline.as_secs().max(1).to_string()])
            .args(opts.remote_tap.iter().flat_map(|r| ["--remote-tap", r.as_str()]))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        {
            use std::os::unix::process::CommandExt;
            // Own process group (a terminal's Ctrl-C reaches us; we stop it).
            cmd.process_group(0);
            // SAFETY: runs between fork and exec; fcntl is async-signal-safe
            // and touches only the child's copy of the descriptor.
            unsafe {
                cmd.pre_exec(move || {
                    // Inherit this one descriptor (it was created close-on-exec).
                    if libc::fcntl(theirs_raw, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                })
            };
        }
        crate::children::die_with_parent(&mut cmd);
        crate::children::install_signal_thread();
        let mut child = cmd.spawn().map_err(io(&format!("starting {}", bin.display())))?;
        drop(theirs);
        let pid = child.id();
        crate::children::track(pid as i32);
        let shared = Arc::new(Shared::default());
        *lock(&shared.stdin) = child.stdin.take();
        let (event_tx, events) = mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || read_events(stdout, &shared, &event_tx));
        }
        // Dropped by the stderr thread at end of file: the tail is complete.
        let (stderr_tx, stderr_done) = mpsc::channel::<()>();
        if let Some(stderr) = child.stderr.take() {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                let _done = stderr_tx;
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    tracing::debug!("{}: {line}", manarig_flows::BIN);
                    shared.keep(line);
                }
            });
        }
        let (exit_tx, exited) = mpsc::channel();
        std::thread::spawn(move || {
            crate::children::wait_exit_unreaped(pid as i32);
            let _ = exit_tx.send(());
        });
        let mut peer = PeerProcess { child: Some(child), pid, shared, events, exited, stderr_done };
        let not_ready = |peer: &mut PeerProcess, what: String| {
            peer.stop();
            // A Failed line says why better than a missing descriptor; the
            // stdout reader ends (and the channel closes) once the peer is gone.
            let mut failed = None;
            while let Ok((_, event)) = peer.events.recv_timeout(DRAIN) {
                if let PeerEvent::Failed(why) = event {
                    failed = Some(why);
                }
            }
            let what = failed.map_or(what, |why| format!("failed: {why}"));
            PeerError::NotReady { bin: bin.to_path_buf(), what, tail: peer.shared.tail() }
        };
        let tap = match recv_fd(ours.as_fd(), READY_DEADLINE) {
            Ok(fd) => fd,
            Err(e) => return Err(not_ready(&mut peer, format!("sent no TAP descriptor ({e})"))),
        };
        let remote = match &opts.remote_tap {
            Some(name) => match recv_fd(ours.as_fd(), READY_DEADLINE) {
                Ok(fd) => Some(fd),
                Err(e) => return Err(not_ready(&mut peer, format!("sent no descriptor of TAP {name} ({e})"))),
            },
            None => None,
        };
        match peer.events.recv_timeout(READY_DEADLINE).map(|(_, e)| e) {
            Ok(PeerEvent::Ready { .. }) => Ok((peer, PeerTaps { tap, remote })),
            Ok(PeerEvent::Failed(why)) => Err(not_ready(&mut peer, format!("failed: {why}"))),
            Ok(other) => Err(not_ready(&mut peer, format!("said {other:?} before it was ready"))),
            Err(_) => Err(not_ready(&mut peer, format!("was not ready within {READY_DEADLINE:?}"))),
        }
    }

    /// The peer's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Sets what answers the guest's hello (once the device runs).
    pub fn set_planner(&self, planner: Planner) {
        *lock(&self.shared.planner) = Some(planner);
    }

    /// Takes every session's end the peer reported; waits up to `within` for
    /// the results of a session still running (one whose guest said hello:
    /// without a hello nothing will come), then stops and reaps the peer.
    pub fn finish(mut self, within: Duration) -> PeerReport {
        let mut report = PeerReport::default();
        let deadline = Instant::now() + within;
        let mut running = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let wait = if running { left } else { Duration::ZERO };
            match self.events.recv_timeout(wait) {
                Ok((_, PeerEvent::Hello(_))) => running = true,
                Ok((at, PeerEvent::Done(outcome))) => {
                    running = false;
                    report.sessions.push(SessionEnd { at, result: Ok(*outcome) });
                }
                Ok((at, PeerEvent::Dropped(why))) => {
                    running = false;
                    report.sessions.push(SessionEnd { at, result: Err(why) });
                }
                Ok((_, PeerEvent::Failed(why))) => {
                    report.error = Some(why);
                    break;
                }
                Ok((_, PeerEvent::Ready { .. })) => {}
                Err(RecvTimeoutError::Timeout) => {
                    if running {
                        report.error = Some(format!("no results from the peer within {within:?} of the report"));
                    }
                    break;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    if running || report.sessions.is_empty() {
                        let tail = log_lines(&self.shared.tail());
                        report.error = Some(format!("the peer ended before its results{tail}"));
                    }
                    break;
                }
            }
        }
        report.outcome = report.sessions.iter().find_map(|s| s.result.as_ref().ok()).cloned();
        if report.outcome.is_none() && report.error.is_none() {
            report.error = report.sessions.iter().find_map(|s| s.result.as_ref().err()).cloned();
        }
        report.hello = lock(&self.shared.hello).clone();
        self.stop();
        report
    }

    /// Closes stdin (the peer exits at once), kills it after
    /// [`STOP_DEADLINE`], reaps it.
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        drop(lock(&self.shared.stdin).take());
        if self.exited.recv_timeout(STOP_DEADLINE).is_err() {
            crate::children::kill_if_tracked(self.pid as i32);
            let _ = self.exited.recv_timeout(STOP_DEADLINE);
        }
        // Untrack, then reap: a tracked pid is never a recycled one.
        crate::children::untrack(self.pid as i32);
        let _ = child.wait();
        // Its last stderr lines are in the pipe: let the reader keep them.
        let _ = self.stderr_done.recv_timeout(DRAIN);
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The peer's stdout: events on with the moment they were read, hellos
/// answered here first.
fn read_events(stdout: std::process::ChildStdout, shared: &Shared, events: &mpsc::Sender<(Instant, PeerEvent)>) {
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        match decode::<PeerEvent>(&line, "a peer event") {
            Ok(event) => {
                if let PeerEvent::Hello(hello) = &event {
                    shared.answer(hello.clone());
                }
                if events.send((Instant::now(), event)).is_err() {
                    return;
                }
            }
            Err(e) => shared.keep(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for `manarig-flows` that prints `body` and exits.
    fn fake(dir: &Path, body: &str) -> PathBuf {
        manarig_test_support::shell_script(dir, "fake-flows", body)
    }

    fn options() -> PeerOptions {
        PeerOptions {
            tap: "tap0".into(),
            remote_tap: None,
            host: (Ipv4Addr::new(192, 0, 2, 1), 24),
            port: 7000,
            deadline: Duration::from_secs(30),
        }
    }

    #[test]
    fn a_peer_that_fails_before_sending_the_tap_is_an_error_with_its_reason_and_is_reaped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = fake(
            dir.path(),
            r#"echo '{"Failed":"a new network namespace: Operation not permitted"}'; echo 'detail on stderr' >&2; exit 2"#,
        );
        let Err(e) = PeerProcess::start(&bin, &options()) else { panic!("started") };
        let text = e.to_string();
        assert!(text.contains("failed: a new network namespace: Operation not permitted"), "{text}");
        assert!(text.contains("detail on stderr"), "{text}");
    }

    #[test]
    fn a_peer_that_exits_without_a_word_is_an_error_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = fake(dir.path(), "exit 0");
        let started = std::time::Instant::now();
        let Err(e) = PeerProcess::start(&bin, &options()) else { panic!("started") };
        assert!(e.to_string().contains("sent no TAP descriptor (the sender closed the socket)"), "{e}");
        assert!(started.elapsed() < READY_DEADLINE, "{:?}", started.elapsed());
    }
}
