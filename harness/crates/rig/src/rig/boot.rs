//! One boot with the emulated NIC: the traffic peer, one `mana-device`
//! process per NIC, the guest's side of the boot request (from
//! `boot_request`), QEMU itself, and the device's status at the report's
//! markers; every process is stopped again before the boot returns.

use super::boot_request::GuestSetup;
use super::outcome::{BootPhases, TrafficBoot};
use super::planner::{planner, PlanSlot};
use super::request::RunRequest;
use super::soak::{SoakLog, SoakWatch};
use super::{device, machine};
use crate::accel::AccelChoice;
use crate::guest_protocol::Marker;
use crate::provision::{self, Provisioned};
use crate::qemu::{self, BootRequest};
use crate::topology::Topology;
use crate::traffic;
use crate::traffic::peer::{PeerOptions, PeerProcess};
use mana_device_api::status::DeviceStatus;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the rig waits for the peer's results after the boot.
const PEER_RESULTS_WAIT: Duration = Duration::from_secs(10);

/// Device status taken at each begin marker and selftest mark, with the marker line.
pub(super) type Marks = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<DeviceStatus>)>>>;

/// A boot that could not start (its failures once QEMU runs are in
/// `NicBootOutcome::result`).
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    /// QEMU cannot build the topology's machine.
    #[error("{}: [cpus]/[numa]/[nic] as QEMU would build them (--mem-per-node {mem_per_node_mib})", topology.display())]
    Machine {
        /// The topology file.
        topology: PathBuf,
        /// The memory per node asked for.
        mem_per_node_mib: u32,
        /// Why.
        #[source]
        source: machine::MachineError,
    },
    /// A NIC of the topology cannot be configured.
    #[error(transparent)]
    DeviceConfig(machine::MachineError),
    /// The traffic tool is not there.
    #[error(transparent)]
    FlowsBinary(#[from] traffic::BinaryError),
    /// The traffic peer did not start.
    #[error(transparent)]
    Peer(#[from] traffic::peer::PeerError),
    /// The flows tool's guest files cannot be laid out (an arm64 guest's emulator).
    #[error(transparent)]
    FlowsGuest(#[from] super::flows_guest::FlowsGuestError),
    /// The emulated NIC's process did not start.
    #[error(transparent)]
    Device(#[from] device::DeviceError),
    /// The guest's side cannot be set up (irqbalance not provisioned).
    #[error(transparent)]
    Guest(#[from] super::irqbalance::IrqbalanceError),
}

/// What one boot with the emulated NIC needs (see [`NicBoot::boot`]).
pub(super) struct NicBoot<'a> {
    pub(super) req: &'a RunRequest,
    pub(super) topo: &'a Topology,
    pub(super) prov: &'a Provisioned,
    pub(super) kernel: &'a provision::KernelInstall,
    /// Combined channels to set with `ethtool -L` (`--channels`, else the topology's).
    pub(super) channels: Option<u32>,
    /// The run's temporary folder (device sockets).
    pub(super) dir: &'a Path,
    /// The injections (file and request, [`injections`](super::injections)).
    pub(super) inject: &'a [mana_device_api::inject::InjectSpec],
    /// The run's selftests, prepared: the peer then bridges a second TAP,
    /// QEMU's virtio-net NIC on it (the tests' remote end).
    pub(super) selftests: Option<&'a super::selftests::PreparedSelftests>,
    /// When the run began (for [`BootPhases::before_boot`]).
    pub(super) run_start: Instant,
}

/// A boot's result and the device's snapshots at the report markers.
pub(super) struct NicBootOutcome {
    pub(super) result: Result<qemu::BootOutcome, qemu::LaunchError>,
    pub(super) marks: Marks,
    /// What the traffic peer saw, and the plan's predictions (with `--traffic`).
    pub(super) traffic: Option<TrafficBoot>,
    /// What the rig gathered at a soak's marks.
    pub(super) soak: Option<SoakLog>,
    /// Where the host's time went.
    pub(super) phases: BootPhases,
}

impl NicBoot<'_> {
    /// Start the emulated NIC on `dir/socket` and boot the machine with it under
    /// `accel`; the device is stopped again before this returns. A device that
    /// fails while the guest runs ends the boot at once
    /// ([`qemu::LaunchError::Aborted`], naming the device, with its last log lines).
    ///
    /// # Errors
    /// [`BootError`]: the machine cannot be built from the topology, or the
    /// device's binary or the traffic peer is missing or does not start; boot
    /// failures are in [`NicBootOutcome::result`].
    pub(super) fn boot(
        &self,
        accel: AccelChoice,
        socket: &str,
    ) -> Result<(qemu::MachineSpec, NicBootOutcome), BootError> {
        let (req, topo, prov) = (self.req, self.topo, self.prov);
        let entered = Instant::now();
        let mut devices_start = Duration::ZERO;
        let spec = machine::machine_spec(topo, accel, req.mem_per_node_mib).map_err(|source| BootError::Machine {
            topology: req.topology.clone(),
            mem_per_node_mib: req.mem_per_node_mib,
            source,
        })?;
        let socket = self.dir.join(socket);
        let abort = qemu::BootAbort::default();
        // Traffic or selftests: the peer first, its TAP goes to the device
        // (and the remote TAP, bridged with it, to QEMU's second NIC).
        let (peer, tap, remote_tap, flows) = if req.traffic.is_some() || self.selftests.is_some() {
            let bin = traffic::flows_binary()?;
            let opts = PeerOptions {
                tap: traffic::TAP.into(),
                remote_tap: self.selftests.map(|_| crate::selftests::REMOTE_TAP.to_owned()),
                host: (traffic::HOST, traffic::PREFIX),
                port: traffic::CONTROL_PORT,
                deadline: req.host_deadline() + Duration::from_secs(60),
            };
            let starting = Instant::now();
            let (peer, taps) = PeerProcess::start(&bin, &opts)?;
            devices_start += starting.elapsed();
            let flows = match req.traffic {
                Some(_) => Some(super::flows_guest::guest_files(prov, &bin, self.dir)?),
                None => None,
            };
            (Some(peer), Some(Arc::new(taps.tap)), taps.remote, flows)
        } else {
            (None, None, None, None)
        };
        let options = device::DeviceOptions {
            abort: Some(abort.clone()),
            fault: req.device_fault,
            // A soak's thousands of flows would fill the records (and grow
            // the process it samples); it judges no steering.
            record_flows: if tap.is_some() && req.soak.is_none() { traffic::RECORD_FLOWS } else { 0 },
            tap,
            inject: self.inject.to_vec(),
        };
        let mut boot = BootRequest::new(&spec, self.kernel, &prov.busybox.binary);
        boot.firmware.clone_from(&prov.firmware);
        // One device process and socket per NIC; NIC 0 takes the traffic and the fault.
        let bin = device::device_binary()?;
        let mut nics = Vec::with_capacity(topo.nics().len());
        let config = machine::device_config(topo).map_err(BootError::DeviceConfig)?;
        let starting = Instant::now();
        nics.push(device::DeviceProcess::start(&bin, &socket, &config, options)?);
        boot.extra_devices.push(qemu::vfio_user_nic(&socket));
        for k in 1..topo.nics().len() {
            let path = socket.with_extension(format!("{k}.sock"));
            let options = device::DeviceOptions { abort: Some(abort.clone()), ..Default::default() };
            let config = machine::device_config_of(topo, k).map_err(BootError::DeviceConfig)?;
            nics.push(device::DeviceProcess::start(&bin, &path, &config, options)?);
            boot.extra_devices.push(qemu::nic_slots::vfio_user_device(k, &path));
        }
        devices_start += starting.elapsed();
        let nic = &nics[0];
        let plan_slot = PlanSlot::default();
        if let (Some(peer), Some(options)) = (&peer, &req.traffic) {
            peer.set_planner(planner(nic.status_handle(), options.clone(), Arc::clone(&plan_slot)));
        }
        // The guest's side: agent options, kernel command line, extra files, deadlines.
        let guest = topo.to_qemu_numbering();
        let setup = GuestSetup {
            req,
            prov,
            guest: &guest,
            channels: self.channels,
            injecting: !self.inject.is_empty(),
            flows: flows.as_deref(),
        };
        setup.apply(&mut boot)?;
        if let Some(prepared) = self.selftests {
            super::selftests::add_to_boot(&mut boot, prepared);
        }
        if let Some(fd) = remote_tap {
            boot.tap_nics.push(qemu::tap_nic::TapNic { fd: Arc::new(fd), mac: crate::selftests::REMOTE_MAC.into() });
        }
        // The device's state as each stage and the report begin (the guest changes
        // nothing until the end marker), at each selftest mark (between two test
        // programs) and at the final unload's mark (just before its rmmod).
        let marks: Marks = Default::default();
        // A soak's marks: the rig samples the device and raises its link events.
        let soak = req.soak.as_ref().map(|_| SoakWatch::new(nic.status_handle()));
        {
            let marks = std::sync::Arc::clone(&marks);
            let status = nic.status_handle();
            let soak = soak.clone();
            boot.on_marker = Some(qemu::MarkerHook(std::sync::Arc::new(move |line: &str| {
                if let Some(Marker::Soak(mark)) = Marker::parse(line) {
                    if let Some(soak) = &soak {
                        soak.on_mark(mark);
                    }
                    return;
                }
                let asked = Instant::now();
                let snapshot = status.snapshot().map_err(|e| tracing::warn!("device status at {line:?}: {e}")).ok();
                tracing::debug!("device status at {line:?} in {:?}", asked.elapsed());
                marks.lock().unwrap_or_else(|e| e.into_inner()).push((line.to_owned(), snapshot));
            })));
        }
        boot.abort = Some(abort);
        let before_qemu = entered.elapsed().saturating_sub(devices_start);
        let booting = Instant::now();
        let result = qemu::boot(&prov.qemu, &boot);
        let booted = Instant::now();
        for device in nics {
            device.stop();
        }
        // The guest sent its results before it printed the report: they are in.
        // A selftest run's peer only carried the wire: nothing to report.
        let peer = peer.filter(|_| req.traffic.is_some());
        let traffic = peer.map(|peer| {
            let (planned, plan_error) = plan_slot.lock().unwrap_or_else(|e| e.into_inner()).clone();
            TrafficBoot { peer: peer.finish(PEER_RESULTS_WAIT), planned, plan_error }
        });
        let soak = soak.map(SoakWatch::finish);
        let (prepare, initramfs, to_report, moments, stop) = match &result {
            Ok(o) => (o.prepare, o.initramfs, o.to_report, o.moments, o.stop),
            Err(_) => (Duration::ZERO, Duration::ZERO, booted - booting, qemu::BootMoments::default(), Duration::ZERO),
        };
        let phases = BootPhases {
            before_boot: entered.saturating_duration_since(self.run_start),
            devices_start,
            boot_prepare: before_qemu + prepare,
            initramfs,
            boot_to_report: to_report,
            moments,
            teardown: stop + booted.elapsed(),
        };
        Ok((spec, NicBootOutcome { result, marks, traffic, soak, phases }))
    }
}
