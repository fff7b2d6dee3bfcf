//! The guest tools of selftest runs: the packages of the lock's `[selftests]`
//! (Python 3.13 with its standard library and PyYAML, bash, iproute2, ethtool,
//! socat, iperf3, ping and the packages of their shared libraries) unpacked
//! whole into `<cache>/selftest-tools/root/`, under the paths Debian gives
//! them (`usr/bin/python3.13`, `usr/lib/x86_64-linux-gnu/…`), and put into the
//! initramfs of selftest runs as they are: files with their permission bits,
//! symlinks as symlinks.
//!
//! Left out: documentation, man pages, locales and the other parts of
//! `usr/share` except iproute2's tables, glibc's gconv modules (iconv
//! character sets), and the parts of Python's standard library a test never
//! imports (IDLE, tkinter, ensurepip, pydoc's data, the build configuration).
//!
//! Installing checks the ELF `NEEDED` closure: every shared library a binary,
//! a library or a Python extension module loads is in the root, so a lock that
//! forgets a library package fails at `setup`, naming the file and the
//! library, not in the guest.

use super::apt;
use super::guest_files::{GuestFile, GuestLink};
use super::ProvisionError;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The cache folder's name under `<cache>`.
pub const DIR: &str = "selftest-tools";

/// Path prefixes (in the unpacked packages) that stay out of the guest.
const LEFT_OUT: &[&str] = &[
    "usr/share/doc",
    "usr/share/doc-base",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/lintian",
    "usr/share/bug",
    "usr/share/bash-completion",
    "usr/share/binfmts",
    "usr/share/menu",
    "usr/share/metainfo",
    "usr/share/debianutils",
    "usr/lib/x86_64-linux-gnu/gconv",
    "usr/lib/python3.13/idlelib",
    "usr/lib/python3.13/tkinter",
    "usr/lib/python3.13/turtledemo",
    "usr/lib/python3.13/ensurepip",
    "usr/lib/python3.13/pydoc_data",
    "usr/lib/python3.13/config-3.13-x86_64-linux-gnu",
    "usr/lib/python3.13/test",
    "etc/init.d",
    "etc/ufw",
];

/// Links the guest needs beside the packages' own: `python3` (the tests'
/// shebang names it; Debian's `python3` package, which has the link, is not
/// needed otherwise) and the ELF interpreter path every binary names
/// (`/lib64/ld-linux-x86-64.so.2`; Debian's base-files makes `/lib64` a link
/// to `usr/lib64`, the initramfs has no base-files).
///
/// And `/bin/sh` as bash: Python's `shell=True` runs `/bin/sh`, and Debian's
/// busybox shell runs its own applets (`ip`, `ping`, `timeout`) before any
/// program on `PATH`; the agent names busybox in its first line.
pub const EXTRA_LINKS: &[(&str, &str)] = &[
    ("bin/sh", "/usr/bin/bash"),
    ("usr/bin/python3", "python3.13"),
    ("lib64/ld-linux-x86-64.so.2", "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
];

fn left_out(rel: &str) -> bool {
    LEFT_OUT.iter().any(|p| rel == *p || rel.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
}

/// Unpack `debs` (the section's packages, verified) into `dir/root` without
/// the parts the module's docs name and check the ELF `NEEDED` closure; the
/// caller writes the stamp (`super::tools`, which resolves the packages).
///
/// # Errors
/// [`ProvisionError::Package`] naming an ELF file whose library is in no
/// package; I/O and `dpkg-deb` errors with their path.
pub fn install(cache: &Path, debs: &[PathBuf], dir: &Path) -> Result<(), ProvisionError> {
    let tmp = tempfile::tempdir_in(cache).map_err(|e| ProvisionError::io(cache, e))?;
    let unpacked = tmp.path().join("root");
    for deb in debs {
        apt::extract_deb(deb, &unpacked)?;
    }
    prune(&unpacked, &unpacked)?;
    missing_libraries(&unpacked)?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| ProvisionError::io(dir, e))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| ProvisionError::io(dir, e))?;
    let root = dir.join("root");
    std::fs::rename(&unpacked, &root).map_err(|e| ProvisionError::io(&root, e))
}

/// Removes what [`LEFT_OUT`] names below `root`.
fn prune(root: &Path, at: &Path) -> Result<(), ProvisionError> {
    for entry in std::fs::read_dir(at).map_err(|e| ProvisionError::io(at, e))? {
        let entry = entry.map_err(|e| ProvisionError::io(at, e))?;
        let path = entry.path();
        let rel = relative(root, &path);
        let kind = entry.file_type().map_err(|e| ProvisionError::io(&path, e))?;
        if left_out(&rel) {
            let gone = if kind.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
            gone.map_err(|e| ProvisionError::io(&path, e))?;
        } else if kind.is_dir() {
            prune(root, &path)?;
        }
    }
    Ok(())
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned()
}

/// Every regular file and symlink below `root`, sorted by path.
fn walk(root: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), ProvisionError> {
    let (mut files, mut links) = (Vec::new(), Vec::new());
    let mut stack = vec![root.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).map_err(|e| ProvisionError::io(&at, e))? {
            let entry = entry.map_err(|e| ProvisionError::io(&at, e))?;
            let kind = entry.file_type().map_err(|e| ProvisionError::io(&entry.path(), e))?;
            if kind.is_symlink() {
                links.push(entry.path());
            } else if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    links.sort();
    Ok((files, links))
}

/// The ELF files below `root` whose `NEEDED` libraries are not in the root's
/// library folders, as an error naming the first few.
fn missing_libraries(root: &Path) -> Result<(), ProvisionError> {
    let lib_dirs = ["usr/lib/x86_64-linux-gnu", "usr/lib64", "lib/x86_64-linux-gnu"];
    let (files, _) = walk(root)?;
    let mut missing = BTreeSet::new();
    for f in &files {
        let Ok(data) = std::fs::read(f) else { continue };
        if !data.starts_with(b"\x7fELF") {
            continue;
        }
        for lib in needed(&data) {
            if !lib_dirs.iter().any(|d| root.join(d).join(&lib).exists()) {
                missing.insert(format!("{} needs {lib}", relative(root, f)));
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = missing.into_iter().collect();
    Err(ProvisionError::Package(format!(
        "[selftests] in guest-images/kernels.lock lacks the package of a shared library: {}",
        list.iter().take(8).cloned().collect::<Vec<_>>().join("; ")
    )))
}

/// The `DT_NEEDED` names of an ELF file (none for a file `object` cannot read
/// or without a dynamic section).
fn needed(data: &[u8]) -> Vec<String> {
    use object::read::elf::{Dyn, ElfFile64, FileHeader};
    let Ok(elf) = ElfFile64::<object::Endianness>::parse(data) else { return Vec::new() };
    let endian = elf.endian();
    let header = elf.elf_header();
    let Ok(sections) = header.sections(endian, data) else { return Vec::new() };
    let Ok(Some((dynamic, index))) = sections.dynamic(endian, data) else { return Vec::new() };
    let Ok(strings) = sections.strings(endian, data, index) else { return Vec::new() };
    dynamic
        .iter()
        .filter(|d| d.tag(endian) == object::elf::DT_NEEDED)
        .filter_map(|d| d.string(endian, strings).ok())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// The tools as initramfs entries: every file of `dir/root` (programs and
/// libraries keep their permission bits) and every symlink, then [`EXTRA_LINKS`].
///
/// # Errors
/// I/O errors walking the folder.
pub fn guest_entries(dir: &Path) -> Result<(Vec<GuestFile>, Vec<GuestLink>), ProvisionError> {
    use std::os::unix::fs::PermissionsExt;
    let root = dir.join("root");
    let (files, links) = walk(&root)?;
    let mut out_files = Vec::with_capacity(files.len());
    for f in files {
        let mode = std::fs::metadata(&f).map_err(|e| ProvisionError::io(&f, e))?.permissions().mode() & 0o7777;
        out_files.push(GuestFile { guest_path: relative(&root, &f), host: f, mode });
    }
    let mut out_links = Vec::with_capacity(links.len() + EXTRA_LINKS.len());
    for l in links {
        let target = std::fs::read_link(&l).map_err(|e| ProvisionError::io(&l, e))?;
        out_links.push(GuestLink { guest_path: relative(&root, &l), target: target.to_string_lossy().into_owned() });
    }
    for &(path, target) in EXTRA_LINKS {
        if !out_links.iter().any(|l| l.guest_path == path) {
            out_links.push(GuestLink { guest_path: path.to_owned(), target: target.to_owned() });
        }
    }
    Ok((out_files, out_links))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documentation_and_unused_stdlib_parts_are_left_out_and_the_rest_kept() {
        assert!(left_out("usr/share/doc"));
        assert!(left_out("usr/share/doc/bash/copyright"));
        assert!(left_out("usr/lib/python3.13/idlelib/run.py"));
        assert!(!left_out("usr/share/iproute2/rt_tables"));
        assert!(!left_out("usr/share/documents"), "a prefix of a name is not its folder");
        assert!(!left_out("usr/lib/python3.13/json/__init__.py"));
    }

    #[test]
    fn needed_reads_the_dynamic_section_of_a_real_binary() {
        // The test binary itself is a dynamically linked ELF that needs libc.
        let exe = std::env::current_exe().expect("exe");
        let data = std::fs::read(exe).expect("read");
        assert!(needed(&data).iter().any(|n| n.starts_with("libc.so")), "{:?}", needed(&data));
        assert!(needed(b"not an ELF").is_empty());
    }

    #[test]
    fn a_library_in_no_package_is_named_with_its_user() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("usr/bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        std::fs::copy(std::env::current_exe().expect("exe"), bin.join("tool")).expect("copy");
        let e = missing_libraries(dir.path()).expect_err("libc is not in the root").to_string();
        assert!(e.contains("usr/bin/tool needs libc.so"), "{e}");
    }

    #[test]
    fn entries_keep_modes_and_links_and_add_the_interpreter_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root/usr/bin");
        std::fs::create_dir_all(&root).expect("mkdir");
        std::fs::write(root.join("python3.13"), b"x").expect("write");
        std::fs::set_permissions(root.join("python3.13"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::os::unix::fs::symlink("python3.13", root.join("py")).expect("link");
        let (files, links) = guest_entries(dir.path()).expect("entries");
        assert_eq!(files.len(), 1);
        assert_eq!((files[0].guest_path.as_str(), files[0].mode), ("usr/bin/python3.13", 0o755));
        assert!(links.iter().any(|l| l.guest_path == "usr/bin/py" && l.target == "python3.13"));
        assert!(links.iter().any(|l| l.guest_path == "lib64/ld-linux-x86-64.so.2"));
        assert!(links.iter().any(|l| l.guest_path == "usr/bin/python3"));
    }
}
