//! `guest-images/kernels.lock`: which Debian packages make up the guest parts.
//!
//! The lock pins every guest kernel and busybox by package name, version and the
//! SHA-256 of the `.deb`; QEMU by package name and version (its dependency
//! closure is resolved by apt from the signed archive indexes).
//!
//! A pin is a preference, not a precondition: each section also names its
//! *track*, what may stand in for it once Debian has dropped the pinned version
//! (`super::fallback`): QEMU, any version of the package at least
//! [`super::qemu_install::MIN_QEMU`] from the configured suites; a kernel, the
//! newest `linux-image-*` its `track` glob matches; busybox and the guest tools,
//! the newest of the same package names in the section's `suite`.

use crate::model::KernelGen;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The lock file shipped with the source tree, compiled in so that an installed
/// `manarig` binary needs no checkout.
pub const EMBEDDED_LOCK: &str = include_str!("../../../../../guest-images/kernels.lock");

/// Path of the lock file in the source tree (what `--update-lock` rewrites).
pub fn source_lock_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../guest-images/kernels.lock")
}

/// The whole lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// QEMU to provision when the host's is too old.
    pub qemu: QemuPin,
    /// busybox-static for the initramfs.
    pub busybox: BusyboxPin,
    /// ethtool and its shared libraries for the initramfs.
    pub ethtool: ToolPin,
    /// irqbalance and its shared libraries for the initramfs (`run --irqbalance`).
    pub irqbalance: ToolPin,
    /// The guest tools of selftest runs (Python, bash, iproute2, ethtool,
    /// socat, iperf3, ping and their libraries: [`super::selftest_tools`]).
    pub selftests: ToolPin,
    /// Guest kernels, selected by [`KernelPin::id`] (e.g. `--kernel 6.12`).
    #[serde(rename = "kernel")]
    pub kernels: Vec<KernelPin>,
    /// `[arm64]`: what arm64 guests boot with (provisioned on first use by an
    /// arm64 run, or by `cargo xtask setup --arch arm64`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm64: Option<Arm64Pins>,
}

/// `[arm64]`: the pins of arm64 guests, each with the same track and fallback
/// rules as its x86 counterpart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arm64Pins {
    /// `qemu-system-arm` (an amd64 host package with `qemu-system-aarch64`),
    /// from the same suite and version as `[qemu]`.
    pub qemu: QemuPin,
    /// The UEFI firmware QEMU's `virt` machine boots the kernel through
    /// (`qemu-efi-aarch64`, architecture `all`): with it QEMU gives the guest
    /// ACPI tables, which place the NIC's PCIe expander bridge on its node.
    pub firmware: ToolPin,
    /// arm64 busybox-static.
    pub busybox: BusyboxPin,
    /// arm64 ethtool and the libraries it loads.
    pub ethtool: ToolPin,
    /// `qemu-user` (arm64, statically linked): the guest's `qemu-x86_64`, which
    /// runs the x86_64 `manarig-flows` for `--traffic` ([`super::tools::X86_USER`]).
    pub x86_user: ToolPin,
    /// The amd64 libraries the x86_64 `manarig-flows` loads under emulation,
    /// with their loader ([`super::tools::X86_LIBC`]).
    pub x86_libc: ToolPin,
    /// The arm64 cloud kernels, by the same ids as the x86 ones.
    #[serde(rename = "kernel")]
    pub kernels: Vec<KernelPin>,
}

/// QEMU package pin (`[qemu]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QemuPin {
    /// Debian binary package, e.g. `qemu-system-x86`.
    pub package: String,
    /// Exact Debian version, e.g. `1:11.1.3+ds-1~bpo13+1`.
    pub version: String,
    /// Suite it comes from, e.g. `trixie-backports` (apt's `-t`, so that its
    /// dependencies may come from that suite too).
    pub suite: String,
}

/// One `.deb` pinned by name, version and SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackagePin {
    /// Debian binary package name.
    pub name: String,
    /// Exact Debian version (with epoch if any).
    pub version: String,
    /// Lower-case hex SHA-256 of the `.deb` file.
    pub sha256: String,
    /// The suite of this one package when it is not its section's: a
    /// package a suite of the section lacks (the selftests' ethtool from
    /// forky, [`super::apt::OPT_IN_SUITES`]); a fallback takes its newest
    /// version there. `None`: the section's suite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
}

impl PackagePin {
    /// The suite this package comes from: its own, else `section`'s.
    pub fn suite_or<'a>(&'a self, section: &'a str) -> &'a str {
        self.suite.as_deref().unwrap_or(section)
    }
}

/// busybox pin (`[busybox]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BusyboxPin {
    /// Package name `--update-lock` and a fallback follow.
    pub track: String,
    /// The suite a fallback takes it from (`trixie`).
    pub suite: String,
    /// The pinned package.
    pub package: PackagePin,
}

/// A guest tool and the packages of its shared libraries (`[ethtool]`, `[irqbalance]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPin {
    /// The suite every package comes from (`trixie`); a fallback resolves the
    /// whole list again in it, never mixing old and new versions.
    pub suite: String,
    /// The tool's package first, then the libraries'.
    pub packages: Vec<PackagePin>,
}

/// One guest kernel (`[[kernel]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelPin {
    /// Short id used on the command line and in test names: `6.1`, `6.12`, `7`.
    pub id: String,
    /// `uname -r` of the kernel, which names `/lib/modules/<release>`.
    pub release: String,
    /// Glob (`*` only) over `linux-image-*` package names that `--update-lock`
    /// follows to the newest version.
    pub track: String,
    /// The packages holding vmlinuz and the modules (one for 6.x; `linux-binary-*`
    /// and `linux-modules-*` for Debian's 7.x).
    pub packages: Vec<PackagePin>,
}

impl KernelPin {
    /// The name `--kernel` and README give this kernel: its generation's name for the
    /// lock's ids (`6.1`, `6.12`; `7` → `7.x`), else the id itself.
    pub fn name(&self) -> String {
        kernel_name(&self.id)
    }
}

/// The name `--kernel` and README give the pinned kernel with lock id `id` (`7` →
/// `7.x`; `6.1` and `6.12` stay): the [`KernelGen`] name when it begins with the id,
/// else the id.
pub fn kernel_name(id: &str) -> String {
    match id.parse::<KernelGen>() {
        Ok(g) if g.as_str().starts_with(id) => g.as_str().to_owned(),
        _ => id.to_owned(),
    }
}

/// Errors reading the lock file.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The TOML does not parse or misses fields.
    #[error("{origin}: {error}")]
    Parse {
        /// Where the text came from.
        origin: String,
        /// The TOML error (with line and column).
        error: toml::de::Error,
    },
    /// A value is out of shape.
    #[error("{origin}: {what}")]
    Invalid {
        /// Where the text came from.
        origin: String,
        /// What is wrong.
        what: String,
    },
}

impl Lock {
    /// Parse and validate lock text; `origin` names it in errors.
    ///
    /// # Errors
    /// [`LockError`] on bad TOML, a SHA-256 that is not 64 hex digits, a duplicate
    /// or empty kernel id, or a kernel without packages.
    pub fn parse(text: &str, origin: &str) -> Result<Lock, LockError> {
        let lock: Lock =
            toml::from_str(text).map_err(|source| LockError::Parse { origin: origin.to_string(), error: source })?;
        let invalid = |what: String| LockError::Invalid { origin: origin.to_string(), what };
        let arm64 = lock.arm64.as_ref();
        for (section, kernels) in std::iter::once(("", &lock.kernels)).chain(arm64.map(|a| ("arm64 ", &a.kernels))) {
            let mut ids = std::collections::BTreeSet::new();
            for k in kernels {
                if k.id.is_empty() || !ids.insert(k.id.as_str()) {
                    return Err(invalid(format!("{section}kernel id {:?} is empty or repeated", k.id)));
                }
                if k.packages.is_empty() {
                    return Err(invalid(format!("{section}kernel {}: no packages", k.id)));
                }
            }
        }
        if let Some(a) = arm64 {
            for (tool, pin) in [("arm64 firmware", &a.firmware), ("arm64 ethtool", &a.ethtool)] {
                if pin.packages.is_empty() {
                    return Err(invalid(format!("{tool}: no packages")));
                }
            }
        }
        for (tool, pin) in
            [("ethtool", &lock.ethtool), ("irqbalance", &lock.irqbalance), ("selftests", &lock.selftests)]
        {
            if pin.packages.is_empty() {
                return Err(invalid(format!("{tool}: no packages")));
            }
        }
        for p in lock
            .kernels
            .iter()
            .flat_map(|k| k.packages.iter())
            .chain(std::iter::once(&lock.busybox.package))
            .chain(lock.ethtool.packages.iter())
            .chain(lock.irqbalance.packages.iter())
            .chain(lock.selftests.packages.iter())
            .chain(arm64.into_iter().flat_map(|a| {
                a.kernels
                    .iter()
                    .flat_map(|k| k.packages.iter())
                    .chain(std::iter::once(&a.busybox.package))
                    .chain(a.firmware.packages.iter())
                    .chain(a.ethtool.packages.iter())
            }))
        {
            if p.sha256.len() != 64 || !p.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid(format!(
                    "package {} {}: sha256 {:?} is not 64 hex digits",
                    p.name, p.version, p.sha256
                )));
            }
        }
        Ok(lock)
    }

    /// The lock compiled into this binary.
    ///
    /// # Errors
    /// [`LockError`] if the shipped file is broken (a build-time mistake).
    pub fn embedded() -> Result<Lock, LockError> {
        Lock::parse(EMBEDDED_LOCK, "guest-images/kernels.lock")
    }

    /// The kernel pinned under `id`.
    pub fn kernel(&self, id: &str) -> Option<&KernelPin> {
        self.kernels.iter().find(|k| k.id == id)
    }
}

/// Does `name` match `pattern`, where `*` matches any run of characters?
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_lock_parses_and_pins_the_three_kernels() {
        let lock = Lock::embedded().expect("shipped lock parses");
        // The three kernel lines the README names: 6.1, 6.12 and the newest 7.x.
        for id in ["6.1", "6.12", "7"] {
            assert!(lock.kernel(id).is_some(), "kernel {id} pinned");
        }
        assert_eq!(lock.busybox.package.name, "busybox-static");
        // setup names them as `--kernel` and README do.
        let names: Vec<String> = lock.kernels.iter().map(KernelPin::name).collect();
        assert_eq!(names, ["6.1", "6.12", "7.x"]);
        assert_eq!(kernel_name("6.9"), "6.9", "an id that is not a generation's name stays");
    }

    #[test]
    fn bad_sha256_is_rejected_with_the_package_name() {
        let text = EMBEDDED_LOCK.replace("598a3fd92bdafc34cd81196b2952ad36e910e47a4ecf162f8ce5e8e262598e53", "xyz");
        let err = Lock::parse(&text, "t.lock").expect_err("must fail");
        assert!(
            matches!(&err, LockError::Invalid { origin, what } if origin == "t.lock" && what.contains("busybox-static")),
            "{err}"
        );
    }

    #[test]
    fn glob_matches_debian_kernel_names() {
        assert!(glob_match("linux-image-6.1.0-*-cloud-amd64", "linux-image-6.1.0-57-cloud-amd64"));
        assert!(!glob_match("linux-image-6.1.0-*-cloud-amd64", "linux-image-6.1.0-57-cloud-amd64-unsigned"));
        assert!(glob_match("busybox-static", "busybox-static"));
        assert!(!glob_match("a*b*c", "ac"));
    }
}
