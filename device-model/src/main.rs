//! `mana-device`: serve one emulated MANA VF on a vfio-user unix socket.
//!
//! Starts, binds `--socket` and prints `ready <socket path>` on stdout (the
//! socket file exists and accepts connections from then on), serves one QEMU
//! `vfio-user-pci` connection and exits 0 when QEMU disconnects.
//! SIGTERM/SIGINT end it cleanly (status written, socket removed, exit 0);
//! SIGUSR1 writes the status file. With `--control stdio` it also answers
//! status and ping requests on stdin/stdout (`device_model::process::control`), and
//! end of file on stdin ends it like SIGTERM: this is how the rig runs it
//! (harness/crates/rig/src/rig/device.rs).
//!
//! Network: without `--tap-fd` transmitted frames are dropped and nothing is
//! received. With `--tap-fd N` (an inherited TAP descriptor: the rig's
//! traffic peer creates the TAP in a private network namespace) vPort 0 sends
//! to and receives from that TAP, through a data-path event loop
//! (`device_model::process::backend_loop`); `--record-flows N` keeps per-flow queue,
//! RSS hash and frame counts in the status.
//!
//! Fault injection: `--inject SPEC` (repeatable) makes the device misbehave
//! towards the guest driver on purpose (`device_model::inject`); with
//! `hwc-delay` or a timed event (`reset@S`, `link-down@S`, `link-up@S`) a
//! thread delivers the held responses and raises the events when they are due.
//!
//! Exit 2 for arguments clap rejects, 1 for every other error (bad config
//! values, socket in the way, connection failure, no client within
//! `--connect-timeout`), with the reason on stderr; 101 when any thread
//! panics (the panic hook prints the message and ends the process at once,
//! instead of leaving a device that no longer serves).

use anyhow::{bail, Context, Result};
use clap::Parser;
use device_model::datapath::backend::{Discard, PacketBackend};
use device_model::datapath::tap::Tap;
use device_model::process::backend_loop::BackendLoop;
use device_model::shell::locked_core::mana_core_with;
use device_model::shell::server::{DeviceServer, StatusHandle};
use mana_device_api::config::DeviceConfig;
use mana_device_api::fault::DeviceFault;
use mana_device_api::inject::InjectSpec;
use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
use signal_hook::iterator::Signals;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

/// Emulated Microsoft Azure Network Adapter (MANA) VF, served to QEMU over vfio-user.
#[derive(Debug, Parser)]
#[command(name = "mana-device", version)]
struct Args {
    /// Unix socket to listen on (must not exist); QEMU: -device vfio-user-pci,socket=...
    #[arg(long)]
    socket: PathBuf,
    /// Device configuration as JSON (DeviceConfig fields); the flags below override it.
    #[arg(long, value_name = "FILE.json")]
    config: Option<PathBuf>,
    /// MSI-X table entries (1..=2048).
    #[arg(long)]
    msix_table_size: Option<u16>,
    /// max_msix reported by GDMA_QUERY_MAX_RESOURCES.
    #[arg(long)]
    max_msix: Option<u32>,
    /// Queue limit reported by GDMA_QUERY_MAX_RESOURCES.
    #[arg(long)]
    max_queues: Option<u32>,
    /// Number of vPorts.
    #[arg(long)]
    num_vports: Option<u16>,
    /// MAC address of vPort 0, e.g. 00:15:5d:00:00:01.
    #[arg(long, value_parser = parse_mac)]
    mac: Option<[u8; 6]>,
    /// Write the device's JSON status here on SIGUSR1 and on exit.
    #[arg(long)]
    status_file: Option<PathBuf>,
    /// Give up if no client connects within this many seconds (0 = wait forever).
    #[arg(long, default_value_t = 300)]
    connect_timeout: u64,
    /// Answer control requests (status, ping) on stdin/stdout, one JSON line
    /// each (device_model::process::control); end of file on stdin stops the device.
    #[arg(long, value_parser = [mana_device_api::control::STDIO])]
    control: Option<String>,
    /// An open TAP file descriptor this process inherited (`IFF_TAP |
    /// IFF_NO_PI`): vPort 0's network. Frames go to it and come from it
    /// through a data-path event loop. Without it, transmitted frames are
    /// dropped and nothing is received.
    #[arg(long, value_name = "FD")]
    tap_fd: Option<i32>,
    /// Record up to N distinct TCP/UDP flows (queue, RSS hash, frames) in the
    /// status (`flows`); 0 = off.
    #[arg(long, value_name = "N", default_value_t = 0)]
    record_flows: usize,
    /// Misbehave on purpose towards the guest driver (repeatable): SPEC is
    /// `status:CMD=CODE[@N]`, `hwc-delay:CMD=MS[@N]`,
    /// `spurious-irq:eq=ID|vector=V`, `owner-bits:eqe|cqe[@N]`,
    /// `silent-vector:V`, `rx-cqe-corrupt[@N]`, `reset@S`, `link-down@S` or
    /// `link-up@S` (S: seconds after the driver opens the vPort; see
    /// device_model::inject).
    #[arg(long = "inject", value_name = "SPEC")]
    inject: Vec<InjectSpec>,
    /// Test only: fail at the N-th guest write to BAR0 (KIND:N, KIND = panic,
    /// exit, kill or hang; see device_model::process::fault).
    #[arg(long, value_name = "KIND:N", hide = true)]
    inject_fault: Option<DeviceFault>,
}

/// Exit status after a panic in any thread (Rust's own for a panicking main).
const PANIC_EXIT: i32 = 101;

fn parse_mac(text: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = text.split(':').collect();
    let mut mac = [0u8; 6];
    if parts.len() != 6 {
        return Err(format!("{text:?}: expected six hex bytes separated by ':'"));
    }
    for (byte, part) in mac.iter_mut().zip(parts) {
        *byte = u8::from_str_radix(part, 16).map_err(|_| format!("{text:?}: {part:?} is not a hex byte"))?;
    }
    Ok(mac)
}

fn device_config(args: &Args) -> Result<DeviceConfig> {
    let mut config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("{}: cannot read device config", path.display()))?;
            serde_json::from_str(&text).with_context(|| format!("{}: invalid device config", path.display()))?
        }
        None => DeviceConfig::default(),
    };
    if let Some(v) = args.msix_table_size {
        config.msix_table_size = v;
    }
    if let Some(v) = args.max_msix {
        config.max_msix = v;
    }
    if let Some(v) = args.max_queues {
        config.max_queues = v;
    }
    if let Some(v) = args.num_vports {
        config.num_vports = v;
    }
    if let Some(v) = args.mac {
        config.mac = v;
    }
    if !(1..=2048).contains(&config.msix_table_size) {
        bail!("msix_table_size {} is outside 1..=2048", config.msix_table_size);
    }
    Ok(config)
}

enum Event {
    Finished(Result<(), device_model::shell::server::ServerError>),
    Signal(i32),
    ConnectTimeout,
    /// The control channel's stdin ended (or broke): whoever started us is gone.
    ControllerGone(std::io::Result<()>),
}

fn write_status(handle: &StatusHandle, path: Option<&Path>) {
    if let Some(path) = path {
        match handle.write_status(path) {
            Ok(()) => tracing::info!(path = %path.display(), "status written"),
            Err(err) => tracing::error!("{:#}", anyhow::Error::from(err)),
        }
    }
}

/// Takes ownership of the inherited descriptor `fd` (a TAP) and makes sure it
/// is non-blocking: the data path must never wait on the backend.
///
/// # Errors
/// `fd` is not open in this process, or its flags cannot be read or set.
fn adopt_tap_fd(fd: i32) -> Result<OwnedFd> {
    if fd < 3 {
        bail!("--tap-fd {fd}: descriptors 0-2 are stdin, stdout and stderr");
    }
    // SAFETY: fcntl(F_GETFL) only reads the flags of descriptor `fd`; an
    // invalid descriptor makes it fail with EBADF, which is checked.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("--tap-fd {fd}: not an open descriptor of this process"));
    }
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: as above; F_SETFL changes only the file status flags.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("--tap-fd {fd}: cannot make it non-blocking"));
        }
    }
    // SAFETY: `fd` is open (F_GETFL succeeded), was inherited for this
    // purpose, and nothing else in this process owns or closes it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn run(args: Args) -> Result<()> {
    let config = device_config(&args)?;
    let tap = args.tap_fd.map(adopt_tap_fd).transpose()?;
    let (backend, tap_parts): (Box<dyn PacketBackend>, _) = match tap {
        Some(fd) => {
            let ready = fd.try_clone().context("--tap-fd: cannot duplicate the descriptor")?;
            let tap = Tap::new(fd);
            let stats = tap.stats();
            (Box::new(tap), Some((ready, stats)))
        }
        None => (Box::new(Discard), None),
    };
    let delays = args.inject.iter().any(InjectSpec::needs_clock);
    let (factory, core_status, core) = mana_core_with(&config, backend, args.record_flows, args.inject.clone());
    if delays {
        start_ticker(core.clone())?;
    }
    // The control channel's device events (`Op::Raise`) go to the same core.
    let core_events = core.clone();
    let factory = match args.inject_fault {
        Some(fault) => device_model::process::fault::inject(factory, fault),
        None => factory,
    };
    // Register signal handlers before binding so that a SIGTERM right after
    // the socket appears cannot kill the process without cleanup.
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGUSR1]).context("cannot install signal handlers")?;
    let server = DeviceServer::bind(&args.socket, config, factory)?;
    // Readiness for whoever started us: the socket file exists now, and this line says so.
    {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "ready {}", args.socket.display())
            .and_then(|()| stdout.flush())
            .context("cannot write the readiness line to stdout")?;
    }
    server.set_core_status(core_status);
    // The core exists once the server is bound: its backend's frames can flow.
    let data_path = match tap_parts {
        Some((ready, stats)) => Some((BackendLoop::start(core, ready)?, stats)),
        None => None,
    };
    let handle = server.status_handle();
    let (tx, rx) = mpsc::channel();

    let signal_tx = tx.clone();
    let signal_handle = handle.clone();
    let status_file = args.status_file.clone();
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        for signal in signals.forever() {
            if signal == SIGUSR1 {
                write_status(&signal_handle, status_file.as_deref());
            } else if signal_tx.send(Event::Signal(signal)).is_err() {
                break;
            }
        }
    })?;

    if args.control.is_some() {
        let control_tx = tx.clone();
        let control_handle = handle.clone();
        let control_core = core_events.clone();
        std::thread::Builder::new().name("control".into()).spawn(move || {
            let raise = |event| control_core.with_mut(|device| device.raise_event(event)).unwrap_or(false);
            let result = device_model::process::control::serve(
                std::io::stdin().lock(),
                std::io::stdout(),
                &control_handle,
                &raise,
            );
            let _ = control_tx.send(Event::ControllerGone(result));
        })?;
    }

    let server_tx = tx.clone();
    let server = std::sync::Arc::new(server);
    let serving = std::sync::Arc::clone(&server);
    std::thread::Builder::new().name("vfio-user".into()).spawn(move || {
        let _ = server_tx.send(Event::Finished(serving.run()));
    })?;

    let timeout = (args.connect_timeout > 0).then(|| Duration::from_secs(args.connect_timeout));
    let event = match timeout {
        Some(timeout) => match rx.recv_timeout(timeout) {
            Ok(event) => event,
            Err(_) if handle.connected() => rx.recv().context("server thread vanished")?,
            Err(_) => Event::ConnectTimeout,
        },
        None => rx.recv().context("server thread vanished")?,
    };
    write_status(&handle, args.status_file.as_deref());
    if let Some((data_path, tap)) = data_path {
        match data_path.stop() {
            Ok(stats) => tracing::info!(
                ?stats,
                tap_tx = tap.tx_frames.load(Ordering::Relaxed),
                tap_tx_full = tap.tx_full.load(Ordering::Relaxed),
                tap_tx_errors = tap.tx_errors.load(Ordering::Relaxed),
                tap_rx = tap.rx_frames.load(Ordering::Relaxed),
                "data path stopped"
            ),
            Err(e) => tracing::error!("{e}"),
        }
    }
    // The serving thread may still hold the server (blocked in accept or a
    // read); remove the socket ourselves instead of waiting for its Drop.
    if args.socket.exists() {
        let _ = std::fs::remove_file(&args.socket);
    }
    match event {
        Event::Finished(result) => result.context("serving the vfio-user client"),
        Event::Signal(signal) => {
            tracing::info!(signal, "terminated by signal; exiting");
            Ok(())
        }
        Event::ControllerGone(result) => {
            tracing::info!(?result, "control channel closed; exiting");
            Ok(())
        }
        Event::ConnectTimeout => bail!("no vfio-user client connected within {} s", args.connect_timeout),
    }
}

/// Raises timed events (`--inject reset@S`, …) and delivers held HWC
/// responses (`--inject hwc-delay:…`) when they are due:
/// every 50 ms, the core's [`device_model::ManaDevice::tick`], for the
/// process's life.
fn start_ticker(core: device_model::shell::locked_core::CoreObserver<device_model::ManaDevice>) -> Result<()> {
    std::thread::Builder::new()
        .name("inject-ticker".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_millis(50));
            core.with_mut(|device| device.tick(std::time::Instant::now()));
        })
        .context("cannot start the injection ticker")?;
    Ok(())
}

/// A panic in any thread (the vfio-user serving thread, the control thread)
/// prints its message as usual (with a backtrace if `RUST_BACKTRACE` asks),
/// then one line with the thread, place and message (the last line, which is
/// what a supervisor keeps of a long backtrace), and ends the process with
/// [`PANIC_EXIT`]: otherwise the other threads would keep the process alive
/// while nothing serves the guest.
fn exit_on_panic() {
    let print = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        print(info);
        let thread = std::thread::current();
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("(no message)");
        let place = info.location().map_or_else(String::new, |l| format!(" at {l}"));
        eprintln!(
            "mana-device: error: thread '{}' panicked{place}: {message}; exiting",
            thread.name().unwrap_or("unnamed")
        );
        std::process::exit(PANIC_EXIT);
    }));
}

fn main() {
    use std::io::IsTerminal;
    exit_on_panic();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();
    if let Err(err) = run(args) {
        eprintln!("mana-device: error: {err:#}");
        std::process::exit(1);
    }
}
