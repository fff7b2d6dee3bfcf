//! Provisioning: QEMU, the pinned guest kernels, busybox, ethtool and irqbalance, in a cache folder.
//!
//! [`setup`] downloads and unpacks what `guest-images/kernels.lock` pins (through
//! a private apt root: no host package is changed) and is idempotent: every item
//! leaves a `stamp.json` naming the pins it was built from, and a second run
//! only reads stamps. [`load`] never downloads; it tells the user to run
//! `cargo xtask setup` when something is missing or stale.
//!
//! Cache layout (`<cache>` from [`cache_dir`]):
//! ```text
//! <cache>/apt/                 private apt root (apt.conf, lists, archives, empty status)
//! <cache>/debs/                pinned kernel and busybox .deb files
//! <cache>/qemu.json            the QEMU chosen (host or private) and its version
//! <cache>/qemu/<version>/root  trixie-backports QEMU + its libraries, unpacked
//! <cache>/kernels/<id>/        vmlinuz, <module>.ko (decompressed), stamp.json
//! <cache>/busybox/             busybox, stamp.json
//! <cache>/ethtool/             sbin/ethtool, lib*/ (its libraries and loader), stamp.json
//! <cache>/irqbalance/          sbin/irqbalance, lib*/ (its libraries and loader), stamp.json
//! <cache>/selftest-tools/      root/ (the [selftests] packages unpacked: selftest_tools), stamp.json
//! ```

pub mod apt;
pub mod host_packages;
pub mod kernel;
pub mod lock;
pub mod pyvenv;
pub mod qemu_install;
pub mod selftest_tools;

pub use kernel::KoCompression;
pub use lock::Lock;
pub use qemu_install::{QemuInstall, QemuSource};

use apt::AptRoot;
use lock::{KernelPin, PackagePin};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Environment variable naming the cache folder (below `--cache-dir`).
pub const CACHE_ENV: &str = "MANARIG_CACHE";

/// Errors of provisioning.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// A filesystem operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A tool could not be started.
    #[error("cannot run {what}: {source}")]
    Spawn {
        /// The command.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A tool ran and failed.
    #[error("{what} failed:\n{output}")]
    Command {
        /// The command.
        what: String,
        /// Its output (stderr, or stdout+stderr).
        output: String,
    },
    /// The host lacks something setup needs.
    #[error("host: {0}")]
    Host(String),
    /// A pinned version is no longer in the Debian archive.
    #[error(
        "{package} {version} (pinned in guest-images/kernels.lock) is no longer in the Debian archive; \
         run `cargo xtask setup --update-lock` to pin the newest version, review and commit the lock"
    )]
    VersionGone {
        /// Package name.
        package: String,
        /// Pinned version.
        version: String,
    },
    /// A downloaded `.deb` does not have the pinned SHA-256.
    #[error(
        "{package} {version}: SHA-256 {actual} differs from the pinned {expected} ({path}); the download was deleted"
    )]
    Checksum {
        /// Package name.
        package: String,
        /// Version.
        version: String,
        /// Pinned hash.
        expected: String,
        /// Hash of the file.
        actual: String,
        /// The file (deleted).
        path: PathBuf,
    },
    /// A package does not contain what the rig needs.
    #[error("{0}")]
    Package(String),
    /// No kernel with that id is pinned.
    #[error("no kernel {id:?} in guest-images/kernels.lock; pinned: {known}")]
    UnknownKernel {
        /// The id asked for.
        id: String,
        /// The ids pinned, comma-separated.
        known: String,
    },
    /// The lock file is bad.
    #[error(transparent)]
    Lock(#[from] lock::LockError),
    /// No usable QEMU.
    #[error("no usable QEMU: {0}")]
    Qemu(String),
    /// The cache lacks an item or it is stale: `load` does not download.
    #[error("{what} is not provisioned in {cache} ({why}); run `cargo xtask setup` (or `manarig setup`)")]
    NotProvisioned {
        /// The item.
        what: String,
        /// The cache folder.
        cache: PathBuf,
        /// Missing, stale, …
        why: String,
    },
}

impl ProvisionError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        ProvisionError::Io { path: path.to_path_buf(), source }
    }
    pub(crate) fn spawn(what: &str, source: std::io::Error) -> Self {
        ProvisionError::Spawn { what: what.to_string(), source }
    }
}

/// A kernel ready to boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInstall {
    /// Lock id (`6.1`, `6.12`, `7`).
    pub id: String,
    /// `uname -r` of the kernel.
    pub release: String,
    /// The bzImage.
    pub vmlinuz: PathBuf,
    /// Uncompressed modules in `insmod` order (dependencies first, `mana.ko` last).
    pub modules: Vec<PathBuf>,
    /// How the package stored the modules.
    pub compression: KoCompression,
    /// The pinned packages it came from.
    pub packages: Vec<PackagePin>,
}

/// Everything the rig needs, provisioned.
#[derive(Debug, Clone)]
pub struct Provisioned {
    /// The cache folder.
    pub cache: PathBuf,
    /// QEMU to run.
    pub qemu: QemuInstall,
    /// Kernels by lock id.
    pub kernels: BTreeMap<String, KernelInstall>,
    /// The static busybox binary.
    pub busybox: PathBuf,
    /// busybox's pinned package.
    pub busybox_package: PackagePin,
    /// ethtool and its libraries, as initramfs files.
    pub ethtool: Vec<tools::GuestFile>,
    /// irqbalance and its libraries, as initramfs files; `None` when the cache
    /// predates the lock's `[irqbalance]` (only `run --irqbalance` needs them:
    /// it says to run `cargo xtask setup`).
    pub irqbalance: Option<Vec<tools::GuestFile>>,
    /// The folder of the selftest runs' guest tools ([`selftest_tools`]);
    /// `None` when the cache predates the lock's `[selftests]`.
    pub selftest_tools: Option<PathBuf>,
}

impl Provisioned {
    /// The kernel with lock id `id`, or an error listing the ids there are.
    ///
    /// # Errors
    /// [`ProvisionError::UnknownKernel`] for an id the lock does not pin.
    pub fn kernel(&self, id: &str) -> Result<&KernelInstall, ProvisionError> {
        self.kernels.get(id).ok_or_else(|| ProvisionError::UnknownKernel {
            id: id.to_string(),
            known: self.kernels.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }
}

/// Options of [`setup`].
#[derive(Debug, Clone, Default)]
pub struct SetupOptions {
    /// Re-pin every `track` to the newest archive version and rewrite the
    /// source tree's lock file before provisioning.
    pub update_lock: bool,
    /// Ignore the host's QEMU even when it qualifies.
    pub private_qemu: bool,
}

/// The cache folder: `explicit` (`--cache-dir`), else `$MANARIG_CACHE`, else
/// `$XDG_CACHE_HOME/manarig`, else `$HOME/.cache/manarig`.
///
/// # Errors
/// [`ProvisionError::Host`] when none of these is set.
pub fn cache_dir(explicit: Option<&Path>) -> Result<PathBuf, ProvisionError> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = env(CACHE_ENV) {
        return Ok(p);
    }
    if let Some(p) = env("XDG_CACHE_HOME") {
        return Ok(p.join("manarig"));
    }
    env("HOME")
        .map(|h| h.join(".cache/manarig"))
        .ok_or_else(|| ProvisionError::Host("no --cache-dir, MANARIG_CACHE, XDG_CACHE_HOME or HOME".into()))
}

#[derive(Serialize, Deserialize, PartialEq)]
struct KernelStamp {
    pin: KernelPin,
    extracted: kernel::ExtractedKernel,
}

#[derive(Serialize, Deserialize, PartialEq)]
struct BusyboxStamp {
    pin: PackagePin,
}

#[derive(Serialize, Deserialize, PartialEq)]
struct PrivateQemuStamp {
    pin: lock::QemuPin,
    /// The unpacked dependency closure: (file name, SHA-256).
    debs: Vec<(String, String)>,
}

fn read_stamp<T: DeserializeOwned>(path: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn write_stamp<T: Serialize>(path: &Path, value: &T) -> Result<(), ProvisionError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| ProvisionError::Package(e.to_string()))?;
    std::fs::write(path, text).map_err(|e| ProvisionError::io(path, e))
}

/// Provision everything the lock pins into `cache` (see the module docs).
/// `progress` receives one human-readable line per step.
///
/// # Errors
/// Any [`ProvisionError`]: network/apt failures with apt's output, a version
/// gone from the archive (with the `--update-lock` hint), a checksum mismatch.
pub fn setup(cache: &Path, opts: &SetupOptions, progress: &mut dyn FnMut(&str)) -> Result<Provisioned, ProvisionError> {
    std::fs::create_dir_all(cache).map_err(|e| ProvisionError::io(cache, e))?;
    let mut apt = LazyApt { dir: cache.join("apt"), refresh: opts.update_lock, root: None };
    let mut lock = Lock::embedded()?;
    if opts.update_lock {
        let path = lock::source_lock_path();
        let text = std::fs::read_to_string(&path).map_err(|e| ProvisionError::io(&path, e))?;
        lock = Lock::parse(&text, &path.display().to_string())?;
        let a = apt.get(progress)?;
        let (new_text, new_lock, changes) = update::update_lock(&a, &text, &lock)?;
        for c in &changes {
            progress(&format!("lock: {c}"));
        }
        if changes.is_empty() {
            progress("lock: every pin is already the newest");
        } else {
            std::fs::write(&path, new_text).map_err(|e| ProvisionError::io(&path, e))?;
            progress(&format!("lock: rewrote {}; review and commit it", path.display()));
        }
        lock = new_lock;
    }

    // QEMU.
    let qemu = setup_qemu(cache, &lock, opts, progress, &mut apt)?;
    write_stamp(&cache.join("qemu.json"), &qemu)?;

    // busybox.
    let bb_dir = cache.join("busybox");
    let bb_stamp = bb_dir.join("stamp.json");
    if read_stamp::<BusyboxStamp>(&bb_stamp).is_some_and(|s| s.pin == lock.busybox.package)
        && bb_dir.join("busybox").is_file()
    {
        progress(&format!("busybox: {} {} (cached)", lock.busybox.package.name, lock.busybox.package.version));
    } else {
        let a = apt.get(progress)?;
        let deb = fetch_pinned(&a, cache, &lock.busybox.package, progress)?;
        let tmp = tempfile::tempdir_in(cache).map_err(|e| ProvisionError::io(cache, e))?;
        apt::extract_deb(&deb, tmp.path())?;
        let bin = ["usr/bin/busybox", "bin/busybox"]
            .iter()
            .map(|p| tmp.path().join(p))
            .find(|p| p.is_file())
            .ok_or_else(|| ProvisionError::Package(format!("{}: no bin/busybox in the package", deb.display())))?;
        std::fs::create_dir_all(&bb_dir).map_err(|e| ProvisionError::io(&bb_dir, e))?;
        let dst = bb_dir.join("busybox");
        std::fs::copy(&bin, &dst).map_err(|e| ProvisionError::io(&dst, e))?;
        write_stamp(&bb_stamp, &BusyboxStamp { pin: lock.busybox.package.clone() })?;
        progress(&format!("busybox: {} {} ready", lock.busybox.package.name, lock.busybox.package.version));
    }

    // ethtool.
    let et_dir = cache.join("ethtool");
    if tools::ethtool_ready(&et_dir, &lock.ethtool) {
        progress("ethtool: cached");
    } else {
        let a = apt.get(progress)?;
        let debs = tools::fetch(&a, cache, &lock.ethtool, progress)?;
        tools::install_ethtool(cache, &debs, &lock.ethtool, &et_dir)?;
        progress(&format!("ethtool: ready in {}", et_dir.display()));
    }
    let ib_dir = cache.join("irqbalance");
    if tools::tool_ready(tools::IRQBALANCE, &ib_dir, &lock.irqbalance) {
        progress("irqbalance: cached");
    } else {
        let a = apt.get(progress)?;
        let debs = tools::fetch(&a, cache, &lock.irqbalance, progress)?;
        tools::install_tool(tools::IRQBALANCE, cache, &debs, &lock.irqbalance, &ib_dir)?;
        progress(&format!("irqbalance: ready in {}", ib_dir.display()));
    }
    let st_dir = cache.join(selftest_tools::DIR);
    if selftest_tools::ready(&st_dir, &lock.selftests) {
        progress("selftest tools: cached");
    } else {
        let a = apt.get(progress)?;
        let debs = tools::fetch(&a, cache, &lock.selftests, progress)?;
        selftest_tools::install(cache, &debs, &lock.selftests, &st_dir)?;
        progress(&format!("selftest tools: ready in {}", st_dir.display()));
    }

    // Kernels.
    for pin in &lock.kernels {
        let dir = cache.join("kernels").join(&pin.id);
        let stamp = dir.join("stamp.json");
        if read_stamp::<KernelStamp>(&stamp).is_some_and(|s| &s.pin == pin) {
            progress(&format!("kernel {}: {} (cached)", pin.name(), pin.release));
            continue;
        }
        let a = apt.get(progress)?;
        let tmp = tempfile::tempdir_in(cache).map_err(|e| ProvisionError::io(cache, e))?;
        for p in &pin.packages {
            let deb = fetch_pinned(&a, cache, p, progress)?;
            progress(&format!("kernel {}: unpacking {}", pin.name(), p.name));
            apt::extract_deb(&deb, tmp.path())?;
        }
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| ProvisionError::io(&dir, e))?;
        }
        let extracted = kernel::extract_kernel(tmp.path(), &pin.release, &dir)?;
        progress(&format!(
            "kernel {}: {} ready (modules {}, stored {} in the package, decompressed)",
            pin.name(),
            pin.release,
            extracted.modules.join(", "),
            match extracted.compression {
                KoCompression::None => "as plain .ko",
                KoCompression::Xz => "as .ko.xz",
            }
        ));
        write_stamp(&stamp, &KernelStamp { pin: pin.clone(), extracted })?;
    }
    load_with(cache, &lock)
}

/// The private apt root, prepared and its indexes updated on first use only
/// (a fully cached setup never runs apt).
struct LazyApt {
    dir: PathBuf,
    refresh: bool,
    root: Option<AptRoot>,
}

impl LazyApt {
    fn get(&mut self, progress: &mut dyn FnMut(&str)) -> Result<AptRoot, ProvisionError> {
        if let Some(a) = &self.root {
            return Ok(a.clone());
        }
        let a = AptRoot::prepare(&self.dir)?;
        progress("apt: updating the private package indexes (trixie, trixie-backports, bookworm, bookworm-security)");
        a.update(self.refresh)?;
        self.root = Some(a.clone());
        Ok(a)
    }
}

fn setup_qemu(
    cache: &Path,
    lock: &Lock,
    opts: &SetupOptions,
    progress: &mut dyn FnMut(&str),
    apt: &mut LazyApt,
) -> Result<QemuInstall, ProvisionError> {
    if !opts.private_qemu {
        if let Some(bin) = qemu_install::system_qemu() {
            match QemuInstall::probe(QemuSource::System { binary: bin.clone() })? {
                Ok(q) => {
                    progress(&format!("qemu: using {}", q.describe()));
                    return Ok(q);
                }
                Err(why) => progress(&format!("qemu: host {} does not qualify: {why}", bin.display())),
            }
        } else {
            progress("qemu: no qemu-system-x86_64 on PATH");
        }
    }
    let pin = &lock.qemu;
    let dir = cache.join("qemu").join(pin.version.replace([':', '~', '+'], "_"));
    let prefix = dir.join("root");
    let stamp = dir.join("stamp.json");
    if read_stamp::<PrivateQemuStamp>(&stamp).is_some_and(|s| &s.pin == pin) {
        if let Ok(q) = QemuInstall::probe(QemuSource::Private { prefix: prefix.clone() })? {
            progress(&format!("qemu: {} (cached)", q.describe()));
            return Ok(q);
        }
    }
    let a = apt.get(progress)?;
    progress(&format!(
        "qemu: downloading {}={} from {} with its dependency closure (private apt root, host untouched)",
        pin.package, pin.version, pin.suite
    ));
    let debs = with_fresh_indexes(&a, progress, || a.download_closure(&pin.package, &pin.version, &pin.suite))?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| ProvisionError::io(&dir, e))?;
    }
    let mut listed = Vec::new();
    for deb in &debs {
        apt::extract_deb(deb, &prefix)?;
        let name = deb.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        listed.push((name, apt::sha256_file(deb)?));
    }
    progress(&format!("qemu: unpacked {} packages into {}", debs.len(), prefix.display()));
    let q = QemuInstall::probe(QemuSource::Private { prefix })?.map_err(ProvisionError::Qemu)?;
    write_stamp(&stamp, &PrivateQemuStamp { pin: pin.clone(), debs: listed })?;
    progress(&format!("qemu: {} ready", q.describe()));
    Ok(q)
}

/// Run `f`; if the archive indexes (possibly old) lack the version, refresh
/// them once and retry, so that only a version really gone is reported as such.
fn with_fresh_indexes<T>(
    a: &AptRoot,
    progress: &mut dyn FnMut(&str),
    mut f: impl FnMut() -> Result<T, ProvisionError>,
) -> Result<T, ProvisionError> {
    match f() {
        Err(ProvisionError::VersionGone { package, version }) => {
            progress(&format!("apt: {package} {version} not in the cached indexes; refreshing them"));
            a.update(true)?;
            f()
        }
        other => other,
    }
}

/// Download one pinned `.deb` into `<cache>/debs` (reusing a file with the
/// right hash) and verify its SHA-256.
pub(crate) fn fetch_pinned(
    a: &AptRoot,
    cache: &Path,
    p: &PackagePin,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, ProvisionError> {
    let debs = cache.join("debs");
    let file = debs.join(format!("{}_{}_amd64.deb", p.name, p.version.replace(':', "%3a")));
    if !(file.is_file() && apt::sha256_file(&file)? == p.sha256) {
        progress(&format!("download: {} {}", p.name, p.version));
        let got = with_fresh_indexes(a, progress, || a.download(&p.name, &p.version, &debs))?;
        if got != file {
            std::fs::rename(&got, &file).map_err(|e| ProvisionError::io(&file, e))?;
        }
    }
    let actual = apt::sha256_file(&file)?;
    if actual != p.sha256 {
        let _ = std::fs::remove_file(&file);
        return Err(ProvisionError::Checksum {
            package: p.name.clone(),
            version: p.version.clone(),
            expected: p.sha256.clone(),
            actual,
            path: file,
        });
    }
    Ok(file)
}

/// Read what [`setup`] provisioned in `cache`, for the embedded lock. Never downloads.
///
/// # Errors
/// [`ProvisionError::NotProvisioned`] naming the missing or stale item.
pub fn load(cache: &Path) -> Result<Provisioned, ProvisionError> {
    load_with(cache, &Lock::embedded()?)
}

fn load_with(cache: &Path, lock: &Lock) -> Result<Provisioned, ProvisionError> {
    let missing = |what: &str, why: &str| ProvisionError::NotProvisioned {
        what: what.to_string(),
        cache: cache.to_path_buf(),
        why: why.to_string(),
    };
    let qemu: QemuInstall = read_stamp(&cache.join("qemu.json")).ok_or_else(|| missing("QEMU", "no qemu.json"))?;
    let qemu_file = match &qemu.source {
        QemuSource::System { binary } => binary.clone(),
        QemuSource::Private { prefix } => prefix.join("usr/bin/qemu-system-x86_64"),
    };
    if !qemu_file.is_file() {
        return Err(missing("QEMU", &format!("{} is gone", qemu_file.display())));
    }
    if !bb_present(cache) {
        return Err(missing("busybox", "the binary is gone"));
    }
    let bb_dir = cache.join("busybox");
    match read_stamp::<BusyboxStamp>(&bb_dir.join("stamp.json")) {
        Some(s) if s.pin == lock.busybox.package => {}
        Some(_) => return Err(missing("busybox", "stale: the lock pins another version")),
        None => return Err(missing("busybox", "missing")),
    }
    let et_dir = cache.join("ethtool");
    if !tools::ethtool_ready(&et_dir, &lock.ethtool) {
        return Err(missing("ethtool", "missing or stale"));
    }
    let ib_dir = cache.join("irqbalance");
    let mut kernels = BTreeMap::new();
    for pin in &lock.kernels {
        let dir = cache.join("kernels").join(&pin.id);
        let what = format!("kernel {}", pin.name());
        let stamp: KernelStamp = read_stamp(&dir.join("stamp.json")).ok_or_else(|| missing(&what, "missing"))?;
        if &stamp.pin != pin {
            return Err(missing(&what, "stale: the lock pins another version"));
        }
        let files = std::iter::once("vmlinuz").chain(stamp.extracted.modules.iter().map(String::as_str));
        if let Some(f) = files.clone().find(|f| !dir.join(f).is_file()) {
            return Err(missing(&what, &format!("{f} is gone")));
        }
        kernels.insert(
            pin.id.clone(),
            KernelInstall {
                id: pin.id.clone(),
                release: pin.release.clone(),
                vmlinuz: dir.join("vmlinuz"),
                modules: stamp.extracted.modules.iter().map(|m| dir.join(m)).collect(),
                compression: stamp.extracted.compression,
                packages: pin.packages.clone(),
            },
        );
    }
    Ok(Provisioned {
        cache: cache.to_path_buf(),
        qemu,
        kernels,
        busybox: bb_dir.join("busybox"),
        busybox_package: lock.busybox.package.clone(),
        ethtool: tools::ethtool_files(&et_dir),
        irqbalance: tools::tool_ready(tools::IRQBALANCE, &ib_dir, &lock.irqbalance)
            .then(|| tools::tool_files(tools::IRQBALANCE, &ib_dir)),
        selftest_tools: {
            let dir = cache.join(selftest_tools::DIR);
            selftest_tools::ready(&dir, &lock.selftests).then_some(dir)
        },
    })
}

fn bb_present(cache: &Path) -> bool {
    cache.join("busybox/busybox").is_file()
}

pub mod tools;
mod update;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_of_an_empty_cache_says_to_run_setup() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = load(dir.path()).expect_err("must fail").to_string();
        assert!(err.contains("cargo xtask setup"), "{err}");
    }

    #[test]
    fn explicit_cache_dir_wins() {
        assert_eq!(cache_dir(Some(Path::new("/x"))).expect("dir"), PathBuf::from("/x"));
    }
}
