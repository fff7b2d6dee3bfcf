//! `setup --update-lock`: move every pin to the newest package its `track`
//! matches in the archive indexes, rewriting only the pinned lines of the lock
//! text (comments stay).

use super::apt::{AptRoot, IndexEntry};
use super::lock::{glob_match, Lock, PackagePin};
use super::ProvisionError;

/// Render a package list exactly as the shipped lock writes it.
fn render_packages(pkgs: &[PackagePin]) -> String {
    let mut s = String::from("packages = [\n");
    for p in pkgs {
        s.push_str(&format!(
            "  {{ name = \"{}\", version = \"{}\", sha256 = \"{}\" }},\n",
            p.name, p.version, p.sha256
        ));
    }
    s.push(']');
    s
}

fn render_busybox(p: &PackagePin) -> String {
    format!("package = {{ name = \"{}\", version = \"{}\", sha256 = \"{}\" }}", p.name, p.version, p.sha256)
}

/// The newest index entry among all packages whose name matches `track`.
fn newest(a: &AptRoot, track: &str) -> Result<IndexEntry, ProvisionError> {
    let prefix = track.split('*').next().unwrap_or(track);
    let mut best: Option<IndexEntry> = None;
    for name in a.package_names(prefix)?.into_iter().filter(|n| glob_match(track, n)) {
        for e in a.show(&name)? {
            if best.as_ref().map_or(Ok(true), |b| AptRoot::version_gt(&e.version, &b.version))? {
                best = Some(e);
            }
        }
    }
    best.ok_or_else(|| ProvisionError::Package(format!("no package in the archive matches {track:?}")))
}

/// The packages that carry the files of `image`: itself, or for Debian's split
/// 7.x kernels the `linux-binary-*` and `linux-modules-*` it depends on.
fn carriers(a: &AptRoot, image: &IndexEntry) -> Result<Vec<PackagePin>, ProvisionError> {
    let mut out = Vec::new();
    for dep in image.depends.split(',').map(str::trim) {
        let name = dep.split_whitespace().next().unwrap_or("");
        if name.starts_with("linux-binary-") || name.starts_with("linux-modules-") {
            let e = a
                .show(name)?
                .into_iter()
                .find(|e| e.version == image.version)
                .ok_or_else(|| ProvisionError::Package(format!("{name} {} not in the archive", image.version)))?;
            out.push(PackagePin { name: e.name, version: e.version, sha256: e.sha256 });
        }
    }
    if out.is_empty() {
        out.push(PackagePin { name: image.name.clone(), version: image.version.clone(), sha256: image.sha256.clone() });
    }
    Ok(out)
}

/// Compute the updated lock: (new text, parsed lock, one line per change).
pub(super) fn update_lock(a: &AptRoot, text: &str, lock: &Lock) -> Result<(String, Lock, Vec<String>), ProvisionError> {
    let mut text = text.to_string();
    let mut changes = Vec::new();
    for k in &lock.kernels {
        let image = newest(a, &k.track)?;
        let release = image.name.trim_start_matches("linux-image-").to_string();
        let pkgs = carriers(a, &image)?;
        if pkgs != k.packages {
            let old = render_packages(&k.packages);
            if !text.contains(&old) {
                return Err(ProvisionError::Package(format!(
                    "kernel {}: cannot find its packages list in the lock text to rewrite; edit it by hand to {}",
                    k.id,
                    render_packages(&pkgs)
                )));
            }
            text = text.replacen(&old, &render_packages(&pkgs), 1);
            text = text.replacen(&format!("release = \"{}\"", k.release), &format!("release = \"{release}\""), 1);
            changes.push(format!("kernel {}: {} -> {release} ({})", k.id, k.release, image.version));
        }
    }
    let bb = newest(a, &lock.busybox.track)?;
    let bb_pin = PackagePin { name: bb.name, version: bb.version, sha256: bb.sha256 };
    if bb_pin != lock.busybox.package {
        text = text.replacen(&render_busybox(&lock.busybox.package), &render_busybox(&bb_pin), 1);
        changes.push(format!("busybox: {} -> {}", lock.busybox.package.version, bb_pin.version));
    }
    let new_lock = Lock::parse(&text, "updated guest-images/kernels.lock")?;
    Ok((text, new_lock, changes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering_matches_the_shipped_lock_text() {
        let lock = Lock::embedded().expect("lock");
        for k in &lock.kernels {
            assert!(super::super::lock::EMBEDDED_LOCK.contains(&render_packages(&k.packages)), "kernel {}", k.id);
        }
        assert!(super::super::lock::EMBEDDED_LOCK.contains(&render_busybox(&lock.busybox.package)));
    }
}
