//! GDMA queues in guest memory: EQs and CQs the device produces into, SQs and
//! RQs it consumes from, with owner bits and arming.
//!
//! Models the device side of the driver's conventions in
//! drivers/net/ethernet/microsoft/mana/gdma_main.c (Linux 6.1-7.3):
//! `mana_gd_process_eq_events()` / `mana_gd_read_cqe()` (consumer `head`
//! starts at N = entries; an entry is new when its owner bits equal
//! `(head / N) & 7`), `mana_gd_ring_doorbell()` (EQ/CQ doorbells carry the
//! consumer head modulo `N << 3` and an arm bit; SQ/RQ doorbells carry the
//! producer in bytes) and `mana_gd_post_work_request()` (WQE layout).
//!
//! Producer rule: producer P starts at N; an entry goes to slot `P % N` with
//! owner bits `(P / N) & 7`; the dword holding the owner bits is written last
//! (release store). The device never writes more than N entries ahead of the
//! last consumer position the driver reported; later entries wait in a bounded
//! backlog and are written when a doorbell frees room.
//!
//! Arming: EQs and CQs start armed. An entry posted to an armed queue notifies
//! (EQ: raise its MSI-X vector; CQ: post a COMPLETION EQE to the parent EQ)
//! and disarms. An arm doorbell with entries still pending notifies at once;
//! with none pending it re-arms. A doorbell without the arm bit disarms.
#![forbid(unsafe_code)]

pub mod dma_region;

use crate::defs::{Cqe, CqeInfo, Eqe, EqeType, Le32, Sge, WqeHeader};
use crate::interrupt::InterruptSink;
pub use mana_device_api::snapshot::{Owner, WqKind};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::Ordering;
use vm_memory::{Bytes, GuestAddress, GuestMemoryError, GuestMemoryMmap};
use zerocopy::{FromBytes, IntoBytes};

/// Guest memory as the queues access it.
pub type Mem = GuestMemoryMmap<()>;

/// Queue memory is described in 4 KiB pages (GDMA_PAGE_TYPE_4K).
pub const PAGE_SIZE: u64 = 4096;
/// `GDMA_WQE_BU_SIZE`: work-queue entries are multiples of 32 bytes.
pub const WQE_BU_SIZE: u32 = 32;
/// `GDMA_MAX_SQE_SIZE`.
pub const MAX_SQE_SIZE: u32 = 512;
/// `GDMA_MAX_RQE_SIZE`.
pub const MAX_RQE_SIZE: u32 = 256;
/// Entries that may wait for room in one EQ or CQ before new ones are dropped.
pub const MAX_BACKLOG: usize = 4096;
/// `GDMA_EQE_OWNER_BITS` / `GDMA_CQE_OWNER_BITS`: the consumer head is kept modulo `N << 3`.
const OWNER_LAPS: u32 = 8;

/// Errors of queue memory and queue protocol.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// A guest-memory access failed (address not mapped).
    #[error("guest memory access of {len} bytes at {addr:#x} failed: {error}")]
    Guest {
        /// Guest-physical address.
        addr: u64,
        /// Access length.
        len: usize,
        /// vm-memory's error.
        error: GuestMemoryError,
    },
    /// A ring was described with a size that is not a non-zero multiple of
    /// the entry size, or with too few pages.
    #[error("bad ring: {size} bytes in {pages} pages")]
    BadRing {
        /// Ring size in bytes.
        size: u64,
        /// Pages supplied.
        pages: usize,
    },
    /// A doorbell reported a consumer position the device never produced up to.
    #[error("queue {id}: doorbell position {tail:#x} is outside 0..={pending} pending entries")]
    BadDoorbell {
        /// Queue id.
        id: u32,
        /// Position from the doorbell.
        tail: u32,
        /// Entries pending before the doorbell.
        pending: u32,
    },
    /// A work-queue entry is malformed.
    #[error("queue {id}: bad WQE at byte {offset:#x}: {reason}")]
    BadWqe {
        /// Queue id.
        id: u32,
        /// Byte offset of the WQE in the ring.
        offset: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// The backlog of an EQ or CQ is full; the entry was dropped.
    #[error("queue {id}: backlog full, entry dropped")]
    Overrun {
        /// Queue id.
        id: u32,
    },
}

/// Guest memory holding a queue: a list of 4 KiB pages (contiguous for HWC
/// rings, a DMA region's page list for the others), `size` bytes long.
#[derive(Debug, Clone)]
pub struct Ring {
    pages: Vec<GuestAddress>,
    size: u64,
}

impl Ring {
    /// A ring of `size` bytes starting at `base` (contiguous).
    ///
    /// # Errors
    /// [`QueueError::BadRing`] if `size` is 0 or not a multiple of 4 KiB.
    pub fn contiguous(base: GuestAddress, size: u64) -> Result<Self, QueueError> {
        if size == 0 || size % PAGE_SIZE != 0 {
            return Err(QueueError::BadRing { size, pages: 0 });
        }
        let pages = (0..size / PAGE_SIZE).map(|i| GuestAddress(base.0.wrapping_add(i * PAGE_SIZE))).collect();
        Ok(Self { pages, size })
    }

    /// A ring of `size` bytes over the first pages of `pages`.
    ///
    /// # Errors
    /// [`QueueError::BadRing`] if `size` is 0, not a multiple of 4 KiB, or
    /// needs more pages than given.
    pub fn from_pages(pages: &[u64], size: u64) -> Result<Self, QueueError> {
        let needed = size / PAGE_SIZE;
        if size == 0 || size % PAGE_SIZE != 0 || needed > pages.len() as u64 {
            return Err(QueueError::BadRing { size, pages: pages.len() });
        }
        let pages = pages.iter().take(needed as usize).map(|&p| GuestAddress(p)).collect();
        Ok(Self { pages, size })
    }

    /// Ring size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Guest address of byte `offset` (taken modulo the ring size) and the
    /// bytes left in that page.
    fn locate(&self, offset: u64) -> (GuestAddress, u64) {
        let offset = offset % self.size;
        let page = self.pages[(offset / PAGE_SIZE) as usize];
        let in_page = offset % PAGE_SIZE;
        (GuestAddress(page.0.wrapping_add(in_page)), PAGE_SIZE - in_page)
    }

    /// Reads `buf.len()` bytes starting at ring byte `offset`, wrapping at the
    /// end of the ring.
    ///
    /// # Errors
    /// [`QueueError::Guest`] if a page is not in guest memory.
    pub fn read(&self, mem: &Mem, offset: u64, buf: &mut [u8]) -> Result<(), QueueError> {
        let mut done = 0usize;
        while done < buf.len() {
            let (addr, room) = self.locate(offset + done as u64);
            let take = (buf.len() - done).min(room as usize);
            mem.read_slice(&mut buf[done..done + take], addr).map_err(|source| QueueError::Guest {
                addr: addr.0,
                len: take,
                error: source,
            })?;
            done += take;
        }
        Ok(())
    }

    /// Writes an entry (16 or 64 bytes, never crossing a page) at ring byte
    /// `offset`: every byte but the last dword first, then the last dword
    /// (which holds the owner bits) with a release store.
    ///
    /// # Errors
    /// [`QueueError::Guest`] if the page is not in guest memory.
    fn write_entry(&self, mem: &Mem, offset: u64, entry: &[u8]) -> Result<(), QueueError> {
        let (addr, _) = self.locate(offset);
        let split = entry.len() - 4;
        let guest = |source| QueueError::Guest { addr: addr.0, len: entry.len(), error: source };
        mem.write_slice(&entry[..split], addr).map_err(guest)?;
        let last = Le32::read_from_bytes(&entry[split..])
            .map(Le32::get)
            .map_err(|_| QueueError::BadRing { size: entry.len() as u64, pages: 0 })?;
        let owner_addr = GuestAddress(addr.0.wrapping_add(split as u64));
        mem.store(last, owner_addr, Ordering::Release).map_err(guest)
    }
}

/// An entry the device produces: an EQE or a CQE.
pub trait Entry: Copy + IntoBytes + zerocopy::Immutable {
    /// Entry size in bytes (16 or 64).
    const SIZE: u32;
    /// Sets the owner bits.
    fn set_owner(&mut self, owner: u8);
}

impl Entry for Eqe {
    const SIZE: u32 = 16;
    fn set_owner(&mut self, owner: u8) {
        self.info.set_owner_bits(owner);
    }
}

impl Entry for Cqe {
    const SIZE: u32 = 64;
    fn set_owner(&mut self, owner: u8) {
        self.info.set_owner_bits(owner);
    }
}

/// The producer side of an EQ or CQ.
#[derive(Debug, Clone)]
pub struct Producer<E: Entry> {
    id: u32,
    ring: Ring,
    entries: u32,
    /// Producer count modulo `entries * 8`.
    producer: u32,
    /// Consumer position the driver last reported, modulo `entries * 8`.
    consumer: u32,
    armed: bool,
    /// Entries waiting for room, each with whether its owner bits are spoiled
    /// on purpose ([`crate::inject`]).
    backlog: VecDeque<(E, bool)>,
    posted: u64,
}

/// What posting or a doorbell asks of the owner of a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notify {
    /// Nothing to do.
    None,
    /// Notify: raise the EQ's vector, or post a COMPLETION EQE for the CQ.
    Fire,
}

impl<E: Entry> Producer<E> {
    /// A producer over `ring` for queue `id`, armed, empty, producer = consumer = N.
    ///
    /// # Errors
    /// [`QueueError::BadRing`] if the ring holds fewer than 2 entries or
    /// more than 2^27 (so `N << 3` stays inside the 31-bit doorbell field).
    pub fn new(id: u32, ring: Ring) -> Result<Self, QueueError> {
        let entries = ring.size() / u64::from(E::SIZE);
        if !(2..=1 << 27).contains(&entries) || !entries.is_power_of_two() {
            return Err(QueueError::BadRing { size: ring.size(), pages: ring.pages.len() });
        }
        let entries = entries as u32;
        Ok(Self {
            id,
            ring,
            entries,
            producer: entries,
            consumer: entries,
            armed: true,
            backlog: VecDeque::new(),
            posted: 0,
        })
    }

    fn modulus(&self) -> u32 {
        self.entries * OWNER_LAPS
    }

    /// Entries written and not yet reported consumed.
    pub fn pending(&self) -> u32 {
        (self.producer + self.modulus() - self.consumer) % self.modulus()
    }

    /// Number of entries in the ring.
    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// Whether the next entry will notify.
    pub fn armed(&self) -> bool {
        self.armed
    }

    /// Entries written so far.
    pub fn posted(&self) -> u64 {
        self.posted
    }

    /// Entries waiting for room.
    pub fn backlog(&self) -> usize {
        self.backlog.len()
    }

    fn write_next(&mut self, mem: &Mem, mut entry: E, spoil: bool) -> Result<(), QueueError> {
        let slot = self.producer % self.entries;
        let owner = ((self.producer / self.entries) % OWNER_LAPS) as u8;
        entry.set_owner(if spoil { crate::inject::spoiled_owner(owner) } else { owner });
        self.ring.write_entry(mem, u64::from(slot) * u64::from(E::SIZE), entry.as_bytes())?;
        self.producer = (self.producer + 1) % self.modulus();
        self.posted += 1;
        Ok(())
    }

    fn flush_backlog(&mut self, mem: &Mem) -> Result<(), QueueError> {
        while self.pending() < self.entries {
            let Some((entry, spoil)) = self.backlog.pop_front() else {
                break;
            };
            self.write_next(mem, entry, spoil)?;
        }
        Ok(())
    }

    /// Posts `entry`, or queues it if the ring is full from the driver's
    /// point of view. Returns [`Notify::Fire`] if the queue was armed.
    ///
    /// # Errors
    /// [`QueueError::Guest`] if the ring page is not mapped;
    /// [`QueueError::Overrun`] if the backlog is full (the entry is dropped).
    pub fn post(&mut self, mem: &Mem, entry: E) -> Result<Notify, QueueError> {
        self.post_spoiled(mem, entry, false)
    }

    /// [`Producer::post`], with owner bits that are wrong on purpose when
    /// `spoil` ([`crate::inject::spoiled_owner`]).
    ///
    /// # Errors
    /// As [`Producer::post`].
    pub fn post_spoiled(&mut self, mem: &Mem, entry: E, spoil: bool) -> Result<Notify, QueueError> {
        if !self.backlog.is_empty() || self.pending() >= self.entries {
            if self.backlog.len() >= MAX_BACKLOG {
                return Err(QueueError::Overrun { id: self.id });
            }
            self.backlog.push_back((entry, spoil));
            return Ok(Notify::None);
        }
        self.write_next(mem, entry, spoil)?;
        if self.armed {
            self.armed = false;
            return Ok(Notify::Fire);
        }
        Ok(Notify::None)
    }

    /// Handles a doorbell: `tail` is the driver's consumer head modulo
    /// `N << 3`. Returns [`Notify::Fire`] when an arm finds entries pending.
    ///
    /// # Errors
    /// [`QueueError::BadDoorbell`] if `tail` is not between the last consumer
    /// position and the producer (the doorbell is ignored);
    /// [`QueueError::Guest`] if flushing the backlog failed.
    pub fn doorbell(&mut self, mem: &Mem, tail: u32, arm: bool) -> Result<Notify, QueueError> {
        let pending = self.pending();
        let advance = (tail % self.modulus() + self.modulus() - self.consumer) % self.modulus();
        if tail >= self.modulus() || advance > pending {
            return Err(QueueError::BadDoorbell { id: self.id, tail, pending });
        }
        self.consumer = tail;
        self.flush_backlog(mem)?;
        if !arm {
            self.armed = false;
            return Ok(Notify::None);
        }
        if self.pending() == 0 {
            self.armed = true;
            Ok(Notify::None)
        } else {
            self.armed = false;
            Ok(Notify::Fire)
        }
    }
}

/// An event queue: a producer plus its MSI-X vector.
#[derive(Debug, Clone)]
pub struct EventQueue {
    /// Ring and arming state.
    pub ring: Producer<Eqe>,
    /// MSI-X table index (validated against the table size when created).
    pub msix_index: u16,
    /// Owning device.
    pub owner: Owner,
}

/// A completion queue: a producer plus its parent EQ.
#[derive(Debug, Clone)]
pub struct CompletionQueue {
    /// Ring and arming state.
    pub ring: Producer<Cqe>,
    /// EQ that receives COMPLETION events for this CQ.
    pub parent_eq: u32,
}

/// A work-queue entry read from an SQ or RQ.
#[derive(Debug, Clone)]
pub struct Wqe {
    /// Byte offset of the entry in the ring.
    pub offset: u32,
    /// Header.
    pub header: WqeHeader,
    /// Scatter-gather list.
    pub sges: Vec<Sge>,
}

/// A work queue the device consumes.
#[derive(Debug, Clone)]
pub struct WorkQueue {
    id: u32,
    kind: WqKind,
    ring: Ring,
    /// Device consumer in bytes (wrapping u32, like the driver's producer).
    consumer: u32,
    /// Producer in bytes from the last doorbell.
    producer: u32,
    /// CQ that receives this queue's completions.
    pub cq_id: u32,
}

impl WorkQueue {
    /// A work queue over `ring`, empty.
    ///
    /// # Errors
    /// [`QueueError::BadRing`] unless the ring size is a power of two ≥ 4 KiB.
    pub fn new(id: u32, kind: WqKind, ring: Ring, cq_id: u32) -> Result<Self, QueueError> {
        if !ring.size().is_power_of_two() || ring.size() > u64::from(u32::MAX / 2) {
            return Err(QueueError::BadRing { size: ring.size(), pages: ring.pages.len() });
        }
        Ok(Self { id, kind, ring, consumer: 0, producer: 0, cq_id })
    }

    /// Queue id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Queue kind.
    pub fn kind(&self) -> WqKind {
        self.kind
    }

    /// Ring size in bytes (for the device's page budget, [`crate::device::budget`]).
    pub fn ring_bytes(&self) -> u64 {
        self.ring.size()
    }

    fn ring_size(&self) -> u32 {
        self.ring.size() as u32
    }

    /// Bytes posted and not yet consumed.
    pub fn available(&self) -> u32 {
        self.producer.wrapping_sub(self.consumer)
    }

    /// Records the producer from a doorbell (`tail_ptr`, bytes).
    ///
    /// # Errors
    /// [`QueueError::BadDoorbell`] if the producer would be more than a ring
    /// ahead of the device or behind it (the doorbell is ignored).
    pub fn doorbell(&mut self, tail: u32) -> Result<(), QueueError> {
        let ahead = tail.wrapping_sub(self.consumer);
        if ahead > self.ring_size() || ahead % WQE_BU_SIZE != 0 {
            return Err(QueueError::BadDoorbell { id: self.id, tail, pending: self.available() });
        }
        self.producer = tail;
        Ok(())
    }

    /// Takes the next entry, if any.
    ///
    /// # Errors
    /// [`QueueError::BadWqe`] for a malformed entry (the queue is then drained
    /// up to the producer so a bad entry is never re-read), or
    /// [`QueueError::Guest`].
    pub fn pop(&mut self, mem: &Mem) -> Result<Option<Wqe>, QueueError> {
        let mut buf = [0u8; MAX_SQE_SIZE as usize];
        let wqe = match self.peek(mem, &mut buf) {
            Ok(Some(wqe)) => wqe,
            Ok(None) => return Ok(None),
            Err(err) => {
                self.skip_to_producer();
                return Err(err);
            }
        };
        if wqe.header.num_sge() == 0 {
            self.skip_to_producer();
            return Err(QueueError::BadWqe { id: self.id, offset: wqe.offset, reason: "no SGE" });
        }
        self.consume(wqe.size);
        let sges =
            wqe.sgl(&buf).chunks_exact(size_of::<Sge>()).filter_map(|chunk| Sge::read_from_bytes(chunk).ok()).collect();
        Ok(Some(Wqe { offset: wqe.offset, header: wqe.header, sges }))
    }

    /// Reads the entry at the consumer into `buf` (at least [`MAX_SQE_SIZE`]
    /// bytes for an SQ, [`MAX_RQE_SIZE`] for an RQ) without consuming it: the
    /// 8-byte header, the inline OOB and the SGL, in ring order (SGEs may wrap
    /// to the ring start). `None` when nothing is posted.
    ///
    /// A header with no SGE is returned as it is (its size is still known);
    /// the caller decides.
    ///
    /// # Errors
    /// [`QueueError::BadWqe`] when the entry is larger than the queue's
    /// maximum WQE size (`GDMA_MAX_SQE_SIZE` / `GDMA_MAX_RQE_SIZE`) or extends
    /// past the producer: its size cannot be trusted, so the queue cannot be
    /// walked further; [`QueueError::Guest`] if the ring is not in guest memory.
    pub fn peek(&self, mem: &Mem, buf: &mut [u8]) -> Result<Option<WqeSlot>, QueueError> {
        if self.available() == 0 {
            return Ok(None);
        }
        let offset = self.consumer % self.ring_size();
        let bad = |reason| QueueError::BadWqe { id: self.id, offset, reason };
        let max = match self.kind {
            WqKind::Sq => MAX_SQE_SIZE,
            WqKind::Rq => MAX_RQE_SIZE,
        };
        let first = buf.get_mut(..WQE_BU_SIZE as usize).ok_or(bad("buffer smaller than a basic unit"))?;
        // One basic unit is always posted when anything is (the producer moves in BUs).
        self.ring.read(mem, u64::from(offset), first)?;
        let (header, _) = WqeHeader::read_from_prefix(first).map_err(|_| bad("short header"))?;
        let oob = u32::from(header.inline_oob_size_div4()) * 4;
        let len = 8 + oob + 16 * u32::from(header.num_sge());
        let size = len.div_ceil(WQE_BU_SIZE) * WQE_BU_SIZE;
        if size > max || size as usize > buf.len() {
            return Err(bad("larger than the maximum WQE size"));
        }
        if size > self.available() {
            return Err(bad("extends past the producer"));
        }
        if size > WQE_BU_SIZE {
            let rest = &mut buf[WQE_BU_SIZE as usize..size as usize];
            self.ring.read(mem, u64::from(offset + WQE_BU_SIZE), rest)?;
        }
        Ok(Some(WqeSlot { offset, size, header }))
    }

    /// Consumes `size` bytes (one entry [`WorkQueue::peek`] returned).
    pub fn consume(&mut self, size: u32) {
        self.consumer = self.consumer.wrapping_add(size.min(self.available()));
    }

    /// Drops everything posted: the queue cannot be walked past a broken entry.
    pub fn skip_to_producer(&mut self) {
        self.consumer = self.producer;
    }
}

/// The position and shape of an entry [`WorkQueue::peek`] read.
#[derive(Debug, Clone, Copy)]
pub struct WqeSlot {
    /// Byte offset of the entry in the ring.
    pub offset: u32,
    /// Entry size in bytes (a multiple of 32).
    pub size: u32,
    /// The 8-byte header.
    pub header: WqeHeader,
}

impl WqeSlot {
    /// The inline OOB bytes in the `buf` [`WorkQueue::peek`] filled.
    pub fn oob<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        let oob = usize::from(self.header.inline_oob_size_div4()) * 4;
        buf.get(8..8 + oob).unwrap_or_default()
    }

    /// The SGL bytes (16 per SGE) in the `buf` [`WorkQueue::peek`] filled.
    pub fn sgl<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        let start = 8 + usize::from(self.header.inline_oob_size_div4()) * 4;
        let len = 16 * usize::from(self.header.num_sge());
        buf.get(start..start + len).unwrap_or_default()
    }
}

/// Every queue the device knows, by id, and the vectors it raised.
#[derive(Debug, Default, Clone)]
pub struct Queues {
    /// Event queues by EQ id (< 65536).
    pub eqs: BTreeMap<u32, EventQueue>,
    /// Completion queues by CQ id (< MAX_NUM_CQS).
    pub cqs: BTreeMap<u32, CompletionQueue>,
    /// Send queues by SQ id.
    pub sqs: BTreeMap<u32, WorkQueue>,
    /// Receive queues by RQ id.
    pub rqs: BTreeMap<u32, WorkQueue>,
    /// MSI-X vectors raised, by index.
    pub raised: BTreeMap<u16, u64>,
    /// Injected queue faults ([`crate::inject`]): kept, like `raised`, when
    /// the HWC is torn down.
    pub faults: crate::inject::QueueFaults,
}

/// Lowest id not in `map` that is below `limit`.
pub fn free_id<V>(map: &BTreeMap<u32, V>, limit: u32) -> Option<u32> {
    let mut candidate = 0u32;
    for &id in map.keys() {
        if id != candidate {
            break;
        }
        candidate = candidate.checked_add(1)?;
    }
    (candidate < limit).then_some(candidate)
}

impl Queues {
    fn raise(&mut self, irq: &dyn InterruptSink, eq_id: u32) {
        if let Some(eq) = self.eqs.get(&eq_id) {
            let vector = eq.msix_index;
            if self.faults.silences(vector) {
                return;
            }
            *self.raised.entry(vector).or_default() += 1;
            irq.raise(vector);
        }
    }

    /// Raises the vector of EQ `eq_id` without posting anything (an injected
    /// spurious interrupt, [`crate::inject`]); nothing when the EQ does not
    /// exist: a vector is never raised for an EQ that is not there.
    pub fn raise_spurious(&mut self, irq: &dyn InterruptSink, eq_id: u32) {
        self.raise(irq, eq_id);
    }

    /// Posts `eqe` on EQ `eq_id` and raises its vector if the EQ was armed.
    /// An unknown EQ drops the event (a vector is never raised for it).
    ///
    /// # Errors
    /// As [`Producer::post`].
    pub fn post_eqe(&mut self, mem: &Mem, irq: &dyn InterruptSink, eq_id: u32, eqe: Eqe) -> Result<(), QueueError> {
        let Some(eq) = self.eqs.get_mut(&eq_id) else {
            return Ok(());
        };
        let spoil = self.faults.next_entry_spoiled(mana_device_api::inject::EntryKind::Eqe);
        if eq.ring.post_spoiled(mem, eqe, spoil)? == Notify::Fire {
            self.raise(irq, eq_id);
        }
        Ok(())
    }

    /// Posts `cqe` on CQ `cq_id`; if the CQ was armed, posts a COMPLETION EQE
    /// (`details[0]` = CQ id) to its parent EQ.
    ///
    /// # Errors
    /// As [`Producer::post`]; an unknown CQ drops the completion.
    pub fn post_cqe(&mut self, mem: &Mem, irq: &dyn InterruptSink, cq_id: u32, cqe: Cqe) -> Result<(), QueueError> {
        let Some(cq) = self.cqs.get_mut(&cq_id) else {
            return Ok(());
        };
        let spoil = self.faults.next_entry_spoiled(mana_device_api::inject::EntryKind::Cqe);
        if cq.ring.post_spoiled(mem, cqe, spoil)? == Notify::Fire {
            let parent = cq.parent_eq;
            self.post_eqe(mem, irq, parent, completion_eqe(cq_id))?;
        }
        Ok(())
    }

    /// EQ doorbell: consumer position and arm.
    ///
    /// # Errors
    /// As [`Producer::doorbell`]; an unknown EQ is ignored.
    pub fn eq_doorbell(
        &mut self,
        mem: &Mem,
        irq: &dyn InterruptSink,
        eq_id: u32,
        tail: u32,
        arm: bool,
    ) -> Result<(), QueueError> {
        let Some(eq) = self.eqs.get_mut(&eq_id) else {
            return Ok(());
        };
        if eq.ring.doorbell(mem, tail, arm)? == Notify::Fire {
            self.raise(irq, eq_id);
        }
        Ok(())
    }

    /// CQ doorbell: consumer position and arm.
    ///
    /// # Errors
    /// As [`Producer::doorbell`]; an unknown CQ is ignored.
    pub fn cq_doorbell(
        &mut self,
        mem: &Mem,
        irq: &dyn InterruptSink,
        cq_id: u32,
        tail: u32,
        arm: bool,
    ) -> Result<(), QueueError> {
        let Some(cq) = self.cqs.get_mut(&cq_id) else {
            return Ok(());
        };
        if cq.ring.doorbell(mem, tail, arm)? == Notify::Fire {
            let parent = cq.parent_eq;
            self.post_eqe(mem, irq, parent, completion_eqe(cq_id))?;
        }
        Ok(())
    }
}

/// An EQE of `eqe_type` with `details[0] = detail`.
pub fn event(eqe_type: EqeType, detail: u32) -> Eqe {
    let mut eqe = Eqe::default();
    eqe.details[0] = Le32::new(detail);
    eqe.info.set_eqe_type(eqe_type.0);
    eqe
}

/// The GDMA_EQE_COMPLETION event for CQ `cq_id` (`details[0]` bits 0-23).
pub fn completion_eqe(cq_id: u32) -> Eqe {
    event(EqeType::COMPLETION, cq_id & 0x00FF_FFFF)
}

/// A CQE with `data` (≤ 60 bytes) for work queue `wq_num`.
pub fn completion(data: &[u8], wq_num: u32, is_sq: bool) -> Cqe {
    let mut cqe = <Cqe as zerocopy::FromZeros>::new_zeroed();
    let len = data.len().min(60);
    cqe.as_mut_bytes()[..len].copy_from_slice(&data[..len]);
    cqe.info = CqeInfo::new().with_wq_num(wq_num).with_is_sq(is_sq);
    cqe
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem() -> Mem {
        Mem::from_ranges(&[(GuestAddress(0), 0x10_000)]).expect("test RAM")
    }

    fn owner_at(mem: &Mem, slot: u64) -> u8 {
        let mut eqe = Eqe::default();
        Ring::contiguous(GuestAddress(0), 4096).expect("ring").read(mem, slot * 16, eqe.as_mut_bytes()).expect("read");
        eqe.info.owner_bits()
    }

    #[test]
    fn owner_bits_follow_the_lap_and_wrap_at_eight_laps() {
        // mana_gd_process_eq_events(): with head starting at N, lap k's entries
        // carry owner (k + 1) & 7, so the 8th lap writes 0 and the 9th 1 again.
        let mem = mem();
        let mut eq = Producer::<Eqe>::new(1, Ring::contiguous(GuestAddress(0), 4096).expect("ring")).expect("eq");
        let n = eq.entries();
        assert_eq!(n, 256);
        for lap in 0..9u32 {
            for i in 0..n {
                eq.post(&mem, Eqe::default()).expect("post");
                // Consume as the driver would: head = N + written.
                let head = (n + lap * n + i + 1) % (n * 8);
                eq.doorbell(&mem, head, false).expect("doorbell");
            }
            assert_eq!(owner_at(&mem, 0), ((lap + 1) % 8) as u8, "lap {lap}");
        }
    }

    #[test]
    fn a_full_ring_queues_entries_and_writes_them_when_the_consumer_moves() {
        let mem = mem();
        let mut eq = Producer::<Eqe>::new(1, Ring::contiguous(GuestAddress(0), 4096).expect("ring")).expect("eq");
        assert_eq!(eq.post(&mem, Eqe::default()).expect("post"), Notify::Fire, "starts armed");
        for _ in 1..300 {
            assert_eq!(eq.post(&mem, Eqe::default()).expect("post"), Notify::None);
        }
        assert_eq!(eq.pending(), 256);
        assert_eq!(eq.backlog(), 44);
        // The driver consumed 100 and re-arms: 44 more written, 200 pending → fire.
        assert_eq!(eq.doorbell(&mem, 256 + 100, true).expect("doorbell"), Notify::Fire);
        assert_eq!(eq.backlog(), 0);
        assert_eq!(eq.pending(), 200);
        assert_eq!(eq.posted(), 300);
    }

    #[test]
    fn doorbells_outside_the_pending_window_are_refused() {
        let mem = mem();
        let mut cq = Producer::<Cqe>::new(7, Ring::contiguous(GuestAddress(0), 4096).expect("ring")).expect("cq");
        cq.post(&mem, <Cqe as zerocopy::FromZeros>::new_zeroed()).expect("post");
        // 64 entries: valid positions are 64 (none consumed) and 65.
        assert!(cq.doorbell(&mem, 66, true).is_err());
        assert!(cq.doorbell(&mem, 63, true).is_err());
        assert!(cq.doorbell(&mem, 64 * 8, true).is_err());
        assert_eq!(cq.doorbell(&mem, 65, true).expect("doorbell"), Notify::None);
        assert!(cq.armed());
    }

    #[test]
    fn a_work_queues_byte_producer_wraps_at_2_pow_32_as_the_drivers_head_does() {
        // mana_gd_wq_ring_doorbell() rings `queue->head * GDMA_WQE_BU_SIZE` in
        // u32: at 1 Mpps of 2-BU TX WQEs it wraps about every 67 s. Start a
        // basic unit before the wrap, post two one-BU WQEs (the first at the
        // ring's last BU, the second at its start), ring tail 32.
        let mem = mem();
        let mut sq =
            WorkQueue::new(5, WqKind::Sq, Ring::contiguous(GuestAddress(0), 4096).expect("ring"), 1).expect("sq");
        let start = 0u32.wrapping_sub(WQE_BU_SIZE);
        sq.consumer = start;
        sq.producer = start;
        let header = WqeHeader::new().with_num_sge(1).with_inline_oob_size_div4(2);
        for offset in [4096 - 32, 0] {
            mem.write_slice(header.as_bytes(), GuestAddress(offset)).expect("header");
        }
        assert!(sq.doorbell(start.wrapping_sub(WQE_BU_SIZE)).is_err(), "a producer behind the consumer");
        sq.doorbell(WQE_BU_SIZE).expect("tail 32, past the wrap");
        assert_eq!(sq.available(), 64);
        let offsets: Vec<u32> = std::iter::from_fn(|| sq.pop(&mem).expect("pop")).map(|wqe| wqe.offset).collect();
        assert_eq!(offsets, [4096 - 32, 0]);
        assert_eq!(sq.available(), 0);
        sq.doorbell(3 * WQE_BU_SIZE).expect("the next doorbell counts from the wrapped producer");
        assert_eq!(sq.available(), 64);
    }

    #[test]
    fn rings_that_are_not_power_of_two_entries_or_out_of_memory_are_errors() {
        let mem = mem();
        assert!(Ring::contiguous(GuestAddress(0), 100).is_err());
        assert!(Ring::from_pages(&[0], 8192).is_err());
        let ring = Ring::contiguous(GuestAddress(0), 3 * 4096).expect("ring");
        assert!(Producer::<Eqe>::new(1, ring).is_err(), "768 entries");
        let far = Ring::contiguous(GuestAddress(0x100_0000), 4096).expect("ring");
        let mut eq = Producer::<Eqe>::new(1, far).expect("eq");
        assert!(matches!(eq.post(&mem, Eqe::default()), Err(QueueError::Guest { .. })));
    }

    #[test]
    fn free_id_takes_the_lowest_gap_below_the_limit() {
        let mut map = BTreeMap::new();
        assert_eq!(free_id(&map, 4), Some(0));
        map.extend([(0, ()), (1, ()), (3, ())]);
        assert_eq!(free_id(&map, 4), Some(2));
        map.insert(2, ());
        assert_eq!(free_id(&map, 4), None);
    }
}
