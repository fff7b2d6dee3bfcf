//! What arm64 guests boot with, provisioned into `<cache>/arm64` from the
//! lock's `[arm64]` section ([`super::lock::Arm64Pins`]), by the same rules
//! as the x86 parts (pins preferred, the newest of a pin's track when it has
//! left the archive, refused under `--locked`):
//!
//! - on the host side, through the amd64 apt root (`<cache>/apt`):
//!   `qemu-system-aarch64` from `qemu-system-arm`, unpacked with its
//!   dependency closure into `<cache>/arm64/qemu/<version>/root`, and the
//!   UEFI firmware (`<cache>/arm64/firmware/AAVMF_CODE.fd`), and the x86_64
//!   loader and libraries the flows tool loads (`<cache>/arm64/x86-libc`);
//! - on the guest side, through an arm64 apt root of its own
//!   (`<cache>/apt-arm64`, so that the amd64 root's indexes stay as they
//!   are): busybox, ethtool with its libraries, the cloud kernels, and
//!   `qemu-x86_64` from `qemu-user` (`<cache>/arm64/{busybox,ethtool,kernels,x86-user}`).
//!
//! The guest end of `--traffic` is the same x86_64 `manarig-flows` binary as
//! on x86 (this host has no aarch64 Rust standard library to build it with),
//! run in the arm64 guest under `qemu-x86_64` ([`X86UserMode`]): the sockets,
//! the TCP stack, the driver and the NIC are the arm64 kernel's; only the
//! tool's own user-space code is emulated.
//!
//! The result is a [`Provisioned`] like the x86 one, with `arch` arm64, the
//! firmware and [`X86UserMode`] set; it has no irqbalance and no selftest tools yet.

use super::lock::{Arm64Pins, Lock};
use super::qemu_install::{self, QemuInstall, QEMU_AARCH64};
use super::tools;
use super::SetupOptions;
use super::{apt, debian_kernel, read_stamp, write_stamp, CacheMiss, ProvisionError, Provisioned, Provisioner};
use crate::topology::Arch;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `<cache>/arm64`: where the arm64 guests' parts live.
pub fn dir(cache: &Path) -> PathBuf {
    cache.join("arm64")
}

/// The lock's `[arm64]` section, or the error that says it has none.
fn pins(lock: &Lock) -> Result<&Arm64Pins, ProvisionError> {
    lock.arm64
        .as_ref()
        .ok_or_else(|| ProvisionError::Package("guest-images/kernels.lock has no [arm64] section".into()))
}

/// Provision the arm64 guests' parts (see the module docs) and return them.
///
/// # Errors
/// As [`super::setup`]: apt and checksum failures, a pin gone under
/// `--locked`, a track with nothing left; a lock without `[arm64]`.
pub fn setup(cache: &Path, opts: &SetupOptions, progress: &mut dyn FnMut(&str)) -> Result<Provisioned, ProvisionError> {
    let home = dir(cache);
    std::fs::create_dir_all(&home).map_err(|e| ProvisionError::io(&home, e))?;
    let archive = match &opts.archive {
        Some(a) => a.clone(),
        None => apt::Archive::from_env()?,
    };
    let locked = opts.locked || super::fallback::locked();
    let lock;
    let pins;
    {
        let mut host = Provisioner::new(
            home.clone(),
            cache.join("apt"),
            "amd64",
            archive.clone(),
            opts.update_lock,
            locked,
            progress,
        );
        // `--update-lock --arch arm64`: both lock files rewritten (every pin of
        // both architectures), then the arm64 parts provisioned from them.
        lock = super::setup_lock(&mut host, cache, opts)?;
        pins = self::pins(&lock)?;
        let qemu = qemu_install::ensure_binary(&mut host, &pins.qemu, opts.private_qemu, QEMU_AARCH64)?;
        write_stamp(&home.join("qemu.json"), &qemu)?;
        tools::ensure_tools(&mut host, &[(tools::AAVMF, &pins.firmware), (tools::X86_LIBC, &pins.x86_libc)])?;
    }
    let mut guest = Provisioner::new(home.clone(), cache.join("apt-arm64"), "arm64", archive, false, locked, progress);
    tools::ensure_busybox(&mut guest, &pins.busybox)?;
    tools::ensure_tools(&mut guest, &[(tools::ETHTOOL_ARM64, &pins.ethtool), (tools::X86_USER, &pins.x86_user)])?;
    for pin in &pins.kernels {
        debian_kernel::ensure(&mut guest, pin)?;
    }
    load_with(cache, pins, locked)
}

/// Read what [`setup`] provisioned; never downloads.
///
/// # Errors
/// [`ProvisionError::NotProvisioned`] naming the missing or stale item (run
/// `cargo xtask setup --arch arm64`, or an arm64 run provisions it);
/// [`ProvisionError::LockedFallback`] under `--locked`.
pub fn load(cache: &Path) -> Result<Provisioned, ProvisionError> {
    load_with(cache, pins(&Lock::embedded()?)?, super::fallback::locked())
}

fn load_with(cache: &Path, pins: &Arm64Pins, locked: bool) -> Result<Provisioned, ProvisionError> {
    let home = dir(cache);
    let missing = |what: &str, why: CacheMiss| ProvisionError::NotProvisioned {
        what: format!("arm64 {what}"),
        cache: cache.to_path_buf(),
        why,
    };
    let qemu: QemuInstall = read_stamp(&home.join("qemu.json")).ok_or_else(|| missing("QEMU", CacheMiss::Missing))?;
    let qemu_file = qemu.executable();
    if qemu.binary != QEMU_AARCH64 || !qemu_file.is_file() {
        return Err(missing("QEMU", CacheMiss::Gone(qemu_file)));
    }
    let firmware = tools::load_tool(tools::AAVMF, &home, &pins.firmware).map_err(|why| missing("firmware", why))?;
    let busybox = tools::load_busybox(&home, &pins.busybox).map_err(|why| missing("busybox", why))?;
    let ethtool =
        tools::load_tool(tools::ETHTOOL_ARM64, &home, &pins.ethtool).map_err(|why| missing("ethtool", why))?;
    let x86_user = X86UserMode {
        emulator: tools::load_tool(tools::X86_USER, &home, &pins.x86_user)
            .map_err(|why| missing("qemu-x86_64", why))?,
        libraries: tools::load_tool(tools::X86_LIBC, &home, &pins.x86_libc)
            .map_err(|why| missing("x86_64 libraries", why))?,
    };
    let mut kernels = BTreeMap::new();
    for pin in &pins.kernels {
        let k = debian_kernel::load(&home, pin).map_err(|why| missing(&format!("kernel {}", pin.name()), why))?;
        kernels.insert(pin.id.clone(), k);
    }
    Provisioned {
        cache: cache.to_path_buf(),
        qemu,
        kernels,
        busybox,
        ethtool,
        irqbalance: None,
        selftest_tools: None,
        x86_user: Some(x86_user),
        arch: Arch::Arm64,
        firmware: firmware.files.first().map(|f| f.host.clone()),
    }
    .unless_locked_out(locked)
}

/// What an arm64 guest runs the x86_64 `manarig-flows` with: QEMU's
/// user-mode emulator (`qemu-x86_64`, a static arm64 binary) and the x86_64
/// loader and libraries the tool loads, at the x86 paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct X86UserMode {
    /// `qemu-x86_64` ([`tools::X86_USER`]), at `/usr/bin/qemu-x86_64`.
    pub emulator: tools::InstalledTool,
    /// The loader and libraries ([`tools::X86_LIBC`]).
    pub libraries: tools::InstalledTool,
}

/// Where the guest finds the x86_64 `manarig-flows` itself: `/sbin/manarig-flows`
/// is [`flows_launcher`], which runs this under [`EMULATOR`].
pub const FLOWS_X86_64: &str = "usr/lib/manarig/manarig-flows.x86_64";

/// The emulator's path in the guest ([`tools::X86_USER_FILES`]).
pub const EMULATOR: &str = "/usr/bin/qemu-x86_64";

/// The `/sbin/manarig-flows` of an arm64 guest: a busybox `sh` script that
/// runs the x86_64 binary ([`FLOWS_X86_64`]) under [`EMULATOR`] with the
/// arguments it was given, `argv[0]` kept (`-0`), so that the agent starts
/// the flows tool the same way on both architectures. `exec`: the emulator
/// takes the script's pid, and its exit status and signals are the tool's.
pub fn flows_launcher(bin_name: &str) -> String {
    format!("#!/bin/sh\nexec {EMULATOR} -0 {bin_name} /{FLOWS_X86_64} \"$@\"\n")
}

impl X86UserMode {
    /// The packages they came from, against their pins.
    pub fn packages(&self) -> impl Iterator<Item = &super::used::UsedPackage> {
        self.emulator.packages.iter().chain(self.libraries.packages.iter())
    }

    /// Their initramfs files: the emulator, then the loader and libraries.
    pub fn files(&self) -> impl Iterator<Item = &tools::GuestFile> {
        self.emulator.files.iter().chain(self.libraries.files.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_lock_pins_arm64_kernels_under_the_x86_ids() {
        let lock = Lock::embedded().expect("lock");
        let a = pins(&lock).expect("[arm64]");
        let ids: Vec<&str> = a.kernels.iter().map(|k| k.id.as_str()).collect();
        assert_eq!(ids, ["6.12", "7"]);
        assert!(a.kernels.iter().all(|k| k.release.ends_with("-cloud-arm64") && k.track.ends_with("-cloud-arm64")));
        // The same QEMU as the x86 guests', from the arm package.
        assert_eq!(
            (a.qemu.version.as_str(), a.qemu.suite.as_str()),
            (lock.qemu.version.as_str(), lock.qemu.suite.as_str())
        );
        assert_eq!(a.qemu.package, "qemu-system-arm");
        // The flows tool's emulator: the same QEMU release, the x86 guests' libc6.
        assert_eq!(a.x86_user.packages[0].name, "qemu-user");
        assert_eq!(a.x86_user.packages[0].version, a.qemu.version);
        let x86_libc = lock.ethtool.packages.iter().find(|p| p.name == "libc6").expect("[ethtool] libc6");
        assert_eq!(&a.x86_libc.packages[0], x86_libc, "the amd64 libc6 of [ethtool]");
    }

    #[test]
    fn the_flows_launcher_runs_the_x86_64_binary_under_the_emulator_with_its_arguments() {
        let script = flows_launcher("manarig-flows");
        assert_eq!(
            script,
            "#!/bin/sh\nexec /usr/bin/qemu-x86_64 -0 manarig-flows /usr/lib/manarig/manarig-flows.x86_64 \"$@\"\n"
        );
        // The emulator's guest path is where its tool unpacks it.
        assert!(tools::X86_USER_FILES.iter().any(|&(_, guest)| format!("/{guest}") == EMULATOR));
    }

    #[test]
    fn an_empty_cache_says_what_is_missing_for_arm64() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = load(dir.path()).expect_err("nothing there");
        assert!(
            matches!(&err, ProvisionError::NotProvisioned { what, why: CacheMiss::Missing, .. } if what == "arm64 QEMU"),
            "{err}"
        );
    }

    #[test]
    fn a_lock_without_arm64_is_a_clear_error() {
        let text = super::super::lock::EMBEDDED_LOCK;
        let cut = text.find("[arm64.qemu]").expect("section");
        // Drop the comment block before it too: it ends at the previous blank line.
        let lock = Lock::parse(&text[..cut], "t.lock").expect("x86 part parses alone");
        assert!(lock.arm64.is_none());
        assert!(matches!(pins(&lock), Err(ProvisionError::Package(m)) if m.contains("[arm64]")));
    }
}
