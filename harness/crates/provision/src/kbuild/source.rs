//! Where a kernel build's source comes from: a user's tree, or a Debian
//! `linux-source-*` package pinned in guest-images/kernel-sources.lock,
//! downloaded through the private apt root and unpacked into the cache.
//!
//! A pinned source that has left the archive falls back to the newest version
//! of the same package (the same upstream series: `linux-source-6.12`), unless
//! `--locked` ([`resolve`]); the build's key, stamp and report then name the
//! version that was built.

use super::KbuildError;
use crate::provision::{self, apt::AptRoot, fallback, lock::PackagePin, UsedPackage};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned Debian kernel sources (guest-images/kernel-sources.lock).
pub const SOURCES_LOCK: &str = include_str!("../../../../../guest-images/kernel-sources.lock");

/// One pinned source package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourcePin {
    /// Debian package name, e.g. `linux-source-6.12`.
    pub package: String,
    /// Exact version.
    pub version: String,
    /// SHA-256 of the `.deb`.
    pub sha256: String,
    /// The source tarball inside the package.
    pub tarball: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourcesLock {
    source: Vec<SourcePin>,
    /// The clang of the selftests' BPF programs (`crate::selftests::clang`).
    clang: Option<ClangPin>,
}

/// The host clang the selftests' BPF programs are built with (`[clang]`):
/// a Debian package, its dependency closure resolved by apt.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClangPin {
    /// Debian binary package, e.g. `clang-14`.
    pub package: String,
    /// Exact Debian version.
    pub version: String,
    /// Suite it comes from.
    pub suite: String,
}

/// The `[clang]` pin of [`SOURCES_LOCK`], if any.
///
/// # Errors
/// [`KbuildError::SourcesLock`] if the embedded lock does not parse (a build bug).
pub fn clang_pin() -> Result<Option<ClangPin>, KbuildError> {
    toml::from_str::<SourcesLock>(SOURCES_LOCK).map(|l| l.clang).map_err(KbuildError::SourcesLock)
}

/// The pins of [`SOURCES_LOCK`].
///
/// # Errors
/// [`KbuildError::SourcesLock`] if the embedded lock does not parse (a build bug).
pub fn pins() -> Result<Vec<SourcePin>, KbuildError> {
    toml::from_str::<SourcesLock>(SOURCES_LOCK).map(|l| l.source).map_err(KbuildError::SourcesLock)
}

/// What `--source` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceSpec {
    /// A kernel tree on disk (used in place, read-only: the build is out of tree).
    Tree(PathBuf),
    /// `debian:linux-source-X`: a pinned Debian source package.
    Debian(SourcePin),
}

impl SourceSpec {
    /// Parse `--source`: `debian:linux-source-6.12` (or `debian:6.12`), else a path.
    ///
    /// # Errors
    /// [`KbuildError::Source`] for an unknown Debian package (listing the pinned
    /// ones) or a path that is not a kernel tree.
    pub fn parse(s: &str) -> Result<Self, KbuildError> {
        if let Some(name) = s.strip_prefix("debian:") {
            let pins = pins()?;
            let want =
                if name.starts_with("linux-source-") { name.to_string() } else { format!("linux-source-{name}") };
            return pins.iter().find(|p| p.package == want).cloned().map(SourceSpec::Debian).ok_or_else(|| {
                KbuildError::Source(format!(
                    "{s}: not pinned in guest-images/kernel-sources.lock (pinned: {})",
                    pins.iter().map(|p| format!("debian:{}", p.package)).collect::<Vec<_>>().join(", ")
                ))
            });
        }
        let p = Path::new(s);
        if !p.join("Makefile").is_file() || !p.join("Kconfig").is_file() {
            return Err(KbuildError::Source(format!(
                "{s}: not a Linux source tree (no Makefile and Kconfig); use a tree path or debian:linux-source-6.1|6.12|7.3"
            )));
        }
        let canon = p.canonicalize().map_err(|e| KbuildError::io(p, e))?;
        Ok(SourceSpec::Tree(canon))
    }

    /// The identity that goes into the cache key: the pin for Debian sources;
    /// the canonical path for a tree (its content is followed by `make`'s own
    /// incremental rebuild, see [`super::key`]).
    pub fn identity(&self) -> String {
        match self {
            SourceSpec::Tree(p) => format!("tree:{}", p.display()),
            SourceSpec::Debian(pin) => format!("debian:{}={} sha256={}", pin.package, pin.version, pin.sha256),
        }
    }

    /// A short human label (`linux-source-6.12 6.12.117-1`, or the tree path).
    pub fn label(&self) -> String {
        match self {
            SourceSpec::Tree(p) => p.display().to_string(),
            SourceSpec::Debian(pin) => format!("{} {}", pin.package, pin.version),
        }
    }
}

impl SourcePin {
    fn package(&self) -> PackagePin {
        PackagePin {
            name: self.package.clone(),
            version: self.version.clone(),
            sha256: self.sha256.clone(),
            suite: None,
        }
    }
}

/// The unpacked tree of a Debian source: `<cache>/kbuild/src/<package>_<version>`.
fn unpacked_dir(cache: &Path, pin: &SourcePin) -> PathBuf {
    cache.join("kbuild/src").join(format!("{}_{}", pin.package, pin.version.replace([':', '~', '+'], "_")))
}

/// Where the fallback chosen for a gone pin is remembered, so that later builds
/// need no apt: `<cache>/kbuild/src/<package>_<pinned version>.fallback.json`.
fn fallback_record(cache: &Path, pin: &SourcePin) -> PathBuf {
    unpacked_dir(cache, pin).with_extension("fallback.json")
}

/// The source a build of `spec` uses: a tree as it is; a Debian pin itself
/// while it is unpacked in the cache or still in the archive; else (not
/// `--locked`) the newest version of the same package, said in one line and
/// remembered in the cache.
///
/// # Errors
/// Apt failures; the pin gone under `--locked`, or gone with no version of its
/// package left.
pub fn resolve(spec: &SourceSpec, cache: &Path, progress: &mut dyn FnMut(&str)) -> Result<SourceSpec, KbuildError> {
    let SourceSpec::Debian(pin) = spec else {
        return Ok(spec.clone());
    };
    let stamp = unpacked_dir(cache, pin).with_extension("stamp");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == spec.identity()) {
        return Ok(spec.clone());
    }
    let locked = fallback::locked();
    if let Some(used) = remembered_fallback(spec, cache) {
        return Ok(used);
    }
    let apt = AptRoot::prepare(&cache.join("apt"), &provision::apt::Archive::from_env()?)?;
    apt.update(false)?;
    let offered = |apt: &AptRoot| -> Result<bool, KbuildError> { Ok(fallback::available(apt, &pin.package())?) };
    if offered(&apt)? {
        return Ok(spec.clone());
    }
    progress(&format!("source: {} {} not in the cached indexes; refreshing them", pin.package, pin.version));
    apt.update(true)?;
    if offered(&apt)? {
        return Ok(spec.clone());
    }
    if locked {
        return Err(fallback::refused(&pin.package, &pin.version).into());
    }
    let newest = provision::update::newest_anywhere(&apt, &pin.package)?.ok_or_else(|| {
        KbuildError::Source(format!("{}: no version of the package is left in the archive", pin.package))
    })?;
    progress(&fallback::Fallback::new(&pin.package(), &newest, "the archive").to_string());
    let used = SourcePin { version: newest.version, sha256: newest.sha256, ..pin.clone() };
    std::fs::create_dir_all(cache.join("kbuild/src")).map_err(|e| KbuildError::io(&cache.join("kbuild/src"), e))?;
    crate::provision::write_stamp(&fallback_record(cache, pin), &used)?;
    Ok(SourceSpec::Debian(used))
}

/// The fallback a build of the gone pin `spec` took before, as remembered in
/// the cache (no apt); `None` for a tree, a pin never resolved, or `--locked`.
pub fn remembered_fallback(spec: &SourceSpec, cache: &Path) -> Option<SourceSpec> {
    let SourceSpec::Debian(pin) = spec else { return None };
    if fallback::locked() {
        return None;
    }
    crate::provision::read_stamp::<SourcePin>(&fallback_record(cache, pin)).map(SourceSpec::Debian)
}

/// The Debian source package a build's source identity names, against its pin
/// in guest-images/kernel-sources.lock (`None` for a user's tree).
pub fn used_package(identity: &str) -> Option<UsedPackage> {
    let rest = identity.strip_prefix("debian:")?;
    let (name, rest) = rest.split_once('=')?;
    let version = rest.split_whitespace().next()?;
    let pin = pins().ok()?.into_iter().find(|p| p.package == name);
    Some(UsedPackage {
        part: "kernel source".to_owned(),
        name: name.to_owned(),
        version: version.to_owned(),
        locked: pin.filter(|p| p.version != version).map(|p| format!("{} {}", p.package, p.version)),
    })
}

/// The tree for `spec`: the user's tree as is, or the Debian source unpacked
/// under `<cache>/kbuild/src/` (downloaded and checked on first use; about
/// 150 MB compressed, 1.5 GB unpacked).
///
/// # Errors
/// Apt / checksum / unpack failures as [`KbuildError`].
pub fn prepare(spec: &SourceSpec, cache: &Path, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, KbuildError> {
    let pin = match spec {
        SourceSpec::Tree(p) => return Ok(p.clone()),
        SourceSpec::Debian(pin) => pin,
    };
    let base = cache.join("kbuild/src");
    let dir = unpacked_dir(cache, pin);
    let stamp = dir.with_extension("stamp");
    if dir.join("Makefile").is_file() && std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == spec.identity()) {
        progress(&format!("source: {} (cached in {})", spec.label(), dir.display()));
        return Ok(dir);
    }
    std::fs::create_dir_all(&base).map_err(|e| KbuildError::io(&base, e))?;
    let apt = AptRoot::prepare(&cache.join("apt"), &provision::apt::Archive::from_env()?)?;
    apt.update(false)?;
    let deb = provision::fetch_pinned(&apt, cache, &pin.package(), progress)?;
    progress(&format!("source: unpacking {} (about a minute)", spec.label()));
    let tmp = tempfile::tempdir_in(&base).map_err(|e| KbuildError::io(&base, e))?;
    provision::apt::extract_deb(&deb, &tmp.path().join("deb"))?;
    let tarball = tmp.path().join("deb").join(&pin.tarball);
    let tree = tmp.path().join("tree");
    std::fs::create_dir_all(&tree).map_err(|e| KbuildError::io(&tree, e))?;
    let out = Command::new("tar")
        .arg("-xf")
        .arg(&tarball)
        .arg("-C")
        .arg(&tree)
        .output()
        .map_err(|e| KbuildError::Tool { tool: "tar".into(), error: e })?;
    if !out.status.success() {
        return Err(KbuildError::Source(format!(
            "tar -xf {}: {}",
            tarball.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    // The tarball holds one top folder (linux-source-X/).
    let top = std::fs::read_dir(&tree)
        .map_err(|e| KbuildError::io(&tree, e))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("Makefile").is_file())
        .ok_or_else(|| KbuildError::Source(format!("{}: no kernel tree inside {}", deb.display(), pin.tarball)))?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| KbuildError::io(&dir, e))?;
    }
    std::fs::rename(&top, &dir).map_err(|e| KbuildError::io(&dir, e))?;
    std::fs::write(&stamp, spec.identity()).map_err(|e| KbuildError::io(&stamp, e))?;
    progress(&format!("source: {} ready in {}", spec.label(), dir.display()));
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_pins_the_three_debian_sources() {
        let p = pins().expect("lock parses");
        let names: Vec<_> = p.iter().map(|p| p.package.as_str()).collect();
        assert_eq!(names, ["linux-source-6.1", "linux-source-6.12", "linux-source-7.3"]);
        assert!(p.iter().all(|p| p.sha256.len() == 64));
    }

    #[test]
    fn source_specs_parse() {
        let SourceSpec::Debian(pin) = SourceSpec::parse("debian:linux-source-6.12").expect("pinned") else { panic!() };
        assert_eq!(pin.version, "6.12.117-1");
        assert_eq!(SourceSpec::parse("debian:6.12").expect("short"), SourceSpec::Debian(pin));
        let e = SourceSpec::parse("debian:linux-source-5.10").expect_err("unpinned").to_string();
        assert!(e.contains("pinned: debian:linux-source-6.1"), "{e}");
        let d = tempfile::tempdir().expect("tmp");
        let e = SourceSpec::parse(&d.path().display().to_string()).expect_err("not a tree").to_string();
        assert!(e.contains("not a Linux source tree"), "{e}");
        std::fs::write(d.path().join("Makefile"), "").expect("w");
        std::fs::write(d.path().join("Kconfig"), "").expect("w");
        let t = SourceSpec::parse(&d.path().display().to_string()).expect("tree");
        assert!(t.identity().starts_with("tree:/"), "{}", t.identity());
    }

    #[test]
    fn a_builds_source_is_named_against_its_pin() {
        let SourceSpec::Debian(pin) = SourceSpec::parse("debian:linux-source-6.12").expect("pinned") else { panic!() };
        let same = used_package(&SourceSpec::Debian(pin.clone()).identity()).expect("debian");
        assert_eq!((same.name.as_str(), same.locked), ("linux-source-6.12", None));
        let newer = SourcePin { version: "6.12.119-1".into(), ..pin.clone() };
        let moved = used_package(&SourceSpec::Debian(newer).identity()).expect("debian");
        assert_eq!(moved.version, "6.12.119-1");
        assert_eq!(moved.locked, Some(format!("linux-source-6.12 {}", pin.version)));
        assert_eq!(used_package("tree:/src/linux"), None);
    }
}
