//! The `threads` target: the device's threads at once, as `mana-device`
//! runs them. The fuzzer's thread is the vfio-user serving thread (BAR0
//! accesses through the PCI function, DMA_UNMAP and DMA_MAP of guest RAM,
//! SET_IRQS, status reads); the device's real data-path event loop
//! (`process::backend_loop`) runs on its own thread on a TAP stand-in (a
//! datagram socket pair); a feeder thread sends the input's frames into
//! that TAP while the rest of the input runs. Guest RAM is a memfd the
//! harness writes as the guest's CPUs would.
//!
//! The machine is set up once per process: MSI-X on with an eventfd per
//! vector, guest RAM mapped, then a recorded 6.12 probe and open of 2 queue
//! pairs (the driver model's BAR0 accesses and RAM writes,
//! [`crate::support::start_trace`]) replayed through the function. Each
//! input starts from there: the core's saved state, guest RAM's rings and
//! what the last input wrote, the DMA map and the vectors put back. Which
//! thread gets the core's lock first is up to the scheduler: this target is
//! not deterministic, and is not meant to be.
//!
//! Input: [`Op`]s, applied as this machine can: BAR0, SMC and doorbell
//! accesses through the function; RAM writes into the memfd; [`Op::Remap`]
//! as DMA_UNMAP / DMA_MAP ([`remap`]); [`Op::Frames`] to the feeder;
//! [`Op::Receive`], [`Op::Tick`], [`Op::Poll`] and [`Op::PollBackend`] on
//! the core under its lock (racing the event loop); [`Op::Pump`] as a
//! status read (what the control thread does); the ops that need the driver
//! model ([`Op::Wqe`], [`Op::Request`]) as a SET_IRQS change instead.

use crate::machine::Prepared;
use crate::ops::{decode_all, fill, Op};
use crate::support::checkpoint::Checkpoint;
use crate::support::{start_trace, take_trace, Traced, RAM_SIZE, ZEROES};
use crate::targets::{config, spec, vector_fd, TWO_QUEUES};
use device_model::datapath::tap::Tap;
use device_model::device::mana::SavedState;
use device_model::device::regs::{DB_PAGE_OFFSET, DB_PAGE_SIZE, SHM_OFFSET};
use device_model::process::backend_loop::BackendLoop;
use device_model::shell::locked_core::{mana_core_with, CoreObserver};
use device_model::shell::server::ManaFunction;
use device_model::ManaDevice;
use std::cell::RefCell;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixDatagram;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE, VFIO_PCI_BAR0_REGION_INDEX,
    VFIO_PCI_MSIX_IRQ_INDEX,
};
use vfio_user::{DmaMapFlags, DmaUnmapFlags};
use vm_memory::{Bytes, FileOffset, GuestAddress, GuestMemoryMmap};

const BAR0: u32 = VFIO_PCI_BAR0_REGION_INDEX;

/// The shell and the core of a running device, its event loop, its TAP
/// and guest RAM.
struct Device {
    function: ManaFunction,
    core: CoreObserver<ManaDevice>,
    /// Keeps the event loop running (stopped when dropped).
    _event_loop: BackendLoop,
    /// A second handle on the TAP's socket, to empty it between inputs.
    tap: UnixDatagram,
    /// The network's end of the TAP stand-in.
    peer: UnixDatagram,
    ram_file: File,
    /// Guest RAM as the guest's CPUs see it.
    ram: GuestMemoryMmap,
    /// RAM ranges the last input wrote.
    dirty: Vec<(u64, usize)>,
    /// The last input changed the DMA map / the MSI-X vectors.
    remapped: bool,
    revectored: bool,
}

/// The device, where each input starts from, and the feeder: a thread that
/// sends each batch of frames it is given into the TAP, then says so.
struct Threads {
    device: Device,
    saved: SavedState,
    checkpoint: Checkpoint,
    frames: mpsc::Sender<Vec<Vec<u8>>>,
    fed: mpsc::Receiver<()>,
}

/// Starts the feeder on `peer` (it ends when the sender is dropped).
fn feeder(peer: UnixDatagram) -> (mpsc::Sender<Vec<Vec<u8>>>, mpsc::Receiver<()>) {
    let (frames, batches) = mpsc::channel::<Vec<Vec<u8>>>();
    let (done, fed) = mpsc::channel();
    std::thread::spawn(move || {
        for batch in batches {
            for frame in &batch {
                let _ = peer.send(frame);
            }
            if done.send(()).is_err() {
                break;
            }
        }
    });
    (frames, fed)
}

fn guest_ram() -> (File, GuestMemoryMmap) {
    let file = memfd::MemfdOptions::default().create("guest-ram").expect("memfd").into_file();
    file.set_len(RAM_SIZE as u64).expect("RAM size");
    let dup = file.try_clone().expect("dup");
    let ram = GuestMemoryMmap::from_ranges_with_files([(GuestAddress(0), RAM_SIZE, Some(FileOffset::new(dup, 0)))])
        .expect("guest RAM");
    (file, ram)
}

impl Device {
    fn new() -> Self {
        let (ours, peer) = UnixDatagram::pair().expect("a socket pair");
        for socket in [&ours, &peer] {
            socket.set_nonblocking(true).expect("non-blocking");
        }
        let tap = ours.try_clone().expect("dup");
        let ready = OwnedFd::from(ours.try_clone().expect("dup"));
        let (factory, _status, core) =
            mana_core_with(&config(), Box::new(Tap::new(OwnedFd::from(ours))), 0, Vec::new());
        let function = ManaFunction::new(config(), factory).expect("the PCI function");
        let (ram_file, ram) = guest_ram();
        let event_loop = BackendLoop::start(core.clone(), ready).expect("the event loop");
        let mut device = Self {
            function,
            core,
            _event_loop: event_loop,
            tap,
            peer,
            ram_file,
            ram,
            dirty: Vec::new(),
            remapped: false,
            revectored: false,
        };
        device.remap(0);
        device.vectors(true);
        device
    }

    /// DMA_UNMAP of everything, then `view`: 0 all of RAM, 1 nothing, 2 its
    /// first half, 3 RAM at another address (4 GiB).
    fn remap(&mut self, view: u8) {
        self.remapped = true;
        let _ = self.function.dma_unmap(DmaUnmapFlags::UNMAP_ALL, 0, 0);
        let (iova, size) = match view % 4 {
            0 => (0, RAM_SIZE as u64),
            1 => return,
            2 => (0, RAM_SIZE as u64 / 2),
            _ => (1 << 32, RAM_SIZE as u64),
        };
        let Ok(fd) = self.ram_file.try_clone() else { return };
        let flags = DmaMapFlags::READ_WRITE;
        let _ = self.function.dma_map(flags, 0, iova, size, Some(fd));
    }

    /// MSI-X on with an eventfd on every vector, or off.
    fn vectors(&mut self, on: bool) {
        self.revectored = true;
        let msix = VFIO_PCI_MSIX_IRQ_INDEX;
        if !on {
            let _ =
                self.function.set_irqs(msix, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 0, Vec::new());
            return;
        }
        let count = u32::from(config().msix_table_size);
        let fds: Vec<File> = (0..count).filter_map(|_| vector_fd(0)).collect();
        let flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
        let _ = self.function.set_irqs(msix, flags, 0, fds.len() as u32, fds);
    }

    fn write_ram(&mut self, addr: u64, bytes: &[u8]) {
        let at = addr % RAM_SIZE as u64;
        let len = bytes.len().min(RAM_SIZE - at as usize);
        let _ = self.ram.write_slice(&bytes[..len], GuestAddress(at));
        self.dirty.push((at, len));
    }

    /// Clears `len` bytes at `addr` modulo the RAM, cut at its end (from a
    /// page of zeroes, not a buffer of `len`: an op clears up to 1 MiB).
    fn zero_ram(&mut self, addr: u64, len: usize) {
        let at = addr % RAM_SIZE as u64;
        let len = len.min(RAM_SIZE - at as usize);
        for start in (0..len).step_by(ZEROES.len()) {
            let n = (len - start).min(ZEROES.len());
            let _ = self.ram.write_slice(&ZEROES[..n], GuestAddress(at + start as u64));
        }
        self.dirty.push((at, len));
    }

    /// One recorded step of the driver model's setup.
    fn replay(&mut self, event: &Traced) {
        match event {
            Traced::Mem { addr, bytes } => {
                let _ = self.ram.write_slice(bytes, GuestAddress(*addr));
            }
            Traced::Read { offset, len } => self.function.read(BAR0, *offset, &mut vec![0; *len]),
            Traced::Write { offset, bytes } => self.function.write(BAR0, *offset, bytes),
            Traced::Request(_) => {}
        }
    }

    /// Applies `op` from the vfio-user thread (frames go to the feeder).
    fn apply(&mut self, op: &Op) {
        match op {
            Op::BarWrite { offset, data } => self.function.write(BAR0, u64::from(*offset), data),
            Op::BarRead { offset, len } => {
                self.function.read(BAR0, u64::from(*offset), &mut vec![0; usize::from(*len)])
            }
            Op::Mem { addr, bytes } => self.write_ram(u64::from(*addr), bytes),
            Op::Zero { addr, len } => self.zero_ram(u64::from(*addr), *len as usize),
            Op::Doorbell { kind, page, value } => {
                let within = [0x000, 0x400, 0x800, 0x820, 0xFF8][usize::from(kind % 5)];
                let offset = DB_PAGE_OFFSET + u64::from(page % 16) * DB_PAGE_SIZE + within;
                self.function.write(BAR0, offset, &value.to_le_bytes());
            }
            Op::Smc { dword, value } => {
                self.function.write(BAR0, SHM_OFFSET + u64::from(dword % 8) * 4, &value.to_le_bytes());
            }
            Op::Remap { view } => self.remap(*view),
            Op::Receive { vport, frame } => {
                self.core.with_mut(|d| d.receive(u16::from(*vport % 4), frame));
            }
            Op::Tick { ms } => {
                let now = Instant::now() + Duration::from_millis(u64::from(*ms));
                self.core.with_mut(|d| d.tick(now));
            }
            Op::PollBackend { budget } => {
                self.core.with_mut(|d| d.poll_backend(usize::from(*budget)));
            }
            Op::Poll => {
                self.core.with_mut(ManaDevice::poll);
            }
            Op::Pump => {
                let _ = (self.function.status(true), self.core.with(ManaDevice::snapshot));
            }
            Op::Wqe { sq, .. } => self.vectors(*sq),
            Op::Request(bytes) => self.vectors(bytes.len() % 2 == 0),
            Op::Frames { .. } => {}
        }
    }

    /// Empties the TAP both ways.
    fn drain(&self) {
        let mut buf = [0u8; 2048];
        while self.peer.recv(&mut buf).is_ok() {}
        while self.tap.recv(&mut buf).is_ok() {}
    }
}

impl Threads {
    fn build() -> Self {
        // What the driver model does from power-on to its queues being open,
        // recorded on the `queues` machine (same layout, same RAM); its
        // checkpoint says which RAM the rings are in.
        start_trace();
        let mut prepared = Prepared::build(&spec(TWO_QUEUES));
        let setup = take_trace();
        let checkpoint = prepared.rewound().drv.checkpoint();
        let mut device = Device::new();
        for event in &setup {
            device.replay(event);
        }
        let saved = device.core.with(ManaDevice::save).expect("the core is built");
        let (frames, fed) = feeder(device.peer.try_clone().expect("dup"));
        Self { device, saved, checkpoint, frames, fed }
    }

    /// Puts the device back where every input starts.
    fn rewind(&mut self) {
        let device = &mut self.device;
        device.drain();
        let ram = self.checkpoint.ram();
        let pages = self.checkpoint.ring_pages().iter().map(|&p| (p, 4096));
        for (addr, len) in std::mem::take(&mut device.dirty).into_iter().chain(pages) {
            let start = addr as usize;
            let end = start + len;
            let kept = ram.get(start.min(ram.len())..end.min(ram.len())).unwrap_or_default();
            let _ = device.ram.write_slice(kept, GuestAddress(addr));
            for start in (kept.len()..len).step_by(ZEROES.len()) {
                let n = (len - start).min(ZEROES.len());
                let _ = device.ram.write_slice(&ZEROES[..n], GuestAddress(addr + start as u64));
            }
        }
        if std::mem::take(&mut device.remapped) {
            device.remap(0);
            device.remapped = false;
        }
        if std::mem::take(&mut device.revectored) {
            device.vectors(true);
            device.revectored = false;
        }
        let saved = &self.saved;
        device.core.with_mut(|d| d.restore(saved));
    }
}

/// Runs `data` on the machine (built the first time).
pub fn run(data: &[u8]) {
    thread_local! {
        static MACHINE: RefCell<Option<Threads>> = const { RefCell::new(None) };
    }
    MACHINE.with(|cell| {
        let mut slot = cell.borrow_mut();
        let machine = slot.get_or_insert_with(Threads::build);
        machine.rewind();
        let ops = decode_all(data);
        let frames: Vec<Vec<u8>> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Frames { count, len, pattern, .. } => {
                    Some((0..count % 9).map(|_| fill(pattern, usize::from(*len))))
                }
                _ => None,
            })
            .flatten()
            .collect();
        let feeding = !frames.is_empty() && machine.frames.send(frames).is_ok();
        // The serving thread's part, while the feeder sends.
        for op in &ops {
            machine.device.apply(op);
        }
        if feeding {
            let _ = machine.fed.recv();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus;

    /// Waits (10 s at most) for `done` to hold of the core's snapshot.
    fn wait_for(machine: &Threads, done: impl Fn(&mana_device_api::snapshot::Snapshot) -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if machine.device.core.with(|d| done(&d.snapshot())).unwrap_or(false) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    #[test]
    fn the_replayed_setup_opens_the_queues_and_the_event_loop_and_tx_carry_frames() {
        let mut machine = Threads::build();
        let wqs = machine.device.core.with(|d| d.snapshot().wqs.len()).unwrap_or(0);
        assert_eq!(wqs, 2 + 4, "the HWC's SQ and RQ and 2 pairs");
        // A frame arriving in the TAP: the event loop's thread pulls it into an RQ.
        let (_, train) = corpus::backend().into_iter().find(|(n, _)| n == "rx-tcp4").expect("seed");
        for op in decode_all(&train) {
            if let Op::Frames { len, pattern, .. } = op {
                machine.device.peer.send(&fill(&pattern, usize::from(len))).expect("send");
            }
        }
        assert!(wait_for(&machine, |s| s.counters.traffic.rx.packets == 1), "the event loop delivered the frame");
        // A recorded transmit goes out on the TAP.
        machine.rewind();
        let (_, tx) = corpus::queues().into_iter().find(|(n, _)| n == "tx-plain").expect("seed");
        for op in decode_all(&tx) {
            machine.device.apply(&op);
        }
        let mut buf = [0u8; 2048];
        let got = machine.device.peer.recv(&mut buf).expect("the frame on the TAP");
        assert_eq!(got, 64 + 54, "the seed's frame");
    }
}
