//! The emulated MANA NIC for one run, served in this process on a vfio-user
//! socket (no child process to reap; QEMU connects to the socket).

use anyhow::{Context, Result};
use device_model::config::DeviceConfig;
use device_model::server::{DeviceServer, StatusHandle};
use device_model::shared::mana_core;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long [`RunningDevice::stop`] waits for the serving thread to finish
/// after QEMU is gone.
const STOP_DEADLINE: Duration = Duration::from_secs(10);

/// Takes the status of a [`RunningDevice`] from any thread.
#[derive(Clone)]
pub struct DeviceStatusHandle(StatusHandle);

impl DeviceStatusHandle {
    /// The device's status now, as JSON (`device_model::server::DeviceStatus`).
    pub fn snapshot(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self.0.device_status()).ok()
    }
}

/// A device serving one QEMU connection on a background thread.
pub struct RunningDevice {
    socket: PathBuf,
    status: StatusHandle,
    done: mpsc::Receiver<Result<(), String>>,
    thread: Option<JoinHandle<()>>,
}

impl RunningDevice {
    /// Bind `socket` (it must not exist) and serve the device on it. When this
    /// returns, QEMU can connect.
    ///
    /// # Errors
    /// The socket cannot be bound, or the configuration is refused.
    pub fn start(socket: &Path, config: DeviceConfig) -> Result<Self> {
        let (factory, core_status) = mana_core(&config);
        let server = DeviceServer::bind(socket, config, factory)
            .with_context(|| format!("starting the emulated NIC on {}", socket.display()))?;
        server.set_core_status(core_status);
        let status = server.status_handle();
        let (tx, done) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("mana-device".into())
            .spawn(move || {
                let result = server.run().map_err(|e| format!("{:#}", anyhow::Error::from(e)));
                let _ = tx.send(result);
            })
            .context("cannot start the device thread")?;
        Ok(RunningDevice { socket: socket.to_path_buf(), status, done, thread: Some(thread) })
    }

    /// A handle that snapshots the device's status (JSON) from another thread
    /// while it serves.
    pub fn status_handle(&self) -> DeviceStatusHandle {
        DeviceStatusHandle(self.status.clone())
    }

    /// Stop serving (QEMU must be gone) and return the device's final status
    /// as JSON. If QEMU never connected, a throw-away connection ends the
    /// accept. Logs, rather than fails, when the thread does not finish in time.
    pub fn stop(mut self) -> Option<serde_json::Value> {
        let status = serde_json::to_value(self.status.device_status()).ok();
        let finished = match self.done.try_recv() {
            Ok(result) => Some(result),
            Err(_) => {
                // Still in accept() (QEMU never connected) or reading a closed socket.
                drop(UnixStream::connect(&self.socket));
                self.done.recv_timeout(STOP_DEADLINE).ok()
            }
        };
        match finished {
            Some(Ok(())) => {
                if let Some(t) = self.thread.take() {
                    let _ = t.join();
                }
            }
            Some(Err(e)) => tracing::warn!("emulated NIC: {e}"),
            None => tracing::warn!("emulated NIC did not stop within {STOP_DEADLINE:?}; leaving its thread"),
        }
        let _ = std::fs::remove_file(&self.socket);
        status
    }
}
