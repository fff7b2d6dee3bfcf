//! irqbalance in a run's guest (`--irqbalance`, `[scenario] irqbalance`): its
//! sampling time, its files in the initramfs, and the refusal when the guest
//! kernel cannot run it.

use crate::provision::Provisioned;
use crate::qemu::BootRequest;
use std::path::{Path, PathBuf};

/// irqbalance cannot run in the guest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IrqbalanceError {
    /// The cache has no irqbalance (provisioned before the lock pinned it).
    #[error(
        "{}: irqbalance is not provisioned in {} (the cache predates the lock's [irqbalance]): run `cargo xtask \
         setup`",
        topology.display(),
        cache.display()
    )]
    NotProvisioned {
        /// The topology file that asks for it.
        topology: PathBuf,
        /// The cache folder.
        cache: PathBuf,
    },
    /// The guest kernel has no AF_UNIX sockets.
    #[error(
        "irqbalance cannot run on Linux {release}: the kernel has no AF_UNIX sockets (no /proc/net/unix: \
         CONFIG_UNIX), without which irqbalance 1.9 exits at start (\"Socket couldn't be created.\")"
    )]
    NoAfUnix {
        /// The guest kernel's release.
        release: String,
    },
}

/// Guest seconds the agent samples the NIC's IRQs while irqbalance runs
/// (`manarig.irqbalance`, one sample a second): irqbalance 1.9 with
/// `--interval=1` places IRQs at its first scan, a second or two after it
/// starts, and moves them again only as their load changes.
pub const IRQBALANCE_SAMPLE_S: u32 = 5;

/// irqbalance and its libraries into the initramfs (a library ethtool already
/// brings is not added twice) and `manarig.irqbalance` for the agent.
///
/// # Errors
/// [`IrqbalanceError::NotProvisioned`] when the cache has no irqbalance
/// (provisioned before the lock pinned it).
pub(super) fn add_irqbalance(
    boot: &mut BootRequest<'_>,
    prov: &Provisioned,
    topology: &Path,
) -> Result<(), IrqbalanceError> {
    let Some(files) = &prov.irqbalance else {
        return Err(IrqbalanceError::NotProvisioned { topology: topology.to_path_buf(), cache: prov.cache.clone() });
    };
    for f in &files.files {
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
/// [`kernel_choice::irqbalance_refusal`](super::kernel_choice::irqbalance_refusal)).
///
/// # Errors
/// [`IrqbalanceError::NoAfUnix`] when the report says `irqbalance: no-af-unix`.
pub(super) fn irqbalance_usable(report: &crate::guest_protocol::GuestReport) -> Result<(), IrqbalanceError> {
    if report.irqbalance.state == Some(crate::guest_protocol::IrqbalanceState::NoAfUnix) {
        return Err(IrqbalanceError::NoAfUnix { release: report.kernel.clone() });
    }
    Ok(())
}
