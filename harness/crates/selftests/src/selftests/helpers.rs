//! The selftests' C helpers, built once per kernel source with the host's
//! compiler by the kernel's own kselftest makefiles (`lib.mk`, and
//! `net/ynl.mk` for the helpers that link the YNL C library, which it
//! generates from the netlink specs with `ynl_gen_c.py`).
//!
//! The build never writes into the source tree, which other builds share: it
//! runs in a work folder holding a copy of `tools/` (where kselftest and YNL
//! put their objects and generated code) beside links to the read-only parts
//! (`include/`, `arch/`, `scripts/`, `Documentation/`, `MAINTAINERS`, which
//! `ynl_gen_c.py` looks for to find the tree's top), and the UAPI headers
//! `make headers` exports (out of tree, `O=`) for `KHDR_INCLUDES`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A helper: its folder under `tools/testing/selftests/` and its name (the
/// make target is `<folder>/<name>`, built from `<name>.c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Helper {
    /// Folder under `tools/testing/selftests/`.
    pub dir: &'static str,
    /// Program name.
    pub name: &'static str,
}

/// The helpers the tests the rig runs exec, where a tree has their source
/// (Linux 7.3: all of them; 6.12: `net/lib/csum`): `csum` (hw/csum.py), `gro`
/// (gro.py), `xdp_helper` (queues.py's AF_XDP case), `napi_id_helper`
/// (napi_id.py), `toeplitz` (hw/toeplitz.py; links the YNL C library).
pub const HELPERS: &[Helper] = &[
    Helper { dir: "net/lib", name: "csum" },
    Helper { dir: "net/lib", name: "gro" },
    Helper { dir: "net/lib", name: "xdp_helper" },
    Helper { dir: "drivers/net", name: "napi_id_helper" },
    Helper { dir: "drivers/net/hw", name: "toeplitz" },
];

/// Errors building the helpers.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    /// A filesystem step failed.
    #[error("{path}: {error}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// make could not start.
    #[error("cannot run make: {0}")]
    Spawn(std::io::Error),
    /// make failed; its output is in the log.
    #[error("{what} failed (log: {log}):\n{tail}")]
    Make {
        /// The step.
        what: String,
        /// The full log.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> HelperError + '_ {
    move |source| HelperError::Io { path: path.to_path_buf(), error: source }
}

/// The helpers whose source `source` has (`<dir>/<name>.c`).
pub fn present(source: &Path) -> Vec<Helper> {
    let ksft = source.join("tools/testing/selftests");
    HELPERS.iter().copied().filter(|h| ksft.join(h.dir).join(format!("{}.c", h.name)).is_file()).collect()
}

/// The BPF programs of `net/lib` a source has (`xdp_dummy.bpf.o`, …: the
/// objects `net/bpf.mk` builds from `*.bpf.c`), sorted.
pub fn bpf_programs(source: &Path) -> Vec<String> {
    let dir = source.join("tools/testing/selftests/net/lib");
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.strip_suffix(".bpf.c").map(|n| format!("{n}.bpf.o")))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Build the helpers [`present`] in `source` inside `work` (created; the
/// log is `work/build.log`), and with `clang` the BPF programs of `net/lib`
/// ([`bpf_programs`]); return each file's path relative to
/// `tools/testing/selftests/` with its file in `work`.
///
/// # Errors
/// [`HelperError::Make`] with the log's tail when a make step fails.
pub fn build(source: &Path, work: &Path, clang: Option<&Path>) -> Result<Vec<(String, PathBuf)>, HelperError> {
    let helpers = present(source);
    let bpf = if clang.is_some() { bpf_programs(source) } else { Vec::new() };
    if helpers.is_empty() && bpf.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(work).map_err(io(work))?;
    let tree = work.join("tree");
    if tree.exists() {
        std::fs::remove_dir_all(&tree).map_err(io(&tree))?;
    }
    std::fs::create_dir_all(&tree).map_err(io(&tree))?;
    copy_dir(&source.join("tools"), &tree.join("tools"))?;
    for part in ["include", "arch", "scripts", "Documentation", "MAINTAINERS", "Makefile"] {
        let from = source.join(part);
        if from.exists() {
            std::os::unix::fs::symlink(&from, tree.join(part)).map_err(io(&tree.join(part)))?;
        }
    }
    let log = work.join("build.log");
    std::fs::write(&log, "").map_err(io(&log))?;
    let headers = work.join("headers");
    make(
        niced_make().arg("-C").arg(source).arg(format!("O={}", headers.display())).arg("headers"),
        "make headers",
        &log,
    )?;
    let khdr = format!("KHDR_INCLUDES=-isystem {}", headers.join("usr/include").display());
    let ksft = tree.join("tools/testing/selftests");
    let mut out = Vec::new();
    for h in helpers {
        let dir = ksft.join(h.dir);
        let target = dir.join(h.name);
        make(niced_make().arg("-C").arg(&dir).arg(&khdr).arg(&target), &format!("make {}/{}", h.dir, h.name), &log)?;
        out.push((format!("{}/{}", h.dir, h.name), target));
    }
    if let (Some(clang), false) = (clang, bpf.is_empty()) {
        let dir = ksft.join("net/lib");
        let targets: Vec<PathBuf> = bpf.iter().map(|b| dir.join(b)).collect();
        make(
            niced_make().arg("-C").arg(&dir).arg(&khdr).arg(format!("CLANG={}", clang.display())).args(&targets),
            "make net/lib/*.bpf.o",
            &log,
        )?;
        out.extend(bpf.iter().zip(targets).map(|(b, t)| (format!("net/lib/{b}"), t)));
    }
    Ok(out)
}

/// `nice -n 10 make`: the build shares the host's cores with running guests.
fn niced_make() -> Command {
    let mut c = Command::new("nice");
    c.args(["-n", "10", "make"]);
    c
}

/// Run one make step, its output appended to `log`.
fn make(cmd: &mut Command, what: &str, log: &Path) -> Result<(), HelperError> {
    use std::io::Write;
    let output = cmd.env("MAKEFLAGS", "").output().map_err(HelperError::Spawn)?;
    let mut f = std::fs::OpenOptions::new().append(true).open(log).map_err(io(log))?;
    let _ = writeln!(f, "=== {what}");
    let _ = f.write_all(&output.stdout);
    let _ = f.write_all(&output.stderr);
    if output.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = text.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect();
    Err(HelperError::Make { what: what.to_owned(), log: log.to_path_buf(), tail: tail.join("\n") })
}

/// Copy a folder recursively (files, folders and symlinks as they are).
pub(super) fn copy_dir(from: &Path, to: &Path) -> Result<(), HelperError> {
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(io(&src))?;
        if kind.is_symlink() {
            let target = std::fs::read_link(&src).map_err(io(&src))?;
            std::os::unix::fs::symlink(target, &dst).map_err(io(&dst))?;
        } else if kind.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(io(&dst))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_helpers_whose_source_the_tree_has_are_built() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lib = dir.path().join("tools/testing/selftests/net/lib");
        std::fs::create_dir_all(&lib).expect("mkdir");
        std::fs::write(lib.join("csum.c"), "").expect("write");
        assert_eq!(present(dir.path()), [Helper { dir: "net/lib", name: "csum" }]);
        std::fs::write(lib.join("xdp_dummy.bpf.c"), "").expect("write");
        assert_eq!(bpf_programs(dir.path()), ["xdp_dummy.bpf.o"]);
    }

    #[test]
    fn a_failing_make_step_names_itself_and_keeps_its_output() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("build.log");
        std::fs::write(&log, "").expect("write");
        let e = make(Command::new("sh").args(["-c", "echo the reason >&2; exit 2"]), "make x", &log)
            .expect_err("fails")
            .to_string();
        assert!(e.contains("make x failed") && e.contains("the reason"), "{e}");
        assert!(std::fs::read_to_string(&log).expect("log").contains("=== make x"));
    }
}
