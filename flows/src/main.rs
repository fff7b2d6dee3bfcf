//! `manarig-flows`: both ends of manarig's traffic (see the library's docs).
//!
//! - `manarig-flows guest --peer IP:PORT --guest IP [--deadline S]`: the
//!   guest's end; prints the guest's result of each flow as a JSON line on
//!   stdout; exit 0 when every flow was verified, 1 when some was not, 2 when
//!   it could not run (the reason on stderr).
//! - `manarig-flows peer --fd-socket FD --host IP/PREFIX [--tap NAME]
//!   [--remote-tap NAME] [--port PORT] [--deadline S]`: the host's end, started by the rig (see
//!   `manarig_flows::peer`); exit 0, or 2 with the reason on stderr.
//!
//! In the guest this binary finds only `libc.so.6` and the loader (the
//! initramfs has those for ethtool): the GCC unwinder is linked in
//! statically below instead of `libgcc_s.so.1`.

use clap::{Parser, Subcommand};
use manarig_flows::guest::{run_guest, GuestConfig};
use manarig_flows::peer::{run_peer, PeerConfig};
use manarig_flows::proto::encode;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::ExitCode;
use std::time::{Duration, Instant};

// The unwinder (`_Unwind_*`, which std's panics and backtraces call) from
// GCC's static libgcc_eh.a, linked whole before std asks for libgcc_s.so.1:
// the linker then finds every symbol already defined and, with --as-needed,
// records no dependency on libgcc_s.so.1 (which the guest does not have).
// This is what `gcc -static-libgcc` does.
#[link(name = "gcc_eh", kind = "static", modifiers = "+whole-archive")]
extern "C" {}

#[derive(Debug, Parser)]
#[command(name = "manarig-flows", version, about = "manarig's traffic tool (both ends)")]
struct Args {
    #[command(subcommand)]
    role: Role,
}

#[derive(Debug, Subcommand)]
enum Role {
    /// The guest's end: connect to the peer, run the plan it sends.
    Guest {
        /// The peer's control address.
        #[arg(long)]
        peer: SocketAddrV4,
        /// This guest's address on the NIC.
        #[arg(long)]
        guest: Ipv4Addr,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 60)]
        deadline: u64,
    },
    /// The host's end in a new network namespace (started by the rig).
    Peer {
        /// An inherited Unix socket to send the TAP's descriptor on.
        #[arg(long, value_name = "FD")]
        fd_socket: i32,
        /// The TAP's name in the namespace.
        #[arg(long, default_value = "tap0")]
        tap: String,
        /// A second TAP, bridged with the first (its descriptor is sent second).
        #[arg(long)]
        remote_tap: Option<String>,
        /// The peer's address and prefix length, e.g. 192.0.2.1/24.
        #[arg(long, value_parser = parse_cidr)]
        host: (Ipv4Addr, u8),
        /// The control port.
        #[arg(long, default_value_t = 7000)]
        port: u16,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 900)]
        deadline: u64,
    },
}

/// A `--host` that is not `ADDRESS/PREFIX`.
#[derive(Debug, thiserror::Error)]
enum CidrError {
    /// No `/`.
    #[error("{text:?}: expected ADDRESS/PREFIX")]
    NoPrefix { text: String },
    /// Not an IPv4 address.
    #[error("{text:?}: {error}")]
    Address { text: String, error: std::net::AddrParseError },
    /// Not a number.
    #[error("{text:?}: {error}")]
    Prefix { text: String, error: std::num::ParseIntError },
    /// A prefix above 32.
    #[error("{text:?}: prefix above 32")]
    TooLong { text: String },
}

fn parse_cidr(text: &str) -> Result<(Ipv4Addr, u8), CidrError> {
    let (ip, prefix) = text.split_once('/').ok_or_else(|| CidrError::NoPrefix { text: text.to_owned() })?;
    let ip = ip.parse().map_err(|error| CidrError::Address { text: text.to_owned(), error })?;
    let prefix: u8 = prefix.parse().map_err(|error| CidrError::Prefix { text: text.to_owned(), error })?;
    if prefix > 32 {
        return Err(CidrError::TooLong { text: text.to_owned() });
    }
    Ok((ip, prefix))
}

/// An `--fd-socket` that is not an inherited descriptor.
#[derive(Debug, thiserror::Error)]
enum FdError {
    /// 0, 1 or 2.
    #[error("--fd-socket {fd}: 0-2 are stdin, stdout and stderr")]
    Standard { fd: i32 },
    /// Not open.
    #[error("--fd-socket {fd}: not an open descriptor ({error})")]
    NotOpen { fd: i32, error: std::io::Error },
}

/// Takes ownership of the inherited descriptor `fd`.
fn inherited(fd: i32) -> Result<OwnedFd, FdError> {
    if fd < 3 {
        return Err(FdError::Standard { fd });
    }
    // SAFETY: fcntl(F_GETFD) only checks that `fd` is open.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(FdError::NotOpen { fd, error: std::io::Error::last_os_error() });
    }
    // SAFETY: `fd` is open, was inherited for this purpose, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn main() -> ExitCode {
    let args = Args::parse();
    match args.role {
        Role::Guest { peer, guest, deadline } => {
            let cfg = GuestConfig { peer, guest, deadline: Instant::now() + Duration::from_secs(deadline) };
            match run_guest(&cfg) {
                Ok(results) => {
                    for r in &results.flows {
                        print!("{}", encode(r));
                    }
                    if results.flows.iter().all(|r| r.verified) {
                        ExitCode::SUCCESS
                    } else {
                        for r in results.flows.iter().filter(|r| !r.verified) {
                            eprintln!("flow {}: {}", r.id, r.error.as_deref().unwrap_or("not verified"));
                        }
                        ExitCode::from(1)
                    }
                }
                Err(e) => {
                    eprintln!("manarig-flows: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Role::Peer { fd_socket, tap, remote_tap, host, port, deadline } => {
            let fd_socket = match inherited(fd_socket) {
                Ok(fd) => fd,
                Err(e) => {
                    eprintln!("manarig-flows: {e}");
                    return ExitCode::from(2);
                }
            };
            let deadline = Instant::now() + Duration::from_secs(deadline);
            let cfg = PeerConfig { tap, remote_tap, host, port, fd_socket, deadline };
            let stdin = std::io::BufReader::new(std::io::stdin());
            match run_peer(cfg, stdin, std::io::stdout()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("manarig-flows: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
