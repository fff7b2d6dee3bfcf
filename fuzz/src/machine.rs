//! The machine a fuzz input runs on: the in-process model of Linux's `mana`
//! driver with its device (device-model/tests/support), and the network
//! behind the device's vPorts: the in-memory recorder, or a TAP stand-in (a
//! datagram socket pair keeps frame boundaries as a TAP does) read by the
//! device's real TAP backend.
//!
//! Machines are built once per process for each [`Spec`], with a
//! checkpoint taken when they are up ([`Prepared`]); each input then starts
//! from the checkpoint ([`with_machine`]), so that a probe and an open (a
//! few milliseconds) are not paid per input.

use crate::support::checkpoint::Checkpoint;
use crate::support::{Driver, DrvQueuePair, Kernel};
use device_model::datapath::tap::Tap;
use mana_device_api::config::DeviceConfig;
use std::cell::RefCell;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixDatagram;

/// Interrupts one `pump` of the driver model services in a fuzz run: a
/// corrupted ring can make the device and the model interrupt each other
/// forever (each arm doorbell finds the entry the model cannot read still
/// pending), which the tests' 100,000 turn into seconds per input.
const INTERRUPT_BUDGET: usize = 512;

/// Machines kept per process (each holds the guest RAM it touched and a
/// copy of what the driver allocated, a few MiB).
const MAX_PREPARED: usize = 20;

/// A driver model, its device, and the device's network.
pub struct Machine {
    /// The driver model; its `dev` is the device.
    pub drv: Driver,
    /// The network's end of the TAP stand-in, when the device has one.
    pub tap_peer: Option<UnixDatagram>,
    /// The queue pairs the bring-up opened (vPort 0's first).
    pub pairs: Vec<DrvQueuePair>,
}

impl Machine {
    /// A frame for vPort `vport` arrives from the network: into the TAP's
    /// socket (a full socket drops it, as a congested wire would), or into
    /// the recorder's inbox.
    pub fn arrive(&mut self, vport: u16, frame: &[u8]) {
        if let Some(peer) = &self.tap_peer {
            let _ = peer.send(frame);
        } else if let Some(net) = &self.drv.net {
            let _ = net.inject(vport, frame);
        }
    }

    /// Empties the network: frames the device sent to the TAP, frames
    /// waiting in the TAP's socket (pulled into the device, which is rewound
    /// next anyway).
    fn drain(&mut self) {
        let Some(peer) = &self.tap_peer else { return };
        let mut buf = vec![0u8; 1 << 16];
        while peer.recv(&mut buf).is_ok() {}
        while self.drv.dev.poll_backend(64) > 0 {}
    }
}

/// How far a machine is brought up before its checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// A device fresh from reset.
    PowerOn,
    /// The SMC handshake and the HWC's channel test done.
    HwcUp,
    /// The driver's probe done.
    Probed,
    /// The probe and `ndo_open` with `queues` queue pairs on vPort 0, and
    /// on vPort 1 as well when `second_vport`.
    Opened {
        /// Queue pairs per vPort.
        queues: usize,
        /// Also open vPort 1 (on the same probe EQs).
        second_vport: bool,
    },
}

/// A machine to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// Which driver version the model mimics.
    pub kernel: Kernel,
    /// What the device advertises.
    pub config: DeviceConfig,
    /// How far it is brought up.
    pub stage: Stage,
    /// The device's network is a TAP stand-in (else the recorder).
    pub tap: bool,
}

/// A machine at its checkpoint (also what the seed corpus is recorded on,
/// so that a recording's addresses are the ones the target's machine has).
pub struct Prepared {
    machine: Machine,
    checkpoint: Checkpoint,
}

impl Prepared {
    /// Builds the machine `spec` describes. A step the device refuses (an
    /// odd configuration) ends the bring-up there: the checkpoint is taken
    /// wherever it stopped, which is a state worth fuzzing too.
    pub fn build(spec: &Spec) -> Self {
        let (mut drv, tap_peer) = if spec.tap {
            let (ours, theirs) = UnixDatagram::pair().expect("a socket pair");
            ours.set_nonblocking(true).expect("non-blocking");
            theirs.set_nonblocking(true).expect("non-blocking");
            let tap = Tap::new(OwnedFd::from(ours));
            (Driver::with_backend(spec.kernel, spec.config.clone(), Box::new(tap)), Some(theirs))
        } else {
            (Driver::new(spec.kernel, spec.config.clone()), None)
        };
        let mut pairs = Vec::new();
        let _ = bring_up(&mut drv, spec.stage, &mut pairs);
        drv.interrupt_budget = INTERRUPT_BUDGET;
        let checkpoint = drv.checkpoint();
        Self { machine: Machine { drv, tap_peer, pairs }, checkpoint }
    }

    /// The machine as it is, for good (no more rewinds).
    pub fn into_machine(self) -> Machine {
        self.machine.drv.forget_checkpoint();
        self.machine
    }

    /// The machine, put back to its checkpoint.
    pub fn rewound(&mut self) -> &mut Machine {
        self.machine.drain();
        self.machine.drv.rewind(&self.checkpoint);
        &mut self.machine
    }
}

/// Brings `drv` up to `stage`, the pairs it opens into `pairs`.
fn bring_up(drv: &mut Driver, stage: Stage, pairs: &mut Vec<DrvQueuePair>) -> anyhow::Result<()> {
    match stage {
        Stage::PowerOn => Ok(()),
        Stage::HwcUp => {
            drv.establish_hwc()?;
            drv.test_channel()
        }
        Stage::Probed => drv.probe().map(|_| ()),
        Stage::Opened { queues, second_vport } => {
            let eqs = drv.probe()?;
            pairs.extend(drv.open(&eqs, queues)?);
            if second_vport {
                drv.vport_index = 1;
                let opened = drv.open(&eqs, queues);
                drv.vport_index = 0;
                pairs.extend(opened?);
            }
            drv.pump()
        }
    }
}

thread_local! {
    static PREPARED: RefCell<Vec<(Spec, Prepared)>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on the machine `spec` describes, put back to its checkpoint
/// (built the first time; the least recently used of more than
/// [`MAX_PREPARED`] is dropped).
pub fn with_machine<R>(spec: &Spec, f: impl FnOnce(&mut Machine) -> R) -> R {
    PREPARED.with(|cell| {
        let mut prepared = cell.borrow_mut();
        let index = match prepared.iter().position(|(s, _)| s == spec) {
            Some(i) => i,
            None => {
                if prepared.len() >= MAX_PREPARED {
                    prepared.remove(0);
                }
                prepared.push((spec.clone(), Prepared::build(spec)));
                prepared.len() - 1
            }
        };
        let entry = prepared.remove(index);
        prepared.push(entry);
        let last = prepared.len() - 1;
        f(prepared[last].1.rewound())
    })
}
