//! The operations a guest driver, the network and the device's
//! surroundings perform on the device, as fuzz input: BAR0 accesses
//! (registers, SMC, doorbells), writes of guest memory, work-queue entries,
//! HWC requests, interrupt servicing, frames from the network (pushed, or
//! waiting in the packet backend, up to 65,535 bytes), the event loop's
//! polls, the clock of timed injections, and DMA remaps under live queues.
//! [`Op::decode`] and [`Op::encode`] are inverse, so a recorded driver
//! session ([`crate::corpus`]) is a seed the fuzzer can mutate.
//!
//! Encoding: a tag byte (taken modulo the number of kinds, so every byte
//! decodes), then the fields, little-endian.

use crate::input::Input;
use crate::machine::Machine;
use crate::support::checkpoint::DmaView;
use crate::support::{Driver, Traced, RAM_SIZE};
use device_model::bar::Bar0Handler;
use device_model::device::regs::{DB_PAGE_OFFSET, DB_PAGE_SIZE, SHM_OFFSET};
use std::time::{Duration, Instant};

/// Kinds of [`Op`] (tags are taken modulo this).
const KINDS: u8 = 15;
/// Frames one [`Op::Frames`] queues at most.
const MAX_FRAMES_PER_OP: u8 = 8;
/// Largest memory write or request one op carries.
pub const MAX_BYTES: usize = 4096;
/// Largest zeroed range one op clears.
const MAX_ZERO: u32 = 1 << 20;
/// Interrupts the driver model takes over one input's ops together
/// ([`apply_all`]). A ring the input corrupted can make the device and the
/// model interrupt each other until a pump's budget runs out
/// (`machine::INTERRUPT_BUDGET`, 512): each arm doorbell rightly fires at the
/// entry the model cannot read, still pending. That is one interrupt per
/// doorbell on the device's side, but without a bound per input every 1-byte
/// [`Op::Pump`] restarted the storm: campaign 5's slow `backend` input ran 283
/// of them, 145,922 interrupts in all (docs/fuzzing.md, "Findings"). Recorded
/// sessions take at most a few hundred.
pub const INPUT_INTERRUPTS: usize = 4096;

/// One guest operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A BAR0 write of 1, 2, 4 or 8 bytes (`data.len()`) at `offset`.
    BarWrite {
        /// Byte offset in BAR0 (64 KiB).
        offset: u16,
        /// The bytes written.
        data: Vec<u8>,
    },
    /// A BAR0 read of `len` (1, 2, 4 or 8) bytes.
    BarRead {
        /// Byte offset in BAR0.
        offset: u16,
        /// Access width.
        len: u8,
    },
    /// Bytes written to guest memory at `addr` (modulo the RAM size).
    Mem {
        /// Guest-physical address.
        addr: u32,
        /// The bytes (at most [`MAX_BYTES`]).
        bytes: Vec<u8>,
    },
    /// Guest memory cleared.
    Zero {
        /// Guest-physical address.
        addr: u32,
        /// Bytes (at most 1 MiB).
        len: u32,
    },
    /// An 8-byte doorbell: `kind` 0 SQ, 1 RQ, 2 CQ, 3 EQ, 4 DIM, in doorbell page `page`.
    Doorbell {
        /// Which doorbell of the page.
        kind: u8,
        /// Doorbell page (0 is the one the device hands out).
        page: u8,
        /// The doorbell value.
        value: u64,
    },
    /// A 4-byte write of SMC dword `dword` (0..8).
    Smc {
        /// Dword index in the aperture.
        dword: u8,
        /// The value.
        value: u32,
    },
    /// Raw bytes as the next entry of one of the driver's Ethernet work
    /// queues (index `queue` among its SQs, or RQs), then its doorbell
    /// with the producer moved by `units` basic units.
    Wqe {
        /// SQ (true) or RQ.
        sq: bool,
        /// Index among the driver's queues of that kind.
        queue: u8,
        /// Producer advance in 32-byte units.
        units: u8,
        /// The entry's bytes.
        bytes: Vec<u8>,
    },
    /// The driver services every raised interrupt (its EQ/CQ handlers).
    Pump,
    /// An HWC request through the driver's SQ (response read by the driver).
    Request(Vec<u8>),
    /// A frame from the network to vPort `vport`.
    Receive {
        /// vPort index.
        vport: u8,
        /// The frame.
        frame: Vec<u8>,
    },
    /// The clock of timed injections (`hwc-delay`, `reset@S`, …): the
    /// device's `tick` at `ms` milliseconds from now.
    Tick {
        /// How far ahead of now.
        ms: u32,
    },
    /// What guest RAM the device sees changes (DMA_UNMAP / DMA_MAP while
    /// the queues are live): `view` picks a [`DmaView`].
    Remap {
        /// Index into [`DmaView::ALL`] (modulo).
        view: u8,
    },
    /// Frames arrive in the packet backend (a TAP's socket, or the
    /// in-memory inbox) for vPort `vport`: `count` (modulo 9) frames of
    /// `len` bytes, `pattern` repeated to fill them.
    Frames {
        /// vPort index.
        vport: u8,
        /// How many.
        count: u8,
        /// Bytes each (up to 65,535).
        len: u16,
        /// What fills them (zeroes when empty).
        pattern: Vec<u8>,
    },
    /// The event loop pulls up to `budget` frames from the backend
    /// (`ManaDevice::poll_backend`), then the driver services interrupts.
    PollBackend {
        /// Frames at most.
        budget: u8,
    },
    /// The event loop continues pending data-path work
    /// (`ManaDevice::poll`, a few rounds), then the driver services interrupts.
    Poll,
}

fn width(code: u8) -> usize {
    [1, 2, 4, 8][usize::from(code & 3)]
}

fn width_code(len: usize) -> u8 {
    match len {
        1 => 0,
        2 => 1,
        4 => 2,
        _ => 3,
    }
}

fn bytes(input: &mut Input<'_>) -> Option<Vec<u8>> {
    let len = usize::from(input.u16()?) % (MAX_BYTES + 1);
    Some(input.take_up_to(len).to_vec())
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = bytes.len().min(MAX_BYTES);
    out.extend_from_slice(&(len as u16).to_le_bytes());
    out.extend_from_slice(&bytes[..len]);
}

impl Op {
    /// Decodes the next op; `None` at the end of the input.
    pub fn decode(input: &mut Input<'_>) -> Option<Op> {
        let op = match input.u8()? % KINDS {
            0 => {
                let offset = input.u16()?;
                let len = width(input.u8()?);
                Op::BarWrite { offset, data: input.take(len)?.to_vec() }
            }
            1 => Op::BarRead { offset: input.u16()?, len: width(input.u8()?) as u8 },
            2 => Op::Mem { addr: input.u32()?, bytes: bytes(input)? },
            3 => Op::Zero { addr: input.u32()?, len: input.u32()? % (MAX_ZERO + 1) },
            4 => Op::Doorbell { kind: input.u8()?, page: input.u8()?, value: input.u64()? },
            5 => Op::Smc { dword: input.u8()?, value: input.u32()? },
            6 => {
                let flags = input.u8()?;
                Op::Wqe { sq: flags & 1 == 0, queue: flags >> 1, units: input.u8()?, bytes: bytes(input)? }
            }
            7 => Op::Pump,
            8 => Op::Request(bytes(input)?),
            9 => Op::Receive { vport: input.u8()?, frame: bytes(input)? },
            10 => Op::Tick { ms: input.u32()? },
            11 => Op::Remap { view: input.u8()? },
            12 => {
                let (vport, count, len) = (input.u8()?, input.u8()?, input.u16()?);
                Op::Frames { vport, count, len, pattern: bytes(input)? }
            }
            13 => Op::PollBackend { budget: input.u8()? },
            _ => Op::Poll,
        };
        Some(op)
    }

    /// Appends the encoding [`Op::decode`] reads back as `self`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Op::BarWrite { offset, data } => {
                out.push(0);
                out.extend_from_slice(&offset.to_le_bytes());
                out.push(width_code(data.len()));
                let mut padded = data.clone();
                padded.resize(width(width_code(data.len())), 0);
                out.extend_from_slice(&padded);
            }
            Op::BarRead { offset, len } => {
                out.push(1);
                out.extend_from_slice(&offset.to_le_bytes());
                out.push(width_code(usize::from(*len)));
            }
            Op::Mem { addr, bytes } => {
                out.push(2);
                out.extend_from_slice(&addr.to_le_bytes());
                put_bytes(out, bytes);
            }
            Op::Zero { addr, len } => {
                out.push(3);
                out.extend_from_slice(&addr.to_le_bytes());
                out.extend_from_slice(&len.to_le_bytes());
            }
            Op::Doorbell { kind, page, value } => {
                out.extend_from_slice(&[4, *kind, *page]);
                out.extend_from_slice(&value.to_le_bytes());
            }
            Op::Smc { dword, value } => {
                out.extend_from_slice(&[5, *dword]);
                out.extend_from_slice(&value.to_le_bytes());
            }
            Op::Wqe { sq, queue, units, bytes } => {
                out.extend_from_slice(&[6, (queue << 1) | u8::from(!*sq), *units]);
                put_bytes(out, bytes);
            }
            Op::Pump => out.push(7),
            Op::Request(bytes) => {
                out.push(8);
                put_bytes(out, bytes);
            }
            Op::Receive { vport, frame } => {
                out.extend_from_slice(&[9, *vport]);
                put_bytes(out, frame);
            }
            Op::Tick { ms } => {
                out.push(10);
                out.extend_from_slice(&ms.to_le_bytes());
            }
            Op::Remap { view } => out.extend_from_slice(&[11, *view]),
            Op::Frames { vport, count, len, pattern } => {
                out.extend_from_slice(&[12, *vport, *count]);
                out.extend_from_slice(&len.to_le_bytes());
                put_bytes(out, pattern);
            }
            Op::PollBackend { budget } => out.extend_from_slice(&[13, *budget]),
            Op::Poll => out.push(14),
        }
    }

    /// The op a recorded driver action becomes; `None` for what has no op
    /// of its own (an HWC request is recorded as its memory and doorbell
    /// writes too).
    pub fn from_traced(event: &Traced) -> Option<Op> {
        match event {
            Traced::Mem { addr, bytes } => {
                let addr = u32::try_from(*addr).ok()?;
                Some(if bytes.iter().all(|&b| b == 0) {
                    Op::Zero { addr, len: bytes.len() as u32 }
                } else {
                    Op::Mem { addr, bytes: bytes.clone() }
                })
            }
            Traced::Read { offset, len } => Some(Op::BarRead { offset: u16::try_from(*offset).ok()?, len: *len as u8 }),
            Traced::Write { offset, bytes } => {
                Some(Op::BarWrite { offset: u16::try_from(*offset).ok()?, data: bytes.clone() })
            }
            Traced::Request(_) => None,
        }
    }

    /// Performs the op on the machine (errors of the driver model are
    /// ignored: a confused driver is part of the game; only the device must
    /// not panic, hang or leak).
    pub fn apply(&self, machine: &mut Machine) {
        let drv = &mut machine.drv;
        match self {
            Op::BarWrite { offset, data } => drv.dev.write(u64::from(*offset), data),
            Op::BarRead { offset, len } => {
                let mut data = vec![0u8; usize::from(*len)];
                drv.dev.read(u64::from(*offset), &mut data);
            }
            Op::Mem { addr, bytes } => write_ram(drv, *addr, bytes),
            Op::Zero { addr, len } => {
                let (at, len) = within_ram(*addr, *len as usize);
                drv.zero(at, len);
            }
            Op::Doorbell { kind, page, value } => {
                let within = [0x000, 0x400, 0x800, 0x820, 0xFF8][usize::from(kind % 5)];
                let offset = DB_PAGE_OFFSET + u64::from(page % 16) * DB_PAGE_SIZE + within;
                drv.dev.write(offset, &value.to_le_bytes());
            }
            Op::Smc { dword, value } => {
                let offset = SHM_OFFSET + u64::from(dword % 8) * 4;
                drv.dev.write(offset, &value.to_le_bytes());
            }
            Op::Wqe { sq, queue, units, bytes } => post_wqe(drv, *sq, *queue, *units, bytes),
            Op::Pump => {
                let _ = drv.pump();
            }
            Op::Request(bytes) => {
                if !bytes.is_empty() {
                    let _ = drv.send_raw(bytes, 4096);
                }
            }
            Op::Receive { vport, frame } => {
                let _ = drv.dev.receive(u16::from(*vport % 4), frame);
                let _ = drv.pump();
            }
            Op::Tick { ms } => {
                drv.dev.tick(Instant::now() + Duration::from_millis(u64::from(*ms)));
                let _ = drv.pump();
            }
            Op::Remap { view } => {
                drv.remap_dma(DmaView::ALL[usize::from(*view) % DmaView::ALL.len()]);
            }
            Op::Frames { vport, count, len, pattern } => {
                let frame = fill(pattern, usize::from(*len));
                for _ in 0..count % (MAX_FRAMES_PER_OP + 1) {
                    machine.arrive(u16::from(*vport % 4), &frame);
                }
            }
            Op::PollBackend { budget } => {
                machine.drv.dev.poll_backend(usize::from(*budget));
                let _ = machine.drv.pump();
            }
            Op::Poll => {
                for _ in 0..4 {
                    if !drv.dev.poll() {
                        break;
                    }
                }
                let _ = drv.pump();
            }
        }
    }
}

/// `len` bytes of `pattern` repeated (zeroes for an empty pattern).
pub fn fill(pattern: &[u8], len: usize) -> Vec<u8> {
    if pattern.is_empty() {
        return vec![0; len];
    }
    // Doubling copies: a byte at a time (`cycle().take()`) was a quarter of
    // the `threads` target's time, every byte through the coverage hooks.
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&pattern[..pattern.len().min(len)]);
    while out.len() < len {
        out.extend_from_within(..out.len().min(len - out.len()));
    }
    out
}

/// Writes `bytes` at `addr` modulo the RAM, cut at its end.
fn write_ram(drv: &Driver, addr: u32, bytes: &[u8]) {
    let (at, len) = within_ram(addr, bytes.len());
    drv.write(at, &bytes[..len]);
}

/// `addr` modulo the RAM, and `len` cut at the RAM's end.
fn within_ram(addr: u32, len: usize) -> (u64, usize) {
    let at = u64::from(addr) % RAM_SIZE as u64;
    (at, len.min(RAM_SIZE - at as usize))
}

/// Writes `bytes` at the producer of one of the driver's work queues (it
/// wraps at the ring's end as the ring does), advances it and rings it.
fn post_wqe(drv: &mut Driver, sq: bool, queue: u8, units: u8, bytes: &[u8]) {
    let queues = if sq { &drv.sqs } else { &drv.rqs };
    if queues.is_empty() {
        return;
    }
    let index = usize::from(queue) % queues.len();
    let Some(mut wq) = queues.values().nth(index).cloned() else {
        return;
    };
    let start = u64::from(wq.head) * 32;
    for (i, chunk) in bytes.chunks(32).enumerate() {
        drv.write(wq.ring.addr(start + 32 * i as u64), chunk);
    }
    wq.head = wq.head.wrapping_add(u32::from(units));
    drv.ring_wq(&wq, sq);
    let map = if sq { &mut drv.sqs } else { &mut drv.rqs };
    map.insert(wq.id, wq);
}

/// Performs `ops` in order on `machine`, its driver model taking at most
/// [`INPUT_INTERRUPTS`] interrupts over all of them (at most its pump
/// budget in each); once they are used up, its pumps stop at once and the
/// rest of the ops still reach the device.
pub fn apply_all(ops: &[Op], machine: &mut Machine) {
    let per_pump = machine.drv.interrupt_budget;
    let mut left = INPUT_INTERRUPTS;
    for op in ops {
        machine.drv.interrupt_budget = per_pump.min(left);
        let before = machine.drv.interrupts_taken();
        op.apply(machine);
        left = left.saturating_sub(machine.drv.interrupts_taken().saturating_sub(before));
    }
    machine.drv.interrupt_budget = per_pump;
}

/// Decodes every op of `data`.
pub fn decode_all(data: &[u8]) -> Vec<Op> {
    let mut input = Input::new(data);
    std::iter::from_fn(|| Op::decode(&mut input)).collect()
}

/// Encodes `ops` as one input.
pub fn encode_all(ops: &[Op]) -> Vec<u8> {
    let mut out = Vec::new();
    for op in ops {
        op.encode(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fill;

    #[test]
    fn fill_repeats_the_pattern_to_exactly_the_length() {
        for pattern in [&b""[..], b"a", b"abc", b"0123456789abcdef0"] {
            for len in [0, 1, 2, 3, 16, 17, 100, 1514, 65_535] {
                let expected: Vec<u8> = if pattern.is_empty() {
                    vec![0; len]
                } else {
                    (0..len).map(|i| pattern[i % pattern.len()]).collect()
                };
                assert_eq!(fill(pattern, len), expected, "pattern {pattern:?}, len {len}");
            }
        }
    }
}
