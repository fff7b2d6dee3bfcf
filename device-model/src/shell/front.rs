//! The device's front on the vfio-user socket: every client message passes
//! here, is checked ([`crate::shell::vfio_wire::check`]) and is handed to the `vfio_user`
//! crate's server over a private socket; every reply comes back through
//! here on its way to the client.
//!
//! Why a front: the `vfio_user` 0.1.7 server answers a refusal of its backend
//! (our [`crate::shell::server`]) with an error reply whose errno is 0 (it sets one
//! only for its own `InvalidInput`), and QEMU returns `-error` = 0: a refused
//! DMA_MAP or SET_IRQS looked like a success. Its backend trait can only
//! return `std::io::Error`, which it wraps in an error that carries no errno,
//! so the errno cannot be passed through it. Instead the backend records the
//! errno of each refusal in [`Refusals`], and the front writes it into the
//! error reply. The crate also trusts the client's framing (see
//! [`crate::shell::vfio_wire`]); the front refuses what it cannot take, with an errno,
//! before it reaches it.
//!
//! One message at a time: the front forwards a message, waits for the
//! crate's reply (NO_REPLY is cleared on the way in so that there always is
//! one, and the reply is dropped on the way out), so the recorded errno
//! always belongs to the message whose reply is being read. A NO_REPLY
//! message gets no reply, not even an error one (QEMU would take it for an
//! unexpected reply); its refusal is logged.
//!
//! The client's framing errors that leave no way to find the next message (a
//! size below the header or above [`vfio_wire::MAX_MESSAGE`], a connection that
//! ends inside a message) end the connection.
//!
//! Cost: one more socket hop per message (two thread wake-ups). Measured on
//! the loaded 2-core build machine, a BAR0 REGION_READ round trip took
//! 175 µs through the front with the MANA core against 63 µs for the crate
//! alone with a no-op backend; a seed-002 boot under the same load still
//! passed. A server loop of our own, or an errno-carrying error in the
//! crate's backend trait, would remove the hop.

use crate::defs::Le32;
use crate::shell::vfio_wire::{self, Header, Verdict, HEADER_SIZE};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use thiserror::Error;
use vmm_sys_util::sock_ctrl_msg::ScmSocket;
use zerocopy::{FromBytes, IntoBytes};

/// File descriptors one message may carry (`VFIO_USER_MAX_MAX_FDS`, what
/// the `vfio_user` crate receives); a message with more is refused (EINVAL).
pub const MAX_FDS: usize = 16;
/// File descriptors one `recvmsg` can bring at most (`SCM_MAX_FD`,
/// include/net/scm.h): the front takes them all, so that a message with
/// more than [`MAX_FDS`] is read whole and refused instead of leaving the
/// stream in an unknown place (a truncated control message fails the
/// `recvmsg` after its bytes were read).
const SCM_MAX_FD: usize = 253;
/// Refused client messages logged at `warn` one by one; after that every
/// power of two.
const LOG_LIMIT: u64 = 32;

/// The errno of the backend's last refusal, and counters; shared between the
/// backend (which records) and the front (which takes).
#[derive(Debug, Default)]
pub struct Refusals {
    last: Mutex<Option<i32>>,
    refused_by_front: AtomicU64,
    refused_by_device: AtomicU64,
}

impl Refusals {
    /// Records that the device refused the message being handled with `errno`.
    pub fn record(&self, errno: i32) {
        self.refused_by_device.fetch_add(1, Ordering::Relaxed);
        *self.slot() = Some(errno);
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<i32>> {
        self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn take(&self) -> Option<i32> {
        self.slot().take()
    }

    fn refused_here(&self) -> u64 {
        self.refused_by_front.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Client messages the front refused (bad framing, unknown command, ...).
    pub fn refused_by_front(&self) -> u64 {
        self.refused_by_front.load(Ordering::Relaxed)
    }

    /// Client messages the device refused (DMA_MAP, DMA_UNMAP, SET_IRQS).
    pub fn refused_by_device(&self) -> u64 {
        self.refused_by_device.load(Ordering::Relaxed)
    }
}

/// Why the front stopped serving.
#[derive(Debug, Error)]
pub enum FrontError {
    /// Reading from or writing to the client failed.
    #[error("vfio-user client socket")]
    Client(#[source] io::Error),
    /// The client's message cannot be framed; the connection is closed.
    #[error("vfio-user client message: {0}")]
    Framing(String),
    /// The `vfio_user` server behind the front closed its socket or sent
    /// something that is not a reply.
    #[error("the vfio-user server stopped answering: {0}")]
    Server(String),
}

/// One client message with the fds that came with its header.
struct Message {
    header: Header,
    body: Vec<u8>,
    fds: Vec<File>,
}

/// Serves `client` through the front until it disconnects (`Ok`), handing
/// checked messages to the `vfio_user` server on `server` (which announces
/// `regions` regions) and its replies back, with the errnos the backend
/// recorded in `refusals`.
///
/// # Errors
/// [`FrontError`] when either socket fails or the client's framing is lost.
pub fn relay(client: &UnixStream, server: &UnixStream, refusals: &Refusals, regions: u32) -> Result<(), FrontError> {
    while let Some(message) = read_message(client)? {
        let Message { header, body, fds } = message;
        let quiet = header.no_reply();
        let verdict = if fds.len() > MAX_FDS {
            let reason = format!("command {} carries {} fds (at most {MAX_FDS})", header.command.get(), fds.len());
            Verdict::Refuse { errno: libc::EINVAL, reason }
        } else {
            vfio_wire::check(&header, &body, regions)
        };
        match verdict {
            Verdict::Refuse { errno, reason } => {
                drop(fds);
                let count = refusals.refused_here();
                if count <= LOG_LIMIT || count.is_power_of_two() {
                    tracing::warn!(count, errno, "vfio-user message refused: {reason}");
                }
                if !quiet {
                    write_client(client, header.error_reply(errno).as_bytes())?;
                }
            }
            Verdict::Forward(bytes) => {
                refusals.take();
                forward(server, &bytes, &fds)?;
                drop(fds);
                let mut reply = read_reply(server)?;
                let (mut rh, _) =
                    Header::read_from_prefix(&reply).map_err(|_| FrontError::Server("short reply".into()))?;
                if rh.is_error() && rh.error.get() == 0 {
                    let errno = refusals.take().unwrap_or(libc::EINVAL);
                    rh.error = Le32::new(errno.unsigned_abs());
                    reply[..HEADER_SIZE].copy_from_slice(rh.as_bytes());
                }
                if !quiet {
                    write_client(client, &reply)?;
                } else if rh.is_error() {
                    tracing::debug!(
                        command = rh.command.get(),
                        errno = rh.error.get(),
                        "vfio-user NO_REPLY message refused"
                    );
                }
            }
        }
    }
    Ok(())
}

fn write_client(client: &UnixStream, bytes: &[u8]) -> Result<(), FrontError> {
    let mut client = client;
    client.write_all(bytes).map_err(FrontError::Client)
}

/// Reads one whole message from the client; `None` at a clean end (no byte
/// of a new message).
fn read_message(client: &UnixStream) -> Result<Option<Message>, FrontError> {
    let mut raw = [0u8; HEADER_SIZE];
    let (got, fds) = loop {
        match recv_header(client, &mut raw) {
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            result => break result.map_err(FrontError::Client)?,
        }
    };
    if got == 0 {
        return Ok(None);
    }
    let mut reader = client;
    reader
        .read_exact(&mut raw[got..])
        .map_err(|err| FrontError::Framing(format!("connection ended inside a header: {err}")))?;
    let (header, _) = Header::read_from_prefix(&raw).map_err(|_| FrontError::Framing("unreadable header".into()))?;
    let size = header.message_size.get();
    if (size as usize) < HEADER_SIZE || size > vfio_wire::MAX_MESSAGE {
        // Nothing tells where the next message starts: answer (a client
        // waiting for a reply learns why) and close.
        if !header.no_reply() {
            let errno = if size > vfio_wire::MAX_MESSAGE { libc::E2BIG } else { libc::EINVAL };
            write_client(client, header.error_reply(errno).as_bytes())?;
        }
        return Err(FrontError::Framing(format!(
            "command {} of {size} bytes (16..={} allowed)",
            header.command.get(),
            vfio_wire::MAX_MESSAGE
        )));
    }
    let mut body = vec![0u8; size as usize - HEADER_SIZE];
    reader
        .read_exact(&mut body)
        .map_err(|err| FrontError::Framing(format!("connection ended inside a message: {err}")))?;
    Ok(Some(Message { header, body, fds }))
}

/// `recvmsg` of up to `raw.len()` bytes with every fd that came along (up
/// to [`SCM_MAX_FD`], all a message can carry).
fn recv_header(client: &UnixStream, raw: &mut [u8]) -> io::Result<(usize, Vec<File>)> {
    let mut fds: [RawFd; SCM_MAX_FD] = [-1; SCM_MAX_FD];
    let mut iov = [libc::iovec { iov_base: raw.as_mut_ptr().cast(), iov_len: raw.len() }];
    // SAFETY: the iovec points at `raw`, borrowed mutably for the whole call,
    // and any bytes may be written to a u8 slice.
    let (got, count) =
        unsafe { client.recv_with_fds(&mut iov, &mut fds) }.map_err(|err| io::Error::from_raw_os_error(err.errno()))?;
    let files = fds[..count]
        .iter()
        // SAFETY: recv_with_fds returned `count` fds that this process now
        // owns and nothing else refers to.
        .map(|&fd| unsafe { File::from_raw_fd(fd) })
        .collect();
    Ok((got, files))
}

/// Sends `bytes` to the server, the fds with the header as the crate reads them.
fn forward(server: &UnixStream, bytes: &[u8], fds: &[File]) -> Result<(), FrontError> {
    let gone = |err: io::Error| FrontError::Server(format!("cannot send: {err}"));
    let mut rest = bytes;
    if !fds.is_empty() {
        let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
        let head = &bytes[..HEADER_SIZE];
        let sent =
            server.send_with_fds(&[head], &raw).map_err(|err| gone(io::Error::from_raw_os_error(err.errno())))?;
        rest = &bytes[sent..];
    }
    let mut server = server;
    server.write_all(rest).map_err(gone)
}

/// Reads one reply from the server.
fn read_reply(server: &UnixStream) -> Result<Vec<u8>, FrontError> {
    let gone = |err: io::Error| FrontError::Server(err.to_string());
    let mut reader = server;
    let mut raw = [0u8; HEADER_SIZE];
    reader.read_exact(&mut raw).map_err(gone)?;
    let (header, _) =
        Header::read_from_prefix(&raw).map_err(|_| FrontError::Server("unreadable reply header".into()))?;
    let size = header.message_size.get();
    if (size as usize) < HEADER_SIZE || size > vfio_wire::MAX_MESSAGE {
        return Err(FrontError::Server(format!("reply of {size} bytes")));
    }
    let mut reply = vec![0u8; size as usize];
    reply[..HEADER_SIZE].copy_from_slice(&raw);
    reader.read_exact(&mut reply[HEADER_SIZE..]).map_err(gone)?;
    Ok(reply)
}
