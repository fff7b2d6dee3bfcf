//! `setup --update-lock`: move every pin of guest-images/kernels.lock and
//! guest-images/kernel-sources.lock to the newest version its track allows in
//! the archive indexes ([`super::fallback`]), rewriting only the pinned values
//! (comments and layout stay: `toml_edit`), and say each change, old → new.

use super::apt::AptRoot;
use super::fallback;
use super::lock::{BusyboxPin, KernelPin, Lock, PackagePin, QemuPin, ToolPin};
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
/// updates succeed. `host` reads the amd64 indexes; `arm64` gives the root
/// of the arm64 guests' packages, asked for only when the lock has an
/// `[arm64]` section (its kernels, busybox, ethtool and `qemu-user` are arm64
/// packages; its QEMU, firmware and x86_64 libc are read through `host`, as
/// `super::arm64::setup` provisions them).
///
/// # Errors
/// I/O, TOML and apt errors; [`ProvisionError::Package`] for a track with
/// nothing left in the archive.
pub fn update_files(
    host: &AptRoot,
    arm64: &mut dyn FnMut() -> Result<AptRoot, ProvisionError>,
    files: &LockFiles,
) -> Result<Vec<String>, ProvisionError> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| ProvisionError::io(p, e));
    let kernels_text = read(&files.kernels)?;
    let sources_text = read(&files.sources)?;
    let mut changes = Vec::new();
    let new_kernels =
        update_kernels_lock(host, arm64, &kernels_text, &files.kernels.display().to_string(), &mut changes)?;
    let new_sources = update_sources_lock(host, &sources_text, &files.sources.display().to_string(), &mut changes)?;
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

/// guest-images/kernels.lock with every section moved to the newest of its
/// track: the x86 sections through `host`, then `[arm64]`'s (see [`update_files`]).
fn update_kernels_lock(
    host: &AptRoot,
    arm64: &mut dyn FnMut() -> Result<AptRoot, ProvisionError>,
    text: &str,
    origin: &str,
    changes: &mut Vec<String>,
) -> Result<String, ProvisionError> {
    let lock = Lock::parse(text, origin)?;
    let mut doc = parse_doc(text, origin)?;
    let root = doc.as_table_mut();
    let mut x86 = Sections { table: root, label: "", origin, changes: &mut *changes };
    x86.qemu(host, "qemu", &lock.qemu)?;
    x86.busybox(host, "busybox", &lock.busybox)?;
    for (section, pin) in [("ethtool", &lock.ethtool), ("irqbalance", &lock.irqbalance), ("selftests", &lock.selftests)]
    {
        x86.list(host, section, pin)?;
    }
    x86.kernels(host, &lock.kernels)?;
    if let Some(pins) = &lock.arm64 {
        let guest = arm64()?;
        let table = root
            .get_mut("arm64")
            .and_then(Item::as_table_like_mut)
            .ok_or_else(|| bad(origin, "[arm64] is not a table"))?;
        let mut arm = Sections { table, label: "arm64.", origin, changes: &mut *changes };
        arm.qemu(host, "qemu", &pins.qemu)?;
        arm.list(host, "firmware", &pins.firmware)?;
        arm.list(host, "x86_libc", &pins.x86_libc)?;
        arm.busybox(&guest, "busybox", &pins.busybox)?;
        arm.list(&guest, "ethtool", &pins.ethtool)?;
        arm.list(&guest, "x86_user", &pins.x86_user)?;
        arm.kernels(&guest, &pins.kernels)?;
    }
    let out = doc.to_string();
    Lock::parse(&out, &format!("updated {origin}"))?;
    Ok(out)
}

/// The sections of one table of kernels.lock (the top level, or `[arm64]`),
/// each moved to the newest of its track in the indexes it is read through;
/// a change is said as `{label}{section}: …` (`arm64.ethtool: libc6: … -> …`).
struct Sections<'t, 'c> {
    table: &'t mut dyn toml_edit::TableLike,
    /// `""` for the x86 sections, `"arm64."` for `[arm64]`'s.
    label: &'static str,
    origin: &'t str,
    changes: &'c mut Vec<String>,
}

impl Sections<'_, '_> {
    fn section(&mut self, name: &str) -> Result<&mut Item, ProvisionError> {
        let (label, origin) = (self.label, self.origin);
        self.table.get_mut(name).ok_or_else(|| bad(origin, &format!("no [{label}{name}]")))
    }

    /// QEMU: the newest version with upstream at least [`MIN_QEMU`] and its suite.
    fn qemu(&mut self, a: &AptRoot, name: &str, pin: &QemuPin) -> Result<(), ProvisionError> {
        let (version, suite) = fallback::newest_qemu(a, &pin.package, (MIN_QEMU.0, MIN_QEMU.1))?.ok_or_else(|| {
            bad(self.origin, &format!("no {} {}.{} or newer in the archive", pin.package, MIN_QEMU.0, MIN_QEMU.1))
        })?;
        if version != pin.version || suite != pin.suite {
            self.changes.push(format!("{}: {} -> {version} ({suite})", pin.package, pin.version));
            let t = self.section(name)?;
            t["version"] = toml_edit::value(version);
            t["suite"] = toml_edit::value(suite);
        }
        Ok(())
    }

    /// busybox: the newest of its track in its suite.
    fn busybox(&mut self, a: &AptRoot, name: &str, pin: &BusyboxPin) -> Result<(), ProvisionError> {
        let newest = fallback::newest_in_suite(a, &pin.track, &pin.suite)?
            .ok_or_else(|| bad(self.origin, &format!("{}{name}: no {} in {}", self.label, pin.track, pin.suite)))?;
        let new = fallback::pin_of(&newest);
        if new != pin.package {
            let at = if self.label.is_empty() { String::new() } else { format!("{}{name}: ", self.label) };
            self.changes.push(format!("{at}{}: {} -> {}", pin.package.name, pin.package.version, new.version));
            self.section(name)?["package"] = Item::Value(Value::InlineTable(inline(&new)));
        }
        Ok(())
    }

    /// A package list: every name at its newest in its suite, resolved together.
    fn list(&mut self, a: &AptRoot, name: &str, pin: &ToolPin) -> Result<(), ProvisionError> {
        let using = fallback::newest_list_in_suite(a, &pin.packages, &pin.suite)?;
        if using != pin.packages {
            for (old, new) in pin.packages.iter().zip(&using).filter(|(o, n)| o != n) {
                self.changes.push(format!("{}{name}: {}: {} -> {}", self.label, old.name, old.version, new.version));
            }
            self.section(name)?["packages"] = Item::Value(Value::Array(package_list(&using)));
        }
        Ok(())
    }

    /// `[[kernel]]`: the newest image of each track, with the packages that carry it.
    fn kernels(&mut self, a: &AptRoot, pins: &[KernelPin]) -> Result<(), ProvisionError> {
        let (label, origin) = (self.label, self.origin);
        let mut moved = Vec::new();
        for pin in pins {
            let (image, carriers, release) = fallback::newest_kernel(a, &pin.track)?
                .ok_or_else(|| bad(origin, &format!("{label}kernel {}: no package matches {:?}", pin.id, pin.track)))?;
            if carriers != pin.packages {
                self.changes.push(format!(
                    "{label}kernel {}: {} -> {release} ({})",
                    pin.name(),
                    pin.release,
                    image.version
                ));
            }
            moved.push((release, carriers));
        }
        let tables = self
            .section("kernel")?
            .as_array_of_tables_mut()
            .ok_or_else(|| bad(origin, &format!("no [[{label}kernel]] tables")))?;
        for ((table, pin), (release, carriers)) in tables.iter_mut().zip(pins).zip(moved) {
            if carriers != pin.packages {
                table["release"] = toml_edit::value(release);
                table["packages"] = Item::Value(Value::Array(package_list(&carriers)));
            }
        }
        Ok(())
    }
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
