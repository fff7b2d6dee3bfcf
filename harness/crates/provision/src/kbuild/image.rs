//! Kernels the rig did not provision: a bzImage and its modules, either from
//! `cargo xtask kernel build` or from a developer's own build.

use super::KbuildError;
use crate::provision::{kernel as pkernel, KernelInstall, KoCompression};
use std::path::{Path, PathBuf};

/// Offset of the setup header's `header` magic "HdrS" in a bzImage
/// (Documentation/arch/x86/boot.rst, "THE REAL-MODE KERNEL HEADER").
const HDRS_OFFSET: usize = 0x202;
/// Offset of `kernel_version`: a 16-bit pointer to the version string, + 0x200.
const KERNEL_VERSION_OFFSET: usize = 0x20e;

/// The setup header's `kernel_version` string of a bzImage: its `UTS_RELEASE`
/// and `UTS_VERSION` (`6.12.117-manarig (user@host) #1 SMP PREEMPT …`).
///
/// # Errors
/// [`KbuildError::Image`] when the file is not a bzImage or has no version string.
pub fn bzimage_version(path: &Path) -> Result<String, KbuildError> {
    use std::io::Read;
    // The string is in the setup code: a 16-bit pointer past 0x200, at most 256 bytes.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(0x200 + 0x1_0000 + 256).read_to_end(&mut bytes))
        .map_err(|e| KbuildError::io(path, e))?;
    let bad = |why: &str| KbuildError::Image(format!("{}: {why}", path.display()));
    if bytes.get(HDRS_OFFSET..HDRS_OFFSET + 4) != Some(b"HdrS".as_slice()) {
        return Err(bad("not an x86 bzImage (no \"HdrS\" setup header at 0x202)"));
    }
    let ptr = bytes
        .get(KERNEL_VERSION_OFFSET..KERNEL_VERSION_OFFSET + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(|| bad("truncated setup header"))?;
    if ptr == 0 {
        return Err(bad("the setup header has no kernel_version string"));
    }
    let start = 0x200 + usize::from(ptr);
    let tail = bytes.get(start..).ok_or_else(|| bad("kernel_version points past the end of the file"))?;
    let end = tail.iter().take(256).position(|b| *b == 0).ok_or_else(|| bad("kernel_version is not terminated"))?;
    let text = String::from_utf8_lossy(&tail[..end]).into_owned();
    if text.trim().is_empty() {
        return Err(bad("empty kernel_version string"));
    }
    Ok(text)
}

/// The release (`uname -r`) a bzImage reports in its setup header's
/// `kernel_version` string: its first word ([`bzimage_version`]).
///
/// # Errors
/// [`KbuildError::Image`] when the file is not a bzImage or has no version string.
pub fn bzimage_release(path: &Path) -> Result<String, KbuildError> {
    let version = bzimage_version(path)?;
    Ok(version.split_whitespace().next().unwrap_or_default().to_string())
}

/// Whether a bzImage's kernel preempts kernel code on its own: its
/// `kernel_version` string names `PREEMPT` (full, and lazy from 6.13 on) or
/// `PREEMPT_RT` (scripts/mkcompile_h writes one of them, or
/// `PREEMPT_DYNAMIC`, after `SMP`). `PREEMPT_DYNAMIC` picks the model at boot
/// and counts as not preempting, as does a kernel without any (`PREEMPT_NONE`
/// or `PREEMPT_VOLUNTARY`); `None` when the file is not a readable bzImage.
pub fn bzimage_preempts(path: &Path) -> Option<bool> {
    let version = bzimage_version(path).ok()?;
    Some(version.split_whitespace().any(|w| w == "PREEMPT" || w == "PREEMPT_RT"))
}

/// The release (`uname -r`) of the kernel built in the object folder `obj`:
/// kbuild's `include/config/kernel.release` (what `make kernelrelease`
/// prints). For images with no version string at a fixed offset (arm64's
/// `Image`).
///
/// # Errors
/// [`KbuildError::Io`] when the file cannot be read, [`KbuildError::Image`] when it is empty.
pub fn kbuild_release(obj: &Path) -> Result<String, KbuildError> {
    let path = obj.join("include/config/kernel.release");
    let text = std::fs::read_to_string(&path).map_err(|e| KbuildError::io(&path, e))?;
    let release = text.trim();
    if release.is_empty() || release.contains(char::is_whitespace) {
        return Err(KbuildError::Image(format!("{}: no release in {text:?}", path.display())));
    }
    Ok(release.to_owned())
}

/// Offset of the arm64 `Image` header's magic, "ARM\x64"
/// (Documentation/arch/arm64/booting.rst, "Call the kernel image").
const ARM64_MAGIC_OFFSET: usize = 0x38;

/// The architecture a kernel image boots: x86_64 for a bzImage (its "HdrS"
/// setup header), arm64 for an uncompressed arm64 `Image` (its "ARM\x64"
/// magic); `None` for anything else (a compressed image, an unreadable file).
pub fn image_arch(path: &Path) -> Option<crate::topology::Arch> {
    use std::io::Read;
    let mut head = [0u8; 0x210];
    let mut f = std::fs::File::open(path).ok()?;
    f.read_exact(&mut head).ok()?;
    if &head[HDRS_OFFSET..HDRS_OFFSET + 4] == b"HdrS" {
        Some(crate::topology::Arch::X86_64)
    } else if &head[ARM64_MAGIC_OFFSET..ARM64_MAGIC_OFFSET + 4] == b"ARM\x64" {
        Some(crate::topology::Arch::Arm64)
    } else {
        None
    }
}

/// Offset of the arm64 `Image` header's `flags` (a little-endian u64;
/// Documentation/arch/arm64/booting.rst).
const ARM64_FLAGS_OFFSET: usize = 0x18;

/// The page size, bytes, an arm64 `Image` was built for: its header's flags,
/// bits 1-2 ("Kernel page size": 1 = 4K, 2 = 16K, 3 = 64K;
/// Documentation/arch/arm64/booting.rst). `None` for anything else (not an
/// uncompressed arm64 `Image`, an unreadable file, 0 = unspecified).
pub fn image_page_size(path: &Path) -> Option<u64> {
    use std::io::Read;
    if image_arch(path) != Some(crate::topology::Arch::Arm64) {
        return None;
    }
    let mut head = [0u8; ARM64_FLAGS_OFFSET + 8];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    let flags = u64::from_le_bytes(head[ARM64_FLAGS_OFFSET..].try_into().ok()?);
    match (flags >> 1) & 0b11 {
        1 => Some(4 << 10),
        2 => Some(16 << 10),
        3 => Some(64 << 10),
        _ => None,
    }
}

/// The release a module was built for (first word of its `vermagic`).
///
/// # Errors
/// As [`pkernel::modinfo`]; [`KbuildError::Image`] when there is no vermagic.
pub fn module_release(path: &Path) -> Result<String, KbuildError> {
    let v = pkernel::modinfo(path, "vermagic")?;
    v.first()
        .and_then(|s| s.split_whitespace().next())
        .map(str::to_string)
        .ok_or_else(|| KbuildError::Image(format!("{}: no vermagic in .modinfo", path.display())))
}

/// Check that every module was built for `release`: `init_module()` refuses
/// a module whose vermagic differs ("Invalid module format"), which in the
/// guest would look like a probe that never happened.
///
/// `shown` names a module in the error (the user's file rather than a copy).
///
/// # Errors
/// [`KbuildError::Image`] naming the module and both releases.
pub fn check_vermagic(
    modules: &[PathBuf],
    release: &str,
    image: &Path,
    shown: &dyn Fn(&Path) -> String,
) -> Result<(), KbuildError> {
    for m in modules {
        let r = module_release(m)?;
        if r != release {
            return Err(KbuildError::Image(format!(
                "{} was built for {r}, but {} is {release}: the guest would refuse it (vermagic)",
                shown(m),
                image.display()
            )));
        }
    }
    Ok(())
}

/// A developer's own kernel: `--kernel-image <bzImage> --modules <dir>`.
/// `modules` is searched for `mana.ko` (or `mana.ko.xz`) and its
/// dependencies: a build tree, a `lib/modules/<release>` tree or a folder of
/// `.ko` files. They are copied, decompressed, to `<cache>/kbuild/user/<hash>/`.
///
/// # Errors
/// [`KbuildError::Image`] for a file that is not a bzImage, a missing
/// mana module or a vermagic differing from the image's release.
pub fn user_kernel(image: &Path, modules: &Path, cache: &Path) -> Result<KernelInstall, KbuildError> {
    let release = bzimage_release(image)?;
    let root = [modules.join("lib/modules").join(&release), modules.join(&release)]
        .into_iter()
        .find(|p| p.is_dir())
        .unwrap_or_else(|| modules.to_path_buf());
    let tag = super::key::cache_key(&super::key::KeyInputs {
        source: format!("user image {} modules {}", image.display(), root.display()),
        toolchain: release.clone(),
        ..Default::default()
    });
    let out = cache.join("kbuild/user").join(super::key::short(&tag));
    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(|e| KbuildError::io(&out, e))?;
    }
    let collected = pkernel::collect_modules(&root, &release, &out).map_err(KbuildError::from).and_then(|found| {
        let modules: Vec<PathBuf> = found.modules.iter().map(|m| out.join(m)).collect();
        // The copies are removed below on failure: name the user's files.
        let shown = |p: &Path| {
            p.strip_prefix(&out).map_or_else(|_| p.display().to_string(), |rel| root.join(rel).display().to_string())
        };
        check_vermagic(&modules, &release, image, &shown)?;
        Ok((modules, found.compression))
    });
    let (modules, compression) = match collected {
        Ok(c) => c,
        Err(e) => {
            // Nothing of a refused kernel stays in the cache.
            let _ = std::fs::remove_dir_all(&out);
            return Err(e);
        }
    };
    Ok(KernelInstall {
        id: format!("image:{}", image.display()),
        release,
        vmlinuz: image.to_path_buf(),
        modules,
        compression,
        packages: Vec::new(),
    })
}

/// A [`KernelInstall`] for a finished build's outputs: its `image` and the
/// modules (file names in `dir`).
pub fn built_kernel(key: &str, release: &str, image: &Path, dir: &Path, modules: &[String]) -> KernelInstall {
    KernelInstall {
        id: format!("{}{}", KernelInstall::BUILD_ID_PREFIX, super::key::short(key)),
        release: release.to_string(),
        vmlinuz: image.to_path_buf(),
        modules: modules.iter().map(|m| dir.join(m)).collect(),
        compression: KoCompression::None,
        packages: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use manarig_test_support::bzimage_with_version;

    #[test]
    fn an_image_says_its_architecture_by_its_header() {
        let d = tempfile::tempdir().expect("tmp");
        let bz = d.path().join("bzImage");
        std::fs::write(&bz, bzimage_with_version(b"6.12.1 (u@h)\0")).expect("w");
        let mut arm = vec![0u8; 0x1000];
        arm[ARM64_MAGIC_OFFSET..ARM64_MAGIC_OFFSET + 4].copy_from_slice(b"ARM\x64");
        let image = d.path().join("Image");
        std::fs::write(&image, arm).expect("w");
        let short = d.path().join("short");
        std::fs::write(&short, b"MZ").expect("w");
        assert_eq!(image_arch(&bz), Some(crate::topology::Arch::X86_64));
        assert_eq!(image_arch(&image), Some(crate::topology::Arch::Arm64));
        assert_eq!(image_arch(&short), None);
        assert_eq!(image_arch(&d.path().join("missing")), None);
    }

    /// The flags of manarig's 6.12 arm64 builds (`xxd -s 0x18 -l 8 Image`):
    /// 0x0e with 64 KiB pages, 0x0a with 4 KiB (bit 3: placement anywhere).
    #[test]
    fn an_arm64_image_says_its_page_size_by_its_flags() {
        let d = tempfile::tempdir().expect("tmp");
        let image = |flags: u8| {
            let mut arm = vec![0u8; 0x1000];
            arm[ARM64_MAGIC_OFFSET..ARM64_MAGIC_OFFSET + 4].copy_from_slice(b"ARM\x64");
            arm[ARM64_FLAGS_OFFSET] = flags;
            let path = d.path().join(format!("Image-{flags:x}"));
            std::fs::write(&path, arm).expect("w");
            path
        };
        assert_eq!(image_page_size(&image(0x0e)), Some(64 << 10));
        assert_eq!(image_page_size(&image(0x0a)), Some(4 << 10));
        assert_eq!(image_page_size(&image(0x0c)), Some(16 << 10));
        assert_eq!(image_page_size(&image(0x08)), None, "unspecified");
        let bz = d.path().join("bzImage");
        std::fs::write(&bz, bzimage_with_version(b"6.12.1 (u@h)\0")).expect("w");
        assert_eq!(image_page_size(&bz), None);
    }

    #[test]
    fn release_comes_from_the_setup_header() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("bzImage");
        std::fs::write(&p, bzimage_with_version(b"6.12.117-manarig (manarig@manarig) #1 SMP\0")).expect("w");
        assert_eq!(bzimage_release(&p).expect("release"), "6.12.117-manarig");
    }

    #[test]
    fn preemption_comes_from_the_version_string() {
        // The rig's own builds of 2026-12-04: 6.12 with the minimal config is
        // PREEMPT_NONE, 7.3.4 with it PREEMPT_LAZY; Debian's are PREEMPT_DYNAMIC.
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("bzImage");
        for (version, preempts) in [
            (&b"6.12.117-manarig-b39cddcc (manarig@manarig) #1 SMP 1970-01-01 00:00:00 UTC\0"[..], false),
            (b"7.3.4-manarig-f202d239 (manarig@manarig) #1 SMP PREEMPT 1970-01-01 00:00:00 UTC\0", true),
            (b"6.12.117+deb13-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian\0", false),
            (b"6.12.1-rt (u@h) #1 SMP PREEMPT_RT\0", true),
        ] {
            std::fs::write(&p, bzimage_with_version(version)).expect("w");
            assert_eq!(bzimage_preempts(&p), Some(preempts), "{}", String::from_utf8_lossy(version));
        }
        std::fs::write(&p, b"\x7fELF").expect("w");
        assert_eq!(bzimage_preempts(&p), None);
    }

    #[test]
    fn not_a_bzimage_is_a_clear_error() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("vmlinux");
        std::fs::write(&p, b"\x7fELF").expect("w");
        assert!(bzimage_release(&p).expect_err("bad").to_string().contains("not an x86 bzImage"));
        let mut b = bzimage_with_version(b"x");
        b[0x800..0x1000].fill(b'a');
        std::fs::write(&p, b).expect("w");
        assert!(bzimage_release(&p).expect_err("bad").to_string().contains("not terminated"));
    }

    #[test]
    fn a_refused_user_kernel_leaves_nothing_in_the_cache() {
        let d = tempfile::tempdir().expect("tmp");
        let img = d.path().join("bzImage");
        std::fs::write(&img, bzimage_with_version(b"6.12.117-manarig (manarig@manarig) #1 SMP\0")).expect("w");
        let mods = d.path().join("mods");
        std::fs::create_dir(&mods).expect("mkdir");
        std::fs::write(mods.join("mana.ko"), b"not an ELF module").expect("w");
        let cache = d.path().join("cache");
        assert!(user_kernel(&img, &mods, &cache).is_err());
        let user = cache.join("kbuild/user");
        let left: Vec<_> =
            std::fs::read_dir(&user).map(|r| r.flatten().map(|e| e.path()).collect()).unwrap_or_default();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn the_pinned_debian_image_reports_its_release() {
        // Debian 6.12.117 cloud kernel as provisioned (guest-images/kernels.lock);
        // only checked where the cache is there.
        let Ok(cache) = crate::provision::cache_dir(None) else { return };
        let img = cache.join("kernels/6.12/vmlinuz");
        if img.is_file() {
            assert_eq!(bzimage_release(&img).expect("release"), "6.12.117+deb13-cloud-amd64");
        }
    }
}
