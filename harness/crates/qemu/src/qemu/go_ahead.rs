//! The host's end of the agent's handshake (guest-images/README.md, "Markers"):
//! after a mark the agent waits at ([`Marker::awaits_go_ahead`]: the final
//! unload's), the launcher writes [`GO_AHEAD`] to the input of the port the mark
//! came on, once the marker hook has returned (the device's status is taken):
//! QEMU's stdin for the console, the report channel's `report.in` FIFO for
//! ttyS1 ([`super::report_port`]).
//!
//! Both ends are non-blocking: a guest that never reads its port must not hold
//! up the reader thread that answers (the line is a few bytes into a 64 KiB
//! pipe, so a write that would block means the guest has stopped reading, and
//! the agent's own deadline covers a lost answer).

use crate::guest_protocol::{Marker, GO_AHEAD};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Where the answers to one port's marks go.
pub struct GoAheadPort {
    input: File,
    /// The port, for the warning when an answer cannot be written.
    port: &'static str,
}

impl GoAheadPort {
    /// The console's input: QEMU's stdin (`-chardev stdio`), a pipe the
    /// launcher holds the writing end of.
    ///
    /// # Errors
    /// The pipe cannot be made non-blocking (fcntl).
    pub fn console(stdin: impl Into<OwnedFd>) -> std::io::Result<GoAheadPort> {
        let input = File::from(stdin.into());
        set_nonblocking(&input)?;
        Ok(GoAheadPort { input, port: "the console's input (QEMU's stdin)" })
    }

    /// The report channel's input: its `report.in` FIFO, opened read-write (so
    /// that the open does not wait for QEMU, which opens it as it starts) and
    /// non-blocking.
    ///
    /// # Errors
    /// The FIFO cannot be opened.
    pub fn fifo(path: &Path) -> std::io::Result<GoAheadPort> {
        let input = std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_NONBLOCK).open(path)?;
        Ok(GoAheadPort { input, port: "the report channel's input" })
    }

    /// After `line`, whose mark is `marker`, has been passed to the marker
    /// hook: answer it with [`GO_AHEAD`] when it is a mark the agent waits
    /// at; whether it did. A failed write is logged: the agent's wait ends by
    /// itself (`unload-handshake: timeout`).
    pub fn answer(&mut self, marker: &Marker, line: &str) -> bool {
        if !marker.awaits_go_ahead() {
            return false;
        }
        let sent = self.input.write_all(format!("{GO_AHEAD}\n").as_bytes()).and_then(|()| self.input.flush());
        if let Err(e) = &sent {
            tracing::warn!(
                "cannot answer {:?} on {}: {e}; the guest goes on after its own wait",
                line.trim(),
                self.port
            );
        }
        sent.is_ok()
    }
}

/// Set O_NONBLOCK on `file`'s descriptor.
fn set_nonblocking(file: &File) -> std::io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl(2) on a descriptor `file` owns and keeps open across both
    // calls; F_GETFL/F_SETFL touch only its status flags.
    let ok = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Answers `line` as the reader does: only a line that is a mark reaches the port.
    fn answer_line(port: &mut GoAheadPort, line: &str) -> bool {
        Marker::parse(line).is_some_and(|m| port.answer(&m, line))
    }

    #[test]
    fn only_a_mark_the_agent_waits_at_is_answered_with_one_go_ahead_line() {
        // A socket pair stands in for QEMU's stdin pipe (std's pipe() is newer than the MSRV).
        let (mut reader, writer) = std::os::unix::net::UnixStream::pair().expect("socket pair");
        let mut port = GoAheadPort::console(writer).expect("console port");
        for other in ["MANARIG-REPORT-BEGIN 3", "MANARIG-SELFTEST 2", "MANARIG-SOAK sample 1", "booting"] {
            assert!(!answer_line(&mut port, other), "{other}");
        }
        assert!(answer_line(&mut port, "MANARIG-UNLOAD\r"));
        drop(port);
        let mut got = String::new();
        reader.read_to_string(&mut got).expect("read");
        assert_eq!(got, "MANARIG-GO\n");
    }

    #[test]
    fn an_answer_nobody_reads_fails_instead_of_blocking() {
        let (reader, writer) = std::os::unix::net::UnixStream::pair().expect("socket pair");
        let mut port = GoAheadPort::console(writer).expect("console port");
        // Fill the buffer as a guest that never reads would.
        let mut sent = 0;
        while answer_line(&mut port, "MANARIG-UNLOAD") {
            sent += 1;
            assert!(sent < 1_000_000, "a socket's buffer is full long before this");
        }
        assert!(sent > 0);
        drop(reader);
    }

    #[test]
    fn the_fifo_opens_before_qemu_does_and_carries_the_answer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("report.in");
        let c = std::ffi::CString::new(path.to_str().expect("utf-8")).expect("no NUL");
        // SAFETY: mkfifo(3) reads the NUL-terminated string `c`, which lives across the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut port = GoAheadPort::fifo(&path).expect("opens without a reader");
        // QEMU's end: read-write, as its pipe chardev opens it.
        let mut qemu = std::fs::OpenOptions::new().read(true).write(true).open(&path).expect("open as QEMU does");
        assert!(answer_line(&mut port, "MANARIG-UNLOAD"));
        let mut buf = [0u8; 11];
        qemu.read_exact(&mut buf).expect("read");
        assert_eq!(&buf, b"MANARIG-GO\n");
    }
}
