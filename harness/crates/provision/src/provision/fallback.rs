//! When a pin has left the archive: the newest version its track allows
//! (guest-images/kernels.lock's header names the tracks), found in apt's
//! signed indexes, and the one line that says so.
//!
//! Debian keeps only current versions: kernels move with every security
//! update, backports are rebuilt, libc gets point releases. A fresh machine
//! must still get a result, so a gone pin falls back, unless the user asked
//! for the lock and nothing else ([`locked`]).

use super::apt::{AptRoot, IndexEntry};
use super::lock::{glob_match, PackagePin};
use super::ProvisionError;
use std::sync::atomic::{AtomicBool, Ordering};

/// Environment variable that makes every fallback an error (`1`, `true` or `yes`).
pub const LOCKED_ENV: &str = "MANARIG_LOCKED";

static LOCKED: AtomicBool = AtomicBool::new(false);

/// Refuse every fallback from now on in this process (`--locked`).
pub fn set_locked() {
    LOCKED.store(true, Ordering::Relaxed);
}

/// Whether fallbacks are refused: `--locked` was given, or [`LOCKED_ENV`] is set.
pub fn locked() -> bool {
    LOCKED.load(Ordering::Relaxed) || std::env::var(LOCKED_ENV).is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"))
}

/// One fallback, as setup prints it and the cache stamps keep it:
/// `qemu-system-x86: pinned 1:11.1.3+ds-1~bpo13+1 is gone from trixie-backports; using 1:11.1.3+ds-2~bpo13+1`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fallback {
    /// The pinned package's name.
    pub package: String,
    /// The pinned version.
    pub pinned: String,
    /// Where the pin came from: a suite, or `the archive` when the pin names none.
    pub gone_from: String,
    /// The package used instead (the same name, or the track's newer name).
    pub using_name: String,
    /// Its version.
    pub using_version: String,
}

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: pinned {} is gone from {}; using ", self.package, self.pinned, self.gone_from)?;
        if self.using_name == self.package {
            write!(f, "{}", self.using_version)
        } else {
            write!(f, "{} {}", self.using_name, self.using_version)
        }
    }
}

impl Fallback {
    /// The fallback from `pinned` to `using`, gone from `gone_from`.
    pub fn new(pinned: &PackagePin, using: &PackagePin, gone_from: &str) -> Fallback {
        Fallback {
            package: pinned.name.clone(),
            pinned: pinned.version.clone(),
            gone_from: gone_from.to_owned(),
            using_name: using.name.clone(),
            using_version: using.version.clone(),
        }
    }
}

/// The error for a gone pin under [`locked`]: the one-line message of
/// [`ProvisionError::VersionGone`] with what to do.
pub fn refused(package: &str, version: &str) -> ProvisionError {
    ProvisionError::VersionGone { package: package.to_owned(), version: version.to_owned() }
}

/// A package pin from an index entry (its SHA-256 is the signed index's).
pub fn pin_of(e: &IndexEntry) -> PackagePin {
    PackagePin { name: e.name.clone(), version: e.version.clone(), sha256: e.sha256.clone(), suite: None }
}

/// The newest of `versions` by Debian's ordering.
fn newest_version<'a>(versions: impl Iterator<Item = &'a str>) -> Result<Option<&'a str>, ProvisionError> {
    let mut best: Option<&str> = None;
    for v in versions {
        if best.map_or(Ok(true), |b| AptRoot::version_gt(v, b))? {
            best = Some(v);
        }
    }
    Ok(best)
}

/// The newest version of `name` that `suite` offers, with its index entry.
///
/// # Errors
/// apt failures.
pub fn newest_in_suite(a: &AptRoot, name: &str, suite: &str) -> Result<Option<IndexEntry>, ProvisionError> {
    let offered = a.offered(name)?;
    let Some(v) = newest_version(offered.iter().filter(|o| o.suite == suite).map(|o| o.version.as_str()))? else {
        return Ok(None);
    };
    a.entry(name, v)
}

/// Whether `pin` is still in the indexes (the exact version; its SHA-256 is
/// checked after the download).
///
/// # Errors
/// apt failures.
pub fn available(a: &AptRoot, pin: &PackagePin) -> Result<bool, ProvisionError> {
    Ok(first_gone(a, std::slice::from_ref(pin))?.is_none())
}

/// The first of `pins` the indexes no longer offer (one `apt-cache` run).
///
/// # Errors
/// apt failures.
pub fn first_gone<'p>(a: &AptRoot, pins: &'p [PackagePin]) -> Result<Option<&'p PackagePin>, ProvisionError> {
    let names: Vec<&str> = pins.iter().map(|p| p.name.as_str()).collect();
    let offered = a.offered_all(&names)?;
    Ok(pins.iter().find(|p| !offered.iter().any(|o| o.name == p.name && o.version == p.version)))
}

/// The upstream (major, minor) of a Debian version: `1:11.1.3+ds-2~bpo13+1` → (11, 1).
pub fn upstream_major_minor(version: &str) -> Option<(u32, u32)> {
    let v = version.split_once(':').map_or(version, |(_, rest)| rest);
    let mut it = v.split(['.', '+', '-', '~']).map(str::parse::<u32>);
    Some((it.next()?.ok()?, it.next()?.ok()?))
}

/// QEMU's track: the newest version of `package` with upstream at least `min`
/// in any configured suite but the opt-in ones ([`super::apt::OPT_IN_SUITES`]),
/// and that suite (apt's `-t` for its closure).
///
/// # Errors
/// apt failures.
pub fn newest_qemu(a: &AptRoot, package: &str, min: (u32, u32)) -> Result<Option<(String, String)>, ProvisionError> {
    let offered = a.offered(package)?;
    let fits = offered
        .iter()
        .filter(|o| !super::apt::opt_in(&o.suite))
        .filter(|o| upstream_major_minor(&o.version).is_some_and(|mm| mm >= min));
    let Some(v) = newest_version(fits.clone().map(|o| o.version.as_str()))? else {
        return Ok(None);
    };
    Ok(offered.iter().find(|o| o.version == v).map(|o| (o.version.clone(), o.suite.clone())))
}

/// A kernel's track: the newest `linux-image-*` package whose name matches
/// `track`, with the packages that carry its files (itself, or for Debian's
/// split 7.x kernels the `linux-binary-*` and `linux-modules-*` it depends on)
/// and its `uname -r` (the name without `linux-image-`).
///
/// # Errors
/// apt failures; [`ProvisionError::Package`] when a carrier of the newest image
/// is missing from the indexes.
pub fn newest_kernel(
    a: &AptRoot,
    track: &str,
) -> Result<Option<(IndexEntry, Vec<PackagePin>, String)>, ProvisionError> {
    let prefix = track.split('*').next().unwrap_or(track);
    let names: Vec<String> = a.package_names(prefix)?.into_iter().filter(|n| glob_match(track, n)).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut best: Option<IndexEntry> = None;
    for e in a.show_all(&names)? {
        if best.as_ref().map_or(Ok(true), |b| AptRoot::version_gt(&e.version, &b.version))? {
            best = Some(e);
        }
    }
    let Some(image) = best else {
        return Ok(None);
    };
    let carriers = carriers(a, &image)?;
    let release = image.name.trim_start_matches("linux-image-").to_owned();
    Ok(Some((image, carriers, release)))
}

/// The packages that carry the files of `image`.
fn carriers(a: &AptRoot, image: &IndexEntry) -> Result<Vec<PackagePin>, ProvisionError> {
    let mut out = Vec::new();
    for dep in image.depends.split(',').map(str::trim) {
        let name = dep.split_whitespace().next().unwrap_or("");
        if name.starts_with("linux-binary-") || name.starts_with("linux-modules-") {
            let e = a
                .entry(name, &image.version)?
                .ok_or_else(|| ProvisionError::Package(format!("{name} {} not in the archive", image.version)))?;
            out.push(pin_of(&e));
        }
    }
    if out.is_empty() {
        out.push(pin_of(image));
    }
    Ok(out)
}

/// A package list's track: every name of `pins` at its newest version in
/// its suite (the package's own, else `suite`), resolved together (a closure
/// is never mixed), and checked: a package whose `Depends` names another of
/// the list with a version that list does not meet is refused (forky's
/// ethtool beside trixie's libc6).
///
/// # Errors
/// [`ProvisionError::Package`] naming the packages the suite no longer has,
/// or a dependency the list does not meet; apt failures.
pub fn newest_list_in_suite(a: &AptRoot, pins: &[PackagePin], suite: &str) -> Result<Vec<PackagePin>, ProvisionError> {
    let mut out = Vec::new();
    let mut missing = Vec::new();
    let mut depends = Vec::new();
    for p in pins {
        let from = p.suite_or(suite);
        match newest_in_suite(a, &p.name, from)? {
            Some(e) => {
                depends.push((e.name.clone(), e.depends.clone()));
                out.push(PackagePin { suite: p.suite.clone(), ..pin_of(&e) });
            }
            None => missing.push(format!("{} (from {from})", p.name)),
        }
    }
    if !missing.is_empty() {
        return Err(ProvisionError::Package(format!(
            "{} no longer in its suite (renamed or dropped); pin the new names in guest-images/kernels.lock",
            missing.join(", ")
        )));
    }
    for (name, field) in &depends {
        if let Some(why) = unmet_within(field, &out)? {
            return Err(ProvisionError::Package(format!(
                "{name}, the newest of its suite, depends on {why}; pin versions that fit together in \
                 guest-images/kernels.lock"
            )));
        }
    }
    Ok(out)
}

/// The first relation of a `Depends` field (`libc6 (>= 2.34), libmnl0 (>= 1.0.3-4~)`)
/// on a package of `list` that the list's version does not meet, said as
/// `libc6 (>= 2.42), and the list has 2.41-12`. Alternatives (`a | b`) and
/// packages outside the list are not judged.
fn unmet_within(field: &str, list: &[PackagePin]) -> Result<Option<String>, ProvisionError> {
    for relation in field.split(',').map(str::trim).filter(|r| !r.contains('|')) {
        let (name, constraint) = match relation.split_once('(') {
            Some((n, c)) => (n.trim(), c.trim_end_matches(')').trim()),
            None => (relation, ""),
        };
        let name = name.split(':').next().unwrap_or(name);
        let Some(have) = list.iter().find(|p| p.name == name) else { continue };
        let Some((op, want)) = constraint.split_once(' ') else { continue };
        let want = want.trim();
        let met = match op {
            ">=" => !AptRoot::version_gt(want, &have.version)?,
            ">>" => AptRoot::version_gt(&have.version, want)?,
            "<=" => !AptRoot::version_gt(&have.version, want)?,
            "<<" => AptRoot::version_gt(want, &have.version)?,
            "=" => have.version == want,
            _ => true,
        };
        if !met {
            return Ok(Some(format!("{relation}, and the list has {}", have.version)));
        }
    }
    Ok(None)
}

/// The fallbacks of a list resolved again: one per package whose version
/// moved, each naming the package's suite (its own, else `suite`).
pub fn list_fallbacks(pinned: &[PackagePin], using: &[PackagePin], suite: &str) -> Vec<Fallback> {
    pinned
        .iter()
        .zip(using)
        .filter(|(p, u)| p.version != u.version || p.name != u.name)
        .map(|(p, u)| Fallback::new(p, u, p.suite_or(suite)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_versions_read_through_epochs_and_debian_suffixes() {
        assert_eq!(upstream_major_minor("1:11.1.3+ds-2~bpo13+1"), Some((11, 1)));
        assert_eq!(upstream_major_minor("1:10.0.13+ds-0+deb13u1"), Some((10, 0)));
        assert_eq!(upstream_major_minor("1:7.2+dfsg-7+deb12u18+b3"), Some((7, 2)));
        assert_eq!(upstream_major_minor("junk"), None);
    }

    #[test]
    fn a_dependency_on_a_newer_library_than_the_list_holds_is_named() {
        if std::process::Command::new("dpkg").arg("--version").output().is_err() {
            return; // dpkg --compare-versions is the judge; not on this host
        }
        let pin =
            |n: &str, v: &str| PackagePin { name: n.into(), version: v.into(), sha256: String::new(), suite: None };
        let list = [pin("ethtool", "1:7.2-1"), pin("libmnl0", "1.0.5-3"), pin("libc6", "2.41-12+deb13u5")];
        // forky's ethtool 7.2 (apt-cache show, forky): met by trixie's libraries.
        assert_eq!(unmet_within("libc6 (>= 2.34), libmnl0 (>= 1.0.3-4~)", &list).expect("dpkg"), None);
        let why = unmet_within("libc6 (>= 2.42), libmnl0 (>= 1.0.3-4~)", &list).expect("dpkg").expect("unmet");
        assert_eq!(why, "libc6 (>= 2.42), and the list has 2.41-12+deb13u5");
        assert_eq!(unmet_within("libfoo (>= 9), libc6:any | libc6-udeb", &list).expect("dpkg"), None);
        assert!(unmet_within("libmnl0 (= 1.0.5-4)", &list).expect("dpkg").is_some());
    }

    #[test]
    fn a_fallback_line_names_the_pin_the_suite_and_what_is_used() {
        let pin =
            |n: &str, v: &str| PackagePin { name: n.into(), version: v.into(), sha256: String::new(), suite: None };
        let f = Fallback::new(
            &pin("qemu-system-x86", "1:11.1.3+ds-1~bpo13+1"),
            &pin("qemu-system-x86", "1:11.1.3+ds-2~bpo13+1"),
            "trixie-backports",
        );
        assert_eq!(
            f.to_string(),
            "qemu-system-x86: pinned 1:11.1.3+ds-1~bpo13+1 is gone from trixie-backports; using 1:11.1.3+ds-2~bpo13+1"
        );
        let k = Fallback::new(
            &pin("linux-image-6.1.0-57-cloud-amd64", "6.1.192-3"),
            &pin("linux-image-6.1.0-58-cloud-amd64", "6.1.193-1"),
            "the archive",
        );
        assert!(k.to_string().ends_with("using linux-image-6.1.0-58-cloud-amd64 6.1.193-1"), "{k}");
    }
}
