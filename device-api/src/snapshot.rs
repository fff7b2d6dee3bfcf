//! The view of the device core the harness reads (device-model's
//! `ManaDevice::snapshot`): queues, registered devices, steering, flows and
//! counters. Serialized by `mana-device` inside its [`crate::status`]
//! (status file, control channel: [`crate::control`]) and deserialized into
//! these same types by the rig (harness/crates/rig/src/rig/device.rs).
#![forbid(unsafe_code)]

use crate::flows::FlowsSnapshot;
use crate::rss::SteeringSnapshot;
use crate::traffic::{Totals, Traffic};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The counter key of every command code the device does not know: one key,
/// not one per code, so that a guest cannot grow the counters (2^32 codes).
pub const UNKNOWN_COMMAND: &str = "unknown";

/// Queue ids the device gives the HWC rings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HwcIds {
    /// HWC EQ id.
    pub eq: u32,
    /// HWC CQ id.
    pub cq: u32,
    /// HWC SQ id.
    pub sq: u32,
    /// HWC RQ id.
    pub rq: u32,
}

/// Who owns a queue (`gdma_dev_id` as type/instance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Device type (1 HWC, 2 MANA, 3 MANA_IB: [`crate::codes::DeviceType`]).
    pub dev_type: u16,
    /// Instance.
    pub instance: u16,
}

/// Kind of a work queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WqKind {
    /// Send queue.
    Sq,
    /// Receive queue.
    Rq,
}

/// The answer to GDMA_REGISTER_DEVICE for one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// Protection domain id.
    pub pdid: u32,
    /// Memory key.
    pub gpa_mkey: u32,
    /// Doorbell page index.
    pub db_id: u32,
}

/// A MANA_CREATE_WQ_OBJ object: one SQ or RQ and its CQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WqObj {
    /// SQ or RQ.
    pub kind: WqKind,
    /// Work-queue id.
    pub wq_id: u32,
    /// Completion-queue id.
    pub cq_id: u32,
    /// vPort handle it was created on.
    pub vport: u64,
}

/// Counters kept for the harness.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Requests handled, by command name; every code the device does not
    /// know counts under [`UNKNOWN_COMMAND`].
    pub commands: BTreeMap<String, u64>,
    /// Requests answered with a non-zero status, by command name.
    pub command_errors: BTreeMap<String, u64>,
    /// Guest errors (bad doorbells, bad WQEs, unmapped addresses, ...) by kind.
    pub guest_errors: BTreeMap<String, u64>,
    /// SMC ESTABLISH_HWC messages accepted.
    pub hwc_established: u64,
    /// SMC DESTROY_HWC messages handled.
    pub hwc_destroyed: u64,
    /// Device resets.
    pub resets: u64,
    /// Ethernet SQ WQEs consumed (each with a CQE_TX_OKAY or error CQE
    /// unless its OOB suppressed it).
    pub tx_wqes_completed: u64,
    /// Data-path traffic of every queue since power-on.
    pub traffic: Totals,
    /// Injected faults that struck ([`crate::inject`]), by SPEC (and
    /// `silenced vectors`, `spoiled entries`); empty without `--inject`.
    #[serde(default)]
    pub injected: BTreeMap<String, u64>,
}

/// An EQ in the snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct EqSnapshot {
    /// EQ id.
    pub id: u32,
    /// MSI-X index the EQ raises.
    pub msix_index: u16,
    /// Owning device (type 1 = HWC, 2 = MANA, 3 = MANA_IB: [`crate::codes::DeviceType`]).
    pub owner: Owner,
    /// Ring entries.
    pub entries: u32,
    /// Events written so far.
    pub events_posted: u64,
    /// Whether the next event raises the vector.
    pub armed: bool,
}

/// A CQ in the snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CqSnapshot {
    /// CQ id.
    pub id: u32,
    /// Parent EQ id (`u32::MAX`, device-model `gdma::DETACHED_EQ`, once that EQ was disabled).
    pub parent_eq: u32,
    /// Ring entries.
    pub entries: u32,
    /// Completions written so far.
    pub completions_posted: u64,
    /// Whether the next completion notifies the parent EQ.
    pub armed: bool,
}

/// A work queue in the snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WqSnapshot {
    /// WQ id.
    pub id: u32,
    /// SQ or RQ.
    pub kind: WqKind,
    /// CQ id.
    pub cq_id: u32,
    /// Parent EQ of that CQ (`None` if the CQ is gone).
    pub parent_eq: Option<u32>,
    /// vPort index of an Ethernet queue (`None` for the HWC's).
    pub vport: Option<u16>,
    /// What an Ethernet queue moved (`None` for the HWC's).
    pub traffic: Option<Traffic>,
}

/// A registered device in the snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct DeviceSnapshot {
    /// Device type.
    pub dev_type: u16,
    /// Instance.
    pub instance: u16,
    /// What REGISTER_DEVICE answered.
    pub registration: Registration,
}

/// Serializable view of the device for the harness.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// HWC queue ids and vector while the channel is up.
    pub hwc: Option<HwcSnapshot>,
    /// Every EQ.
    pub eqs: Vec<EqSnapshot>,
    /// Every CQ.
    pub cqs: Vec<CqSnapshot>,
    /// Every SQ and RQ.
    pub wqs: Vec<WqSnapshot>,
    /// Work-queue objects by handle.
    pub wq_objs: BTreeMap<u64, WqObj>,
    /// DMA regions not owned by a queue.
    pub dma_regions: usize,
    /// Registered devices.
    pub devices: Vec<DeviceSnapshot>,
    /// MSI-X vectors raised, by index.
    pub vectors_raised: BTreeMap<u16, u64>,
    /// RX steering (RSS) of every configured vPort.
    pub steering: Vec<SteeringSnapshot>,
    /// Per-flow records (queue, RSS hash, frames), when recording is on
    /// (`mana-device --record-flows N`).
    #[serde(default)]
    pub flows: FlowsSnapshot,
    /// Counters.
    pub counters: Counters,
}

/// The HWC in the snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct HwcSnapshot {
    /// Queue ids.
    pub ids: HwcIds,
    /// MSI-X index of the HWC EQ.
    pub msix_index: u16,
    /// Responses waiting for an RQ buffer.
    pub pending_responses: usize,
}
