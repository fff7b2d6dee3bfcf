//! Boot a `MachineSpec` in QEMU, read the serial console live, and return the
//! guest's report. QEMU is always reaped: on success, error, deadline, guest
//! panic, panic of the caller (drop guard), SIGINT/SIGTERM, and a
//! [`BootAbort`] from the caller (the emulated NIC's process failed).

use super::speed::{self, Speedups, SPEED_CMDLINE};
use super::spec::{MachineSpec, SpecError};
use crate::accel::{self, Accel, AccelError};
use crate::guest_report::{self, GuestReport, ReportError};
use crate::initramfs::{self, Compression, InitramfsError, InitramfsSpec};
use crate::provision::{KernelInstall, QemuInstall};
use std::collections::VecDeque;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a KVM guest may stay silent on the console before the boot is
/// given up (see [`LaunchError::KvmSilent`]).
const KVM_SILENCE_LIMIT: Duration = Duration::from_secs(30);

/// Console lines kept for error messages.
const TAIL_LINES: usize = 40;

/// Kernel command line, each item for speed or for failing fast:
/// - `console=ttyS0`: the only console is the captured serial port;
/// - `quiet`: fewer console lines (serial output is emulated byte by byte);
///   dmesg keeps everything for the report;
/// - `panic=-1`: reboot at once on panic, which `-no-reboot` turns into a QEMU exit;
/// - `oops=panic`: an oops in the driver fails the run fast with its trace;
/// - `i8042.noaux i8042.nokbd`: skip probing the legacy keyboard controller;
/// - `tsc=reliable`: no clocksource watchdog switching under TCG's jittery TSC.
pub const BASE_CMDLINE: &str = "console=ttyS0 quiet panic=-1 oops=panic i8042.noaux i8042.nokbd tsc=reliable";

/// A boot to run.
#[derive(Debug, Clone)]
pub struct BootRequest<'a> {
    /// The machine.
    pub spec: &'a MachineSpec,
    /// The guest kernel.
    pub kernel: &'a KernelInstall,
    /// busybox for the initramfs.
    pub busybox: &'a Path,
    /// Load the kernel's modules (mana last, in the background) in the guest.
    pub load_mana: bool,
    /// Extra `-device` values (JSON or key=value), e.g. the vfio-user-pci NIC
    /// with `"bus":"rp0"` (the device process is the caller's).
    pub extra_devices: Vec<String>,
    /// Extra kernel command-line items.
    pub extra_cmdline: Vec<String>,
    /// Wall-clock limit for the whole boot, host side.
    pub deadline: Duration,
    /// Guest-side limit for waiting on the driver, in guest seconds after `/init` starts.
    pub guest_deadline_s: u32,
    /// Also write the console to this file as it arrives.
    pub console_log: Option<PathBuf>,
    /// Initramfs compression.
    pub compression: Compression,
    /// QEMU `-cpu` value.
    pub cpu_model: String,
    /// More files for the initramfs (e.g. [`crate::provision::Provisioned::ethtool`]).
    pub extra_files: Vec<crate::provision::tools::GuestFile>,
    /// Called with the marker line when the console shows the start of a
    /// stage or of the report (`MANARIG-STAGE-BEGIN …`, `MANARIG-REPORT-BEGIN …`):
    /// the guest is quiet from there to the end marker, so the caller can take
    /// the device's state that goes with it.
    pub on_marker: Option<MarkerHook>,
    /// Boot speed-ups (default: all; see [`super::speed`]).
    pub speedups: Speedups,
    /// Lets another thread end the boot (see [`BootAbort`]).
    pub abort: Option<BootAbort>,
}

/// Ends a [`boot`] from another thread, e.g. when a process the guest
/// depends on (the emulated NIC, harness/src/rig/device.rs) fails: QEMU is
/// killed and reaped at once and the boot returns [`LaunchError::Aborted`]
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
    fn attach(&self, boot: mpsc::Sender<Msg>) {
        let mut state = self.state();
        if state.reason.is_some() {
            let _ = boot.send(Msg::Abort);
        }
        state.boot = Some(boot);
    }

    /// The boot is over (QEMU is being stopped or has exited): later aborts
    /// are not its cause. The reason given before, if any.
    fn detach(&self) -> Option<String> {
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

/// A callback for [`BootRequest::on_marker`].
#[derive(Clone)]
pub struct MarkerHook(pub std::sync::Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for MarkerHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MarkerHook")
    }
}

impl<'a> BootRequest<'a> {
    /// A request with the defaults: no mana load, no extra devices, a 600 s
    /// host deadline, 60 s guest deadline, uncompressed initramfs.
    pub fn new(spec: &'a MachineSpec, kernel: &'a KernelInstall, busybox: &'a Path) -> Self {
        BootRequest {
            spec,
            kernel,
            busybox,
            load_mana: false,
            extra_devices: Vec::new(),
            extra_cmdline: Vec::new(),
            deadline: Duration::from_secs(600),
            guest_deadline_s: 60,
            console_log: None,
            compression: Compression::None,
            cpu_model: super::spec::DEFAULT_CPU.to_string(),
            extra_files: Vec::new(),
            on_marker: None,
            speedups: Speedups::default(),
            abort: None,
        }
    }
}

/// A finished boot.
#[derive(Debug, Clone)]
pub struct BootOutcome {
    /// The parsed report.
    pub report: GuestReport,
    /// The whole console.
    pub console: String,
    /// The accelerator used.
    pub accel: Accel,
    /// Host wall time from QEMU start to the report's end marker.
    pub to_report: Duration,
    /// The QEMU arguments (after the binary).
    pub qemu_args: Vec<String>,
    /// The speed-ups this boot really used (PVH falls back to the bzImage
    /// when the kernel has no PVH entry).
    pub speedups: Speedups,
}

/// Errors of a boot.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// Bad machine.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// Accelerator unavailable.
    #[error(transparent)]
    Accel(#[from] AccelError),
    /// Initramfs could not be built.
    #[error(transparent)]
    Initramfs(#[from] InitramfsError),
    /// Filesystem or process error on the host.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The guest kernel panicked.
    #[error("guest kernel panicked; last console lines:\n{tail}")]
    GuestPanic {
        /// Last console lines.
        tail: String,
    },
    /// The deadline passed before the report ended.
    #[error("no guest report within {secs} s (QEMU killed); last console lines:\n{tail}")]
    Deadline {
        /// The deadline.
        secs: u64,
        /// Last console lines.
        tail: String,
    },
    /// Under KVM the guest printed nothing at all in time: on hosts where
    /// /dev/kvm opens and runs a test vCPU but real guests hang (the build
    /// machines), this fails fast instead of waiting for the whole deadline.
    #[error("the KVM guest printed nothing in {secs} s (QEMU killed): KVM is not usable for guests here; use --accel tcg")]
    KvmSilent {
        /// The limit.
        secs: u64,
    },
    /// QEMU exited before the report ended.
    #[error("QEMU exited ({status}) before the guest report ended\nQEMU stderr:\n{stderr}\nlast console lines:\n{tail}")]
    Exited {
        /// Exit status.
        status: String,
        /// QEMU's stderr.
        stderr: String,
        /// Last console lines.
        tail: String,
    },
    /// The report was there but does not parse.
    #[error("guest report: {source}; last console lines:\n{tail}")]
    Report {
        /// Parse error.
        #[source]
        source: ReportError,
        /// Last console lines.
        tail: String,
    },
    /// The guest is too large for TCG on this host (see [`accel::check_tcg_size`]).
    #[error("machine: {0}")]
    TooLargeForTcg(String),
    /// SIGINT or SIGTERM arrived; QEMU was killed and reaped.
    #[error("interrupted by a signal; QEMU was stopped")]
    Interrupted,
    /// The caller ended the boot through [`BootRequest::abort`]; QEMU was killed and reaped.
    #[error("{reason}\nQEMU was stopped; last console lines:\n{tail}")]
    Aborted {
        /// Why, as the caller said.
        reason: String,
        /// Last console lines.
        tail: String,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> LaunchError {
    let what = what.into();
    move |source| LaunchError::Io { what, source }
}

/// Owns the QEMU child: a thread waits for its exit (the event), and
/// [`Reaper::finish`] kills it if it does not exit in time; kill + reap on drop.
struct Reaper {
    pid: i32,
    exited: mpsc::Receiver<String>,
    status: Option<String>,
}

impl Reaper {
    fn new(mut child: Child) -> Reaper {
        let pid = child.id() as i32;
        crate::children::track(pid);
        let (tx, exited) = mpsc::channel();
        std::thread::spawn(move || {
            crate::children::wait_exit_unreaped(pid);
            // Untrack, then reap: a tracked pid is never a recycled one.
            crate::children::untrack(pid);
            let st = child.wait().map(|s| s.to_string()).unwrap_or_else(|e| format!("wait: {e}"));
            let _ = tx.send(st);
        });
        Reaper { pid, exited, status: None }
    }

    /// Wait up to `grace` for QEMU to exit, then kill it; returns once it is
    /// reaped, with the exit status as text.
    fn finish(&mut self, grace: Duration) -> String {
        if let Some(s) = &self.status {
            return s.clone();
        }
        let status = match self.exited.recv_timeout(grace) {
            Ok(st) => st,
            Err(_) => {
                crate::children::kill_if_tracked(self.pid);
                let st = self.exited.recv().unwrap_or_else(|_| "lost".into());
                format!("killed ({st})")
            }
        };
        self.status = Some(status.clone());
        status
    }
}


impl Drop for Reaper {
    fn drop(&mut self) {
        self.finish(Duration::ZERO);
    }
}

enum Msg {
    Line(String),
    Eof,
    /// [`BootAbort::abort`] was called.
    Abort,
}

fn tail(lines: &VecDeque<String>) -> String {
    if lines.iter().all(|l| l.trim().is_empty()) {
        return "(none: the guest printed nothing on its console)".to_string();
    }
    lines.iter().cloned().collect::<Vec<_>>().join("\n")
}

/// Boot `req.spec` with `req.kernel` and return the guest's report.
///
/// # Errors
/// [`LaunchError`]: invalid spec, KVM forced but unusable, QEMU failing to
/// start or exiting early (with its stderr), guest panic, deadline, a report
/// that does not parse (each with the last console lines), or a signal.
pub fn boot(qemu: &QemuInstall, req: &BootRequest<'_>) -> Result<BootOutcome, LaunchError> {
    // A Ctrl-C or SIGTERM during an earlier boot of this process stops the
    // whole command (compare, bench, test loops), not only that boot.
    if crate::children::interrupted() {
        return Err(LaunchError::Interrupted);
    }
    req.spec.validate()?;
    let accel = accel::choose(req.spec.accel, req.spec.vcpus())?;
    accel::check_tcg_size(accel, req.spec.vcpus(), accel::host_cores(), req.speedups.cmdline)
        .map_err(LaunchError::TooLargeForTcg)?;
    crate::children::install_signal_thread();

    let tmp = crate::scratch::ScratchDir::new("manarig-boot-").map_err(io("temp dir"))?;
    let initrd = tmp.path().join("initramfs.cpio");
    initramfs::write(
        &InitramfsSpec {
            busybox: req.busybox,
            modules: &req.kernel.modules,
            compression: req.compression,
            extra_files: &req.extra_files,
        },
        &initrd,
    )?;

    let mut cmdline = format!("{BASE_CMDLINE} manarig.deadline={}", req.guest_deadline_s);
    if req.load_mana {
        cmdline.push_str(" manarig.load=mana");
    }
    let mut used = req.speedups;
    if used.cmdline {
        cmdline.push(' ');
        cmdline.push_str(SPEED_CMDLINE);
    }
    let kernel_image = if used.pvh {
        match speed::pvh_image(&req.kernel.vmlinuz) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("PVH boot not possible, booting the bzImage: {e}");
                used.pvh = false;
                req.kernel.vmlinuz.clone()
            }
        }
    } else {
        req.kernel.vmlinuz.clone()
    };
    for c in &req.extra_cmdline {
        cmdline.push(' ');
        cmdline.push_str(c);
    }
    let mut args = req.spec.qemu_args(accel, &used.cpu_model(&req.cpu_model));
    for d in &req.extra_devices {
        args.push("-device".into());
        args.push(d.clone());
    }
    args.extend(
        [
            "-kernel",
            &kernel_image.to_string_lossy(),
            "-initrd",
            &initrd.to_string_lossy(),
            "-append",
            &cmdline,
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-monitor",
            "none",
            "-chardev",
            "stdio,id=con0,signal=off",
            "-serial",
            "chardev:con0",
            "-no-reboot",
        ]
        .iter()
        .map(|s| s.to_string()),
    );

    let mut log = match &req.console_log {
        Some(p) => Some(std::fs::File::create(p).map_err(io(format!("console log {}", p.display())))?),
        None => None,
    };
    let mut cmd = qemu.command();
    cmd.args(&args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    {
        use std::os::unix::process::CommandExt;
        // Own process group: a terminal's Ctrl-C reaches us, and we stop QEMU.
        cmd.process_group(0);
    }
    crate::children::die_with_parent(&mut cmd);
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(io("start QEMU"))?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let mut reaper = Reaper::new(child);

    let (tx, rx) = mpsc::channel();
    if let Some(abort) = &req.abort {
        abort.attach(tx.clone());
    }
    let on_marker = req.on_marker.clone();
    let reader = std::thread::spawn(move || {
        if let Some(out) = stdout {
            let mut r = std::io::BufReader::new(out);
            let mut buf = Vec::new();
            while matches!(r.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
                let line = String::from_utf8_lossy(&buf).trim_end_matches(['\n', '\r']).to_string();
                buf.clear();
                // Called here, as soon as the line is read, so that the caller's
                // snapshot is as close to the guest's moment as the console allows.
                if let Some(hook) = &on_marker {
                    if line.starts_with(guest_report::BEGIN) || line.starts_with(guest_report::STAGE_BEGIN) {
                        (hook.0)(line.trim_end());
                    }
                }
                if tx.send(Msg::Line(line)).is_err() {
                    break;
                }
            }
        }
        let _ = tx.send(Msg::Eof);
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_string(&mut s);
        }
        s
    });

    let deadline = start + req.deadline;
    let mut console = String::new();
    let mut last: VecDeque<String> = VecDeque::new();
    let mut to_report = None;
    let mut panic_until: Option<Instant> = None;
    let mut timed_out = false;
    let mut kvm_silent = false;
    let mut eof = false;
    let mut aborted = false;
    // A working KVM guest prints its first console line within a second or two.
    let silence_limit = (accel == Accel::Kvm).then(|| start + KVM_SILENCE_LIMIT);
    loop {
        let now = Instant::now();
        let mut until = panic_until.map_or(deadline, |p| p.min(deadline));
        if let Some(limit) = silence_limit.filter(|_| console.is_empty()) {
            if now >= limit {
                kvm_silent = true;
                break;
            }
            until = until.min(limit);
        }
        if now >= until {
            timed_out = panic_until.is_none();
            break;
        }
        match rx.recv_timeout(until - now) {
            Ok(Msg::Line(line)) => {
                if let Some(f) = log.as_mut() {
                    let _ = writeln!(f, "{line}");
                }
                console.push_str(&line);
                console.push('\n');
                if last.len() == TAIL_LINES {
                    last.pop_front();
                }
                let end = line.trim_end() == guest_report::END;
                let panicked = line.contains("Kernel panic - not syncing");
                last.push_back(line);
                if end {
                    to_report = Some(start.elapsed());
                    break;
                }
                if panicked && panic_until.is_none() {
                    // Collect the rest of the panic message (QEMU exits at once
                    // with panic=-1 and -no-reboot), at most 2 s more.
                    panic_until = Some(Instant::now() + Duration::from_secs(2));
                }
            }
            Ok(Msg::Eof) | Err(RecvTimeoutError::Disconnected) => {
                eof = true;
                break;
            }
            Ok(Msg::Abort) => {
                aborted = true;
                break;
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
    // After the report nothing the guest does is read: QEMU is stopped at once
    // rather than waiting for the guest's `poweroff -f`, which would first shut
    // the driver down (tens of ms under TCG). After a panic QEMU exits by itself
    // (panic=-1, -no-reboot): give it a moment, then kill. QEMU closed its
    // console (eof): it is exiting (or crashed); collect its status.
    let qemu_exiting = to_report.is_none() && !aborted && (panic_until.is_some() || eof);
    let grace = if qemu_exiting { Duration::from_secs(2) } else { Duration::ZERO };
    // An abort counts until QEMU is stopped here, or, when QEMU exits by itself
    // (perhaps because the device died), until it has: a device that fails
    // because we killed QEMU is not the boot's cause.
    let mut abort_reason = None;
    if !qemu_exiting {
        abort_reason = req.abort.as_ref().and_then(BootAbort::detach);
    }
    let status = reaper.finish(grace);
    if qemu_exiting {
        abort_reason = req.abort.as_ref().and_then(BootAbort::detach);
    }
    let _ = reader.join();
    let mut stderr = err_reader.join().unwrap_or_default();
    if stderr.trim().is_empty() {
        stderr = "(empty)".to_string();
    }
    if crate::children::interrupted() {
        return Err(LaunchError::Interrupted);
    }
    if let Some(reason) = abort_reason.filter(|_| to_report.is_none()) {
        return Err(LaunchError::Aborted { reason, tail: tail(&last) });
    }
    if panic_until.is_some() || console.contains("Kernel panic - not syncing") {
        return Err(LaunchError::GuestPanic { tail: tail(&last) });
    }
    if kvm_silent {
        return Err(LaunchError::KvmSilent { secs: KVM_SILENCE_LIMIT.as_secs() });
    }
    if timed_out {
        return Err(LaunchError::Deadline { secs: req.deadline.as_secs(), tail: tail(&last) });
    }
    let Some(to_report) = to_report else {
        return Err(LaunchError::Exited { status, stderr, tail: tail(&last) });
    };
    let report = guest_report::parse(&console).map_err(|source| LaunchError::Report { source, tail: tail(&last) })?;
    Ok(BootOutcome { report, console, accel, to_report, qemu_args: args, speedups: used })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provision::{KoCompression, QemuSource};
    use std::os::unix::fs::PermissionsExt;

    /// A stand-in for qemu-system-x86_64: a shell script that ignores its
    /// arguments and behaves as `body` says.
    fn fake(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        p
    }

    fn run_fake(body: &str, deadline: Duration) -> Result<BootOutcome, LaunchError> {
        run_fake_with(body, deadline, None)
    }

    fn run_fake_with(body: &str, deadline: Duration, on_marker: Option<MarkerHook>) -> Result<BootOutcome, LaunchError> {
        run_fake_full(body, deadline, on_marker, None)
    }

    fn run_fake_full(
        body: &str,
        deadline: Duration,
        on_marker: Option<MarkerHook>,
        abort: Option<BootAbort>,
    ) -> Result<BootOutcome, LaunchError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let qemu_bin = fake(dir.path(), "qemu", body);
        let busybox = fake(dir.path(), "busybox", "echo sh");
        let kernel = KernelInstall {
            id: "t".into(),
            release: "t".into(),
            vmlinuz: dir.path().join("vmlinuz"),
            modules: vec![],
            compression: KoCompression::None,
            packages: vec![],
        };
        let qemu = QemuInstall { source: QemuSource::System { binary: qemu_bin }, version_line: String::new(), version: (11, 1, 0) };
        let spec = super::super::machines::seed_002(256);
        let mut req = BootRequest::new(&spec, &kernel, &busybox);
        req.deadline = deadline;
        req.on_marker = on_marker;
        req.abort = abort;
        boot(&qemu, &req)
    }

    #[test]
    fn the_marker_hook_sees_each_stage_and_the_report_begin_once() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let hook = {
            let seen = std::sync::Arc::clone(&seen);
            MarkerHook(std::sync::Arc::new(move |line: &str| seen.lock().expect("lock").push(line.to_owned())))
        };
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/console-seed002-6.1-reprobe.txt");
        let out = run_fake_with(&format!("cat '{fixture}'"), Duration::from_secs(60), Some(hook)).expect("report");
        assert_eq!(out.report.rmmod_status, Some(0));
        assert_eq!(*seen.lock().expect("lock"), ["MANARIG-STAGE-BEGIN first-probe", "MANARIG-REPORT-BEGIN 1"]);
    }

    #[test]
    fn an_abort_mid_boot_stops_qemu_at_once_with_the_reason() {
        // The stage marker's hook stands for the device's supervisor thread.
        let abort = BootAbort::default();
        let hook = {
            let abort = abort.clone();
            MarkerHook(std::sync::Arc::new(move |_: &str| assert!(abort.abort("the emulated NIC died".into()))))
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let pid_file = dir.path().join("qemu.pid");
        let body = format!("echo $$ > '{}'; echo booting; echo 'MANARIG-STAGE-BEGIN first-probe'; exec sleep 600", pid_file.display());
        let start = Instant::now();
        let err = run_fake_full(&body, Duration::from_secs(300), Some(hook), Some(abort)).expect_err("aborted");
        assert!(start.elapsed() < Duration::from_secs(60), "took {:?}", start.elapsed());
        match err {
            LaunchError::Aborted { reason, tail } => {
                assert_eq!(reason, "the emulated NIC died");
                assert!(tail.contains("booting"), "{tail}");
            }
            other => panic!("expected Aborted, got {other}"),
        }
        let pid = std::fs::read_to_string(&pid_file).expect("pid").trim().to_string();
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "QEMU {pid} still there");
    }

    #[test]
    fn an_abort_before_the_boot_ends_it_as_soon_as_qemu_runs() {
        let abort = BootAbort::default();
        abort.abort("gone before the boot".into());
        abort.abort("a second reason is dropped".into());
        let err = run_fake_full("echo booting; exec sleep 600", Duration::from_secs(300), None, Some(abort)).expect_err("aborted");
        assert!(matches!(&err, LaunchError::Aborted { reason, .. } if reason == "gone before the boot"), "{err}");
    }

    #[test]
    fn a_report_on_the_console_is_returned() {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/console-seed002-6.12.txt");
        let out = run_fake(&format!("cat '{fixture}'"), Duration::from_secs(60)).expect("report");
        assert_eq!(out.report.kernel, "6.12.117+deb13-cloud-amd64");
        assert!(out.qemu_args.iter().any(|a| a == "-no-reboot"));
    }

    #[test]
    fn a_guest_panic_fails_fast_with_the_last_console_lines() {
        let err = run_fake(
            "echo 'Kernel panic - not syncing: VFS: Unable to mount root fs'; echo '---[ end Kernel panic'; exec sleep 600",
            Duration::from_secs(300),
        )
        .expect_err("panic");
        match err {
            LaunchError::GuestPanic { tail } => assert!(tail.contains("Unable to mount root fs"), "{tail}"),
            other => panic!("expected GuestPanic, got {other}"),
        }
    }

    #[test]
    fn a_silent_guest_hits_the_deadline_and_qemu_is_killed() {
        let err = run_fake("echo booting; exec sleep 600", Duration::from_secs(1)).expect_err("deadline");
        match err {
            LaunchError::Deadline { secs, tail } => {
                assert_eq!(secs, 1);
                assert!(tail.contains("booting"));
            }
            other => panic!("expected Deadline, got {other}"),
        }
    }

    #[test]
    fn qemu_exiting_early_reports_its_stderr() {
        let err = run_fake("echo 'qemu-system-x86_64: -device foo: not found' >&2; exit 1", Duration::from_secs(60))
            .expect_err("exit");
        match err {
            LaunchError::Exited { stderr, .. } => assert!(stderr.contains("-device foo")),
            other => panic!("expected Exited, got {other}"),
        }
    }
}
