//! The serializable view of the device the harness dumps, and a handle to
//! take it while the vfio-user shell owns the device.
#![forbid(unsafe_code)]

use crate::bar::{Bar0Factory, Bar0Handler};
use crate::config::DeviceConfig;
use crate::device::ManaDevice;
use crate::hwc::HwcIds;
use crate::queues::{Owner, WqKind};
use crate::resources::{Registration, WqObj};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Counters kept for the harness.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Counters {
    /// Requests handled, by command name (or hex code when unknown).
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
}

/// An EQ in the snapshot.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct EqSnapshot {
    /// EQ id.
    pub id: u32,
    /// MSI-X index the EQ raises.
    pub msix_index: u16,
    /// Owning device (type 1 = HWC, 2 = MANA, 3 = MANA_IB).
    pub owner: Owner,
    /// Ring entries.
    pub entries: u32,
    /// Events written so far.
    pub events_posted: u64,
    /// Whether the next event raises the vector.
    pub armed: bool,
}

/// A CQ in the snapshot.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CqSnapshot {
    /// CQ id.
    pub id: u32,
    /// Parent EQ id.
    pub parent_eq: u32,
    /// Ring entries.
    pub entries: u32,
    /// Completions written so far.
    pub completions_posted: u64,
    /// Whether the next completion notifies the parent EQ.
    pub armed: bool,
}

/// A work queue in the snapshot.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct WqSnapshot {
    /// WQ id.
    pub id: u32,
    /// SQ or RQ.
    pub kind: WqKind,
    /// CQ id.
    pub cq_id: u32,
    /// Parent EQ of that CQ (`None` if the CQ is gone).
    pub parent_eq: Option<u32>,
}

/// A registered device in the snapshot.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DeviceSnapshot {
    /// Device type.
    pub dev_type: u16,
    /// Instance.
    pub instance: u16,
    /// What REGISTER_DEVICE answered.
    pub registration: Registration,
}

/// Serializable view of the device for the harness.
#[derive(Debug, Clone, Serialize)]
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
    /// Counters.
    pub counters: Counters,
}

/// The HWC in the snapshot.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HwcSnapshot {
    /// Queue ids.
    pub ids: HwcIds,
    /// MSI-X index of the HWC EQ.
    pub msix_index: u16,
    /// Responses waiting for an RQ buffer.
    pub pending_responses: usize,
}

/// Where the shell's device can be reached for a [`Snapshot`] (cheap to clone).
///
/// Filled when the factory from [`factory_with_snapshots`] runs; until then
/// [`SnapshotHandle::snapshot`] returns `None`.
#[derive(Clone, Default)]
pub struct SnapshotHandle(Arc<Mutex<Option<Arc<Mutex<ManaDevice>>>>>);

impl SnapshotHandle {
    /// The device's current state, or `None` before the shell built it.
    pub fn snapshot(&self) -> Option<Snapshot> {
        let slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let device = slot.as_ref()?;
        let device = device.lock().unwrap_or_else(PoisonError::into_inner);
        Some(device.snapshot())
    }
}

/// A [`ManaDevice`] behind a mutex, so a [`SnapshotHandle`] can read it
/// between BAR0 accesses (one uncontended lock per access).
struct SharedDevice(Arc<Mutex<ManaDevice>>);

impl SharedDevice {
    fn with<R>(&self, f: impl FnOnce(&mut ManaDevice) -> R) -> R {
        let mut device = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut device)
    }
}

impl Bar0Handler for SharedDevice {
    fn size(&self) -> u64 {
        self.with(|d| d.size())
    }

    fn read(&mut self, offset: u64, data: &mut [u8]) {
        self.with(|d| d.read(offset, data));
    }

    fn write(&mut self, offset: u64, data: &[u8]) {
        self.with(|d| d.write(offset, data));
    }

    fn reset(&mut self) {
        self.with(|d| d.reset());
    }
}

/// Like [`crate::device::factory`], plus a [`SnapshotHandle`] through which
/// the shell (or anything it hands the handle to) can dump the device state.
pub fn factory_with_snapshots(config: DeviceConfig) -> (Bar0Factory, SnapshotHandle) {
    let handle = SnapshotHandle::default();
    let slot = handle.clone();
    let factory: Bar0Factory = Box::new(move |mem, irq| {
        let device = Arc::new(Mutex::new(ManaDevice::new(config, mem, irq)));
        *slot.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&device));
        Box::new(SharedDevice(device))
    });
    (factory, handle)
}
