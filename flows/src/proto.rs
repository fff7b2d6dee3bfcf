//! What the three parties say to each other, as JSON lines:
//!
//! - the **guest** tool and the **peer** (inside the run's network namespace),
//!   over the control TCP connection through the emulated NIC:
//!   [`GuestHello`] →, ← [`Plan`], [`GuestListening`] →, both run their
//!   sides of the flows, [`GuestResults`] →; one such session per guest
//!   tool run (a soak's guest runs it again and again);
//! - the **peer** and the **rig** that started it, over the peer's
//!   stdout ([`PeerEvent`]) and stdin ([`RigCommand`]).
//!
//! The rig chooses the flows (it reads the RSS key and indirection table the
//! guest's driver programmed from the emulated device), so the peer asks it
//! for a [`Plan`] once the guest says hello.

use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// The version of these messages; both ends refuse another.
pub const PROTOCOL_VERSION: u32 = 1;

/// Which end opens a flow's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// The guest connects to the peer.
    Guest,
    /// The peer connects to the guest.
    Host,
}

/// One flow: a TCP connection between fixed ports that carries
/// `to_guest` bytes to the guest and `to_host` bytes back.
///
/// The opener sends its bytes first and closes its sending half; the other end
/// checks them, then sends its own. Every byte is a known pseudo-random
/// stream ([`crate::stream`]) that the receiver regenerates and compares, and
/// both ends report a SHA-256 of what they sent and received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowSpec {
    /// Flow number (0-based, unique in the plan).
    pub id: u32,
    /// Which end connects.
    pub opener: Side,
    /// The guest's port.
    pub guest_port: u16,
    /// The peer's port.
    pub host_port: u16,
    /// Bytes the peer sends to the guest.
    pub to_guest: u64,
    /// Bytes the guest sends to the peer.
    pub to_host: u64,
}

/// The flows to run and their time limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The peer's address.
    pub host: Ipv4Addr,
    /// The guest's address.
    pub guest: Ipv4Addr,
    /// The flows.
    pub flows: Vec<FlowSpec>,
    /// Milliseconds both ends give the flows, from the moment the guest has
    /// its listeners open; a flow not done by then ends with an error.
    pub limit_ms: u64,
}

impl Plan {
    /// A plan of one flow (tests, and a quick manual check).
    pub fn one(host: Ipv4Addr, guest: Ipv4Addr, flow: FlowSpec, limit_ms: u64) -> Self {
        Plan { version: PROTOCOL_VERSION, host, guest, flows: vec![flow], limit_ms }
    }
}

/// The guest's first line on the control connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestHello {
    /// [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The guest's address on the NIC (the control connection's source).
    pub guest: Ipv4Addr,
}

/// The guest's second line: its listeners for peer-opened flows are open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestListening {
    /// Flows whose listener could not be opened (they are failed on both ends).
    pub failed: Vec<u32>,
}

/// What one end saw of one flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowResult {
    /// [`FlowSpec::id`].
    pub id: u32,
    /// Bytes this end sent.
    pub sent: u64,
    /// Bytes this end received.
    pub received: u64,
    /// SHA-256 of what it sent, hex.
    pub sent_sha256: String,
    /// SHA-256 of what it received, hex.
    pub received_sha256: String,
    /// Whether every byte received was the expected one and all of them came.
    pub verified: bool,
    /// What went wrong, if anything.
    pub error: Option<String>,
    /// Milliseconds from the start of the flow to its end on this side.
    pub elapsed_ms: u64,
}

/// The guest's last line: its side of every flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestResults {
    /// One per flow, in plan order.
    pub flows: Vec<FlowResult>,
}

/// What the peer tells the rig (one JSON line each on its stdout).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum PeerEvent {
    /// The namespace and the TAP exist, the TAP's fd went to the rig, and the
    /// control port listens.
    Ready {
        /// The TAP's name inside the namespace.
        tap: String,
        /// The peer's address.
        host: Ipv4Addr,
        /// The control port.
        port: u16,
    },
    /// The guest said hello: the peer waits for a [`RigCommand::Plan`].
    Hello(GuestHello),
    /// The flows are over (or failed): both ends' results.
    Done(Box<Outcome>),
    /// A guest's control connection ended before its flows ran (the
    /// reason); the peer waits for the next guest.
    Dropped(String),
    /// The peer gave up (the reason); it exits after this line.
    Failed(String),
}

/// Both ends' view of the flows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// The plan that ran.
    pub plan: Plan,
    /// The peer's side, in plan order.
    pub host: Vec<FlowResult>,
    /// The guest's side, in plan order (empty when it never sent them).
    pub guest: Vec<FlowResult>,
    /// Why the guest's results are missing or the run was cut short.
    pub error: Option<String>,
    /// Milliseconds from the guest's listeners being open to the end.
    pub elapsed_ms: u64,
}

/// What the rig tells the peer (one JSON line each on its stdin; end of
/// file means stop now).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RigCommand {
    /// The flows to run with the guest that said hello.
    Plan(Plan),
    /// No plan can be made (the reason goes to the guest, which gives up).
    Refuse(String),
}

/// A line that is not the message expected.
#[derive(Debug, thiserror::Error)]
#[error("expected {what}, got {line:?}: {error}")]
pub struct DecodeError {
    /// What was expected (`the guest's hello`).
    pub what: String,
    /// The line (its first 200 characters).
    pub line: String,
    /// serde_json's error.
    pub error: serde_json::Error,
}

/// A message that crossed the control connection or a pipe as one line.
///
/// # Errors
/// [`DecodeError`]: the JSON error, naming what was expected.
pub fn decode<T: for<'de> Deserialize<'de>>(line: &str, what: &str) -> Result<T, DecodeError> {
    serde_json::from_str(line.trim()).map_err(|error| DecodeError {
        what: what.to_owned(),
        line: truncate(line),
        error,
    })
}

/// One JSON line (with its newline) for `value`.
pub fn encode<T: Serialize>(value: &T) -> String {
    // Serializing these plain structs cannot fail (no maps with non-string keys).
    let mut line = serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"encode-error\":{:?}}}", e.to_string()));
    line.push('\n');
    line
}

fn truncate(line: &str) -> String {
    line.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_cross_as_one_line_each_and_a_wrong_one_is_named() {
        let flow =
            FlowSpec { id: 0, opener: Side::Host, guest_port: 20000, host_port: 30000, to_guest: 10, to_host: 20 };
        let plan = Plan::one([192, 0, 2, 1].into(), [192, 0, 2, 2].into(), flow, 1000);
        let line = encode(&RigCommand::Plan(plan.clone()));
        assert_eq!(line.matches('\n').count(), 1);
        assert_eq!(decode::<RigCommand>(&line, "a command").expect("a plan"), RigCommand::Plan(plan));
        let e = decode::<GuestHello>("{\"nope\":1}", "the guest's hello").expect_err("not a hello");
        assert_eq!((e.what.as_str(), e.line.as_str()), ("the guest's hello", "{\"nope\":1}"));
    }
}
