//! Provisioning: QEMU, the pinned guest kernels, busybox, ethtool and irqbalance, in a cache folder.
//!
//! [`setup`] downloads and unpacks what `guest-images/kernels.lock` pins (through
//! a private apt root: no host package is changed) and is idempotent: every item
//! leaves a `stamp.json` naming the pin it stands for and, after a fallback, the
//! packages it came from instead; a second run only reads stamps. A pin that
//! has left the archive falls back to the newest version of its track
//! ([`fallback`]; refused under `--locked`), said in one line, and the versions
//! used travel into every report ([`used`]). [`load`] never downloads; it tells
//! the user to run `cargo xtask setup` when something is missing or stale.
//!
//! Cache layout (`<cache>` from [`cache_dir`]):
//! ```text
//! <cache>/apt/                 private apt root (apt.conf, lists, archives, empty status)
//! <cache>/debs/                downloaded kernel, busybox and tool .deb files
//! <cache>/qemu.json            the QEMU chosen (host or private), its version and package
//! <cache>/qemu/<version>/root  trixie-backports QEMU + its libraries, unpacked
//! <cache>/qemu/<pinned>.json   which private QEMU stands for the pin (itself or a fallback)
//! <cache>/kernels/<id>/        vmlinuz, <module>.ko (decompressed), stamp.json
//! <cache>/busybox/             busybox, stamp.json
//! <cache>/ethtool/             sbin/ethtool, lib*/ (its libraries and loader), stamp.json
//! <cache>/irqbalance/          sbin/irqbalance, lib*/ (its libraries and loader), stamp.json
//! <cache>/selftest-tools/      root/ (the [selftests] packages unpacked: selftest_tools), stamp.json
//! ```

pub mod apt;
pub mod arm64;
mod debian_kernel;
pub mod fallback;
pub mod guest_files;
pub mod host_packages;
pub mod kernel;
pub mod lock;
pub mod pyvenv;
pub mod qemu_install;
pub mod selftest_tools;
pub mod used;

pub use kernel::KoCompression;
pub use lock::Lock;
pub use qemu_install::{QemuInstall, QemuSource, QEMU_AARCH64, QEMU_X86};
pub use used::UsedPackage;

use apt::AptRoot;
use lock::PackagePin;
use serde::{de::DeserializeOwned, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Environment variable naming the cache folder (below `--cache-dir`).
pub const CACHE_ENV: &str = "MANARIG_CACHE";

/// Errors of provisioning.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// A filesystem operation failed.
    #[error("{path}: {error}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// A tool could not be started.
    #[error("cannot run {what}: {error}")]
    Spawn {
        /// The command.
        what: String,
        /// The OS error.
        error: std::io::Error,
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
        "{package} {version} (pinned in guest-images/kernels.lock) is no longer in the Debian archive and \
         --locked (MANARIG_LOCKED) refuses a fallback; run without --locked to use the newest version of its \
         track, or `cargo xtask setup --update-lock` to pin it (review and commit the lock)"
    )]
    VersionGone {
        /// Package name.
        package: String,
        /// Pinned version.
        version: String,
    },
    /// A downloaded `.deb` does not have the pinned SHA-256.
    #[error("{package}: SHA-256 {actual} differs from the pinned {expected} ({path}); the download was deleted")]
    Checksum {
        /// Package name and version (`busybox-static 1:1.37.0-6+b9`).
        package: String,
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
    /// The pinned QEMU left the archive and no suite has one new enough.
    #[error(
        "no usable QEMU: the pinned {package} {version} is gone and no configured suite has {package} {}.{} or newer",
        qemu_install::MIN_QEMU.0,
        qemu_install::MIN_QEMU.1
    )]
    QemuGone {
        /// The package.
        package: String,
        /// The pinned version.
        version: String,
    },
    /// The QEMU unpacked from the archive does not qualify.
    #[error("no usable QEMU: {package} {version} from {suite}: {why}")]
    QemuUnqualified {
        /// The package.
        package: String,
        /// The version unpacked.
        version: String,
        /// The suite it came from.
        suite: String,
        /// What it lacks.
        why: qemu_install::Unqualified,
    },
    /// The cache holds a fallback and `--locked` asks for the lock's versions only.
    #[error(
        "{cache}: {what}; --locked (MANARIG_LOCKED) refuses a fallback: run `cargo xtask setup --update-lock` \
         to pin what the archive has, or run without --locked"
    )]
    LockedFallback {
        /// The package used and its pin.
        what: String,
        /// The cache folder.
        cache: PathBuf,
    },
    /// The cache lacks an item or it is stale: `load` does not download.
    #[error("{what} is not provisioned in {cache} ({why}); run `cargo xtask setup` (or `manarig setup`)")]
    NotProvisioned {
        /// The item.
        what: String,
        /// The cache folder.
        cache: PathBuf,
        /// Missing, stale, a file gone.
        why: CacheMiss,
    },
}

/// Why an item of the cache cannot be used as it is (`load` does not download;
/// `setup` provisions it again).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheMiss {
    /// The item was never provisioned (no stamp).
    #[error("missing")]
    Missing,
    /// Its stamp names other pins than the lock's.
    #[error("stale: the lock pins other versions")]
    Stale,
    /// A file the stamp names is not there any more.
    #[error("{} is gone", .0.display())]
    Gone(PathBuf),
}

impl ProvisionError {
    /// [`ProvisionError::Io`] for `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        ProvisionError::Io { path: path.to_path_buf(), error: source }
    }
    pub(crate) fn spawn(what: &str, source: std::io::Error) -> Self {
        ProvisionError::Spawn { what: what.to_string(), error: source }
    }
}

/// A kernel ready to boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInstall {
    /// Lock id (`6.1`, `6.12`, `7`), or `build:KEY`, `image:PATH`.
    pub id: String,
    /// `uname -r` of the kernel.
    pub release: String,
    /// The bzImage.
    pub vmlinuz: PathBuf,
    /// Uncompressed modules in `insmod` order (dependencies first, `mana.ko` last).
    pub modules: Vec<PathBuf>,
    /// How the package stored the modules.
    pub compression: KoCompression,
    /// The Debian packages it came from, as used (a pinned kernel's images, a
    /// build's `linux-source-*`), each against its pin; empty for a user's image.
    pub packages: Vec<UsedPackage>,
}

impl KernelInstall {
    /// How [`KernelInstall::id`] starts for a kernel the rig built (`build:KEY`).
    pub const BUILD_ID_PREFIX: &'static str = "build:";

    /// The build key of a kernel the rig built (`id` = `build:KEY`: a `-min`,
    /// `-debug` or `kernel build` kernel); `None` for Debian's packaged kernels
    /// and a user's image.
    pub fn build_key(&self) -> Option<&str> {
        self.id.strip_prefix(Self::BUILD_ID_PREFIX)
    }

    /// Whether the rig built this kernel (see [`KernelInstall::build_key`]).
    pub fn is_rig_build(&self) -> bool {
        self.build_key().is_some()
    }

    /// Whether a package differs from its pin (the kernel is a fallback).
    pub fn is_fallback(&self) -> bool {
        self.packages.iter().any(|p| p.locked.is_some())
    }
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
    /// The static busybox binary and its package.
    pub busybox: tools::Busybox,
    /// ethtool and its libraries, as initramfs files.
    pub ethtool: tools::InstalledTool,
    /// irqbalance and its libraries, as initramfs files; `None` when the cache
    /// predates the lock's `[irqbalance]` (only `run --irqbalance` needs them:
    /// it says to run `cargo xtask setup`).
    pub irqbalance: Option<tools::InstalledTool>,
    /// The selftest runs' guest tools ([`selftest_tools`], unpacked whole in
    /// its `dir`/root); `None` when the cache predates the lock's `[selftests]`.
    pub selftest_tools: Option<tools::InstalledTool>,
    /// What an arm64 guest runs the x86_64 `manarig-flows` with (`--traffic`):
    /// `qemu-x86_64` and the x86_64 libraries; `None` on x86, whose guests run
    /// the binary as it is.
    pub x86_user: Option<arm64::X86UserMode>,
    /// The guests' architecture: what the kernels, busybox and tools are built for.
    pub arch: crate::topology::Arch,
    /// The firmware QEMU boots the kernel through (`-bios`; arm64: the UEFI
    /// code image of [`tools::AAVMF`]); `None`: QEMU's own (x86).
    pub firmware: Option<PathBuf>,
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

    /// This, or under `--locked` (`locked`) the error naming its first fallback.
    ///
    /// # Errors
    /// [`ProvisionError::LockedFallback`] when `locked` and a package differs from its pin.
    pub(crate) fn unless_locked_out(self, locked: bool) -> Result<Self, ProvisionError> {
        match self.fallbacks().into_iter().next().filter(|_| locked) {
            Some(f) => Err(ProvisionError::LockedFallback { what: f.describe(), cache: self.cache }),
            None => Ok(self),
        }
    }

    /// Every provisioned package that differs from its pin.
    pub fn fallbacks(&self) -> Vec<UsedPackage> {
        self.qemu
            .package
            .iter()
            .chain(self.kernels.values().flat_map(|k| k.packages.iter()))
            .chain(std::iter::once(&self.busybox.package))
            .chain(self.ethtool.packages.iter())
            .chain(self.irqbalance.iter().flat_map(|t| t.packages.iter()))
            .chain(self.selftest_tools.iter().flat_map(|t| t.packages.iter()))
            .chain(self.x86_user.iter().flat_map(|x| x.packages()))
            .filter(|p| p.locked.is_some())
            .cloned()
            .collect()
    }

    /// The packages a run on `kernel` uses: QEMU (when private), the kernel's,
    /// busybox, and the guest tools named in `tools` (`ethtool`, `irqbalance`,
    /// `selftests`, `x86-user`: an arm64 guest's emulator for the flows tool).
    pub fn run_packages(&self, kernel: &KernelInstall, tools: &[&str]) -> Vec<UsedPackage> {
        let mut out: Vec<UsedPackage> = self.qemu.package.iter().cloned().collect();
        out.extend(kernel.packages.iter().cloned());
        out.push(self.busybox.package.clone());
        if tools.contains(&"ethtool") {
            out.extend(self.ethtool.packages.iter().cloned());
        }
        if tools.contains(&"irqbalance") {
            out.extend(self.irqbalance.iter().flat_map(|t| t.packages.iter().cloned()));
        }
        if tools.contains(&"selftests") {
            out.extend(self.selftest_tools.iter().flat_map(|t| t.packages.iter().cloned()));
        }
        if tools.contains(&"x86-user") {
            out.extend(self.x86_user.iter().flat_map(|x| x.packages().cloned()));
        }
        out
    }
}

/// Options of [`setup`].
#[derive(Debug, Clone, Default)]
pub struct SetupOptions {
    /// Re-pin every section to the newest version of its track and rewrite the
    /// lock files before provisioning.
    pub update_lock: bool,
    /// Ignore the host's QEMU even when it qualifies.
    pub private_qemu: bool,
    /// Refuse every fallback (`--locked`; also [`fallback::locked`]).
    pub locked: bool,
    /// The archive to read; `None`: [`apt::Archive::from_env`].
    pub archive: Option<apt::Archive>,
    /// The lock files to read (and, with `update_lock`, rewrite); `None`: the
    /// lock compiled in, and the source tree's files for `update_lock`.
    pub lock_files: Option<update::LockFiles>,
}

impl SetupOptions {
    fn locked(&self) -> bool {
        self.locked || fallback::locked()
    }
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

pub(crate) fn read_stamp<T: DeserializeOwned>(path: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

pub(crate) fn write_stamp<T: Serialize>(path: &Path, value: &T) -> Result<(), ProvisionError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| ProvisionError::Package(e.to_string()))?;
    std::fs::write(path, text).map_err(|e| ProvisionError::io(path, e))
}

/// Provision everything the lock pins into `cache` (see the module docs).
/// `progress` receives one human-readable line per step, and one line per
/// fallback (`qemu-system-x86: pinned … is gone from trixie-backports; using …`).
///
/// # Errors
/// Any [`ProvisionError`]: network/apt failures with apt's output, a version
/// gone from the archive under `--locked` (with the `--update-lock` hint), a
/// track with nothing left in it, a checksum mismatch.
pub fn setup(cache: &Path, opts: &SetupOptions, progress: &mut dyn FnMut(&str)) -> Result<Provisioned, ProvisionError> {
    std::fs::create_dir_all(cache).map_err(|e| ProvisionError::io(cache, e))?;
    let archive = match &opts.archive {
        Some(a) => a.clone(),
        None => apt::Archive::from_env()?,
    };
    let mut p = Provisioner {
        cache: cache.to_path_buf(),
        apt: LazyApt { dir: cache.join("apt"), arch: "amd64", archive, refresh: opts.update_lock, root: None },
        locked: opts.locked(),
        progress,
    };
    let lock = setup_lock(&mut p, cache, opts)?;
    let qemu = qemu_install::ensure(&mut p, &lock.qemu, opts.private_qemu)?;
    write_stamp(&cache.join("qemu.json"), &qemu)?;
    tools::ensure_busybox(&mut p, &lock.busybox)?;
    tools::ensure_tools(
        &mut p,
        &[(tools::ETHTOOL, &lock.ethtool), (tools::IRQBALANCE, &lock.irqbalance), (tools::SELFTESTS, &lock.selftests)],
    )?;
    for pin in &lock.kernels {
        debian_kernel::ensure(&mut p, pin)?;
    }
    load_with(cache, &lock, p.locked)
}

/// The lock a setup provisions from. With `update_lock`: both lock files
/// rewritten first ([`update::update_files`]: every pin of both
/// architectures, the arm64 guests' packages read through a fresh
/// `<cache>/apt-arm64`), each change said through `p`, then the rewritten
/// file; else `opts.lock_files` when given, else the lock compiled in. `p`
/// reads the amd64 indexes (refreshed when `update_lock`).
///
/// # Errors
/// As [`update::update_files`]; I/O and lock errors reading the files.
pub(crate) fn setup_lock(p: &mut Provisioner<'_>, cache: &Path, opts: &SetupOptions) -> Result<Lock, ProvisionError> {
    let files = opts.lock_files.clone().unwrap_or_else(update::LockFiles::source_tree);
    if !opts.update_lock {
        return match &opts.lock_files {
            Some(files) => files.read_kernels(),
            None => Ok(Lock::embedded()?),
        };
    }
    let host = p.apt()?;
    let mut guest = LazyApt {
        dir: cache.join("apt-arm64"),
        arch: "arm64",
        archive: p.apt.archive.clone(),
        refresh: true,
        root: None,
    };
    let changes = update::update_files(&host, &mut || guest.get(&mut *p.progress), &files)?;
    if changes.is_empty() {
        p.say("lock: every pin is the newest of its track and in the archive");
    }
    for c in &changes {
        p.say(&format!("lock: {c}"));
    }
    if !changes.is_empty() {
        p.say(&format!(
            "lock: rewrote {} and {}; review and commit them",
            files.kernels.display(),
            files.sources.display()
        ));
    }
    files.read_kernels()
}

impl<'a> Provisioner<'a> {
    /// A setup's state for the packages of Debian architecture `arch` read
    /// through the private apt root in `apt_dir`, kept in `cache`.
    pub(crate) fn new(
        cache: PathBuf,
        apt_dir: PathBuf,
        arch: &'static str,
        archive: apt::Archive,
        refresh: bool,
        locked: bool,
        progress: &'a mut dyn FnMut(&str),
    ) -> Self {
        Provisioner { cache, apt: LazyApt { dir: apt_dir, arch, archive, refresh, root: None }, locked, progress }
    }
}

/// One setup's state: the cache, the private apt root (prepared on first
/// need), the fallback policy and the progress lines.
pub(crate) struct Provisioner<'a> {
    pub(crate) cache: PathBuf,
    apt: LazyApt,
    /// Fallbacks are refused.
    pub(crate) locked: bool,
    progress: &'a mut dyn FnMut(&str),
}

impl Provisioner<'_> {
    /// Print one progress line.
    pub(crate) fn say(&mut self, line: &str) {
        (self.progress)(line);
    }

    /// The private apt root with its indexes (updated on first use only).
    pub(crate) fn apt(&mut self) -> Result<AptRoot, ProvisionError> {
        self.apt.get(self.progress)
    }

    /// Download one pinned `.deb` into `<cache>/debs` and check its SHA-256.
    pub(crate) fn fetch(&mut self, p: &PackagePin) -> Result<PathBuf, ProvisionError> {
        let a = self.apt()?;
        fetch_pinned(&a, &self.cache, p, self.progress)
    }

    /// Whether every pin of `pins` is in the indexes, refreshing old indexes
    /// once before saying no; an error under `--locked` when one is gone.
    pub(crate) fn pins_available(&mut self, pins: &[PackagePin]) -> Result<bool, ProvisionError> {
        let a = self.apt()?;
        let Some(gone) = fallback::first_gone(&a, pins)?.cloned() else { return Ok(true) };
        if !self.apt.refreshed() {
            self.say(&format!("apt: {} {} not in the cached indexes; refreshing them", gone.name, gone.version));
            a.update(true)?;
            self.apt.mark_refreshed();
            if fallback::first_gone(&a, pins)?.is_none() {
                return Ok(true);
            }
        }
        if self.locked {
            return Err(fallback::refused(&gone.name, &gone.version));
        }
        Ok(false)
    }
}

/// The private apt root, prepared and its indexes updated on first use only
/// (a fully cached setup never runs apt).
struct LazyApt {
    dir: PathBuf,
    /// Debian's architecture of the packages it reads.
    arch: &'static str,
    archive: apt::Archive,
    refresh: bool,
    root: Option<AptRoot>,
}

impl LazyApt {
    fn get(&mut self, progress: &mut dyn FnMut(&str)) -> Result<AptRoot, ProvisionError> {
        if let Some(a) = &self.root {
            return Ok(a.clone());
        }
        let a = AptRoot::prepare_for(&self.dir, &self.archive, self.arch)?;
        progress(&format!(
            "apt: updating the private {} package indexes ({}: {})",
            self.arch,
            self.archive.origin,
            self.archive.suites().join(", ")
        ));
        a.update(self.refresh)?;
        self.root = Some(a.clone());
        Ok(a)
    }

    /// Whether this setup already fetched fresh indexes.
    fn refreshed(&self) -> bool {
        self.refresh
    }

    fn mark_refreshed(&mut self) {
        self.refresh = true;
    }
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
    let file = debs.join(format!("{}_{}_{}.deb", p.name, p.version.replace(':', "%3a"), a.arch()));
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
            package: format!("{} {}", p.name, p.version),
            expected: p.sha256.clone(),
            actual,
            path: file,
        });
    }
    Ok(file)
}

/// Read what [`setup`] provisioned in `cache`, for the embedded lock. Never
/// downloads. Under `--locked` ([`fallback::locked`]) a cached fallback is refused.
///
/// # Errors
/// [`ProvisionError::NotProvisioned`] naming the missing or stale item;
/// [`ProvisionError::LockedFallback`] for a fallback under `--locked`.
pub fn load(cache: &Path) -> Result<Provisioned, ProvisionError> {
    load_with(cache, &Lock::embedded()?, fallback::locked())
}

fn load_with(cache: &Path, lock: &Lock, locked: bool) -> Result<Provisioned, ProvisionError> {
    let missing = |what: &str, why: CacheMiss| ProvisionError::NotProvisioned {
        what: what.to_string(),
        cache: cache.to_path_buf(),
        why,
    };
    let qemu: QemuInstall = read_stamp(&cache.join("qemu.json")).ok_or_else(|| missing("QEMU", CacheMiss::Missing))?;
    let qemu_file = qemu.executable();
    if !qemu_file.is_file() {
        return Err(missing("QEMU", CacheMiss::Gone(qemu_file)));
    }
    let busybox = tools::load_busybox(cache, &lock.busybox).map_err(|why| missing("busybox", why))?;
    let ethtool = tools::load_tool(tools::ETHTOOL, cache, &lock.ethtool).map_err(|why| missing("ethtool", why))?;
    let irqbalance = tools::load_tool(tools::IRQBALANCE, cache, &lock.irqbalance).ok();
    let mut kernels = BTreeMap::new();
    for pin in &lock.kernels {
        let k = debian_kernel::load(cache, pin).map_err(|why| missing(&format!("kernel {}", pin.name()), why))?;
        kernels.insert(pin.id.clone(), k);
    }
    let selftest_tools = tools::load_tool(tools::SELFTESTS, cache, &lock.selftests).ok();
    let p = Provisioned {
        cache: cache.to_path_buf(),
        qemu,
        kernels,
        busybox,
        ethtool,
        irqbalance,
        selftest_tools,
        x86_user: None,
        arch: crate::topology::Arch::X86_64,
        firmware: None,
    };
    p.unless_locked_out(locked)
}

pub mod tools;
pub mod update;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_of_an_empty_cache_says_to_run_setup() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = load(dir.path()).expect_err("must fail");
        assert!(matches!(err, ProvisionError::NotProvisioned { why: CacheMiss::Missing, .. }), "{err}");
    }

    #[test]
    fn explicit_cache_dir_wins() {
        assert_eq!(cache_dir(Some(Path::new("/x"))).expect("dir"), PathBuf::from("/x"));
    }
}
