//! `setup --update-lock`: move every pin of guest-images/kernels.lock and
//! guest-images/kernel-sources.lock to the newest version its track allows in
//! the archive indexes ([`super::fallback`]), rewriting only the pinned values
//! (comments and layout stay: `toml_edit`), and say each change, old → new.

use super::apt::AptRoot;
use super::fallback;
use super::lock::{Lock, PackagePin};
use super::qemu_install::MIN_QEMU;
use super::ProvisionError;
use std::path::{Path, PathBuf};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Value};

/// The two lock files `--update-lock` rewrites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockFiles {
    /// guest-images/kernels.lock.
    pub kernels: PathBuf,
    /// guest-images/kernel-sources.lock.
    pub sources: PathBuf,
}

impl LockFiles {
    /// The source tree's files (beside this crate).
    pub fn source_tree() -> LockFiles {
        // harness/crates/provision → the repository's root.
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = manifest.ancestors().nth(3).unwrap_or(manifest).join("guest-images");
        LockFiles { kernels: dir.join("kernels.lock"), sources: dir.join("kernel-sources.lock") }
    }

    /// The kernels lock, parsed.
    ///
    /// # Errors
    /// I/O and lock errors, naming the file.
    pub fn read_kernels(&self) -> Result<Lock, ProvisionError> {
        let text = std::fs::read_to_string(&self.kernels).map_err(|e| ProvisionError::io(&self.kernels, e))?;
        Ok(Lock::parse(&text, &self.kernels.display().to_string())?)
    }
}

/// Rewrite both lock files so that every pin is the newest of its track;
/// returns one line per change (`qemu-system-x86: 1:11.1.3+ds-1~bpo13+1 -> …`),
/// empty when every pin already is. Neither file is written unless both
/// updates succeed.
///
/// # Errors
/// I/O, TOML and apt errors; [`ProvisionError::Package`] for a track with
/// nothing left in the archive.
pub fn update_files(a: &AptRoot, files: &LockFiles) -> Result<Vec<String>, ProvisionError> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| ProvisionError::io(p, e));
    let kernels_text = read(&files.kernels)?;
    let sources_text = read(&files.sources)?;
    let mut changes = Vec::new();
    let new_kernels = update_kernels_lock(a, &kernels_text, &files.kernels.display().to_string(), &mut changes)?;
    let new_sources = update_sources_lock(a, &sources_text, &files.sources.display().to_string(), &mut changes)?;
    if new_kernels != kernels_text {
        std::fs::write(&files.kernels, &new_kernels).map_err(|e| ProvisionError::io(&files.kernels, e))?;
    }
    if new_sources != sources_text {
        std::fs::write(&files.sources, &new_sources).map_err(|e| ProvisionError::io(&files.sources, e))?;
    }
    Ok(changes)
}

fn parse_doc(text: &str, origin: &str) -> Result<DocumentMut, ProvisionError> {
    text.parse::<DocumentMut>().map_err(|e| ProvisionError::Package(format!("{origin}: {e}")))
}

fn bad(origin: &str, what: &str) -> ProvisionError {
    ProvisionError::Package(format!("{origin}: {what}"))
}

/// guest-images/kernels.lock with every section moved to the newest of its track.
fn update_kernels_lock(
    a: &AptRoot,
    text: &str,
    origin: &str,
    changes: &mut Vec<String>,
) -> Result<String, ProvisionError> {
    let lock = Lock::parse(text, origin)?;
    let mut doc = parse_doc(text, origin)?;

    let (version, suite) =
        fallback::newest_qemu(a, &lock.qemu.package, (MIN_QEMU.0, MIN_QEMU.1))?.ok_or_else(|| {
            bad(origin, &format!("no {} {}.{} or newer in the archive", lock.qemu.package, MIN_QEMU.0, MIN_QEMU.1))
        })?;
    if version != lock.qemu.version || suite != lock.qemu.suite {
        changes.push(format!("{}: {} -> {version} ({suite})", lock.qemu.package, lock.qemu.version));
        doc["qemu"]["version"] = toml_edit::value(version);
        doc["qemu"]["suite"] = toml_edit::value(suite);
    }

    let bb = &lock.busybox;
    let newest = fallback::newest_in_suite(a, &bb.track, &bb.suite)?
        .ok_or_else(|| bad(origin, &format!("busybox: no {} in {}", bb.track, bb.suite)))?;
    let bb_new = fallback::pin_of(&newest);
    if bb_new != bb.package {
        changes.push(format!("{}: {} -> {}", bb.package.name, bb.package.version, bb_new.version));
        doc["busybox"]["package"] = Item::Value(Value::InlineTable(inline(&bb_new)));
    }

    for (section, pin) in [("ethtool", &lock.ethtool), ("irqbalance", &lock.irqbalance), ("selftests", &lock.selftests)]
    {
        let using = fallback::newest_list_in_suite(a, &pin.packages, &pin.suite)?;
        if using != pin.packages {
            for (old, new) in pin.packages.iter().zip(&using).filter(|(o, n)| o != n) {
                changes.push(format!("{section}: {}: {} -> {}", old.name, old.version, new.version));
            }
            doc[section]["packages"] = Item::Value(Value::Array(package_list(&using)));
        }
    }

    let tables = doc
        .get_mut("kernel")
        .and_then(Item::as_array_of_tables_mut)
        .ok_or_else(|| bad(origin, "no [[kernel]] tables"))?;
    for (table, pin) in tables.iter_mut().zip(&lock.kernels) {
        let (image, carriers, release) = fallback::newest_kernel(a, &pin.track)?
            .ok_or_else(|| bad(origin, &format!("kernel {}: no package matches {:?}", pin.id, pin.track)))?;
        if carriers != pin.packages {
            changes.push(format!("kernel {}: {} -> {release} ({})", pin.name(), pin.release, image.version));
            table["release"] = toml_edit::value(release);
            table["packages"] = Item::Value(Value::Array(package_list(&carriers)));
        }
    }
    let out = doc.to_string();
    Lock::parse(&out, &format!("updated {origin}"))?;
    Ok(out)
}

/// guest-images/kernel-sources.lock with every `linux-source-*` at the newest
/// version of its package (the same upstream series: the name holds it), and
/// `[clang]` at the newest version of its package in its suite.
fn update_sources_lock(
    a: &AptRoot,
    text: &str,
    origin: &str,
    changes: &mut Vec<String>,
) -> Result<String, ProvisionError> {
    let mut doc = parse_doc(text, origin)?;
    let tables = doc
        .get_mut("source")
        .and_then(Item::as_array_of_tables_mut)
        .ok_or_else(|| bad(origin, "no [[source]] tables"))?;
    for table in tables.iter_mut() {
        let field = |k: &str| table.get(k).and_then(Item::as_str).map(str::to_owned);
        let (Some(package), Some(version)) = (field("package"), field("version")) else {
            return Err(bad(origin, "a [[source]] without package or version"));
        };
        let newest = newest_anywhere(a, &package)?
            .ok_or_else(|| bad(origin, &format!("{package}: not in the archive any more")))?;
        if newest.version != version {
            changes.push(format!("{package}: {version} -> {}", newest.version));
            table["version"] = toml_edit::value(newest.version.clone());
            table["sha256"] = toml_edit::value(newest.sha256.clone());
        }
    }
    // [clang]: the newest version of its package in its suite.
    if let Some(clang) = doc.get_mut("clang").and_then(Item::as_table_like_mut) {
        let field = |k: &str| clang.get(k).and_then(Item::as_str).map(str::to_owned);
        let (Some(package), Some(version), Some(suite)) = (field("package"), field("version"), field("suite")) else {
            return Err(bad(origin, "[clang] without package, version or suite"));
        };
        let newest = fallback::newest_in_suite(a, &package, &suite)?
            .ok_or_else(|| bad(origin, &format!("{package}: not in {suite} any more")))?;
        if newest.version != version {
            changes.push(format!("{package}: {version} -> {}", newest.version));
            clang.insert("version", toml_edit::value(newest.version));
        }
    }
    Ok(doc.to_string())
}

/// The newest version of `name` in any configured suite but the opt-in
/// ones ([`super::apt::OPT_IN_SUITES`]).
pub(crate) fn newest_anywhere(a: &AptRoot, name: &str) -> Result<Option<PackagePin>, ProvisionError> {
    let mut best: Option<&str> = None;
    let offered = a.offered(name)?;
    for o in offered.iter().filter(|o| !super::apt::opt_in(&o.suite)) {
        if best.map_or(Ok(true), |b| AptRoot::version_gt(&o.version, b))? {
            best = Some(&o.version);
        }
    }
    let Some(version) = best else { return Ok(None) };
    Ok(a.entry(name, version)?.map(|e| fallback::pin_of(&e)))
}

/// `{ name = "…", version = "…", sha256 = "…" }`, and `suite = "…"` for a
/// package with its own suite.
fn inline(p: &PackagePin) -> InlineTable {
    let mut t = InlineTable::new();
    t.insert("name", p.name.as_str().into());
    t.insert("version", p.version.as_str().into());
    t.insert("sha256", p.sha256.as_str().into());
    if let Some(suite) = &p.suite {
        t.insert("suite", suite.as_str().into());
    }
    t.fmt();
    t
}

/// A package list laid out as the shipped lock writes it: one inline table a
/// line, indented two spaces, with a trailing comma.
fn package_list(pins: &[PackagePin]) -> Array {
    let mut arr = Array::new();
    for p in pins {
        arr.push_formatted(Value::InlineTable(inline(p)).decorated("\n  ", ""));
    }
    arr.set_trailing("\n");
    arr.set_trailing_comma(true);
    arr
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewritten_package_list_keeps_the_shipped_layout() {
        let lock = Lock::embedded().expect("lock");
        let mut doc: DocumentMut = super::super::lock::EMBEDDED_LOCK.parse().expect("toml");
        doc["ethtool"]["packages"] = Item::Value(Value::Array(package_list(&lock.ethtool.packages)));
        doc["busybox"]["package"] = Item::Value(Value::InlineTable(inline(&lock.busybox.package)));
        // [selftests] holds a package with its own suite (forky's ethtool).
        assert!(lock.selftests.packages.iter().any(|p| p.suite.is_some()));
        doc["selftests"]["packages"] = Item::Value(Value::Array(package_list(&lock.selftests.packages)));
        assert_eq!(doc.to_string(), super::super::lock::EMBEDDED_LOCK, "same values, same text");
    }
}
