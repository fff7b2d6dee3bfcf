//! The control channel of `mana-device --control stdio`: how the process
//! that started the device (the rig, harness/crates/rig/src/rig/device.rs) asks it for
//! its status and checks that it still answers.
//!
//! Framing: after the `ready <socket>` line, the device reads one JSON
//! [`Request`] per line on its stdin and writes one JSON [`Response`] per line
//! on its stdout, in order, each carrying the request's `id`. End of file on
//! stdin means the controller is gone: the device stops as on SIGTERM.
//! A line that is not a [`Request`] gets [`Reply::Error`] with id 0; the
//! channel stays open.
//!
//! Both ends use these types: the status crosses the pipe as the JSON of
//! [`DeviceStatus`] and is read back into it, never as untyped JSON.
#![forbid(unsafe_code)]

use crate::status::DeviceStatus;
use serde::{Deserialize, Serialize};

/// The value of `mana-device --control` that selects this channel.
pub const STDIO: &str = "stdio";

/// One request, one line of JSON on the device's stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// Echoed in the [`Response`]; the controller numbers its requests so that
    /// a late answer to a request it gave up on is never taken for the next one.
    pub id: u64,
    /// What is asked.
    pub op: Op,
}

/// What a [`Request`] asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// Answer [`Reply::Pong`] once no client message is being handled
    /// (device-model `StatusHandle::ping`): a device stuck inside a message does not answer.
    Ping,
    /// Answer [`Reply::Status`] with the device's status now.
    Status,
    /// Raise this device event now, as `--inject EVENT@S` does when its time
    /// comes (one EQE on the HWC EQ; `reset` then forgets everything), and
    /// answer [`Reply::Raised`]. The rig's soak raises link events this way
    /// at the moments the guest asks for them.
    Raise(crate::inject::DeviceEvent),
}

/// One response, one line of JSON on the device's stdout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// The request's id (0 for a line that was not a request).
    pub id: u64,
    /// The answer.
    pub reply: Reply,
}

/// The answer in a [`Response`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reply {
    /// To [`Op::Ping`].
    Pong,
    /// To [`Op::Status`]: the shell's state and the core's snapshot.
    Status(Box<DeviceStatus>),
    /// To [`Op::Raise`]: whether the event reached the driver (false: there
    /// was no HWC to post it on, e.g. while the driver is unloaded; the
    /// device then did nothing).
    Raised(bool),
    /// The request line could not be read as a [`Request`] (the reason).
    Error(String),
}
