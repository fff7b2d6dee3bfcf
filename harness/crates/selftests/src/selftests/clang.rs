//! The clang that builds the selftests' BPF programs: the `[clang]` pin of
//! guest-images/kernel-sources.lock (Debian bookworm's, the build hosts' own
//! release) with its dependency closure as apt resolves it, unpacked into
//! `<cache>/selftests/clang/<pinned version>/root` (no host package changes)
//! and run through a wrapper that puts its libraries on `LD_LIBRARY_PATH`.
//!
//! A pin that has left its suite falls back as every pin does
//! (`crate::provision::fallback`): the newest version of the package in the
//! same suite, said in one line and remembered in the stamp, unless
//! `--locked`; `setup --update-lock` moves the pin
//! (`crate::provision::update`).

use crate::kbuild::source::{clang_pin, ClangPin};
use crate::provision::apt::{self, AptRoot};
use crate::provision::fallback;
use crate::provision::lock::PackagePin;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Serialize, Deserialize, PartialEq)]
struct Stamp {
    pin: ClangPin,
    /// The version unpacked when the pin had left its suite (a fallback).
    #[serde(default)]
    used: Option<String>,
}

/// The wrapper's text: clang from `root` with its libraries.
fn wrapper(root: &Path, llvm: &str) -> String {
    let r = root.display();
    format!(
        "#!/bin/sh\n# Written by manarig (harness/crates/selftests/src/selftests/clang.rs): Debian's clang from {r}.\n\
         LD_LIBRARY_PATH={r}/usr/lib/x86_64-linux-gnu:{r}/usr/lib/{llvm}/lib exec {r}/usr/lib/{llvm}/bin/clang \"$@\"\n"
    )
}

/// The version of `pin` to unpack: the pin itself while its suite offers
/// it (the indexes refreshed once before saying it is gone), else, unless
/// `--locked`, the newest version of the package in that suite, said in
/// one line as every fallback is.
fn resolve(a: &AptRoot, pin: &ClangPin, progress: &mut dyn FnMut(&str)) -> Result<String, String> {
    let offered = |a: &AptRoot| -> Result<bool, String> {
        Ok(a.offered(&pin.package)
            .map_err(|e| e.to_string())?
            .iter()
            .any(|o| o.version == pin.version && o.suite == pin.suite))
    };
    if offered(a)? {
        return Ok(pin.version.clone());
    }
    progress(&format!("selftests: {} {} not in the cached indexes; refreshing them", pin.package, pin.version));
    a.update(true).map_err(|e| e.to_string())?;
    if offered(a)? {
        return Ok(pin.version.clone());
    }
    if fallback::locked() {
        return Err(fallback::refused(&pin.package, &pin.version).to_string());
    }
    let newest = fallback::newest_in_suite(a, &pin.package, &pin.suite)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{}: no version of the package is left in {}", pin.package, pin.suite))?;
    let as_pin = |version: &str| PackagePin {
        name: pin.package.clone(),
        version: version.to_owned(),
        sha256: String::new(),
        suite: None,
    };
    progress(&format!(
        "selftests: {}",
        fallback::Fallback::new(&as_pin(&pin.version), &as_pin(&newest.version), &pin.suite)
    ));
    Ok(newest.version)
}

/// The clang wrapper, provisioned on first use (the pin, or the newest
/// version of its package in its suite once the pin has left the archive);
/// `Err` says why there is none (the BPF programs are then not built, and
/// the run says so).
///
/// # Errors
/// No `[clang]` pin, apt or unpack failures, a gone pin under `--locked`, a
/// package without clang.
pub fn clang(cache: &Path, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, String> {
    let pin = clang_pin().map_err(|e| e.to_string())?.ok_or("guest-images/kernel-sources.lock pins no [clang]")?;
    clang_for(&pin, cache, progress)
}

/// [`clang`] for the pin `pin` (the lock's own, or a test's), from the
/// archive `crate::provision::apt::Archive::from_env` names.
///
/// # Errors
/// As [`clang`].
pub fn clang_for(pin: &ClangPin, cache: &Path, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, String> {
    let pin = pin.clone();
    let llvm = pin.package.replace("clang-", "llvm-");
    let dir = cache.join("selftests/clang").join(pin.version.replace([':', '~', '+'], "_"));
    let (root, bin, stamp) = (dir.join("root"), dir.join("clang"), dir.join("stamp.json"));
    let ready = std::fs::read(&stamp).ok().and_then(|b| serde_json::from_slice::<Stamp>(&b).ok());
    if ready.as_ref().is_some_and(|s| s.pin == pin && (s.used.is_none() || !fallback::locked())) && bin.is_file() {
        return Ok(bin);
    }
    let archive = crate::provision::apt::Archive::from_env().map_err(|e| e.to_string())?;
    let a = AptRoot::prepare(&cache.join("apt"), &archive).map_err(|e| e.to_string())?;
    a.update(false).map_err(|e| e.to_string())?;
    let version = resolve(&a, &pin, progress)?;
    progress(&format!(
        "selftests: {} {version} from {} with its dependencies (private apt root, host untouched)",
        pin.package, pin.suite
    ));
    let debs = a.download_closure(&pin.package, &version, &pin.suite).map_err(|e| e.to_string())?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    for deb in &debs {
        apt::extract_deb(deb, &root).map_err(|e| e.to_string())?;
    }
    let exe = root.join("usr/lib").join(&llvm).join("bin/clang");
    if !exe.is_file() {
        return Err(format!("{}: no usr/lib/{llvm}/bin/clang in the packages", pin.package));
    }
    std::fs::write(&bin, wrapper(&root, &llvm)).map_err(|e| format!("{}: {e}", bin.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("{}: {e}", bin.display()))?;
    }
    let used = (version != pin.version).then_some(version);
    let text = serde_json::to_string_pretty(&Stamp { pin, used }).map_err(|e| e.to_string())?;
    std::fs::write(&stamp, text).map_err(|e| format!("{}: {e}", stamp.display()))?;
    Ok(bin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_pins_a_bookworm_clang_and_the_wrapper_finds_its_libraries() {
        let pin = clang_pin().expect("parses").expect("pinned");
        assert!(pin.package.starts_with("clang-"), "{pin:?}");
        let w = wrapper(Path::new("/c/root"), "llvm-14");
        assert!(w.contains("LD_LIBRARY_PATH=/c/root/usr/lib/x86_64-linux-gnu:/c/root/usr/lib/llvm-14/lib"), "{w}");
        assert!(w.trim_end().ends_with("exec /c/root/usr/lib/llvm-14/bin/clang \"$@\""), "{w}");
    }
}
