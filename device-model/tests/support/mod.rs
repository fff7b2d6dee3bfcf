//! An in-process test driver that speaks the Linux `mana` driver's protocol
//! to a [`ManaDevice`] over BAR0, with real guest memory and a recording
//! interrupt sink. No VM, no root.
//!
//! It mirrors the driver code paths the device must satisfy
//! (drivers/net/ethernet/microsoft/mana, Debian 6.1.192 / 6.12.117 / 7.3.4):
//! `mana_smc_setup_hwc()`, `mana_gd_process_eq_events()` (at most 5 EQEs per
//! interrupt, then an arming EQ doorbell; 6.1 rings even when nothing was
//! consumed), `mana_hwc_comp_event()` (polls up to 2 CQEs, re-arms the CQ),
//! `mana_hwc_rx_event_handler()` (finds the RQ WQE from `wqe_offset`,
//! reposts it), `mana_hwc_send_request()` and `mana_gd_read_cqe()`.
#![allow(dead_code)]

pub mod checkpoint;
pub mod frames;
pub mod net;

use anyhow::{anyhow, bail, ensure, Context, Result};
use device_model::bar::{Bar0Handler, DmaMemory};
use device_model::datapath::backend::{PacketBackend, Recorder as NetRecorder, RecorderHandle};
use device_model::defs::*;
use device_model::interrupt::InterruptSink;
use device_model::ManaDevice;
use mana_device_api::config::DeviceConfig;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use vm_memory::{Bytes, GuestAddress, GuestAddressSpace, GuestMemoryAtomic, GuestMemoryMmap};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// Guest RAM size of the test machine.
pub const RAM_SIZE: usize = 64 << 20;
/// Interrupts one [`Driver::pump`] services before it declares an interrupt
/// storm, unless [`Driver::interrupt_budget`] says otherwise.
pub const MAX_INTERRUPTS: usize = 100_000;
/// BAR0 offsets (docs/mana-protocol.md §1.2 / gdma.h GDMA_REG_*).
pub const REG_DB_PAGE_OFFSET: u64 = 0x08;
/// GDMA_REG_DB_PAGE_SIZE
pub const REG_DB_PAGE_SIZE: u64 = 0x10;
/// GDMA_REG_SHM_OFFSET
pub const REG_SHM_OFFSET: u64 = 0x18;

/// A source of zeroes for [`Driver::zero`] (1 MiB, the fuzz targets'
/// largest clear, in one guest write: per-write overhead was most of
/// their cost with a page of zeroes).
pub static ZEROES: [u8; 1 << 20] = [0; 1 << 20];

/// Records every MSI-X vector the device raises.
#[derive(Default)]
pub struct Recorder {
    raised: Mutex<Vec<u16>>,
}

impl InterruptSink for Recorder {
    fn raise(&self, vector: u16) {
        self.raised.lock().expect("recorder lock").push(vector);
    }
}

impl Recorder {
    /// Every vector raised so far, in order (a copy: for a look at the
    /// whole history; [`Recorder::nth`] and [`Recorder::count`] do not copy).
    pub fn all(&self) -> Vec<u16> {
        self.raised.lock().expect("recorder lock").clone()
    }

    /// The `index`-th vector raised (0 the first), None when fewer were.
    pub fn nth(&self, index: usize) -> Option<u16> {
        self.raised.lock().expect("recorder lock").get(index).copied()
    }

    /// How many vectors were raised so far.
    pub fn count(&self) -> usize {
        self.raised.lock().expect("recorder lock").len()
    }

    /// The vectors raised from the `index`-th on (empty past the end).
    pub fn since(&self, index: usize) -> Vec<u16> {
        self.raised.lock().expect("recorder lock").get(index..).map_or_else(Vec::new, <[u16]>::to_vec)
    }

    /// Forgets the vectors raised so far.
    pub fn clear(&self) {
        self.raised.lock().expect("recorder lock").clear();
    }
}

/// Which driver version's behaviour to mimic where they differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Debian 6.1.192: EQ handler rings even when it consumed nothing; no mana_ib.
    V6_1,
    /// Debian 6.12.117.
    V6_12,
    /// Debian 7.3.4: QUERY_DEV_CONFIG V3 before REGISTER_DEVICE, no EQs at probe.
    V7_3,
}

/// A driver-side ring: pages in guest memory.
#[derive(Debug, Clone)]
pub struct DrvRing {
    pub pages: Vec<u64>,
    pub size: u64,
}

impl DrvRing {
    pub fn addr(&self, offset: u64) -> u64 {
        let offset = offset % self.size;
        self.pages[(offset / 4096) as usize] + offset % 4096
    }
}

/// A driver-side EQ or CQ (consumer).
#[derive(Debug, Clone)]
pub struct DrvCompQueue {
    pub id: u32,
    pub ring: DrvRing,
    pub entry_size: u64,
    pub entries: u32,
    /// Consumer head, starts at `entries` (INITIALIZED_OWNER_BIT).
    pub head: u32,
    pub doorbell: u32,
}

impl DrvCompQueue {
    /// An empty queue: consumer head at N (INITIALIZED_OWNER_BIT).
    pub fn new(id: u32, pages: Vec<u64>, size: u64, entry_size: u64, doorbell: u32) -> Self {
        let entries = (size / entry_size) as u32;
        Self { id, ring: DrvRing { pages, size }, entry_size, entries, head: entries, doorbell }
    }
}

impl DrvWorkQueue {
    /// An empty queue.
    pub fn new(id: u32, pages: Vec<u64>, size: u64, doorbell: u32) -> Self {
        Self { id, ring: DrvRing { pages, size }, head: 0, doorbell }
    }
}

/// A driver-side SQ or RQ (producer).
#[derive(Debug, Clone)]
pub struct DrvWorkQueue {
    pub id: u32,
    pub ring: DrvRing,
    /// Producer in 32-byte basic units.
    pub head: u32,
    pub doorbell: u32,
}

/// Events seen while servicing interrupts.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// EQE types processed, per EQ id, in order.
    pub eqe_types: BTreeMap<u32, Vec<u8>>,
    /// INIT_DATA (type, value) pairs in order.
    pub init_data: Vec<(u8, u32)>,
    /// INIT_EQ_ID_DB (eq id, doorbell).
    pub eq_id_db: Option<(u16, u16)>,
    /// INIT_DONE seen.
    pub init_done: bool,
    /// EQ ids that got a TEST_EVENT.
    pub test_events: Vec<u32>,
    /// Responses received (bytes).
    pub responses: Vec<Vec<u8>>,
    /// RX CQE types seen per RQ id.
    pub rx_cqe_types: BTreeMap<u32, Vec<u8>>,
    /// TX completions per SQ id.
    pub tx_completions: BTreeMap<u32, u32>,
    /// Times an EQ handler found nothing (spurious interrupt).
    pub spurious: u32,
    /// SQ completions seen on the HWC CQ.
    pub hwc_sq_completions: u32,
}

/// An Ethernet queue pair created at open.
#[derive(Debug, Clone)]
pub struct DrvQueuePair {
    pub eq: u32,
    pub sq: DrvWorkQueue,
    pub sq_cq: DrvCompQueue,
    pub sq_obj: u64,
    pub rq: DrvWorkQueue,
    pub rq_cq: DrvCompQueue,
    pub rq_obj: u64,
}

/// The test driver.
pub struct Driver {
    pub kernel: Kernel,
    pub dev: ManaDevice,
    /// Guest RAM as the driver (the guest's CPUs) sees it.
    pub mem: DmaMemory,
    /// Guest RAM as the device sees it (its DMA map): the same RAM until
    /// [`Driver::remap_dma`] changes it.
    pub dma: DmaMemory,
    /// The ranges the driver wrote since the last checkpoint
    /// ([`checkpoint`]), when one was taken.
    dirty: std::cell::RefCell<Option<Vec<(u64, usize)>>>,
    pub irqs: Arc<Recorder>,
    irq_cursor: usize,
    next_page: u64,
    /// EQs by id, with their MSI-X vector.
    pub eqs: BTreeMap<u32, (u16, DrvCompQueue)>,
    /// CQs by id (HWC and Ethernet).
    pub cqs: BTreeMap<u32, DrvCompQueue>,
    /// HWC queues once established.
    pub hwc_sq: Option<DrvWorkQueue>,
    pub hwc_rq: Option<DrvWorkQueue>,
    pub hwc_cq_id: Option<u32>,
    pub hwc_eq_id: Option<u32>,
    /// HWC EQ ring before EQ_ID_DB gives it an id.
    hwc_eq_pending: Option<DrvCompQueue>,
    hwc_cq_pending: Option<DrvCompQueue>,
    pub req_buf: u64,
    pub resp_buf: u64,
    pub max_num_cqs: u32,
    pub mana_db: u32,
    pub activity_id: u32,
    pub seen: Seen,
    /// Ethernet RQs by id (for RX CQE wq_num checks).
    pub rqs: BTreeMap<u32, DrvWorkQueue>,
    pub sqs: BTreeMap<u32, DrvWorkQueue>,
    /// Vectors whose interrupts are held back (a masked MSI-X entry).
    pub masked: std::collections::BTreeSet<u16>,
    deferred: Vec<u16>,
    /// The MANA device's `gpa_mkey` (GDMA_REGISTER_DEVICE), put in every Ethernet SGE.
    pub gpa_mkey: u32,
    /// The vPort `open`, `close` and steering act on (0 unless a test opens another).
    pub vport_index: u32,
    /// Interrupts one [`Driver::pump`] services at most ([`MAX_INTERRUPTS`]
    /// by default; fuzzing, where a corrupted ring can make the device and
    /// the model interrupt each other forever, sets less).
    pub interrupt_budget: usize,
    /// The network behind the device when it is the recording backend.
    pub net: Option<RecorderHandle>,
    /// Data-path state (support/net.rs).
    pub data: net::DataState,
    /// The guest's PAGE_SIZE in bytes: 4096 (x86_64, arm64's default) or
    /// 65536 (arm64 with CONFIG_ARM64_64K_PAGES; [`Driver::with_guest_pages`]).
    /// It decides how queue memory is allocated ([`Driver::queue_pages`]),
    /// never the GDMA page (MANA_PAGE_SIZE, 4 KiB).
    pub guest_page: u64,
    /// Bytes of guest RAM (from 0).
    ram_size: u64,
    /// The doorbell page offset and size as read from BAR0 (constants of
    /// the device), once read.
    db_page: Option<(u64, u64)>,
}

pub fn mana_dev() -> DevId {
    DevId { dev_type: Le16::new(2), instance: Le16::new(0) }
}

pub fn ib_dev() -> DevId {
    DevId { dev_type: Le16::new(3), instance: Le16::new(0) }
}

pub fn hwc_dev() -> DevId {
    DevId { dev_type: Le16::new(1), instance: Le16::new(0) }
}

/// The doorbell page and value that ring `eq` at its consumer head.
fn eq_doorbell(eq: &DrvCompQueue, arm: bool) -> (u32, u64) {
    let tail = eq.head % (eq.entries << 3);
    (eq.doorbell, EqDoorbell::new().with_id(eq.id as u16).with_tail_ptr(tail).with_arm(arm).into_bits())
}

/// The doorbell page and value that ring `cq` at its consumer head.
fn cq_doorbell(cq: &DrvCompQueue, arm: bool) -> (u32, u64) {
    let tail = cq.head % (cq.entries << 3);
    (cq.doorbell, CqDoorbell::new().with_id(cq.id).with_tail_ptr(tail).with_arm(arm).into_bits())
}

/// `mana_gd_init_req_hdr()`: request and expected response headers, V1.
pub fn req_hdr(code: Command, req_size: usize, resp_size: usize, dev_id: DevId) -> GdmaReqHdr {
    let mut hdr = GdmaReqHdr::default();
    hdr.req.msg_type = Le32::new(code.0);
    hdr.req.msg_version = Le16::new(1);
    hdr.req.msg_size = Le32::new(req_size as u32);
    hdr.resp.msg_type = Le32::new(code.0);
    hdr.resp.msg_version = Le16::new(1);
    hdr.resp.msg_size = Le32::new(resp_size as u32);
    hdr.dev_id = dev_id;
    hdr
}

/// Reads a `T` from a response, zero-extending a short one.
pub fn resp_as<T: FromBytes + KnownLayout + Immutable>(resp: &[u8]) -> T {
    let mut buf = vec![0u8; size_of::<T>().max(resp.len())];
    buf[..resp.len()].copy_from_slice(resp);
    T::read_from_prefix(&buf).expect("sized buffer").0
}

/// Status at offset 24 of a response (gdma_resp_hdr.status).
pub fn status(resp: &[u8]) -> u32 {
    resp_as::<GdmaRespHdr>(resp).status.get()
}

impl Driver {
    /// A driver and a fresh device with `config` on 64 MiB of guest RAM at
    /// 0, its vPorts on a recording packet backend ([`Driver::net`]).
    pub fn new(kernel: Kernel, config: DeviceConfig) -> Self {
        let (backend, handle) = NetRecorder::new(4096);
        let mut drv = Self::with_backend(kernel, config, Box::new(backend));
        drv.net = Some(handle);
        drv
    }

    /// [`Driver::new`] for a guest whose PAGE_SIZE is `guest_page` bytes (a
    /// power of two ≥ 4096; 65536 is arm64's CONFIG_ARM64_64K_PAGES), on
    /// [`RAM_SIZE`] × `guest_page / 4096` of guest RAM (6.12 gives each RX
    /// buffer a whole guest page). 6.1 is refused: its mana Kconfig needs
    /// 4 KiB pages on arm64 (`ARM64_4K_PAGES`), it sends PAGE_SIZE-strided page lists.
    pub fn with_guest_pages(kernel: Kernel, config: DeviceConfig, guest_page: u64) -> Self {
        assert!(guest_page.is_power_of_two() && guest_page >= 4096, "PAGE_SIZE {guest_page}");
        assert!(guest_page == 4096 || kernel != Kernel::V6_1, "6.1's mana runs on 4 KiB pages only");
        let (backend, handle) = NetRecorder::new(4096);
        let ram = RAM_SIZE * (guest_page / 4096) as usize;
        let mut drv = Self::with_ram(kernel, config, Box::new(backend), ram);
        drv.net = Some(handle);
        drv.guest_page = guest_page;
        drv
    }

    /// [`Driver::new`] with the device's vPorts on `backend`.
    pub fn with_backend(kernel: Kernel, config: DeviceConfig, backend: Box<dyn PacketBackend>) -> Self {
        Self::with_ram(kernel, config, backend, RAM_SIZE)
    }

    fn with_ram(kernel: Kernel, config: DeviceConfig, backend: Box<dyn PacketBackend>, ram_size: usize) -> Self {
        let ram = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0), ram_size)]).expect("guest RAM");
        let mem = GuestMemoryAtomic::new(ram.clone());
        let dma = GuestMemoryAtomic::new(ram);
        let irqs = Arc::new(Recorder::default());
        let sink: Arc<dyn InterruptSink> = irqs.clone();
        let dev = ManaDevice::with_backend(config, dma.clone(), sink, backend);
        Self {
            kernel,
            dev,
            mem,
            dma,
            dirty: std::cell::RefCell::new(None),
            irqs,
            irq_cursor: 0,
            next_page: 0x10_0000,
            eqs: BTreeMap::new(),
            cqs: BTreeMap::new(),
            hwc_sq: None,
            hwc_rq: None,
            hwc_cq_id: None,
            hwc_eq_id: None,
            hwc_eq_pending: None,
            hwc_cq_pending: None,
            req_buf: 0,
            resp_buf: 0,
            max_num_cqs: 0,
            mana_db: 0,
            activity_id: 0,
            seen: Seen::default(),
            rqs: BTreeMap::new(),
            sqs: BTreeMap::new(),
            masked: Default::default(),
            deferred: Vec::new(),
            gpa_mkey: 0,
            vport_index: 0,
            interrupt_budget: MAX_INTERRUPTS,
            net: None,
            data: net::DataState::default(),
            guest_page: 4096,
            ram_size: ram_size as u64,
            db_page: None,
        }
    }

    // -- guest memory ----------------------------------------------------

    /// Allocates `n` zeroed contiguous 4 KiB pages.
    pub fn alloc(&mut self, n: u64) -> u64 {
        let addr = self.next_page;
        self.next_page += n * 4096;
        assert!(self.next_page <= self.ram_size, "test RAM exhausted");
        let zero = vec![0u8; (n * 4096) as usize];
        self.write(addr, &zero);
        addr
    }

    /// `dma_alloc_coherent(len)`: zeroed memory starting on a guest page
    /// (whole guest pages are taken, so the next allocation starts on the
    /// next one).
    pub fn alloc_coherent(&mut self, len: u64) -> u64 {
        self.next_page = self.next_page.next_multiple_of(self.guest_page);
        let base = self.alloc(len.div_ceil(4096));
        self.next_page = self.next_page.next_multiple_of(self.guest_page);
        base
    }

    /// The 4 KiB page list of a `size`-byte queue as the driver registers it
    /// (`mana_gd_alloc_memory()` + `mana_gd_create_dma_region()`):
    /// - 4 KiB guest pages: deliberately scattered pages ([`Driver::alloc_scattered`]);
    /// - larger guest pages, 6.12: one guest-page-aligned allocation listed
    ///   as consecutive 4 KiB pages (`dma_handle + i * MANA_PAGE_SIZE`);
    /// - larger guest pages, 7.3, a queue above one guest page: the fallback
    ///   of a failed contiguous allocation, scattered guest pages, each
    ///   listed as its PAGE_SIZE / MANA_PAGE_SIZE consecutive 4 KiB pages.
    pub fn queue_pages(&mut self, size: u64) -> Vec<u64> {
        let page = self.guest_page;
        if page == 4096 {
            return self.alloc_scattered(size / 4096);
        }
        let per_page = page / 4096;
        if self.kernel == Kernel::V7_3 && size > page {
            let chunks = size / page;
            let base = self.alloc_coherent(2 * size);
            return (0..chunks)
                .rev()
                .flat_map(|c| (0..per_page).map(move |sub| base + 2 * c * page + sub * 4096))
                .collect();
        }
        let base = self.alloc_coherent(size);
        (0..size / 4096).map(|i| base + i * 4096).collect()
    }

    /// Allocates `n` pages that are deliberately not contiguous (reverse
    /// order with gaps), as a DMA region's page list may be.
    pub fn alloc_scattered(&mut self, n: u64) -> Vec<u64> {
        let base = self.alloc(2 * n);
        (0..n).rev().map(|i| base + 2 * i * 4096).collect()
    }

    pub fn write(&self, addr: u64, bytes: &[u8]) {
        trace(|| Traced::Mem { addr, bytes: bytes.to_vec() });
        if let Some(dirty) = self.dirty.borrow_mut().as_mut() {
            dirty.push((addr, bytes.len()));
        }
        self.mem.memory().write_slice(bytes, GuestAddress(addr)).expect("guest write");
    }

    /// Clears `len` bytes at `addr`, as [`Driver::write`] of zeroes would
    /// (traced and tracked the same way) without a buffer of that size.
    pub fn zero(&self, addr: u64, len: usize) {
        trace(|| Traced::Mem { addr, bytes: vec![0; len] });
        if let Some(dirty) = self.dirty.borrow_mut().as_mut() {
            dirty.push((addr, len));
        }
        let memory = self.mem.memory();
        let mut done = 0;
        while done < len {
            let n = (len - done).min(ZEROES.len());
            memory.write_slice(&ZEROES[..n], GuestAddress(addr + done as u64)).expect("guest write");
            done += n;
        }
    }

    pub fn read(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        self.mem.memory().read_slice(&mut buf, GuestAddress(addr)).expect("guest read");
        buf
    }

    /// A `T` read from guest memory at `addr` (read in place: the EQ and CQ
    /// polls of every interrupt use it, and fuzzing takes thousands per input).
    pub fn read_obj<T: FromBytes + IntoBytes + KnownLayout + Immutable>(&self, addr: u64) -> T {
        let mut obj = T::new_zeroed();
        self.mem.memory().read_slice(obj.as_mut_bytes(), GuestAddress(addr)).expect("guest read");
        obj
    }

    // -- BAR0 -------------------------------------------------------------

    pub fn readq(&mut self, offset: u64) -> u64 {
        trace(|| Traced::Read { offset, len: 8 });
        let mut data = [0u8; 8];
        self.dev.read(offset, &mut data);
        u64::from_le_bytes(data)
    }

    pub fn readl(&mut self, offset: u64) -> u32 {
        trace(|| Traced::Read { offset, len: 4 });
        let mut data = [0u8; 4];
        self.dev.read(offset, &mut data);
        u32::from_le_bytes(data)
    }

    pub fn writel(&mut self, offset: u64, value: u32) {
        trace(|| Traced::Write { offset, bytes: value.to_le_bytes().to_vec() });
        self.dev.write(offset, &value.to_le_bytes());
    }

    pub fn writeq(&mut self, offset: u64, value: u64) {
        trace(|| Traced::Write { offset, bytes: value.to_le_bytes().to_vec() });
        self.dev.write(offset, &value.to_le_bytes());
    }

    /// The doorbell page `db_index`'s BAR0 offset. The driver reads the
    /// page offset and size once (`mana_gd_init_vf_regs()` keeps them in
    /// `gc->db_page_base` and `gc->db_page_size`); so does the model, on the
    /// first doorbell or at [`Driver::probe`].
    fn db_base(&mut self, db_index: u32) -> u64 {
        let (off, size) = match self.db_page {
            Some(page) => page,
            None => self.read_db_page(),
        };
        off + size * u64::from(db_index)
    }

    /// Reads (and keeps) the doorbell page offset and size.
    fn read_db_page(&mut self) -> (u64, u64) {
        let page = (self.readq(REG_DB_PAGE_OFFSET), u64::from(self.readl(REG_DB_PAGE_SIZE) & 0xFFFF));
        self.db_page = Some(page);
        page
    }

    pub fn ring_eq(&mut self, eq: &DrvCompQueue, arm: bool) {
        let (doorbell, value) = eq_doorbell(eq, arm);
        self.ring_at(doorbell, 0xFF8, value);
    }

    pub fn ring_cq(&mut self, cq: &DrvCompQueue, arm: bool) {
        let (doorbell, value) = cq_doorbell(cq, arm);
        self.ring_at(doorbell, 0x800, value);
    }

    /// Writes `value` at `within` of doorbell page `doorbell`.
    fn ring_at(&mut self, doorbell: u32, within: u64, value: u64) {
        let at = self.db_base(doorbell) + within;
        self.writeq(at, value);
    }

    pub fn ring_wq(&mut self, wq: &DrvWorkQueue, is_sq: bool) {
        // `queue->head * GDMA_WQE_BU_SIZE` in mana_gd_wq_ring_doorbell() is u32
        // arithmetic: the byte producer wraps at 2^32, the device follows it.
        let db =
            WqDoorbell::new().with_id(wq.id).with_tail_ptr(wq.head.wrapping_mul(device_model::queues::WQE_BU_SIZE));
        let at = self.db_base(wq.doorbell) + if is_sq { 0x000 } else { 0x400 };
        self.writeq(at, db.into_bits());
    }

    // -- SMC ----------------------------------------------------------------

    /// `mana_smc_poll_register()` without the sleeps: bit 31 must be clear.
    pub fn smc_hdr(&mut self) -> u32 {
        let shm = self.readq(REG_SHM_OFFSET);
        self.readl(shm + 28)
    }

    /// `mana_smc_setup_hwc()` with the four ring addresses and the EQ vector.
    pub fn smc_establish(&mut self, eq: u64, cq: u64, rq: u64, sq: u64, msix: u16) -> u32 {
        let shm = self.readq(REG_SHM_OFFSET);
        assert_eq!(self.smc_hdr() >> 31, 0, "owner bit set before the request");
        let mut msg = [0u8; 32];
        let mut high = 0u16;
        for (i, addr) in [eq, cq, rq, sq].into_iter().enumerate() {
            let pfn = addr / 4096;
            msg[i * 6..i * 6 + 6].copy_from_slice(&pfn.to_le_bytes()[..6]);
            high |= (((pfn >> 48) & 0xF) as u16) << (4 * i);
        }
        msg[24..26].copy_from_slice(&high.to_le_bytes());
        msg[26..28].copy_from_slice(&msix.to_le_bytes());
        msg[28..32].copy_from_slice(&1u32.to_le_bytes());
        for (i, dword) in msg.chunks(4).enumerate() {
            let value = u32::from_le_bytes(dword.try_into().expect("4 bytes"));
            self.writel(shm + 4 * i as u64, value);
        }
        self.smc_hdr()
    }

    /// `mana_smc_teardown_hwc()`.
    pub fn smc_destroy(&mut self) -> u32 {
        let shm = self.readq(REG_SHM_OFFSET);
        self.writel(shm + 28, 2);
        self.smc_hdr()
    }

    // -- HWC bring-up -----------------------------------------------------

    /// `mana_hwc_create_channel()` up to the end of the init EQEs: allocates
    /// the 4 rings and buffers, sends ESTABLISH_HWC, services interrupts until
    /// INIT_DONE.
    pub fn establish_hwc(&mut self) -> Result<()> {
        // mana_hwc_init_queues(): each ring (4 KiB: MANA_MIN_QSIZE) and each
        // message buffer its own dma_alloc_coherent(), on its own guest page.
        let eq = self.alloc_coherent(4096);
        let cq = self.alloc_coherent(4096);
        let rq = self.alloc_coherent(4096);
        let sq = self.alloc_coherent(4096);
        self.req_buf = self.alloc_coherent(4096);
        self.resp_buf = self.alloc_coherent(4096);
        self.hwc_eq_pending = Some(DrvCompQueue::new(u32::MAX, vec![eq], 4096, 16, 0));
        self.hwc_cq_pending = Some(DrvCompQueue::new(u32::MAX, vec![cq], 4096, 64, 0));
        self.hwc_rq = Some(DrvWorkQueue::new(u32::MAX, vec![rq], 4096, 0));
        self.hwc_sq = Some(DrvWorkQueue::new(u32::MAX, vec![sq], 4096, 0));
        let hdr = self.smc_establish(eq, cq, rq, sq, 0);
        ensure!(hdr == 0x81, "SMC response {hdr:#x}");
        // Until EQ_ID_DB arrives the EQ is known by its vector only.
        let pending = self.hwc_eq_pending.clone().expect("set above");
        self.eqs.insert(u32::MAX, (0, pending));
        self.pump()?;
        ensure!(self.seen.init_done, "no INIT_DONE");
        ensure!(self.hwc_cq_id.is_some_and(|id| id < self.max_num_cqs), "HWC CQ id not below MAX_NUM_CQS");
        Ok(())
    }

    /// `mana_hwc_test_channel()`: post the RQ WQE, then GENERATE_TEST_EQE on the HWC EQ.
    pub fn test_channel(&mut self) -> Result<()> {
        self.post_hwc_rx_wqe();
        let eq = self.hwc_eq_id.context("no HWC EQ")?;
        self.test_eq(eq, hwc_dev())
    }

    fn post_hwc_rx_wqe(&mut self) {
        let mut rq = self.hwc_rq.clone().expect("HWC RQ");
        let offset = u64::from(rq.head) * 32;
        let header = WqeHeader::new().with_num_sge(1).with_inline_oob_size_div4(2);
        let sge = Sge { address: Le64::new(self.resp_buf), mem_key: Le32::new(0), size: Le32::new(4096) };
        self.write(rq.ring.addr(offset), header.as_bytes());
        self.write(rq.ring.addr(offset + 16), sge.as_bytes());
        rq.head = rq.head.wrapping_add(1);
        self.ring_wq(&rq, false);
        self.hwc_rq = Some(rq);
    }

    // -- interrupt servicing ----------------------------------------------

    /// Services every raised vector (and those raised meanwhile) like
    /// `mana_gd_intr()`; fails on an interrupt storm.
    pub fn pump(&mut self) -> Result<()> {
        for _ in 0..self.interrupt_budget {
            // One vector, not the whole history: a storm raises hundreds of
            // thousands of vectors per input (the fuzz machines' budget per pump
            // times the pumps), and a copy of all of them per vector made such an
            // input take seconds (docs/fuzzing.md, "Findings").
            let Some(vector) = self.irqs.nth(self.irq_cursor) else {
                return Ok(());
            };
            self.irq_cursor += 1;
            if self.masked.contains(&vector) {
                self.deferred.push(vector);
                continue;
            }
            self.service(vector)?;
        }
        bail!("interrupt storm: more than {} interrupts", self.interrupt_budget)
    }

    /// Unmasks `vector`, delivers its held-back interrupts, then pumps.
    pub fn unmask(&mut self, vector: u16) -> Result<()> {
        self.masked.remove(&vector);
        let held = self.deferred.iter().filter(|&&v| v == vector).count();
        self.deferred.retain(|&v| v != vector);
        for _ in 0..held {
            self.service(vector)?;
        }
        self.pump()
    }

    fn service(&mut self, vector: u16) -> Result<()> {
        {
            let eq_ids: Vec<u32> = self.eqs.iter().filter(|(_, (v, _))| *v == vector).map(|(&id, _)| id).collect();
            ensure!(!eq_ids.is_empty(), "vector {vector} raised with no EQ on it");
            for id in eq_ids {
                self.process_eq_events(id)?;
            }
        }
        Ok(())
    }

    /// `mana_gd_process_eq_events()`.
    fn process_eq_events(&mut self, mut key: u32) -> Result<()> {
        let mut consumed = 0;
        for _ in 0..5 {
            let (_, eq) = self.eqs.get(&key).context("EQ vanished")?;
            let (head, entries, id) = (eq.head, eq.entries, eq.id);
            let eqe: Eqe = self.read_obj(eq.ring.addr(u64::from(head % entries) * 16));
            let owner = eqe.info.owner_bits();
            let old = ((head / entries).wrapping_sub(1) & 7) as u8;
            let new = ((head / entries) & 7) as u8;
            if owner == old {
                break;
            }
            ensure!(owner == new, "EQ {id}: overflow detected (owner {owner}, expected {new})");
            let eq = &mut self.eqs.get_mut(&key).context("EQ vanished")?.1;
            eq.head = eq.head.wrapping_add(1);
            self.process_eqe(key, eqe)?;
            // EQ_ID_DB gives the HWC EQ its id.
            if key == u32::MAX && !self.eqs.contains_key(&key) {
                key = self.hwc_eq_id.context("HWC EQ renamed without id")?;
            }
            consumed += 1;
        }
        self.finish_eq(key, consumed)
    }

    fn finish_eq(&mut self, key: u32, consumed: u32) -> Result<()> {
        if consumed == 0 {
            self.seen.spurious += 1;
            if self.kernel != Kernel::V6_1 {
                return Ok(());
            }
        }
        let (doorbell, value) = eq_doorbell(&self.eqs.get(&key).context("EQ vanished")?.1, true);
        self.ring_at(doorbell, 0xFF8, value);
        Ok(())
    }

    fn process_eqe(&mut self, key: u32, eqe: Eqe) -> Result<()> {
        let ty = EqeType(eqe.info.eqe_type());
        let detail = eqe.details[0].get();
        let eq_id = self.eqs.get(&key).map(|(_, q)| q.id).unwrap_or(u32::MAX);
        // Recorded under the EQ's id, which EQ_ID_DB itself gives the HWC EQ.
        let record_id =
            if ty == EqeType::HWC_INIT_EQ_ID_DB { u32::from(HwcInitEqIdDb::from_bits(detail).eq_id()) } else { eq_id };
        self.seen.eqe_types.entry(record_id).or_default().push(ty.0);
        match ty {
            EqeType::HWC_INIT_EQ_ID_DB => {
                let v = HwcInitEqIdDb::from_bits(detail);
                self.seen.eq_id_db = Some((v.eq_id(), v.doorbell()));
                let (vector, mut eq) = self.eqs.remove(&u32::MAX).context("HWC EQ")?;
                eq.id = u32::from(v.eq_id());
                eq.doorbell = u32::from(v.doorbell());
                self.hwc_eq_id = Some(eq.id);
                self.eqs.insert(eq.id, (vector, eq));
                for wq in [self.hwc_sq.as_mut(), self.hwc_rq.as_mut()].into_iter().flatten() {
                    wq.doorbell = u32::from(v.doorbell());
                }
                if let Some(cq) = self.hwc_cq_pending.as_mut() {
                    cq.doorbell = u32::from(v.doorbell());
                }
            }
            EqeType::HWC_INIT_DATA => {
                let v = HwcInitTypeData::from_bits(detail);
                self.seen.init_data.push((v.data_type(), v.value()));
                match HwcInitData(v.data_type()) {
                    HwcInitData::CQID => {
                        let mut cq = self.hwc_cq_pending.take().context("HWC CQ")?;
                        cq.id = v.value();
                        self.hwc_cq_id = Some(cq.id);
                        self.cqs.insert(cq.id, cq);
                    }
                    HwcInitData::RQID => self.hwc_rq.as_mut().context("RQ")?.id = v.value(),
                    HwcInitData::SQID => self.hwc_sq.as_mut().context("SQ")?.id = v.value(),
                    HwcInitData::MAX_NUM_CQS => self.max_num_cqs = v.value(),
                    _ => {}
                }
            }
            EqeType::HWC_INIT_DONE => self.seen.init_done = true,
            // 6.12's mana_gd_process_eqe() drops both (recorded above).
            EqeType::HWC_SOC_RECONFIG_DATA | EqeType::HWC_RESET_REQUEST => {}
            EqeType::TEST_EVENT => self.seen.test_events.push(eq_id),
            EqeType::COMPLETION => {
                let cq_id = detail & 0xFF_FFFF;
                ensure!(cq_id < self.max_num_cqs, "COMPLETION for CQ {cq_id} >= MAX_NUM_CQS");
                ensure!(self.cqs.contains_key(&cq_id), "COMPLETION for unknown CQ {cq_id}");
                if Some(cq_id) == self.hwc_cq_id {
                    self.hwc_comp_event(cq_id)?;
                } else {
                    self.eth_comp_event(cq_id)?;
                }
            }
            other => bail!("unexpected EQE type {other:?}"),
        }
        Ok(())
    }

    /// `mana_gd_read_cqe()`: Some(cqe) if new, None if empty, error on overflow.
    fn read_cqe(&mut self, cq_id: u32) -> Result<Option<Cqe>> {
        let cq = self.cqs.get(&cq_id).context("CQ")?;
        let (head, entries) = (cq.head, cq.entries);
        let cqe: Cqe = self.read_obj(cq.ring.addr(u64::from(head % entries) * 64));
        let owner = cqe.info.owner_bits();
        let old = ((head / entries).wrapping_sub(1) & 7) as u8;
        let new = ((head / entries) & 7) as u8;
        if owner == old {
            return Ok(None);
        }
        ensure!(owner == new, "CQ {cq_id}: overflow (owner {owner}, expected {new})");
        let cq = self.cqs.get_mut(&cq_id).context("CQ")?;
        cq.head = cq.head.wrapping_add(1);
        Ok(Some(cqe))
    }

    /// `mana_hwc_comp_event()`: up to 2 CQEs, then re-arm.
    fn hwc_comp_event(&mut self, cq_id: u32) -> Result<()> {
        for _ in 0..2 {
            let Some(cqe) = self.read_cqe(cq_id)? else {
                break;
            };
            if cqe.info.is_sq() {
                let sq = self.hwc_sq.as_ref().context("SQ")?;
                ensure!(cqe.info.wq_num() == sq.id, "SQ CQE for wq {}", cqe.info.wq_num());
                self.seen.hwc_sq_completions += 1;
            } else {
                self.hwc_rx_event(&cqe)?;
            }
        }
        self.rearm_cq(cq_id)
    }

    /// `mana_hwc_rx_event_handler()` + `mana_hwc_handle_resp()`.
    fn hwc_rx_event(&mut self, cqe: &Cqe) -> Result<()> {
        let rq = self.hwc_rq.clone().context("RQ")?;
        ensure!(cqe.info.wq_num() == rq.id, "RX CQE for wq {} (HWC RQ {})", cqe.info.wq_num(), rq.id);
        let oob: HwcRxOob = resp_as(cqe.as_bytes());
        let wqe_off = u64::from((oob.wqe_offset.get() / 32 * 32) & 4095);
        let header: WqeHeader = self.read_obj(rq.ring.addr(wqe_off));
        let sge: Sge = self.read_obj(rq.ring.addr(wqe_off + 8 + u64::from(header.inline_oob_size_div4()) * 4));
        ensure!(sge.address.get() == self.resp_buf, "RX WQE points at {:#x}", sge.address.get());
        let len = oob.tx_oob_data_size.get() as usize;
        let resp = self.read(self.resp_buf, len.min(4096));
        let hdr: GdmaRespHdr = resp_as(&resp);
        ensure!(hdr.response.hwc_msg_id.get() == 0, "msg id {}", hdr.response.hwc_msg_id.get());
        self.seen.responses.push(resp);
        self.post_hwc_rx_wqe();
        Ok(())
    }

    /// Ethernet CQ callback (`mana_cq_handler()`): read everything, handle
    /// TX (`mana_poll_tx_cq()`) and RX (`mana_poll_rx_cq()`: repost, one RQ
    /// doorbell per poll) completions, re-arm.
    fn eth_comp_event(&mut self, cq_id: u32) -> Result<()> {
        let mut polled_rq = None;
        while let Some(cqe) = self.read_cqe(cq_id)? {
            let wq = cqe.info.wq_num();
            if cqe.info.is_sq() {
                ensure!(self.sqs.contains_key(&wq), "TX CQE for unknown SQ {wq}");
                *self.seen.tx_completions.entry(wq).or_default() += 1;
                self.tx_completed(wq, &cqe)?;
            } else {
                ensure!(self.rqs.contains_key(&wq), "RX CQE for unknown RQ {wq}");
                let hdr = ManaCqeHeader::from_bits(cqe.data[0]);
                self.seen.rx_cqe_types.entry(wq).or_default().push(hdr.cqe_type());
                if self.rx_completed(wq, &cqe)? {
                    polled_rq = Some(wq);
                }
            }
        }
        if let Some(rq) = polled_rq {
            self.ring_rq(rq)?;
        }
        self.rearm_cq(cq_id)
    }

    /// Re-arms CQ `cq_id` at its consumer head (the end of every CQ callback).
    fn rearm_cq(&mut self, cq_id: u32) -> Result<()> {
        let (doorbell, value) = cq_doorbell(self.cqs.get(&cq_id).context("CQ")?, true);
        self.ring_at(doorbell, 0x800, value);
        Ok(())
    }

    // -- requests -----------------------------------------------------------

    /// `mana_hwc_send_request()`: returns the raw response; fails if none
    /// arrives or its length is outside 32..=`resp_len`.
    pub fn send_raw(&mut self, request: &[u8], resp_len: usize) -> Result<Vec<u8>> {
        trace(|| Traced::Request(request.to_vec()));
        ensure!(!request.is_empty() && request.len() <= 4096, "request size {}", request.len());
        let mut req = request.to_vec();
        if req.len() >= 12 {
            req[10..12].copy_from_slice(&0u16.to_le_bytes()); // hwc_msg_id = 0
        }
        self.write(self.req_buf, &req);
        let mut sq = self.hwc_sq.clone().context("no HWC SQ")?;
        let offset = u64::from(sq.head) * 32;
        let header = WqeHeader::new().with_num_sge(1).with_inline_oob_size_div4(6);
        let mut oob = [0u8; 24];
        oob[20..24].copy_from_slice(&sq.id.to_le_bytes()); // vsq_id
        let sge = Sge { address: Le64::new(self.req_buf), mem_key: Le32::new(0), size: Le32::new(req.len() as u32) };
        self.write(sq.ring.addr(offset), header.as_bytes());
        self.write(sq.ring.addr(offset + 8), &oob);
        self.write(sq.ring.addr(offset + 32), sge.as_bytes());
        sq.head = sq.head.wrapping_add(2);
        self.ring_wq(&sq, true);
        self.hwc_sq = Some(sq);
        let before = self.seen.responses.len();
        self.pump()?;
        ensure!(self.seen.responses.len() == before + 1, "no response (got {})", self.seen.responses.len() - before);
        let resp = self.seen.responses.last().cloned().expect("checked");
        ensure!(resp.len() >= 32 && resp.len() <= resp_len, "response length {} outside 32..={resp_len}", resp.len());
        Ok(resp)
    }

    /// Sends a typed request (whose `hdr` is set by the caller) and returns
    /// the typed response; fails on a non-zero status.
    pub fn send<Req: IntoBytes + Immutable, Resp: FromBytes + KnownLayout + Immutable>(
        &mut self,
        req: &Req,
    ) -> Result<Resp> {
        let resp = self.send_raw(req.as_bytes(), size_of::<Resp>())?;
        let st = status(&resp);
        ensure!(st == 0, "status {st:#x}");
        Ok(resp_as(&resp))
    }

    /// A header-only request of `code` to `dev`, expecting `Resp`.
    pub fn general<Resp: FromBytes + KnownLayout + Immutable>(&mut self, code: Command, dev: DevId) -> Result<Resp> {
        let hdr = req_hdr(code, 40, size_of::<Resp>(), dev);
        self.send(&hdr)
    }

    /// `mana_gd_test_eq()`.
    pub fn test_eq(&mut self, eq_id: u32, dev: DevId) -> Result<()> {
        let before = self.seen.test_events.len();
        let mut req = GenerateTestEqeReq::new_zeroed();
        req.hdr = req_hdr(Command::GENERATE_TEST_EQE, size_of::<GenerateTestEqeReq>(), 32, dev);
        req.queue_index = Le32::new(eq_id);
        let _: GdmaRespHdr = self.send(&req)?;
        self.pump()?;
        let got = &self.seen.test_events[before..];
        ensure!(got == [eq_id], "test events {got:?}, expected [{eq_id}]");
        Ok(())
    }

    /// `mana_gd_create_dma_region()` over `pages`; returns the handle.
    pub fn create_dma_region(&mut self, pages: &[u64], dev: DevId) -> Result<u64> {
        let req = dma_region_request(pages, dev);
        let resp = self.send_raw(&req, size_of::<CreateDmaRegionResp>())?;
        ensure!(status(&resp) == 0, "status {:#x}", status(&resp));
        let resp: CreateDmaRegionResp = resp_as(&resp);
        let handle = resp.dma_region_handle.get();
        ensure!(handle != 0, "GDMA_INVALID_DMA_REGION handle");
        Ok(handle)
    }

    /// `mana_gd_create_mana_eq()`: region + CREATE_QUEUE + test EQE.
    pub fn create_eq(&mut self, msix: u16, size: u64, dev: DevId) -> Result<u32> {
        let pages = self.queue_pages(size);
        let handle = self.create_dma_region(&pages, dev)?;
        let mut req = CreateQueueReq::new_zeroed();
        req.hdr = req_hdr(Command::CREATE_QUEUE, size_of::<CreateQueueReq>(), size_of::<CreateQueueResp>(), dev);
        req.queue_type = Le32::new(4);
        req.doorbell_id = Le32::new(self.mana_db);
        req.gdma_region = Le64::new(handle);
        req.queue_size = Le32::new(size as u32);
        req.log2_throttle_limit = Le32::new(3);
        req.eq_pci_msix_index = Le32::new(u32::from(msix));
        let resp: CreateQueueResp = self.send(&req)?;
        let id = resp.queue_index.get();
        ensure!(id < 65536, "EQ id {id}");
        let eq = DrvCompQueue::new(id, pages, size, 16, self.mana_db);
        self.eqs.insert(id, (msix, eq));
        self.test_eq(id, dev)?;
        Ok(id)
    }

    pub fn next_activity(&mut self) -> u32 {
        self.activity_id += 1;
        self.activity_id
    }

    /// `mana_send_request()`: dev_id = MANA, fresh activity id; checks the echo.
    pub fn bnic<Resp: FromBytes + KnownLayout + Immutable>(&mut self, req_bytes: Vec<u8>) -> Result<Resp> {
        let resp = self.bnic_raw(req_bytes, size_of::<Resp>())?;
        Ok(resp_as(&resp))
    }

    /// [`Driver::bnic`] with an explicit response size (the caller's
    /// buffer); returns the raw response.
    pub fn bnic_raw(&mut self, mut req_bytes: Vec<u8>, resp_size: usize) -> Result<Vec<u8>> {
        let activity = self.next_activity();
        let mut hdr: GdmaReqHdr = resp_as(&req_bytes);
        hdr.dev_id = mana_dev();
        hdr.activity_id = Le32::new(activity);
        req_bytes[..40].copy_from_slice(hdr.as_bytes());
        let resp = self.send_raw(&req_bytes, resp_size)?;
        let rh: GdmaRespHdr = resp_as(&resp);
        ensure!(rh.status.get() == 0, "status {:#x}", rh.status.get());
        ensure!(rh.dev_id == hdr.dev_id && rh.activity_id.get() == activity, "dev_id/activity_id not echoed");
        // mana_verify_resp_hdr()
        ensure!(rh.response.msg_type.get() == hdr.req.msg_type.get(), "response msg_type");
        ensure!(rh.response.msg_version.get() >= 1, "response version");
        ensure!(rh.response.msg_size.get() as usize >= resp_size, "response msg_size");
        Ok(resp)
    }

    // -- probe sequences ----------------------------------------------------

    /// The probe of `self.kernel` up to `mana_probe()`'s end (minus netdev).
    /// Returns the MANA EQ ids created at probe.
    pub fn probe(&mut self) -> Result<Vec<u32>> {
        // mana_gd_init_vf_regs()
        let (db_page_offset, db_page_size) = self.read_db_page();
        ensure!(db_page_offset == 0x1000, "db page offset");
        ensure!(db_page_size == 0x1000, "db page size");
        ensure!(self.readq(REG_SHM_OFFSET) == 0x100, "shm offset");
        self.establish_hwc()?;
        self.test_channel()?;
        let ver: VerifyVerResp = self.general(Command::VERIFY_VF_DRIVER_VERSION, DevId::default())?;
        if ver.pf_cap_flags1.get() & (1 << 3) != 0 {
            // GDMA_DRV_CAP_FLAG_1_HWC_TIMEOUT_RECONFIG offered (`--inject`):
            // mana_gd_query_hwc_timeout(), as the driver does.
            let (req_size, resp_size) = (size_of::<QueryHwcTimeoutReq>(), size_of::<QueryHwcTimeoutResp>());
            let req = QueryHwcTimeoutReq {
                hdr: req_hdr(Command::QUERY_HWC_TIMEOUT, req_size, resp_size, DevId::default()),
                timeout_ms: Le32::new(30_000),
                ..Default::default()
            };
            let _: QueryHwcTimeoutResp = self.send(&req)?;
        }
        let (max, devs) = if self.kernel == Kernel::V7_3 {
            let devs: ListDevicesResp = self.general(Command::LIST_DEVICES, DevId::default())?;
            let max: QueryMaxResourcesResp = self.general(Command::QUERY_MAX_RESOURCES, DevId::default())?;
            self.query_dev_config(3)?;
            (max, devs)
        } else {
            let max: QueryMaxResourcesResp = self.general(Command::QUERY_MAX_RESOURCES, DevId::default())?;
            let devs: ListDevicesResp = self.general(Command::LIST_DEVICES, DevId::default())?;
            (max, devs)
        };
        let listed: Vec<DevId> = devs.devs.iter().copied().filter(|d| *d != DevId::default()).collect();
        ensure!(listed.len() == devs.num_of_devs.get() as usize, "num_of_devs");
        ensure!(listed.contains(&mana_dev()), "no MANA device listed");
        let reg: RegisterDeviceResp = self.general(Command::REGISTER_DEVICE, mana_dev())?;
        self.mana_db = reg.db_id.get();
        self.gpa_mkey = reg.gpa_mkey.get();
        let mut eqs = Vec::new();
        if self.kernel != Kernel::V7_3 {
            let queues = max.max_eq.get().min(max.max_msix.get() - 1).min(4);
            for i in 0..queues {
                eqs.push(self.create_eq(i as u16 + 1, 32768, mana_dev())?);
            }
            self.query_dev_config(2)?;
        } else {
            self.query_dev_config(3)?;
        }
        self.query_vport(0)?;
        if self.kernel == Kernel::V7_3 {
            self.query_gf_stats()?;
        }
        if listed.contains(&ib_dev()) && self.kernel != Kernel::V6_1 {
            self.mana_ib_probe()?;
        }
        Ok(eqs)
    }

    /// `mana_query_device_cfg()` with response version `version`.
    pub fn query_dev_config(&mut self, version: u16) -> Result<QueryDevCfgResp> {
        let mut hdr = req_hdr(Command::MANA_QUERY_DEV_CONFIG, 88, size_of::<QueryDevCfgResp>(), mana_dev());
        hdr.resp.msg_version = Le16::new(version);
        let mut req = hdr.as_bytes().to_vec();
        req.resize(88, 0);
        req[76..80].copy_from_slice(&1u32.to_le_bytes()); // proto minor
        req[80..84].copy_from_slice(&1u32.to_le_bytes()); // proto micro
        let resp: QueryDevCfgResp = self.bnic::<QueryDevCfgResp>(req)?;
        ensure!(resp.max_num_vports.get() >= 1, "no vports");
        Ok(resp)
    }

    /// `mana_query_vport_cfg()`.
    pub fn query_vport(&mut self, index: u32) -> Result<QueryVportCfgResp> {
        let mut req = QueryVportCfgReq::new_zeroed();
        req.hdr = req_hdr(Command::MANA_QUERY_VPORT_CONFIG, 44, size_of::<QueryVportCfgResp>(), mana_dev());
        req.vport_index = Le32::new(index);
        let resp: QueryVportCfgResp = self.bnic::<QueryVportCfgResp>(req.as_bytes().to_vec())?;
        ensure!(resp.max_num_sq.get() >= 1 && resp.max_num_rq.get() >= 1, "zero queues");
        Ok(resp)
    }

    /// `mana_query_gf_stats()`: MANA_QUERY_GF_STAT asking for all 27
    /// counters (every driver's `req_stats`, STATISTICS_FLAGS_* of mana.h),
    /// response version 2.
    pub fn query_gf_stats(&mut self) -> Result<QueryGfStatResp> {
        let mut req = QueryGfStatReq {
            hdr: req_hdr(Command::MANA_QUERY_GF_STAT, 48, size_of::<QueryGfStatResp>(), mana_dev()),
            req_stats: GfStatFlags::from_bits(Le64::new((1 << 27) - 1)),
        };
        req.hdr.resp.msg_version = Le16::new(2);
        self.bnic::<QueryGfStatResp>(req.as_bytes().to_vec())
    }

    /// `mana_ib_probe()` (6.12 / 7.3 rdma): REGISTER(IB), GET_ADAPTER_CAP
    /// must fail, then DEREGISTER(IB) (6.12 unwinding).
    pub fn mana_ib_probe(&mut self) -> Result<()> {
        let _: RegisterDeviceResp = self.general(Command::REGISTER_DEVICE, ib_dev())?;
        let mut hdr = req_hdr(Command::MANA_IB_GET_ADAPTER_CAP, 40, 256, ib_dev());
        hdr.resp.msg_version = Le16::new(3);
        let resp = self.send_raw(hdr.as_bytes(), 256)?;
        ensure!(status(&resp) != 0, "MANA_IB_GET_ADAPTER_CAP succeeded");
        let _: GdmaRespHdr = self.general(Command::DEREGISTER_DEVICE, ib_dev())?;
        Ok(())
    }

    // -- ndo_open / close ---------------------------------------------------

    /// `mana_create_wq_obj()` for one SQ or RQ with its CQ on `eq`.
    pub fn create_wq_obj(
        &mut self,
        is_sq: bool,
        wq_size: u64,
        cq_size: u64,
        eq: u32,
    ) -> Result<(DrvWorkQueue, DrvCompQueue, u64)> {
        let wq_pages = self.queue_pages(wq_size);
        let cq_pages = self.queue_pages(cq_size);
        let wq_region = self.create_dma_region(&wq_pages, mana_dev())?;
        let cq_region = self.create_dma_region(&cq_pages, mana_dev())?;
        let mut req = CreateWqObjReq::new_zeroed();
        // 6.x: 88-byte request, 48-byte response; 7.3: request V3 (96 bytes,
        // moderation fields appended) and response V2 (56 bytes).
        let v7 = self.kernel == Kernel::V7_3;
        let (req_len, resp_len) = if v7 { (96, 56) } else { (88, size_of::<CreateWqObjResp>()) };
        req.hdr = req_hdr(Command::MANA_CREATE_WQ_OBJ, req_len, resp_len, mana_dev());
        if v7 {
            req.hdr.req.msg_version = Le16::new(3);
            req.hdr.resp.msg_version = Le16::new(2);
        }
        req.vport = Le64::new(self.vport_handle()?);
        req.wq_type = Le32::new(if is_sq { 1 } else { 2 });
        req.wq_gdma_region = Le64::new(wq_region);
        req.cq_gdma_region = Le64::new(cq_region);
        req.wq_size = Le32::new(wq_size as u32);
        req.cq_size = Le32::new(cq_size as u32);
        req.cq_parent_qid = Le32::new(eq);
        let mut bytes = req.as_bytes().to_vec();
        bytes.resize(req_len, 0);
        if v7 {
            bytes[89] = 1; // req_cq_moderation
        }
        let resp = self.bnic_raw(bytes, resp_len)?;
        let resp: CreateWqObjResp = resp_as(&resp);
        ensure!(resp.wq_obj.get() != u64::MAX, "INVALID_MANA_HANDLE");
        ensure!(resp.cq_id.get() < self.max_num_cqs, "CQ id {} >= MAX_NUM_CQS", resp.cq_id.get());
        let wq = DrvWorkQueue::new(resp.wq_id.get(), wq_pages, wq_size, self.mana_db);
        let cq = DrvCompQueue::new(resp.cq_id.get(), cq_pages, cq_size, 64, self.mana_db);
        self.cqs.insert(cq.id, cq.clone());
        if is_sq {
            self.sqs.insert(wq.id, wq.clone());
        } else {
            self.rqs.insert(wq.id, wq.clone());
        }
        // mana_create_txq()/mana_create_rxq(): arm the CQ at creation.
        self.ring_cq(&cq, true);
        Ok((wq, cq, resp.wq_obj.get()))
    }

    /// The handle of vPort [`Driver::vport_index`] (`mana_query_vport_cfg()`).
    pub fn vport_handle(&mut self) -> Result<u64> {
        Ok(self.query_vport(self.vport_index)?.vport.get())
    }

    /// `mana_open()` → `mana_alloc_queues()` for `queues` queue pairs.
    /// 6.x puts queue i on the probe EQ i; 7.3 first creates one EQ per
    /// queue (vector i+1, `mana_create_eq()`), and uses V3/V2 WQ-object
    /// messages, a 32 KiB RQ and a 128 KiB RX CQ. Every RQ is filled with
    /// receive WQEs, each followed by a doorbell; then CONFIG_VPORT_RX and
    /// one FENCE_RQ per RQ.
    pub fn open(&mut self, probe_eqs: &[u32], queues: usize) -> Result<Vec<DrvQueuePair>> {
        let vport = self.vport_handle()?;
        let mut cfg = ConfigVportReq::new_zeroed();
        cfg.hdr = req_hdr(Command::MANA_CONFIG_VPORT_TX, 56, size_of::<ConfigVportResp>(), mana_dev());
        cfg.vport = Le64::new(vport);
        let _: ConfigVportResp = self.bnic::<ConfigVportResp>(cfg.as_bytes().to_vec())?;
        let v7 = self.kernel == Kernel::V7_3;
        let eqs: Vec<u32> = if v7 {
            let mut eqs = Vec::new();
            for i in 0..queues {
                eqs.push(self.create_eq(i as u16 + 1, 32768, mana_dev())?);
            }
            eqs
        } else {
            ensure!(probe_eqs.len() >= queues, "{} probe EQs for {queues} queues", probe_eqs.len());
            probe_eqs[..queues].to_vec()
        };
        let (rq_size, rx_cq_size) = if v7 { (32768, 131072) } else { (16384, 65536) };
        let mut pairs = Vec::new();
        for eq in eqs {
            let (sq, sq_cq, sq_obj) = self.create_wq_obj(true, 8192, 16384, eq)?;
            let (mut rq, rq_cq, rq_obj) = self.create_wq_obj(false, rq_size, rx_cq_size, eq)?;
            self.post_rx_buffers(&mut rq, (rq_size / 32) as u32);
            pairs.push(DrvQueuePair { eq, sq, sq_cq, sq_obj, rq, rq_cq, rq_obj });
        }
        let objs: Vec<u64> = pairs.iter().map(|p| p.rq_obj).collect();
        self.steer(&net::Steer::open(&objs))?;
        for pair in &pairs {
            self.fence(pair)?;
        }
        Ok(pairs)
    }

    /// `mana_disable_vport_rx()`: RX and RSS off, nothing updated (the
    /// request still carries the 64-entry table size).
    pub fn disable_vport_rx(&mut self) -> Result<()> {
        self.steer(&net::Steer {
            rx: TriState::FALSE,
            rss: TriState::FALSE,
            default_rxobj: None,
            key: None,
            table: None,
            hash_types: None,
        })?;
        Ok(())
    }

    /// `mana_close()` → `mana_dealloc_queues()`: steering off, a fence per
    /// RQ, DESTROY_WQ_OBJ for every SQ and RQ; 7.3 then flushes and disables
    /// the EQs it created at open.
    pub fn close(&mut self, pairs: &[DrvQueuePair]) -> Result<()> {
        self.disable_vport_rx()?;
        for pair in pairs {
            self.fence(pair)?;
        }
        for pair in pairs {
            self.destroy_wq_obj(true, pair.sq_obj)?;
            self.destroy_wq_obj(false, pair.rq_obj)?;
        }
        if self.kernel == Kernel::V7_3 {
            for pair in pairs {
                self.destroy_eq(pair.eq)?;
            }
        }
        Ok(())
    }

    /// `mana_fence_rq()`: reply OK and an RX CQE of type CQE_RX_OBJECT_FENCE (3).
    pub fn fence(&mut self, pair: &DrvQueuePair) -> Result<()> {
        let mut req = FenceRqReq::new_zeroed();
        req.hdr = req_hdr(Command::MANA_FENCE_RQ, 48, 32, mana_dev());
        req.wq_obj_handle = Le64::new(pair.rq_obj);
        let _: GdmaRespHdr = self.bnic::<GdmaRespHdr>(req.as_bytes().to_vec())?;
        self.pump()?;
        let types = self.seen.rx_cqe_types.get(&pair.rq.id).cloned().unwrap_or_default();
        ensure!(types.last() == Some(&3), "no fence CQE on RQ {} (saw {types:?})", pair.rq.id);
        Ok(())
    }

    pub fn destroy_wq_obj(&mut self, is_sq: bool, handle: u64) -> Result<()> {
        let mut req = DestroyWqObjReq::new_zeroed();
        req.hdr = req_hdr(Command::MANA_DESTROY_WQ_OBJ, 56, 32, mana_dev());
        req.wq_type = Le32::new(if is_sq { 1 } else { 2 });
        req.wq_obj_handle = Le64::new(handle);
        let _: GdmaRespHdr = self.bnic::<GdmaRespHdr>(req.as_bytes().to_vec())?;
        Ok(())
    }

    /// `mana_gd_destroy_eq()` with flush: test EQE then DISABLE_QUEUE.
    pub fn destroy_eq(&mut self, eq: u32) -> Result<()> {
        self.test_eq(eq, mana_dev())?;
        let mut req = DisableQueueReq::new_zeroed();
        req.hdr = req_hdr(Command::DISABLE_QUEUE, 52, 32, mana_dev());
        req.queue_type = Le32::new(4);
        req.queue_index = Le32::new(eq);
        req.alloc_res_id_on_creation = Le32::new(1);
        let _: GdmaRespHdr = self.send(&req)?;
        self.eqs.remove(&eq);
        Ok(())
    }

    /// Forgets the driver-side state of the HWC (after DESTROY_HWC).
    pub fn forget_all(&mut self) {
        self.eqs.clear();
        self.cqs.clear();
        self.sqs.clear();
        self.rqs.clear();
        self.hwc_sq = None;
        self.hwc_rq = None;
        self.hwc_cq_id = None;
        self.hwc_eq_id = None;
        self.seen = Seen::default();
        self.data = net::DataState::default();
        self.irq_cursor = self.irqs.count();
    }

    /// How many raised vectors the driver has taken so far (serviced, held
    /// back while masked, or dropped): its position in [`Driver::irqs`].
    pub fn interrupts_taken(&self) -> usize {
        self.irq_cursor
    }

    /// Vectors raised since the driver last serviced interrupts.
    pub fn unserviced(&self) -> Vec<u16> {
        self.irqs.since(self.irq_cursor)
    }

    /// Marks every raised vector as serviced without running handlers.
    pub fn drop_interrupts(&mut self) {
        self.irq_cursor = self.irqs.count();
    }

    /// Forgets what the model recorded (responses, EQE types, raised
    /// vectors, all serviced), so that a long run measures the device's
    /// memory and not the model's.
    pub fn forget_history(&mut self) {
        self.seen.responses.clear();
        self.seen.eqe_types.clear();
        self.seen.rx_cqe_types.clear();
        self.seen.init_data.clear();
        self.seen.test_events.clear();
        self.data.rx_frames.clear();
        self.data.tx_cqe_types.clear();
        if let Some(net) = &self.net {
            net.clear_sent();
        }
        self.irqs.clear();
        self.irq_cursor = 0;
    }
}

/// A CREATE_DMA_REGION request over `pages` (4 KiB each).
pub fn dma_region_request(pages: &[u64], dev: DevId) -> Vec<u8> {
    let mut req = CreateDmaRegionReq::new_zeroed();
    let size = size_of::<CreateDmaRegionReq>() + 8 * pages.len();
    req.hdr = req_hdr(Command::CREATE_DMA_REGION, size, size_of::<CreateDmaRegionResp>(), dev);
    req.length = Le64::new(pages.len() as u64 * 4096);
    req.page_count = Le32::new(pages.len() as u32);
    req.page_addr_list_len = Le32::new(pages.len() as u32);
    let mut bytes = req.as_bytes().to_vec();
    for page in pages {
        bytes.extend_from_slice(&page.to_le_bytes());
    }
    bytes
}

/// Fails with the given message unless the closure's error contains `needle`.
pub fn expect_err<T: std::fmt::Debug>(result: Result<T>, needle: &str) -> Result<()> {
    match result {
        Ok(value) => Err(anyhow!("expected an error containing {needle:?}, got {value:?}")),
        Err(err) if format!("{err:#}").contains(needle) => Ok(()),
        Err(err) => Err(anyhow!("expected an error containing {needle:?}, got {err:#}")),
    }
}

/// One thing the driver did to the device, recorded between [`start_trace`]
/// and [`take_trace`] (fuzz/ turns these into seed inputs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Traced {
    /// A write of guest memory.
    Mem { addr: u64, bytes: Vec<u8> },
    /// A BAR0 read of `len` bytes.
    Read { offset: u64, len: usize },
    /// A BAR0 write.
    Write { offset: u64, bytes: Vec<u8> },
    /// An HWC request handed to `send_raw` (its SQ WQE, doorbell and
    /// buffer writes are recorded as well).
    Request(Vec<u8>),
}

thread_local! {
    static TRACE: std::cell::RefCell<Option<Vec<Traced>>> = const { std::cell::RefCell::new(None) };
}

/// Starts recording what every [`Driver`] on this thread does.
pub fn start_trace() {
    TRACE.with(|t| *t.borrow_mut() = Some(Vec::new()));
}

/// Stops recording and returns what was recorded.
pub fn take_trace() -> Vec<Traced> {
    TRACE.with(|t| t.borrow_mut().take().unwrap_or_default())
}

fn trace(event: impl FnOnce() -> Traced) {
    TRACE.with(|t| {
        if let Some(events) = t.borrow_mut().as_mut() {
            events.push(event());
        }
    });
}
