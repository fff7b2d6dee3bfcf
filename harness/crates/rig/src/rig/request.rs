//! What a run asks for: [`RunRequest`] with its defaults, and the run's fault
//! injections ([`injections`]: the topology file's and the request's).

use crate::accel::AccelChoice;
use crate::model::{KernelGen, ModelBasis};
use crate::qemu;
use crate::topology::Topology;
use crate::traffic::TrafficOptions;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The topology file.
    pub topology: PathBuf,
    /// The kernel generation (selects the pinned Debian kernel and the model).
    pub kernel: KernelGen,
    /// Accelerator choice (default TCG; see [`crate::accel`]).
    pub accel: AccelChoice,
    /// Cache folder override (see [`provision::cache_dir`](crate::provision::cache_dir)).
    pub cache_dir: Option<PathBuf>,
    /// Guest RAM per NUMA node that has memory, MiB (IRQ placement does not depend on it).
    pub mem_per_node_mib: u32,
    /// Host wall-clock limit for the boot.
    pub deadline: Duration,
    /// Keep the console here as well.
    pub console_log: Option<PathBuf>,
    /// QEMU's human monitor on this unix socket (`crate::qemu::monitor`).
    pub monitor: Option<PathBuf>,
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
    /// user's image; `kernel` is then the generation its source runs). See [`kernel_choice`](super::kernel_choice).
    pub custom_kernel: Option<crate::provision::KernelInstall>,
    /// Extra kernel command-line items (after the rig's own).
    pub extra_cmdline: Vec<String>,
    /// The kernel as the user named it (`6.12-min`, `build-4daef119`): the run
    /// is named `<topology>@<label>` (default: `<topology>@<generation>`).
    pub label: Option<String>,
    /// Test only: make the emulated NIC fail on purpose (see [`device::DeviceOptions::fault`](super::device::DeviceOptions::fault);
    /// the CLI reads it from `MANARIG_DEVICE_FAULT`).
    pub device_fault: Option<mana_device_api::fault::DeviceFault>,
    /// Drive traffic through the NIC after the probe ([`crate::traffic`]): a
    /// peer in a private network namespace, flows planned from the driver's
    /// RSS state, the guest's counters before and after.
    pub traffic: Option<TrafficOptions>,
    /// The kernel is a debug kernel ([`kernel_choice::ResolvedKernel::debug`](super::kernel_choice::ResolvedKernel::debug)):
    /// boot it with [`debug_kernel::CMDLINE`](super::debug_kernel::CMDLINE) and the agent's debug mode,
    /// deadlines times [`debug_kernel::SLOWDOWN`](super::debug_kernel::SLOWDOWN), and add the verdict's
    /// `debug_reports` check.
    pub debug: bool,
    /// Faults the emulated NIC shows the driver on purpose (`--inject SPEC`,
    /// device_model::inject), besides the topology file's `[nic] inject`. A
    /// run with injections is judged by `driver_survived` alone
    /// ([`crate::verdict::driver_survived`]).
    pub inject: Vec<mana_device_api::inject::InjectSpec>,
    /// `[scenario]` fields that replace the topology file's (`run --maxcpus`, …).
    pub scenario: crate::topology::ScenarioFile,
    /// Run the kernel's drivers/net selftests in the guest after the probe
    /// ([`super::selftests`]): every case a check, judged against the
    /// series' baseline.
    pub selftests: Option<super::selftests::SelftestsRequest>,
    /// Instead of one run of the flows, a soak ([`super::soak`]): rounds of
    /// [`RunRequest::traffic`]'s flows for minutes while the guest changes the
    /// channels, the device's link goes down and up and mana is reloaded,
    /// every minute; the device process sampled once a minute.
    pub soak: Option<super::soak::SoakOptions>,
    /// The guest's architecture instead of the topology file's (`--arch`).
    pub arch: Option<crate::topology::Arch>,
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
            monitor: None,
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
            selftests: None,
            soak: None,
            arch: None,
        }
    }

    /// The host's deadline for the boot: [`RunRequest::deadline`], or a
    /// soak's when longer ([`super::soak::SoakOptions::host_deadline`]).
    pub fn host_deadline(&self) -> Duration {
        match (&self.soak, &self.traffic) {
            (Some(soak), Some(t)) => soak.host_deadline(self.deadline, t.limit),
            _ => self.deadline,
        }
    }
}

/// A topology file's `[nic] inject` entry that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: nic.inject[{index}]: {reason}", file.display())]
pub struct BadInjection {
    /// The topology file.
    pub file: PathBuf,
    /// The entry's index in `inject`.
    pub index: usize,
    /// The spec parser's words, with the valid choices.
    pub reason: String,
}

/// The injections of a run: the topology file's `[nic] inject` strings, then
/// the request's.
///
/// # Errors
/// [`BadInjection`] for a spec in the file that does not parse: one line
/// naming the file, the entry and the valid choices.
pub fn injections(
    file: &Path,
    topo: &Topology,
    requested: &[mana_device_api::inject::InjectSpec],
) -> Result<Vec<mana_device_api::inject::InjectSpec>, BadInjection> {
    let mut specs = Vec::new();
    for (index, text) in topo.nic().inject.iter().enumerate() {
        let spec = text.parse().map_err(|reason| BadInjection { file: file.to_path_buf(), index, reason })?;
        specs.push(spec);
    }
    specs.extend_from_slice(requested);
    Ok(specs)
}
