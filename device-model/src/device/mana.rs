//! The MANA VF device core behind [`Bar0Handler`]: BAR0 dispatch, SMC
//! handshake, HWC request loop, doorbells, counters and the snapshot.
//!
//! Modules of the core: [`crate::device::regs`] (BAR0 layout), [`crate::device::smc`]
//! (shared-memory channel), [`crate::device::hwc`] (hardware channel),
//! [`crate::device::gdma`] and [`crate::device::bnic`] (commands), [`crate::queues`]
//! (EQ/CQ/SQ/RQ, owner bits, arming), [`crate::queues::dma_region`] (guest page
//! lists), [`crate::device::resources`] (what commands create), [`mana_device_api::snapshot`]
//! (state for the harness) and [`crate::defs`] (wire structs only).
//!
//! Everything runs synchronously inside BAR0 accesses: a write of SMC dword 7
//! establishes or destroys the HWC, a doorbell write processes the queue it
//! names (the Ethernet data path in bounded batches, [`crate::datapath`]).
//! Frames from the network come in through [`ManaDevice::receive`] or
//! [`ManaDevice::poll_backend`]. Bad guest input is counted, logged with rate
//! limiting, and answered with an error status or dropped; nothing here
//! panics or loops unbounded.
#![forbid(unsafe_code)]

use crate::bar::{Bar0Factory, Bar0Handler, DmaMemory};
use crate::datapath::backend::{Discard, PacketBackend};
use crate::datapath::engine::MAX_FAULTS;
use crate::datapath::engine::{Engine, PER_DOORBELL, RX_BATCH};
use crate::datapath::flows::FlowTable;
use crate::datapath::rx::RxVerdict;
use crate::datapath::Env;
use crate::defs::{Command, CqDoorbell, DeviceType, EqDoorbell, GdmaReqHdr, SmcMsgType, WqDoorbell};
use crate::device::budget::{self, MAX_REGIONS};
use crate::device::hwc::{Hwc, InitParams, MAX_PENDING_RESPONSES};
use crate::device::regs::{self, Bar0Target, DoorbellKind};
use crate::device::resources::{Ctx, Resources, DOORBELL_PAGE, LISTED_DEVICES, MAX_NUM_CQS};
use crate::device::smc::{HwcRings, Smc, SmcRequest};
use crate::device::{commands, framing};
use crate::inject::{timed, CommandFate, Injector, QueueFaults, MAX_HELD_RESPONSES};
use crate::interrupt::InterruptSink;
use crate::queues::{Mem, MAX_BACKLOG};
use mana_device_api::config::DeviceConfig;
use mana_device_api::inject::{DeviceEvent, InjectSpec, SpuriousTarget};
use mana_device_api::snapshot::HwcIds;
use mana_device_api::snapshot::UNKNOWN_COMMAND;
use mana_device_api::snapshot::{Counters, CqSnapshot, DeviceSnapshot, EqSnapshot, HwcSnapshot, Snapshot, WqSnapshot};
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Display;
use std::sync::Arc;
use std::time::Instant;
use vm_memory::GuestAddressSpace;

/// SMC response status for a refused ESTABLISH (any non-zero fails the driver with -EPROTO).
const SMC_STATUS_FAILED: u8 = 1;
/// HWC protection domain announced in the init EQEs.
const HWC_PDID: u32 = 0x100 + 1;
/// HWC memory key announced in the init EQEs.
const HWC_GPA_MKEY: u32 = 0x1000 + 1;
/// Guest errors of one kind logged in full before logging only every power of two.
const LOG_BURST: u64 = 16;

/// Whether the `count`-th event of a guest-driven kind (HWC established or
/// destroyed) is logged at info level: the first [`LOG_BURST`], then every
/// power of two; the others go to debug.
fn log_at_info(count: u64) -> bool {
    count <= LOG_BURST || count.is_power_of_two()
}

/// An emulated MANA VF (PCI 1414:00BA): BAR0 of [`regs::BAR0_SIZE`] bytes.
///
/// Implements what Linux's `mana` driver needs to probe and open
/// (drivers/net/ethernet/microsoft/mana, Debian 6.1.192, 6.12.117, 7.3.4):
/// SMC handshake, HWC, the GDMA commands of probe and the BNIC commands of
/// probe and `ndo_open`. See docs/mana-protocol.md.
pub struct ManaDevice {
    config: DeviceConfig,
    mem: DmaMemory,
    irq: Arc<dyn InterruptSink>,
    smc: Smc,
    hwc: Option<Hwc>,
    res: Resources,
    counters: Counters,
    engine: Engine,
    flows: FlowTable,
    injector: Injector,
}

/// A copy of a [`ManaDevice`]'s own state (SMC, HWC, queues, regions,
/// registrations, steering, counters, pending data-path work, flow records,
/// injections), without what surrounds it: guest memory, the interrupt sink
/// and the packet backend. [`ManaDevice::save`] takes it and
/// [`ManaDevice::restore`] puts it back, so that many runs can start from
/// one device that is already up (the fuzz targets, docs/fuzzing.md).
#[derive(Debug, Clone)]
pub struct SavedState {
    config: DeviceConfig,
    smc: Smc,
    hwc: Option<Hwc>,
    res: Resources,
    counters: Counters,
    pending_sqs: VecDeque<u32>,
    flows: FlowTable,
    injector: Injector,
}

/// The kinds of guest error the device counts (`Counters::guest_errors`
/// keys: the names passed to `ManaDevice::guest_error`, 19 of them, and
/// room for more), the bound [`ManaDevice::footprint`] gives that map.
pub const GUEST_ERROR_KINDS: usize = 32;

/// One collection's size and the bound the device keeps it under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fill {
    /// Entries now.
    pub len: usize,
    /// Entries at most.
    pub bound: usize,
}

/// Every collection a guest can fill, by name ([`ManaDevice::footprint`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footprint(pub BTreeMap<&'static str, Fill>);

impl Footprint {
    /// The entries of collection `name` (0 for a name it does not have).
    pub fn len(&self, name: &str) -> usize {
        self.0.get(name).map_or(0, |fill| fill.len)
    }

    /// The collections holding more than their bound, as `name: len > bound`.
    pub fn over_bounds(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|(_, fill)| fill.len > fill.bound)
            .map(|(name, fill)| format!("{name}: {} > {}", fill.len, fill.bound))
            .collect()
    }
}

/// A [`Bar0Factory`] that builds a [`ManaDevice`] with `config`.
pub fn factory(config: DeviceConfig) -> Bar0Factory {
    Box::new(move |mem, irq| Box::new(ManaDevice::new(config, mem, irq)))
}

impl ManaDevice {
    /// A device in its power-on state: SMC idle (dword 7 reads 0), no queues,
    /// no network (transmitted frames are dropped, nothing is received).
    pub fn new(config: DeviceConfig, mem: DmaMemory, irq: Arc<dyn InterruptSink>) -> Self {
        Self::with_backend(config, mem, irq, Box::new(Discard))
    }

    /// [`ManaDevice::new`] with its vPorts connected to `backend`.
    pub fn with_backend(
        config: DeviceConfig,
        mem: DmaMemory,
        irq: Arc<dyn InterruptSink>,
        backend: Box<dyn PacketBackend>,
    ) -> Self {
        Self {
            config,
            mem,
            irq,
            smc: Smc::default(),
            hwc: None,
            res: Resources::default(),
            counters: Counters::default(),
            engine: Engine::new(backend),
            flows: FlowTable::default(),
            injector: Injector::default(),
        }
    }

    /// A copy of the device's state (see [`SavedState`]). Faults of the
    /// data path not logged yet are not part of it.
    pub fn save(&self) -> SavedState {
        SavedState {
            config: self.config.clone(),
            smc: self.smc.clone(),
            hwc: self.hwc.clone(),
            res: self.res.clone(),
            counters: self.counters.clone(),
            pending_sqs: self.engine.pending_sqs().clone(),
            flows: self.flows.clone(),
            injector: self.injector.clone(),
        }
    }

    /// Puts the device back into `state` (taken from this device or one
    /// with the same guest memory layout); guest memory, the interrupt sink
    /// and the backend stay as they are.
    pub fn restore(&mut self, state: &SavedState) {
        self.config.clone_from(&state.config);
        self.smc.clone_from(&state.smc);
        self.hwc.clone_from(&state.hwc);
        self.res.clone_from(&state.res);
        self.counters.clone_from(&state.counters);
        self.engine.restore_pending(&state.pending_sqs);
        self.flows.clone_from(&state.flows);
        self.injector.clone_from(&state.injector);
    }

    /// Misbehaves from now on as `specs` say ([`crate::inject`]): failed or
    /// late command responses, spurious or silent vectors, bad owner bits,
    /// corrupt RX completions.
    pub fn inject(&mut self, specs: &[InjectSpec]) {
        self.injector = Injector::new(specs);
        self.res.queues.faults = QueueFaults::new(specs);
    }

    /// Raises the timed events due at `now` (`reset@S`, `link-down@S`, …),
    /// then delivers the held HWC responses (`hwc-delay`) that are due;
    /// returns how many are still held. Whoever runs the device calls it
    /// periodically while such injections are on (`mana-device` every 50 ms).
    pub fn tick(&mut self, now: Instant) -> usize {
        for event in self.injector.due_events(now) {
            let _ = self.raise(event);
        }
        let due = self.injector.due(now);
        if !due.is_empty() {
            let mem = self.mem.memory();
            let irq = Arc::clone(&self.irq);
            for response in due {
                tracing::info!("mana device: injected fault: delivering a held HWC response");
                let Some(hwc) = self.hwc.as_mut() else { break };
                if let Err(err) = hwc.respond(&mut self.res.queues, &mem, irq.as_ref(), response) {
                    self.guest_error("hwc response", &err);
                }
            }
        }
        self.injector.held()
    }

    /// Delivers `frame` (an Ethernet frame without FCS) from the network to
    /// vPort `vport` (0-based): RSS picks the RQ, the frame goes into its
    /// next buffer with an RX CQE, EQE and MSI-X vector as armed; with no
    /// buffer posted it is dropped and counted, as hardware does.
    pub fn receive(&mut self, vport: u16, frame: &[u8]) -> RxVerdict {
        let verdict = self.with_env(|engine, env| engine.receive(env, vport, frame));
        self.log_faults();
        verdict
    }

    /// Pulls up to `budget` frames from the packet backend into the guest
    /// (what an event loop calls when the backend's readiness fd is
    /// readable); returns the frames pulled.
    pub fn poll_backend(&mut self, budget: usize) -> usize {
        let pulled = self.with_env(|engine, env| engine.poll_backend(env, budget));
        self.log_faults();
        pulled
    }

    /// Whether data-path work waits: SQ entries beyond the last batch, or
    /// frames the backend may hold. An event loop calls [`ManaDevice::poll`]
    /// while this is true.
    pub fn has_pending_work(&self) -> bool {
        self.engine.has_pending()
    }

    /// Does one batch of waiting data-path work (see
    /// [`crate::datapath::engine`]); returns [`ManaDevice::has_pending_work`].
    pub fn poll(&mut self) -> bool {
        self.run_data_path();
        self.has_pending_work()
    }

    /// Records up to `capacity` distinct TCP/UDP flows from now on (their
    /// queue, RSS hash and frame counts, in the snapshot's `flows`); 0 turns
    /// recording off. See [`crate::datapath::flows`].
    pub fn record_flows(&mut self, capacity: usize) {
        self.flows.enable(capacity);
    }

    /// The packet backend.
    pub fn backend_mut(&mut self) -> &mut dyn PacketBackend {
        self.engine.backend_mut()
    }

    /// One batch of pending TX, then the frames waiting in the backend.
    fn run_data_path(&mut self) {
        if !self.engine.has_pending() {
            return;
        }
        let done = self.with_env(|engine, env| {
            let done = engine.run_tx(env, PER_DOORBELL);
            if engine.rx_pending() {
                engine.poll_backend(env, RX_BATCH);
            }
            done
        });
        self.counters.tx_wqes_completed += u64::from(done);
        self.log_faults();
    }

    /// Runs `f` on the data-path engine with the device state it works on.
    fn with_env<R>(&mut self, f: impl FnOnce(&mut Engine, &mut Env<'_>) -> R) -> R {
        let mem = self.mem.memory();
        let mem_key = mana_mem_key(&self.res);
        let mut env = Env {
            queues: &mut self.res.queues,
            datapath: &mut self.res.datapath,
            totals: &mut self.counters.traffic,
            mem: &mem,
            irq: self.irq.as_ref(),
            mem_key,
            flows: &mut self.flows,
        };
        f(&mut self.engine, &mut env)
    }

    /// Logs (rate-limited) and counts the data path's guest faults.
    fn log_faults(&mut self) {
        let (faults, unlogged) = self.engine.take_faults();
        for fault in faults {
            self.guest_error(fault.kind(), &fault);
        }
        if unlogged > 0 {
            *self.counters.guest_errors.entry("data-path faults not logged".to_owned()).or_default() += unlogged;
        }
    }

    /// The current state for the harness (serializable with serde).
    pub fn snapshot(&self) -> Snapshot {
        let queues = &self.res.queues;
        let eqs = queues
            .eqs
            .iter()
            .map(|(&id, eq)| EqSnapshot {
                id,
                msix_index: eq.msix_index,
                owner: eq.owner,
                entries: eq.ring.entries(),
                events_posted: eq.ring.posted(),
                armed: eq.ring.armed(),
            })
            .collect();
        let cqs = queues
            .cqs
            .iter()
            .map(|(&id, cq)| CqSnapshot {
                id,
                parent_eq: cq.parent_eq,
                entries: cq.ring.entries(),
                completions_posted: cq.ring.posted(),
                armed: cq.ring.armed(),
            })
            .collect();
        let wqs = queues
            .sqs
            .values()
            .chain(queues.rqs.values())
            .map(|wq| {
                let data = self.res.datapath.queue(wq.kind(), wq.id());
                WqSnapshot {
                    id: wq.id(),
                    kind: wq.kind(),
                    cq_id: wq.cq_id,
                    parent_eq: queues.cqs.get(&wq.cq_id).map(|cq| cq.parent_eq),
                    vport: data.map(|q| q.vport),
                    traffic: data.map(|q| q.traffic),
                }
            })
            .collect();
        let devices = self
            .res
            .registered
            .iter()
            .map(|(&(dev_type, instance), &registration)| DeviceSnapshot { dev_type, instance, registration })
            .collect();
        Snapshot {
            hwc: self.hwc.as_ref().map(|hwc| HwcSnapshot {
                ids: hwc.ids(),
                msix_index: hwc.msix_index(),
                pending_responses: hwc.pending_responses(),
            }),
            eqs,
            cqs,
            wqs,
            wq_objs: self.res.wq_objs.clone(),
            dma_regions: self.res.regions.len(),
            devices,
            vectors_raised: queues.raised.clone(),
            steering: self.res.datapath.steering(),
            flows: self.flows.snapshot(),
            counters: self.counters_with_injections(),
        }
    }

    /// Every collection the guest's actions can fill, by name, with its
    /// size and the bound the device keeps it under: counters' keys, queues
    /// and their backlogs, DMA regions, registered devices, work-queue
    /// objects, steered vPorts, data-path queues, flow records, pending SQs
    /// and faults, held and pending HWC responses, injection counts. The
    /// bounds come from the resource budget ([`crate::device::budget`]),
    /// the configuration and the constants next to each collection; a
    /// fuzzer that drives one device for many inputs checks them (fuzz/,
    /// the `persistent` target).
    pub fn footprint(&self) -> Footprint {
        let config = &self.config;
        let queues = &self.res.queues;
        let backlog = queues.eqs.values().map(|eq| eq.ring.backlog()).sum::<usize>()
            + queues.cqs.values().map(|cq| cq.ring.backlog()).sum::<usize>();
        let (steered, data_sqs, data_rqs) = self.res.datapath.sizes();
        let (pending_sqs, faults) = self.engine.sizes();
        let vports = usize::from(config.num_vports.max(1));
        let per_kind = config.max_queues as usize * vports;
        let eqs = usize::try_from(budget::eq_limit(config)).unwrap_or(usize::MAX).saturating_add(1);
        let commands = Command::KNOWN.len() + 1;
        let specs = self.injector.specs();
        let fill = |len: usize, bound: usize| Fill { len, bound };
        Footprint(BTreeMap::from([
            ("counters.commands", fill(self.counters.commands.len(), commands)),
            ("counters.command_errors", fill(self.counters.command_errors.len(), commands)),
            ("counters.guest_errors", fill(self.counters.guest_errors.len(), GUEST_ERROR_KINDS)),
            ("queues.eqs", fill(queues.eqs.len(), eqs)),
            ("queues.cqs", fill(queues.cqs.len(), 2 * per_kind + 1)),
            ("queues.sqs", fill(queues.sqs.len(), per_kind + 1)),
            ("queues.rqs", fill(queues.rqs.len(), per_kind + 1)),
            ("queues.backlog", fill(backlog, MAX_BACKLOG * (eqs + 2 * per_kind + 1))),
            ("queues.vectors_raised", fill(queues.raised.len(), usize::from(config.msix_table_size))),
            ("dma_regions", fill(self.res.regions.len(), MAX_REGIONS)),
            ("registered_devices", fill(self.res.registered.len(), LISTED_DEVICES.len())),
            ("wq_objs", fill(self.res.wq_objs.len(), 2 * per_kind)),
            ("datapath.vports", fill(steered, vports)),
            ("datapath.sqs", fill(data_sqs, per_kind)),
            ("datapath.rqs", fill(data_rqs, per_kind)),
            ("datapath.pending_sqs", fill(pending_sqs, per_kind)),
            ("datapath.faults", fill(faults, MAX_FAULTS)),
            ("flows", fill(self.flows.len(), self.flows.capacity())),
            ("hwc.pending_responses", fill(self.hwc.as_ref().map_or(0, Hwc::pending_responses), MAX_PENDING_RESPONSES)),
            ("inject.commands_counted", fill(self.injector.counted_commands(), specs)),
            ("inject.held_responses", fill(self.injector.held(), MAX_HELD_RESPONSES)),
            ("inject.struck", fill(self.injector.struck.len(), specs)),
        ]))
    }

    fn counters_with_injections(&self) -> Counters {
        let mut counters = self.counters.clone();
        counters.injected = self.injector.struck.clone();
        let faults = &self.res.queues.faults;
        for (key, value) in [("silenced vectors", faults.silenced), ("spoiled entries", faults.spoiled)] {
            if value > 0 {
                counters.injected.insert(key.to_owned(), value);
            }
        }
        counters
    }

    fn guest_error(&mut self, kind: &str, err: &dyn Display) {
        let count = self.counters.guest_errors.entry(kind.to_owned()).or_default();
        *count += 1;
        if *count <= LOG_BURST || count.is_power_of_two() {
            tracing::warn!(kind, count = *count, error = %err, "mana device: bad guest input");
        }
    }

    fn smc_write(&mut self, offset: u64, data: &[u8]) {
        let Some(request) = self.smc.write(offset, data) else {
            return;
        };
        match request {
            SmcRequest::Establish(rings) => {
                let status = match self.establish(rings) {
                    Ok(()) => 0,
                    Err(err) => {
                        self.guest_error("smc establish", &err);
                        SMC_STATUS_FAILED
                    }
                };
                // Dword 7 holds the response once ESTABLISH returns; the init
                // EQEs are already in the EQ, which the driver reads only after
                // it has seen the response.
                self.smc.respond(SmcMsgType::ESTABLISH_HWC.0, status);
            }
            SmcRequest::Destroy => {
                self.teardown();
                self.counters.hwc_destroyed += 1;
                let count = self.counters.hwc_destroyed;
                if log_at_info(count) {
                    tracing::info!(count, "mana device: HWC destroyed, all queues and regions forgotten");
                } else {
                    tracing::debug!(count, "mana device: HWC destroyed");
                }
                self.smc.respond(SmcMsgType::DESTROY_HWC.0, 0);
            }
            SmcRequest::Invalid { msg_type } => {
                self.guest_error("smc message", &format_args!("type {msg_type}"));
                self.smc.respond(msg_type, SMC_STATUS_FAILED);
            }
        }
    }

    fn establish(&mut self, rings: HwcRings) -> Result<(), anyhow::Error> {
        if rings.msix_index >= self.config.msix_table_size {
            anyhow::bail!("HWC EQ MSI-X index {} >= table size {}", rings.msix_index, self.config.msix_table_size);
        }
        // A second ESTABLISH starts from scratch, as after DESTROY.
        self.teardown();
        let mem = self.mem.memory();
        let ids = HwcIds { eq: 0, cq: 0, sq: 0, rq: 0 };
        let params = InitParams {
            max_num_cqs: MAX_NUM_CQS,
            pdid: HWC_PDID,
            gpa_mkey: HWC_GPA_MKEY,
            doorbell: DOORBELL_PAGE as u16,
        };
        let hwc = Hwc::establish(&mut self.res.queues, &mem, self.irq.as_ref(), rings, ids, params)?;
        self.res.hwc_eq = Some(ids.eq);
        self.hwc = Some(hwc);
        self.counters.hwc_established += 1;
        let count = self.counters.hwc_established;
        if log_at_info(count) {
            tracing::info!(count, msix_index = rings.msix_index, eq = ?rings.eq, "mana device: HWC established");
        } else {
            tracing::debug!(count, msix_index = rings.msix_index, "mana device: HWC established");
        }
        Ok(())
    }

    /// Raises `event` now, as its `--inject EVENT@S` would when due (whoever
    /// runs the device asks for it: `mana-device`'s control channel,
    /// [`mana_device_api::control::Op::Raise`]). Returns whether the event
    /// reached the driver: false when there is no HWC to post it on (no driver
    /// bound, or between an unload and the next probe), nothing done then.
    pub fn raise_event(&mut self, event: DeviceEvent) -> bool {
        self.raise(event)
    }

    /// Posts `event`'s EQE on the HWC EQ ([`crate::inject::timed`]); a
    /// reset then forgets everything, SMC included, as a function-level
    /// reset does. Without an HWC there is no one to tell: logged, nothing
    /// done, false returned.
    fn raise(&mut self, event: DeviceEvent) -> bool {
        let Some(eq) = self.res.hwc_eq.filter(|_| self.hwc.is_some()) else {
            tracing::info!(event = event.name(), "mana device: injected event not raised: no HWC");
            return false;
        };
        tracing::info!(event = event.name(), eq, "mana device: injected fault: device event");
        let mem = self.mem.memory();
        let posted = self.res.queues.post_eqe(&mem, self.irq.as_ref(), eq, timed::eqe(event));
        if let Err(err) = &posted {
            self.guest_error("hwc event", err);
        }
        if event == DeviceEvent::Reset {
            self.teardown();
            self.smc = Smc::default();
        }
        posted.is_ok()
    }

    /// Forgets the HWC and everything the commands created.
    fn teardown(&mut self) {
        self.hwc = None;
        self.engine.reset();
        self.injector.forget_held();
        let raised = std::mem::take(&mut self.res.queues.raised);
        let faults = std::mem::take(&mut self.res.queues.faults);
        self.res = Resources::default();
        self.res.queues.raised = raised;
        self.res.queues.faults = faults;
    }

    fn doorbell(&mut self, kind: DoorbellKind, data: &[u8]) {
        let Ok(bytes) = <[u8; 8]>::try_from(data) else {
            self.guest_error("doorbell width", &format_args!("{} bytes", data.len()));
            return;
        };
        let value = u64::from_le_bytes(bytes);
        let mem = self.mem.memory();
        let irq = Arc::clone(&self.irq);
        let result = match kind {
            DoorbellKind::Eq => {
                let db = EqDoorbell::from_bits(value);
                self.res.queues.eq_doorbell(&mem, irq.as_ref(), u32::from(db.id()), db.tail_ptr(), db.arm())
            }
            DoorbellKind::Cq => {
                let db = CqDoorbell::from_bits(value);
                self.res.queues.cq_doorbell(&mem, irq.as_ref(), db.id(), db.tail_ptr(), db.arm())
            }
            DoorbellKind::Sq => {
                let db = WqDoorbell::from_bits(value);
                self.sq_doorbell(&mem, irq.as_ref(), db.id(), db.tail_ptr());
                Ok(())
            }
            DoorbellKind::Rq => {
                let db = WqDoorbell::from_bits(value);
                self.rq_doorbell(&mem, irq.as_ref(), db.id(), db.tail_ptr());
                Ok(())
            }
            DoorbellKind::Dim => Ok(()),
        };
        if let Err(err) = result {
            self.guest_error("doorbell", &err);
        }
        // Continue data-path work: this SQ's new entries, or what an earlier
        // batch left (see crate::datapath::engine).
        self.run_data_path();
    }

    fn rq_doorbell(&mut self, mem: &Mem, irq: &dyn InterruptSink, id: u32, tail: u32) {
        let Some(rq) = self.res.queues.rqs.get_mut(&id) else {
            self.guest_error("doorbell for unknown RQ", &format_args!("{id}"));
            return;
        };
        if let Err(err) = rq.doorbell(tail) {
            self.guest_error("doorbell", &err);
            return;
        }
        let is_hwc = self.hwc.as_ref().is_some_and(|hwc| hwc.ids().rq == id);
        if let (true, Some(hwc)) = (is_hwc, self.hwc.as_mut()) {
            if let Err(err) = hwc.flush(&mut self.res.queues, mem, irq) {
                self.guest_error("hwc response", &err);
            }
        }
    }

    fn sq_doorbell(&mut self, mem: &Mem, irq: &dyn InterruptSink, id: u32, tail: u32) {
        let Some(sq) = self.res.queues.sqs.get_mut(&id) else {
            self.guest_error("doorbell for unknown SQ", &format_args!("{id}"));
            return;
        };
        if let Err(err) = sq.doorbell(tail) {
            self.guest_error("doorbell", &err);
            return;
        }
        if self.hwc.as_ref().is_some_and(|hwc| hwc.ids().sq == id) {
            self.run_hwc(mem, irq);
        } else if self.res.datapath.is_data_sq(id) {
            self.engine.sq_posted(id);
        }
    }

    /// Reads the requests on the HWC SQ, runs them and delivers the responses.
    fn run_hwc(&mut self, mem: &Mem, irq: &dyn InterruptSink) {
        let Some(hwc) = self.hwc.as_ref() else { return };
        let requests = match hwc.take_requests(&mut self.res.queues, mem, irq) {
            Ok(requests) => requests,
            Err(err) => {
                self.guest_error("hwc sq", &err);
                return;
            }
        };
        for request in requests {
            if let Some(err) = &request.error {
                self.guest_error("hwc request", err);
            }
            let fate = framing::parse::<GdmaReqHdr>(&request.bytes)
                .map_or(CommandFate::Run, |hdr| self.injector.before_command(Command(hdr.req.msg_type.get())));
            let mut outcome = match fate {
                CommandFate::Fail(code) => commands::refuse(&request.bytes, code),
                CommandFate::Run | CommandFate::Delay(_) => {
                    let mut ctx =
                        Ctx { res: &mut self.res, mem, irq, config: &self.config, totals: &self.counters.traffic };
                    commands::dispatch(&mut ctx, &request.bytes)
                }
            };
            let name = outcome.command.name().unwrap_or(UNKNOWN_COMMAND);
            tracing::debug!(command = %name, code = outcome.command.0, "mana device: HWC command");
            *self.counters.commands.entry(name.to_owned()).or_default() += 1;
            if let Some(err) = &outcome.error {
                *self.counters.command_errors.entry(name.to_owned()).or_default() += 1;
                if !matches!(err, framing::CommandError::Unsupported(_) | framing::CommandError::Injected(_)) {
                    self.guest_error("command", &format_args!("{name}: {err}"));
                } else {
                    tracing::debug!(command = %name, "mana device: unsupported command");
                }
            }
            self.injector.adjust_response(outcome.command, &mut outcome.response);
            let response = match fate {
                CommandFate::Delay(delay) => match self.injector.hold(Instant::now() + delay, outcome.response) {
                    Ok(()) => None,
                    Err(response) => {
                        let held = format_args!("{MAX_HELD_RESPONSES} held already; answered at once");
                        self.guest_error("hwc-delay: held responses full", &held);
                        Some(response)
                    }
                },
                CommandFate::Run | CommandFate::Fail(_) => Some(outcome.response),
            };
            if let Some(response) = response {
                let Some(hwc) = self.hwc.as_mut() else { return };
                if let Err(err) = hwc.respond(&mut self.res.queues, mem, irq, response) {
                    self.guest_error("hwc response", &err);
                }
            }
            self.raise_spurious(irq);
        }
    }

    /// The `spurious-irq` injections: each target EQ's vector, without an
    /// event, when that EQ exists.
    fn raise_spurious(&mut self, irq: &dyn InterruptSink) {
        let targets: Vec<SpuriousTarget> = self.injector.spurious().collect();
        for target in targets {
            let eq = match target {
                SpuriousTarget::Eq(id) => Some(id),
                SpuriousTarget::Vector(v) => {
                    self.res.queues.eqs.iter().find(|(_, eq)| eq.msix_index == v).map(|(&id, _)| id)
                }
            };
            if let Some(eq) = eq.filter(|id| self.res.queues.eqs.contains_key(id)) {
                self.res.queues.raise_spurious(irq, eq);
            }
        }
    }
}

/// The `gpa_mkey` GDMA_REGISTER_DEVICE gave the MANA device (instance 0),
/// which the Ethernet driver puts in every SGE.
fn mana_mem_key(res: &Resources) -> Option<u32> {
    res.registered.get(&(DeviceType::MANA.0, 0)).map(|registration| registration.gpa_mkey)
}

impl Bar0Handler for ManaDevice {
    fn size(&self) -> u64 {
        regs::BAR0_SIZE
    }

    fn read(&mut self, offset: u64, data: &mut [u8]) {
        match regs::classify(offset, data.len() as u64) {
            Bar0Target::Register(at) => regs::read_registers(at, data),
            Bar0Target::Smc(at) => self.smc.read(at, data),
            Bar0Target::Doorbell { .. } => data.fill(0),
            Bar0Target::Unmapped => data.fill(0xFF),
        }
    }

    fn write(&mut self, offset: u64, data: &[u8]) {
        match regs::classify(offset, data.len() as u64) {
            Bar0Target::Smc(at) => self.smc_write(at, data),
            Bar0Target::Doorbell { page, kind } => {
                if page >= regs::NUM_DB_PAGES {
                    self.guest_error("doorbell page", &format_args!("{page}"));
                } else {
                    self.doorbell(kind, data);
                }
            }
            Bar0Target::Register(at) => self.guest_error("register write", &format_args!("{at:#x}")),
            Bar0Target::Unmapped => self.guest_error("unmapped write", &format_args!("{offset:#x}+{}", data.len())),
        }
    }

    fn reset(&mut self) {
        self.teardown();
        self.smc = Smc::default();
        self.counters.resets += 1;
    }
}
