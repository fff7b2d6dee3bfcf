//! The emulated MANA NIC of one run: the `mana-device` binary
//! (device-model/src/main.rs) as a child process serving the vfio-user socket
//! QEMU connects to. A device that panics, exits or hangs is a rig error
//! naming the device, with its last log lines, never the rig's own crash.
//!
//! - Start: `mana-device --socket S --config S.json --control stdio`, ready
//!   when it prints `ready S` (within [`READY_DEADLINE`]): 3-4 ms for the
//!   debug binary alone, 10-30 ms from spawn to ready in a run on a loaded
//!   2-core host (`MANARIG_LOG=harness=debug` logs it), against 2 s or more
//!   for a run.
//! - Status: typed requests and answers on its stdin/stdout
//!   (`device_model::control`); [`DeviceStatusHandle::snapshot`] is what the
//!   rig takes at each report marker, within [`ANSWER_DEADLINE`].
//! - Exit: a thread waits for the child's exit (waitid), so an exit or a
//!   crash is seen at once and ends the boot through its [`BootAbort`].
//! - Hang: a watchdog thread pings the device every [`PING_INTERVAL`] and
//!   kills it when a ping is not answered within [`ANSWER_DEADLINE`]. The
//!   device answers a ping only once no guest message is being handled
//!   (`StatusHandle::ping` takes the lock every message runs under), so a
//!   serving thread stuck inside a message is seen. Why pings: a hung device
//!   is alive, so only asking it shows the hang, and a stuck device does not
//!   fail the guest quickly (QEMU waits on its replies, the driver's HWC
//!   timeouts are tens of seconds). One ping is two small pipe writes per
//!   second; nothing else in the run waits on it.
//! - Lifetime: tracked in [`crate::children`] (Ctrl-C kills it), SIGKILL when
//!   manarig dies ([`crate::children::die_with_parent`]), and end of file on
//!   its stdin stops it; [`DeviceProcess::stop`] (or drop) reaps it.
//! - Logs: its stderr goes to ours line by line (the filter is `MANARIG_LOG`,
//!   passed as its `RUST_LOG`), and the last [`TAIL_LINES`] go into errors.
//! - Test hook: [`DeviceOptions::fault`] (`MANARIG_DEVICE_FAULT` for the CLI)
//!   makes the device fail on purpose (`mana-device --inject-fault`).
//!
//! The binary is found by [`device_binary`].

use crate::qemu::BootAbort;
use mana_device_api::config::DeviceConfig;
use mana_device_api::control::{Op, Reply, Request, Response};
use mana_device_api::fault::DeviceFault;
use mana_device_api::inject::DeviceEvent;
use mana_device_api::status::DeviceStatus;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The environment variable that names the `mana-device` binary to run.
pub const DEVICE_BIN_ENV: &str = "MANARIG_DEVICE_BIN";
/// The binary's file name (device-model's `[[bin]]`).
pub const DEVICE_BIN: &str = "mana-device";
/// The command that builds the binary, for error messages.
const BUILD_HINT: &str = "cargo build -p device-model --bin mana-device";
/// How long the device may take to print its readiness line.
pub const READY_DEADLINE: Duration = Duration::from_secs(10);
/// How often the watchdog pings the device.
pub const PING_INTERVAL: Duration = Duration::from_secs(1);
/// How long a ping or a status request may wait for its answer (the device
/// answers a ping in microseconds and a status in about a millisecond; a
/// loaded host may delay either).
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(5);
/// How long [`DeviceProcess::stop`] waits for the device to exit before killing it.
const STOP_DEADLINE: Duration = Duration::from_secs(5);
/// How long the exit waiter waits for the rest of the device's stderr.
const STDERR_DRAIN: Duration = Duration::from_secs(2);
/// Device log lines kept for errors.
pub const TAIL_LINES: usize = 20;

/// Errors of the device process.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// No binary beside the running executable, and no override.
    #[error(
        "the emulated NIC's binary `{DEVICE_BIN}` is not in {looked}: build it with `{BUILD_HINT}` \
         (the same profile as this program) or name it in {DEVICE_BIN_ENV}"
    )]
    NotFound {
        /// The folders looked in.
        looked: String,
    },
    /// [`DEVICE_BIN_ENV`] names something that is not a file.
    #[error("{DEVICE_BIN_ENV}={path}: not a file (unset it to use the `{DEVICE_BIN}` beside this program)")]
    BadOverride {
        /// The value.
        path: PathBuf,
    },
    /// Host I/O: the device's configuration file, spawning it.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// The device did not get ready.
    #[error("the emulated NIC ({bin}) {what} before it was ready{}", log_lines(tail))]
    NotReady {
        /// The binary.
        bin: PathBuf,
        /// What happened instead (its exit status, no readiness line in time).
        what: String,
        /// Its last log lines.
        tail: Vec<String>,
    },
    /// The device exited with a failure or stopped answering while it served.
    #[error("the emulated NIC (`{DEVICE_BIN}`, pid {pid}) {what} while it served the guest{}", log_lines(tail))]
    Failed {
        /// Its pid.
        pid: u32,
        /// What happened (`ended (signal: 9 (SIGKILL))`, `stopped answering …`).
        what: String,
        /// Its last log lines.
        tail: Vec<String>,
    },
    /// A control request got no usable answer.
    #[error("the emulated NIC (`{DEVICE_BIN}`, pid {pid}): {op:?} request: {problem}")]
    Control {
        /// Its pid.
        pid: u32,
        /// The request.
        op: Op,
        /// What went wrong.
        problem: String,
    },
}

/// `; its last log lines:` and the lines, indented, or that there were none.
fn log_lines(tail: &[String]) -> String {
    if tail.is_empty() {
        "; it logged nothing".to_string()
    } else {
        format!("; its last log lines:\n  {}", tail.join("\n  "))
    }
}

/// The `mana-device` binary to run: [`DEVICE_BIN_ENV`] when set, else
/// `mana-device` beside the running executable or one folder up (cargo puts
/// integration-test executables in `target/<profile>/deps/`, the workspace's
/// binaries in `target/<profile>/`).
///
/// # Errors
/// [`DeviceError::BadOverride`] when the variable names no file,
/// [`DeviceError::NotFound`] (one line, naming the build command) when
/// neither folder has the binary.
pub fn device_binary() -> Result<PathBuf, DeviceError> {
    if let Some(path) = std::env::var_os(DEVICE_BIN_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() { Ok(path) } else { Err(DeviceError::BadOverride { path }) };
    }
    let exe = std::env::current_exe()
        .map_err(|source| DeviceError::Io { what: "the running executable's path".into(), error: source })?;
    find_beside(&exe)
}

/// `mana-device` in the folder of `exe` or its parent.
fn find_beside(exe: &Path) -> Result<PathBuf, DeviceError> {
    crate::workspace_bin::find_beside(exe, DEVICE_BIN).map_err(|looked| DeviceError::NotFound { looked })
}

/// How to run the device, beyond its configuration.
#[derive(Debug, Clone, Default)]
pub struct DeviceOptions {
    /// Ended when the device fails while serving (see [`BootAbort`]).
    pub abort: Option<BootAbort>,
    /// Test only: make the device fail on purpose (`--inject-fault`).
    pub fault: Option<DeviceFault>,
    /// A TAP descriptor for the device's network (`--tap-fd`: the traffic
    /// peer's, [`crate::traffic`]); the device inherits it and the rig's copy
    /// closes when these options are dropped, so that only the device keeps
    /// the TAP alive.
    pub tap: Option<Arc<OwnedFd>>,
    /// Per-flow records the device keeps (`--record-flows`; 0 = none).
    pub record_flows: usize,
    /// Faults the device shows the guest driver (`--inject SPEC`, each;
    /// device_model::inject).
    pub inject: Vec<mana_device_api::inject::InjectSpec>,
}

/// What the device's stdout reader passes on.
enum Out {
    /// The readiness line.
    Ready(String),
    /// An answer.
    Response(Response),
}

/// The request side of the control channel; one request at a time.
struct Control {
    stdin: Option<ChildStdin>,
    answers: mpsc::Receiver<Out>,
    last_id: u64,
}

/// What the threads watching one device share.
struct Shared {
    pid: u32,
    control: Mutex<Control>,
    tail: Mutex<VecDeque<String>>,
    /// Set by [`DeviceProcess::stop`]: an exit from now on is expected.
    stopping: AtomicBool,
    /// Set by the watchdog before it kills a device that stopped answering.
    hung: Mutex<Option<String>>,
    abort: Option<BootAbort>,
}

/// Why a request got no answer.
enum NoAnswer {
    /// Not within the deadline.
    Timeout(Duration),
    /// The device's stdin or stdout is closed: it is gone.
    Gone,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn tail(&self) -> Vec<String> {
        lock(&self.tail).iter().cloned().collect()
    }

    /// Send `op` and wait up to `within` for its answer.
    fn request(&self, op: Op, within: Duration) -> Result<Reply, NoAnswer> {
        let deadline = Instant::now() + within;
        let mut control = lock(&self.control);
        control.last_id += 1;
        let id = control.last_id;
        let mut line = serde_json::to_string(&Request { id, op }).map_err(|_| NoAnswer::Gone)?;
        line.push('\n');
        let stdin = control.stdin.as_mut().ok_or(NoAnswer::Gone)?;
        stdin.write_all(line.as_bytes()).and_then(|()| stdin.flush()).map_err(|_| NoAnswer::Gone)?;
        loop {
            match control.answers.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Out::Response(r)) if r.id == id => return Ok(r.reply),
                // An answer to a request given up on earlier.
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => return Err(NoAnswer::Timeout(within)),
                Err(RecvTimeoutError::Disconnected) => return Err(NoAnswer::Gone),
            }
        }
    }

    fn control_error(&self, op: Op, e: NoAnswer) -> DeviceError {
        let problem = match e {
            NoAnswer::Timeout(t) => format!("no answer within {t:?}"),
            NoAnswer::Gone => "the device is gone".to_string(),
        };
        DeviceError::Control { pid: self.pid, op, problem }
    }
}

/// Takes the status of a [`DeviceProcess`] from any thread.
#[derive(Clone)]
pub struct DeviceStatusHandle(Arc<Shared>);

impl DeviceStatusHandle {
    /// The device's status now, typed; waits at most [`ANSWER_DEADLINE`].
    ///
    /// # Errors
    /// [`DeviceError::Control`]: no answer in time, the device is gone, or it
    /// refused the request.
    pub fn snapshot(&self) -> Result<DeviceStatus, DeviceError> {
        match self.0.request(Op::Status, ANSWER_DEADLINE) {
            Ok(Reply::Status(status)) => Ok(*status),
            Ok(other) => {
                Err(DeviceError::Control { pid: self.0.pid, op: Op::Status, problem: format!("answered {other:?}") })
            }
            Err(e) => Err(self.0.control_error(Op::Status, e)),
        }
    }

    /// Has the device raise `event` now (`Op::Raise`: one EQE on the HWC EQ,
    /// as `--inject EVENT@S` when due); whether it reached the driver (false:
    /// no HWC then, e.g. the driver unloaded). Waits at most [`ANSWER_DEADLINE`].
    ///
    /// # Errors
    /// [`DeviceError::Control`]: no answer in time, the device is gone, or it
    /// refused the request.
    pub fn raise(&self, event: DeviceEvent) -> Result<bool, DeviceError> {
        let op = Op::Raise(event);
        match self.0.request(op, ANSWER_DEADLINE) {
            Ok(Reply::Raised(reached)) => Ok(reached),
            Ok(other) => Err(DeviceError::Control { pid: self.0.pid, op, problem: format!("answered {other:?}") }),
            Err(e) => Err(self.0.control_error(op, e)),
        }
    }

    /// The device process's pid (its `/proc/<pid>` files: a soak samples them).
    pub fn pid(&self) -> u32 {
        self.0.pid
    }
}

/// A running `mana-device` serving one QEMU on a vfio-user socket, and the
/// threads that watch it. [`DeviceProcess::stop`] (or drop) stops and reaps it.
pub struct DeviceProcess {
    shared: Arc<Shared>,
    socket: PathBuf,
    config_file: PathBuf,
    /// Dropping it stops the watchdog.
    watchdog_stop: Option<mpsc::Sender<()>>,
    watchdog: Option<JoinHandle<()>>,
    /// The exit waiter sends the exit status (as text) once the child is reaped.
    exited: mpsc::Receiver<String>,
    /// What came on `exited`.
    exit_status: Option<String>,
    waiter: Option<JoinHandle<()>>,
}

/// `RUST_LOG` for the device: `MANARIG_LOG` when it is a valid filter
/// (the rig warns about a bad one), else warnings only, as for the rig.
fn device_log_filter() -> String {
    std::env::var("MANARIG_LOG")
        .ok()
        .filter(|spec| tracing_subscriber::EnvFilter::try_new(spec).is_ok())
        .unwrap_or_else(|| "warn".to_string())
}

/// The `mana-device` command line for `socket` and its configuration file,
/// with `options`' faults, injections, flow records and TAP (inherited by the
/// child alone), in its own process group, dying with the rig.
fn device_command(bin: &Path, socket: &Path, config_file: &Path, options: &DeviceOptions) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--socket")
        .arg(socket)
        .arg("--config")
        .arg(config_file)
        .args(["--control", mana_device_api::control::STDIO]);
    if let Some(fault) = options.fault {
        cmd.arg("--inject-fault").arg(fault.to_string());
    }
    for spec in &options.inject {
        cmd.arg("--inject").arg(spec.to_string());
    }
    if options.record_flows > 0 {
        cmd.arg("--record-flows").arg(options.record_flows.to_string());
    }
    if let Some(tap) = &options.tap {
        use std::os::unix::process::CommandExt;
        let raw = tap.as_raw_fd();
        cmd.arg("--tap-fd").arg(raw.to_string());
        // SAFETY: runs between fork and exec; fcntl is async-signal-safe
        // and changes only the child's copy of the descriptor.
        unsafe {
            cmd.pre_exec(move || {
                // Inherit this one descriptor (the rig holds it close-on-exec).
                if libc::fcntl(raw, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        };
    }
    cmd.env("RUST_LOG", device_log_filter()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    {
        use std::os::unix::process::CommandExt;
        // Own process group, as QEMU: a terminal's Ctrl-C reaches us, and we stop it.
        cmd.process_group(0);
    }
    crate::children::die_with_parent(&mut cmd);
    cmd
}

/// A thread reading the device's stdout: the readiness line, then one
/// control answer per line, each sent on `out_tx`.
fn read_answers(stdout: std::process::ChildStdout, pid: u32, out_tx: mpsc::Sender<Out>) {
    std::thread::spawn(move || {
        for (n, line) in BufReader::new(stdout).lines().enumerate() {
            let Ok(line) = line else { break };
            let out = if n == 0 {
                Out::Ready(line)
            } else {
                match serde_json::from_str(&line) {
                    Ok(r) => Out::Response(r),
                    Err(e) => {
                        tracing::warn!("{DEVICE_BIN} (pid {pid}): not a control answer on stdout ({e}): {line}");
                        continue;
                    }
                }
            };
            if out_tx.send(out).is_err() {
                break;
            }
        }
    });
}

/// A thread copying the device's stderr to ours and keeping its last lines
/// for errors; the returned channel closes when stderr ends.
fn keep_stderr_tail(stderr: Option<std::process::ChildStderr>, shared: &Arc<Shared>) -> mpsc::Receiver<()> {
    let (drained_tx, drained) = mpsc::channel::<()>();
    let shared = Arc::clone(shared);
    std::thread::spawn(move || {
        let _drained = drained_tx;
        let Some(stderr) = stderr else { return };
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            eprintln!("{line}");
            let mut tail = lock(&shared.tail);
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    });
    drained
}

/// The exit waiter: reaps `child`, reports an end the rig did not ask for
/// (with stderr's last lines, once `drained` says they are in), and sends the
/// exit status as text.
fn wait_exit(
    mut child: std::process::Child,
    shared: &Arc<Shared>,
    drained: mpsc::Receiver<()>,
) -> (JoinHandle<()>, mpsc::Receiver<String>) {
    let (exit_tx, exited) = mpsc::channel();
    let shared = Arc::clone(shared);
    let pid = shared.pid;
    let waiter = std::thread::spawn(move || {
        crate::children::wait_exit_unreaped(pid as i32);
        // Untrack, then reap: a tracked pid is never a recycled one.
        crate::children::untrack(pid as i32);
        let status = child.wait();
        // The last lines (a panic message) are in the pipe already.
        let _ = drained.recv_timeout(STDERR_DRAIN);
        let text = status.as_ref().map_or_else(|e| format!("wait: {e}"), ToString::to_string);
        if !shared.stopping.load(Ordering::SeqCst) {
            report_failure(&shared, status.ok());
        }
        let _ = exit_tx.send(text);
    });
    (waiter, exited)
}

impl DeviceProcess {
    /// Start `bin` serving `config` on `socket` (which must not exist; the
    /// configuration goes to `socket` with the extension `json`) and wait until
    /// it is ready: when this returns, QEMU can connect.
    ///
    /// # Errors
    /// [`DeviceError::Io`] (config file, spawn), [`DeviceError::NotReady`]
    /// (it exited, or printed no readiness line within [`READY_DEADLINE`];
    /// it is reaped either way).
    pub fn start(
        bin: &Path,
        socket: &Path,
        config: &DeviceConfig,
        options: DeviceOptions,
    ) -> Result<Self, DeviceError> {
        let config_file = socket.with_extension("json");
        let json = serde_json::to_vec(config)
            .map_err(|e| DeviceError::Io { what: "device configuration".into(), error: e.into() })?;
        std::fs::write(&config_file, json)
            .map_err(|error| DeviceError::Io { what: format!("writing {}", config_file.display()), error })?;
        let mut cmd = device_command(bin, socket, &config_file, &options);
        // Ctrl-C from now on kills the device too (QEMU is not started yet).
        crate::children::install_signal_thread();
        let spawned = Instant::now();
        let mut child = cmd.spawn().map_err(|error| {
            let _ = std::fs::remove_file(&config_file);
            DeviceError::Io { what: format!("starting {}", bin.display()), error }
        })?;
        let pid = child.id();
        crate::children::track(pid as i32);
        let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());

        let (out_tx, answers) = mpsc::channel();
        let shared = Arc::new(Shared {
            pid,
            control: Mutex::new(Control { stdin, answers, last_id: 0 }),
            tail: Mutex::new(VecDeque::new()),
            stopping: AtomicBool::new(false),
            hung: Mutex::new(None),
            abort: options.abort,
        });
        if let Some(stdout) = stdout {
            read_answers(stdout, pid, out_tx);
        }
        let drained = keep_stderr_tail(stderr, &shared);
        let (waiter, exited) = wait_exit(child, &shared, drained);
        let mut device = DeviceProcess {
            shared,
            socket: socket.to_path_buf(),
            config_file,
            watchdog_stop: None,
            watchdog: None,
            exited,
            exit_status: None,
            waiter: Some(waiter),
        };
        device.wait_ready(bin, socket)?;
        tracing::debug!("{DEVICE_BIN} (pid {pid}) ready in {:?}", spawned.elapsed());
        let (stop_tx, stop_rx) = mpsc::channel();
        let shared = Arc::clone(&device.shared);
        device.watchdog = Some(std::thread::spawn(move || watchdog(&shared, &stop_rx)));
        device.watchdog_stop = Some(stop_tx);
        Ok(device)
    }

    /// Wait for `ready <socket>`; on failure the device is stopped and reaped.
    fn wait_ready(&mut self, bin: &Path, socket: &Path) -> Result<(), DeviceError> {
        let expected = format!("ready {}", socket.display());
        let first = lock(&self.shared.control).answers.recv_timeout(READY_DEADLINE);
        let what = match first {
            Ok(Out::Ready(line)) if line == expected => return Ok(()),
            Ok(Out::Ready(line)) => format!("printed {line:?} instead of {expected:?}"),
            Ok(Out::Response(_)) => "answered a request nobody sent".to_string(),
            Err(RecvTimeoutError::Timeout) => format!("printed no readiness line within {READY_DEADLINE:?}"),
            Err(RecvTimeoutError::Disconnected) => String::new(),
        };
        // reap() marks the exit as expected: no abort for this one, the error says it.
        let status = self.reap();
        let what = if what.is_empty() { format!("ended ({status})") } else { what };
        Err(DeviceError::NotReady { bin: bin.to_path_buf(), what, tail: self.shared.tail() })
    }

    /// A handle that takes the device's status from another thread while it serves.
    pub fn status_handle(&self) -> DeviceStatusHandle {
        DeviceStatusHandle(Arc::clone(&self.shared))
    }

    /// The device's pid.
    pub fn pid(&self) -> u32 {
        self.shared.pid
    }

    /// Stop the device (QEMU should be gone by now): no more watchdog, end
    /// of file on its stdin, up to 5 s to exit, then SIGKILL; reaped, its
    /// socket and configuration file removed. A failure while it served was
    /// reported through [`DeviceOptions::abort`]; its exit now is logged only.
    pub fn stop(mut self) {
        let status = self.reap();
        tracing::debug!("{DEVICE_BIN} (pid {}) stopped: {status}", self.shared.pid);
    }

    /// The exit status (as text) once the device has exited and been reaped,
    /// waiting up to `within`; `None` while it runs.
    fn wait_exit(&mut self, within: Duration) -> Option<String> {
        if self.exit_status.is_none() {
            self.exit_status = self.exited.recv_timeout(within).ok();
        }
        self.exit_status.clone()
    }

    /// Stop watching, close stdin, wait for the exit (killing after
    /// [`STOP_DEADLINE`]) and reap; the exit status as text.
    fn reap(&mut self) -> String {
        self.shared.stopping.store(true, Ordering::SeqCst);
        drop(self.watchdog_stop.take());
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
        drop(lock(&self.shared.control).stdin.take());
        let status = match self.wait_exit(STOP_DEADLINE) {
            Some(status) => status,
            None => {
                crate::children::kill_if_tracked(self.shared.pid as i32);
                // SIGKILL ends it at once; the waiter then reaps it.
                match self.wait_exit(STOP_DEADLINE) {
                    Some(status) => format!("killed after {STOP_DEADLINE:?} ({status})"),
                    None => "not reaped (still running after SIGKILL)".to_string(),
                }
            }
        };
        // Joined only once it has reaped the child (else it still waits for the exit).
        if self.exit_status.is_some() {
            if let Some(w) = self.waiter.take() {
                let _ = w.join();
            }
        }
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(&self.config_file);
        status
    }
}

impl Drop for DeviceProcess {
    fn drop(&mut self) {
        // `stopping` is set by reap() alone: not yet stopped (a caller's panic, an early return).
        if !self.shared.stopping.load(Ordering::SeqCst) {
            self.reap();
        }
    }
}

/// The device ended (or was killed by the watchdog) while it should be
/// serving: end the boot with what happened and its last log lines.
fn report_failure(shared: &Shared, status: Option<ExitStatus>) {
    let hung = lock(&shared.hung).take();
    let what = match (hung, status) {
        (Some(hung), _) => hung,
        // Exit 0 mid-run: QEMU disconnected (the boot sees QEMU's own end).
        (None, Some(s)) if s.success() => return,
        (None, Some(s)) => format!("ended ({s})"),
        (None, None) => "ended (exit status unknown)".to_string(),
    };
    let error = DeviceError::Failed { pid: shared.pid, what, tail: shared.tail() };
    let reached = shared.abort.as_ref().is_some_and(|a| a.abort(error.to_string()));
    if !reached {
        // After the boot (QEMU was being stopped): not the run's failure.
        tracing::debug!("{error}");
    }
}

/// Ping every [`PING_INTERVAL`] until `stop` says so (or is dropped); kill
/// the device when a ping gets no answer within [`ANSWER_DEADLINE`] (the exit
/// waiter then reports it).
fn watchdog(shared: &Shared, stop: &mpsc::Receiver<()>) {
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(PING_INTERVAL) {
        match shared.request(Op::Ping, ANSWER_DEADLINE) {
            Ok(_) => {}
            Err(NoAnswer::Gone) => return,
            Err(NoAnswer::Timeout(t)) => {
                if shared.stopping.load(Ordering::SeqCst) {
                    return;
                }
                *lock(&shared.hung) = Some(format!("stopped answering (no answer to a ping within {t:?}; killed)"));
                crate::children::kill_if_tracked(shared.pid as i32);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for mana-device: a shell script that ignores its arguments.
    fn fake(dir: &Path, body: &str) -> PathBuf {
        manarig_test_support::shell_script(dir, "fake-device", body)
    }

    /// A fake device in `dir` that gets ready on `dir/nic.sock`, then runs
    /// `after_ready`; started with an abort to watch.
    fn serving(dir: &Path, after_ready: &str) -> (BootAbort, DeviceProcess) {
        let socket = dir.join("nic.sock");
        let bin = fake(dir, &format!("echo 'ready {}'; {after_ready}", socket.display()));
        let abort = BootAbort::default();
        let options = DeviceOptions { abort: Some(abort.clone()), ..DeviceOptions::default() };
        let device = DeviceProcess::start(&bin, &socket, &DeviceConfig::default(), options).expect("ready");
        (abort, device)
    }

    fn alive(pid: u32) -> bool {
        Path::new(&format!("/proc/{pid}")).exists()
    }

    #[test]
    fn the_binary_is_found_beside_the_executable_or_one_folder_up() {
        let dir = tempfile::tempdir().expect("tempdir");
        let deps = dir.path().join("deps");
        std::fs::create_dir(&deps).expect("deps");
        let e = find_beside(&deps.join("lifecycle-0123")).expect_err("nothing built");
        let DeviceError::NotFound { looked } = &e else { panic!("{e}") };
        assert!(
            looked.contains(&deps.display().to_string()) && looked.contains(&dir.path().display().to_string()),
            "{e}"
        );
        assert!(!e.to_string().contains('\n'), "one line: {e}");
        std::fs::write(dir.path().join(DEVICE_BIN), "").expect("bin");
        assert_eq!(find_beside(&deps.join("lifecycle-0123")).expect("one up"), dir.path().join(DEVICE_BIN));
        std::fs::write(deps.join(DEVICE_BIN), "").expect("bin");
        assert_eq!(find_beside(&deps.join("lifecycle-0123")).expect("beside"), deps.join(DEVICE_BIN));
    }

    #[test]
    fn a_device_that_exits_before_it_is_ready_is_an_error_with_its_stderr() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = fake(dir.path(), "echo 'mana-device: error: something is wrong' >&2; exit 1");
        let Err(e) = DeviceProcess::start(
            &bin,
            &dir.path().join("nic.sock"),
            &DeviceConfig::default(),
            DeviceOptions::default(),
        ) else {
            panic!("started");
        };
        let DeviceError::NotReady { what, tail, .. } = &e else { panic!("{e}") };
        assert!(what.contains("exit status: 1"), "{e}");
        assert!(tail.iter().any(|l| l.contains("something is wrong")), "{e}");
        assert!(!dir.path().join("nic.json").exists(), "config file removed");
    }

    #[test]
    fn a_device_that_dies_while_serving_aborts_the_boot_with_its_last_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Dies when asked anything (the watchdog's first ping).
        let (abort, mut device) = serving(dir.path(), "echo 'about to go' >&2; read line; kill -9 $$");
        let pid = device.pid();
        let status = device.wait_exit(Duration::from_secs(60)).expect("it dies at the first ping");
        assert!(status.contains("SIGKILL"), "{status}");
        // The waiter aborts before it passes the exit on.
        let got = abort.reason().expect("the boot was aborted");
        assert!(got.contains("SIGKILL") && got.contains("about to go") && got.contains(&format!("pid {pid}")), "{got}");
        device.stop();
        assert!(!alive(pid));
    }

    #[test]
    fn a_device_that_stops_answering_is_killed_and_aborts_the_boot() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Reads requests and never answers (stdout stays open).
        let (abort, mut device) = serving(dir.path(), "echo 'stuck' >&2; while read line; do :; done");
        let pid = device.pid();
        // The watchdog: first ping after 1 s, no answer within 5 s, kill.
        let status = device.wait_exit(Duration::from_secs(60)).expect("killed by the watchdog");
        assert!(status.contains("SIGKILL"), "{status}");
        let got = abort.reason().expect("the boot was aborted");
        assert!(got.contains("stopped answering") && got.contains("stuck"), "{got}");
        // A status request now fails at once: the device is gone.
        let e = device.status_handle().snapshot().expect_err("gone");
        assert!(matches!(&e, DeviceError::Control { problem, .. } if problem.contains("gone")), "{e}");
        device.stop();
        assert!(!alive(pid));
    }
}
