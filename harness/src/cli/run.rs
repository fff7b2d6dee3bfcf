//! The `run` and `compare` subcommands.

use super::expect::KernelGenArg;
use super::import::{import_to_file, FromArgs, ImportedFile};
use super::pictures::PictureArgs;
use super::Exit;
use crate::accel::AccelChoice;
use crate::picture::{Panel, Picture};
use crate::rig::kernel_choice::{self, KernelChoice, ResolvedKernel};
use crate::rig::{run_one, RunOutcome, RunRequest};
use crate::text::plural;
use crate::verdict::format::error_text;
use crate::verdict::{render, render_before_after, render_rig_error, Format};
use std::error::Error;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Options shared by `run` and `compare`.
#[derive(Debug, clap::Args)]
pub struct RigOptions {
    /// Accelerator: tcg (default; single- or multi-threaded by vCPU count),
    /// tcg-single, tcg-multi, kvm (only where a probe shows KVM runs a vCPU), auto (KVM where
    /// the probe passes; a guest silent for 30 s under KVM is run again under TCG).
    #[arg(long, default_value = "tcg")]
    pub accel: AccelChoice,
    /// Cache folder (default: $MANARIG_CACHE, else ~/.cache/manarig).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Guest RAM per NUMA node with memory, in MiB.
    #[arg(long, default_value_t = 256)]
    pub mem_per_node: u32,
    /// Host wall-clock limit for each boot, in seconds.
    #[arg(long, default_value_t = 900)]
    pub deadline: u64,
    /// Also write the guest's serial console to this file (`compare`: to
    /// FILE.before and FILE.after).
    #[arg(long, value_name = "FILE")]
    pub console: Option<PathBuf>,
    /// Open QEMU's human monitor on this unix socket while the guest runs, to
    /// look into a guest that stops, e.g. `echo 'info registers -a' | socat -
    /// UNIX-CONNECT:SOCKET` (`compare`: SOCKET.before and SOCKET.after);
    /// removed when QEMU exits.
    #[arg(long, value_name = "SOCKET")]
    pub monitor: Option<PathBuf>,
    /// Boot the plain way (bzImage through the BIOS, Debian's command line)
    /// instead of with the speed-ups (PVH entry, speed command-line items, CPU flags);
    /// for A/B comparisons (docs/boot-speed.md).
    #[arg(long)]
    pub no_speedups: bool,
    /// Extra kernel command-line item (repeatable), e.g. `ignore_loglevel` or
    /// `initcall_debug` with `--console` to see where boot time goes, or
    /// `mana.dyndbg="+p"` (spaces only inside double quotes). `manarig.*`
    /// items are the rig's own (use `--channels`, `--reprobe`).
    #[arg(long, value_name = "ITEM", value_parser = rig_cmdline_item)]
    pub cmdline: Vec<String>,
    /// The guest's architecture, instead of the topology file's `[machine]
    /// arch`: x86_64 (QEMU q35) or arm64 (QEMU virt under TCG: GICv3 + ITS,
    /// UEFI with ACPI, Debian's arm64 cloud kernels; provisioned into
    /// `<cache>/arm64` on first use). On arm64, `--traffic`'s guest end is the
    /// x86_64 flows tool under qemu-x86_64, with four times `--traffic-seconds`.
    /// `matrix` takes a list (x86_64,arm64): an axis, every pair on each.
    #[arg(long, value_name = "ARCH[,ARCH]", value_delimiter = ',')]
    pub arch: Vec<crate::topology::Arch>,
}

/// A `--cmdline` item for `run`/`compare`: a single word
/// ([`super::boot::cmdline_item`]) that is not one of the guest agent's
/// `manarig.*` items, which the rig sets itself and checks the results of (a
/// `manarig.channels=4` given here would, for example, run without ethtool in
/// the initramfs and without the channel check).
///
/// # Errors
/// [`CmdlineItemError`](super::boot::CmdlineItemError), naming the option to
/// use instead of an agent item.
pub fn rig_cmdline_item(s: &str) -> Result<String, super::boot::CmdlineItemError> {
    let item = super::boot::cmdline_item(s)?;
    // The guest agent splits /proc/cmdline at spaces, quotes or not.
    if item.split(' ').any(crate::guest_protocol::options::is_agent_item) {
        return Err(super::boot::CmdlineItemError::AgentItem {
            item,
            owner: "manarig.* items are set by the rig itself",
            instead: "--channels N, --reprobe or --deadline",
        });
    }
    Ok(item)
}

/// What `run` and `compare` refuse before any kernel is built or booted.
#[derive(Debug, thiserror::Error)]
pub enum RunCheckError {
    /// The `--from-*` machine cannot be imported.
    #[error(transparent)]
    Import(#[from] super::import::ImportFileError),
    /// The topology file does not load, or the scenario options do not fit it.
    #[error(transparent)]
    Topology(Box<crate::topology::TopologyError>),
    /// irqbalance cannot run on the chosen kernel.
    #[error("irqbalance (--irqbalance or [scenario] irqbalance in {}): {why}", topology.display())]
    Irqbalance {
        /// The topology file.
        topology: PathBuf,
        /// Why not.
        why: String,
    },
    /// `--arch` with more than one architecture outside `matrix`.
    #[error("--arch {given}: one architecture for one run (a list is for `matrix`, an axis there)")]
    ArchList {
        /// The list as given.
        given: String,
    },
    /// `--channels` outside what `ethtool -L` accepts on the machine.
    #[error(
        "--channels {channels}: `ethtool -L` accepts 1 to {max} combined channels on {} (the driver's \
         max_num_queues: CPUs, max_queues, MSI-X vectors - 1)",
        topology.display()
    )]
    Channels {
        /// The count asked for.
        channels: u32,
        /// The most the driver takes.
        max: u32,
        /// The topology file.
        topology: PathBuf,
    },
    /// A `[nic] inject` entry does not parse.
    #[error(transparent)]
    Injection(#[from] crate::rig::BadInjection),
    /// `--tests` or `--source` without `--selftests`.
    #[error("--tests and --source choose selftests: add --selftests (or use `selftests`)")]
    SelftestsNotAsked,
    /// The selftests' `--source` is neither a tree nor a pinned source.
    #[error(transparent)]
    SelftestsSource(Box<crate::kbuild::KbuildError>),
    /// [`DEVICE_FAULT_ENV`] is not `KIND:N`.
    #[error("{DEVICE_FAULT_ENV}: {reason}")]
    DeviceFault {
        /// The fault parser's words.
        reason: String,
    },
    /// The kernel choice cannot be resolved.
    #[error("kernel {choice}")]
    Kernel {
        /// The choice.
        choice: String,
        /// Why.
        #[source]
        source: Box<crate::kbuild::KbuildError>,
    },
}

impl From<crate::topology::TopologyError> for RunCheckError {
    fn from(e: crate::topology::TopologyError) -> Self {
        RunCheckError::Topology(Box::new(e))
    }
}

impl RigOptions {
    /// The request for a resolved kernel choice: a custom kernel is judged by
    /// its resolved generation; a pinned one by `model` if given.
    pub(super) fn request_for(
        &self,
        topology: &std::path::Path,
        k: &ResolvedKernel,
        model: Option<crate::model::KernelGen>,
    ) -> RunRequest {
        let mut r = self.request_with_model(topology, k.gen, if k.custom.is_some() { None } else { model });
        r.custom_kernel.clone_from(&k.custom);
        r.model_basis = k.basis.clone();
        r.label = Some(k.label.clone());
        r.debug = k.debug;
        r
    }

    fn request_with_model(
        &self,
        topology: &std::path::Path,
        kernel: crate::model::KernelGen,
        model: Option<crate::model::KernelGen>,
    ) -> RunRequest {
        RunRequest {
            accel: self.accel,
            cache_dir: self.cache_dir.clone(),
            mem_per_node_mib: self.mem_per_node,
            deadline: Duration::from_secs(self.deadline),
            console_log: self.console.clone(),
            monitor: self.monitor.clone(),
            model,
            speedups: if self.no_speedups { crate::qemu::Speedups::NONE } else { crate::qemu::Speedups::ALL },
            extra_cmdline: self.cmdline.clone(),
            arch: self.arch.first().copied(),
            ..RunRequest::new(topology.to_path_buf(), kernel)
        }
    }
}

/// `--traffic [FLOWS]`, `--traffic-bytes` and `--traffic-seconds`: the same
/// options in `run` and `compare` (whose `--traffic` help speaks of both runs:
/// `COMPARE_TRAFFIC_HELP`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TrafficArgs {
    /// Drive FLOWS TCP flows (no value or 0: twice the channel count) through the
    /// NIC between the guest and a peer in a private network namespace (needs
    /// root), both directions, every byte checked; adds the rss_steering and
    /// traffic_interrupts checks and where the interrupts and softirqs landed.
    #[arg(long, value_name = "FLOWS", num_args = 0..=1, default_missing_value = "0")]
    pub traffic: Option<u32>,
    /// Bytes each traffic flow carries each way (at least 1).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = crate::traffic::DEFAULT_BYTES,
        requires = "traffic",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub traffic_bytes: u64,
    /// Seconds the flows may take (they stop there, failed, if not done).
    #[arg(long, value_name = "S", default_value_t = crate::traffic::DEFAULT_SECONDS, requires = "traffic")]
    pub traffic_seconds: u64,
}

/// `compare --traffic`'s help (the other traffic options read as `run`'s).
const COMPARE_TRAFFIC_HELP: &str = "Drive FLOWS TCP flows (no value or 0: twice the channel count) through the NIC in \
                                    both runs (as `run --traffic`) and compare where the load landed: busy cores with \
                                    both SMT siblings busy, load outside the NIC's node";

impl TrafficArgs {
    /// The options as the rig takes them: `None` without `--traffic` (FLOWS 0
    /// or missing: twice the channel count; a limit of at least one second).
    pub fn options(&self) -> Option<crate::traffic::TrafficOptions> {
        self.traffic.map(|flows| crate::traffic::TrafficOptions {
            flows: (flows > 0).then_some(flows),
            bytes: self.traffic_bytes,
            limit: Duration::from_secs(self.traffic_seconds.max(1)),
        })
    }
}

/// Arguments of `run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Topology file (TOML), e.g. topologies/seed-002.toml (or a machine given with --from-*).
    #[arg(default_value = "topologies/seed-002.toml", conflicts_with = "from_inputs")]
    pub topology: PathBuf,
    /// A real machine instead of a topology file (see `import`).
    #[command(flatten)]
    pub from: FromArgs,
    /// Pictures of the run.
    #[command(flatten)]
    pub pictures: PictureArgs,
    /// Kernel: 6.1, 6.12 or 7.x (the pinned Debian kernels), 6.1-min, 6.12-min
    /// or 7.x-min (the same source with manarig's minimal config: the fast path;
    /// built on first use, about 8 minutes), 6.1-debug, 6.12-debug or 7.x-debug
    /// (the same plus KASAN, kmemleak and lockdep, and the `debug_reports`
    /// check), build:KEY (a `kernel build`) or image:BZIMAGE:MODULES_DIR.
    #[arg(long, default_value = "6.12")]
    pub kernel: KernelChoice,
    /// A kernel build (key or folder; same as --kernel build:KEY).
    #[arg(long, value_name = "KEY|DIR", conflicts_with_all = ["kernel_image", "kernel"])]
    pub kernel_build: Option<String>,
    /// Your own bzImage (with --modules): no rebuild needed.
    #[arg(long, value_name = "BZIMAGE", requires = "modules", conflicts_with = "kernel")]
    pub kernel_image: Option<PathBuf>,
    /// The folder with the image's mana.ko (a build tree, lib/modules/RELEASE, …).
    #[arg(long, value_name = "DIR", requires = "kernel_image")]
    pub modules: Option<PathBuf>,
    /// Output format: human (the seeds' table), ktap, junit or json.
    #[arg(long, default_value = "human")]
    pub format: Format,
    /// Judge the guest against another generation's model: 6.1, 6.3 (6.3-6.8),
    /// 6.12 or 7.x (default: the kernel's own; for a build, the one detected in
    /// its source).
    #[arg(long)]
    pub model: Option<KernelGenArg>,
    /// Set N combined channels with `ethtool -L` in the guest after the link is up
    /// (default: the topology's `[nic] channels`, else the driver's count).
    #[arg(long, value_name = "N")]
    pub channels: Option<u32>,
    /// After the first probe: `rmmod mana`, load it again, and require the same
    /// IRQ and queue tables and no kernel warnings.
    #[arg(long)]
    pub reprobe: bool,
    /// Packets through the NIC.
    #[command(flatten)]
    pub traffic: TrafficArgs,
    /// Make the emulated NIC misbehave (repeatable; also `[nic] inject = [..]`
    /// in the topology file): `status:CMD=CODE[@N]` (an error status for a
    /// GDMA/BNIC command, e.g. create_queue, create_dma_region, config_vport;
    /// only its N-th time with @N), `hwc-delay:CMD=MS[@N]` (its response MS
    /// ms late; the device sets the driver's HWC timeout to 2000 ms),
    /// `spurious-irq:eq=ID|vector=V`, `owner-bits:eqe|cqe[@N]`,
    /// `silent-vector:V`, `rx-cqe-corrupt[@N]` (with --traffic), `reset@S`,
    /// `link-down@S`, `link-up@S` (a device reset request or link event S
    /// seconds after the driver opens the vPort). The run is
    /// then judged by `driver_survived` alone (no oops, no hang, `rmmod
    /// mana` succeeds at the end): exit 1 when the driver did not survive.
    #[arg(long = "inject", value_name = "SPEC")]
    pub inject: Vec<mana_device_api::inject::InjectSpec>,
    /// One-off `[scenario]` fields (each replaces the file's; topologies/README.md).
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// The kernel's drivers/net selftests.
    #[command(flatten)]
    pub selftests: SelftestArgs,
    /// Rig options.
    #[command(flatten)]
    pub rig: RigOptions,
}

/// The kernel's drivers/net selftests in the guest (`run --selftests`, `selftests`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SelftestArgs {
    /// After the probe, run the kernel's own drivers/net selftests against the
    /// MANA netdev (the remote end in a guest netns, as netdev's CI): every
    /// case a check, judged against `guest-images/selftests/baseline-<series>.toml`.
    #[arg(long)]
    pub selftests: bool,
    /// Which tests (relative to drivers/net, shell globs, comma-separated;
    /// `quick`: the local-only ones, ping.py and hw/toeplitz.py). Default: the
    /// tests the rig knows (docs/selftests.md) that the source has.
    #[arg(long, value_name = "GLOB,...", value_delimiter = ',')]
    pub tests: Vec<String>,
    /// The tests' kernel tree: a path or debian:linux-source-6.12|7.3 (default:
    /// the pinned kernel's own Debian source).
    #[arg(long, value_name = "TREE|debian:PKG")]
    pub source: Option<String>,
    /// Guest seconds one test program may take.
    #[arg(long, value_name = "S", default_value_t = crate::selftests::DEFAULT_TEST_TIMEOUT_S)]
    pub test_timeout: u32,
    /// The test programs' timer slack in microseconds: a sleep of theirs may
    /// end this much late, which keeps polling helpers (toeplitz.c's
    /// `usleep(100)`) from taking a TCG guest's time from the other end;
    /// 0 keeps the kernel's own 50 µs (docs/selftests.md).
    #[arg(long, value_name = "US", default_value_t = crate::selftests::DEFAULT_TIMER_SLACK_US)]
    pub test_timer_slack: u32,
}

impl SelftestArgs {
    /// The run's selftests, when asked for (`--selftests`, or the `selftests` command).
    ///
    /// # Errors
    /// [`RunCheckError::SelftestsNotAsked`] for `--tests` or `--source`
    /// without `--selftests`; [`RunCheckError::SelftestsSource`] for a
    /// `--source` that is neither a kernel tree nor a pinned Debian source.
    pub fn request(&self) -> Result<Option<crate::rig::SelftestsRequest>, RunCheckError> {
        if !self.selftests {
            if !self.tests.is_empty() || self.source.is_some() {
                return Err(RunCheckError::SelftestsNotAsked);
            }
            return Ok(None);
        }
        let source = self
            .source
            .as_deref()
            .map(crate::kbuild::source::SourceSpec::parse)
            .transpose()
            .map_err(|e| RunCheckError::SelftestsSource(Box::new(e)))?;
        Ok(Some(crate::rig::SelftestsRequest {
            patterns: self.tests.clone(),
            source,
            timeout_s: self.test_timeout,
            timer_slack_us: self.test_timer_slack,
        }))
    }
}

/// `run`'s one-off `[scenario]` fields: the same names and values as the table.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ScenarioArgs {
    /// Kernel parameter maxcpus=N: only the guest's first N CPUs come online at boot.
    #[arg(long, value_name = "N")]
    pub maxcpus: Option<i64>,
    /// CPUs (file numbering) offlined through sysfs before mana loads.
    #[arg(long, value_name = "CPULIST")]
    pub offline: Option<String>,
    /// CPUs offlined after the probe (stage `probe` kept).
    #[arg(long, value_name = "CPULIST")]
    pub offline_after: Option<String>,
    /// CPUs onlined after the probe and --offline-after.
    #[arg(long, value_name = "CPULIST")]
    pub online_after: Option<String>,
    /// Kernel parameter irqaffinity=CPULIST.
    #[arg(long, value_name = "CPULIST")]
    pub irqaffinity: Option<String>,
    /// Kernel parameter isolcpus=[FLAG,...,]CPULIST (flags nohz, domain, managed_irq).
    #[arg(long, value_name = "SPEC")]
    pub isolcpus: Option<String>,
    /// Kernel parameter nohz_full=CPULIST.
    #[arg(long, value_name = "CPULIST")]
    pub nohz_full: Option<String>,
    /// Run Debian's irqbalance in the guest after the driver's placement was read
    /// and report how it moves each MANA IRQ (`[scenario] irqbalance = true`).
    #[arg(long)]
    pub irqbalance: bool,
}

impl ScenarioArgs {
    /// As the model's `[scenario]` fields.
    pub fn to_file(&self) -> crate::topology::ScenarioFile {
        crate::topology::ScenarioFile {
            maxcpus: self.maxcpus,
            offline: self.offline.clone(),
            offline_after: self.offline_after.clone(),
            online_after: self.online_after.clone(),
            irqaffinity: self.irqaffinity.clone(),
            isolcpus: self.isolcpus.clone(),
            nohz_full: self.nohz_full.clone(),
            irqbalance: self.irqbalance.then_some(true),
        }
    }
}

impl RunArgs {
    /// The kernel the options name (`--kernel-build` and `--kernel-image` win over `--kernel`).
    pub fn kernel_choice(&self) -> KernelChoice {
        if let Some(b) = &self.kernel_build {
            return KernelChoice::Build(b.clone());
        }
        if let (Some(image), Some(modules)) = (&self.kernel_image, &self.modules) {
            return KernelChoice::Image { image: image.clone(), modules: modules.clone() };
        }
        self.kernel.clone()
    }
}

/// Arguments of `compare`.
#[derive(Debug, clap::Args)]
#[command(mut_arg("traffic", |a| a.help(COMPARE_TRAFFIC_HELP)))]
pub struct CompareArgs {
    /// Topology file (TOML) (or a machine given with --from-*).
    #[arg(required_unless_present = "from_inputs", conflicts_with = "from_inputs")]
    pub topology: Option<PathBuf>,
    /// A real machine instead of a topology file (see `import`).
    #[command(flatten)]
    pub from: FromArgs,
    /// Pictures of both runs, side by side.
    #[command(flatten)]
    pub pictures: PictureArgs,
    /// The "before" kernel: 6.1|6.12|7.x, 6.1-min|6.12-min|7.x-min, 6.1-debug|6.12-debug|7.x-debug, build:KEY or image:BZIMAGE:MODULES_DIR.
    #[arg(long, default_value = "6.1")]
    pub before: KernelChoice,
    /// The "after" kernel, as --before.
    #[arg(long, default_value = "6.12")]
    pub after: KernelChoice,
    /// The "before" kernel is this build (same as --before build:KEY).
    #[arg(long, value_name = "KEY|DIR")]
    pub before_build: Option<String>,
    /// The "after" kernel is this build (same as --after build:KEY).
    #[arg(long, value_name = "KEY|DIR")]
    pub after_build: Option<String>,
    /// Packets through the NIC in both runs (`--traffic`'s help says so).
    #[command(flatten)]
    pub traffic: TrafficArgs,
    /// Make the emulated NIC misbehave in both runs, as `run --inject SPEC`
    /// (repeatable): each run is then judged by `driver_survived` alone.
    #[arg(long = "inject", value_name = "SPEC")]
    pub inject: Vec<mana_device_api::inject::InjectSpec>,
    /// Rig options.
    #[command(flatten)]
    pub rig: RigOptions,
}

pub(super) fn run_name(topology: &std::path::Path, kernel_label: &str) -> String {
    let stem =
        topology.file_stem().map_or_else(|| topology.display().to_string(), |s| s.to_string_lossy().into_owned());
    format!("{stem}@{kernel_label}")
}

/// Resolve a kernel choice, printing which model judges it; on failure a rig
/// error in `format` (named `<topology>@<kernel>`), and the error (its text goes
/// into a picture).
pub(super) fn resolve_or_report(
    choice: &KernelChoice,
    model: Option<crate::model::KernelGen>,
    rig: &RigOptions,
    topology: &std::path::Path,
    format: Format,
) -> Result<ResolvedKernel, RunCheckError> {
    if rig.arch.len() > 1 {
        let given = rig.arch.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        let err = RunCheckError::ArchList { given };
        report_rig_error(&err, &run_name(topology, &choice.to_string()), format);
        return Err(err);
    }
    // A minimal kernel is built for the guests' architecture: `--arch`, else the file's.
    let arch = rig.arch.first().copied().unwrap_or_else(|| {
        crate::topology::Topology::load(topology).map_or(crate::topology::Arch::X86_64, |t| t.arch())
    });
    match kernel_choice::resolve_on(choice, model, rig.cache_dir.as_deref(), arch) {
        Ok(k) => {
            if k.custom.is_some() || model.is_some() {
                eprintln!("manarig: {}", k.model_note);
            }
            Ok(k)
        }
        Err(e) => {
            let err = RunCheckError::Kernel { choice: choice.to_string(), source: Box::new(e) };
            report_rig_error(&err, &run_name(topology, &choice.to_string()), format);
            Err(err)
        }
    }
}

/// A rig error: the format's error document on stdout (human: one line on stderr).
pub(super) fn report_rig_error(err: &(dyn Error + 'static), name: &str, format: Format) {
    match render_rig_error(err, name, format) {
        Ok(text) if format != Format::Human => print(&text),
        _ => eprintln!("manarig: {name}: rig error: {}", error_text(err)),
    }
}

/// `text` on stdout as it is.
fn print(text: &str) {
    // A closed pipe (`| head`) is not worth a panic.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// A finished run printed: its verdict rendered in `format` on stdout, then
/// on stderr the command's own line of figures (`figures`: the traffic's, the
/// soak's) and [`timings_line`]. The exit its verdict gives, or None when the
/// report cannot be rendered (said on stderr: a rig error).
pub(super) fn print_outcome(outcome: &RunOutcome, format: Format, figures: Option<String>) -> Option<Exit> {
    let text = match render(&outcome.verdict, format) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("manarig: cannot render the report: {e}");
            return None;
        }
    };
    print(&text);
    if let Some(line) = figures {
        eprintln!("{line}");
    }
    eprintln!("{}", timings_line(outcome));
    Some(Exit::of(outcome.verdict.status))
}

/// One line on where a run's time went: its kernel, accelerator, boot and whole run.
fn timings_line(outcome: &RunOutcome) -> String {
    let t = &outcome.timings;
    format!(
        "manarig: {} on {}: boot to report {:.1} s, whole run {:.1} s",
        outcome.observed.kernel_release,
        outcome.observed.accel,
        t.boot_to_report.as_secs_f64(),
        t.total.as_secs_f64()
    )
}

/// One line on how the traffic went: flows verified on both ends, or why not.
fn traffic_line(t: &crate::rig::TrafficBoot) -> String {
    match (&t.peer.outcome, &t.peer.error, &t.plan_error) {
        (Some(o), _, _) => {
            let both = o.host.iter().zip(&o.guest).filter(|(h, g)| h.verified && g.verified).count();
            format!(
                "manarig: traffic: {both} of {} verified on both ends in {:.2} s{}",
                plural(o.plan.flows.len(), "flow"),
                o.elapsed_ms as f64 / 1000.0,
                o.error.as_ref().map_or(String::new(), |e| format!(" ({e})"))
            )
        }
        (None, _, Some(e)) => format!("manarig: traffic: no plan: {e}"),
        (None, Some(e), None) => format!("manarig: traffic: {e}"),
        (None, None, None) => "manarig: traffic: the guest never reached the peer".into(),
    }
}

/// Test only: `MANARIG_DEVICE_FAULT=KIND:N` makes `run`'s emulated NIC fail on
/// purpose (`mana-device --inject-fault`, device-model/src/process/fault.rs), to check
/// the rig's handling of a broken device from the command line.
pub const DEVICE_FAULT_ENV: &str = "MANARIG_DEVICE_FAULT";

/// [`DEVICE_FAULT_ENV`], if set.
///
/// # Errors
/// [`RunCheckError::DeviceFault`] for a value that is not `KIND:N`.
fn device_fault_from_env() -> Result<Option<mana_device_api::fault::DeviceFault>, RunCheckError> {
    match std::env::var(DEVICE_FAULT_ENV) {
        Ok(v) if !v.is_empty() => v.parse().map(Some).map_err(|reason| RunCheckError::DeviceFault { reason }),
        _ => Ok(None),
    }
}

/// The topology a `--from-*` machine was imported into (a temporary file), if any.
///
/// # Errors
/// [`super::import::ImportFileError`]: the import's one-line error.
fn imported_topology(from: &FromArgs) -> Result<Option<ImportedFile>, super::import::ImportFileError> {
    if from.given() {
        import_to_file(from).map(Some)
    } else {
        Ok(None)
    }
}

/// Write the requested pictures; a failure is one line on stderr and `false`.
fn write_pictures(pictures: &PictureArgs, topology: &std::path::Path, picture: &Picture<'_>) -> bool {
    match pictures.write(topology, picture) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("manarig: {}", error_text(&e));
            false
        }
    }
}

/// `run`: one topology on one kernel; prints the verdict in the chosen format.
/// Exit 0 pass, 1 mismatch, 2 rig error. With `--svg`/`--html`, the run's picture too; a
/// run that fails before the guest's report is drawn without guest data (still exit 2).
pub fn run(args: &RunArgs) -> ExitCode {
    if let Err(e) = args.pictures.check() {
        eprintln!("manarig: {}", error_text(&e));
        return Exit::RigError.into();
    }
    let model = args.model.as_ref().map(|m| m.0);
    let imported = match imported_topology(&args.from) {
        Ok(i) => i,
        Err(err) => {
            report_rig_error(&err, "import", args.format);
            return Exit::RigError.into();
        }
    };
    let topology = imported.as_ref().map_or(args.topology.as_path(), ImportedFile::path);
    let rig_error = |name: &str, reason: &str| -> ExitCode {
        write_pictures(&args.pictures, topology, &Picture::One(Panel::NoGuestData { run: name, reason }));
        Exit::RigError.into()
    };
    // The topology first: a bad file must not wait for a kernel build.
    let checked = check_run(args, topology)
        .and_then(|()| args.selftests.request())
        .and_then(|selftests| Ok((selftests, device_fault_from_env()?)));
    let (selftests, device_fault) = match checked {
        Ok(both) => both,
        Err(err) => {
            let name = run_name(topology, &args.kernel_choice().to_string());
            report_rig_error(&err, &name, args.format);
            return rig_error(&name, &error_text(&err));
        }
    };
    let kernel = match resolve_or_report(&args.kernel_choice(), model, &args.rig, topology, args.format) {
        Ok(k) => k,
        Err(err) => return rig_error(&run_name(topology, &args.kernel_choice().to_string()), &error_text(&err)),
    };
    let name = run_name(topology, &kernel.label);
    let mut request = args.rig.request_for(topology, &kernel, model);
    request.channels = args.channels;
    request.reprobe = args.reprobe;
    request.scenario = args.scenario.to_file();
    request.device_fault = device_fault;
    request.traffic = args.traffic.options();
    request.inject.clone_from(&args.inject);
    request.selftests = selftests;
    match run_one(&request) {
        Ok(outcome) => {
            let Some(exit) = print_outcome(&outcome, args.format, outcome.traffic.as_ref().map(traffic_line)) else {
                return Exit::RigError.into();
            };
            if !outcome.verdict.as_topology_expects() {
                eprintln!(
                    "manarig: note: {} expects {:?} ([expect] in the file); this run's verdict is {:?}",
                    topology.display(),
                    outcome.verdict.run.topology_expects,
                    outcome.verdict.status
                );
            }
            if !write_pictures(&args.pictures, topology, &Picture::One(Panel::Run(&outcome.verdict))) {
                return Exit::RigError.into();
            }
            exit.into()
        }
        Err(err) => {
            report_rig_error(&err, &name, args.format);
            rig_error(&name, &error_text(&err))
        }
    }
}

/// `run`'s checks of the topology file against the options (printing its
/// warnings): irqbalance on the kernel, `--channels`, the file's `[nic] inject`.
///
/// # Errors
/// [`RunCheckError`]: the first thing refused.
fn check_run(args: &RunArgs, topology: &std::path::Path) -> Result<(), RunCheckError> {
    let topo = crate::topology::Topology::load(topology)?
        .with_scenario(&topology.display().to_string(), &args.scenario.to_file())?;
    for w in topo.warnings() {
        eprintln!("manarig: warning: {w}");
    }
    if topo.scenario().irqbalance {
        if let Some(why) = crate::rig::kernel_choice::irqbalance_refusal(&args.kernel_choice()) {
            return Err(RunCheckError::Irqbalance { topology: topology.to_path_buf(), why });
        }
    }
    match args.channels {
        Some(c) if c == 0 || c > topo.max_channels() => {
            Err(RunCheckError::Channels { channels: c, max: topo.max_channels(), topology: topology.to_path_buf() })
        }
        // The file's `[nic] inject` specs parse, or nothing starts.
        _ => Ok(crate::rig::injections(topology, &topo, &[]).map(drop)?),
    }
}

/// One side of `compare`: its verdict, or why it has none (rig error, or not run).
enum Side {
    Judged(Box<crate::verdict::Verdict>),
    NoData { name: String, reason: String },
}

impl Side {
    fn panel(&self) -> Panel<'_> {
        match self {
            Side::Judged(v) => Panel::Run(v),
            Side::NoData { name, reason } => Panel::NoGuestData { run: name, reason },
        }
    }
}

/// `compare`: the same topology on two kernels, side by side (seed 001's
/// before/after table, then seed 003's affinity-hint masks). Exit 2 if either
/// run hit a rig error, else 1 if either verdict failed, else 0. With `--svg`/`--html`,
/// both machines side by side (a side without a report drawn without guest data).
pub fn compare(args: &CompareArgs) -> ExitCode {
    if let Err(e) = args.pictures.check() {
        eprintln!("manarig: {}", error_text(&e));
        return Exit::RigError.into();
    }
    let before = args.before_build.clone().map_or_else(|| args.before.clone(), KernelChoice::Build);
    let after = args.after_build.clone().map_or_else(|| args.after.clone(), KernelChoice::Build);
    let imported = match imported_topology(&args.from) {
        Ok(i) => i,
        Err(err) => {
            eprintln!("manarig: {}", error_text(&err));
            return Exit::RigError.into();
        }
    };
    let Some(topology) = imported.as_ref().map(ImportedFile::path).or(args.topology.as_deref()) else {
        eprintln!("manarig: compare needs a topology file or a --from-* machine");
        return Exit::RigError.into();
    };
    // The topology and its `[nic] inject` entries before either kernel: nothing starts on a bad one.
    let checked = crate::topology::Topology::load(topology)
        .map_err(RunCheckError::from)
        .and_then(|topo| Ok(crate::rig::injections(topology, &topo, &args.inject)?));
    let injected = match checked {
        Ok(specs) => specs,
        Err(e) => {
            eprintln!("manarig: {}", error_text(&e));
            return Exit::RigError.into();
        }
    };
    if !injected.is_empty() {
        let specs: Vec<String> = injected.iter().map(ToString::to_string).collect();
        eprintln!("manarig: injecting in both runs: {} (each judged by driver_survived)", specs.join(", "));
    }
    let pictures =
        |b: &Side, a: &Side| write_pictures(&args.pictures, topology, &Picture::BeforeAfter(b.panel(), a.panel()));
    let not_run = |choice: &KernelChoice, why: &str| Side::NoData {
        name: run_name(topology, &choice.to_string()),
        reason: why.to_owned(),
    };
    // Both kernels before either boots: a bad --after must not cost a boot.
    let mut kernels = Vec::new();
    for choice in [&before, &after] {
        match resolve_or_report(choice, None, &args.rig, topology, Format::Human) {
            Ok(k) => kernels.push(k),
            Err(err) => {
                let reason = error_text(&err);
                let (b, a) = match kernels.len() {
                    0 => (not_run(&before, &reason), not_run(&after, "not run: the before kernel failed")),
                    _ => (not_run(&before, "not run: the after kernel failed"), not_run(&after, &reason)),
                };
                pictures(&b, &a);
                return Exit::RigError.into();
            }
        }
    }
    let mut sides = Vec::new();
    for (kernel, side) in kernels.into_iter().zip(["before", "after"]) {
        let name = run_name(topology, &kernel.label);
        eprintln!("manarig: running {name}");
        let mut request = args.rig.request_for(topology, &kernel, None);
        request.traffic = args.traffic.options();
        request.inject.clone_from(&args.inject);
        // One console file and one monitor socket per boot: FILE.before and FILE.after.
        let per_side = |p: &std::path::PathBuf| {
            let mut name = p.as_os_str().to_owned();
            name.push(format!(".{side}"));
            std::path::PathBuf::from(name)
        };
        request.console_log = args.rig.console.as_ref().map(per_side);
        request.monitor = args.rig.monitor.as_ref().map(per_side);
        match run_one(&request) {
            Ok(outcome) => {
                if let Some(t) = &outcome.traffic {
                    eprintln!("{}", traffic_line(t));
                }
                eprintln!("{}", timings_line(&outcome));
                sides.push(Side::Judged(Box::new(outcome.verdict)));
            }
            Err(err) => {
                eprintln!("manarig: {name}: rig error: {}", error_text(&err));
                sides.push(Side::NoData { name, reason: error_text(&err) });
                if sides.len() == 1 {
                    sides.push(not_run(&after, "not run: the before run failed"));
                }
                pictures(&sides[0], &sides[1]);
                return Exit::RigError.into();
            }
        }
    }
    let verdicts: Vec<&crate::verdict::Verdict> = sides
        .iter()
        .filter_map(|s| match s {
            Side::Judged(v) => Some(v.as_ref()),
            Side::NoData { .. } => None,
        })
        .collect();
    let [b, a] = verdicts[..] else { return Exit::RigError.into() };
    print(&render_before_after(b, a));
    for v in [b, a] {
        if let Some(line) = render(v, Format::Human).ok().and_then(|t| t.lines().last().map(str::to_owned)) {
            print(&format!("{} {line}\n", v.run.name));
        }
    }
    if !pictures(&sides[0], &sides[1]) {
        return Exit::RigError.into();
    }
    [b, a].iter().map(|v| Exit::of(v.status)).max().unwrap_or(Exit::Pass).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn rig_cmdline_refuses_the_agents_own_items() {
        assert_eq!(rig_cmdline_item("initcall_debug").as_deref(), Ok("initcall_debug"));
        let e = rig_cmdline_item("manarig.channels=4").expect_err("agent item");
        assert!(
            matches!(&e, super::super::boot::CmdlineItemError::AgentItem { instead, .. } if instead.contains("--channels N")),
            "{e}"
        );
        assert!(rig_cmdline_item("a b").is_err());
        assert!(rig_cmdline_item("x=\"y manarig.load=z\"").is_err(), "hidden in a quoted value");
        assert!(rig_cmdline_item("dyndbg=\"module mana +p\"").is_ok());
    }

    /// `run` and `compare` parsed from `args` (after the command and a topology).
    fn traffic_of_both(args: &[&str]) -> [Option<crate::traffic::TrafficOptions>; 2] {
        let parse = |command: &str| {
            let argv = ["manarig", command, "topologies/seed-002.toml"].into_iter().chain(args.iter().copied());
            let cli = super::super::Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{command} {args:?}: {e}"));
            match cli.command {
                super::super::Command::Run(a) => a.traffic.options(),
                super::super::Command::Compare(a) => a.traffic.options(),
                other => panic!("{other:?}"),
            }
        };
        [parse("run"), parse("compare")]
    }

    #[test]
    fn run_takes_a_monitor_socket_into_its_request() {
        let argv = ["manarig", "run", "topologies/seed-002.toml", "--monitor", "/tmp/m.sock"];
        let cli = super::super::Cli::try_parse_from(argv).expect("parses");
        let super::super::Command::Run(a) = cli.command else { panic!("not a run") };
        let req = a.rig.request_with_model(std::path::Path::new("t.toml"), crate::model::KernelGen::V6_1, None);
        assert_eq!(req.monitor.as_deref(), Some(std::path::Path::new("/tmp/m.sock")));
    }

    #[test]
    fn run_and_compare_parse_the_same_traffic_flags_to_the_same_options() {
        use crate::traffic::{TrafficOptions, DEFAULT_BYTES, DEFAULT_SECONDS};
        let opts = |flows, bytes, seconds| Some(TrafficOptions { flows, bytes, limit: Duration::from_secs(seconds) });
        let cases: [(&[&str], Option<TrafficOptions>); 6] = [
            (&[], None),
            (&["--traffic"], opts(None, DEFAULT_BYTES, DEFAULT_SECONDS)),
            (&["--traffic", "0"], opts(None, DEFAULT_BYTES, DEFAULT_SECONDS)),
            (&["--traffic", "3"], opts(Some(3), DEFAULT_BYTES, DEFAULT_SECONDS)),
            (&["--traffic=5", "--traffic-bytes", "16384", "--traffic-seconds", "7"], opts(Some(5), 16384, 7)),
            // A limit of 0 s would stop the flows before they start: at least 1 s.
            (&["--traffic-seconds", "0", "--traffic"], opts(None, DEFAULT_BYTES, 1)),
        ];
        for (args, want) in cases {
            let [run, compare] = traffic_of_both(args);
            assert_eq!(run, want, "run {args:?}");
            assert_eq!(compare, run, "compare {args:?}");
        }
        // Both refuse the byte and time options without --traffic, a FLOWS that is not a number,
        // and flows of 0 bytes (nothing would be checked).
        for args in [
            &["--traffic-bytes", "1"][..],
            &["--traffic-seconds", "1"],
            &["--traffic", "many"],
            &["--traffic", "--traffic-bytes", "0"],
        ] {
            for command in ["run", "compare"] {
                let argv = ["manarig", command, "topologies/seed-002.toml"].into_iter().chain(args.iter().copied());
                assert!(super::super::Cli::try_parse_from(argv).is_err(), "{command} {args:?}");
            }
        }
    }
}
