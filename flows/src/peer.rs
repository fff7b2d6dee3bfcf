//! The host's end (`manarig-flows peer`), started by the rig: a private
//! network namespace with a TAP whose descriptor goes to the rig (and from
//! there to the emulated NIC), the control port the guest connects to, and
//! the peer's side of every flow.
//!
//! Lifetime: the peer lives until the rig closes its stdin (it then exits
//! at once) or its deadline passes. Whatever it made (the namespace, the TAP)
//! goes away with it and with the last holder of the TAP's descriptor: see
//! [`crate::netns`].

use crate::fdpass::send_fd;
use crate::guest::{read_line, ReadError};
use crate::netns;
use crate::proto::{
    decode, encode, DecodeError, GuestHello, GuestListening, GuestResults, Outcome, PeerEvent, RigCommand, Side,
    PROTOCOL_VERSION,
};
use crate::run;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the peer waits for the guest's results after the plan's limit.
pub const RESULTS_GRACE: Duration = Duration::from_secs(5);

/// The bridge of the two TAPs when there is a remote TAP: the peer's
/// address goes on it.
pub const BRIDGE: &str = "br0";
/// The bridged TAPs' MTU: the largest the emulated MANA takes
/// (device-model's `adapter_mtu` less the Ethernet header), so that the
/// guest's jumbo frames cross the bridge (a bridge drops a frame above its
/// output port's MTU).
pub const WIRE_MTU: u32 = 9000;

/// What the peer is asked to set up.
#[derive(Debug)]
pub struct PeerConfig {
    /// The TAP's name inside the namespace.
    pub tap: String,
    /// A second TAP (a guest's second NIC: the selftests' remote end), bridged
    /// with the first in the namespace ([`BRIDGE`]); its descriptor follows the first's.
    pub remote_tap: Option<String>,
    /// The peer's address and prefix length on the TAP.
    pub host: (Ipv4Addr, u8),
    /// The control port.
    pub port: u16,
    /// The Unix socket the TAP's descriptor is sent on.
    pub fd_socket: OwnedFd,
    /// The peer gives up by then.
    pub deadline: Instant,
}

/// The peer could not set up or serve the guest.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// No new network namespace (not root).
    #[error("a new network namespace (unshare CLONE_NEWNET; needs root): {0}")]
    Namespace(std::io::Error),
    /// An interface in the namespace cannot be made or set up.
    #[error("{what}: {error}")]
    Interface {
        /// The interface and the step (`TAP tap0`, `tap0: MTU 9000`, `br0: 192.0.2.1/24`).
        what: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// A TAP's descriptor cannot be sent to the rig.
    #[error("sending {what} to the rig: {error}")]
    SendFd {
        /// Which descriptor.
        what: &'static str,
        /// The OS error.
        error: std::io::Error,
    },
    /// The control port cannot listen.
    #[error("control port {addr}: {error}")]
    ControlPort {
        /// Its address.
        addr: SocketAddrV4,
        /// The OS error.
        error: std::io::Error,
    },
    /// The guest did not connect.
    #[error("waiting for the guest's control connection: {0}")]
    Accept(std::io::Error),
    /// No guest connected before the deadline.
    #[error("no guest before the deadline: {0}")]
    NoGuest(std::io::Error),
    /// The control connection failed.
    #[error("control connection: {0}")]
    Control(std::io::Error),
    /// The plan cannot be sent to the guest.
    #[error("sending the plan: {0}")]
    SendPlan(std::io::Error),
    /// A line did not come.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A line was not the message expected.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The guest speaks another version of the protocol.
    #[error("the guest speaks version {guest}, this peer {PROTOCOL_VERSION}")]
    Version {
        /// The guest's version.
        guest: u32,
    },
    /// The rig made no plan.
    #[error("the rig made no plan: {why}")]
    Refused {
        /// The rig's reason.
        why: String,
    },
    /// No plan came before the deadline.
    #[error("no plan from the rig before the deadline")]
    NoPlan,
    /// The rig's pipe cannot be written.
    #[error("writing to the rig: {0}")]
    Emit(std::io::Error),
}

/// `map_err` for a step of interface `what`.
fn interface(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServeError {
    let what = what.into();
    move |error| ServeError::Interface { what, error }
}

/// Runs the peer: set up, tell the rig ([`PeerEvent`] lines on `events`),
/// take [`RigCommand`]s from `commands` (end of file there ends the process
/// at once), serve guest sessions one after another (each with its
/// [`PeerEvent::Hello`] and [`PeerEvent::Done`], or [`PeerEvent::Dropped`]
/// when its connection broke before the flows).
///
/// # Errors
/// [`ServeError`], naming the step that failed; its text was also sent as
/// [`PeerEvent::Failed`].
pub fn run_peer(
    cfg: PeerConfig,
    commands: impl BufRead + Send + 'static,
    mut events: impl Write,
) -> Result<(), ServeError> {
    let result = serve(cfg, commands, &mut events);
    if let Err(e) = &result {
        let _ = emit(&mut events, &PeerEvent::Failed(e.to_string()));
    }
    result
}

fn emit(events: &mut impl Write, event: &PeerEvent) -> Result<(), ServeError> {
    events.write_all(encode(event).as_bytes()).and_then(|()| events.flush()).map_err(ServeError::Emit)
}

fn serve(cfg: PeerConfig, commands: impl BufRead + Send + 'static, events: &mut impl Write) -> Result<(), ServeError> {
    let (host, prefix) = cfg.host;
    netns::enter_new_namespace().map_err(ServeError::Namespace)?;
    let tap = netns::create_tap(&cfg.tap).map_err(interface(format!("TAP {}", cfg.tap)))?;
    netns::disable_ipv6(&cfg.tap).map_err(interface(format!("TAP {}", cfg.tap)))?;
    netns::configure("lo", None).map_err(interface("lo"))?;
    let remote = match &cfg.remote_tap {
        Some(name) => Some(bridge(&cfg.tap, name)?),
        None => None,
    };
    let addressed = if remote.is_some() { BRIDGE } else { cfg.tap.as_str() };
    netns::configure(addressed, Some((host, prefix))).map_err(interface(format!("{addressed}: {host}/{prefix}")))?;
    send_fd(cfg.fd_socket.as_fd(), tap.as_fd())
        .map_err(|error| ServeError::SendFd { what: "the TAP's descriptor", error })?;
    if let Some(remote) = &remote {
        send_fd(cfg.fd_socket.as_fd(), remote.as_fd())
            .map_err(|error| ServeError::SendFd { what: "the remote TAP's descriptor", error })?;
    }
    // The TAPs live on in the rig's (then the device's and QEMU's) copies.
    drop(tap);
    drop(remote);
    drop(cfg.fd_socket);
    let addr = SocketAddrV4::new(host, cfg.port);
    let listener = control_listener(addr, cfg.deadline).map_err(|error| ServeError::ControlPort { addr, error })?;
    emit(events, &PeerEvent::Ready { tap: cfg.tap.clone(), host, port: cfg.port })?;
    let rig = rig_commands(commands);
    // One guest session after another (a soak's guest runs rounds back to
    // back), until the rig closes stdin (the process ends then) or the deadline.
    loop {
        let (control, _) = match listener.accept() {
            Ok(c) => c,
            Err(e) if Instant::now() >= cfg.deadline => return Err(ServeError::NoGuest(e)),
            Err(e) => return Err(ServeError::Accept(e)),
        };
        match session(control, &rig, cfg.deadline, events)? {
            Ok(outcome) => emit(events, &PeerEvent::Done(Box::new(outcome)))?,
            Err(why) => emit(events, &PeerEvent::Dropped(why))?,
        }
    }
}

/// One guest session on `control`: hello, the rig's plan, both sides of the
/// flows, the guest's results. The inner error is this session's end before
/// any flow ran (the connection broke before the plan: the peer waits for the
/// next guest); the outer one ends the peer (the rig made no plan).
fn session(
    control: std::net::TcpStream,
    rig: &mpsc::Receiver<String>,
    deadline: Instant,
    events: &mut impl Write,
) -> Result<Result<Outcome, String>, ServeError> {
    let clone = match control.try_clone() {
        Ok(c) => c,
        Err(e) => return Ok(Err(format!("control connection: {e}"))),
    };
    let mut reader = BufReader::new(clone);
    let mut writer = control;
    let hello = match read_line(&mut reader, deadline, "the guest's hello")
        .map_err(|e| e.to_string())
        .and_then(|l| decode::<GuestHello>(&l, "the guest's hello").map_err(|e| e.to_string()))
    {
        Ok(h) => h,
        Err(e) => return Ok(Err(e)),
    };
    if hello.version != PROTOCOL_VERSION {
        return Err(ServeError::Version { guest: hello.version });
    }
    emit(events, &PeerEvent::Hello(hello))?;
    let left = deadline.saturating_duration_since(Instant::now());
    let plan = match rig.recv_timeout(left) {
        Ok(line) => match decode::<RigCommand>(&line, "a command from the rig")? {
            RigCommand::Plan(plan) => plan,
            RigCommand::Refuse(why) => {
                let _ = writer.write_all(encode(&why).as_bytes());
                return Err(ServeError::Refused { why });
            }
        },
        Err(_) => return Err(ServeError::NoPlan),
    };
    // Listeners before the guest hears the plan: its connections find them open.
    let (listeners, host_failed) = run::listen(&plan, Side::Host);
    let listening = writer
        .write_all(encode(&plan).as_bytes())
        .map_err(|e| ServeError::SendPlan(e).to_string())
        .and_then(|()| read_line(&mut reader, deadline, "the guest's listeners").map_err(|e| e.to_string()))
        .and_then(|l| decode::<GuestListening>(&l, "the guest's listeners").map_err(|e| e.to_string()));
    let listening = match listening {
        Ok(l) => l,
        Err(e) => return Ok(Err(e)),
    };
    let started = Instant::now();
    let limit = (started + Duration::from_millis(plan.limit_ms)).min(deadline);
    let mut failed: BTreeMap<u32, String> = host_failed.into_iter().collect();
    for id in listening.failed {
        failed.entry(id).or_insert_with(|| "the guest could not listen on its port".into());
    }
    let host_results = run::run(&plan, Side::Host, listeners, &failed, limit);
    let results = read_line(&mut reader, (limit + RESULTS_GRACE).min(deadline), "the guest's results")
        .map_err(ServeError::from)
        .and_then(|l| Ok(decode::<GuestResults>(&l, "the guest's results")?));
    let (guest, error) = match results {
        Ok(r) => (r.flows, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(Ok(Outcome { plan, host: host_results, guest, error, elapsed_ms }))
}

/// The remote TAP `remote` and the bridge [`BRIDGE`] with it and `tap`
/// (created before), all up, without IPv6 (no router or neighbour
/// solicitations of the namespace's own on the guest's wire) and without
/// bridge netfilter (frames cross as they are: [`netns::disable_bridge_netfilter`]).
fn bridge(tap: &str, remote: &str) -> Result<OwnedFd, ServeError> {
    let fd = netns::create_tap(remote).map_err(interface(format!("TAP {remote}")))?;
    netns::create_bridge(BRIDGE).map_err(interface(format!("bridge {BRIDGE}")))?;
    netns::disable_bridge_netfilter().map_err(interface(format!("bridge {BRIDGE}")))?;
    for port in [tap, remote] {
        netns::disable_ipv6(port).map_err(interface(port))?;
        netns::set_mtu(port, WIRE_MTU).map_err(interface(format!("{port}: MTU {WIRE_MTU}")))?;
        netns::add_to_bridge(BRIDGE, port).map_err(interface(format!("{port} into {BRIDGE}")))?;
        netns::configure(port, None).map_err(interface(port))?;
    }
    netns::disable_ipv6(BRIDGE).map_err(interface(BRIDGE))?;
    Ok(fd)
}

/// The control port, listening, with `accept()` bounded by `deadline`.
fn control_listener(addr: SocketAddrV4, deadline: Instant) -> std::io::Result<TcpListener> {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&SockAddr::from(addr))?;
    socket.listen(4)?;
    socket.set_read_timeout(Some(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))))?;
    Ok(TcpListener::from(socket))
}

/// A thread reading the rig's command lines; end of file (the rig is done or
/// gone) ends the process at once: nothing of the peer needs cleaning up.
fn rig_commands(commands: impl BufRead + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in commands.lines() {
            match line {
                Ok(l) if l.trim().is_empty() => {}
                Ok(l) => {
                    if tx.send(l).is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        std::process::exit(0);
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_without_privileges_or_with_a_bad_tap_name_fails_with_a_line_saying_so() {
        let (a, _b) = std::os::unix::net::UnixDatagram::pair().expect("pair");
        let cfg = PeerConfig {
            tap: "a-name-that-is-far-too-long".into(),
            remote_tap: None,
            host: (Ipv4Addr::new(192, 0, 2, 1), 24),
            port: 7000,
            fd_socket: OwnedFd::from(a),
            deadline: Instant::now() + Duration::from_secs(1),
        };
        // In a child process: the peer moves its process into a new namespace.
        let child = std::thread::spawn(move || {
            let mut out = Vec::new();
            let r = run_peer(cfg, std::io::Cursor::new(Vec::new()), &mut out);
            (r, String::from_utf8_lossy(&out).into_owned())
        });
        let (r, out) = child.join().expect("thread");
        let e = r.expect_err("cannot succeed");
        assert!(out.contains("Failed"), "{out}");
        assert!(matches!(e, ServeError::Namespace(_) | ServeError::Interface { .. }), "{e}");
    }
}
