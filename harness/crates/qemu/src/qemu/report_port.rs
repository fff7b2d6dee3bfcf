//! The host end of the guest agent's report channel
//! ([`crate::guest_protocol::ReportChannel::Ttys1`]): QEMU's second serial port
//! (COM2, the guest's `/dev/ttyS1`) on a `pipe` chardev, i.e. the FIFOs
//! `report.in` and `report.out` in the boot's temporary folder. Nothing but the
//! agent writes there, so no kernel message can interleave with the report.
//!
//! A FIFO, not a unix socket: QEMU's UART hands its chardev one byte per write,
//! and on a socket each byte is a `sendmsg` and a wake-up of the reader. Writing
//! 20 KB to ttyS1 took 0.24-0.28 s with a socket chardev and 0.08-0.11 s with
//! the pipe, as much as the console's stdio pipe (seed 002, `6.12-min`, same boots).

use super::go_ahead::GoAheadPort;
use super::watch::{forward_lines, MarkerHook, Msg, Source};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

/// QEMU's chardev id for the port.
const CHARDEV_ID: &str = "report";

/// The line [`ReportPort::finish`] writes into `report.out` once QEMU is gone, to
/// end the reader: the host holds the FIFO open for reading and writing (so that
/// neither the host's nor QEMU's open waits for the other), hence it never sees
/// an end of file. A NUL byte: the agent's lines are text.
const END_OF_CHANNEL: &str = "\0manarig: end of the report channel\0";

/// Create a FIFO at `path` (mode 0600).
fn mkfifo(path: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: mkfifo(3) reads the NUL-terminated string `c`, which lives across the call.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A report channel: its FIFOs, then its reader thread.
pub struct ReportPort {
    /// The FIFOs' common path without `.in`/`.out` (QEMU's `path=`).
    base: PathBuf,
    /// `report.out` opened for reading and writing, until the reader takes it.
    out: Option<File>,
    /// `report.in`, where the reader answers the marks the agent waits at
    /// (the guest's ttyS1 input), until the reader takes it.
    input: Option<GoAheadPort>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl ReportPort {
    /// Create `dir/report.in` and `dir/report.out` and open both (before
    /// QEMU starts: QEMU opens both as it starts).
    ///
    /// # Errors
    /// The FIFOs cannot be made or opened.
    pub fn create(dir: &Path) -> std::io::Result<ReportPort> {
        let base = dir.join("report");
        mkfifo(&base.with_extension("in"))?;
        mkfifo(&base.with_extension("out"))?;
        // Read-write: a FIFO opened so does not wait for a writer (Linux fifo(7)).
        let out = OpenOptions::new().read(true).write(true).open(base.with_extension("out"))?;
        let input = GoAheadPort::fifo(&base.with_extension("in"))?;
        Ok(ReportPort { base, out: Some(out), input: Some(input), reader: None })
    }

    /// QEMU's arguments for the port; they go after the console's `-serial`, so
    /// that this one is COM2 (`/dev/ttyS1`).
    pub fn qemu_args(&self) -> Vec<String> {
        vec![
            "-chardev".into(),
            format!("pipe,id={CHARDEV_ID},path={}", self.base.display()),
            "-serial".into(),
            format!("chardev:{CHARDEV_ID}"),
        ]
    }

    /// Forward the channel's lines to `tx` as [`Source::Report`] on a thread of
    /// its own, answering the marks the agent waits at on `report.in`.
    pub fn start(&mut self, tx: Sender<Msg>, hook: Option<MarkerHook>) {
        let Some(out) = self.out.take() else { return };
        let input = self.input.take();
        self.reader = Some(std::thread::spawn(move || {
            forward_lines(Source::Report, out, &tx, hook.as_ref(), Some(END_OF_CHANNEL), input);
        }));
    }

    /// Once QEMU is gone: end the reader after the last of QEMU's bytes (the
    /// FIFO keeps their order) and wait for it.
    pub fn finish(mut self) {
        let Some(reader) = self.reader.take() else { return };
        // The reader holds the FIFO open for reading, so this open does not wait;
        // it keeps reading until the end line, so the write does not either.
        let ended = OpenOptions::new()
            .write(true)
            .open(self.base.with_extension("out"))
            .and_then(|mut f| f.write_all(format!("{END_OF_CHANNEL}\n").as_bytes()));
        if let Err(e) = ended {
            tracing::warn!("report channel {}: cannot end its reader: {e}", self.base.display());
            return;
        }
        let _ = reader.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt;

    #[test]
    fn lines_written_to_the_fifo_arrive_as_report_lines_the_unload_mark_is_answered_and_finish_ends_the_reader() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut port = ReportPort::create(dir.path()).expect("fifos");
        assert_eq!(port.qemu_args()[1], format!("pipe,id=report,path={}", dir.path().join("report").display()));
        assert!(dir.path().join("report.in").exists());
        let (tx, rx) = std::sync::mpsc::channel();
        port.start(tx, None);
        // QEMU's end: read-write, as its pipe chardev opens it.
        let mut qemu =
            OpenOptions::new().read(true).write(true).open(dir.path().join("report.out")).expect("open as QEMU does");
        qemu.write_all(b"MANARIG-UNLOAD\r\nMANARIG-REPORT-BEGIN 2\r\nkernel: x\r\n").expect("write");
        drop(qemu);
        // QEMU's end of report.in (the guest's input), open before the reader
        // lets go of its own, so that the FIFO keeps what it was given.
        let mut guest_input = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(dir.path().join("report.in"))
            .expect("open as QEMU does");
        port.finish();
        // The reader has ended: the mark the agent waits at was answered.
        let mut answer = Vec::new();
        // Ends with WouldBlock once the FIFO is empty; what came before is kept.
        let _ = std::io::Read::read_to_end(&mut guest_input, &mut answer);
        assert_eq!(String::from_utf8_lossy(&answer), "MANARIG-GO\n");
        let msgs: Vec<Msg> = rx.iter().collect();
        let lines: Vec<&str> = msgs
            .iter()
            .filter_map(|m| match m {
                Msg::Line(Source::Report, l, _) => Some(l.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(lines, ["MANARIG-UNLOAD", "MANARIG-REPORT-BEGIN 2", "kernel: x"]);
        assert!(matches!(msgs.last(), Some(Msg::Eof(Source::Report))));
    }

    #[test]
    fn finishing_a_channel_qemu_never_opened_does_not_hang() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut port = ReportPort::create(dir.path()).expect("fifos");
        let (tx, rx) = std::sync::mpsc::channel();
        port.start(tx, None);
        port.finish();
        assert!(rx.iter().any(|m| matches!(m, Msg::Eof(Source::Report))));
    }
}
