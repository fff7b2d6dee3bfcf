//! The selftest tree the guest runs: the parts of a kernel source the
//! drivers/net tests import and exec, with their relative layout under
//! [`GUEST_ROOT`], and the C helpers built from the same source
//! ([`super::helpers`]). Prepared once per source into
//! `<cache>/selftests/<key>/` (`guest/`: the files; `work/`: the helpers'
//! build and its log; `stamp.json`) and reused while the source's identity
//! and [`LAYOUT`] stay the same.
//!
//! What is copied (the tests resolve everything relative to their own file:
//! `lib/py/__init__.py` appends `../../../..` to `sys.path`, `net/lib/py/ynl.py`
//! finds YNL at `KSRC/tools/net/ynl` and the specs at
//! `KSRC/Documentation/netlink/specs` when it runs in the tree):
//! - `tools/testing/selftests/drivers/net/`: the `*.py` tests, `lib/py/`, `hw/*.py`, `hw/lib/py/`;
//! - `tools/testing/selftests/net/lib/py/`;
//! - every `*.py` of `tools/net/ynl/` (the Python YNL library: `pyynl/` from 6.16, `lib/` before);
//! - `Documentation/netlink/specs/*.yaml`;
//! - the helpers, beside their sources' folders (`net/lib/csum`, `drivers/net/hw/toeplitz`, …),
//!   and the BPF programs of `net/lib` built with Debian's clang ([`super::clang`]).

use super::helpers::{self, HelperError};
use crate::provision::tools::GuestFile;
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::path::{Path, PathBuf};

/// Where the tree sits in the guest: the kernel source's top (`KSRC`).
pub const GUEST_ROOT: &str = "ksrc";
/// The drivers/net tests' folder, relative to [`GUEST_ROOT`].
pub const DRIVERS_NET: &str = "tools/testing/selftests/drivers/net";
/// Raised when what is copied or built changes, so that cached trees are made again.
pub const LAYOUT: u32 = 2;

/// Errors preparing a tree.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// A filesystem step failed.
    #[error("{path}: {error}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The source has no drivers/net selftests.
    #[error("{0}: no tools/testing/selftests/drivers/net/lib/py: this kernel source has no drivers/net selftests")]
    NoTests(PathBuf),
    /// A helper did not build.
    #[error("building the selftests' C helpers of {source_label}: {error}")]
    Helpers {
        /// The source.
        source_label: String,
        /// What failed.
        error: HelperError,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TreeError + '_ {
    move |source| TreeError::Io { path: path.to_path_buf(), error: source }
}

/// A prepared tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelftestTree {
    /// `<cache>/selftests/<key>`.
    pub dir: PathBuf,
    /// The source's label (`linux-source-7.3 7.3.4-1~bpo13+1`, a tree's path).
    pub source_label: String,
    /// The test files there are, relative to [`DRIVERS_NET`] (`queues.py`, `hw/csum.py`), sorted.
    pub tests: Vec<String>,
    /// The helpers built, relative to `tools/testing/selftests/` (`net/lib/csum`).
    pub helpers: Vec<String>,
}

#[derive(Serialize, Deserialize, PartialEq)]
struct Stamp {
    identity: String,
    layout: u32,
    tests: Vec<String>,
    helpers: Vec<String>,
}

/// The cache key of a source identity ([`crate::kbuild::source::SourceSpec::identity`]).
fn key(identity: &str) -> String {
    let digest = sha2::Sha256::digest(format!("{identity}\nlayout {LAYOUT}").as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Prepare (or reuse) the tree of the kernel source `source`, whose identity
/// is `identity` and label `label`, under `<cache>/selftests/`.
///
/// # Errors
/// [`TreeError::NoTests`] for a source without drivers/net selftests (Linux
/// 6.1 has almost none), a helper that does not build, I/O errors.
pub fn prepare(
    source: &Path,
    identity: &str,
    label: &str,
    cache: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<SelftestTree, TreeError> {
    if !source.join(DRIVERS_NET).join("lib/py").is_dir() {
        return Err(TreeError::NoTests(source.to_path_buf()));
    }
    let dir = cache.join("selftests").join(key(identity));
    let stamp_path = dir.join("stamp.json");
    if let Some(s) = std::fs::read(&stamp_path).ok().and_then(|b| serde_json::from_slice::<Stamp>(&b).ok()) {
        if s.identity == identity && s.layout == LAYOUT && dir.join("guest").is_dir() {
            progress(&format!("selftests: tree of {label} (cached in {})", dir.display()));
            return Ok(SelftestTree { dir, source_label: label.to_owned(), tests: s.tests, helpers: s.helpers });
        }
    }
    progress(&format!("selftests: copying the drivers/net tests of {label} and building their C helpers"));
    let guest = dir.join("guest");
    if guest.exists() {
        std::fs::remove_dir_all(&guest).map_err(io(&guest))?;
    }
    let root = guest.join(GUEST_ROOT);
    copy_tests(source, &root)?;
    // The BPF programs need clang; without it the tests that load them fail,
    // and this says why.
    let clang = match super::clang::clang(cache, progress) {
        Ok(c) => Some(c),
        Err(why) => {
            progress(&format!("selftests: the BPF programs (net/lib/*.bpf.o) are not built: {why}"));
            None
        }
    };
    let built = helpers::build(source, &dir.join("work"), clang.as_deref())
        .map_err(|error| TreeError::Helpers { source_label: label.to_owned(), error })?;
    let mut helper_names = Vec::new();
    for (rel, file) in built {
        let dst = root.join("tools/testing/selftests").join(&rel);
        copy_file(&file, &dst)?;
        helper_names.push(rel);
    }
    // The build's copy of tools/ is large and not needed again (its log stays).
    let work_tree = dir.join("work/tree");
    if work_tree.exists() {
        std::fs::remove_dir_all(&work_tree).map_err(io(&work_tree))?;
    }
    let tests = test_files(&root.join(DRIVERS_NET))?;
    let stamp = Stamp { identity: identity.to_owned(), layout: LAYOUT, tests: tests.clone(), helpers: helper_names };
    let text = serde_json::to_string_pretty(&stamp)
        .map_err(|e| TreeError::Io { path: stamp_path.clone(), error: std::io::Error::other(e) })?;
    std::fs::write(&stamp_path, text).map_err(io(&stamp_path))?;
    progress(&format!(
        "selftests: {} tests, helpers {} ready in {}",
        tests.len(),
        if stamp.helpers.is_empty() { "none".to_owned() } else { stamp.helpers.join(", ") },
        dir.display()
    ));
    Ok(SelftestTree { dir, source_label: label.to_owned(), tests, helpers: stamp.helpers })
}

/// The test programs of a drivers/net folder: `*.py` there and in `hw/`,
/// relative to it, sorted.
fn test_files(drivers_net: &Path) -> Result<Vec<String>, TreeError> {
    let mut out = Vec::new();
    for (sub, prefix) in [("", ""), ("hw", "hw/")] {
        let d = drivers_net.join(sub);
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries {
            let name = e.map_err(io(&d))?.file_name().to_string_lossy().into_owned();
            if name.ends_with(".py") {
                out.push(format!("{prefix}{name}"));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn copy_file(from: &Path, to: &Path) -> Result<(), TreeError> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    std::fs::copy(from, to).map_err(io(to))?;
    Ok(())
}

/// Copy the files of `dir` (not its folders) whose names `keep` accepts.
fn copy_files_of(from: &Path, to: &Path, keep: impl Fn(&str) -> bool) -> Result<(), TreeError> {
    let Ok(entries) = std::fs::read_dir(from) else { return Ok(()) };
    for e in entries {
        let e = e.map_err(io(from))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().map_err(io(&e.path()))?.is_file() && keep(&name) {
            copy_file(&e.path(), &to.join(&name))?;
        }
    }
    Ok(())
}

/// Every `*.py` below `from`, to the same place below `to`.
fn copy_python_tree(from: &Path, to: &Path) -> Result<(), TreeError> {
    let Ok(entries) = std::fs::read_dir(from) else { return Ok(()) };
    for e in entries {
        let e = e.map_err(io(from))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let kind = e.file_type().map_err(io(&e.path()))?;
        if kind.is_dir() && name != "__pycache__" {
            copy_python_tree(&e.path(), &to.join(&name))?;
        } else if kind.is_file() && name.ends_with(".py") {
            copy_file(&e.path(), &to.join(&name))?;
        }
    }
    Ok(())
}

fn copy_tests(source: &Path, root: &Path) -> Result<(), TreeError> {
    let py = |n: &str| n.ends_with(".py");
    let dn = DRIVERS_NET;
    copy_files_of(&source.join(dn), &root.join(dn), |n| py(n) || n == "settings")?;
    copy_files_of(&source.join(dn).join("lib/py"), &root.join(dn).join("lib/py"), py)?;
    copy_files_of(&source.join(dn).join("hw"), &root.join(dn).join("hw"), |n| py(n) || n == "settings")?;
    copy_files_of(&source.join(dn).join("hw/lib/py"), &root.join(dn).join("hw/lib/py"), py)?;
    let net_lib = "tools/testing/selftests/net/lib/py";
    copy_files_of(&source.join(net_lib), &root.join(net_lib), py)?;
    copy_python_tree(&source.join("tools/net/ynl"), &root.join("tools/net/ynl"))?;
    let specs = "Documentation/netlink/specs";
    copy_files_of(&source.join(specs), &root.join(specs), |n| n.ends_with(".yaml"))
}

/// The tree's files as initramfs entries under [`GUEST_ROOT`] (helpers and
/// the tests executable, the rest 0o644), plus `extra` generated files.
///
/// # Errors
/// I/O errors walking the folder.
pub fn guest_files(tree: &SelftestTree) -> Result<Vec<GuestFile>, TreeError> {
    let guest = tree.dir.join("guest");
    let mut out = Vec::new();
    let mut stack = vec![guest.clone()];
    while let Some(at) = stack.pop() {
        for e in std::fs::read_dir(&at).map_err(io(&at))? {
            let e = e.map_err(io(&at))?;
            let path = e.path();
            if e.file_type().map_err(io(&path))?.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(&guest).unwrap_or(&path).to_string_lossy().into_owned();
            let helper = tree.helpers.iter().any(|h| rel.ends_with(&format!("selftests/{h}")));
            let program = helper && !rel.ends_with(".o");
            let mode = if program || rel.ends_with(".py") && !rel.contains("/lib/") { 0o755 } else { 0o644 };
            out.push(GuestFile { guest_path: rel, host: path, mode });
        }
    }
    out.sort_by(|a, b| a.guest_path.cmp(&b.guest_path));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source tree with a few of the files the copy takes and some it leaves.
    fn fake_source(dir: &Path) {
        let w = |p: &str, text: &str| {
            let p = dir.join(p);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        };
        w("tools/testing/selftests/drivers/net/queues.py", "#!/usr/bin/env python3\n");
        w("tools/testing/selftests/drivers/net/settings", "timeout=360\n");
        w("tools/testing/selftests/drivers/net/README.rst", "");
        w("tools/testing/selftests/drivers/net/lib/py/__init__.py", "");
        w("tools/testing/selftests/drivers/net/hw/csum.py", "");
        w("tools/testing/selftests/drivers/net/hw/ethtool.sh", "");
        w("tools/testing/selftests/net/lib/py/ksft.py", "");
        w("tools/net/ynl/pyynl/lib/ynl.py", "");
        w("tools/net/ynl/lib/ynl.c", "");
        w("Documentation/netlink/specs/netdev.yaml", "");
    }

    #[test]
    fn the_copy_keeps_the_layout_the_tests_resolve_and_leaves_the_rest() {
        let src = tempfile::tempdir().expect("tempdir");
        fake_source(src.path());
        let out = tempfile::tempdir().expect("tempdir");
        copy_tests(src.path(), out.path()).expect("copy");
        for kept in [
            "tools/testing/selftests/drivers/net/queues.py",
            "tools/testing/selftests/drivers/net/settings",
            "tools/testing/selftests/drivers/net/lib/py/__init__.py",
            "tools/testing/selftests/drivers/net/hw/csum.py",
            "tools/testing/selftests/net/lib/py/ksft.py",
            "tools/net/ynl/pyynl/lib/ynl.py",
            "Documentation/netlink/specs/netdev.yaml",
        ] {
            assert!(out.path().join(kept).is_file(), "{kept}");
        }
        for left in
            ["tools/testing/selftests/drivers/net/README.rst", "tools/testing/selftests/drivers/net/hw/ethtool.sh"]
        {
            assert!(!out.path().join(left).exists(), "{left}");
        }
        assert!(!out.path().join("tools/net/ynl/lib/ynl.c").exists());
        let tests = test_files(&out.path().join(DRIVERS_NET)).expect("tests");
        assert_eq!(tests, ["hw/csum.py", "queues.py"]);
    }

    #[test]
    fn a_source_without_drivers_net_tests_is_refused_by_name() {
        let src = tempfile::tempdir().expect("tempdir");
        let cache = tempfile::tempdir().expect("tempdir");
        let e = prepare(src.path(), "tree:x", "x", cache.path(), &mut |_| {}).expect_err("no tests").to_string();
        assert!(e.contains("no drivers/net selftests"), "{e}");
    }

    #[test]
    fn the_key_follows_the_identity_and_the_layout() {
        assert_ne!(key("debian:linux-source-6.12=1"), key("debian:linux-source-7.3=1"));
        assert_eq!(key("a").len(), 16);
    }
}
