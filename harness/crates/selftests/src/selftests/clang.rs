//! The clang that builds the selftests' BPF programs: the `[clang]` pin of
//! guest-images/kernel-sources.lock (Debian bookworm's, the build hosts' own
//! release) with its dependency closure as apt resolves it, unpacked into
//! `<cache>/selftests/clang/<version>/root` (no host package changes) and run
//! through a wrapper that puts its libraries on `LD_LIBRARY_PATH`.

use crate::kbuild::source::{clang_pin, ClangPin};
use crate::provision::apt::{self, AptRoot};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Serialize, Deserialize, PartialEq)]
struct Stamp {
    pin: ClangPin,
}

/// The wrapper's text: clang from `root` with its libraries.
fn wrapper(root: &Path, llvm: &str) -> String {
    let r = root.display();
    format!(
        "#!/bin/sh\n# Written by manarig (harness/crates/selftests/src/selftests/clang.rs): Debian's clang from {r}.\n\
         LD_LIBRARY_PATH={r}/usr/lib/x86_64-linux-gnu:{r}/usr/lib/{llvm}/lib exec {r}/usr/lib/{llvm}/bin/clang \"$@\"\n"
    )
}

/// The clang wrapper, provisioned on first use; `Err` says why there is none
/// (the BPF programs are then not built, and the run says so).
///
/// # Errors
/// No `[clang]` pin, apt or unpack failures, a package without clang.
pub fn clang(cache: &Path, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, String> {
    let pin = clang_pin().map_err(|e| e.to_string())?.ok_or("guest-images/kernel-sources.lock pins no [clang]")?;
    let llvm = pin.package.replace("clang-", "llvm-");
    let dir = cache.join("selftests/clang").join(pin.version.replace([':', '~', '+'], "_"));
    let (root, bin, stamp) = (dir.join("root"), dir.join("clang"), dir.join("stamp.json"));
    let ready = std::fs::read(&stamp).ok().and_then(|b| serde_json::from_slice::<Stamp>(&b).ok());
    if ready.is_some_and(|s| s.pin == pin) && bin.is_file() {
        return Ok(bin);
    }
    progress(&format!(
        "selftests: {} {} from {} with its dependencies (private apt root, host untouched)",
        pin.package, pin.version, pin.suite
    ));
    let archive = crate::provision::apt::Archive::from_env().map_err(|e| e.to_string())?;
    let a = AptRoot::prepare(&cache.join("apt"), &archive).map_err(|e| e.to_string())?;
    a.update(false).map_err(|e| e.to_string())?;
    let debs = a.download_closure(&pin.package, &pin.version, &pin.suite).map_err(|e| e.to_string())?;
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
    let text = serde_json::to_string_pretty(&Stamp { pin }).map_err(|e| e.to_string())?;
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
