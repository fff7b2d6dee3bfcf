//! Which `qemu-system-x86_64` the rig runs, and how to start it.
//!
//! The rig needs QEMU >= 10.1 (the first with `vfio-user-pci`). The host's
//! binary is used when it is new enough; otherwise Debian trixie-backports'
//! build, unpacked into a private prefix and run through that prefix's own
//! dynamic loader (the host glibc is older than the one it was built against).
//! When the pinned build has left the archive, the newest version of the
//! package at least [`MIN_QEMU`] from the configured suites stands in for it
//! (`ensure`).

use super::fallback::{self, Fallback};
use super::lock::{PackagePin, QemuPin};
use super::used::UsedPackage;
use super::{apt, read_stamp, write_stamp, ProvisionError, Provisioner};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The x86 guests' QEMU binary.
pub const QEMU_X86: &str = "qemu-system-x86_64";
/// The arm64 guests' QEMU binary (Debian's `qemu-system-arm` package).
pub const QEMU_AARCH64: &str = "qemu-system-aarch64";

fn x86_binary() -> String {
    QEMU_X86.to_owned()
}

/// Oldest QEMU (major, minor) with the `vfio-user-pci` device.
pub const MIN_QEMU: (u32, u32) = (10, 1);

/// Why a QEMU that runs does not qualify ([`QemuInstall::probe`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unqualified {
    /// `--version` printed no version this reads.
    #[error("cannot read a version from {line:?}")]
    NoVersion {
        /// Its first line.
        line: String,
    },
    /// Older than [`MIN_QEMU`].
    #[error("{}.{}.{} is older than {}.{}", version.0, version.1, version.2, MIN_QEMU.0, MIN_QEMU.1)]
    TooOld {
        /// Its version.
        version: (u32, u32, u32),
    },
    /// `-device help` lists no `vfio-user-pci`.
    #[error("no vfio-user-pci device")]
    NoVfioUser,
}

/// Where the QEMU comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum QemuSource {
    /// A `qemu-system-x86_64` found on the host (absolute path).
    System {
        /// The binary.
        binary: PathBuf,
    },
    /// Debian's package unpacked under `prefix` (a tree with `usr/`).
    Private {
        /// The unpacked tree.
        prefix: PathBuf,
    },
}

impl std::fmt::Display for QemuSource {
    /// `host binary /usr/bin/qemu-system-x86_64` or `private prefix <cache>/qemu/<version>/root`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QemuSource::System { binary } => write!(f, "host binary {}", binary.display()),
            QemuSource::Private { prefix } => write!(f, "private prefix {}", prefix.display()),
        }
    }
}

/// A usable QEMU: where it is and what version it reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QemuInstall {
    /// Host binary or private prefix.
    pub source: QemuSource,
    /// First line of `--version`, e.g. `QEMU emulator version 11.1.3 (Debian 1:11.1.3+ds-1~bpo13+1)`.
    pub version_line: String,
    /// Parsed (major, minor, micro).
    pub version: (u32, u32, u32),
    /// The Debian package of a private QEMU, against its pin; `None` for the host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<UsedPackage>,
    /// The system emulator's file name in a private prefix's `usr/bin`
    /// ([`QEMU_X86`], [`QEMU_AARCH64`]); stamps from before arm64 guests say
    /// nothing and mean x86.
    #[serde(default = "x86_binary")]
    pub binary: String,
}

impl QemuInstall {
    /// The QEMU executable itself: the system's binary, or
    /// `<prefix>/usr/bin/<binary>` in a private prefix.
    pub fn executable(&self) -> PathBuf {
        match &self.source {
            QemuSource::System { binary } => binary.clone(),
            QemuSource::Private { prefix } => prefix.join("usr/bin").join(&self.binary),
        }
    }

    /// A `Command` that runs this QEMU; append the machine's arguments.
    ///
    /// For a private prefix this is `<prefix>/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
    /// --library-path <libdir> <prefix>/usr/bin/qemu-system-x86_64 -L <share/qemu>
    /// -L <share/seabios>` with `QEMU_MODULE_DIR` set (both `-L` are needed: the
    /// BIOS lives in seabios' own directory).
    pub fn command(&self) -> Command {
        match &self.source {
            QemuSource::System { binary } => Command::new(binary),
            QemuSource::Private { prefix } => {
                let lib = prefix.join("usr/lib/x86_64-linux-gnu");
                let mut c = Command::new(lib.join("ld-linux-x86-64.so.2"));
                c.arg("--library-path")
                    .arg(&lib)
                    .arg(self.executable())
                    .arg("-L")
                    .arg(prefix.join("usr/share/qemu"))
                    .arg("-L")
                    .arg(prefix.join("usr/share/seabios"))
                    .env("QEMU_MODULE_DIR", lib.join("qemu"));
                c
            }
        }
    }

    /// One line for people: `QEMU 11.1.3 (Debian 1:11.1.3+ds-1~bpo13+1): private prefix
    /// <cache>/qemu/…/root` (the package note is what `--version` printed after the
    /// version, if anything).
    pub fn describe(&self) -> String {
        let (major, minor, micro) = self.version;
        let note = self
            .version_line
            .strip_prefix("QEMU emulator version ")
            .and_then(|rest| rest.split_once(' '))
            .map_or(String::new(), |(_, note)| format!(" {}", note.trim()));
        format!("QEMU {major}.{minor}.{micro}{note}: {}", self.source)
    }

    /// Probe a QEMU: run `--version` and `-device help`; `Ok(Some)` when it is at
    /// least [`MIN_QEMU`] and has `vfio-user-pci`, `Ok(None)` when it runs but
    /// does not qualify, with the reason in the second value.
    ///
    /// # Errors
    /// [`ProvisionError::Spawn`] when the binary cannot be started.
    pub fn probe(source: QemuSource) -> Result<Result<QemuInstall, Unqualified>, ProvisionError> {
        Self::probe_binary(source, QEMU_X86)
    }

    /// As [`QemuInstall::probe`], for the system emulator `binary` ([`QEMU_AARCH64`]).
    ///
    /// # Errors
    /// As [`QemuInstall::probe`].
    pub fn probe_binary(source: QemuSource, binary: &str) -> Result<Result<QemuInstall, Unqualified>, ProvisionError> {
        let mut probe = QemuInstall {
            source,
            version_line: String::new(),
            version: (0, 0, 0),
            package: None,
            binary: binary.to_owned(),
        };
        let out = probe
            .command()
            .arg("--version")
            .output()
            .map_err(|e| ProvisionError::spawn(&format!("{binary} --version"), e))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        probe.version_line = text.lines().next().unwrap_or("").to_string();
        let Some(version) = parse_version(&probe.version_line) else {
            return Ok(Err(Unqualified::NoVersion { line: probe.version_line }));
        };
        probe.version = version;
        if (version.0, version.1) < MIN_QEMU {
            return Ok(Err(Unqualified::TooOld { version }));
        }
        let out = probe
            .command()
            .args(["-device", "help"])
            .output()
            .map_err(|e| ProvisionError::spawn(&format!("{binary} -device help"), e))?;
        if !String::from_utf8_lossy(&out.stdout).contains("\"vfio-user-pci\"") {
            return Ok(Err(Unqualified::NoVfioUser));
        }
        Ok(Ok(probe))
    }
}

/// A private QEMU's stamp (`<cache>/qemu/<version>/stamp.json`).
#[derive(Serialize, Deserialize, PartialEq)]
struct PrivateQemuStamp {
    /// The lock's pin it stands for.
    pin: QemuPin,
    /// The unpacked dependency closure: (file name, SHA-256).
    debs: Vec<(String, String)>,
    /// The version unpacked, when a fallback took another than the pin's.
    #[serde(default)]
    fallback: Option<Fallback>,
}

/// The QEMU to run: the host's when it qualifies (unless `private_only`), else
/// the pinned Debian package unpacked into `<cache>/qemu/<version>/root` with
/// its dependency closure, or, when the pin has left the archive (and
/// `--locked` was not given), the newest version of the package that is at
/// least [`MIN_QEMU`] in any configured suite, probed for `vfio-user-pci`.
///
/// # Errors
/// Apt and unpack failures; [`ProvisionError::VersionGone`] for a gone pin
/// under `--locked`; [`ProvisionError::QemuGone`] or
/// [`ProvisionError::QemuUnqualified`] when nothing qualifies.
pub(crate) fn ensure(
    p: &mut Provisioner<'_>,
    pin: &QemuPin,
    private_only: bool,
) -> Result<QemuInstall, ProvisionError> {
    ensure_binary(p, pin, private_only, QEMU_X86)
}

/// As [`ensure`], for the system emulator `binary` of `pin`'s package
/// (`qemu-system-aarch64` of `qemu-system-arm`).
///
/// # Errors
/// As [`ensure`].
pub(crate) fn ensure_binary(
    p: &mut Provisioner<'_>,
    pin: &QemuPin,
    private_only: bool,
    binary: &str,
) -> Result<QemuInstall, ProvisionError> {
    if !private_only {
        if let Some(bin) = system_qemu_named(binary) {
            match QemuInstall::probe_binary(QemuSource::System { binary: bin.clone() }, binary)? {
                Ok(q) => {
                    p.say(&format!("qemu: using {}", q.describe()));
                    return Ok(q);
                }
                Err(why) => p.say(&format!("qemu: host {} does not qualify: {why}", bin.display())),
            }
        } else {
            p.say(&format!("qemu: no {binary} on PATH"));
        }
    }
    if let Some(q) = cached(&p.cache, pin, binary) {
        p.say(&format!("qemu: {} (cached)", q.describe()));
        return Ok(q);
    }
    let pinned =
        PackagePin { name: pin.package.clone(), version: pin.version.clone(), sha256: String::new(), suite: None };
    let (version, suite, fell) = if p.pins_available(std::slice::from_ref(&pinned))? {
        (pin.version.clone(), pin.suite.clone(), None)
    } else {
        let a = p.apt()?;
        let (version, suite) = fallback::newest_qemu(&a, &pin.package, (MIN_QEMU.0, MIN_QEMU.1))?
            .ok_or_else(|| ProvisionError::QemuGone { package: pin.package.clone(), version: pin.version.clone() })?;
        let using = PackagePin { version: version.clone(), ..pinned.clone() };
        let f = Fallback::new(&pinned, &using, &pin.suite);
        p.say(&f.to_string());
        (version, suite, Some(f))
    };
    let dir = p.cache.join("qemu").join(version.replace([':', '~', '+'], "_"));
    let prefix = dir.join("root");
    let a = p.apt()?;
    p.say(&format!(
        "qemu: downloading {}={version} from {suite} with its dependency closure (private apt root, host untouched)",
        pin.package
    ));
    let debs = a.download_closure(&pin.package, &version, &suite)?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| ProvisionError::io(&dir, e))?;
    }
    let mut listed = Vec::new();
    for deb in &debs {
        apt::extract_deb(deb, &prefix)?;
        let name = deb.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        listed.push((name, apt::sha256_file(deb)?));
    }
    p.say(&format!("qemu: unpacked {} packages into {}", debs.len(), prefix.display()));
    let mut q = QemuInstall::probe_binary(QemuSource::Private { prefix }, binary)?.map_err(|why| {
        ProvisionError::QemuUnqualified {
            package: pin.package.clone(),
            version: version.clone(),
            suite: suite.clone(),
            why,
        }
    })?;
    q.package = Some(used(pin, &version));
    write_stamp(&dir.join("stamp.json"), &PrivateQemuStamp { pin: pin.clone(), debs: listed, fallback: fell })?;
    // Point the pin's own folder at this one, so that the next setup finds it without apt.
    write_stamp(&pinned_dir(&p.cache, pin).with_extension("json"), &q)?;
    p.say(&format!("qemu: {} ready", q.describe()));
    Ok(q)
}

/// `<cache>/qemu/<pinned version>`: where the pin's own build lives.
fn pinned_dir(cache: &Path, pin: &QemuPin) -> PathBuf {
    cache.join("qemu").join(pin.version.replace([':', '~', '+'], "_"))
}

/// The QEMU provisioned for `pin` before (the pin's own build or its
/// fallback), when its stamp and binary are still there and it still runs.
fn cached(cache: &Path, pin: &QemuPin, binary: &str) -> Option<QemuInstall> {
    let dir = pinned_dir(cache, pin);
    let q: QemuInstall = read_stamp(&dir.with_extension("json")).or_else(|| {
        // A cache set up before fallbacks existed: the pin's own folder, no pointer.
        let source = QemuSource::Private { prefix: dir.join("root") };
        Some(QemuInstall {
            package: Some(used(pin, &pin.version)),
            ..QemuInstall::probe_binary(source, binary).ok()?.ok()?
        })
    })?;
    if q.binary != binary {
        return None;
    }
    let QemuSource::Private { prefix } = &q.source else { return None };
    let stamp: PrivateQemuStamp = read_stamp(&prefix.parent()?.join("stamp.json"))?;
    if &stamp.pin != pin {
        return None;
    }
    let probed = QemuInstall::probe_binary(q.source.clone(), binary).ok()?.ok()?;
    Some(QemuInstall { package: q.package, ..probed })
}

/// The package a private QEMU of `version` is, against `pin`.
fn used(pin: &QemuPin, version: &str) -> UsedPackage {
    UsedPackage {
        part: "qemu".to_owned(),
        name: pin.package.clone(),
        version: version.to_owned(),
        locked: (version != pin.version).then(|| format!("{} {}", pin.package, pin.version)),
    }
}

/// `qemu-system-x86_64` on `PATH`, if any.
pub fn system_qemu() -> Option<PathBuf> {
    system_qemu_named(QEMU_X86)
}

/// The system emulator `binary` on `PATH`, if any.
pub fn system_qemu_named(binary: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(binary)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Parse "QEMU emulator version 11.1.3 (…)" into (11, 1, 3).
fn parse_version(line: &str) -> Option<(u32, u32, u32)> {
    let v = line.strip_prefix("QEMU emulator version ")?.split_whitespace().next()?;
    let mut it = v.split('.').map(|n| n.parse::<u32>());
    Some((it.next()?.ok()?, it.next()?.ok()?, it.next().unwrap_or(Ok(0)).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_from_qemu_banners() {
        assert_eq!(parse_version("QEMU emulator version 11.1.3 (Debian 1:11.1.3+ds-1~bpo13+1)"), Some((11, 1, 3)));
        // Debian 12's QEMU, too old for vfio-user-pci.
        assert_eq!(parse_version("QEMU emulator version 7.2.15 (Debian 1:7.2+dfsg-7+deb12u7)"), Some((7, 2, 15)));
        assert_eq!(parse_version("qemu 9"), None);
    }

    #[test]
    fn describe_names_the_version_and_where_qemu_lives_in_words() {
        let q = QemuInstall {
            source: QemuSource::Private { prefix: "/c/q/root".into() },
            version_line: "QEMU emulator version 11.1.3 (Debian 1:11.1.3+ds-1~bpo13+1)".to_owned(),
            version: (11, 1, 3),
            package: None,
            binary: QEMU_X86.to_owned(),
        };
        assert_eq!(q.describe(), "QEMU 11.1.3 (Debian 1:11.1.3+ds-1~bpo13+1): private prefix /c/q/root");
        let q = QemuInstall {
            source: QemuSource::System { binary: "/usr/bin/qemu-system-x86_64".into() },
            version_line: "QEMU emulator version 10.1.0".to_owned(),
            version: (10, 1, 0),
            package: None,
            binary: QEMU_X86.to_owned(),
        };
        assert_eq!(q.describe(), "QEMU 10.1.0: host binary /usr/bin/qemu-system-x86_64");
    }

    #[test]
    fn private_command_goes_through_the_prefix_loader() {
        let q = QemuInstall {
            source: QemuSource::Private { prefix: "/c/q".into() },
            version_line: String::new(),
            version: (11, 1, 3),
            package: None,
            binary: QEMU_X86.to_owned(),
        };
        let c = q.command();
        assert_eq!(c.get_program(), "/c/q/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
        let args: Vec<_> = c.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(args[2], "/c/q/usr/bin/qemu-system-x86_64");
        assert!(args.contains(&"/c/q/usr/share/seabios".to_string()));
    }
}
