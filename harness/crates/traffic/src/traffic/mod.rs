//! Traffic through the emulated NIC in a run (`run --traffic`).
//!
//! The host's end is a **peer process** (`manarig-flows peer`, [`peer`]) that
//! moves itself into a new network namespace, creates a TAP there, gives its
//! address [`HOST`]/[`PREFIX`], and passes the TAP's descriptor back to the
//! rig (SCM_RIGHTS), which hands it to the `mana-device` child (`--tap-fd`):
//! guest frames leave the emulated NIC into that TAP and the namespace's
//! kernel stack answers. Nothing is named or persistent: the namespace and the
//! TAP vanish when the peer and the device are gone, whether the run ends,
//! is interrupted (Ctrl-C kills the tracked children) or is SIGKILLed (they
//! get SIGKILL from PR_SET_PDEATHSIG). The namespace has only `lo` and the
//! TAP, and no route beyond the TAP's /24: traffic cannot leave it.
//!
//! Why a process of its own: unshare(CLONE_NEWNET) moves the calling thread
//! for good, and the namespace should die with a process the rig reaps
//! (no `ip netns` name to clean up after a crash).
//!
//! The **flows** are planned by the rig once the guest's `manarig-flows
//! guest` says hello to the peer ([`plan`]): the driver has then programmed
//! the RSS key and indirection table, which the rig reads from the device,
//! so that every active RQ gets at least one flow. Both ends run them on
//! their kernels' TCP stacks and check every byte.

pub mod peer;
pub mod plan;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::time::Duration;

/// The peer's address on its TAP (TEST-NET-1, RFC 5737: never a real network).
pub const HOST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
/// The guest's address on the MANA netdev.
pub const GUEST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
/// The prefix length of both.
pub const PREFIX: u8 = 24;
/// The peer's control port.
pub const CONTROL_PORT: u16 = 7000;
/// The TAP's name inside the namespace.
pub const TAP: &str = "tap0";
/// Per-flow records the device keeps (far more than any plan's flows: the
/// control connection and stray ones fit too).
pub const RECORD_FLOWS: usize = 4096;

/// The environment variable that names the `manarig-flows` binary to run.
pub const FLOWS_BIN_ENV: &str = "MANARIG_FLOWS_BIN";

/// What traffic a run drives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrafficOptions {
    /// How many flows (None: twice the active RQs).
    pub flows: Option<u32>,
    /// Bytes each flow carries to the guest, and back.
    pub bytes: u64,
    /// How long the flows may take.
    pub limit: Duration,
}

/// Bytes each flow carries each way by default: six full segments per
/// flow and direction, a dozen-odd frames into each flow's RQ with the
/// handshake and the ACKs. Chosen for the run's cost (`cargo xtask bench
/// traffic`: seed 002's 16 flows then take 0.3-0.8 s under TCG, and the whole
/// run stays well under twice the run without traffic); `--traffic-bytes`
/// takes more.
pub const DEFAULT_BYTES: u64 = 8 * 1024;
/// Seconds the flows may take by default (seed 002's take about a second; a
/// 128-vCPU guest under TCG needs the margin).
pub const DEFAULT_SECONDS: u64 = 20;

impl Default for TrafficOptions {
    /// Twice the channel count, [`DEFAULT_BYTES`] each way, at most [`DEFAULT_SECONDS`].
    fn default() -> Self {
        Self { flows: None, bytes: DEFAULT_BYTES, limit: Duration::from_secs(DEFAULT_SECONDS) }
    }
}

/// The peer's control address as the guest dials it.
pub fn control_address() -> SocketAddrV4 {
    SocketAddrV4::new(HOST, CONTROL_PORT)
}

/// Errors finding the traffic tool.
#[derive(Debug, thiserror::Error)]
pub enum BinaryError {
    /// Neither folder has it.
    #[error(
        "the traffic tool `{}` is not in {looked}: build it with `cargo build -p manarig-flows` (the same profile as \
         this program) or name it in {FLOWS_BIN_ENV}",
        manarig_flows::BIN
    )]
    NotFound {
        /// The folders looked in.
        looked: String,
    },
    /// [`FLOWS_BIN_ENV`] names no file.
    #[error("{FLOWS_BIN_ENV}={0}: not a file")]
    BadOverride(PathBuf),
}

/// The `manarig-flows` binary: [`FLOWS_BIN_ENV`] when set, else beside the
/// running executable or one folder up (as `mana-device`).
///
/// # Errors
/// [`BinaryError`] naming where it looked and how to build it.
pub fn flows_binary() -> Result<PathBuf, BinaryError> {
    if let Some(path) = std::env::var_os(FLOWS_BIN_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() { Ok(path) } else { Err(BinaryError::BadOverride(path)) };
    }
    let exe =
        std::env::current_exe().map_err(|e| BinaryError::NotFound { looked: format!("(no executable path: {e})") })?;
    crate::workspace_bin::find_beside(&exe, manarig_flows::BIN).map_err(|looked| BinaryError::NotFound { looked })
}
