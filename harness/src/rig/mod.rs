//! One rig run: a topology file → a real guest with the emulated MANA NIC → a verdict.
//!
//! [`run_one`] loads the topology, builds the QEMU machine from it ([`machine`]),
//! starts the emulated NIC as a `mana-device` child process on a vfio-user
//! socket ([`device`]: a device that fails ends the run with a rig error),
//! boots the pinned kernel with the `/init` agent, turns the guest's console
//! report into [`Observed`] ([`report_to_verdict`]), checks the observed topology
//! against the file, and judges the MSI-X table against the reference model.

pub mod debug_kernel;
pub mod device;
pub mod kernel_choice;
pub mod machine;
pub mod queues;
pub mod report_to_verdict;
pub mod timed_injections;

use crate::accel::AccelChoice;
use crate::guest_protocol::{AgentOptions, Marker};
use crate::model::{expected_stages, expected_table, KernelGen, ModelBasis};
use crate::provision::tools::GuestFile;
use crate::provision::{self, Provisioned};
use crate::qemu::{self, BootRequest};
use crate::text::plural;
use crate::topology::Topology;
use crate::traffic::peer::{PeerOptions, PeerProcess, PeerReport, Planner};
use crate::traffic::plan::{self, PlanRequest, PlannedFlow};
use crate::traffic::{self, TrafficOptions};
use crate::verdict::{
    check_cpu_state, judge, judge_irqbalance, judge_traffic, DebugLog, IrqbalanceInput, Observed, TrafficInput, Verdict,
};
use anyhow::{bail, Context, Result};
use device_model::server::DeviceStatus;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The guest agent's deadline (guest seconds from `/init`) in a run with
/// fault injection: past it, a probe that has not returned counts as hung.
pub const INJECT_AGENT_DEADLINE_S: u32 = 240;

/// How long the rig waits for the peer's results after the boot.
const PEER_RESULTS_WAIT: Duration = Duration::from_secs(10);

/// Guest seconds the agent samples the NIC's IRQs while irqbalance runs
/// (`manarig.irqbalance`, one sample a second): irqbalance 1.9 with
/// `--interval=1` places IRQs at its first scan, a second or two after it
/// starts, and moves them again only as their load changes.
pub const IRQBALANCE_SAMPLE_S: u32 = 5;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The topology file.
    pub topology: PathBuf,
    /// The kernel generation (selects the pinned Debian kernel and the model).
    pub kernel: KernelGen,
    /// Accelerator choice (default TCG; see [`crate::accel`]).
    pub accel: AccelChoice,
    /// Cache folder override (see [`provision::cache_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// Guest RAM per NUMA node that has memory, MiB (IRQ placement does not depend on it).
    pub mem_per_node_mib: u32,
    /// Host wall-clock limit for the boot.
    pub deadline: Duration,
    /// Keep the console here as well.
    pub console_log: Option<PathBuf>,
    /// Judge the guest against this generation's model instead of `kernel`'s
    /// (for kernels the rig cannot classify, or to see how far two generations differ).
    pub model: Option<KernelGen>,
    /// Why the model judges the guest ([`ModelBasis::Release`] by default; a build's
    /// detected source, or `--model`): the `kernel_generation` check reads it.
    pub model_basis: ModelBasis,
    /// Combined channels for `ethtool -L` in the guest
    /// ([`crate::guest_protocol::AgentOptions::channels`]); overrides the topology's `[nic] channels`.
    pub channels: Option<u32>,
    /// After the first probe, `rmmod mana` and load it again
    /// ([`crate::guest_protocol::AgentOptions::reprobe`]); the first probe's state is kept as a stage.
    pub reprobe: bool,
    /// Boot speed-ups (default all; [`qemu::Speedups::NONE`] for the plain boot).
    pub speedups: qemu::Speedups,
    /// Boot this kernel instead of the pinned one for `kernel` (a kernel build or a
    /// user's image; `kernel` is then the generation its source runs). See [`kernel_choice`].
    pub custom_kernel: Option<crate::provision::KernelInstall>,
    /// Extra kernel command-line items (after the rig's own).
    pub extra_cmdline: Vec<String>,
    /// The kernel as the user named it (`6.12-min`, `build-4daef119`): the run
    /// is named `<topology>@<label>` (default: `<topology>@<generation>`).
    pub label: Option<String>,
    /// Test only: make the emulated NIC fail on purpose (see [`device::DeviceOptions::fault`];
    /// the CLI reads it from `MANARIG_DEVICE_FAULT`).
    pub device_fault: Option<device_model::fault::DeviceFault>,
    /// Drive traffic through the NIC after the probe ([`crate::traffic`]): a
    /// peer in a private network namespace, flows planned from the driver's
    /// RSS state, the guest's counters before and after.
    pub traffic: Option<TrafficOptions>,
    /// The kernel is a debug kernel ([`kernel_choice::ResolvedKernel::debug`]):
    /// boot it with [`debug_kernel::CMDLINE`] and the agent's debug mode,
    /// deadlines times [`debug_kernel::SLOWDOWN`], and add the verdict's
    /// `debug_reports` check.
    pub debug: bool,
    /// Faults the emulated NIC shows the driver on purpose (`--inject SPEC`,
    /// device_model::inject), besides the topology file's `[nic] inject`. A
    /// run with injections is judged by `driver_survived` alone
    /// ([`crate::verdict::driver_survived`]).
    pub inject: Vec<device_model::inject::InjectSpec>,
    /// `[scenario]` fields that replace the topology file's (`run --maxcpus`, …).
    pub scenario: crate::topology::ScenarioFile,
}

impl RunRequest {
    /// Defaults: TCG, 256 MiB per node, a 15-minute deadline.
    pub fn new(topology: impl Into<PathBuf>, kernel: KernelGen) -> Self {
        RunRequest {
            topology: topology.into(),
            kernel,
            accel: AccelChoice::Tcg,
            cache_dir: None,
            mem_per_node_mib: 256,
            deadline: Duration::from_secs(900),
            console_log: None,
            model: None,
            model_basis: ModelBasis::Release,
            channels: None,
            reprobe: false,
            speedups: qemu::Speedups::default(),
            custom_kernel: None,
            extra_cmdline: Vec::new(),
            label: None,
            device_fault: None,
            traffic: None,
            debug: false,
            inject: Vec::new(),
            scenario: crate::topology::ScenarioFile::default(),
        }
    }
}

/// The injections of a run: the topology file's `[nic] inject` strings, then
/// the request's.
///
/// # Errors
/// A spec in the file that does not parse: one line naming the file, the
/// entry and the valid choices.
pub fn injections(
    file: &Path,
    topo: &Topology,
    requested: &[device_model::inject::InjectSpec],
) -> Result<Vec<device_model::inject::InjectSpec>> {
    let mut specs = Vec::new();
    for (i, text) in topo.nic().inject.iter().enumerate() {
        let spec = text.parse().map_err(|e: String| anyhow::anyhow!("{}: nic.inject[{i}]: {e}", file.display()))?;
        specs.push(spec);
    }
    specs.extend_from_slice(requested);
    Ok(specs)
}

/// Where a run's time went, host wall clock.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct RunTimings {
    /// Loading the cache manifest (or provisioning on first use).
    pub provision: Duration,
    /// QEMU start to the report's end marker.
    pub boot_to_report: Duration,
    /// The whole run.
    pub total: Duration,
}

/// A finished run.
#[derive(Debug)]
pub struct RunOutcome {
    /// The verdict (its status decides the run's exit code), with the
    /// stages, their link and queue tables and the checks on them
    /// ([`Verdict::add_stages`]).
    pub verdict: Verdict,
    /// What the guest showed.
    pub observed: Observed,
    /// Timings.
    pub timings: RunTimings,
    /// The queue → EQ → MSI-X vector → IRQ → CPUs table while the guest
    /// printed its report (None when the device status could not be taken).
    pub queues: Option<queues::QueueTable>,
    /// The guest's report (times, carrier, ethtool and rmmod results, warnings).
    pub report: crate::guest_protocol::GuestReport,
    /// Earlier moments of the run (`first-probe` with `reprobe`), judged the same way.
    pub stages: Vec<StageOutcome>,
    /// The guest's milestones in guest seconds since boot (`init`, `modules`,
    /// `probe`, `ifup`, `settled`, `report`; see [`crate::guest_protocol::GuestReport::times`]).
    pub guest_times: std::collections::BTreeMap<String, f64>,
    /// The speed-ups the boot really used.
    pub speedups: qemu::Speedups,
    /// The traffic side of the run (with [`RunRequest::traffic`]).
    pub traffic: Option<TrafficBoot>,
}

/// The steps the run asked the guest for (`ethtool -L`, `rmmod`) must have
/// succeeded whenever the driver gave a netdev: a failure there is a broken
/// rig or driver, not an IRQ-placement verdict.
///
/// # Errors
/// Which step failed, with its exit status and the driver's last messages.
fn lifecycle_steps_ran(
    report: &crate::guest_protocol::GuestReport,
    channels: Option<u32>,
    reprobe: bool,
) -> Result<()> {
    let tail = || report.dmesg.iter().rev().take(5).rev().cloned().collect::<Vec<_>>().join("\n  ");
    // The tool's own words, when it wrote any: `: <stderr lines>`.
    let said = |tool: &str| report.stderr.get(tool).map_or(String::new(), |l| format!(": {}", l.join(" / ")));
    let Some(netdev) = &report.netdev else { return Ok(()) };
    if let Some(n) = channels {
        if report.ethtool_status != Some(0) {
            bail!(
                "`ethtool -L {netdev} combined {n}` failed in the guest (exit {}){}; last driver messages:\n  {}",
                report.ethtool_status.map_or("-".into(), |rc| rc.to_string()),
                said("ethtool"),
                tail()
            );
        }
        if report.channels != Some(n) {
            bail!(
                "`ethtool -L {netdev} combined {n}` returned 0 but {netdev} has {} (queues/tx-N); \
                 last driver messages:\n  {}",
                report.channels.map_or("no count of combined channels".into(), |c| plural(c, "combined channel")),
                tail()
            );
        }
    }
    if reprobe && report.rmmod_status != Some(0) {
        bail!(
            "`rmmod mana` failed in the guest (exit {}){}; last driver messages:\n  {}",
            report.rmmod_status.map_or("-".into(), |rc| rc.to_string()),
            said("rmmod"),
            tail()
        );
    }
    Ok(())
}

/// The guest's topology at one moment (`stage`: the report's is the topology's
/// [`Topology::last_stage`]) is the machine's, with the CPUs the scenario leaves
/// online then.
///
/// # Errors
/// Every difference, one per line, naming the topology file.
fn guest_topology_matches(
    file: &Path,
    spec: &qemu::MachineSpec,
    guest: &Topology,
    stage: &str,
    report: &crate::guest_protocol::GuestReport,
) -> Result<()> {
    let diffs = crate::guest_topology::compare(spec, report, &guest.online_at(stage));
    if !diffs.is_empty() {
        bail!(
            "the guest's topology differs from {}:\n{}",
            file.display(),
            diffs.iter().map(|d| format!("  {d}")).collect::<Vec<_>>().join("\n")
        );
    }
    Ok(())
}

/// The agent's CPU hotplug writes (`manarig.offline`, `offline_after`,
/// `online_after`) all succeeded.
///
/// # Errors
/// The failed writes, in the agent's words.
fn hotplug_ran(report: &crate::guest_protocol::GuestReport) -> Result<()> {
    if report.hotplug_status.is_some_and(|rc| rc != 0) {
        let said = report.stderr.get("hotplug").map_or(String::new(), |l| l.join(" / "));
        bail!("CPU hotplug through /sys/devices/system/cpu/cpuN/online failed in the guest: {said}");
    }
    Ok(())
}

/// Device status taken at each begin marker, with the marker line.
type Marks = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<DeviceStatus>)>>>;

/// One earlier moment of a run (a [`crate::guest_protocol::Stage`]).
#[derive(Debug)]
pub struct StageOutcome {
    /// The stage name (`first-probe`).
    pub name: String,
    /// The verdict of that moment's IRQ table against the same model.
    pub verdict: Verdict,
    /// Its queue table, if the device status was taken.
    pub queues: Option<queues::QueueTable>,
    /// Its report.
    pub report: crate::guest_protocol::GuestReport,
}

/// Load the cache, provisioning it first when it is missing (the README's
/// commands provision on first use).
///
/// # Errors
/// Provisioning errors, with context.
pub fn provisioned(cache_dir: Option<&Path>) -> Result<Provisioned> {
    let cache = provision::cache_dir(cache_dir)?;
    if cache.exists() && !cache.is_dir() {
        bail!("cache folder {}: exists and is not a directory (see --cache-dir / MANARIG_CACHE)", cache.display());
    }
    match provision::load(&cache) {
        Ok(p) => Ok(p),
        Err(provision::ProvisionError::NotProvisioned { .. }) => {
            eprintln!("manarig: first use: provisioning QEMU, kernels and busybox into {}", cache.display());
            let opts = provision::SetupOptions::default();
            provision::setup(&cache, &opts, &mut |line| eprintln!("setup: {line}"))
                .with_context(|| format!("provisioning {}", cache.display()))
        }
        Err(e) => Err(e.into()),
    }
}

/// The pinned kernel's lock id for a generation (guest-images/kernels.lock).
/// The 6.3 model has no pinned kernel: its id is not in the lock, and looking it
/// up gives [`provision::ProvisionError::UnknownKernel`] listing those there are.
pub fn kernel_lock_id(gen: KernelGen) -> &'static str {
    match gen {
        KernelGen::V6_1 => "6.1",
        KernelGen::V6_3 => "6.3",
        KernelGen::V6_12 => "6.12",
        KernelGen::V7 => "7",
    }
}

/// How a run names its accelerator in reports: QEMU's `-accel` value and the
/// boot speed-ups used, e.g. `tcg,thread=single (speed-ups: cmdline, pvh)` or
/// `tcg,thread=single (speed-ups: none)`.
pub fn accel_label(accel: crate::accel::Accel, speedups: qemu::Speedups) -> String {
    let names = speedups.names();
    let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
    format!("{} (speed-ups: {names})", accel.qemu_arg())
}

/// What one boot with the emulated NIC needs (see [`NicBoot::boot`]).
struct NicBoot<'a> {
    req: &'a RunRequest,
    topo: &'a Topology,
    prov: &'a Provisioned,
    kernel: &'a provision::KernelInstall,
    /// Combined channels to set with `ethtool -L` (`--channels`, else the topology's).
    channels: Option<u32>,
    /// The run's temporary folder (device sockets).
    dir: &'a Path,
    /// The injections (file and request, [`injections`]).
    inject: &'a [device_model::inject::InjectSpec],
}

/// A boot's result and the device's snapshots at the report markers.
struct NicBootOutcome {
    result: Result<qemu::BootOutcome, qemu::LaunchError>,
    marks: Marks,
    /// What the traffic peer saw, and the plan's predictions (with `--traffic`).
    traffic: Option<TrafficBoot>,
}

/// The traffic side of one boot.
#[derive(Debug, Clone, Default)]
pub struct TrafficBoot {
    /// The peer's view: the guest's hello, both ends' results.
    pub peer: PeerReport,
    /// The flows the rig planned, with the model's predictions (None: the
    /// guest never asked for a plan).
    pub planned: Option<Vec<PlannedFlow>>,
    /// Why no plan was made, if the planner failed.
    pub plan_error: Option<String>,
}

/// Slot shared with the planner closure: the planned flows or why there are none.
type PlanSlot = Arc<Mutex<(Option<Vec<PlannedFlow>>, Option<String>)>>;

/// The planner the peer calls when the guest says hello: the device's RSS
/// state now (the driver has programmed it by then) → [`plan::plan`].
fn planner(status: device::DeviceStatusHandle, options: TrafficOptions, slot: PlanSlot) -> Planner {
    Box::new(move |hello| {
        let result = (|| {
            let snapshot = status.snapshot().map_err(|e| e.to_string())?;
            let core = snapshot.core.ok_or("the device status has no core")?;
            let request = PlanRequest {
                host: traffic::HOST,
                guest: hello.guest,
                flows: options.flows,
                to_guest: options.bytes,
                to_host: options.bytes,
                limit_ms: u64::try_from(options.limit.as_millis()).unwrap_or(u64::MAX),
            };
            plan::plan(core.steering.iter().find(|s| s.vport == 0), &request).map_err(|e| e.to_string())
        })();
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        match result {
            Ok((plan, planned)) => {
                slot.0 = Some(planned);
                Ok(plan)
            }
            Err(e) => {
                slot.1 = Some(e.clone());
                Err(e)
            }
        }
    })
}

impl NicBoot<'_> {
    /// Start the emulated NIC on `dir/socket` and boot the machine with it under
    /// `accel`; the device is stopped again before this returns. A device that
    /// fails while the guest runs ends the boot at once
    /// ([`qemu::LaunchError::Aborted`], naming the device, with its last log lines).
    ///
    /// # Errors
    /// The machine cannot be built from the topology, or the device's binary is
    /// missing or does not start; boot failures are in [`NicBootOutcome::result`].
    fn boot(&self, accel: AccelChoice, socket: &str) -> Result<(qemu::MachineSpec, NicBootOutcome)> {
        let (req, topo, prov) = (self.req, self.topo, self.prov);
        let spec = machine::machine_spec(topo, accel, req.mem_per_node_mib).with_context(|| {
            format!(
                "{}: [cpus]/[numa]/[nic] as QEMU would build them (--mem-per-node {})",
                req.topology.display(),
                req.mem_per_node_mib
            )
        })?;
        let socket = self.dir.join(socket);
        let abort = qemu::BootAbort::default();
        // Traffic: the peer first, its TAP goes to the device.
        let (peer, tap, flows_bin) = match &req.traffic {
            Some(_) => {
                let bin = traffic::flows_binary()?;
                let opts = PeerOptions {
                    tap: traffic::TAP.into(),
                    host: (traffic::HOST, traffic::PREFIX),
                    port: traffic::CONTROL_PORT,
                    deadline: req.deadline + Duration::from_secs(60),
                };
                let (peer, tap) = PeerProcess::start(&bin, &opts)?;
                (Some(peer), Some(Arc::new(tap)), Some(bin))
            }
            None => (None, None, None),
        };
        let options = device::DeviceOptions {
            abort: Some(abort.clone()),
            fault: req.device_fault,
            record_flows: if tap.is_some() { traffic::RECORD_FLOWS } else { 0 },
            tap,
            inject: self.inject.to_vec(),
        };
        let mut boot = BootRequest::new(&spec, self.kernel, &prov.busybox);
        // The scenario in the guest's numbering: CPUs to hotplug, kernel parameters.
        let guest = topo.to_qemu_numbering();
        let scenario = guest.scenario();
        let cpus = |m: &crate::cpulist::CpuMask| (!m.is_empty()).then(|| m.clone());
        boot.agent = AgentOptions {
            load_mana: true,
            channels: self.channels,
            reprobe: req.reprobe,
            unload: !self.inject.is_empty(),
            offline: cpus(&scenario.offline),
            offline_after: cpus(&scenario.offline_after),
            online_after: cpus(&scenario.online_after),
            ..boot.agent
        };
        boot.extra_cmdline.extend(guest.scenario_cmdline());
        // One device process and socket per NIC; NIC 0 takes the traffic and the fault.
        let bin = device::device_binary()?;
        let mut nics = Vec::with_capacity(topo.nics().len());
        nics.push(device::DeviceProcess::start(&bin, &socket, &machine::device_config(topo)?, options)?);
        boot.extra_devices.push(qemu::vfio_user_nic(&socket));
        for k in 1..topo.nics().len() {
            let path = socket.with_extension(format!("{k}.sock"));
            let options = device::DeviceOptions { abort: Some(abort.clone()), ..Default::default() };
            nics.push(device::DeviceProcess::start(&bin, &path, &machine::device_config_of(topo, k)?, options)?);
            boot.extra_devices.push(qemu::nic_slots::vfio_user_device(k, &path));
        }
        let nic = &nics[0];
        let plan_slot = PlanSlot::default();
        if let (Some(peer), Some(options)) = (&peer, &req.traffic) {
            peer.set_planner(planner(nic.status_handle(), options.clone(), Arc::clone(&plan_slot)));
        }

        if self.channels.is_some() || flows_bin.is_some() {
            // ethtool and its libraries are half the initramfs: only when used.
            boot.extra_files.clone_from(&prov.ethtool);
        }
        if let Some(bin) = &flows_bin {
            // Needs only libc and the loader, which ethtool brings.
            boot.extra_files.push(GuestFile {
                guest_path: format!("sbin/{}", manarig_flows::BIN),
                host: bin.clone(),
                mode: 0o755,
            });
            boot.agent.addr = Some((traffic::GUEST, traffic::PREFIX));
            boot.agent.traffic = Some(traffic::control_address());
            // The guest tool gives up at the agent's deadline: past the flows' limit.
            if let Some(t) = &req.traffic {
                let needed = u32::try_from(t.limit.as_secs()).unwrap_or(u32::MAX).saturating_add(60);
                boot.agent.deadline_s = boot.agent.deadline_s.max(needed);
            }
        }
        if scenario.irqbalance {
            add_irqbalance(&mut boot, prov, &req.topology)?;
        }
        if req.debug {
            boot.agent.debug = true;
            boot.agent.deadline_s = debug_kernel::agent_deadline_s(boot.agent.deadline_s);
            boot.extra_cmdline.extend(debug_kernel::CMDLINE.iter().map(|s| (*s).to_owned()));
        }
        if !self.inject.is_empty() {
            // The driver's own waits on a faulty device are long (30 s per
            // mana_gd_test_eq(), 60 s for the HWC's INIT_DONE): a probe slower
            // than that is not yet a hang.
            boot.agent.deadline_s = boot.agent.deadline_s.max(INJECT_AGENT_DEADLINE_S);
        }
        boot.extra_cmdline.extend(req.extra_cmdline.iter().cloned());
        // The device's state as each stage and the report begin (the guest changes
        // nothing until the end marker; after the report it shuts the driver down).
        let marks: Marks = Default::default();
        {
            let marks = std::sync::Arc::clone(&marks);
            let status = nic.status_handle();
            boot.on_marker = Some(qemu::MarkerHook(std::sync::Arc::new(move |line: &str| {
                let asked = Instant::now();
                let snapshot = status.snapshot().map_err(|e| tracing::warn!("device status at {line:?}: {e}")).ok();
                tracing::debug!("device status at {line:?} in {:?}", asked.elapsed());
                marks.lock().unwrap_or_else(|e| e.into_inner()).push((line.to_owned(), snapshot));
            })));
        }
        boot.deadline = if req.debug { debug_kernel::host_deadline(req.deadline) } else { req.deadline };
        if scenario.irqbalance {
            // The sampling, irqbalance's stop (at most 5 s) and TCG's slower guest seconds.
            boot.deadline += Duration::from_secs(u64::from(IRQBALANCE_SAMPLE_S) * 3 + 15);
        }
        boot.console_log.clone_from(&req.console_log);
        boot.speedups = req.speedups;
        boot.abort = Some(abort);
        let result = qemu::boot(&prov.qemu, &boot);
        for device in nics {
            device.stop();
        }
        // The guest sent its results before it printed the report: they are in.
        let traffic = peer.map(|peer| {
            let (planned, plan_error) = plan_slot.lock().unwrap_or_else(|e| e.into_inner()).clone();
            TrafficBoot { peer: peer.finish(PEER_RESULTS_WAIT), planned, plan_error }
        });
        Ok((spec, NicBootOutcome { result, marks, traffic }))
    }
}

/// irqbalance and its libraries into the initramfs (a library ethtool already
/// brings is not added twice) and `manarig.irqbalance` for the agent.
///
/// # Errors
/// The cache has no irqbalance (provisioned before the lock pinned it).
fn add_irqbalance(boot: &mut BootRequest<'_>, prov: &Provisioned, topology: &Path) -> Result<()> {
    let Some(files) = &prov.irqbalance else {
        bail!(
            "{}: irqbalance is not provisioned in {} (the cache predates the lock's [irqbalance]): run `cargo xtask \
             setup`",
            topology.display(),
            prov.cache.display()
        );
    };
    for f in files {
        if !boot.extra_files.iter().any(|e| e.guest_path == f.guest_path) {
            boot.extra_files.push(f.clone());
        }
    }
    boot.agent.irqbalance = Some(IRQBALANCE_SAMPLE_S);
    Ok(())
}

/// irqbalance could run on the guest kernel: the agent does not start it
/// without AF_UNIX sockets (a kernel without CONFIG_UNIX: a `build:` or
/// `image:` kernel; pinned minimal kernels are refused before the boot by
/// [`kernel_choice::irqbalance_refusal`]).
///
/// # Errors
/// The report says `irqbalance: no-af-unix`.
fn irqbalance_usable(report: &crate::guest_protocol::GuestReport) -> Result<()> {
    if report.irqbalance.state == Some(crate::guest_protocol::IrqbalanceState::NoAfUnix) {
        bail!(
            "irqbalance cannot run on Linux {}: the kernel has no AF_UNIX sockets (no /proc/net/unix: CONFIG_UNIX), \
             without which irqbalance 1.9 exits at start (\"Socket couldn't be created.\")",
            report.kernel
        );
    }
    Ok(())
}

/// NIC 1, 2, … of a `[[nic]]` machine, judged each on its own.
struct OtherNics<'a> {
    topo: &'a Topology,
    report: &'a crate::guest_protocol::GuestReport,
    /// Guest PCI address per topology NIC.
    bdfs: &'a [Option<String>],
    model: KernelGen,
    req: &'a RunRequest,
    accel: &'a str,
}

impl OtherNics<'_> {
    /// Each other NIC's verdict (named `<run>#nicK`) against the model of the machine
    /// with only that NIC, at every stage of the run as NIC 0's
    /// ([`crate::verdict::judge_staged`] over `stages`), and the combined load at the
    /// report with NIC 0's `observed0`/`expected0`.
    ///
    /// # Errors
    /// A NIC's `affinity_hint` that is not a hex cpumask.
    fn report(
        &self,
        run_name: &str,
        stages: &[StageOutcome],
        observed0: &Observed,
        expected0: &crate::model::ExpectedTable,
    ) -> Result<crate::verdict::NicsReport> {
        let mut judged = Vec::new();
        let last_stage = self.topo.to_qemu_numbering().last_stage().to_owned();
        for k in 1..self.topo.nics().len() {
            let Some(only) = self.topo.with_only_nic(k) else { continue };
            let bdf = self.bdfs.get(k).cloned().flatten();
            let observed_in = |report: &crate::guest_protocol::GuestReport| {
                report_to_verdict::observed_of(report, bdf.as_deref(), self.model, &self.req.model_basis, self.accel)
            };
            let observed = observed_in(self.report)?;
            let at_stages: Vec<Observed> = stages.iter().map(|s| observed_in(&s.report)).collect::<Result<_>>()?;
            // The device status (queue tables) is NIC 0's: the other NICs' stages carry none.
            let earlier: Vec<(&str, &Observed, crate::verdict::StageFacts)> = stages
                .iter()
                .zip(&at_stages)
                .map(|(s, o)| (s.name.as_str(), o, report_to_verdict::stage_facts(&s.report, None)))
                .collect();
            let expected_at = expected_stages(&only.to_qemu_numbering(), self.model);
            let report = report_to_verdict::stage_facts(self.report, None);
            let mut verdict =
                crate::verdict::judge_staged(&only, &expected_at, &earlier, &last_stage, &observed, report);
            let expected = crate::verdict::table_at(&expected_at, &last_stage).clone();
            verdict.run.name = format!("{run_name}#nic{k}");
            judged.push((k, bdf, only.nic().node, observed, expected, verdict));
        }
        let mut pairs = vec![(observed0, expected0)];
        pairs.extend(judged.iter().map(|(_, _, _, o, e, _)| (o, e)));
        let load = crate::verdict::combined_load(&self.topo.to_qemu_numbering(), &pairs);
        let nics = judged
            .into_iter()
            .map(|(index, bdf, node, _, _, verdict)| crate::verdict::NicVerdict { index, bdf, node, verdict })
            .collect();
        Ok(crate::verdict::NicsReport { nics, load })
    }
}

/// Run one topology on one kernel, end to end.
///
/// # Errors
/// Rig errors only (bad topology file, provisioning, QEMU, device, guest panic,
/// observed topology differing from the file); a mismatch against the model is
/// a failing [`Verdict`], not an error.
pub fn run_one(req: &RunRequest) -> Result<RunOutcome> {
    let start = Instant::now();
    let topo = Topology::load(&req.topology)?.with_scenario(&req.topology.display().to_string(), &req.scenario)?;
    let prov = provisioned(req.cache_dir.as_deref())?;
    let provision_time = start.elapsed();
    let kernel = match &req.custom_kernel {
        Some(k) => k,
        None => prov.kernel(kernel_lock_id(req.kernel))?,
    };
    let scratch =
        crate::scratch::ScratchDir::new("manarig-run-").context("cannot create a temporary folder for the run")?;
    let channels = req.channels.or(topo.nic().channels);
    let inject = injections(&req.topology, &topo, &req.inject)?;
    let attempt = NicBoot { req, topo: &topo, prov: &prov, kernel, channels, dir: scratch.path(), inject: &inject };
    let (mut spec, mut booted) = attempt.boot(req.accel, "nic.sock")?;
    if req.accel == AccelChoice::Auto && matches!(booted.result, Err(qemu::LaunchError::KvmSilent { .. })) {
        // The KVM probe runs a vCPU, yet on some hosts real guests hang
        // (the build machines): `auto` means "KVM where it really works".
        eprintln!("manarig: KVM passed the vCPU probe but the guest printed nothing: --accel auto falls back to TCG");
        (spec, booted) = attempt.boot(AccelChoice::Tcg, "nic-tcg.sock")?;
    }
    let NicBootOutcome { result, marks, traffic } = booted;
    let specs: Vec<String> = inject.iter().map(ToString::to_string).collect();
    let result = match result {
        // With injections, a guest that panicked or never finished its report
        // is the driver not surviving: a FAIL, not a rig error.
        Err(qemu::LaunchError::GuestPanic { tail }) if !inject.is_empty() => {
            let why = "the guest kernel panicked";
            return Ok(unsurvived(req, &topo, kernel, why, &tail, &specs, start, provision_time, traffic));
        }
        Err(qemu::LaunchError::Deadline { secs, tail }) if !inject.is_empty() => {
            let why = format!("no guest report within {secs} s: the guest hung");
            return Ok(unsurvived(req, &topo, kernel, &why, &tail, &specs, start, provision_time, traffic));
        }
        other => other,
    };
    let booted = result.with_context(|| format!("booting {} on Linux {}", topo.name(), kernel.release))?;

    let guest = topo.to_qemu_numbering();
    guest_topology_matches(&req.topology, &spec, &guest, guest.last_stage(), &booted.report)?;
    for stage in &booted.stages {
        guest_topology_matches(&req.topology, &spec, &guest, &stage.name, &stage.report)
            .with_context(|| format!("stage {}", stage.name))?;
    }
    hotplug_ran(&booted.report)?;
    if guest.scenario().irqbalance {
        irqbalance_usable(&booted.report)?;
    }
    if inject.is_empty() {
        // With injections a failed step is the driver's answer to the fault:
        // driver_survived judges it.
        lifecycle_steps_ran(&booted.report, channels, req.reprobe)?;
    }
    let model = req.model.unwrap_or(req.kernel);
    let mut accel = accel_label(booted.accel, booted.speedups);
    if !req.extra_cmdline.is_empty() {
        // A user's `--cmdline` items change the guest: every format's header shows them.
        accel = format!("{accel}, kernel command line + {}", req.extra_cmdline.join(" "));
    }
    // The model's table at each CPU state of the run (the probe, then after each
    // hotplug stage of the scenario); the report shows the last one.
    let expected_at = expected_stages(&guest, model);
    let expected_for = |stage: &str| crate::verdict::table_at(&expected_at, stage);
    let expected = expected_for(guest.last_stage());
    // Which guest PCI address is which NIC (several NICs: their slots; one: the report's).
    let bdfs = match spec.more_nics.is_empty() {
        true => vec![booted.report.nic.clone()],
        false => qemu::nic_slots::match_nics(&spec.nics().collect::<Vec<_>>(), &booted.report.nics),
    };
    let marks = marks.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let status_at = |is: &dyn Fn(&Marker) -> bool| {
        marks.iter().rev().find(|(l, _)| Marker::parse(l).is_some_and(|m| is(&m))).and_then(|(_, s)| s.clone())
    };
    // The guest's IRQ names follow the booted kernel's scheme, whatever model judges it
    // (`--model`): the queue table joins by that kernel's names.
    let table = |status: Option<DeviceStatus>, observed: &Observed| {
        status.and_then(|s| match queues::queue_table(&s, &observed.vectors, req.kernel) {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!("queue table: {e}");
                None
            }
        })
    };
    let mut stages = Vec::new();
    for crate::guest_protocol::Stage { name, report } in booted.stages {
        // rmmod runs after the first stage.
        if inject.is_empty() {
            lifecycle_steps_ran(&report, channels, false).with_context(|| format!("stage {name}"))?;
        }
        let observed = report_to_verdict::observed_of(&report, bdfs[0].as_deref(), model, &req.model_basis, &accel)?;
        let queues = table(status_at(&|m| *m == Marker::StageBegin(name.clone())), &observed);
        let verdict = judge(&topo, &observed, expected_for(&name));
        stages.push(StageOutcome { name, verdict, queues, report });
    }
    let observed = report_to_verdict::observed_of(&booted.report, bdfs[0].as_deref(), model, &req.model_basis, &accel)?;
    let report_status = status_at(&|m| matches!(m, Marker::ReportBegin(_)));
    let struck = report_status.as_ref().and_then(|s| s.core.as_ref()).map(|c| &c.counters.injected);
    timed_injections::timed_injections_happened(&inject, struck)?;
    let device_flows =
        report_status.as_ref().and_then(|s| s.core.as_ref()).map(|c| c.flows.flows.clone()).unwrap_or_default();
    let queues = table(report_status, &observed);
    let mut verdict = judge(&topo, &observed, expected);
    if !guest.scenario().is_default() {
        let mut states: Vec<(&str, &crate::guest_protocol::GuestCpuState)> =
            stages.iter().map(|s| (s.name.as_str(), &s.report.cpu_state)).collect();
        states.push((guest.last_stage(), &booted.report.cpu_state));
        verdict.add_check(check_cpu_state(&guest, &states, &booted.report.init_env));
    }
    if let Some(label) = &req.label {
        verdict.run.name = format!("{}@{label}", topo.name());
    }
    if topo.nic().num_ports > 1 {
        let plan = crate::model::vport_plan(&topo.to_qemu_numbering(), model);
        verdict.add_vport_check(crate::verdict::vports::vport_vectors_check(plan.as_ref(), queues.as_ref()));
    }
    if topo.nics().len() > 1 {
        let judged = OtherNics { topo: &topo, report: &booted.report, bdfs: &bdfs, model, req, accel: &accel };
        verdict.add_nics(judged.report(&verdict.run.name, &stages, &observed, expected)?);
    }
    let earlier = stages
        .iter()
        .map(|s| (s.name.as_str(), &s.verdict, report_to_verdict::stage_facts(&s.report, s.queues.clone())))
        .collect();
    verdict.add_stages(earlier, report_to_verdict::stage_facts(&booted.report, queues.clone()));
    if req.debug {
        let r = &booted.report;
        verdict.add_debug_reports(&DebugLog {
            state: r.debug.as_deref(),
            kmemleak: &r.kmemleak,
            klog: &r.klog,
            vectors: &observed.vectors,
            nr_cpus: topo.ncpu(),
        });
    }
    if let Some(t) = &traffic {
        let input = TrafficInput {
            planned: t.planned.as_deref().unwrap_or_default(),
            plan_error: t.plan_error.as_deref(),
            outcome: t.peer.outcome.as_ref(),
            peer_error: t.peer.error.as_deref(),
            device_flows: &device_flows,
            queues: queues.as_ref(),
            guest: &booted.report.traffic,
            host: traffic::HOST,
            guest_ip: traffic::GUEST,
        };
        let (report, checks) = judge_traffic(&input, &verdict.summary);
        verdict.add_traffic(report, checks);
    }
    if guest.scenario().irqbalance {
        let r = &booted.report;
        let input = IrqbalanceInput {
            run: &r.irqbalance,
            started: r.times.get("irqbalance").copied(),
            msix: &r.msix,
            nodes: &r.nodes,
            log: r.stderr.get("irqbalance").map_or(&[], Vec::as_slice),
        };
        let (report, check) = judge_irqbalance(&input);
        verdict.add_irqbalance(report, check);
    }
    if !inject.is_empty() {
        verdict.judge_by_survival(crate::verdict::driver_survived(&booted.report, &specs));
    }
    Ok(RunOutcome {
        verdict,
        observed,
        timings: RunTimings { provision: provision_time, boot_to_report: booted.to_report, total: start.elapsed() },
        queues,
        guest_times: booted.report.times.clone(),
        speedups: booted.speedups,
        report: booted.report,
        stages,
        traffic,
    })
}

/// The outcome of a run with injections whose guest never finished its
/// report (`why`; `tail`: the last console lines): the model's checks on an
/// empty guest, not judged, and a failing `driver_survived`.
#[allow(clippy::too_many_arguments)]
fn unsurvived(
    req: &RunRequest,
    topo: &Topology,
    kernel: &provision::KernelInstall,
    why: &str,
    tail: &str,
    specs: &[String],
    start: Instant,
    provision_time: Duration,
    traffic: Option<TrafficBoot>,
) -> RunOutcome {
    let model = req.model.unwrap_or(req.kernel);
    let observed = Observed {
        kernel_release: kernel.release.clone(),
        kernel: model,
        model_basis: req.model_basis.clone(),
        accel: format!("{:?} (no guest report)", req.accel).to_lowercase(),
        nic_bdf: None,
        nic_numa_node: None,
        vectors: Vec::new(),
        probe_ok: false,
        dmesg_mana: Vec::new(),
    };
    let expected = expected_table(&topo.to_qemu_numbering(), model);
    let mut verdict = judge(topo, &observed, &expected);
    if let Some(label) = &req.label {
        verdict.run.name = format!("{}@{label}", topo.name());
    }
    verdict.judge_by_survival(crate::verdict::driver_did_not_survive(why, tail, specs));
    RunOutcome {
        verdict,
        observed,
        timings: RunTimings { provision: provision_time, boot_to_report: start.elapsed(), total: start.elapsed() },
        queues: None,
        report: crate::guest_protocol::GuestReport::default(),
        stages: Vec::new(),
        guest_times: Default::default(),
        speedups: req.speedups,
        traffic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest_protocol::GuestReport;

    #[test]
    fn a_failed_ethtool_or_rmmod_is_a_rig_error_naming_the_step() {
        let mut r = GuestReport { netdev: Some("eth0".into()), ethtool_status: Some(1), ..GuestReport::default() };
        r.dmesg.push("mana 0000:41:00.0 eth0: mana_attach failed: -22".into());
        r.stderr.insert("ethtool".into(), vec!["netlink error: Invalid argument".into()]);
        let e = lifecycle_steps_ran(&r, Some(4), false).expect_err("ethtool failed");
        assert!(
            e.to_string().contains("ethtool -L eth0 combined 4") && e.to_string().contains("mana_attach failed"),
            "{e}"
        );
        assert!(e.to_string().contains("(exit 1): netlink error: Invalid argument"), "{e}");
        r.ethtool_status = Some(0);
        let e = lifecycle_steps_ran(&r, Some(4), false).expect_err("no channel count");
        assert!(e.to_string().contains("returned 0 but eth0 has no count of combined channels"), "{e}");
        r.channels = Some(8);
        let e = lifecycle_steps_ran(&r, Some(4), false).expect_err("still 8 channels");
        assert!(e.to_string().contains("has 8 combined channels"), "{e}");
        r.channels = Some(4);
        assert!(lifecycle_steps_ran(&r, Some(4), false).is_ok());
        let e = lifecycle_steps_ran(&r, Some(4), true).expect_err("rmmod did not run");
        assert!(e.to_string().contains("rmmod mana"), "{e}");
        r.rmmod_status = Some(1);
        r.stderr
            .insert("rmmod".into(), vec!["rmmod: can't unload module 'mana': Resource temporarily unavailable".into()]);
        let e = lifecycle_steps_ran(&r, Some(4), true).expect_err("rmmod failed");
        assert!(e.to_string().contains("(exit 1): rmmod: can't unload module 'mana'"), "{e}");
        // Without a netdev the probe failed: the verdict says so, not these steps.
        r.netdev = None;
        assert!(lifecycle_steps_ran(&r, Some(4), true).is_ok());
    }
}
