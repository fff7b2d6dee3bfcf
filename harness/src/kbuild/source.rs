//! Where a kernel build's source comes from: a user's tree, or a Debian
//! `linux-source-*` package pinned in guest-images/kernel-sources.lock,
//! downloaded through the private apt root and unpacked into the cache.

use super::KbuildError;
use crate::provision::{self, apt::AptRoot, lock::PackagePin};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned Debian kernel sources (guest-images/kernel-sources.lock).
pub const SOURCES_LOCK: &str = include_str!("../../../guest-images/kernel-sources.lock");

/// One pinned source package.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
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
/// [`KbuildError::Source`] if the embedded lock does not parse (a build bug).
pub fn clang_pin() -> Result<Option<ClangPin>, KbuildError> {
    toml::from_str::<SourcesLock>(SOURCES_LOCK)
        .map(|l| l.clang)
        .map_err(|e| KbuildError::Source(format!("guest-images/kernel-sources.lock: {e}")))
}

/// The pins of [`SOURCES_LOCK`].
///
/// # Errors
/// [`KbuildError::Source`] if the embedded lock does not parse (a build bug).
pub fn pins() -> Result<Vec<SourcePin>, KbuildError> {
    toml::from_str::<SourcesLock>(SOURCES_LOCK)
        .map(|l| l.source)
        .map_err(|e| KbuildError::Source(format!("guest-images/kernel-sources.lock: {e}")))
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
    let dir = base.join(format!("{}_{}", pin.package, pin.version.replace([':', '~', '+'], "_")));
    let stamp = dir.with_extension("stamp");
    if dir.join("Makefile").is_file() && std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == spec.identity()) {
        progress(&format!("source: {} (cached in {})", spec.label(), dir.display()));
        return Ok(dir);
    }
    std::fs::create_dir_all(&base).map_err(|e| KbuildError::io(&base, e))?;
    let apt = AptRoot::prepare(&cache.join("apt"))?;
    apt.update(false)?;
    let pkg = PackagePin { name: pin.package.clone(), version: pin.version.clone(), sha256: pin.sha256.clone() };
    let deb = provision::fetch_pinned(&apt, cache, &pkg, progress)?;
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
        .map_err(|e| KbuildError::Tool { tool: "tar".into(), source: e })?;
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
}
