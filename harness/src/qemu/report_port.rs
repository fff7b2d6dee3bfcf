//! The host end of the guest agent's report channel
//! ([`crate::guest_protocol::ReportChannel::Ttys1`]): QEMU's second serial port
//! (COM2, the guest's `/dev/ttyS1`) connected to a unix socket this process
//! listens on. Nothing but the agent writes there, so no kernel message can
//! interleave with the report.

use super::launch::MarkerHook;
use super::watch::{forward_lines, Msg, Source};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

/// QEMU's chardev id for the port.
const CHARDEV_ID: &str = "report";

/// A listening report channel, then its reader thread.
pub struct ReportPort {
    path: PathBuf,
    listener: Option<UnixListener>,
    connected: Arc<AtomicBool>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl ReportPort {
    /// Listen on `dir/report.sock` (before QEMU starts: QEMU connects as it starts).
    ///
    /// # Errors
    /// The socket cannot be bound.
    pub fn listen(dir: &Path) -> std::io::Result<ReportPort> {
        let path = dir.join("report.sock");
        let listener = UnixListener::bind(&path)?;
        Ok(ReportPort { path, listener: Some(listener), connected: Arc::default(), reader: None })
    }

    /// QEMU's arguments for the port; they go after the console's `-serial`, so
    /// that this one is COM2 (`/dev/ttyS1`).
    pub fn qemu_args(&self) -> Vec<String> {
        vec![
            "-chardev".into(),
            format!("socket,id={CHARDEV_ID},path={}", self.path.display()),
            "-serial".into(),
            format!("chardev:{CHARDEV_ID}"),
        ]
    }

    /// Accept QEMU's connection and forward its lines to `tx` as [`Source::Report`],
    /// on a thread of its own.
    pub fn start(&mut self, tx: Sender<Msg>, hook: Option<MarkerHook>) {
        let Some(listener) = self.listener.take() else { return };
        let connected = Arc::clone(&self.connected);
        self.reader = Some(std::thread::spawn(move || {
            if let Ok((stream, _)) = listener.accept() {
                connected.store(true, Ordering::SeqCst);
                forward_lines(Source::Report, stream, &tx, hook.as_ref());
            }
        }));
    }

    /// Once QEMU is gone: end a wait for a connection QEMU never made (by making
    /// one), and wait for the reader, which then sees the stream's end.
    pub fn finish(mut self) {
        if let Some(reader) = self.reader.take() {
            if !self.connected.load(Ordering::SeqCst) {
                let _ = UnixStream::connect(&self.path);
            }
            let _ = reader.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn lines_written_to_the_socket_arrive_as_report_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut port = ReportPort::listen(dir.path()).expect("listen");
        assert!(port.qemu_args()[1].ends_with("report.sock"));
        let (tx, rx) = std::sync::mpsc::channel();
        port.start(tx, None);
        let mut qemu = UnixStream::connect(dir.path().join("report.sock")).expect("connect");
        qemu.write_all(b"MANARIG-REPORT-BEGIN 2\r\nkernel: x\r\n").expect("write");
        drop(qemu);
        port.finish();
        let lines: Vec<String> = rx
            .iter()
            .filter_map(|m| match m {
                Msg::Line(Source::Report, l) => Some(l),
                _ => None,
            })
            .collect();
        assert_eq!(lines, ["MANARIG-REPORT-BEGIN 2", "kernel: x"]);
    }

    #[test]
    fn finishing_without_a_connection_does_not_hang() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut port = ReportPort::listen(dir.path()).expect("listen");
        let (tx, rx) = std::sync::mpsc::channel();
        port.start(tx, None);
        port.finish();
        assert!(matches!(rx.try_recv(), Ok(Msg::Eof(Source::Report))));
    }
}
