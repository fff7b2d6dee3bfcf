//! The `setup` subcommand (`manarig setup`, `cargo xtask setup`).

use super::Exit;
use crate::provision::lock::kernel_name;
use crate::provision::UsedPackage;
use crate::text::plural_as;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `setup`.
#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// Cache folder (default: $MANARIG_CACHE, else $XDG_CACHE_HOME/manarig, else ~/.cache/manarig).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Move every pin (QEMU, kernels, kernel sources, busybox, ethtool,
    /// irqbalance, and the `[arm64]` section's) to the newest version of its track, rewriting
    /// guest-images/kernels.lock and kernel-sources.lock in the source tree
    /// (each change printed, old -> new), then provision.
    #[arg(long)]
    pub update_lock: bool,
    /// Use the private trixie-backports QEMU even if the host's qualifies.
    #[arg(long)]
    pub private_qemu: bool,
    /// The guests' architecture to provision: x86_64 (the default) or arm64
    /// (qemu-system-aarch64, UEFI firmware, arm64 kernels, busybox and
    /// ethtool into `<cache>/arm64`; the lock's `[arm64]` section).
    #[arg(long, value_name = "ARCH", default_value = "x86_64")]
    pub arch: crate::topology::Arch,
}

/// Run `setup`: progress lines on stderr, a summary on stdout; exit 0 or 2.
pub fn run(args: &SetupArgs) -> ExitCode {
    let start = std::time::Instant::now();
    let result = crate::provision::cache_dir(args.cache_dir.as_deref()).and_then(|cache| {
        eprintln!("setup: cache {}", cache.display());
        let opts = crate::provision::SetupOptions {
            update_lock: args.update_lock,
            private_qemu: args.private_qemu,
            ..Default::default()
        };
        match args.arch {
            crate::topology::Arch::X86_64 => {
                crate::provision::setup(&cache, &opts, &mut |line| eprintln!("setup: {line}"))
            }
            crate::topology::Arch::Arm64 => {
                crate::provision::arm64::setup(&cache, &opts, &mut |line| eprintln!("setup: {line}"))
            }
        }
    });
    match result {
        Ok(p) => {
            println!("{}", p.qemu.describe());
            for k in p.kernels.values() {
                let pkgs: Vec<String> = k.packages.iter().map(UsedPackage::describe).collect();
                println!("kernel {}: {} {} ({})", kernel_name(&k.id), k.release, k.vmlinuz.display(), pkgs.join(", "));
            }
            println!("busybox: {} {}", p.busybox.package.describe(), p.busybox.binary.display());
            let fallbacks = p.fallbacks();
            if !fallbacks.is_empty() {
                println!(
                    "{} the lock's pins (gone from the archive); reports name the versions used; \
                     `cargo xtask setup --update-lock` pins them",
                    plural_as(fallbacks.len(), "package differs from", "packages differ from")
                );
            }
            eprintln!("setup: done in {:.2} s", start.elapsed().as_secs_f64());
            Exit::Pass.into()
        }
        Err(e) => {
            eprintln!("setup: error: {e}");
            Exit::RigError.into()
        }
    }
}
