//! DMA regions: guest page lists the driver registers with
//! GDMA_CREATE_DMA_REGION / GDMA_DMA_REGION_ADD_PAGES and later hands to a
//! queue (GDMA_CREATE_QUEUE, MANA_CREATE_WQ_OBJ), which then owns it.
//!
//! Models the device side of `mana_gd_create_dma_region()` and
//! `mana_gd_destroy_dma_region()` (drivers/net/ethernet/microsoft/mana/
//! gdma_main.c, Linux 6.1-7.3): 4 KiB pages (`GDMA_PAGE_TYPE_4K`), handle
//! 0 (`GDMA_INVALID_DMA_REGION`) never used. Every page is checked when it is
//! accepted: 4 KiB aligned and inside guest memory.
//!
//! # Guests with pages above 4 KiB
//!
//! An arm64 guest may run with 64 KiB pages (`CONFIG_ARM64_64K_PAGES`, as
//! Azure's Cobalt VMs can). From Linux 6.10 the driver keeps the device's
//! unit at 4 KiB (`MANA_PAGE_SIZE`, `MANA_PAGE_SHIFT` 12 in
//! include/net/mana/gdma.h) and uses the guest's PAGE_SIZE only for its own
//! allocations. What the device then sees (Debian's 6.12.117 and 7.3.4
//! sources; docs/mana-protocol.md), and where the device handles it:
//!
//! - **DMA regions** (`mana_gd_alloc_memory()`, `mana_gd_create_dma_region()`):
//!   a queue's buffer is one `dma_alloc_coherent()` block, so it starts on a
//!   64 KiB boundary and takes whole 64 KiB pages, but its length is the
//!   queue's (a power of two ≥ 4 KiB) and the page list steps by 4 KiB
//!   (`dma_handle + i * MANA_PAGE_SIZE`), page type `GDMA_PAGE_TYPE_4K`: a
//!   16 KiB RQ is four 4 KiB entries inside one guest page. 7.3, when the
//!   contiguous allocation fails, falls back to separate 64 KiB pages, each
//!   listed as its 16 consecutive 4 KiB entries. Both are lists of 4 KiB pages
//!   to this module; [`super::Ring::from_pages`] maps ring offsets through
//!   them page by page.
//! - **Queue sizes** are rounded to 4 KiB, not to PAGE_SIZE
//!   (`MANA_PAGE_ALIGN()` in mana_create_rxq(), `MANA_MIN_QSIZE` in
//!   hw_channel.c; EQs are `8 * MANA_PAGE_SIZE`): the same sizes as on x86,
//!   checked by [`DmaRegions::check`] and `Ring`'s power-of-two rule.
//! - **HWC rings** (`mana_smc_setup_hwc()`): 4 KiB rings, each on its own
//!   guest page, addressed in the SMC message by `MANA_PFN()` (address >> 12),
//!   as device/smc.rs decodes them (`HWC_PAGE_SIZE`).
//! - **Doorbells**: the driver steps doorbell pages by the device's
//!   `GDMA_REG_DB_PAGE_SIZE` (device/regs.rs `DB_PAGE_SIZE`, 4 KiB), not by
//!   PAGE_SIZE; BAR0 (64 KiB) is one guest page.
//! - **RX buffers** (`mana_get_rxbuf_cfg()`): 6.12 raises each buffer's
//!   allocation to PAGE_SIZE, so every RQ WQE's SGE points 256 bytes
//!   (XDP_PACKET_HEADROOM) into its own 64 KiB page (512 buffers × 64 KiB =
//!   32 MiB of guest memory per RQ); 7.3 packs page_pool fragments, several
//!   per page, SGEs at any 64-byte boundary. datapath/rx.rs writes a frame
//!   at the SGE's address whatever its alignment; the SGE size stays
//!   MTU + 14.
//! - **TX**: an skb fragment may span up to a 64 KiB page; datapath/tx.rs
//!   gathers up to `MAX_GATHER` (64 KiB + 1 KiB) per WQE whatever the SGE
//!   boundaries.
//!
//! Linux 6.1's driver predates this: its Kconfig builds it on arm64 only
//! with 4 KiB pages (`ARM64_4K_PAGES`). device-model/tests/guest_pages_64k.rs
//! drives the device with the 6.12 and 7.3 sequences for 64 KiB pages
//! (tests/support `Driver::with_guest_pages`).
#![forbid(unsafe_code)]

use crate::queues::{Mem, PAGE_SIZE};
use std::collections::{BTreeMap, BTreeSet};
use vm_memory::{GuestAddress, GuestMemory, Permissions};

/// Largest region accepted, in pages (16 MiB); the Ethernet driver's largest
/// ring is 128 KiB (7.3 RX CQ), and 6.x/7.3 list every page of a region in
/// the one CREATE_DMA_REGION request (at most 504 pages fit in 4 KiB).
pub const MAX_REGION_PAGES: u32 = 1 << 12;
/// Regions not yet owned by a queue before CREATE_DMA_REGION is refused
/// (the driver hands each region to a queue right after creating it).
pub const MAX_REGIONS: usize = 256;

/// Errors of DMA-region bookkeeping; each maps to an error status.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegionError {
    /// The region geometry is unsupported or inconsistent.
    #[error("bad region: length {length}, offset_in_page {offset}, page type {page_type}, {page_count} pages, {listed} listed")]
    BadGeometry {
        /// Length in bytes.
        length: u64,
        /// Offset in the first page.
        offset: u32,
        /// Page type.
        page_type: u32,
        /// Declared pages.
        page_count: u32,
        /// Pages listed.
        listed: u32,
    },
    /// A page address is unaligned or not in guest memory.
    #[error("page {index} at {addr:#x} is not a 4 KiB page of guest memory")]
    BadPage {
        /// Index in the region.
        index: usize,
        /// Guest address.
        addr: u64,
    },
    /// No region has this handle.
    #[error("no DMA region with handle {0:#x}")]
    UnknownHandle(u64),
    /// The region lacks pages (ADD_PAGES still expected) or is too small.
    #[error("region {handle:#x} has {have} of {need} bytes")]
    TooSmall {
        /// Handle.
        handle: u64,
        /// Bytes available.
        have: u64,
        /// Bytes needed.
        need: u64,
    },
    /// ADD_PAGES would exceed the declared page count.
    #[error("region {handle:#x}: {adding} pages added to {have} of {declared}")]
    TooManyPages {
        /// Handle.
        handle: u64,
        /// Pages present.
        have: usize,
        /// Pages being added.
        adding: usize,
        /// Declared pages.
        declared: u32,
    },
    /// Too many regions alive.
    #[error("too many DMA regions ({0})")]
    Exhausted(usize),
    /// A page is listed twice in one region (a ring would alias itself).
    #[error("page {index} at {addr:#x} is already in the region")]
    DuplicatePage {
        /// Index in the region.
        index: usize,
        /// Guest address.
        addr: u64,
    },
}

/// One registered region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmaRegion {
    /// Length in bytes.
    pub length: u64,
    /// Declared page count.
    pub page_count: u32,
    /// Page addresses received so far.
    pub pages: Vec<u64>,
}

impl DmaRegion {
    /// Whether every declared page has been supplied.
    pub fn complete(&self) -> bool {
        self.pages.len() == self.page_count as usize
    }
}

/// The region table.
#[derive(Debug, Default, Clone)]
pub struct DmaRegions {
    regions: BTreeMap<u64, DmaRegion>,
    next_handle: u64,
}

/// Checks that every page of `pages` is a 4 KiB page of guest memory and
/// that none repeats one of `have` or an earlier one of `pages`.
fn check_pages(mem: &Mem, have: &[u64], pages: &[u64]) -> Result<(), RegionError> {
    let first_index = have.len();
    let mut seen: BTreeSet<u64> = have.iter().copied().collect();
    for (i, &addr) in pages.iter().enumerate() {
        if !seen.insert(addr) {
            return Err(RegionError::DuplicatePage { index: first_index + i, addr });
        }
        let in_memory = GuestMemory::check_range(mem, GuestAddress(addr), PAGE_SIZE as usize, Permissions::ReadWrite);
        if addr % PAGE_SIZE != 0 || !in_memory {
            return Err(RegionError::BadPage { index: first_index + i, addr });
        }
    }
    Ok(())
}

impl DmaRegions {
    /// Registers a region and returns its handle (never 0).
    ///
    /// # Errors
    /// [`RegionError::BadGeometry`] unless `offset == 0`, `page_type == 0`
    /// (4 KiB), `1 <= page_count <= MAX_REGION_PAGES`,
    /// `pages.len() <= page_count` and `0 < length <= page_count * 4096`;
    /// [`RegionError::BadPage`] for an unaligned or unmapped page,
    /// [`RegionError::DuplicatePage`] for a page listed twice;
    /// [`RegionError::Exhausted`] when [`MAX_REGIONS`] are alive.
    pub fn create(
        &mut self,
        mem: &Mem,
        length: u64,
        offset: u32,
        page_type: u32,
        page_count: u32,
        pages: Vec<u64>,
    ) -> Result<u64, RegionError> {
        let geometry_ok = offset == 0
            && page_type == 0
            && (1..=MAX_REGION_PAGES).contains(&page_count)
            && pages.len() <= page_count as usize
            && length > 0
            && length <= u64::from(page_count) * PAGE_SIZE;
        if !geometry_ok {
            return Err(RegionError::BadGeometry { length, offset, page_type, page_count, listed: pages.len() as u32 });
        }
        if self.regions.len() >= MAX_REGIONS {
            return Err(RegionError::Exhausted(self.regions.len()));
        }
        check_pages(mem, &[], &pages)?;
        let handle = self.allocate_handle();
        self.regions.insert(handle, DmaRegion { length, page_count, pages });
        Ok(handle)
    }

    fn allocate_handle(&mut self) -> u64 {
        loop {
            self.next_handle = self.next_handle.wrapping_add(1);
            let handle = self.next_handle;
            if handle != 0 && handle != u64::MAX && !self.regions.contains_key(&handle) {
                return handle;
            }
        }
    }

    /// Appends pages to an incomplete region.
    ///
    /// # Errors
    /// [`RegionError::UnknownHandle`], [`RegionError::TooManyPages`],
    /// [`RegionError::BadPage`], [`RegionError::DuplicatePage`].
    pub fn add_pages(&mut self, mem: &Mem, handle: u64, pages: Vec<u64>) -> Result<(), RegionError> {
        let region = self.regions.get_mut(&handle).ok_or(RegionError::UnknownHandle(handle))?;
        if region.pages.len() + pages.len() > region.page_count as usize {
            return Err(RegionError::TooManyPages {
                handle,
                have: region.pages.len(),
                adding: pages.len(),
                declared: region.page_count,
            });
        }
        check_pages(mem, &region.pages, &pages)?;
        region.pages.extend(pages);
        Ok(())
    }

    /// Forgets a region.
    ///
    /// # Errors
    /// [`RegionError::UnknownHandle`].
    pub fn destroy(&mut self, handle: u64) -> Result<DmaRegion, RegionError> {
        self.regions.remove(&handle).ok_or(RegionError::UnknownHandle(handle))
    }

    /// Checks that region `handle` is complete and holds at least `need`
    /// bytes, without taking it.
    ///
    /// # Errors
    /// [`RegionError::UnknownHandle`], [`RegionError::TooSmall`].
    pub fn check(&self, handle: u64, need: u64) -> Result<&DmaRegion, RegionError> {
        let region = self.regions.get(&handle).ok_or(RegionError::UnknownHandle(handle))?;
        let have = region.pages.len() as u64 * PAGE_SIZE;
        if !region.complete() || need > have.min(region.length) {
            return Err(RegionError::TooSmall { handle, have: have.min(region.length), need });
        }
        Ok(region)
    }

    /// Pages declared by every region alive (`page_count`, whether listed yet or not).
    pub fn declared_pages(&self) -> u64 {
        self.regions.values().map(|r| u64::from(r.page_count)).sum()
    }

    /// Number of regions alive.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether no region is alive.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }
}
