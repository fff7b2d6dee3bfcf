//! The guest's end (`manarig-flows guest`): connect to the peer's control
//! port through the emulated NIC, say hello, take the plan, open the
//! listeners for the flows the peer opens, run the guest's side of every
//! flow, and send the results back.

use crate::proto::{decode, encode, GuestHello, GuestListening, GuestResults, Plan, Side, PROTOCOL_VERSION};
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

/// Runs the guest's end. Returns the results it sent to the peer.
///
/// # Errors
/// A line naming the step that failed (connect, a message, the deadline).
pub fn run_guest(cfg: &GuestConfig) -> Result<GuestResults, String> {
    let control = connect(cfg)?;
    let mut reader = BufReader::new(control.try_clone().map_err(|e| format!("control connection: {e}"))?);
    let mut writer = control;
    let send =
        |w: &mut TcpStream, line: String| w.write_all(line.as_bytes()).map_err(|e| format!("control connection: {e}"));
    send(&mut writer, encode(&GuestHello { version: PROTOCOL_VERSION, guest: cfg.guest }))?;
    let plan: Plan = decode(&read_line(&mut reader, cfg.deadline, "the plan")?, "the plan")?;
    if plan.version != PROTOCOL_VERSION {
        return Err(format!("the peer speaks version {}, this guest tool {PROTOCOL_VERSION}", plan.version));
    }
    if plan.guest != cfg.guest {
        return Err(format!("the plan is for guest {}, this guest is {}", plan.guest, cfg.guest));
    }
    let (listeners, failed) = run::listen(&plan, Side::Guest);
    send(&mut writer, encode(&GuestListening { failed: failed.iter().map(|(id, _)| *id).collect() }))?;
    let limit = Instant::now() + Duration::from_millis(plan.limit_ms);
    let failed: BTreeMap<u32, String> = failed.into_iter().collect();
    let results = GuestResults { flows: run::run(&plan, Side::Guest, listeners, &failed, limit.min(cfg.deadline)) };
    send(&mut writer, encode(&results))?;
    Ok(results)
}

fn connect(cfg: &GuestConfig) -> Result<TcpStream, String> {
    let addr = SocketAddr::V4(cfg.peer);
    loop {
        let left = cfg.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("no control connection to {addr} before the deadline"));
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
            Err(e) => return Err(format!("connect to {addr}: {e}")),
        }
    }
}

/// One line from the control connection before `deadline`.
///
/// # Errors
/// The deadline, end of file, or the socket's error, naming `what` was awaited.
pub fn read_line(reader: &mut BufReader<TcpStream>, deadline: Instant, what: &str) -> Result<String, String> {
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    reader.get_ref().set_read_timeout(Some(left)).map_err(|e| format!("waiting for {what}: {e}"))?;
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(0) => Err(format!("the connection closed while waiting for {what}")),
        Ok(_) => Ok(line),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            Err(format!("{what} did not come before the deadline"))
        }
        Err(e) => Err(format!("waiting for {what}: {e}")),
    }
}
