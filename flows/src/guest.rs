//! The guest's end (`manarig-flows guest`): connect to the peer's control
//! port through the emulated NIC, say hello, take the plan, open the
//! listeners for the flows the peer opens, run the guest's side of every
//! flow, and send the results back.

use crate::proto::{
    decode, encode, DecodeError, GuestHello, GuestListening, GuestResults, Plan, Side, PROTOCOL_VERSION,
};
use crate::run;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::time::{Duration, Instant};

/// What the guest end needs to know.
#[derive(Debug, Clone)]
pub struct GuestConfig {
    /// The peer's control address.
    pub peer: SocketAddrV4,
    /// This guest's address on the NIC.
    pub guest: Ipv4Addr,
    /// Everything (connect, plan, flows, results) ends by then.
    pub deadline: Instant,
}

/// Pause between connection attempts while the peer is not reachable yet
/// (ARP and the link settle within milliseconds; the deadline bounds it).
const RETRY: Duration = Duration::from_millis(50);

/// The guest's end could not run.
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    /// The peer's control port did not answer in time.
    #[error("no control connection to {addr} before the deadline")]
    NoPeer {
        /// The peer's control address.
        addr: SocketAddrV4,
    },
    /// Connecting failed for a reason waiting does not cure.
    #[error("connect to {addr}: {error}")]
    Connect {
        /// The peer's control address.
        addr: SocketAddrV4,
        /// The OS error.
        error: std::io::Error,
    },
    /// The control connection failed.
    #[error("control connection: {0}")]
    Control(std::io::Error),
    /// A line did not come.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A line was not the message expected.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The peer speaks another version of the protocol.
    #[error("the peer speaks version {peer}, this guest tool {PROTOCOL_VERSION}")]
    Version {
        /// The peer's version.
        peer: u32,
    },
    /// The plan is for another guest address.
    #[error("the plan is for guest {planned}, this guest is {guest}")]
    WrongGuest {
        /// The plan's guest.
        planned: Ipv4Addr,
        /// This guest.
        guest: Ipv4Addr,
    },
}

/// A line from the control connection that did not come.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The deadline passed.
    #[error("{what} did not come before the deadline")]
    Deadline {
        /// What was awaited.
        what: String,
    },
    /// The other end closed the connection.
    #[error("the connection closed while waiting for {what}")]
    Closed {
        /// What was awaited.
        what: String,
    },
    /// The socket failed.
    #[error("waiting for {what}: {error}")]
    Io {
        /// What was awaited.
        what: String,
        /// The OS error.
        error: std::io::Error,
    },
}

/// Runs the guest's end. Returns the results it sent to the peer.
///
/// # Errors
/// [`GuestError`], naming the step that failed (connect, a message, the deadline).
pub fn run_guest(cfg: &GuestConfig) -> Result<GuestResults, GuestError> {
    let control = connect(cfg)?;
    let mut reader = BufReader::new(control.try_clone().map_err(GuestError::Control)?);
    let mut writer = control;
    let send = |w: &mut TcpStream, line: String| w.write_all(line.as_bytes()).map_err(GuestError::Control);
    send(&mut writer, encode(&GuestHello { version: PROTOCOL_VERSION, guest: cfg.guest }))?;
    let plan: Plan = decode(&read_line(&mut reader, cfg.deadline, "the plan")?, "the plan")?;
    if plan.version != PROTOCOL_VERSION {
        return Err(GuestError::Version { peer: plan.version });
    }
    if plan.guest != cfg.guest {
        return Err(GuestError::WrongGuest { planned: plan.guest, guest: cfg.guest });
    }
    let (listeners, failed) = run::listen(&plan, Side::Guest);
    send(&mut writer, encode(&GuestListening { failed: failed.iter().map(|(id, _)| *id).collect() }))?;
    let limit = Instant::now() + Duration::from_millis(plan.limit_ms);
    let failed: BTreeMap<u32, String> = failed.into_iter().collect();
    let results =
        GuestResults { flows: run::run_parked(&plan, Side::Guest, listeners, &failed, limit.min(cfg.deadline)) };
    send(&mut writer, encode(&results))?;
    Ok(results)
}

fn connect(cfg: &GuestConfig) -> Result<TcpStream, GuestError> {
    let addr = SocketAddr::V4(cfg.peer);
    loop {
        let left = cfg.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(GuestError::NoPeer { addr: cfg.peer });
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => return Ok(s),
            // Not reachable yet (no route or neighbour yet, nothing listening): try again.
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionRefused | ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable
                ) =>
            {
                std::thread::sleep(RETRY.min(left));
            }
            Err(error) => return Err(GuestError::Connect { addr: cfg.peer, error }),
        }
    }
}

/// One line from the control connection before `deadline`.
///
/// # Errors
/// [`ReadError`]: the deadline, end of file, or the socket's error, naming
/// `what` was awaited.
pub fn read_line(reader: &mut BufReader<TcpStream>, deadline: Instant, what: &str) -> Result<String, ReadError> {
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    let io = |error| ReadError::Io { what: what.to_owned(), error };
    reader.get_ref().set_read_timeout(Some(left)).map_err(io)?;
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(0) => Err(ReadError::Closed { what: what.to_owned() }),
        Ok(_) => Ok(line),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            Err(ReadError::Deadline { what: what.to_owned() })
        }
        Err(e) => Err(io(e)),
    }
}
