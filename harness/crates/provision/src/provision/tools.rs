//! Guest tools beyond busybox, each with the shared libraries it loads, laid
//! out as the guest expects them: Debian's `ethtool` (busybox has no ethtool
//! applet, and `ethtool -L` is how the seeds set channels) and `irqbalance`
//! (`run --irqbalance`).
//!
//! `<cache>/<tool>/` holds the files under their guest paths (below) and a
//! `stamp.json` naming the pins they stand for and the packages they came
//! from. The tools share libc and its loader in the guest, so their packages
//! are resolved as one list: when a pin has left the archive, every tool's
//! packages are taken again at the newest of their suite, together, and every
//! tool is unpacked again from them (a loader and a libc from two builds
//! must never meet in one initramfs).
//!
//! busybox (`<cache>/busybox/busybox`) is static and stands alone.

use super::apt;
use super::fallback::{self, Fallback};
pub use super::guest_files::{GuestFile, GuestLink};
use super::lock::{BusyboxPin, PackagePin, ToolPin};
use super::used::{self, UsedPackage};
use super::{read_stamp, write_stamp, CacheMiss, ProvisionError, Provisioner};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// (path inside the unpacked packages, path in the guest) for ethtool:
/// the binary, the libraries its ELF `NEEDED` entries name (libm, libmnl, libc:
/// `readelf -d` on Debian trixie's ethtool 6.14) in Debian's multiarch folder,
/// which glibc's loader searches without an ld.so.cache, and the loader at the
/// ELF interpreter path `/lib64/ld-linux-x86-64.so.2`. Symlinks in the
/// packages (libmnl.so.0, the loader) are followed.
pub const ETHTOOL_FILES: &[(&str, &str)] = &[
    ("usr/sbin/ethtool", "sbin/ethtool"),
    ("usr/lib/x86_64-linux-gnu/libc.so.6", "lib/x86_64-linux-gnu/libc.so.6"),
    ("usr/lib/x86_64-linux-gnu/libm.so.6", "lib/x86_64-linux-gnu/libm.so.6"),
    ("usr/lib/x86_64-linux-gnu/libmnl.so.0", "lib/x86_64-linux-gnu/libmnl.so.0"),
    ("usr/lib64/ld-linux-x86-64.so.2", "lib64/ld-linux-x86-64.so.2"),
];

/// (path inside the unpacked packages, path in the guest) for irqbalance: the
/// binary and the libraries of its ELF `NEEDED` closure (`readelf -d` on Debian
/// trixie's irqbalance 1.9.4 and each library: libcap-ng, glib → libatomic,
/// libpcre2-8; libnuma; libsystemd → libcap; libm, libc, the loader), under the
/// same guest paths as [`ETHTOOL_FILES`] where both have a file (identical:
/// the same libc6 pin).
pub const IRQBALANCE_FILES: &[(&str, &str)] = &[
    ("usr/sbin/irqbalance", "sbin/irqbalance"),
    ("usr/lib/x86_64-linux-gnu/libcap-ng.so.0", "lib/x86_64-linux-gnu/libcap-ng.so.0"),
    ("usr/lib/x86_64-linux-gnu/libglib-2.0.so.0", "lib/x86_64-linux-gnu/libglib-2.0.so.0"),
    ("usr/lib/x86_64-linux-gnu/libatomic.so.1", "lib/x86_64-linux-gnu/libatomic.so.1"),
    ("usr/lib/x86_64-linux-gnu/libpcre2-8.so.0", "lib/x86_64-linux-gnu/libpcre2-8.so.0"),
    ("usr/lib/x86_64-linux-gnu/libnuma.so.1", "lib/x86_64-linux-gnu/libnuma.so.1"),
    ("usr/lib/x86_64-linux-gnu/libsystemd.so.0", "lib/x86_64-linux-gnu/libsystemd.so.0"),
    ("usr/lib/x86_64-linux-gnu/libcap.so.2", "lib/x86_64-linux-gnu/libcap.so.2"),
    ("usr/lib/x86_64-linux-gnu/libc.so.6", "lib/x86_64-linux-gnu/libc.so.6"),
    ("usr/lib/x86_64-linux-gnu/libm.so.6", "lib/x86_64-linux-gnu/libm.so.6"),
    ("usr/lib64/ld-linux-x86-64.so.2", "lib64/ld-linux-x86-64.so.2"),
];

/// (path inside the unpacked packages, path in the guest) for an arm64
/// guest's ethtool: the binary and what its ELF `NEEDED` entries name
/// (`readelf -d` on Debian trixie's arm64 ethtool 6.14: libm, libmnl, libc
/// and the loader) in Debian's aarch64 multiarch folder, and the loader at
/// its ELF interpreter path `/lib/ld-linux-aarch64.so.1`.
pub const ETHTOOL_ARM64_FILES: &[(&str, &str)] = &[
    ("usr/sbin/ethtool", "sbin/ethtool"),
    ("usr/lib/aarch64-linux-gnu/libc.so.6", "lib/aarch64-linux-gnu/libc.so.6"),
    ("usr/lib/aarch64-linux-gnu/libm.so.6", "lib/aarch64-linux-gnu/libm.so.6"),
    ("usr/lib/aarch64-linux-gnu/libmnl.so.0", "lib/aarch64-linux-gnu/libmnl.so.0"),
    ("usr/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1", "lib/ld-linux-aarch64.so.1"),
];

/// (path inside the unpacked package, path in the guest) for the emulator an
/// arm64 guest runs the x86_64 `manarig-flows` with: `qemu-x86_64` from
/// Debian's arm64 `qemu-user` (statically linked: `file` says "ARM aarch64,
/// static-pie linked"; the package has no Depends).
pub const X86_USER_FILES: &[(&str, &str)] = &[("usr/bin/qemu-x86_64", "usr/bin/qemu-x86_64")];

/// (path inside the unpacked packages, path in the guest) for what the x86_64
/// `manarig-flows` loads (`readelf -d`: libc.so.6 and the ELF interpreter
/// `/lib64/ld-linux-x86-64.so.2`), at the paths an x86 guest has
/// them ([`ETHTOOL_FILES`]): `qemu-x86_64` opens the interpreter at that path
/// and the loader searches the x86_64 multiarch folder, which an arm64 guest's
/// own libraries (`lib/aarch64-linux-gnu`) leave free.
pub const X86_LIBC_FILES: &[(&str, &str)] = &[
    ("usr/lib/x86_64-linux-gnu/libc.so.6", "lib/x86_64-linux-gnu/libc.so.6"),
    ("usr/lib64/ld-linux-x86-64.so.2", "lib64/ld-linux-x86-64.so.2"),
];

/// (path inside the unpacked package, path in the tool's folder) for the
/// arm64 guests' UEFI firmware (`qemu-efi-aarch64`): the code flash image
/// without secure boot, which QEMU's `virt` machine takes as `-bios`.
pub const AAVMF_FILES: &[(&str, &str)] = &[("usr/share/AAVMF/AAVMF_CODE.no-secboot.fd", "AAVMF_CODE.fd")];

/// A guest tool: its name (the cache folder's and the errors') and its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// `ethtool`, `irqbalance`: `<cache>/<name>/`.
    pub name: &'static str,
    /// (path in the unpacked packages, path in the guest).
    pub files: &'static [(&'static str, &'static str)],
    /// Instead of `files`, the packages unpacked whole into `<cache>/<name>/root`
    /// ([`super::selftest_tools`]); the file named here shows the root is there.
    pub whole_root: Option<&'static str>,
}

/// ethtool ([`ETHTOOL_FILES`]).
pub const ETHTOOL: Tool = Tool { name: "ethtool", files: ETHTOOL_FILES, whole_root: None };
/// An arm64 guest's ethtool ([`ETHTOOL_ARM64_FILES`]), in `<cache>/arm64/ethtool`.
pub const ETHTOOL_ARM64: Tool = Tool { name: "ethtool", files: ETHTOOL_ARM64_FILES, whole_root: None };
/// An arm64 guest's `qemu-x86_64` ([`X86_USER_FILES`]), in `<cache>/arm64/x86-user`.
pub const X86_USER: Tool = Tool { name: "x86-user", files: X86_USER_FILES, whole_root: None };
/// The x86_64 libraries an arm64 guest's `manarig-flows` loads
/// ([`X86_LIBC_FILES`]), in `<cache>/arm64/x86-libc`.
pub const X86_LIBC: Tool = Tool { name: "x86-libc", files: X86_LIBC_FILES, whole_root: None };
/// The arm64 guests' UEFI firmware ([`AAVMF_FILES`]), in `<cache>/arm64/firmware`.
pub const AAVMF: Tool = Tool { name: "firmware", files: AAVMF_FILES, whole_root: None };
/// irqbalance ([`IRQBALANCE_FILES`]).
pub const IRQBALANCE: Tool = Tool { name: "irqbalance", files: IRQBALANCE_FILES, whole_root: None };
/// The selftest runs' guest tools: Python, bash, iproute2, ethtool, socat,
/// iperf3, ping and their libraries, unpacked whole ([`super::selftest_tools`]).
pub const SELFTESTS: Tool =
    Tool { name: super::selftest_tools::DIR, files: &[], whole_root: Some("usr/bin/python3.13") };

/// A tool's stamp: the pin it stands for and, after a fallback, what it was
/// unpacked from instead.
#[derive(Serialize, Deserialize, PartialEq)]
struct ToolStamp {
    pin: ToolPin,
    #[serde(default)]
    used: Option<Vec<PackagePin>>,
}

impl ToolStamp {
    fn used(&self) -> &[PackagePin] {
        self.used.as_deref().unwrap_or(&self.pin.packages)
    }
}

/// A provisioned guest tool: its initramfs files and the packages they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledTool {
    /// Its folder, `<cache>/<name>` (a whole-root tool's files are in `root/`).
    pub dir: PathBuf,
    /// The files, in the tool's order (the binary first); empty for a whole-root tool.
    pub files: Vec<GuestFile>,
    /// The packages, against their pins.
    pub packages: Vec<UsedPackage>,
}

/// The provisioned busybox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busybox {
    /// The static binary.
    pub binary: PathBuf,
    /// Its package, against its pin.
    pub package: UsedPackage,
}

#[derive(Serialize, Deserialize, PartialEq)]
struct BusyboxStamp {
    pin: PackagePin,
    #[serde(default)]
    used: Option<PackagePin>,
}

fn mode_of(guest_path: &str) -> u32 {
    if ["sbin/", "usr/bin/", "lib64/", "lib/ld-linux"].iter().any(|p| guest_path.starts_with(p)) {
        0o755
    } else {
        0o644
    }
}

/// `tool`'s files in its provisioned folder `dir`, in the tool's order.
pub fn tool_files(tool: Tool, dir: &Path) -> Vec<GuestFile> {
    tool.files
        .iter()
        .map(|&(_, guest)| GuestFile { guest_path: guest.to_string(), host: dir.join(guest), mode: mode_of(guest) })
        .collect()
}

/// `tool` as provisioned in `<cache>/<name>` for `pin`, or why not.
pub(crate) fn load_tool(tool: Tool, cache: &Path, pin: &ToolPin) -> Result<InstalledTool, CacheMiss> {
    let dir = cache.join(tool.name);
    let stamp: ToolStamp = read_stamp(&dir.join("stamp.json")).ok_or(CacheMiss::Missing)?;
    if &stamp.pin != pin {
        return Err(CacheMiss::Stale);
    }
    let files = tool_files(tool, &dir);
    if let Some(f) = files.iter().find(|f| !f.host.is_file()) {
        return Err(CacheMiss::Gone(f.host.clone()));
    }
    if let Some(marker) = tool.whole_root.map(|m| dir.join("root").join(m)).filter(|m| !m.is_file()) {
        return Err(CacheMiss::Gone(marker));
    }
    Ok(InstalledTool { dir, files, packages: used::pair(tool.name, stamp.used(), &pin.packages) })
}

/// busybox as provisioned in `<cache>/busybox` for `pin`, or why not.
pub(crate) fn load_busybox(cache: &Path, pin: &BusyboxPin) -> Result<Busybox, CacheMiss> {
    let dir = cache.join("busybox");
    let stamp: BusyboxStamp = read_stamp(&dir.join("stamp.json")).ok_or(CacheMiss::Missing)?;
    if stamp.pin != pin.package {
        return Err(CacheMiss::Stale);
    }
    let binary = dir.join("busybox");
    if !binary.is_file() {
        return Err(CacheMiss::Gone(binary));
    }
    let used = stamp.used.as_ref().unwrap_or(&stamp.pin);
    let package = used::pair("busybox", std::slice::from_ref(used), std::slice::from_ref(&pin.package)).remove(0);
    Ok(Busybox { binary, package })
}

/// busybox for `pin`: cached, else the pinned package, else (the pin gone, not
/// `--locked`) the newest `track` package of the pin's suite.
///
/// # Errors
/// Apt, checksum and unpack failures; a gone pin under `--locked`.
pub(crate) fn ensure_busybox(p: &mut Provisioner<'_>, pin: &BusyboxPin) -> Result<(), ProvisionError> {
    if let Ok(b) = load_busybox(&p.cache, pin) {
        p.say(&format!("busybox: {} (cached)", b.package.describe()));
        return Ok(());
    }
    let using = if p.pins_available(std::slice::from_ref(&pin.package))? {
        pin.package.clone()
    } else {
        let a = p.apt()?;
        let e = fallback::newest_in_suite(&a, &pin.track, &pin.suite)?
            .ok_or_else(|| ProvisionError::Package(format!("busybox: no {} in {} any more", pin.track, pin.suite)))?;
        let using = fallback::pin_of(&e);
        p.say(&Fallback::new(&pin.package, &using, &pin.suite).to_string());
        using
    };
    let deb = p.fetch(&using)?;
    let tmp = tempfile::tempdir_in(&p.cache).map_err(|e| ProvisionError::io(&p.cache, e))?;
    apt::extract_deb(&deb, tmp.path())?;
    let bin = ["usr/bin/busybox", "bin/busybox"]
        .iter()
        .map(|f| tmp.path().join(f))
        .find(|f| f.is_file())
        .ok_or_else(|| ProvisionError::Package(format!("{}: no bin/busybox in the package", deb.display())))?;
    let dir = p.cache.join("busybox");
    std::fs::create_dir_all(&dir).map_err(|e| ProvisionError::io(&dir, e))?;
    let dst = dir.join("busybox");
    std::fs::copy(&bin, &dst).map_err(|e| ProvisionError::io(&dst, e))?;
    let used = (using != pin.package).then(|| using.clone());
    write_stamp(&dir.join("stamp.json"), &BusyboxStamp { pin: pin.package.clone(), used })?;
    p.say(&format!("busybox: {} {} ready", using.name, using.version));
    Ok(())
}

/// Every guest tool of `tools` for its pin: all cached, else all from their
/// pins, else (a pin gone, not `--locked`) all from the newest versions of
/// their suites, resolved together; every tool whose packages change is
/// unpacked again.
///
/// # Errors
/// Apt, checksum and unpack failures; a gone pin under `--locked`; a package
/// its suite no longer has.
pub(crate) fn ensure_tools(p: &mut Provisioner<'_>, tools: &[(Tool, &ToolPin)]) -> Result<(), ProvisionError> {
    if tools.iter().all(|(t, pin)| load_tool(*t, &p.cache, pin).is_ok()) {
        for (t, _) in tools {
            p.say(&format!("{}: cached", t.name));
        }
        return Ok(());
    }
    let every_pin: Vec<PackagePin> = tools.iter().flat_map(|(_, pin)| pin.packages.iter().cloned()).collect();
    let plan: Vec<Vec<PackagePin>> = if p.pins_available(&every_pin)? {
        tools.iter().map(|(_, pin)| pin.packages.clone()).collect()
    } else {
        let a = p.apt()?;
        let mut plan = Vec::new();
        for (_, pin) in tools {
            let using = fallback::newest_list_in_suite(&a, &pin.packages, &pin.suite)?;
            for f in fallback::list_fallbacks(&pin.packages, &using, &pin.suite) {
                p.say(&f.to_string());
            }
            plan.push(using);
        }
        plan
    };
    for ((tool, pin), using) in tools.iter().zip(plan) {
        let dir = p.cache.join(tool.name);
        let current: Option<ToolStamp> = read_stamp(&dir.join("stamp.json"));
        if load_tool(*tool, &p.cache, pin).is_ok() && current.is_some_and(|s| s.used() == using.as_slice()) {
            p.say(&format!("{}: cached", tool.name));
            continue;
        }
        let debs = using.iter().map(|u| p.fetch(u)).collect::<Result<Vec<_>, _>>()?;
        if tool.whole_root.is_some() {
            super::selftest_tools::install(&p.cache, &debs, &dir)?;
        } else {
            install_tool(*tool, &p.cache, &debs, &dir)?;
        }
        let used = (using != pin.packages).then_some(using);
        write_stamp(&dir.join("stamp.json"), &ToolStamp { pin: (*pin).clone(), used })?;
        p.say(&format!("{}: ready in {}", tool.name, dir.display()));
    }
    Ok(())
}

/// Unpack `debs` (already verified) and copy `tool`'s files into `dir`.
///
/// # Errors
/// [`ProvisionError::Package`] when a package lacks one of the files;
/// I/O errors with the path.
fn install_tool(tool: Tool, cache: &Path, debs: &[PathBuf], dir: &Path) -> Result<(), ProvisionError> {
    let tmp = tempfile::tempdir_in(cache).map_err(|e| ProvisionError::io(cache, e))?;
    for deb in debs {
        apt::extract_deb(deb, tmp.path())?;
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| ProvisionError::io(dir, e))?;
    }
    for &(from, to) in tool.files {
        let src = tmp.path().join(from);
        if !src.exists() {
            let names: Vec<String> =
                debs.iter().filter_map(|d| d.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
            let tool = tool.name;
            return Err(ProvisionError::Package(format!("{tool}: no {from} in the packages {}", names.join(", "))));
        }
        let dst = dir.join(to);
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent).map_err(|e| ProvisionError::io(parent, e))?;
        }
        // fs::copy follows symlinks (libmnl.so.0, the loader): the guest gets the files.
        std::fs::copy(&src, &dst).map_err(|e| ProvisionError::io(&dst, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arm64_guests_emulator_and_x86_64_loader_are_executable_beside_the_aarch64_ones() {
        let emulator = tool_files(X86_USER, Path::new("/c/x86-user"));
        assert_eq!((emulator[0].guest_path.as_str(), emulator[0].mode), ("usr/bin/qemu-x86_64", 0o755));
        let libc = tool_files(X86_LIBC, Path::new("/c/x86-libc"));
        let paths: Vec<(&str, u32)> = libc.iter().map(|f| (f.guest_path.as_str(), f.mode)).collect();
        assert_eq!(paths, [("lib/x86_64-linux-gnu/libc.so.6", 0o644), ("lib64/ld-linux-x86-64.so.2", 0o755)]);
        // No guest path of an arm64 guest's own ethtool is taken by them.
        let arm64: Vec<&str> = ETHTOOL_ARM64_FILES.iter().map(|&(_, g)| g).collect();
        assert!(libc.iter().chain(&emulator).all(|f| !arm64.contains(&f.guest_path.as_str())));
    }

    #[test]
    fn ethtool_files_keep_the_elf_interpreter_path_and_executable_bits() {
        let files = tool_files(ETHTOOL, Path::new("/c/ethtool"));
        let loader = files.iter().find(|f| f.guest_path == "lib64/ld-linux-x86-64.so.2").expect("loader");
        assert_eq!(loader.mode, 0o755);
        assert_eq!(loader.host, Path::new("/c/ethtool/lib64/ld-linux-x86-64.so.2"));
        assert_eq!(files[0].guest_path, "sbin/ethtool");
        assert_eq!(files[0].mode, 0o755);
        assert!(files.iter().filter(|f| f.guest_path.ends_with(".so.6")).all(|f| f.mode == 0o644));
    }

    #[test]
    fn irqbalance_shares_ethtools_libc_paths_and_modes() {
        let ours = tool_files(IRQBALANCE, Path::new("/c/irqbalance"));
        let theirs = tool_files(ETHTOOL, Path::new("/c/ethtool"));
        assert_eq!(ours[0].guest_path, "sbin/irqbalance");
        for f in &theirs[1..] {
            if f.guest_path.contains("libmnl") {
                continue;
            }
            let same = ours.iter().find(|o| o.guest_path == f.guest_path).expect("libc, libm and the loader");
            assert_eq!(same.mode, f.mode);
        }
    }

    #[test]
    fn arm64_ethtool_keeps_its_loader_at_the_elf_interpreter_path() {
        let files = tool_files(ETHTOOL_ARM64, Path::new("/c/arm64/ethtool"));
        let loader = files.iter().find(|f| f.guest_path == "lib/ld-linux-aarch64.so.1").expect("loader");
        assert_eq!(loader.mode, 0o755);
        assert_eq!(files[0].guest_path, "sbin/ethtool");
        assert!(files.iter().filter(|f| f.guest_path.ends_with(".so.6")).all(|f| f.mode == 0o644));
        assert!(files.iter().all(|f| !f.guest_path.contains("x86_64")));
    }

    #[test]
    fn an_empty_folder_is_not_ready() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pin = ToolPin { suite: "trixie".into(), packages: vec![] };
        assert_eq!(load_tool(ETHTOOL, dir.path(), &pin), Err(CacheMiss::Missing));
    }
}
