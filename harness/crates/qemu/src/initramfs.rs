//! The guest's initramfs: busybox with its applet links, the kernel's modules
//! and `/init` (guest-images/init.sh), as a reproducible cpio "newc" archive.
//!
//! Same inputs give the same bytes: entries in a fixed order, inode numbers
//! counted in that order, mtime 0, uid/gid 0.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The guest agent run as PID 1.
pub const INIT_SCRIPT: &str = include_str!("../../../../guest-images/init.sh");

/// Where `/init` finds the modules and their load order.
pub const MODULE_DIR: &str = "lib/modules/manarig";

/// Compression of the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Plain cpio (measured faster to boot under TCG: docs/boot-speed.md).
    #[default]
    None,
    /// gzip (default level): smaller, but decompressed by emulated guest code.
    Gzip,
}

/// Errors building the initramfs.
#[derive(Debug, thiserror::Error)]
pub enum InitramfsError {
    /// An input file cannot be read or the output written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// `busybox --list` failed or listed nothing.
    #[error("{busybox}: cannot list applets: {why}")]
    Applets {
        /// The busybox binary.
        busybox: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// A file is too large for cpio newc (32-bit sizes).
    #[error("{0}: larger than 4 GiB")]
    TooLarge(String),
}

/// What goes into the initramfs.
#[derive(Debug, Clone)]
pub struct InitramfsSpec<'a> {
    /// Static busybox binary (run on the host once for `--list`).
    pub busybox: &'a Path,
    /// Uncompressed kernel modules in load order (the last one is loaded in the
    /// background by `/init`).
    pub modules: &'a [PathBuf],
    /// Archive compression.
    pub compression: Compression,
    /// More files under their guest paths (ethtool and its libraries:
    /// [`crate::provision::tools`]); their parent folders are created.
    pub extra_files: &'a [crate::provision::tools::GuestFile],
    /// Symbolic links under their guest paths (a package's own links); their
    /// parent folders are created.
    pub extra_links: &'a [crate::provision::tools::GuestLink],
}

enum Body {
    Dir,
    File(Vec<u8>, u32),
    Symlink(String),
    CharDev(u32, u32),
}

/// Applets busybox offers, from `busybox --list` (sorted, deduplicated).
///
/// # Errors
/// [`InitramfsError::Applets`] if busybox cannot run or lists nothing.
pub fn applets(busybox: &Path) -> Result<Vec<String>, InitramfsError> {
    let err = |why: String| InitramfsError::Applets { busybox: busybox.to_path_buf(), why };
    let out = std::process::Command::new(busybox).arg("--list").output().map_err(|e| err(e.to_string()))?;
    if !out.status.success() {
        return Err(err(format!("exit status {}", out.status)));
    }
    let mut list: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|a| !a.is_empty() && !a.contains('/') && *a != "busybox")
        .map(str::to_string)
        .collect();
    list.sort();
    list.dedup();
    if list.is_empty() {
        return Err(err("no applets listed".into()));
    }
    Ok(list)
}

/// [`applets`], remembered beside the binary in `<busybox>.applets`: listing
/// forks busybox, ~20 ms of every run's host time. The file's first line is the
/// binary's size and modification time, and it is listed again when they differ.
/// The file is a cache: when it cannot be written, the list is still returned.
///
/// # Errors
/// As [`applets`].
pub fn applets_cached(busybox: &Path) -> Result<Vec<String>, InitramfsError> {
    let stamp = std::fs::metadata(busybox).ok().and_then(|m| {
        let mtime = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
        Some(format!("{} {}", m.len(), mtime.as_nanos()))
    });
    let Some(stamp) = stamp else { return applets(busybox) };
    let mut sidecar = busybox.as_os_str().to_owned();
    sidecar.push(".applets");
    let sidecar = PathBuf::from(sidecar);
    if let Ok(text) = std::fs::read_to_string(&sidecar) {
        let mut lines = text.lines();
        if lines.next() == Some(stamp.as_str()) {
            let list: Vec<String> = lines.map(str::to_string).collect();
            if !list.is_empty() {
                return Ok(list);
            }
        }
    }
    let list = applets(busybox)?;
    let tmp = sidecar.with_extension(format!("applets.{}", std::process::id()));
    let saved =
        std::fs::write(&tmp, format!("{stamp}\n{}\n", list.join("\n"))).and_then(|()| std::fs::rename(&tmp, &sidecar));
    if saved.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    Ok(list)
}

/// ELF `e_machine` of the host this runs on (x86-64: 62, AArch64: 183).
const HOST_ELF_MACHINE: u16 = if cfg!(target_arch = "aarch64") { 183 } else { 62 };

/// Whether `bytes` are an ELF file for another machine than the host's
/// (`e_machine`, a little-endian u16 at offset 18 of the ELF header).
pub fn foreign_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF")
        && bytes.get(18..20).is_some_and(|m| u16::from_le_bytes([m[0], m[1]]) != HOST_ELF_MACHINE)
}

/// Build the archive bytes.
///
/// # Errors
/// [`InitramfsError`] when an input cannot be read or busybox cannot list its applets.
pub fn build(spec: &InitramfsSpec<'_>) -> Result<Vec<u8>, InitramfsError> {
    let read =
        |p: &Path| std::fs::read(p).map_err(|source| InitramfsError::Io { path: p.to_path_buf(), error: source });
    let mut entries: Vec<(String, Body)> = Vec::new();
    for d in ["bin", "dev", "lib", "lib/modules", MODULE_DIR, "proc", "sbin", "sys", "tmp"] {
        entries.push((d.to_string(), Body::Dir));
    }
    // The kernel opens /dev/console for PID 1 before /init can mount devtmpfs.
    entries.push(("dev/console".into(), Body::CharDev(5, 1)));
    let busybox = read(spec.busybox)?;
    // A busybox for another architecture (an arm64 guest's) cannot list its
    // applets here: the guest agent links them itself at boot.
    let applets = if foreign_elf(&busybox) { Vec::new() } else { applets_cached(spec.busybox)? };
    entries.push(("bin/busybox".into(), Body::File(busybox, 0o755)));
    for a in applets {
        entries.push((format!("bin/{a}"), Body::Symlink("busybox".into())));
    }
    entries.push(("sbin/init".into(), Body::Symlink("../init".into())));
    let mut order = String::new();
    for m in spec.modules {
        let name = m.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "module.ko".into());
        order.push_str(&name);
        order.push('\n');
        entries.push((format!("{MODULE_DIR}/{name}"), Body::File(read(m)?, 0o644)));
    }
    entries.push((format!("{MODULE_DIR}/order"), Body::File(order.into_bytes(), 0o644)));
    // Folders already there: thousands of extra files (a Python standard
    // library) would make a scan of the entries per file quadratic.
    let mut dirs: std::collections::HashSet<String> =
        entries.iter().filter(|(_, b)| matches!(b, Body::Dir)).map(|(n, _)| n.clone()).collect();
    let mut parents = |entries: &mut Vec<(String, Body)>, path: &str| {
        let mut parent = String::new();
        for part in path.split('/').rev().skip(1).collect::<Vec<_>>().into_iter().rev() {
            parent = if parent.is_empty() { part.to_string() } else { format!("{parent}/{part}") };
            if dirs.insert(parent.clone()) {
                entries.push((parent.clone(), Body::Dir));
            }
        }
    };
    for f in spec.extra_files {
        parents(&mut entries, &f.guest_path);
        entries.push((f.guest_path.clone(), Body::File(read(&f.host)?, f.mode)));
    }
    for l in spec.extra_links {
        parents(&mut entries, &l.guest_path);
        entries.push((l.guest_path.clone(), Body::Symlink(l.target.clone())));
    }
    entries.push(("init".into(), Body::File(INIT_SCRIPT.as_bytes().to_vec(), 0o755)));

    let mut out = Vec::new();
    for (ino, (name, body)) in entries.into_iter().enumerate() {
        let b = cpio::NewcBuilder::new(&name).ino(ino as u32 + 1).uid(0).gid(0).mtime(0);
        let (b, data): (_, Vec<u8>) = match body {
            Body::Dir => (b.mode(0o040_755).nlink(2), Vec::new()),
            Body::File(data, perm) => (b.mode(0o100_000 | perm), data),
            Body::Symlink(target) => (b.mode(0o120_777), target.into_bytes()),
            Body::CharDev(major, minor) => (b.mode(0o020_600).rdev_major(major).rdev_minor(minor), Vec::new()),
        };
        let size = u32::try_from(data.len()).map_err(|_| InitramfsError::TooLarge(name.clone()))?;
        let mut w = b.write(&mut out, size);
        w.write_all(&data)
            .and_then(|_| w.finish().map(|_| ()))
            .map_err(|source| InitramfsError::Io { path: PathBuf::from(name), error: source })?;
    }
    cpio::newc::trailer(&mut out).map_err(|source| InitramfsError::Io { path: "TRAILER!!!".into(), error: source })?;
    match spec.compression {
        Compression::None => Ok(out),
        Compression::Gzip => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(&out)
                .and_then(|_| gz.finish())
                .map_err(|source| InitramfsError::Io { path: "gzip".into(), error: source })
        }
    }
}

/// Build the archive and write it to `path`.
///
/// # Errors
/// As [`build`], plus write errors.
pub fn write(spec: &InitramfsSpec<'_>, path: &Path) -> Result<(), InitramfsError> {
    let bytes = build(spec)?;
    std::fs::write(path, bytes).map_err(|source| InitramfsError::Io { path: path.to_path_buf(), error: source })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in "busybox": a shell script that answers `--list` like busybox.
    fn fake_busybox(dir: &Path) -> PathBuf {
        manarig_test_support::shell_script(dir, "busybox", "printf 'sh\\nmount\\ninsmod\\n'")
    }

    /// A spec of busybox and `modules` only.
    fn plain<'a>(bb: &'a Path, modules: &'a [PathBuf], compression: Compression) -> InitramfsSpec<'a> {
        InitramfsSpec { busybox: bb, modules, compression, extra_files: &[], extra_links: &[] }
    }

    fn names(archive: &[u8]) -> Vec<(String, u32, u32)> {
        let mut r = std::io::Cursor::new(archive.to_vec());
        let mut out = Vec::new();
        loop {
            let reader = cpio::NewcReader::new(r).expect("entry");
            let e = reader.entry();
            if e.is_trailer() {
                break;
            }
            out.push((e.name().to_string(), e.mode(), e.mtime()));
            r = reader.finish().expect("next");
        }
        out
    }

    #[test]
    fn same_inputs_give_the_same_bytes_and_the_layout_init_expects() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bb = fake_busybox(dir.path());
        let ko = dir.path().join("mana.ko");
        std::fs::write(&ko, b"\x7fELF-not-really").expect("write");
        let mods = [ko];
        let spec = plain(&bb, &mods, Compression::None);
        let a = build(&spec).expect("build");
        let b = build(&spec).expect("build");
        assert_eq!(a, b);
        let n = names(&a);
        let has = |name: &str| n.iter().any(|(x, _, _)| x == name);
        for want in [
            "init",
            "bin/busybox",
            "bin/sh",
            "bin/insmod",
            "dev/console",
            "lib/modules/manarig/mana.ko",
            "lib/modules/manarig/order",
        ] {
            assert!(has(want), "{want} in {n:?}");
        }
        assert!(n.iter().all(|(_, _, mtime)| *mtime == 0));
        let init = n.iter().find(|(x, _, _)| x == "init").expect("init");
        assert_eq!(init.1, 0o100_755);
    }

    #[test]
    fn the_applet_list_is_remembered_until_busybox_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bb = fake_busybox(dir.path());
        assert_eq!(applets_cached(&bb).expect("list"), ["insmod", "mount", "sh"]);
        let sidecar = dir.path().join("busybox.applets");
        let text = std::fs::read_to_string(&sidecar).expect("sidecar written");
        // Served from the file while the binary's size and mtime match it.
        let stamp = text.lines().next().expect("stamp").to_string();
        std::fs::write(&sidecar, format!("{stamp}\nfrom-the-file\n")).expect("write");
        assert_eq!(applets_cached(&bb).expect("list"), ["from-the-file"]);
        // A different binary (another size) is listed again.
        std::fs::write(&bb, "#!/bin/sh\nprintf 'sh\\nip\\n'\n").expect("write");
        assert_eq!(applets_cached(&bb).expect("list"), ["ip", "sh"]);
        // An unwritable cache still gives the list.
        std::fs::remove_file(&sidecar).expect("rm");
        std::fs::create_dir(&sidecar).expect("a folder where the file would go");
        assert_eq!(applets_cached(&bb).expect("list"), ["ip", "sh"]);
        assert!(std::fs::read_dir(dir.path()).expect("ls").all(|e| !e
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .contains(".applets.")));
    }

    #[test]
    fn gzip_output_is_gzip_and_reproducible() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bb = fake_busybox(dir.path());
        let spec = plain(&bb, &[], Compression::Gzip);
        let a = build(&spec).expect("build");
        assert_eq!(&a[..2], &[0x1f, 0x8b]);
        assert_eq!(a, build(&spec).expect("build"));
    }

    #[test]
    fn extra_links_are_symlinks_after_their_parent_folders() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bb = fake_busybox(dir.path());
        let links = [crate::provision::tools::GuestLink {
            guest_path: "usr/lib/x86_64-linux-gnu/libffi.so.8".into(),
            target: "libffi.so.8.1.4".into(),
        }];
        let spec = InitramfsSpec { extra_links: &links, ..plain(&bb, &[], Compression::None) };
        let n = names(&build(&spec).expect("build"));
        let at = |name: &str| n.iter().position(|(x, _, _)| x == name).unwrap_or_else(|| panic!("{name} in {n:?}"));
        assert!(
            at("usr") < at("usr/lib/x86_64-linux-gnu") && at("usr/lib/x86_64-linux-gnu") < at(&links[0].guest_path)
        );
        assert_eq!(n[at(&links[0].guest_path)].1, 0o120_777);
    }

    #[test]
    fn a_busybox_for_another_machine_goes_in_without_applet_links() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bb = dir.path().join("busybox");
        // An ELF header for AArch64 (e_machine 183 at offset 18); it cannot run here.
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[18..20].copy_from_slice(&183u16.to_le_bytes());
        std::fs::write(&bb, &elf).expect("write");
        assert!(foreign_elf(&elf));
        let out = build(&plain(&bb, &[], Compression::None)).expect("archive");
        let n = names(&out);
        assert!(n.iter().any(|(name, _, _)| name == "bin/busybox"));
        assert!(!n.iter().any(|(name, _, _)| name == "bin/sh"), "{n:?}");
        assert!(!foreign_elf(&std::fs::read("/proc/self/exe").expect("self")));
    }

    #[test]
    fn missing_module_names_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bb = fake_busybox(dir.path());
        let mods = [dir.path().join("absent.ko")];
        let spec = plain(&bb, &mods, Compression::None);
        let err = build(&spec).expect_err("must fail").to_string();
        assert!(err.contains("absent.ko"), "{err}");
    }
}
