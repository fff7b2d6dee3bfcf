//! Guest memory for DMA, built from the regions QEMU shares with
//! `VFIO_USER_DMA_MAP` / `VFIO_USER_DMA_UNMAP`.
//!
//! vfio-user 0.1.7 has no DMA_READ/WRITE messages, so the device can only
//! reach guest RAM that QEMU shares as file descriptors
//! (`memory-backend-memfd,share=on`). Each DMA_MAP with an fd is mapped
//! into this process at its IOVA (= guest-physical address: there is no
//! vIOMMU in front of the device); ranges without an fd (QEMU's ROM and
//! other non-shared RAM) are logged and ignored. After every change the
//! [`GuestMemoryMmap`] is rebuilt and published in the shared
//! [`DmaMemory`], so the device core always sees a consistent map.

use crate::bar::DmaMemory;
use std::collections::BTreeMap;
use std::fs::File;
use std::sync::Arc;
use thiserror::Error;
use vm_memory::mmap::MmapRegionError;
use vm_memory::{FileOffset, GuestAddress, GuestMemoryMmap, GuestRegionMmap, MmapRegion};

/// DMA mappings one connection may hold (QEMU maps guest RAM in a few
/// ranges; `VFIO_USER_DEF_MAP_MAX` is 65535, a bound for the client, not
/// for us). Every map rebuilds the guest memory map, so the count is bounded.
pub const MAX_MAPPINGS: usize = 1024;

/// Errors from DMA_MAP / DMA_UNMAP.
#[derive(Debug, Error)]
pub enum DmaError {
    /// Zero-sized range, or `iova + size` overflows, or the size does not fit in memory.
    #[error("DMA range iova {iova:#x} size {size:#x} is empty or wraps around")]
    BadRange {
        /// Start (guest-physical address).
        iova: u64,
        /// Length in bytes.
        size: u64,
    },
    /// The new range overlaps a mapped one (QEMU unmaps before remapping).
    #[error("DMA_MAP iova {iova:#x} size {size:#x} overlaps the mapping at {existing:#x}")]
    Overlap {
        /// Start of the new range.
        iova: u64,
        /// Length of the new range.
        size: u64,
        /// Start of the mapping it overlaps.
        existing: u64,
    },
    /// DMA_UNMAP would split a mapping.
    #[error("DMA_UNMAP iova {iova:#x} size {size:#x} covers only part of the mapping at {existing:#x}")]
    PartialUnmap {
        /// Start of the unmapped range.
        iova: u64,
        /// Length of the unmapped range.
        size: u64,
        /// Start of the mapping it cuts.
        existing: u64,
    },
    /// The range does not lie inside the shared file: mapping it would let the
    /// first device access past the file's end kill the process (SIGBUS).
    #[error("DMA_MAP iova {iova:#x} size {size:#x} at file offset {offset:#x} lies beyond the end of the {file_len:#x}-byte file")]
    BeyondFile {
        /// Start of the range.
        iova: u64,
        /// Length of the range.
        size: u64,
        /// Offset in the fd.
        offset: u64,
        /// Size of the file (fstat).
        file_len: u64,
    },
    /// The fd is not a regular file (memfd, hugetlbfs or tmpfs file), so its
    /// size says nothing about what can be mapped.
    #[error("DMA_MAP iova {iova:#x}: the fd is not a regular file ({kind})")]
    NotAFile {
        /// Start of the range.
        iova: u64,
        /// What fstat says it is, or why fstat failed.
        kind: String,
    },
    /// [`MAX_MAPPINGS`] mappings exist already.
    #[error("DMA_MAP iova {iova:#x}: {MAX_MAPPINGS} mappings exist already")]
    TooMany {
        /// Start of the refused range.
        iova: u64,
    },
    /// mmap of the shared fd failed.
    #[error("cannot mmap DMA region iova {iova:#x} size {size:#x} at file offset {offset:#x}")]
    Mmap {
        /// Start of the range.
        iova: u64,
        /// Length of the range.
        size: u64,
        /// Offset in the fd.
        offset: u64,
        /// The mmap error.
        #[source]
        source: MmapRegionError,
    },
}

impl DmaError {
    /// The errno the client gets for this refusal, as the kernel's VFIO
    /// type1 IOMMU would answer: EEXIST for an overlap, the mmap error's
    /// own errno, EINVAL otherwise.
    pub fn errno(&self) -> i32 {
        match self {
            Self::Overlap { .. } => libc::EEXIST,
            Self::TooMany { .. } => libc::ENOSPC,
            Self::Mmap { source: MmapRegionError::Mmap(err), .. } => err.raw_os_error().unwrap_or(libc::ENOMEM),
            _ => libc::EINVAL,
        }
    }
}

/// Access QEMU grants to a DMA region (`VFIO_USER_F_DMA_REGION_READ/WRITE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaAccess {
    /// Device may only read (e.g. a ROM).
    ReadOnly,
    /// Device may read and write.
    ReadWrite,
}

/// What a DMA_MAP did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapOutcome {
    /// The range is now reachable for DMA.
    Mapped,
    /// The range came without an fd and is not reachable (logged).
    IgnoredWithoutFd,
}

#[derive(Debug)]
struct Mapping {
    size: u64,
    region: Arc<GuestRegionMmap<()>>,
}

/// The DMA map of one vfio-user connection: IOVA → mmap'ed region.
#[derive(Debug)]
pub struct DmaMappings {
    memory: DmaMemory,
    maps: BTreeMap<u64, Mapping>,
}

impl DmaMappings {
    /// Starts with no mappings; every change is published into `memory`
    /// (which the device core holds a clone of).
    pub fn new(memory: DmaMemory) -> Self {
        Self { memory, maps: BTreeMap::new() }
    }

    /// Mapped ranges as (iova, size), sorted.
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        self.maps.iter().map(|(iova, m)| (*iova, m.size)).collect()
    }

    /// Handles DMA_MAP of `size` bytes at `iova`, backed by `fd` at byte `offset`.
    ///
    /// Read-write ranges are mapped shared. Read-only ranges are mapped
    /// private (copy-on-write), so a device write to them can neither fault
    /// nor reach the guest. Without `fd` the range is ignored.
    ///
    /// # Errors
    /// [`DmaError::BadRange`], [`DmaError::Overlap`] with an existing mapping,
    /// [`DmaError::TooMany`] beyond [`MAX_MAPPINGS`],
    /// [`DmaError::NotAFile`] / [`DmaError::BeyondFile`] unless `offset..offset + size`
    /// lies inside a regular file (checked with fstat before mapping),
    /// [`DmaError::Mmap`] if the kernel refuses the mapping (bad offset, fd, size).
    pub fn map(
        &mut self,
        iova: u64,
        size: u64,
        offset: u64,
        access: DmaAccess,
        fd: Option<File>,
    ) -> Result<MapOutcome, DmaError> {
        let end = checked_end(iova, size)?;
        let Some(fd) = fd else {
            tracing::info!(iova, size, "DMA_MAP without fd ignored (not shared with the device)");
            return Ok(MapOutcome::IgnoredWithoutFd);
        };
        if let Some((existing, _)) = self.overlapping(iova, end).next() {
            return Err(DmaError::Overlap { iova, size, existing });
        }
        if self.maps.len() >= MAX_MAPPINGS {
            return Err(DmaError::TooMany { iova });
        }
        check_file(&fd, iova, size, offset)?;
        let len = usize::try_from(size).map_err(|_| DmaError::BadRange { iova, size })?;
        let flags = match access {
            DmaAccess::ReadWrite => libc::MAP_SHARED,
            DmaAccess::ReadOnly => libc::MAP_PRIVATE,
        };
        let mmap_err = |source| DmaError::Mmap { iova, size, offset, source };
        let mapping = MmapRegion::build(
            Some(FileOffset::new(fd, offset)),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags | libc::MAP_NORESERVE,
        )
        .map_err(mmap_err)?;
        let region = GuestRegionMmap::new(mapping, GuestAddress(iova)).ok_or(DmaError::BadRange { iova, size })?;
        self.maps.insert(iova, Mapping { size, region: Arc::new(region) });
        self.publish();
        tracing::debug!(iova, size, offset, ?access, "DMA_MAP");
        Ok(MapOutcome::Mapped)
    }

    /// Handles DMA_UNMAP of `size` bytes at `iova`: removes every mapping inside
    /// the range; returns how many were removed (0 for a range that was ignored).
    ///
    /// # Errors
    /// [`DmaError::BadRange`]; [`DmaError::PartialUnmap`] if a mapping sticks out of
    /// the range (nothing is removed then).
    pub fn unmap(&mut self, iova: u64, size: u64) -> Result<usize, DmaError> {
        let end = checked_end(iova, size)?;
        let inside: Vec<u64> = self.overlapping(iova, end).map(|(start, _)| start).collect();
        for start in &inside {
            let map_end = start + self.maps[start].size;
            if *start < iova || map_end > end {
                return Err(DmaError::PartialUnmap { iova, size, existing: *start });
            }
        }
        for start in &inside {
            self.maps.remove(start);
        }
        self.publish();
        tracing::debug!(iova, size, removed = inside.len(), "DMA_UNMAP");
        Ok(inside.len())
    }

    /// Handles DMA_UNMAP with `VFIO_DMA_UNMAP_FLAG_ALL`.
    pub fn unmap_all(&mut self) {
        self.maps.clear();
        self.publish();
    }

    /// Mappings that intersect `[iova, end)`, as (start, size).
    fn overlapping(&self, iova: u64, end: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.maps.range(..end).map(|(start, m)| (*start, m.size)).filter(move |(start, size)| start + size > iova)
    }

    fn publish(&self) {
        let regions: Vec<_> = self.maps.values().map(|m| Arc::clone(&m.region)).collect();
        // The BTreeMap keeps regions sorted and `map` rejects overlaps, so
        // building the collection cannot fail; fall back to empty memory anyway
        // rather than keep a stale map.
        let memory = if regions.is_empty() {
            GuestMemoryMmap::new()
        } else {
            GuestMemoryMmap::from_arc_regions(regions).unwrap_or_else(|err| {
                tracing::error!(%err, "DMA map inconsistent; device loses DMA access");
                GuestMemoryMmap::new()
            })
        };
        let guard = self.memory.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        guard.replace(memory);
    }
}

/// Checks with fstat that `fd` is a regular file holding `offset..offset + size`.
/// vm-memory 0.18 maps whatever it is given; a page past the end of the file
/// would raise SIGBUS at the device's first access. (A file QEMU shrinks after
/// the map still can: QEMU never truncates guest RAM while it is mapped.)
fn check_file(fd: &File, iova: u64, size: u64, offset: u64) -> Result<(), DmaError> {
    let meta = fd.metadata().map_err(|err| DmaError::NotAFile { iova, kind: format!("fstat failed: {err}") })?;
    if !meta.file_type().is_file() {
        return Err(DmaError::NotAFile { iova, kind: format!("{:?}", meta.file_type()) });
    }
    let file_len = meta.len();
    if offset.checked_add(size).is_none_or(|end| end > file_len) {
        return Err(DmaError::BeyondFile { iova, size, offset, file_len });
    }
    Ok(())
}

fn checked_end(iova: u64, size: u64) -> Result<u64, DmaError> {
    iova.checked_add(size).filter(|_| size > 0).ok_or(DmaError::BadRange { iova, size })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;
    use vm_memory::{Bytes, GuestAddressSpace, GuestMemoryAtomic, GuestMemoryBackend};

    const MIB: u64 = 1 << 20;

    /// A memfd of `size` bytes, like QEMU's `memory-backend-memfd,share=on`.
    fn guest_ram(size: u64) -> File {
        let memfd = memfd::MemfdOptions::default().create("guest-ram").expect("memfd");
        memfd.as_file().set_len(size).expect("size");
        memfd.into_file()
    }

    fn dup(file: &File) -> File {
        file.try_clone().expect("dup")
    }

    fn setup() -> (DmaMemory, DmaMappings) {
        let memory = GuestMemoryAtomic::new(GuestMemoryMmap::new());
        (memory.clone(), DmaMappings::new(memory))
    }

    #[test]
    fn mapped_range_reaches_the_shared_file_at_its_offset() {
        let (memory, mut dma) = setup();
        let ram = guest_ram(4 * MIB);
        // Guest-physical 1 MiB..3 MiB backed by file offset 2 MiB.
        let outcome = dma.map(MIB, 2 * MIB, 2 * MIB, DmaAccess::ReadWrite, Some(dup(&ram)));
        assert_eq!(outcome.expect("map"), MapOutcome::Mapped);
        memory.memory().write_obj(0xdead_beef_u32, GuestAddress(MIB + 8)).expect("write");
        let mut seen = [0u8; 4];
        ram.read_exact_at(&mut seen, 2 * MIB + 8).expect("read file");
        assert_eq!(u32::from_le_bytes(seen), 0xdead_beef);
        ram.write_all_at(&7u32.to_le_bytes(), 2 * MIB + 0x100).expect("write file");
        let back: u32 = memory.memory().read_obj(GuestAddress(MIB + 0x100)).expect("read");
        assert_eq!(back, 7);
        assert!(memory.memory().read_obj::<u32>(GuestAddress(0)).is_err(), "below the map");
    }

    #[test]
    fn unmap_then_remap_replaces_the_region() {
        let (memory, mut dma) = setup();
        let ram = guest_ram(2 * MIB);
        dma.map(0, 2 * MIB, 0, DmaAccess::ReadWrite, Some(dup(&ram))).expect("map");
        assert_eq!(dma.unmap(0, 2 * MIB).expect("unmap"), 1);
        assert_eq!(memory.memory().num_regions(), 0);
        // QEMU remaps the same RAM in two halves during boot.
        dma.map(0, MIB, 0, DmaAccess::ReadWrite, Some(dup(&ram))).expect("low");
        dma.map(MIB, MIB, MIB, DmaAccess::ReadWrite, Some(dup(&ram))).expect("high");
        assert_eq!(dma.ranges(), vec![(0, MIB), (MIB, MIB)]);
        assert_eq!(memory.memory().num_regions(), 2);
        assert_eq!(dma.unmap(0, 2 * MIB).expect("unmap both"), 2);
        assert!(dma.ranges().is_empty());
    }

    #[test]
    fn overlapping_map_is_rejected_and_changes_nothing() {
        let (memory, mut dma) = setup();
        let ram = guest_ram(2 * MIB);
        dma.map(0, MIB, 0, DmaAccess::ReadWrite, Some(dup(&ram))).expect("map");
        let err = dma.map(MIB / 2, MIB, 0, DmaAccess::ReadWrite, Some(dup(&ram)));
        assert!(matches!(err, Err(DmaError::Overlap { existing: 0, .. })));
        assert_eq!(memory.memory().num_regions(), 1);
    }

    #[test]
    fn partial_unmap_is_rejected_and_unknown_unmap_is_a_no_op() {
        let (_memory, mut dma) = setup();
        let ram = guest_ram(2 * MIB);
        dma.map(0, 2 * MIB, 0, DmaAccess::ReadWrite, Some(dup(&ram))).expect("map");
        assert!(matches!(dma.unmap(0, MIB), Err(DmaError::PartialUnmap { existing: 0, .. })));
        assert_eq!(dma.ranges(), vec![(0, 2 * MIB)]);
        assert_eq!(dma.unmap(0x1_0000_0000, MIB).expect("nothing there"), 0);
    }

    #[test]
    fn ranges_without_fd_are_ignored() {
        let (memory, mut dma) = setup();
        let outcome = dma.map(0xfffc_0000, 0x4_0000, 0, DmaAccess::ReadOnly, None);
        assert_eq!(outcome.expect("ignored"), MapOutcome::IgnoredWithoutFd);
        assert_eq!(memory.memory().num_regions(), 0);
        assert_eq!(dma.unmap(0xfffc_0000, 0x4_0000).expect("no-op"), 0);
    }

    #[test]
    fn read_only_ranges_never_write_back_to_the_guest() {
        let (memory, mut dma) = setup();
        let rom = guest_ram(MIB);
        rom.write_all_at(&[0x55], 0).expect("write file");
        dma.map(0, MIB, 0, DmaAccess::ReadOnly, Some(dup(&rom))).expect("map");
        let byte: u8 = memory.memory().read_obj(GuestAddress(0)).expect("read");
        assert_eq!(byte, 0x55);
        memory.memory().write_obj(0xaa_u8, GuestAddress(0)).expect("private write");
        let mut seen = [0u8];
        rom.read_exact_at(&mut seen, 0).expect("read file");
        assert_eq!(seen[0], 0x55);
    }

    #[test]
    fn a_map_past_the_end_of_its_file_is_refused_instead_of_faulting_later() {
        let (memory, mut dma) = setup();
        let ram = guest_ram(MIB);
        // Within the file: offset + size == length.
        dma.map(0, MIB / 2, MIB / 2, DmaAccess::ReadWrite, Some(dup(&ram))).expect("inside the file");
        // One page past the end: mmap itself would succeed, the first
        // access would raise SIGBUS.
        let past = dma.map(MIB, MIB, 4096, DmaAccess::ReadWrite, Some(dup(&ram)));
        assert!(matches!(past, Err(DmaError::BeyondFile { file_len, .. }) if file_len == MIB), "{past:?}");
        let wraps = dma.map(4 * MIB, 4096, u64::MAX - 4095, DmaAccess::ReadOnly, Some(dup(&ram)));
        assert!(matches!(wraps, Err(DmaError::BeyondFile { .. })), "{wraps:?}");
        assert_eq!(dma.ranges(), vec![(0, MIB / 2)]);
        assert!(memory.memory().read_obj::<u64>(GuestAddress(MIB)).is_err());
    }

    #[test]
    fn maps_beyond_the_limit_are_refused() {
        let (_memory, mut dma) = setup();
        let ram = guest_ram(4096);
        for i in 0..MAX_MAPPINGS as u64 {
            dma.map(i * 4096, 4096, 0, DmaAccess::ReadOnly, Some(dup(&ram))).expect("below the limit");
        }
        let over = dma.map(1 << 40, 4096, 0, DmaAccess::ReadOnly, Some(dup(&ram)));
        assert!(matches!(over, Err(DmaError::TooMany { .. })), "{over:?}");
        assert_eq!(over.map_err(|e| e.errno()).err(), Some(libc::ENOSPC));
    }

    #[test]
    fn a_map_of_something_that_is_not_a_regular_file_is_refused() {
        let (_memory, mut dma) = setup();
        let (reader, _writer) = std::io::pipe().expect("pipe");
        let pipe = File::from(std::os::fd::OwnedFd::from(reader));
        let err = dma.map(0, 4096, 0, DmaAccess::ReadWrite, Some(pipe));
        assert!(matches!(err, Err(DmaError::NotAFile { .. })), "{err:?}");
        assert!(dma.ranges().is_empty());
    }

    #[test]
    fn bad_ranges_and_failed_mmaps_are_errors() {
        let (_memory, mut dma) = setup();
        let ram = guest_ram(MIB);
        assert!(matches!(dma.map(0, 0, 0, DmaAccess::ReadWrite, Some(dup(&ram))), Err(DmaError::BadRange { .. })));
        assert!(matches!(
            dma.map(u64::MAX, 2, 0, DmaAccess::ReadWrite, Some(dup(&ram))),
            Err(DmaError::BadRange { .. })
        ));
        // Offset not page aligned: mmap refuses.
        assert!(matches!(dma.map(0, MIB / 2, 1, DmaAccess::ReadWrite, Some(dup(&ram))), Err(DmaError::Mmap { .. })));
        assert!(dma.ranges().is_empty());
    }
}
