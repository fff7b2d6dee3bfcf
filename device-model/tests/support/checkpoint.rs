//! Going back to a point: a [`Checkpoint`] holds a driver model and its
//! device as they were (the device's [`SavedState`], the model's own state,
//! guest RAM), and [`Driver::rewind`] puts both back. Many runs can then
//! start from a device that is already up (a probe and an open take
//! milliseconds; a rewind tens of microseconds): the fuzz targets of fuzz/.
//!
//! What a rewind restores of guest RAM: every range the driver wrote since
//! the checkpoint (tracked by [`Driver::write`]) and every page of the
//! driver's rings and HWC buffers (where the device writes EQEs, CQEs and
//! responses, and which the driver reads back). RX buffers the device
//! filled are not restored: the device never reads them, and the driver
//! model reads them only for the frame it just received.

use super::*;
use device_model::device::mana::SavedState;
use std::collections::BTreeSet;

/// What guest RAM the device sees ([`Driver::remap_dma`]), as QEMU's
/// DMA_UNMAP and DMA_MAP change it while the driver's queues are live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaView {
    /// The guest's RAM (as at the start).
    Ram,
    /// Nothing mapped (DMA_UNMAP of everything).
    Unmapped,
    /// Other memory of the same size at the same addresses (RAM remapped
    /// to another backing): zeroes where the driver wrote its rings.
    Other,
    /// Other memory covering only the first half of RAM.
    Half,
}

impl DmaView {
    /// Every view, for inputs that pick one by number.
    pub const ALL: [DmaView; 4] = [DmaView::Ram, DmaView::Unmapped, DmaView::Other, DmaView::Half];
}

/// The model's state besides the device and guest RAM.
#[derive(Clone)]
struct ModelState {
    kernel: Kernel,
    next_page: u64,
    eqs: BTreeMap<u32, (u16, DrvCompQueue)>,
    cqs: BTreeMap<u32, DrvCompQueue>,
    hwc_sq: Option<DrvWorkQueue>,
    hwc_rq: Option<DrvWorkQueue>,
    hwc_cq_id: Option<u32>,
    hwc_eq_id: Option<u32>,
    hwc_eq_pending: Option<DrvCompQueue>,
    hwc_cq_pending: Option<DrvCompQueue>,
    req_buf: u64,
    resp_buf: u64,
    max_num_cqs: u32,
    mana_db: u32,
    activity_id: u32,
    seen: Seen,
    rqs: BTreeMap<u32, DrvWorkQueue>,
    sqs: BTreeMap<u32, DrvWorkQueue>,
    masked: std::collections::BTreeSet<u16>,
    deferred: Vec<u16>,
    gpa_mkey: u32,
    vport_index: u32,
    data: net::DataState,
}

/// A driver model and its device at one point ([`Driver::checkpoint`]).
pub struct Checkpoint {
    device: SavedState,
    model: ModelState,
    /// Guest RAM at the checkpoint up to the driver's last allocation (the
    /// rest is zero then).
    ram: Vec<u8>,
    /// The pages of the driver's rings and HWC buffers.
    ring_pages: Vec<u64>,
}

impl Checkpoint {
    /// Guest RAM at the checkpoint, from address 0 up to the driver's last
    /// allocation.
    pub fn ram(&self) -> &[u8] {
        &self.ram
    }

    /// The pages of the driver's rings and HWC buffers (where the device
    /// writes), 4 KiB each.
    pub fn ring_pages(&self) -> &[u64] {
        &self.ring_pages
    }
}

impl Driver {
    /// Takes a checkpoint of the model and its device, every raised
    /// interrupt serviced or dropped first; from now on the driver's writes
    /// of guest RAM are tracked for [`Driver::rewind`].
    pub fn checkpoint(&mut self) -> Checkpoint {
        self.forget_history();
        let model = ModelState {
            kernel: self.kernel,
            next_page: self.next_page,
            eqs: self.eqs.clone(),
            cqs: self.cqs.clone(),
            hwc_sq: self.hwc_sq.clone(),
            hwc_rq: self.hwc_rq.clone(),
            hwc_cq_id: self.hwc_cq_id,
            hwc_eq_id: self.hwc_eq_id,
            hwc_eq_pending: self.hwc_eq_pending.clone(),
            hwc_cq_pending: self.hwc_cq_pending.clone(),
            req_buf: self.req_buf,
            resp_buf: self.resp_buf,
            max_num_cqs: self.max_num_cqs,
            mana_db: self.mana_db,
            activity_id: self.activity_id,
            seen: self.seen.clone(),
            rqs: self.rqs.clone(),
            sqs: self.sqs.clone(),
            masked: self.masked.clone(),
            deferred: self.deferred.clone(),
            gpa_mkey: self.gpa_mkey,
            vport_index: self.vport_index,
            data: self.data.clone(),
        };
        let mut pages = BTreeSet::new();
        let comp = self.eqs.values().map(|(_, q)| &q.ring).chain(self.cqs.values().map(|q| &q.ring));
        let pending = self.hwc_eq_pending.iter().chain(&self.hwc_cq_pending).map(|q| &q.ring);
        let work = self.rqs.values().chain(self.sqs.values()).chain(&self.hwc_sq).chain(&self.hwc_rq).map(|q| &q.ring);
        for ring in comp.chain(pending).chain(work) {
            pages.extend(ring.pages.iter().map(|p| p & !4095));
        }
        pages.extend([self.req_buf, self.resp_buf].into_iter().filter(|&b| b != 0).map(|b| b & !4095));
        let ram = self.read(0, self.next_page as usize);
        *self.dirty.borrow_mut() = Some(Vec::new());
        Checkpoint { device: self.dev.save(), model, ram, ring_pages: pages.into_iter().collect() }
    }

    /// Puts the model and its device back as they were at `checkpoint`
    /// (taken from this driver): the device's state, the model's, the
    /// guest RAM it wrote and its rings, the device's view of RAM, and an
    /// empty network (nothing sent, nothing waiting).
    pub fn rewind(&mut self, checkpoint: &Checkpoint) {
        self.dev.restore(&checkpoint.device);
        self.remap_dma(DmaView::Ram);
        if let Some(net) = &self.net {
            net.clear_sent();
            net.clear_waiting();
        }
        let dirty = self.dirty.borrow_mut().as_mut().map(std::mem::take).unwrap_or_default();
        let pages = checkpoint.ring_pages.iter().map(|&p| (p, 4096));
        let memory = self.mem.memory();
        let zeroes = &ZEROES[..];
        for (addr, len) in dirty.into_iter().chain(pages) {
            let mut at = (addr as usize).min(RAM_SIZE);
            let end = at.saturating_add(len).min(RAM_SIZE);
            while at < end {
                let (bytes, next) = match checkpoint.ram.get(at..end.min(checkpoint.ram.len())) {
                    Some(kept) if !kept.is_empty() => (kept, at + kept.len()),
                    _ => {
                        let n = (end - at).min(zeroes.len());
                        (&zeroes[..n], at + n)
                    }
                };
                let _ = memory.write_slice(bytes, GuestAddress(at as u64));
                at = next;
            }
        }
        let m = checkpoint.model.clone();
        self.kernel = m.kernel;
        self.next_page = m.next_page;
        self.eqs = m.eqs;
        self.cqs = m.cqs;
        self.hwc_sq = m.hwc_sq;
        self.hwc_rq = m.hwc_rq;
        self.hwc_cq_id = m.hwc_cq_id;
        self.hwc_eq_id = m.hwc_eq_id;
        self.hwc_eq_pending = m.hwc_eq_pending;
        self.hwc_cq_pending = m.hwc_cq_pending;
        self.req_buf = m.req_buf;
        self.resp_buf = m.resp_buf;
        self.max_num_cqs = m.max_num_cqs;
        self.mana_db = m.mana_db;
        self.activity_id = m.activity_id;
        self.seen = m.seen;
        self.rqs = m.rqs;
        self.sqs = m.sqs;
        self.masked = m.masked;
        self.deferred = m.deferred;
        self.gpa_mkey = m.gpa_mkey;
        self.vport_index = m.vport_index;
        self.data = m.data;
        self.irqs.clear();
        self.irq_cursor = 0;
    }

    /// Stops tracking the driver's writes (a machine that will not be rewound).
    pub fn forget_checkpoint(&self) {
        *self.dirty.borrow_mut() = None;
    }

    /// Changes what guest RAM the device sees to `view` (the driver keeps
    /// its own view of RAM): what QEMU's DMA_UNMAP / DMA_MAP do to the
    /// device's map ([`device_model::shell::dma_map`]), here while the
    /// driver's queues stay where they were.
    pub fn remap_dma(&self, view: DmaView) {
        let map = match view {
            DmaView::Ram => (*self.mem.memory()).clone(),
            DmaView::Unmapped => GuestMemoryMmap::new(),
            DmaView::Other => GuestMemoryMmap::from_ranges(&[(GuestAddress(0), RAM_SIZE)]).expect("other RAM"),
            DmaView::Half => GuestMemoryMmap::from_ranges(&[(GuestAddress(0), RAM_SIZE / 2)]).expect("half RAM"),
        };
        self.dma.lock().expect("the DMA map's lock").replace(map);
    }
}
