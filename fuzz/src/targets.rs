//! The fuzz targets, one function per guest- or QEMU-facing entry point.
//! The device targets start every input from a machine that is already up
//! (built once per process, put back to its checkpoint per input:
//! [`crate::machine`]), so that the same input runs the same way; the
//! others build what they need per input. Only a panic, a hang, a leak past
//! libFuzzer's RSS limit (or, for [`persistent`], growth over many inputs)
//! or an out-of-bounds access counts as a finding.

use crate::input::Input;
use crate::machine::{with_machine, Machine, Spec, Stage};
use crate::ops::{apply_all, decode_all, Op};
use crate::support::Kernel;
use device_model::shell::msix::MsixVectors;
use device_model::shell::server::ManaFunction;
use mana_device_api::config::DeviceConfig;
use std::fs::File;
use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};

/// The configuration most targets' device gets (a 9-entry MSI-X table
/// keeps vector numbers within reach of the fuzzer).
pub fn config() -> DeviceConfig {
    DeviceConfig { msix_table_size: 9, max_msix: 9, max_queues: 4, ..DeviceConfig::default() }
}

/// A 6.12 machine with [`config`] at `stage`, on the recorder's network.
pub fn spec(stage: Stage) -> Spec {
    Spec { kernel: Kernel::V6_12, config: config(), stage, tap: false }
}

/// Two queue pairs opened on vPort 0.
pub const TWO_QUEUES: Stage = Stage::Opened { queues: 2, second_vport: false };

fn run_ops(machine: &mut Machine, data: &[u8]) {
    apply_all(&decode_all(data), machine);
}

/// BAR0 reads and writes anywhere (registers, SMC, every doorbell), guest
/// memory writes and interrupt servicing, on a device fresh from reset.
/// Seeds: whole recorded probes (every MMIO access and memory write).
pub fn bar0(data: &[u8]) {
    with_machine(&spec(Stage::PowerOn), |machine| run_ops(machine, data));
}

/// The shared-memory channel: SMC dword writes (ESTABLISH/DESTROY with any
/// page numbers and vector), header reads, guest memory for the rings and
/// servicing of the interrupts the init EQEs raise. Input: ops whose tag
/// is taken modulo 4 (see [`decode_smc`]).
pub fn smc(data: &[u8]) {
    with_machine(&spec(Stage::PowerOn), |machine| apply_all(&decode_smc(data), machine));
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
    with_machine(&spec(Stage::HwcUp), |machine| run_ops(machine, data));
}

/// EQ, CQ, SQ and RQ doorbells, WQEs and SGEs on live Ethernet queues (a
/// 6.12 probe and `ndo_open` with 2 queue pairs done), frames from the
/// network, DMA remaps under the live queues: [`Op`]s, seeds being recorded
/// transmits and receives.
pub fn queues(data: &[u8]) {
    with_machine(&spec(TWO_QUEUES), |machine| run_ops(machine, data));
}

/// The backend side: frames that arrive in a TAP (up to 65,535 bytes, and
/// longer ones the TAP cuts), pulled by `poll_backend` into 4 live RQs under
/// RSS, TX frames written to the TAP, the event loop's polls; the device's
/// real TAP backend on a datagram socket pair. [`Op`]s, seeds being frames
/// of every kind the RX path parses.
pub fn backend(data: &[u8]) {
    with_machine(&backend_spec(), |machine| run_ops(machine, data));
}

/// The machine of [`backend`]: 4 queue pairs on a TAP stand-in.
pub fn backend_spec() -> Spec {
    Spec { tap: true, ..spec(Stage::Opened { queues: 4, second_vport: false }) }
}

/// Every `--inject` fault with the channel up: the input's first bytes are
/// the specs ([`decode_specs`]), the rest [`Op`]s, with [`Op::Tick`] as the
/// clock of held responses and timed events. Each spec must also print and
/// parse back to itself (the `--inject` grammar, mana_device_api::inject).
pub fn inject(data: &[u8]) {
    let mut input = Input::new(data);
    let specs = decode_specs(&mut input);
    for spec in &specs {
        let text = spec.to_string();
        assert_eq!(text.parse::<mana_device_api::inject::InjectSpec>().as_ref(), Ok(spec), "{text}");
    }
    let rest = input.take_up_to(usize::MAX);
    with_machine(&spec(Stage::HwcUp), |machine| {
        machine.drv.dev.inject(&specs);
        run_ops(machine, rest);
    });
}

/// Up to 4 `--inject` specs from `input`: a count byte, then per spec a
/// kind byte, `a` (u32: the command's index in `command_names()`, an EQ id,
/// a vector, an event), `b` (u16: an occurrence, a delay in 10 ms, seconds)
/// and a status code (u32), each taken into the range the grammar allows.
pub fn decode_specs(input: &mut Input<'_>) -> Vec<mana_device_api::inject::InjectSpec> {
    use mana_device_api::inject::{command_names, DeviceEvent, EntryKind, InjectSpec, SpuriousTarget};
    use std::time::Duration;
    let commands = command_names();
    let count = input.u8().map_or(0, |c| c % 5);
    let mut specs = Vec::new();
    for _ in 0..count {
        let (Some(kind), Some(a), Some(b), Some(code)) = (input.u8(), input.u32(), input.u16(), input.u32()) else {
            break;
        };
        let command = commands[a as usize % commands.len()].1;
        let nth = (b % 9 > 0).then_some(u64::from(b % 9));
        let spec = match kind % 9 {
            0 => InjectSpec::Status { command, code: code.max(1), nth },
            1 => InjectSpec::HwcDelay { command, delay: Duration::from_millis((u64::from(b) * 10).min(600_000)), nth },
            2 => InjectSpec::SpuriousIrq(SpuriousTarget::Eq(a % 70)),
            3 => InjectSpec::SpuriousIrq(SpuriousTarget::Vector((a % 2048) as u16)),
            4 => InjectSpec::OwnerBits { kind: EntryKind::Eqe, nth: u64::from(b).max(1) },
            5 => InjectSpec::OwnerBits { kind: EntryKind::Cqe, nth: u64::from(b).max(1) },
            6 => InjectSpec::SilentVector((a % 2048) as u16),
            7 => InjectSpec::RxCqeCorrupt { nth: u64::from(b).max(1) },
            _ => {
                let event = DeviceEvent::ALL[a as usize % DeviceEvent::ALL.len()].1;
                InjectSpec::Timed { event, after: Duration::from_secs(u64::from(b) % 601) }
            }
        };
        specs.push(spec);
    }
    specs
}

/// The machines of [`configs`]: driver version, what the device
/// advertises (MSI-X table, `max_msix`, queues, vPorts) and what is opened.
/// Beside the usual 6.12 / 9 vectors / 4 queues / 1 vPort: a table of one
/// vector (HWC only), of two, of 2048; fewer `max_msix` than table entries;
/// one, three, 16 and 64 queues; 2 and 16 vPorts with the second opened.
pub const CONFIGS: [(Kernel, u16, u32, u32, u16, usize, bool); 16] = [
    (Kernel::V6_1, 9, 9, 4, 1, 4, false),
    (Kernel::V7_3, 9, 9, 4, 1, 4, false),
    (Kernel::V6_12, 1, 1, 4, 1, 1, false),
    (Kernel::V6_12, 2, 2, 1, 1, 1, false),
    (Kernel::V7_3, 2, 2, 1, 1, 1, false),
    (Kernel::V6_1, 3, 3, 2, 1, 2, false),
    (Kernel::V6_12, 65, 17, 16, 1, 4, false),
    (Kernel::V7_3, 65, 65, 64, 1, 8, false),
    (Kernel::V6_12, 2048, 2048, 64, 1, 4, false),
    (Kernel::V6_12, 9, 5, 3, 1, 3, false),
    (Kernel::V6_12, 9, 9, 4, 2, 2, true),
    (Kernel::V7_3, 17, 17, 8, 2, 2, true),
    (Kernel::V6_1, 5, 5, 4, 16, 1, true),
    (Kernel::V6_12, 17, 17, 16, 16, 4, true),
    (Kernel::V7_3, 5, 5, 2, 3, 2, true),
    (Kernel::V6_12, 9, 9, 1, 1, 1, false),
];

/// The machine of [`CONFIGS`] entry `index` (modulo).
pub fn config_spec(index: u8) -> Spec {
    let (kernel, msix_table_size, max_msix, max_queues, num_vports, queues, second_vport) =
        CONFIGS[usize::from(index) % CONFIGS.len()];
    let config = DeviceConfig { msix_table_size, max_msix, max_queues, num_vports, ..DeviceConfig::default() };
    Spec { kernel, config, stage: Stage::Opened { queues, second_vport }, tap: false }
}

/// Configurations other than 6.12 / 9 vectors / 4 queues / 1 vPort: the
/// first byte picks one of [`CONFIGS`] (brought up as far as the device
/// lets the driver go), the rest is [`Op`]s.
pub fn configs(data: &[u8]) {
    let Some((&index, rest)) = data.split_first() else { return };
    with_machine(&config_spec(index), |machine| run_ops(machine, rest));
}

/// One device for every input, never rewound: [`Op`]s on a 6.12 machine
/// with 2 queue pairs opened at first, whatever the inputs do to it since
/// (resets, teardowns, traffic, faults' counters). After each input the
/// driver model forgets its records, and [`crate::growth::Watch`] checks
/// the device's footprint (every collection a guest can fill) and the live
/// heap (`fuzz_targets/persistent.rs` counts it): a panic, hence a finding,
/// when one keeps growing.
pub fn persistent(data: &[u8]) {
    use crate::growth::Watch;
    use crate::heap::{live_bytes, resident_bytes};
    use std::cell::RefCell;
    thread_local! {
        static DEVICE: RefCell<Option<(Machine, Watch)>> = const { RefCell::new(None) };
    }
    DEVICE.with(|cell| {
        let mut slot = cell.borrow_mut();
        let (machine, watch) = slot.get_or_insert_with(|| {
            let machine = crate::machine::Prepared::build(&spec(TWO_QUEUES)).into_machine();
            let watch = Watch::new(&machine.drv.dev.footprint());
            (machine, watch)
        });
        run_ops(machine, data);
        machine.drv.forget_history();
        machine.drv.remap_dma(crate::support::checkpoint::DmaView::Ram);
        let live = live_bytes();
        if let Err(growth) = watch.record(&machine.drv.dev.footprint(), live) {
            panic!(
                "persistent device: {growth} (after {} inputs; resident memory {} MiB)",
                watch.inputs(),
                resident_bytes() >> 20
            );
        }
    });
}

/// An eventfd (`kind` % 3 = 0: non-blocking; 1: blocking with a full
/// counter) or (2) a memfd, as QEMU might hand one over.
pub fn vector_fd(kind: u8) -> Option<File> {
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

/// The vfio-user thread, the data-path event loop's thread and a feeder of
/// TAP frames at once, on the production shell and core
/// ([`crate::threads`]).
pub fn threads(data: &[u8]) {
    crate::threads::run(data);
}

/// The vfio-user wire: raw client bytes over a socketpair into the device's
/// server (the front, the `vfio_user` crate, the device core), with fds.
/// Input: segments, each sent with one `sendmsg` ([`crate::wire_session`]).
pub fn vfio_wire(data: &[u8]) {
    crate::wire_session::run(data);
}
