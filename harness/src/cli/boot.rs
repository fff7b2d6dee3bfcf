//! The `boot` subcommand: boot a built-in machine on a provisioned kernel, print
//! the guest report and compare the observed topology with the declared one.
//! (Topology files come through the `run` command; this one is for checking the rig.)

use super::Exit;
use crate::accel::AccelChoice;
use crate::initramfs::Compression;
use crate::qemu::{boot, machines, BootRequest, MachineSpec, NicPlacement, NodeSpec, Speedups};
use crate::text::plural;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `boot`.
#[derive(Debug, clap::Args)]
pub struct BootArgs {
    /// Built-in machine: `seed-002`, `r17`, or `grid-SxCxT` / `grid-SxDxCxT` (S
    /// sockets of D dies of C cores of T threads, one node per socket, distance
    /// 20), with optional variants `:nonode` (NIC slot on pcie.0), `:cpuonly`
    /// (last node without memory), `:memnode` (an extra memory-only node).
    #[arg(long, default_value = "seed-002")]
    pub machine: String,
    /// Kernel, as for `run`: 6.1, 6.12 or 7.x (the pinned Debian kernels), 6.1-min,
    /// 6.12-min or 7.x-min (built on first use), build:KEY or image:BZIMAGE:MODULES_DIR.
    #[arg(long, default_value = "6.12")]
    pub kernel: crate::rig::kernel_choice::KernelChoice,
    /// Accelerator: tcg (default; single- or multi-threaded by vCPU count),
    /// tcg-single, tcg-multi, kvm, auto.
    #[arg(long, default_value = "tcg")]
    pub accel: AccelChoice,
    /// Load mana in the guest.
    #[arg(long)]
    pub load_mana: bool,
    /// PCI id (`VENDOR[:DEVICE]`, hex) of the device whose MSI-X vectors the guest
    /// reports, e.g. `0x1b36:0x0010` for QEMU's NVMe given with `--device` (default: Microsoft's 0x1414).
    #[arg(long, value_name = "VENDOR[:DEVICE]")]
    pub nic_id: Option<crate::guest_protocol::PciId>,
    /// MiB of RAM per node.
    #[arg(long, default_value_t = 256)]
    pub mem_per_node: u32,
    /// gzip the initramfs.
    #[arg(long)]
    pub gzip: bool,
    /// Host deadline in seconds.
    #[arg(long, default_value_t = 600)]
    pub deadline: u64,
    /// Write the console here.
    #[arg(long)]
    pub console: Option<PathBuf>,
    /// QEMU's human monitor on this unix socket while the guest runs (see `run --monitor`).
    #[arg(long, value_name = "SOCKET")]
    pub monitor: Option<PathBuf>,
    /// Extra `-device` for QEMU (repeatable), e.g. the vfio-user-pci NIC on bus rp0.
    #[arg(long = "device")]
    pub devices: Vec<String>,
    /// Extra kernel command-line item (repeatable), e.g. `ignore_loglevel`; not the
    /// guest agent's own items (`--load-mana`, `--nic-id` set those).
    #[arg(long = "cmdline", value_parser = boot_cmdline_item)]
    pub cmdline: Vec<String>,
    /// Cache folder (see `setup`).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// QEMU `-cpu` model (default: the rig's choice).
    #[arg(long)]
    pub cpu: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Boot without the speed-ups (see `run --no-speedups`).
    #[arg(long)]
    pub no_speedups: bool,
}

/// A `--cmdline` value that is not one item the rig may add.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CmdlineItemError {
    /// Empty, a control character, whitespace outside quotes or other than a
    /// space, or an odd number of quotes.
    #[error(
        "{item:?}: one kernel command-line item per --cmdline: no control characters, spaces only inside \
         \"double quotes\", quotes balanced"
    )]
    NotOneItem {
        /// The value given.
        item: String,
    },
    /// One of the guest agent's `manarig.*` items, which the rig sets itself.
    #[error("{item:?}: {owner}; use {instead} instead")]
    AgentItem {
        /// The value given.
        item: String,
        /// Who sets these items (`the guest agent's items are set by the rig itself`).
        owner: &'static str,
        /// The options that set them.
        instead: &'static str,
    },
}

/// A `--machine` that names no built-in machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MachineNameError {
    /// A grid larger than the CPUs Linux can have.
    #[error("machine {name:?}: more than {} CPUs (Linux's NR_CPUS limit manarig models)", crate::cpulist::MAX_CPUS)]
    TooManyCpus {
        /// The name given.
        name: String,
    },
    /// No such machine.
    #[error(
        "unknown machine {name:?}: seed-002, r17, grid-SxCxT, grid-SxDxCxT (variants :nonode, :cpuonly, :memnode)"
    )]
    Unknown {
        /// The name given.
        name: String,
    },
    /// No such variant.
    #[error("unknown machine variant {variant:?}: nonode, cpuonly, memnode")]
    UnknownVariant {
        /// The variant given.
        variant: String,
    },
}

/// One kernel command-line item as given to `--cmdline`: a single word, where
/// spaces may only stand inside double quotes (`dyndbg="module mana +p"`: the
/// kernel's parser, lib/cmdline.c `next_arg()`, keeps a quoted value whole and
/// splits the rest at whitespace, so an unquoted space or a newline would
/// silently make two items or end the line, and an unbalanced quote would
/// swallow the items after it).
///
/// # Errors
/// [`CmdlineItemError::NotOneItem`] for an empty item, a control character,
/// whitespace outside quotes or other than a space, or an odd number of quotes.
pub fn cmdline_item(s: &str) -> Result<String, CmdlineItemError> {
    let mut quoted = false;
    let mut ok = !s.is_empty();
    for c in s.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if quoted => {}
            c if c.is_whitespace() || c.is_control() => ok = false,
            _ => {}
        }
    }
    if !ok || quoted {
        return Err(CmdlineItemError::NotOneItem { item: s.to_owned() });
    }
    Ok(s.to_string())
}

/// A `--cmdline` item for `boot`: a single word ([`cmdline_item`]) that is not
/// one of the guest agent's items.
///
/// # Errors
/// As [`cmdline_item`], and [`CmdlineItemError::AgentItem`] for an agent item,
/// naming the options that set them.
pub fn boot_cmdline_item(s: &str) -> Result<String, CmdlineItemError> {
    let item = cmdline_item(s)?;
    // The guest agent splits /proc/cmdline at spaces, quotes or not.
    if item.split(' ').any(crate::guest_protocol::options::is_agent_item) {
        return Err(CmdlineItemError::AgentItem {
            item,
            owner: "the guest agent's items are set by the rig itself",
            instead: "--load-mana or --nic-id",
        });
    }
    Ok(item)
}

/// A built-in machine by name.
///
/// # Errors
/// [`MachineNameError`], listing the names there are.
pub fn builtin_machine(name: &str, mem_per_node: u32) -> Result<MachineSpec, MachineNameError> {
    let (base, variants) = name.split_once(':').unwrap_or((name, ""));
    let mut m = match base {
        "seed-002" => machines::seed_002(mem_per_node),
        "r17" => machines::r17(mem_per_node),
        other => match other.strip_prefix("grid-").map(|g| g.split('x').map(str::parse::<u32>).collect::<Vec<_>>()) {
            Some(v) if (3..=4).contains(&v.len()) && v.iter().all(|x| matches!(x, Ok(n) if *n > 0)) => {
                let n: Vec<u32> = v.into_iter().flatten().collect();
                // Checked before any list is built: a typo must not allocate gigabytes.
                let vcpus = n.iter().try_fold(1u32, |acc, x| acc.checked_mul(*x));
                if vcpus.is_none_or(|c| c > crate::cpulist::MAX_CPUS) {
                    return Err(MachineNameError::TooManyCpus { name: other.to_owned() });
                }
                let mut m = machines::grid(n[0], n[n.len() - 2], n[n.len() - 1], mem_per_node);
                if n.len() == 4 {
                    m.dies = n[1];
                    let per = n[1] * n[2] * n[3];
                    for (s, node) in m.nodes.iter_mut().enumerate() {
                        node.cpus = (s as u32 * per..(s as u32 + 1) * per).collect();
                    }
                }
                m
            }
            _ => return Err(MachineNameError::Unknown { name: other.to_owned() }),
        },
    };
    for variant in variants.split(':').filter(|v| !v.is_empty()) {
        match variant {
            "nonode" => m.nic = NicPlacement::NoNode,
            // The last node keeps its CPUs but gets no memory.
            "cpuonly" => {
                if let Some(last) = m.nodes.last_mut() {
                    last.mem_mib = 0;
                }
            }
            // One more node with memory and no CPUs, 30 away from all others.
            "memnode" => {
                let k = m.nodes.len();
                m.nodes.push(NodeSpec { cpus: vec![], mem_mib: mem_per_node });
                for row in &mut m.distances {
                    row.push(30);
                }
                m.distances.push((0..=k).map(|j| if j == k { 10 } else { 30 }).collect());
            }
            v => return Err(MachineNameError::UnknownVariant { variant: v.to_owned() }),
        }
    }
    Ok(m)
}

/// Run `boot`: exit 0 when the observed topology matches, 1 when it differs, 2 on rig errors.
pub fn run(args: &BootArgs) -> ExitCode {
    let rig = |err: &(dyn std::error::Error + 'static)| {
        eprintln!("boot: error: {}", crate::text::chain(err));
        Exit::RigError.into()
    };
    let mut spec = match builtin_machine(&args.machine, args.mem_per_node) {
        Ok(m) => m,
        Err(e) => return rig(&e),
    };
    spec.accel = args.accel;
    let prov = match crate::provision::cache_dir(args.cache_dir.as_deref()).and_then(|c| crate::provision::load(&c)) {
        Ok(p) => p,
        Err(e) => return rig(&e),
    };
    let resolved = match crate::rig::kernel_choice::resolve(&args.kernel, None, args.cache_dir.as_deref()) {
        Ok(r) => r,
        Err(e) => return rig(&e),
    };
    let kernel = match resolved.install(&prov) {
        Ok(k) => k,
        Err(e) => return rig(&e),
    };
    let mut req = BootRequest::new(&spec, kernel, &prov.busybox.binary);
    req.agent.load_mana = args.load_mana;
    req.agent.nic = args.nic_id;
    req.deadline = Duration::from_secs(args.deadline);
    req.console_log = args.console.clone();
    req.monitor = args.monitor.clone();
    req.extra_devices = args.devices.clone();
    req.extra_cmdline = args.cmdline.clone();
    if let Some(c) = &args.cpu {
        req.cpu_model = c.clone();
    }
    if args.no_speedups {
        req.speedups = Speedups::NONE;
    }
    if args.gzip {
        req.compression = Compression::Gzip;
    }
    let out = match boot(&prov.qemu, &req) {
        Ok(o) => o,
        Err(e) => return rig(&e),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out.report).unwrap_or_default());
    }
    eprintln!(
        "boot: {} on kernel {} ({}), accel {} speed-ups [{}], report after {:.1} s host time (guest /init start {:.2} s, report {:.2} s uptime)",
        args.machine,
        kernel.id,
        out.report.kernel,
        out.accel.qemu_arg(),
        out.speedups.names().join(","),
        out.to_report.as_secs_f64(),
        out.report.times.get("init").copied().unwrap_or(f64::NAN),
        out.report.times.get("report").copied().unwrap_or(f64::NAN),
    );
    let diffs = crate::guest_topology::compare(&spec, &out.report, &crate::cpulist::CpuMask::first_n(spec.vcpus()));
    if diffs.is_empty() {
        println!(
            "observed topology = declared topology ({}, {})",
            plural(spec.vcpus(), "CPU"),
            plural(spec.nodes.len(), "node")
        );
        Exit::Pass.into()
    } else {
        println!("observed topology differs from the declared one:");
        for d in &diffs {
            println!("  {d}");
        }
        Exit::Mismatch.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_grids_are_refused_before_anything_is_built() {
        for name in ["grid-1x65536x65536", "grid-99999999x99999x2", "grid-1x2x2x1073741824", "grid-2x4097x1"] {
            let e = builtin_machine(name, 256).expect_err(name);
            assert!(matches!(e, MachineNameError::TooManyCpus { .. }), "{name}: {e}");
        }
        assert_eq!(builtin_machine("grid-2x64x2", 256).expect("256 CPUs").vcpus(), 256);
    }

    #[test]
    fn cmdline_items_are_single_words() {
        assert_eq!(cmdline_item("ignore_loglevel").as_deref(), Ok("ignore_loglevel"));
        for bad in ["", "a b", "a\nb", "quiet\t", "x\u{7}", "a\"b", "dyndbg=\"x\ty\"", "x=\"a b\" c"] {
            assert!(cmdline_item(bad).is_err(), "{bad:?}");
        }
        // A quoted value keeps its spaces (lib/cmdline.c next_arg()).
        assert_eq!(cmdline_item("dyndbg=\"module mana +p\"").as_deref(), Ok("dyndbg=\"module mana +p\""));
        let e = boot_cmdline_item("manarig.nic=0x1b36").expect_err("agent item");
        assert!(matches!(e, CmdlineItemError::AgentItem { instead, .. } if instead.contains("--nic-id")), "{e}");
    }
}
