//! One rig run: a topology file → a real guest with the emulated MANA NIC → a verdict.
//!
//! [`run_one`] loads the topology, builds the QEMU machine from it ([`machine`]),
//! serves the emulated NIC on a vfio-user socket in this process ([`device`]),
//! boots the pinned kernel with the `/init` agent, turns the guest's console
//! report into [`Observed`] ([`observe`]), checks the observed topology
//! against the file, and judges the MSI-X table against the reference model.
//! [`command`] holds the `run` and `compare` subcommands.

pub mod command;
pub mod device;
pub mod kernel_choice;
pub mod machine;
pub mod observe;

use crate::accel::AccelChoice;
use crate::model::{expected_table, KernelGen};
use crate::provision::{self, Provisioned};
use crate::qemu::{self, BootRequest};
use crate::topology::Topology;
use crate::verdict::{judge, Observed, Verdict};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    /// Boot this kernel instead of the pinned one for `kernel` (a kernel build or a
    /// user's image; `kernel` is then the generation its source runs). See [`kernel_choice`].
    pub custom_kernel: Option<crate::provision::KernelInstall>,
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
            custom_kernel: None,
        }
    }
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
    /// The verdict (its `exit_code()` is the run's exit code).
    pub verdict: Verdict,
    /// What the guest showed.
    pub observed: Observed,
    /// Timings.
    pub timings: RunTimings,
    /// The device's status after the guest powered off (JSON), if it produced one.
    pub device_status: Option<serde_json::Value>,
}

/// Load the cache, provisioning it first when it is missing (the README's
/// commands provision on first use).
///
/// # Errors
/// Provisioning errors, with context.
pub fn provisioned(cache_dir: Option<&Path>) -> Result<Provisioned> {
    let cache = provision::cache_dir(cache_dir)?;
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
pub fn kernel_lock_id(gen: KernelGen) -> &'static str {
    match gen {
        KernelGen::V6_1 => "6.1",
        KernelGen::V6_12 => "6.12",
        KernelGen::V7 => "7",
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
    let topo = Topology::load(&req.topology)?;
    let prov = provisioned(req.cache_dir.as_deref())?;
    let provision_time = start.elapsed();
    let kernel = match &req.custom_kernel {
        Some(k) => k,
        None => prov.kernel(kernel_lock_id(req.kernel))?,
    };
    let spec = machine::machine_spec(&topo, req.accel, req.mem_per_node_mib)?;

    let scratch = tempfile::Builder::new()
        .prefix("manarig-run-")
        .tempdir()
        .context("cannot create a temporary folder for the run")?;
    let socket = scratch.path().join("nic.sock");
    let nic = device::RunningDevice::start(&socket, machine::device_config(&topo)?)?;

    let mut boot = BootRequest::new(&spec, kernel, &prov.busybox);
    boot.load_mana = true;
    boot.extra_devices.push(qemu::vfio_user_nic(&socket));
    boot.deadline = req.deadline;
    boot.console_log.clone_from(&req.console_log);
    let booted = qemu::boot(&prov.qemu, &boot);
    let device_status = nic.stop();
    let booted = booted.with_context(|| {
        format!("booting {} on Linux {}", topo.name(), kernel.release)
    })?;

    let diffs = crate::observed::compare(&spec, &booted.report);
    if !diffs.is_empty() {
        bail!(
            "the guest's topology differs from {}:\n{}",
            req.topology.display(),
            diffs.iter().map(|d| format!("  {d}")).collect::<Vec<_>>().join("\n")
        );
    }
    let model = req.model.unwrap_or(req.kernel);
    let observed = observe::observed(&booted.report, model, booted.accel.qemu_arg())?;
    let expected = expected_table(&topo.to_qemu_numbering(), model);
    let mut verdict = judge(&topo, &observed, &expected);
    if let Some(k) = &req.custom_kernel {
        trust_custom_generation(&mut verdict, k, model);
    }
    Ok(RunOutcome {
        verdict,
        observed,
        timings: RunTimings { provision: provision_time, boot_to_report: booted.to_report, total: start.elapsed() },
        device_status,
    })
}

/// A built or user kernel is judged by the generation its kernel choice
/// resolved to (detected from the build's source, or `--model`), not by the
/// version in its release string: a 6.12 tree with irq_setup() reverted runs
/// the 6.1 algorithm. When the release is the `kernel_generation` check's only
/// objection, the check passes, saying why.
fn trust_custom_generation(verdict: &mut Verdict, kernel: &provision::KernelInstall, model: KernelGen) {
    use crate::verdict::{CheckStatus, Status};
    let Some(c) = verdict.checks.iter_mut().find(|c| c.name == "kernel_generation") else { return };
    if c.status != CheckStatus::Fail || c.message.contains("the run is for") {
        return;
    }
    c.status = CheckStatus::Pass;
    c.message = format!(
        "guest kernel {} ({}) is judged as Linux {model}: its MANA IRQ code, not its release, decides (see `kernel list`)",
        kernel.release, kernel.id
    );
    if verdict.checks.iter().all(|c| c.status != CheckStatus::Fail) {
        verdict.status = Status::Pass;
    }
}
