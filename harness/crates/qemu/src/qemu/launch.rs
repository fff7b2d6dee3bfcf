//! Boot a `MachineSpec` in QEMU, read the serial console live until the guest
//! agent's report ends ([`crate::guest_protocol::markers`]), and return the
//! report, parsed once by [`crate::guest_protocol::parse()`]. QEMU is always
//! reaped: on success, error, deadline, guest panic, panic of the caller (drop
//! guard), SIGINT/SIGTERM, and a [`BootAbort`] from the caller (the emulated
//! NIC's process failed).

use super::abort::BootAbort;
use super::go_ahead::GoAheadPort;
use super::report_port::ReportPort;
use super::spec::{MachineSpec, SpecError};
use super::speed::{self, Speedups, SPEED_CMDLINE};
use super::watch::{self, MarkerHook, Msg, Source, Step, Watch};
use crate::accel::{self, Accel, AccelError};
use crate::guest_protocol::{self, options, AgentOptions, GuestReport, ReportChannel, ReportError, Stage};
use crate::initramfs::{self, Compression, InitramfsError, InitramfsSpec};
use crate::provision::{KernelInstall, QemuInstall};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a KVM guest may stay silent on the console before the boot is
/// given up (see [`LaunchError::KvmSilent`]).
const KVM_SILENCE_LIMIT: Duration = Duration::from_secs(30);

/// Kernel command line, each item for speed or for failing fast:
/// - `console=ttyS0`: the only console is the captured serial port;
/// - `quiet`: fewer console lines (serial output is emulated byte by byte);
///   dmesg keeps everything for the report;
/// - `panic=-1`: reboot at once on panic, which `-no-reboot` turns into a QEMU exit;
/// - `oops=panic`: an oops in the driver fails the run fast with its trace;
/// - `i8042.noaux i8042.nokbd`: skip probing the legacy keyboard controller;
/// - `tsc=reliable`: no clocksource watchdog switching under TCG's jittery TSC.
pub const BASE_CMDLINE: &str = "console=ttyS0 quiet panic=-1 oops=panic i8042.noaux i8042.nokbd tsc=reliable";

/// [`BASE_CMDLINE`] of arm64 guests: the console on the `virt` machine's
/// first PL011 UART (`ttyAMA0`), the same failing-fast items, none of x86's
/// (no i8042, no TSC), and no RCU CPU stall warnings
/// (`rcupdate.rcu_cpu_stall_suppress=1`): on a starved host a TCG guest's
/// clock runs on while its vCPUs do not, RCU reports a stall that is the
/// host's, and the report asks every CPU for its backtrace by an IPI (arm64
/// has no NMI without pseudo-NMI) while it holds the rcu_node lock that
/// those CPUs spin on with interrupts off. It waits for each in 1-ms
/// `mdelay()` steps, which TCG stretches to minutes: twice in 96 runs beside
/// nine busy loops the guest went nowhere until the rig's deadline
/// (docs/rig-pitfalls.md, *An arm64 guest that stops under a starved host*).
/// `--cmdline rcupdate.rcu_cpu_stall_suppress=0` brings the warnings back.
pub const BASE_CMDLINE_ARM64: &str = "console=ttyAMA0 quiet panic=-1 oops=panic rcupdate.rcu_cpu_stall_suppress=1";

/// A boot to run.
#[derive(Debug, Clone)]
pub struct BootRequest<'a> {
    /// The machine.
    pub spec: &'a MachineSpec,
    /// The guest kernel.
    pub kernel: &'a KernelInstall,
    /// busybox for the initramfs.
    pub busybox: &'a Path,
    /// What the guest agent does (the `manarig.*` command-line items): load
    /// mana, its deadline, channels, re-probe, where it reports. The speed-ups
    /// may pin it ([`Speedups::agent`]); with [`ReportChannel::Ttys1`] the
    /// launcher gives QEMU the second serial port ([`super::report_port`]).
    pub agent: AgentOptions,
    /// Extra `-device` values (JSON or key=value), e.g. the vfio-user-pci NIC
    /// with `"bus":"rp0"` (the device process is the caller's).
    pub extra_devices: Vec<String>,
    /// Extra kernel command-line items; not the agent's (`manarig.*`: those come
    /// from [`BootRequest::agent`]).
    pub extra_cmdline: Vec<String>,
    /// Wall-clock limit for the whole boot, host side.
    pub deadline: Duration,
    /// Also write the console, and the report channel's lines, to this file as they arrive.
    pub console_log: Option<PathBuf>,
    /// QEMU's human monitor on this unix socket ([`super::monitor`]), for
    /// looking into a guest that stops; removed once QEMU is reaped.
    pub monitor: Option<PathBuf>,
    /// Initramfs compression.
    pub compression: Compression,
    /// QEMU `-cpu` value.
    pub cpu_model: String,
    /// More files for the initramfs (e.g. [`crate::provision::Provisioned::ethtool`]).
    pub extra_files: Vec<crate::provision::tools::GuestFile>,
    /// QEMU's own NICs on TAPs the caller opened (the selftests' remote end).
    pub tap_nics: Vec<super::tap_nic::TapNic>,
    /// Symbolic links for the initramfs (the selftest tools' packages' links).
    pub extra_links: Vec<crate::provision::tools::GuestLink>,
    /// Called with the marker line when the console shows the start of a
    /// stage or of the report (`MANARIG-STAGE-BEGIN …`, `MANARIG-REPORT-BEGIN …`):
    /// the guest is quiet from there to the end marker, so the caller can take
    /// the device's state that goes with it; and with a soak's marks
    /// (`MANARIG-SOAK <step> <minute>`), which the caller acts on. After a
    /// mark the agent waits at (`MANARIG-UNLOAD`) the launcher answers with
    /// its go-ahead once the hook has returned, hook or not ([`super::go_ahead`]).
    pub on_marker: Option<MarkerHook>,
    /// Boot speed-ups (default: all; see [`super::speed`]).
    pub speedups: Speedups,
    /// Lets another thread end the boot (see [`BootAbort`]).
    pub abort: Option<BootAbort>,
    /// Firmware QEMU boots the kernel through (`-bios`): arm64 guests' UEFI
    /// ([`crate::provision::Provisioned::firmware`]); `None`: QEMU's default.
    pub firmware: Option<PathBuf>,
}

impl<'a> BootRequest<'a> {
    /// A request with the defaults: the agent's defaults (no mana load, 60 s guest
    /// deadline) but its report on its own channel (ttyS1: no kernel message
    /// interleaves there, and it is no slower: docs/boot-speed.md), no extra
    /// devices, a 600 s host deadline, uncompressed initramfs.
    pub fn new(spec: &'a MachineSpec, kernel: &'a KernelInstall, busybox: &'a Path) -> Self {
        BootRequest {
            spec,
            kernel,
            busybox,
            agent: AgentOptions { report: ReportChannel::Ttys1, ..AgentOptions::default() },
            extra_devices: Vec::new(),
            extra_cmdline: Vec::new(),
            deadline: Duration::from_secs(600),
            console_log: None,
            monitor: None,
            compression: Compression::None,
            cpu_model: spec.default_cpu().to_string(),
            extra_files: Vec::new(),
            extra_links: Vec::new(),
            tap_nics: Vec::new(),
            on_marker: None,
            speedups: Speedups::default(),
            abort: None,
            firmware: None,
        }
    }
}

/// A finished boot.
#[derive(Debug, Clone)]
pub struct BootOutcome {
    /// The parsed report.
    pub report: GuestReport,
    /// The stages the agent printed before the report, in order (`first-probe`
    /// with [`AgentOptions::reprobe`]).
    pub stages: Vec<Stage>,
    /// The whole console: kernel messages and the agent's notes (its stages and
    /// report only when it printed them there, see [`ReportChannel`]).
    pub console: String,
    /// The accelerator used.
    pub accel: Accel,
    /// Host wall time of the preparation before QEMU starts: the machine and
    /// accelerator checks, the initramfs written, QEMU's arguments.
    pub prepare: Duration,
    /// Host wall time of writing the initramfs (part of `prepare`).
    pub initramfs: Duration,
    /// Host wall time from QEMU start to the report's end marker.
    pub to_report: Duration,
    /// Host wall time from QEMU start to the first console line and to the
    /// report's begin marker, as the launcher read them (parts of `to_report`).
    pub moments: BootMoments,
    /// Host wall time from the report's end marker until QEMU is reaped and
    /// its console and report channel are read to their end.
    pub stop: Duration,
    /// The QEMU arguments (after the binary).
    pub qemu_args: Vec<String>,
    /// The speed-ups this boot really used (PVH falls back to the bzImage
    /// when the kernel has no PVH entry).
    pub speedups: Speedups,
}

/// When a boot's marking lines arrived, host wall time from QEMU's start
/// ([`watch::Moments`]); `None` when the line never came.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BootMoments {
    /// The first console line: the guest kernel's first message through
    /// `quiet` (on the minimal kernels with the speed-ups, its early notice
    /// that `mitigations=` is ignored; else whatever warning comes first).
    pub first_output: Option<Duration>,
    /// The report's begin marker: the agent's work before it is done, its
    /// report (gathered and written while it crosses the UART) follows.
    pub report_begin: Option<Duration>,
}

impl BootMoments {
    /// The moments of `seen` counted from `start` (QEMU's spawn).
    fn since(start: Instant, seen: watch::Moments) -> BootMoments {
        let since = |t: Option<Instant>| t.map(|t| t.saturating_duration_since(start));
        BootMoments { first_output: since(seen.first_output), report_begin: since(seen.report_begin) }
    }
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
    /// The monitor socket's path cannot be used.
    #[error(transparent)]
    Monitor(#[from] super::monitor::MonitorError),
    /// Filesystem or process error on the host.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        error: std::io::Error,
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
    #[error(
        "the KVM guest printed nothing in {secs} s (QEMU killed): KVM is not usable for guests here; use --accel tcg"
    )]
    KvmSilent {
        /// The limit.
        secs: u64,
    },
    /// QEMU exited before the report ended.
    #[error(
        "QEMU exited ({status}) before the guest report ended\nQEMU stderr:\n{stderr}\nlast console lines:\n{tail}"
    )]
    Exited {
        /// Exit status.
        status: String,
        /// QEMU's stderr.
        stderr: String,
        /// Last console lines.
        tail: String,
    },
    /// The report was there but does not parse.
    #[error("guest report: {error}; last console lines:\n{tail}")]
    Report {
        /// Parse error.
        error: ReportError,
        /// Last console lines.
        tail: String,
    },
    /// An extra kernel command-line item is one of the guest agent's.
    #[error("kernel command-line item {0:?}: the guest agent's items are set through BootRequest::agent")]
    AgentItem(String),
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
    move |source| LaunchError::Io { what, error: source }
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

/// Boot `req.spec` with `req.kernel` and return the guest's report: the
/// machine checked and the initramfs and QEMU's arguments made (`prepare`),
/// QEMU run until the report ends (`run`), then its end read (`outcome`).
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
    let started = Instant::now();
    let prepared = prepare(req)?;
    let prepare = started.elapsed();
    let ran = run(qemu, req, prepared)?;
    let mut out = outcome(req, ran)?;
    out.prepare = prepare;
    Ok(out)
}

/// A boot ready to start: its temporary folder (the initramfs, the report
/// channel's FIFOs), the accelerator and speed-ups it uses, QEMU's arguments.
struct Prepared {
    _tmp: crate::scratch::ScratchDir,
    /// Removes the monitor's socket when the boot is over (QEMU reaped).
    _monitor: Option<super::monitor::MonitorSocket>,
    /// Writing the initramfs took this long.
    initramfs: Duration,
    accel: Accel,
    used: Speedups,
    port: Option<ReportPort>,
    args: Vec<String>,
}

/// Check the machine and the accelerator, write the initramfs, choose the
/// kernel image and the report channel, and make QEMU's arguments.
///
/// # Errors
/// An invalid spec, an unusable accelerator, a machine too large for TCG, or
/// the initramfs or the FIFOs cannot be written.
fn prepare(req: &BootRequest<'_>) -> Result<Prepared, LaunchError> {
    req.spec.validate()?;
    let arm64 = req.spec.arch == crate::topology::Arch::Arm64;
    let choice = match req.spec.accel {
        // An arm64 guest on this x86_64 host is emulated: TCG only.
        accel::AccelChoice::Kvm if arm64 => {
            return Err(LaunchError::Accel(AccelError(
                "KVM cannot run an arm64 guest on an x86_64 host; use --accel tcg".into(),
            )))
        }
        accel::AccelChoice::Auto if arm64 => accel::AccelChoice::Tcg,
        c => c,
    };
    let accel = accel::choose(choice, req.spec.vcpus())?;
    accel::check_tcg_size(accel, req.spec.vcpus(), accel::host_cores(), req.speedups.cmdline)
        .map_err(LaunchError::TooLargeForTcg)?;
    crate::children::install_signal_thread();

    let tmp = crate::scratch::ScratchDir::new("manarig-boot-").map_err(io("temp dir"))?;
    let initrd = tmp.path().join("initramfs.cpio");
    let writing = Instant::now();
    initramfs::write(
        &InitramfsSpec {
            busybox: req.busybox,
            modules: &req.kernel.modules,
            compression: req.compression,
            extra_files: &req.extra_files,
            extra_links: &req.extra_links,
        },
        &initrd,
    )?;
    let initramfs = writing.elapsed();

    let mut used = req.speedups;
    if accel == Accel::Kvm {
        // The CPU flags are TCG's speed-ups; KVM gets the host's CPU model.
        used.cpu = false;
    }
    if arm64 {
        // PVH and the CPU flags (MTRR, PAT) are x86's; QEMU boots an arm64
        // Image as it is.
        used.pvh = false;
        used.cpu = false;
        used.acpi = false;
    }
    let kernel_image = boot_image(req.kernel, &mut used);
    let port = match req.agent.report {
        ReportChannel::Console => None,
        ReportChannel::Ttys1 => Some(ReportPort::create(tmp.path()).map_err(io("report channel FIFOs"))?),
    };
    let monitor = req.monitor.as_deref().map(super::monitor::MonitorSocket::new).transpose()?;
    let args = qemu_args(req, accel, used, &kernel_image, &initrd, port.as_ref(), monitor.as_ref())?;
    Ok(Prepared { _tmp: tmp, _monitor: monitor, initramfs, accel, used, port, args })
}

/// How QEMU's run ended, before it is read as an outcome.
struct Ran {
    prepared: Prepared,
    waited: Waited,
    /// QEMU's exit status as text.
    status: String,
    /// QEMU's stderr (`(empty)` when it wrote nothing).
    stderr: String,
    watch: Watch,
    /// From QEMU's start to the report's end (or whatever ended the wait).
    to_report: Duration,
    /// From then until QEMU is reaped and its output read to the end.
    stop: Duration,
    /// The first console line and the report's begin, from QEMU's start.
    moments: BootMoments,
    /// Why the caller aborted the boot, when it did while the boot counted.
    abort_reason: Option<String>,
}

/// Start QEMU with the prepared arguments, feed its console and report
/// channel to a [`Watch`] until the report ends (or a panic, the deadline, a
/// silent KVM guest, an abort), then stop QEMU and reap it.
///
/// # Errors
/// The console log cannot be created, or QEMU cannot be started.
fn run(qemu: &QemuInstall, req: &BootRequest<'_>, mut prepared: Prepared) -> Result<Ran, LaunchError> {
    let log = match &req.console_log {
        Some(p) => Some(std::fs::File::create(p).map_err(io(format!("console log {}", p.display())))?),
        None => None,
    };
    let mut cmd = qemu.command();
    // stdin: the console's input, where the agent's marks that wait for the
    // host are answered when they come on the console (super::go_ahead).
    cmd.args(&prepared.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    {
        use std::os::unix::process::CommandExt;
        // Own process group: a terminal's Ctrl-C reaches us, and we stop QEMU.
        cmd.process_group(0);
        if !req.tap_nics.is_empty() {
            let raw = super::tap_nic::raw_fds(&req.tap_nics);
            // SAFETY: runs between fork and exec; inherit() calls only dup2 and fcntl.
            unsafe { cmd.pre_exec(move || super::tap_nic::inherit(&raw)) };
        }
    }
    crate::children::die_with_parent(&mut cmd);
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(io("start QEMU"))?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let console_input = child.stdin.take().and_then(|stdin| {
        GoAheadPort::console(stdin)
            .map_err(|e| tracing::warn!("QEMU's stdin: {e}; a go-ahead on the console will not be sent"))
            .ok()
    });
    let mut reaper = Reaper::new(child);

    let (tx, rx) = mpsc::channel();
    if let Some(abort) = &req.abort {
        abort.attach(tx.clone());
    }
    if let Some(p) = prepared.port.as_mut() {
        p.start(tx.clone(), req.on_marker.clone());
    }
    let reader = match stdout {
        Some(out) => watch::spawn_reader(Source::Console, out, tx, req.on_marker.clone(), console_input),
        None => std::thread::spawn(move || drop(tx.send(Msg::Eof(Source::Console)))),
    };
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_string(&mut s);
        }
        s
    });

    let mut watch = Watch::new(log);
    // A working KVM guest prints its first console line within a second or two.
    let silence_limit = (prepared.accel == Accel::Kvm).then(|| start + KVM_SILENCE_LIMIT);
    let waited = wait(&rx, &mut watch, start + req.deadline, silence_limit);
    // After the report nothing the guest does is read: QEMU is stopped at once
    // rather than waiting for the guest's `poweroff -f`, which would first shut
    // the driver down (tens of ms under TCG). After a panic QEMU exits by itself
    // (panic=-1, -no-reboot): give it a moment, then kill.
    let qemu_exiting = matches!(waited, Waited::Panicked | Waited::ConsoleClosed);
    // QEMU closed its console: it is exiting (or crashed); collect its status.
    let grace = if qemu_exiting { Duration::from_secs(2) } else { Duration::ZERO };
    let to_report = start.elapsed();
    // An abort counts until QEMU is stopped here, or, when QEMU exits by itself
    // (perhaps because the device died), until it has: a device that fails
    // because we killed QEMU is not the boot's cause.
    let detach = || req.abort.as_ref().and_then(BootAbort::detach);
    let mut abort_reason = if qemu_exiting { None } else { detach() };
    let status = reaper.finish(grace);
    if qemu_exiting {
        abort_reason = detach();
    }
    let _ = reader.join();
    // The console's reader has ended with QEMU: what it read before is kept.
    if waited == Waited::ReportEnded {
        for msg in rx.try_iter() {
            if let Msg::Line(Source::Console, line, at) = msg {
                watch.keep_late_console_line(&line, at);
            }
        }
    }
    if let Some(p) = prepared.port.take() {
        p.finish();
    }
    let mut stderr = err_reader.join().unwrap_or_default();
    if stderr.trim().is_empty() {
        stderr = "(empty)".to_string();
    }
    let stop = start.elapsed().saturating_sub(to_report);
    let moments = BootMoments::since(start, watch.moments());
    Ok(Ran { prepared, waited, status, stderr, watch, to_report, stop, moments, abort_reason })
}

/// The boot's outcome from how QEMU's run ended: a signal, an abort, a
/// panic, a deadline, a silent KVM guest or QEMU's early exit are errors; a
/// report that ended is parsed.
///
/// # Errors
/// Each of those, with the last console lines; a report that does not parse.
fn outcome(req: &BootRequest<'_>, ran: Ran) -> Result<BootOutcome, LaunchError> {
    let Ran { prepared, waited, status, stderr, watch, to_report, stop, moments, abort_reason } = ran;
    if crate::children::interrupted() {
        return Err(LaunchError::Interrupted);
    }
    if let Some(reason) = abort_reason.filter(|_| waited != Waited::ReportEnded) {
        return Err(LaunchError::Aborted { reason, tail: watch.tail() });
    }
    if watch.panicked() {
        return Err(LaunchError::GuestPanic { tail: watch.tail() });
    }
    match waited {
        Waited::ReportEnded => {}
        // An abort without a reason cannot happen (abort() stores it first); say so plainly.
        Waited::Aborted => {
            return Err(LaunchError::Aborted { reason: "the boot was aborted".into(), tail: watch.tail() })
        }
        Waited::KvmSilent => return Err(LaunchError::KvmSilent { secs: KVM_SILENCE_LIMIT.as_secs() }),
        Waited::Deadline => return Err(LaunchError::Deadline { secs: req.deadline.as_secs(), tail: watch.tail() }),
        Waited::Panicked | Waited::ConsoleClosed => {
            return Err(LaunchError::Exited { status, stderr, tail: watch.tail() })
        }
    }
    let (source, text) = watch.agent_output();
    if req.agent.report == ReportChannel::Ttys1 && source == Source::Console {
        tracing::warn!(
            "the guest agent reported on the console, not on ttyS1 (its `manarig:` line on the console says why)"
        );
    }
    let transcript = guest_protocol::parse(text).map_err(|error| LaunchError::Report { error, tail: watch.tail() })?;
    Ok(BootOutcome {
        report: transcript.report,
        stages: transcript.stages,
        console: watch.into_console(),
        accel: prepared.accel,
        prepare: Duration::ZERO,
        initramfs: prepared.initramfs,
        to_report,
        moments,
        stop,
        qemu_args: prepared.args,
        speedups: prepared.used,
    })
}

/// How [`wait`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waited {
    /// The report's end marker arrived.
    ReportEnded,
    /// The kernel panicked and its message was collected (or its time ran out).
    Panicked,
    /// QEMU closed the console before the report ended.
    ConsoleClosed,
    /// The host deadline passed.
    Deadline,
    /// Under KVM the console stayed empty past the silence limit.
    KvmSilent,
    /// The caller ended the boot through its [`BootAbort`].
    Aborted,
}

/// Feed the readers' lines to `watch` until the report ends, the console closes,
/// the deadline passes, a KVM guest stays silent past `silence_limit`, or 2 s
/// after a kernel panic (the rest of its message).
fn wait(rx: &mpsc::Receiver<Msg>, watch: &mut Watch, deadline: Instant, silence_limit: Option<Instant>) -> Waited {
    let mut panic_until: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let mut until = panic_until.map_or(deadline, |p| p.min(deadline));
        if let Some(limit) = silence_limit.filter(|_| watch.silent()) {
            if now >= limit {
                return Waited::KvmSilent;
            }
            until = until.min(limit);
        }
        if now >= until {
            return if panic_until.is_some() { Waited::Panicked } else { Waited::Deadline };
        }
        match rx.recv_timeout(until - now) {
            Ok(Msg::Line(source, line, at)) => match watch.line_read_at(source, &line, at) {
                Step::ReportEnded => return Waited::ReportEnded,
                // Collect the rest of the panic message (QEMU exits at once
                // with panic=-1 and -no-reboot), at most 2 s more.
                Step::Panicked => panic_until = Some(Instant::now() + Duration::from_secs(2)),
                Step::Wait => {}
            },
            Ok(Msg::Eof(Source::Console)) | Err(RecvTimeoutError::Disconnected) => {
                return if panic_until.is_some() { Waited::Panicked } else { Waited::ConsoleClosed };
            }
            Ok(Msg::Abort) => return Waited::Aborted,
            // The report channel closes with QEMU; the console's end says so.
            Ok(Msg::Eof(Source::Report)) | Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// The kernel file QEMU boots: the PVH image when that speed-up is on and the
/// kernel has a PVH entry, else the bzImage (and `used.pvh` off).
fn boot_image(kernel: &KernelInstall, used: &mut Speedups) -> PathBuf {
    if !used.pvh {
        return kernel.vmlinuz.clone();
    }
    speed::pvh_image(&kernel.vmlinuz).unwrap_or_else(|e| {
        tracing::warn!("PVH boot not possible, booting the bzImage: {e}");
        used.pvh = false;
        kernel.vmlinuz.clone()
    })
}

/// QEMU's arguments: the machine, the caller's devices, kernel, initramfs and
/// command line, the console on the first serial port and, with `port`, the
/// report channel on the second.
///
/// # Errors
/// As [`kernel_cmdline`].
fn qemu_args(
    req: &BootRequest<'_>,
    accel: Accel,
    used: Speedups,
    kernel_image: &Path,
    initrd: &Path,
    port: Option<&ReportPort>,
    monitor: Option<&super::monitor::MonitorSocket>,
) -> Result<Vec<String>, LaunchError> {
    let cmdline = kernel_cmdline(req, accel)?;
    let monitor = monitor.map_or_else(|| "none".to_string(), super::monitor::MonitorSocket::qemu_value);
    // Under KVM the default model is the host's CPU: `max` asks for features a
    // nested KVM may not give (QEMU aborts: "host doesn't support requested
    // feature: vPMU", MSR 0x10a). A model the user chose stays.
    let model = if accel == Accel::Kvm && req.cpu_model == super::spec::DEFAULT_CPU {
        super::spec::KVM_CPU
    } else {
        req.cpu_model.as_str()
    };
    let mut args = req.spec.qemu_args(accel, &used.cpu_model(model));
    if used.acpi {
        args.extend(["-global".to_string(), speed::SPEED_GLOBAL.to_string()]);
    }
    for d in &req.extra_devices {
        args.push("-device".into());
        args.push(d.clone());
    }
    for (k, nic) in req.tap_nics.iter().enumerate() {
        args.extend(nic.qemu_args(k));
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
            &monitor,
            "-chardev",
            "stdio,id=con0,signal=off",
            "-serial",
            "chardev:con0",
            "-no-reboot",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    if let Some(p) = port {
        args.extend(p.qemu_args());
    }
    if let Some(f) = &req.firmware {
        args.push("-bios".into());
        args.push(f.to_string_lossy().into_owned());
    }
    Ok(args)
}

/// The kernel command line: [`BASE_CMDLINE`], the agent's items (with the
/// speed-ups' pin), [`SPEED_CMDLINE`] when that speed-up is on (and, under
/// multi-threaded TCG on x86, [`speed::SPEED_CMDLINE_MULTI_TCG`] where
/// [`speed::hpet_suits`]), then the caller's items.
///
/// # Errors
/// [`LaunchError::AgentItem`] for an extra item that is one of the agent's.
fn kernel_cmdline(req: &BootRequest<'_>, accel: Accel) -> Result<String, LaunchError> {
    if let Some(item) = req.extra_cmdline.iter().find(|c| c.split(' ').any(options::is_agent_item)) {
        return Err(LaunchError::AgentItem(item.clone()));
    }
    let arm64 = req.spec.arch == crate::topology::Arch::Arm64;
    let mut items = vec![if arm64 { BASE_CMDLINE_ARM64 } else { BASE_CMDLINE }.to_string()];
    items.extend(req.speedups.agent(&req.agent).cmdline_items());
    if req.speedups.cmdline {
        items.push(if arm64 { speed::SPEED_CMDLINE_ARM64 } else { SPEED_CMDLINE }.to_string());
        if !arm64 && accel == Accel::TcgMulti && speed::hpet_suits(req.kernel, req.spec.vcpus()) {
            items.push(speed::SPEED_CMDLINE_MULTI_TCG.to_string());
        }
    }
    items.extend(req.extra_cmdline.iter().cloned());
    Ok(items.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provision::{KoCompression, QemuSource};
    use manarig_test_support::shell_script;

    fn run_fake(body: &str, deadline: Duration) -> Result<BootOutcome, LaunchError> {
        run_fake_with(body, deadline, None)
    }

    fn run_fake_with(
        body: &str,
        deadline: Duration,
        on_marker: Option<MarkerHook>,
    ) -> Result<BootOutcome, LaunchError> {
        run_fake_full(body, deadline, on_marker, None)
    }

    fn run_fake_full(
        body: &str,
        deadline: Duration,
        on_marker: Option<MarkerHook>,
        abort: Option<BootAbort>,
    ) -> Result<BootOutcome, LaunchError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let qemu_bin = shell_script(dir.path(), "qemu", body);
        let busybox = shell_script(dir.path(), "busybox", "echo sh");
        let kernel = KernelInstall {
            id: "t".into(),
            release: "t".into(),
            vmlinuz: dir.path().join("vmlinuz"),
            modules: vec![],
            compression: KoCompression::None,
            packages: vec![],
        };
        let qemu = QemuInstall {
            source: QemuSource::System { binary: qemu_bin },
            version_line: String::new(),
            version: (11, 1, 0),
            package: None,
            binary: crate::provision::QEMU_X86.to_owned(),
        };
        let spec = super::super::machines::seed_002(256);
        let mut req = BootRequest::new(&spec, &kernel, &busybox);
        req.deadline = deadline;
        req.on_marker = on_marker;
        req.abort = abort;
        boot(&qemu, &req)
    }

    #[test]
    fn the_marker_hook_sees_each_stage_and_the_report_begin_once() {
        let (hook, seen) = super::super::watch::recording_hook();
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/console-seed002-6.1-reprobe.txt");
        let out = run_fake_with(&format!("cat '{fixture}'"), Duration::from_secs(60), Some(hook)).expect("report");
        assert_eq!(out.report.rmmod_status, Some(0));
        assert_eq!(out.stages.len(), 1, "the first-probe stage");
        assert_eq!(*seen.lock().expect("lock"), ["MANARIG-STAGE-BEGIN first-probe", "MANARIG-REPORT-BEGIN 1"]);
    }

    #[test]
    fn the_agents_items_come_from_its_options_only() {
        // A kernel the rig built (the minimal config).
        let kernel = KernelInstall {
            id: "build:t".into(),
            release: "t".into(),
            vmlinuz: PathBuf::from("vmlinuz"),
            modules: vec![],
            compression: KoCompression::None,
            packages: vec![],
        };
        let spec = super::super::machines::seed_002(256);
        let mut req = BootRequest::new(&spec, &kernel, Path::new("busybox"));
        req.agent.load_mana = true;
        req.agent.channels = Some(4);
        req.extra_cmdline.push("ignore_loglevel".into());
        let line = kernel_cmdline(&req, Accel::TcgSingle).expect("cmdline");
        assert!(line.starts_with(BASE_CMDLINE), "{line}");
        assert!(line.contains(" manarig.load=mana manarig.deadline=180 manarig.channels=4 manarig.pin=0 "), "{line}");
        assert!(line.ends_with(&format!("{SPEED_CMDLINE} ignore_loglevel")), "{line}");
        // Multi-threaded TCG keeps the kernel on the HPET (speed::SPEED_CMDLINE_MULTI_TCG); KVM does not.
        let multi = kernel_cmdline(&req, Accel::TcgMulti).expect("cmdline");
        assert!(multi.ends_with(&format!("{SPEED_CMDLINE} clocksource=hpet ignore_loglevel")), "{multi}");
        assert!(!kernel_cmdline(&req, Accel::Kvm).expect("cmdline").contains("clocksource"));
        // Not past 128 vCPUs, where the HPET's reads cost more than the stall they avoid.
        let big = super::super::machines::grid(16, 8, 2, 256);
        let big_req = BootRequest::new(&big, &kernel, Path::new("busybox"));
        assert!(!kernel_cmdline(&big_req, Accel::TcgMulti).expect("cmdline").contains("clocksource"));
        // Nor on Debian's packaged kernels.
        let debian = KernelInstall { id: "6.12".into(), ..kernel.clone() };
        let debian_req = BootRequest::new(&spec, &debian, Path::new("busybox"));
        assert!(!kernel_cmdline(&debian_req, Accel::TcgMulti).expect("cmdline").contains("clocksource"));
        // Nor on a rig build that preempts (7.x's minimal config, PREEMPT_LAZY):
        // its bzImage's setup header says `PREEMPT` (Documentation/arch/x86/boot.rst).
        let d = tempfile::tempdir().expect("tmp");
        let version = b"7.3.4-manarig-f202d239 (manarig@manarig) #1 SMP PREEMPT 1970-01-01 00:00:00 UTC\0";
        let image = manarig_test_support::bzimage_with_version(version);
        let preempting = KernelInstall { vmlinuz: d.path().join("bzImage"), ..kernel.clone() };
        std::fs::write(&preempting.vmlinuz, image).expect("write");
        let preempting_req = BootRequest::new(&spec, &preempting, Path::new("busybox"));
        assert!(!kernel_cmdline(&preempting_req, Accel::TcgMulti).expect("cmdline").contains("clocksource"));
        req.speedups = Speedups::NONE;
        let plain = kernel_cmdline(&req, Accel::TcgMulti).expect("cmdline");
        assert!(!plain.contains("manarig.pin") && !plain.contains("clocksource"), "{plain}");
        req.extra_cmdline.push("x=\"y manarig.reprobe=1\"".into());
        assert!(
            matches!(kernel_cmdline(&req, Accel::TcgSingle), Err(LaunchError::AgentItem(i)) if i.contains("manarig.reprobe"))
        );
    }

    /// A guest that could not open ttyS1 reports on the console (guest-images/init.sh
    /// `block_open`); the recorded consoles are of agents without the channel.
    #[test]
    fn a_report_on_the_console_is_returned() {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/console-seed002-6.12.txt");
        let out = run_fake(&format!("cat '{fixture}'"), Duration::from_secs(60)).expect("report");
        assert_eq!(out.report.kernel, "6.12.117+deb13-cloud-amd64");
        assert!(out.qemu_args.iter().any(|a| a == "-no-reboot"));
        assert!(out.qemu_args.iter().any(|a| a.starts_with("pipe,id=report,path=")), "{:?}", out.qemu_args);
        // Every speed-up by default, the ACPI one included (x86, q35).
        assert!(
            out.qemu_args.windows(2).any(|w| w[0] == "-global" && w[1] == speed::SPEED_GLOBAL),
            "{:?}",
            out.qemu_args
        );
        assert!(out.speedups.acpi && out.speedups.names().contains(&"acpi"), "{:?}", out.speedups);
    }

    /// The report on its own channel: a kernel line on the console in the middle
    /// of it changes nothing, and the stages come from the channel too.
    #[test]
    fn a_report_on_the_report_channel_is_returned_and_the_console_is_kept_apart() {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/console-seed002-6.1-reprobe.txt");
        let (hook, seen) = super::super::watch::recording_hook();
        // QEMU's pipe chardev writes to <path>.out.
        let body = format!(
            "for a; do case \"$a\" in pipe,id=report,path=*) p=\"${{a#pipe,id=report,path=}}\" ;; esac; done\n\
             echo '[    1.0] booting'\nhead -n 100 '{fixture}' > \"$p.out\"\necho 'irq 9: nobody cared'\n\
             tail -n +101 '{fixture}' > \"$p.out\"\nexec sleep 600"
        );
        let out = run_fake_with(&body, Duration::from_secs(60), Some(hook)).expect("report");
        assert_eq!((out.report.rmmod_status, out.stages.len()), (Some(0), 1));
        // The boot's moments: the console's first line, then the report's begin, before its end.
        // (The console's reader may read its line after the report has ended,
        // on a loaded host: the line is kept, the moment is when it was read.)
        let (first, begin) = (out.moments.first_output.expect("first"), out.moments.report_begin.expect("begin"));
        assert!(begin <= out.to_report && out.initramfs <= out.prepare, "{:?} {out:?}", out.moments);
        assert!(first > Duration::ZERO && first <= out.to_report + out.stop, "{:?} {out:?}", out.moments);
        assert!(out.console.contains("booting") && out.console.contains("nobody cared"), "{}", out.console);
        assert!(!out.console.contains("MANARIG"), "{}", out.console);
        assert_eq!(*seen.lock().expect("lock"), ["MANARIG-STAGE-BEGIN first-probe", "MANARIG-REPORT-BEGIN 1"]);
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
