//! The flows tool's files in the guest's initramfs, started by the agent as
//! `/sbin/manarig-flows` on both architectures: on x86 the binary itself; on
//! arm64 (no aarch64 build of it here) a launcher that runs the same x86_64
//! binary under QEMU's user-mode emulator, with the emulator and the x86_64
//! libraries beside it ([`provision::arm64::X86UserMode`]).

use super::request::RunRequest;
use crate::provision::{self, arm64, tools::GuestFile, Provisioned};
use std::path::{Path, PathBuf};

/// Guest RAM per node, MiB, that an arm64 guest with traffic gets at least:
/// the emulator, the x86_64 libraries and the binary stay in its initramfs
/// (about 19 MiB), and measured on `arm64/cobalt-16.toml` (one node) with
/// Linux 7.3.4 at the default 256 MiB, the guest's OOM killer ended
/// `qemu-x86_64` (12 MiB anonymous) in the middle of the flows.
pub const ARM64_TRAFFIC_MEM_MIB: u32 = 512;

/// How many times the asked limit (`--traffic-seconds`) the flows get on an
/// arm64 guest: its end runs under `qemu-x86_64` inside a guest that TCG
/// already emulates; measured on `arm64/cobalt-16.toml` (32 flows of 8 KiB
/// each way), Linux 6.12's took 16 s beside light load, and at a load average
/// of 10 on the 2 host cores 7.x's did not finish in the default 20 s.
pub const ARM64_LIMIT_FACTOR: u32 = 4;

/// `req` as an arm64 guest with traffic runs it: at least
/// [`ARM64_TRAFFIC_MEM_MIB`] per node, the flows' limit times
/// [`ARM64_LIMIT_FACTOR`]; a run without traffic as it is.
pub(super) fn arm64_request(req: &RunRequest) -> RunRequest {
    let mut out = req.clone();
    if let Some(t) = &mut out.traffic {
        t.limit = t.limit.saturating_mul(ARM64_LIMIT_FACTOR);
        out.mem_per_node_mib = out.mem_per_node_mib.max(ARM64_TRAFFIC_MEM_MIB);
    }
    out
}

/// The launcher's file name in the run's folder.
const LAUNCHER: &str = "manarig-flows.launcher";

/// The flows tool's guest files could not be laid out.
#[derive(Debug, thiserror::Error)]
pub enum FlowsGuestError {
    /// An arm64 cache without the emulator (it predates the lock's `[arm64.x86_user]`).
    #[error("{}: no qemu-x86_64 for the arm64 guest's flows tool: run `cargo xtask setup --arch arm64`", cache.display())]
    NoEmulator {
        /// The cache folder.
        cache: PathBuf,
    },
    /// The launcher cannot be written into the run's folder.
    #[error("{}: {error}", path.display())]
    Write {
        /// The launcher's path.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

/// The initramfs files that give the guest `/sbin/manarig-flows` from the
/// host's x86_64 binary `bin`: the binary itself on x86; on arm64 the
/// launcher ([`arm64::flows_launcher`], written into `run_dir`), the binary
/// at [`arm64::FLOWS_X86_64`], `qemu-x86_64` and the x86_64 libraries.
///
/// # Errors
/// [`FlowsGuestError`]: an arm64 cache without the emulator, or the launcher
/// cannot be written.
pub(super) fn guest_files(prov: &Provisioned, bin: &Path, run_dir: &Path) -> Result<Vec<GuestFile>, FlowsGuestError> {
    let sbin = format!("sbin/{}", manarig_flows::BIN);
    if prov.arch == crate::topology::Arch::X86_64 {
        // Needs only libc and the loader, which ethtool brings.
        return Ok(vec![GuestFile { guest_path: sbin, host: bin.to_path_buf(), mode: 0o755 }]);
    }
    let emulation = prov.x86_user.as_ref().ok_or_else(|| FlowsGuestError::NoEmulator { cache: prov.cache.clone() })?;
    let launcher = run_dir.join(LAUNCHER);
    std::fs::write(&launcher, arm64::flows_launcher(manarig_flows::BIN))
        .map_err(|error| FlowsGuestError::Write { path: launcher.clone(), error })?;
    let mut files = vec![
        GuestFile { guest_path: sbin, host: launcher, mode: 0o755 },
        GuestFile { guest_path: arm64::FLOWS_X86_64.to_owned(), host: bin.to_path_buf(), mode: 0o755 },
    ];
    files.extend(emulation.files().cloned());
    Ok(files)
}

/// The tool names [`Provisioned::run_packages`] takes for the flows tool's
/// guest files on `prov`'s architecture: none of their own on x86.
pub(super) fn packages_tool(prov: &Provisioned) -> Option<&'static str> {
    prov.x86_user.as_ref().map(|_| provision::tools::X86_USER.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::TrafficOptions;
    use std::time::Duration;

    fn request(traffic: Option<TrafficOptions>) -> RunRequest {
        let mut req = RunRequest::new("t.toml", crate::model::KernelGen::V6_12);
        req.traffic = traffic;
        req
    }

    #[test]
    fn an_arm64_run_with_traffic_gets_four_times_the_limit_and_at_least_512_mib_a_node() {
        let limit = Duration::from_secs(20);
        let req = request(Some(TrafficOptions { limit, ..TrafficOptions::default() }));
        let out = arm64_request(&req);
        assert_eq!(out.traffic.as_ref().map(|t| t.limit), Some(Duration::from_secs(80)));
        assert_eq!(out.mem_per_node_mib, 512);
        let mut big = req.clone();
        big.mem_per_node_mib = 1024;
        assert_eq!(arm64_request(&big).mem_per_node_mib, 1024, "more memory asked for is kept");
    }

    #[test]
    fn an_arm64_run_without_traffic_is_left_as_it_is() {
        let out = arm64_request(&request(None));
        assert_eq!(out.mem_per_node_mib, request(None).mem_per_node_mib);
        assert!(out.traffic.is_none());
    }
}
