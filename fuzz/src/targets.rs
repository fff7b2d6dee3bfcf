//! The fuzz targets, one function per guest- or QEMU-facing entry point.
//! Each builds a fresh device (deterministic: same input, same run) and
//! feeds it the input; only a panic, a hang, a leak past libFuzzer's RSS
//! limit or an out-of-bounds access counts as a finding.

use crate::input::Input;
use crate::ops::{decode_all, Op};
use crate::support::{Driver, Kernel};
use mana_device_api::config::DeviceConfig;
use device_model::shell::msix::MsixVectors;
use device_model::shell::server::ManaFunction;
use std::fs::File;
use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};

/// The configuration every target's device gets (a 9-entry MSI-X table
/// keeps vector numbers within reach of the fuzzer).
pub fn config() -> DeviceConfig {
    DeviceConfig { msix_table_size: 9, max_msix: 9, max_queues: 4, ..DeviceConfig::default() }
}

fn run_ops(drv: &mut Driver, data: &[u8]) {
    for op in decode_all(data) {
        op.apply(drv);
    }
}

/// BAR0 reads and writes anywhere (registers, SMC, every doorbell), guest
/// memory writes and interrupt servicing, on a device fresh from reset.
/// Seeds: whole recorded probes (every MMIO access and memory write).
pub fn bar0(data: &[u8]) {
    let mut drv = Driver::new(Kernel::V6_12, config());
    run_ops(&mut drv, data);
}

/// The shared-memory channel: SMC dword writes (ESTABLISH/DESTROY with any
/// page numbers and vector), header reads, guest memory for the rings and
/// servicing of the interrupts the init EQEs raise. Input: ops whose tag
/// is taken modulo 4 (see [`decode_smc`]).
pub fn smc(data: &[u8]) {
    let mut drv = Driver::new(Kernel::V6_12, config());
    for op in decode_smc(data) {
        op.apply(&mut drv);
    }
}

/// The SMC target's input: tag % 4 = 0 SMC dword write (dword u8, value
/// u32), 1 guest memory write (as [`Op::Mem`]), 2 EQ doorbell (u64 value),
/// 3 interrupt servicing.
pub fn decode_smc(data: &[u8]) -> Vec<Op> {
    let mut input = Input::new(data);
    let mut ops = Vec::new();
    while let Some(tag) = input.u8() {
        let op = match tag % 4 {
            0 => input.u8().zip(input.u32()).map(|(dword, value)| Op::Smc { dword, value }),
            1 => {
                let addr = input.u32();
                let len = input.u16().map_or(0, |l| usize::from(l) % 4097);
                addr.map(|addr| Op::Mem { addr, bytes: input.take_up_to(len).to_vec() })
            }
            2 => input.u64().map(|value| Op::Doorbell { kind: 4, page: 0, value }),
            _ => Some(Op::Pump),
        };
        match op {
            Some(op) => ops.push(op),
            None => break,
        }
    }
    ops
}

/// HWC requests for every GDMA and BNIC command (and any code), with the
/// channel up (SMC handshake and channel test done): [`Op`]s, seeds being
/// the requests of recorded probes, opens and closes ([`Op::Request`]).
pub fn hwc(data: &[u8]) {
    let mut drv = Driver::new(Kernel::V6_12, config());
    if drv.establish_hwc().and_then(|()| drv.test_channel()).is_err() {
        return;
    }
    run_ops(&mut drv, data);
}

/// EQ, CQ, SQ and RQ doorbells, WQEs and SGEs on live Ethernet queues (a
/// 6.12 probe and `ndo_open` with 2 queue pairs done), frames from the
/// network: [`Op`]s, seeds being recorded transmits and receives.
pub fn queues(data: &[u8]) {
    let mut drv = Driver::new(Kernel::V6_12, config());
    let Ok(eqs) = drv.probe() else { return };
    if drv.open(&eqs, 2).is_err() {
        return;
    }
    run_ops(&mut drv, data);
}

/// An eventfd (non-blocking, or blocking with a full counter) or a memfd,
/// as QEMU might hand one over.
fn vector_fd(kind: u8) -> Option<File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let efd = match kind % 3 {
        0 => EventFd::new(EFD_NONBLOCK).ok()?,
        1 => {
            let full = EventFd::new(0).ok()?;
            full.write(u64::MAX - 1).ok()?;
            full
        }
        _ => return memfd::MemfdOptions::default().create("not-an-eventfd").ok().map(memfd::Memfd::into_file),
    };
    // SAFETY: dup(2) of an fd `efd` owns; the new fd is owned by the File.
    let dup = unsafe { libc::dup(efd.as_raw_fd()) };
    // SAFETY: `dup` is a fresh fd nobody else owns (checked not negative).
    (dup >= 0).then(|| unsafe { File::from_raw_fd(dup) })
}

fn vector_fds(input: &mut Input<'_>) -> Vec<File> {
    let count = input.u8().unwrap_or(0) % 5;
    (0..count).filter_map(|_| vector_fd(input.u8().unwrap_or(0))).collect()
}

/// An offset near what matters (a small one) or any.
fn offset(input: &mut Input<'_>) -> Option<u64> {
    if input.u8()? & 1 == 0 {
        input.u16().map(u64::from)
    } else {
        input.u64()
    }
}

/// The MSI-X vectors: SET_IRQS with any flags, ranges and fds (eventfds,
/// full eventfds, memfds), raising vectors, table and PBA reads and writes
/// at any offset and length, reset. Input: a table size byte, then ops
/// (tag % 6: 0 set_irqs, 1 raise, 2 BAR read, 3 BAR write, 4 reset, 5 snapshot).
pub fn msix(data: &[u8]) {
    let mut input = Input::new(data);
    let Some(size) = input.u8() else { return };
    let msix = MsixVectors::new(u16::from(size % 65) + 1);
    use device_model::interrupt::InterruptSink;
    while let Some(tag) = input.u8() {
        match tag % 6 {
            0 => {
                let (Some(flags), Some(start), Some(count)) = (input.u32(), input.u32(), input.u32()) else {
                    return;
                };
                let fds = vector_fds(&mut input);
                let _ = msix.set_irqs(flags, start, count, fds);
            }
            1 => {
                let Some(vector) = input.u16() else { return };
                msix.raise(vector);
            }
            2 => {
                let (Some(at), Some(len)) = (offset(&mut input), input.u8()) else {
                    return;
                };
                let mut data = vec![0u8; usize::from(len % 65)];
                msix.bar_read(at, &mut data);
            }
            3 => {
                let (Some(at), Some(len)) = (offset(&mut input), input.u8()) else {
                    return;
                };
                let data = input.take_up_to(usize::from(len % 65)).to_vec();
                msix.bar_write(at, &data);
            }
            4 => msix.reset(),
            _ => {
                let _ = msix.snapshot();
            }
        }
    }
}

/// A memfd of `len` bytes (guest RAM as QEMU shares it).
fn guest_ram(len: u64) -> Option<File> {
    let file = memfd::MemfdOptions::default().create("ram").ok()?.into_file();
    file.set_len(len).ok()?;
    Some(file)
}

/// The PCI function as the vfio-user server sees it: region reads and
/// writes (config space, BAR0, the MSI-X BAR, the rest) at any offset and
/// length, DMA_MAP (no fd, a 1 MiB memfd, an eventfd) and DMA_UNMAP with
/// any range, SET_IRQS on every index, reset. Input: ops (tag % 6: 0 read,
/// 1 write, 2 DMA_MAP, 3 DMA_UNMAP, 4 SET_IRQS, 5 reset).
pub fn vfio_region(data: &[u8]) {
    let config = config();
    let Ok(mut function) = ManaFunction::new(config.clone(), device_model::factory(config)) else {
        return;
    };
    let mut input = Input::new(data);
    while let Some(tag) = input.u8() {
        let ok = match tag % 6 {
            0 | 1 => region_access(&mut function, &mut input, tag % 6 == 1),
            2 => dma_map(&mut function, &mut input),
            3 => {
                let (Some(flags), Some(iova), Some(size)) = (input.u32(), input.u64(), input.u64()) else {
                    return;
                };
                let flags = vfio_user::DmaUnmapFlags::from_bits_retain(flags);
                let _ = function.dma_unmap(flags, iova, size);
                true
            }
            4 => {
                let (Some(index), Some(flags), Some(start), Some(count)) =
                    (input.u8(), input.u32(), input.u32(), input.u32())
                else {
                    return;
                };
                let fds = vector_fds(&mut input);
                let _ = function.set_irqs(u32::from(index % 6), flags, start, count, fds);
                true
            }
            _ => {
                function.reset();
                true
            }
        };
        if !ok {
            return;
        }
    }
}

fn region_access(function: &mut ManaFunction, input: &mut Input<'_>, write: bool) -> bool {
    let (Some(region), Some(at), Some(len)) = (input.u8(), offset(input), input.u16()) else {
        return false;
    };
    let region = u32::from(region % 10);
    let len = usize::from(len) % 4097;
    if write {
        let data = input.take_up_to(len).to_vec();
        function.write(region, at, &data);
    } else {
        let mut data = vec![0u8; len];
        function.read(region, at, &mut data);
    }
    true
}

fn dma_map(function: &mut ManaFunction, input: &mut Input<'_>) -> bool {
    let (Some(flags), Some(offset), Some(iova), Some(size), Some(kind)) =
        (input.u8(), input.u64(), input.u64(), input.u64(), input.u8())
    else {
        return false;
    };
    let fd = match kind % 4 {
        0 => None,
        1 => guest_ram(1 << 20),
        2 => vector_fd(0),
        _ => guest_ram(0),
    };
    let flags = vfio_user::DmaMapFlags::from_bits_retain(u32::from(flags));
    let _ = function.dma_map(flags, offset, iova, size, fd);
    true
}

/// The vfio-user wire: raw client bytes over a socketpair into the device's
/// server (the front, the `vfio_user` crate, the device core), with fds.
/// Input: segments, each sent with one `sendmsg` ([`crate::wire_session`]).
pub fn vfio_wire(data: &[u8]) {
    crate::wire_session::run(data);
}
