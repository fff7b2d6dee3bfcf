//! MSI-X delivery: the per-vector eventfd table QEMU fills with
//! `VFIO_USER_DEVICE_SET_IRQS`, pending bits, and the MSI-X BAR contents.
//!
//! QEMU's `vfio-user-pci` emulates the MSI-X table the guest programs and
//! does the masking itself; the device only sees eventfds. QEMU enables
//! MSI-X in steps (docs/rig-pitfalls.md): SET_IRQS with count 1 and no fd
//! (MSI-X on, no vector usable), then one SET_IRQS per vector with one
//! eventfd as the guest unmasks it, and `DATA_NONE` with count 0 to
//! disable. A vector the device raises while MSI-X is enabled but the
//! vector has no eventfd is treated like a masked vector on real hardware:
//! its pending bit is set and the interrupt is delivered as soon as an
//! eventfd arrives (PCI 3.0 6.8.3.5 "pending bits"). While MSI-X is off,
//! raised vectors are dropped and counted.
//!
//! Raising a vector runs inside a guest MMIO access, so it must never block:
//! only eventfds are accepted as vector fds (a regular file on a slow file
//! system, a full pipe or a socket could block the write), each is switched
//! to non-blocking, and a write that would block (the eventfd's counter is at
//! its maximum, which only whoever holds the other end can cause) is counted
//! as lost instead.

use crate::interrupt::InterruptSink;
use crate::shell::pci::{MSIX_MAX_VECTORS, MSIX_PBA_OFFSET, MSIX_TABLE_OFFSET};
use mana_device_api::status::MsixSnapshot;
use std::fs::File;
use std::io::Write;
use std::sync::{Mutex, MutexGuard};
use thiserror::Error;
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_ACTION_TYPE_MASK, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE,
    VFIO_IRQ_SET_DATA_TYPE_MASK,
};

/// Bytes per MSI-X table entry (address low/high, data, vector control).
const TABLE_ENTRY_SIZE: u64 = 16;
/// Lost interrupts logged one by one before only every power of two is.
const LOST_LOG_LIMIT: u64 = 16;

/// Errors from a `SET_IRQS` request for the MSI-X index.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum MsixError {
    /// Vectors `start..start + count` do not exist.
    #[error("vectors {start}..{start}+{count} are outside the MSI-X table of {table_size}")]
    OutOfRange {
        /// First vector.
        start: u32,
        /// Number of vectors.
        count: u32,
        /// Entries in the MSI-X table.
        table_size: u16,
    },
    /// `DATA_EVENTFD` with a number of fds that is neither 0 nor `count`.
    #[error("SET_IRQS for {count} vectors carried {fds} eventfds")]
    FdCountMismatch {
        /// Vectors in the request.
        count: u32,
        /// Fds received.
        fds: usize,
    },
    /// An action/data combination MSI-X does not support (MASK/UNMASK, DATA_BOOL).
    #[error("unsupported SET_IRQS flags {0:#x} for MSI-X")]
    Unsupported(u32),
    /// A vector's fd is not an eventfd (or cannot be made non-blocking), so
    /// writing it could block the device.
    #[error("SET_IRQS vector {vector}: the fd is not an eventfd ({what})")]
    NotAnEventfd {
        /// The vector.
        vector: u32,
        /// What it is instead, or what failed.
        what: String,
    },
}

#[derive(Debug)]
struct State {
    enabled: bool,
    eventfds: Vec<Option<File>>,
    pending: Vec<bool>,
    delivered: Vec<u64>,
    dropped: u64,
    lost: u64,
    /// Guest-visible table entries as last written through the BAR (QEMU
    /// normally keeps its own copy and never forwards these accesses).
    table: Vec<[u32; 4]>,
}

impl State {
    fn new(table_size: u16) -> Self {
        let n = usize::from(table_size);
        Self {
            enabled: false,
            eventfds: std::iter::repeat_with(|| None).take(n).collect(),
            pending: vec![false; n],
            delivered: vec![0; n],
            dropped: 0,
            lost: 0,
            // Vector control bit 0 (masked) is set after reset (PCI 3.0 6.8.2.9).
            table: vec![[0, 0, 0, 1]; n],
        }
    }

    fn signal(&mut self, vector: usize) {
        let Some(Some(fd)) = self.eventfds.get(vector) else {
            return;
        };
        let mut fd: &File = fd;
        // One 8-byte write to an eventfd is all or nothing.
        match fd.write(&1u64.to_ne_bytes()) {
            Ok(8) => self.delivered[vector] += 1,
            result => {
                self.lost += 1;
                if self.lost <= LOST_LOG_LIMIT || self.lost.is_power_of_two() {
                    let err = result.map_or_else(|e| e.to_string(), |n| format!("wrote {n} bytes"));
                    tracing::warn!(vector, lost = self.lost, %err, "MSI-X eventfd write failed; interrupt lost");
                }
            }
        }
    }

    fn disable(&mut self) {
        self.enabled = false;
        self.eventfds.iter_mut().for_each(|fd| *fd = None);
        self.pending.fill(false);
    }
}

/// The MSI-X vectors of the device: eventfds from QEMU, pending bits, and
/// counters. Shared between the vfio-user shell (which fills it) and the
/// device core (which raises vectors through [`InterruptSink`]).
#[derive(Debug)]
pub struct MsixVectors {
    table_size: u16,
    state: Mutex<State>,
}

impl MsixVectors {
    /// A table of `table_size` vectors (1..=2048, clamped), MSI-X disabled.
    pub fn new(table_size: u16) -> Self {
        let table_size = table_size.clamp(1, MSIX_MAX_VECTORS);
        Self { table_size, state: Mutex::new(State::new(table_size)) }
    }

    /// Entries in the MSI-X table.
    pub fn table_size(&self) -> u16 {
        self.table_size
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the table inconsistent
        // (each update is a single assignment), so a poisoned lock is usable.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Applies a `VFIO_USER_DEVICE_SET_IRQS` request for the MSI-X index
    /// (`flags` as in `struct vfio_irq_set`, linux/vfio.h).
    ///
    /// - `TRIGGER | DATA_NONE`, count 0: disable MSI-X, drop all eventfds and pending bits.
    /// - `TRIGGER | DATA_NONE`, count > 0: fire those vectors (loopback test).
    /// - `TRIGGER | DATA_EVENTFD` with `count` fds: enable MSI-X, install the eventfds,
    ///   deliver pending interrupts of those vectors.
    /// - `TRIGGER | DATA_EVENTFD` without fds (QEMU's fd -1): enable MSI-X, remove the
    ///   eventfds of those vectors.
    ///
    /// # Errors
    /// [`MsixError`] for vectors outside the table, a wrong number of fds, an
    /// fd that is not an eventfd ([`MsixError::NotAnEventfd`]; nothing is
    /// installed then), or MASK/UNMASK/DATA_BOOL, which VFIO does not support
    /// for MSI-X either.
    pub fn set_irqs(&self, flags: u32, start: u32, count: u32, fds: Vec<File>) -> Result<(), MsixError> {
        let action = flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
        let data = flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
        if action != VFIO_IRQ_SET_ACTION_TRIGGER {
            return Err(MsixError::Unsupported(flags));
        }
        let mut state = self.lock();
        if data == VFIO_IRQ_SET_DATA_NONE && count == 0 {
            tracing::debug!("MSI-X disabled");
            state.disable();
            return Ok(());
        }
        let end = start
            .checked_add(count)
            .filter(|end| *end <= u32::from(self.table_size))
            .ok_or(MsixError::OutOfRange { start, count, table_size: self.table_size })?;
        let vectors = start as usize..end as usize;
        match data {
            VFIO_IRQ_SET_DATA_NONE => {
                for vector in vectors {
                    state.signal(vector);
                }
            }
            VFIO_IRQ_SET_DATA_EVENTFD if fds.is_empty() => {
                state.enabled = true;
                state.eventfds[vectors.clone()].iter_mut().for_each(|fd| *fd = None);
                tracing::debug!(?vectors, "MSI-X enabled; vectors without eventfd");
            }
            VFIO_IRQ_SET_DATA_EVENTFD if fds.len() == vectors.len() => {
                for (vector, fd) in vectors.clone().zip(&fds) {
                    make_nonblocking_eventfd(fd)
                        .map_err(|what| MsixError::NotAnEventfd { vector: vector as u32, what })?;
                }
                state.enabled = true;
                for (vector, fd) in vectors.clone().zip(fds) {
                    state.eventfds[vector] = Some(fd);
                    if std::mem::take(&mut state.pending[vector]) {
                        state.signal(vector);
                    }
                }
                tracing::debug!(?vectors, "MSI-X eventfds installed");
            }
            VFIO_IRQ_SET_DATA_EVENTFD => {
                return Err(MsixError::FdCountMismatch { count, fds: fds.len() });
            }
            _ => return Err(MsixError::Unsupported(flags)),
        }
        Ok(())
    }

    /// Device reset: MSI-X off, eventfds and pending bits dropped, table masked.
    /// Counters are kept (they describe the whole run).
    pub fn reset(&self) {
        let mut state = self.lock();
        state.disable();
        state.table.fill([0, 0, 0, 1]);
    }

    /// Reads the MSI-X BAR (table at [`MSIX_TABLE_OFFSET`], PBA at
    /// [`MSIX_PBA_OFFSET`]); bytes outside both read as zero.
    pub fn bar_read(&self, offset: u64, data: &mut [u8]) {
        let state = self.lock();
        for (i, byte) in data.iter_mut().enumerate() {
            *byte = offset.checked_add(i as u64).map_or(0, |at| self.bar_byte(&state, at));
        }
    }

    fn bar_byte(&self, state: &State, at: u64) -> u8 {
        let table_len = u64::from(self.table_size) * TABLE_ENTRY_SIZE;
        let pba_len = u64::from(self.table_size).div_ceil(64) * 8;
        if (MSIX_TABLE_OFFSET..MSIX_TABLE_OFFSET + table_len).contains(&at) {
            let rel = at - MSIX_TABLE_OFFSET;
            let word = state.table[(rel / TABLE_ENTRY_SIZE) as usize][(rel % 16 / 4) as usize];
            word.to_le_bytes()[(rel % 4) as usize]
        } else if (MSIX_PBA_OFFSET..MSIX_PBA_OFFSET + pba_len).contains(&at) {
            let first = ((at - MSIX_PBA_OFFSET) * 8) as usize;
            (0..8)
                .filter(|bit| state.pending.get(first + bit).copied().unwrap_or(false))
                .fold(0u8, |acc, bit| acc | 1 << bit)
        } else {
            0
        }
    }

    /// Writes the MSI-X BAR: table entries take the bytes (vector control keeps
    /// only its mask bit); the PBA and everything else are read-only.
    pub fn bar_write(&self, offset: u64, data: &[u8]) {
        let mut state = self.lock();
        let table_len = u64::from(self.table_size) * TABLE_ENTRY_SIZE;
        for (i, byte) in data.iter().enumerate() {
            let Some(rel) = offset.checked_add(i as u64).and_then(|at| at.checked_sub(MSIX_TABLE_OFFSET)) else {
                continue;
            };
            if rel >= table_len {
                continue;
            }
            let word = &mut state.table[(rel / TABLE_ENTRY_SIZE) as usize][(rel % 16 / 4) as usize];
            let mut bytes = word.to_le_bytes();
            bytes[(rel % 4) as usize] = *byte;
            *word = u32::from_le_bytes(bytes);
            if rel % 16 >= 12 {
                *word &= 1;
            }
        }
    }

    /// Current state and counters.
    pub fn snapshot(&self) -> MsixSnapshot {
        let state = self.lock();
        let which =
            |pred: &dyn Fn(usize) -> bool| (0..self.table_size).filter(|v| pred(usize::from(*v))).collect::<Vec<u16>>();
        MsixSnapshot {
            table_size: self.table_size,
            enabled: state.enabled,
            vectors_with_eventfd: which(&|v| state.eventfds[v].is_some()),
            pending: which(&|v| state.pending[v]),
            delivered: state.delivered.clone(),
            dropped: state.dropped,
            lost: state.lost,
        }
    }
}

/// Checks that `fd` is an eventfd (its `/proc/self/fd` link reads
/// `anon_inode:[eventfd]`) and sets `O_NONBLOCK` on it. QEMU's eventfds are
/// non-blocking already (`event_notifier_init()`); the flag belongs to the
/// open file, which QEMU shares, so nothing changes for QEMU.
///
/// # Errors
/// What the fd is instead, or which call failed.
fn make_nonblocking_eventfd(fd: &File) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let raw = fd.as_raw_fd();
    let link = std::fs::read_link(format!("/proc/self/fd/{raw}"))
        .map_err(|err| format!("cannot read /proc/self/fd/{raw}: {err}"))?;
    if link.as_os_str() != "anon_inode:[eventfd]" {
        return Err(link.display().to_string());
    }
    // SAFETY: fcntl(F_GETFL) on an fd this function borrows; no memory is passed.
    let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
    if flags < 0 {
        return Err(format!("F_GETFL: {}", std::io::Error::last_os_error()));
    }
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: fcntl(F_SETFL) with an integer argument on a borrowed fd.
        let set = unsafe { libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) };
        if set < 0 {
            return Err(format!("F_SETFL: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

impl InterruptSink for MsixVectors {
    /// Raises `vector`: writes its eventfd, or sets its pending bit if MSI-X is
    /// enabled but the vector has no eventfd yet, or drops it (counted) if MSI-X
    /// is disabled or the vector is outside the table.
    fn raise(&self, vector: u16) {
        let mut state = self.lock();
        let v = usize::from(vector);
        if vector >= self.table_size || !state.enabled {
            state.dropped += 1;
            tracing::debug!(vector, enabled = state.enabled, "MSI-X vector dropped");
        } else if state.eventfds[v].is_some() {
            state.signal(v);
        } else {
            state.pending[v] = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};

    const EVENTFD: u32 = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
    const NONE: u32 = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER;

    /// An eventfd and the `File` QEMU would send for it (a dup).
    fn eventfd() -> (EventFd, File) {
        use std::os::fd::{AsRawFd, BorrowedFd};
        let efd = EventFd::new(EFD_NONBLOCK).expect("eventfd");
        // SAFETY: the fd is open and owned by `efd`, which outlives this borrow.
        let borrowed = unsafe { BorrowedFd::borrow_raw(efd.as_raw_fd()) };
        let file = File::from(borrowed.try_clone_to_owned().expect("dup"));
        (efd, file)
    }

    fn fired(efd: &EventFd) -> u64 {
        efd.read().unwrap_or(0)
    }

    #[test]
    fn qemu_stepwise_enable_delivers_only_to_vectors_with_eventfds() {
        let msix = MsixVectors::new(9);
        // QEMU: count 1, no fd -> MSI-X on (docs/rig-pitfalls.md).
        msix.set_irqs(EVENTFD, 0, 1, vec![]).expect("enable");
        let (efd0, f0) = eventfd();
        msix.set_irqs(EVENTFD, 0, 1, vec![f0]).expect("vector 0");
        let (efd3, f3) = eventfd();
        msix.set_irqs(EVENTFD, 3, 1, vec![f3]).expect("vector 3");
        msix.raise(0);
        msix.raise(3);
        msix.raise(3);
        assert_eq!(fired(&efd0), 1);
        assert_eq!(fired(&efd3), 2);
        let snap = msix.snapshot();
        assert_eq!(snap.vectors_with_eventfd, vec![0, 3]);
        assert_eq!(snap.delivered[3], 2);
    }

    #[test]
    fn raise_without_eventfd_is_pending_until_the_eventfd_arrives() {
        let msix = MsixVectors::new(9);
        msix.set_irqs(EVENTFD, 0, 1, vec![]).expect("enable");
        msix.raise(5);
        assert_eq!(msix.snapshot().pending, vec![5]);
        let mut pba = [0u8; 1];
        msix.bar_read(MSIX_PBA_OFFSET, &mut pba);
        assert_eq!(pba[0], 1 << 5);
        let (efd, f) = eventfd();
        msix.set_irqs(EVENTFD, 5, 1, vec![f]).expect("vector 5");
        assert_eq!(fired(&efd), 1);
        assert!(msix.snapshot().pending.is_empty());
    }

    #[test]
    fn raise_while_disabled_or_out_of_range_is_dropped() {
        let msix = MsixVectors::new(9);
        msix.raise(0);
        msix.raise(9);
        let snap = msix.snapshot();
        assert_eq!(snap.dropped, 2);
        assert!(snap.pending.is_empty());
    }

    #[test]
    fn disable_drops_eventfds_and_pending_bits() {
        let msix = MsixVectors::new(4);
        let (efd, f) = eventfd();
        msix.set_irqs(EVENTFD, 1, 1, vec![f]).expect("vector 1");
        msix.raise(2);
        msix.set_irqs(NONE, 0, 0, vec![]).expect("disable");
        msix.raise(1);
        assert_eq!(fired(&efd), 0);
        let snap = msix.snapshot();
        assert!(!snap.enabled && snap.pending.is_empty() && snap.vectors_with_eventfd.is_empty());
    }

    #[test]
    fn eventfd_without_fd_removes_the_vector() {
        let msix = MsixVectors::new(4);
        let (efd, f) = eventfd();
        msix.set_irqs(EVENTFD, 2, 1, vec![f]).expect("vector 2");
        msix.set_irqs(EVENTFD, 2, 1, vec![]).expect("release vector 2");
        msix.raise(2);
        assert_eq!(fired(&efd), 0);
        assert_eq!(msix.snapshot().pending, vec![2]);
    }

    #[test]
    fn whole_table_at_once_and_data_none_trigger_fire() {
        let msix = MsixVectors::new(3);
        let pairs: Vec<_> = (0..3).map(|_| eventfd()).collect();
        let (efds, files): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
        msix.set_irqs(EVENTFD, 0, 3, files).expect("all vectors");
        msix.set_irqs(NONE, 1, 2, vec![]).expect("loopback trigger");
        assert_eq!(efds.iter().map(fired).collect::<Vec<_>>(), vec![0, 1, 1]);
    }

    #[test]
    fn bad_requests_are_errors() {
        let msix = MsixVectors::new(4);
        assert_eq!(
            msix.set_irqs(EVENTFD, 3, 2, vec![]),
            Err(MsixError::OutOfRange { start: 3, count: 2, table_size: 4 })
        );
        assert!(msix.set_irqs(EVENTFD, u32::MAX, 2, vec![]).is_err());
        let (_efd, f) = eventfd();
        assert_eq!(msix.set_irqs(EVENTFD, 0, 2, vec![f]), Err(MsixError::FdCountMismatch { count: 2, fds: 1 }));
        let mask = VFIO_IRQ_SET_DATA_NONE | vfio_bindings::bindings::vfio::VFIO_IRQ_SET_ACTION_MASK;
        assert_eq!(msix.set_irqs(mask, 0, 1, vec![]), Err(MsixError::Unsupported(mask)));
    }

    #[test]
    fn a_vector_fd_that_is_not_an_eventfd_is_refused_and_nothing_is_installed() {
        let msix = MsixVectors::new(4);
        let (_efd, good) = eventfd();
        let file = memfd::MemfdOptions::default().create("not-an-eventfd").expect("memfd").into_file();
        let err = msix.set_irqs(EVENTFD, 0, 2, vec![good, file]);
        assert!(matches!(&err, Err(MsixError::NotAnEventfd { vector: 1, what }) if what.contains("memfd")), "{err:?}");
        let snap = msix.snapshot();
        assert!(!snap.enabled && snap.vectors_with_eventfd.is_empty(), "{snap:?}");
    }

    #[test]
    fn a_full_eventfd_loses_the_interrupt_instead_of_blocking_the_device() {
        use std::os::fd::{AsRawFd, BorrowedFd};
        // A blocking eventfd whose counter the other end filled to its
        // maximum (0xffff_ffff_ffff_fffe): a blocking write of 1 would wait
        // for a reader for ever.
        let efd = EventFd::new(0).expect("blocking eventfd");
        efd.write(u64::MAX - 1).expect("fill the counter");
        // SAFETY: the fd is open and owned by `efd`, which outlives this borrow.
        let borrowed = unsafe { BorrowedFd::borrow_raw(efd.as_raw_fd()) };
        let file = File::from(borrowed.try_clone_to_owned().expect("dup"));
        let msix = MsixVectors::new(2);
        msix.set_irqs(EVENTFD, 1, 1, vec![file]).expect("an eventfd");
        msix.raise(1);
        msix.raise(1);
        let snap = msix.snapshot();
        assert_eq!((snap.lost, snap.delivered[1]), (2, 0));
        assert_eq!(efd.read().expect("counter"), u64::MAX - 1);
        msix.raise(1);
        assert_eq!(msix.snapshot().delivered[1], 1, "delivered again once read");
    }

    #[test]
    fn table_entries_start_masked_and_keep_guest_writes() {
        let msix = MsixVectors::new(2);
        let mut entry = [0u8; 16];
        msix.bar_read(16, &mut entry);
        assert_eq!(entry, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
        msix.bar_write(16, &[0xee, 0xff, 0xe0, 0xfe, 0, 0, 0, 0, 0x41, 0, 0, 0, 0xfe, 0xff, 0, 0]);
        msix.bar_read(16, &mut entry);
        assert_eq!(entry, [0xee, 0xff, 0xe0, 0xfe, 0, 0, 0, 0, 0x41, 0, 0, 0, 0, 0, 0, 0]);
        msix.reset();
        msix.bar_read(16, &mut entry);
        assert_eq!(entry[12], 1);
        let mut beyond = [0xaa_u8; 4];
        msix.bar_read(u64::MAX - 1, &mut beyond);
        assert_eq!(beyond, [0; 4]);
        msix.bar_write(u64::MAX - 1, &[1, 2, 3, 4]);
    }
}
