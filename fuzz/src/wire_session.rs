//! A vfio-user session from raw bytes: the `vfio_wire` target's input is a
//! sequence of segments `[fds u8][len u16][len bytes]`, each sent with one
//! `sendmsg` carrying the fds `fds % 4` says (0 none, 1 a 1 MiB memfd, 2 an
//! eventfd, 3 both), over a socketpair whose other end a fresh
//! [`DeviceServer`] serves. Replies are read until the server closes.

use crate::input::Input;
use crate::targets::config;
use device_model::shell::server::DeviceServer;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;
use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};
use vmm_sys_util::sock_ctrl_msg::ScmSocket;

/// One segment of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// 0 none, 1 a memfd of 1 MiB, 2 an eventfd, 3 both.
    pub fds: u8,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// Decodes the segments of `data`.
pub fn decode(data: &[u8]) -> Vec<Segment> {
    let mut input = Input::new(data);
    let mut segments = Vec::new();
    while let (Some(fds), Some(len)) = (input.u8(), input.u16()) {
        let bytes = input.take_up_to(usize::from(len)).to_vec();
        segments.push(Segment { fds: fds % 4, bytes });
    }
    segments
}

/// Encodes `segments` as one input.
pub fn encode(segments: &[Segment]) -> Vec<u8> {
    let mut out = Vec::new();
    for segment in segments {
        out.push(segment.fds);
        out.extend_from_slice(&(segment.bytes.len() as u16).to_le_bytes());
        out.extend_from_slice(&segment.bytes);
    }
    out
}

fn send(stream: &UnixStream, segment: &Segment) -> std::io::Result<()> {
    let ram = memfd::MemfdOptions::default().create("ram").map_err(std::io::Error::other)?.into_file();
    ram.set_len(1 << 20)?;
    let efd = EventFd::new(EFD_NONBLOCK)?;
    let fds: Vec<i32> = match segment.fds {
        1 => vec![ram.as_raw_fd()],
        2 => vec![efd.as_raw_fd()],
        3 => vec![ram.as_raw_fd(), efd.as_raw_fd()],
        _ => Vec::new(),
    };
    let mut rest = &segment.bytes[..];
    if !fds.is_empty() && !rest.is_empty() {
        let sent = stream.send_with_fds(&[rest], &fds).map_err(|e| std::io::Error::from_raw_os_error(e.errno()))?;
        rest = &rest[sent..];
    }
    let mut stream = stream;
    stream.write_all(rest)
}

/// Runs one session over `data`.
pub fn run(data: &[u8]) {
    static IGNORE_SIGPIPE: Once = Once::new();
    static SESSION: AtomicU64 = AtomicU64::new(0);
    // A write to a socket the server closed must be an error, not a signal
    // (libFuzzer's main, unlike Rust's, leaves SIGPIPE at its default).
    // SAFETY: setting a signal disposition to SIG_IGN; no handler runs.
    IGNORE_SIGPIPE.call_once(|| unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    });
    let segments = decode(data);
    let n = SESSION.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("manarig-fuzz-{}-{n}.sock", std::process::id()));
    let config = config();
    let Ok(server) = DeviceServer::bind(&path, config.clone(), device_model::factory(config)) else {
        return;
    };
    let Ok((ours, theirs)) = UnixStream::pair() else {
        return;
    };
    std::thread::scope(|scope| {
        let serving = scope.spawn(|| server.serve(theirs));
        let writer = ours.try_clone();
        scope.spawn(move || {
            if let Ok(writer) = writer {
                for segment in &segments {
                    if send(&writer, segment).is_err() {
                        break;
                    }
                }
                let _ = writer.shutdown(std::net::Shutdown::Write);
            }
        });
        let mut replies = Vec::new();
        let _ = (&ours).read_to_end(&mut replies);
        let _ = serving.join();
    });
}
