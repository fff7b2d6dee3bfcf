//! Turn Debian kernel packages into what the guest needs: `vmlinuz` and `mana.ko`
//! with the modules it depends on, decompressed (busybox `insmod` hands the
//! file to `init_module(2)`, which takes an uncompressed ELF).

use super::ProvisionError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The module the rig loads in the guest.
pub const MANA_MODULE: &str = "mana";

/// How a `.ko` was stored in the package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KoCompression {
    /// Plain `.ko` (Debian's 6.1 packages).
    None,
    /// `.ko.xz` (Debian's 6.12 and 7.x packages).
    Xz,
}

/// What [`extract_kernel`] found in an unpacked package tree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExtractedKernel {
    /// Compression of the module files in the package.
    pub compression: KoCompression,
    /// Module file names in `insmod` order (dependencies first), relative to the
    /// kernel's cache directory, e.g. `["mana.ko"]`.
    pub modules: Vec<String>,
}

/// From a tree where the kernel packages were unpacked (`root`), copy the kernel
/// image to `out/vmlinuz` and [`MANA_MODULE`] plus its dependencies (read from
/// each module's `.modinfo` `depends=`, since Debian ships no `modules.dep`:
/// depmod runs at install time) to `out/<name>.ko`, decompressed.
///
/// # Errors
/// [`ProvisionError::Package`] when the image or a module is missing or a
/// module is not a readable ELF; [`ProvisionError::Io`] on filesystem errors.
pub fn extract_kernel(root: &Path, release: &str, out: &Path) -> Result<ExtractedKernel, ProvisionError> {
    let pkg_err = |what: String| ProvisionError::Package(format!("kernel {release}: {what}"));
    let moddir = ["lib/modules", "usr/lib/modules"]
        .iter()
        .map(|d| root.join(d).join(release))
        .find(|d| d.is_dir())
        .ok_or_else(|| pkg_err("no lib/modules/<release> directory in the package".into()))?;
    let vmlinuz = [root.join(format!("boot/vmlinuz-{release}")), moddir.join("vmlinuz")]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| pkg_err(format!("no boot/vmlinuz-{release} nor modules/{release}/vmlinuz")))?;
    std::fs::create_dir_all(out).map_err(|e| ProvisionError::io(out, e))?;
    let dst = out.join("vmlinuz");
    std::fs::copy(&vmlinuz, &dst).map_err(|e| ProvisionError::io(&dst, e))?;
    collect_modules(&moddir.join("kernel"), release, out)
}

/// Find [`MANA_MODULE`] and the modules it depends on anywhere under `dir`
/// (a `lib/modules/<release>` tree, a build's output folder, …) and write them
/// decompressed to `out/<name>.ko`, in `insmod` order. `release` only labels errors.
///
/// # Errors
/// [`ProvisionError::Package`] when a module is missing or unreadable.
pub fn collect_modules(dir: &Path, release: &str, out: &Path) -> Result<ExtractedKernel, ProvisionError> {
    collect_module_closure(dir, MANA_MODULE, release, out)
}

/// As [`collect_modules`], for the module `module` (e.g. `virtio_net`, which
/// selftest runs load for their second NIC) instead of [`MANA_MODULE`].
///
/// # Errors
/// As [`collect_modules`].
pub fn collect_module_closure(
    dir: &Path,
    module: &str,
    release: &str,
    out: &Path,
) -> Result<ExtractedKernel, ProvisionError> {
    let pkg_err = |what: String| ProvisionError::Package(format!("kernel {release}: {what}"));
    let moddir = dir;
    std::fs::create_dir_all(out).map_err(|e| ProvisionError::io(out, e))?;
    let mut index = BTreeMap::new();
    index_modules(moddir, &mut index)?;
    let mut order = Vec::new();
    let mut compression = KoCompression::None;
    let mut stack = vec![(module.to_string(), false)];
    // Depth-first post-order: a module is emitted after all its dependencies.
    while let Some((name, expanded)) = stack.pop() {
        if order.iter().any(|(n, _): &(String, Vec<u8>)| n == &name) {
            continue;
        }
        let path =
            index.get(&name).ok_or_else(|| pkg_err(format!("module {name} not found under {}", moddir.display())))?;
        let (elf, comp) = read_module(path)?;
        if comp != KoCompression::None {
            compression = comp;
        }
        if expanded {
            order.push((name, elf));
            continue;
        }
        stack.push((name.clone(), true));
        for dep in modinfo_depends(&elf).map_err(|e| pkg_err(format!("{}: {e}", path.display())))? {
            if stack.len() > 64 {
                return Err(pkg_err(format!("module dependency chain of {name} too deep")));
            }
            stack.push((dep, false));
        }
    }
    let mut modules = Vec::new();
    for (name, elf) in order {
        let file = format!("{name}.ko");
        let p = out.join(&file);
        std::fs::write(&p, elf).map_err(|e| ProvisionError::io(&p, e))?;
        modules.push(file);
    }
    Ok(ExtractedKernel { compression, modules })
}

/// Kernel module name for a file name: basename without `.ko[.xz|.zst|.gz]`,
/// with `-` spelled `_` (how the kernel and `depends=` name modules).
fn module_name(file: &str) -> Option<String> {
    let stem = file.split_once(".ko")?;
    if !matches!(stem.1, "" | ".xz" | ".zst" | ".gz") {
        return None;
    }
    Some(stem.0.replace('-', "_"))
}

fn index_modules(dir: &Path, index: &mut BTreeMap<String, PathBuf>) -> Result<(), ProvisionError> {
    for entry in std::fs::read_dir(dir).map_err(|e| ProvisionError::io(dir, e))?.flatten() {
        let p = entry.path();
        // Folders only, not links to folders: a link loop (`ln -s . a`) would
        // never end, and a module folder has no reason to link elsewhere.
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            index_modules(&p, index)?;
        } else if let Some(name) = module_name(&entry.file_name().to_string_lossy()) {
            index.insert(name, p);
        }
    }
    Ok(())
}

/// Read a module file and decompress it to its ELF bytes.
fn read_module(path: &Path) -> Result<(Vec<u8>, KoCompression), ProvisionError> {
    let raw = std::fs::read(path).map_err(|e| ProvisionError::io(path, e))?;
    let name = path.to_string_lossy();
    if name.ends_with(".ko") {
        Ok((raw, KoCompression::None))
    } else if name.ends_with(".ko.xz") {
        let mut elf = Vec::new();
        use std::io::Read;
        liblzma::read::XzDecoder::new(&raw[..])
            .read_to_end(&mut elf)
            .map_err(|e| ProvisionError::Package(format!("{name}: xz: {e}")))?;
        Ok((elf, KoCompression::Xz))
    } else {
        Err(ProvisionError::Package(format!("{name}: this module compression is not supported yet (xz and none are)")))
    }
}

/// The values of `key` in a module's `.modinfo` section (e.g. `vermagic`,
/// `depends`), read from the file (decompressed if `.ko.xz`).
///
/// # Errors
/// [`ProvisionError::Package`] / [`ProvisionError::Io`] for an unreadable module.
pub fn modinfo(path: &Path, key: &str) -> Result<Vec<String>, ProvisionError> {
    use object::{Object, ObjectSection};
    let (elf, _) = read_module(path)?;
    let bad = |why: String| ProvisionError::Package(format!("{}: {why}", path.display()));
    let file = object::File::parse(&elf[..]).map_err(|e| bad(format!("not an ELF module: {e}")))?;
    let section = file.section_by_name(".modinfo").ok_or_else(|| bad("no .modinfo section".into()))?;
    let data = section.data().map_err(|e| bad(format!(".modinfo: {e}")))?;
    let prefix = format!("{key}=");
    Ok(data
        .split(|b| *b == 0)
        .filter_map(|kv| kv.strip_prefix(prefix.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect())
}

/// The functions a module defines and the symbols it imports, from its ELF
/// symbol table (Debian's modules keep it: only debug info is stripped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleSymbols {
    /// Defined text symbols (static functions included, unless inlined).
    pub defined: std::collections::BTreeSet<String>,
    /// Undefined symbols: what the module calls in the kernel.
    pub imported: std::collections::BTreeSet<String>,
}

/// Read a module's (`.ko`, or `.ko.xz`) symbols.
///
/// # Errors
/// [`ProvisionError::Package`] / [`ProvisionError::Io`] for an unreadable module.
pub fn module_symbols(path: &Path) -> Result<ModuleSymbols, ProvisionError> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let (elf, _) = read_module(path)?;
    let file = object::File::parse(&elf[..])
        .map_err(|e| ProvisionError::Package(format!("{}: not an ELF module: {e}", path.display())))?;
    let mut out = ModuleSymbols::default();
    for sym in file.symbols() {
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() {
            continue;
        }
        if sym.is_undefined() {
            out.imported.insert(name.to_owned());
        } else if sym.kind() == SymbolKind::Text {
            out.defined.insert(name.to_owned());
        }
    }
    Ok(out)
}

/// A module whose `.modinfo` cannot be read.
#[derive(Debug, thiserror::Error)]
enum ModinfoError {
    /// Not an ELF file.
    #[error("not an ELF module: {0}")]
    NotElf(object::Error),
    /// No `.modinfo` section.
    #[error("no .modinfo section")]
    NoSection,
    /// The section's data cannot be read.
    #[error(".modinfo: {0}")]
    Section(object::Error),
}

/// The `depends=` list of a module's `.modinfo` section (NUL-separated
/// `key=value` strings, see include/linux/moduleparam.h `__MODULE_INFO`).
fn modinfo_depends(elf: &[u8]) -> Result<Vec<String>, ModinfoError> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(elf).map_err(ModinfoError::NotElf)?;
    let section = file.section_by_name(".modinfo").ok_or(ModinfoError::NoSection)?;
    let data = section.data().map_err(ModinfoError::Section)?;
    Ok(data
        .split(|b| *b == 0)
        .filter_map(|kv| kv.strip_prefix(b"depends="))
        .flat_map(|v| String::from_utf8_lossy(v).split(',').map(str::to_string).collect::<Vec<_>>())
        .filter(|d| !d.is_empty())
        .map(|d| d.replace('-', "_"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_follow_kernel_spelling() {
        assert_eq!(module_name("mana.ko.xz").as_deref(), Some("mana"));
        assert_eq!(module_name("ib-core.ko").as_deref(), Some("ib_core"));
        assert_eq!(module_name("modules.order"), None);
        assert_eq!(module_name("x.kobj"), None);
    }

    #[test]
    fn a_non_elf_module_is_an_error_not_a_panic() {
        assert!(matches!(modinfo_depends(b"not an elf"), Err(ModinfoError::NotElf(_))));
    }
}
