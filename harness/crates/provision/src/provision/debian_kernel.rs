//! A pinned Debian kernel in the cache (`<cache>/kernels/<id>/`): the pinned
//! packages, or once they have left the archive the newest `linux-image-*`
//! the pin's track matches, unpacked into `vmlinuz` and the modules
//! ([`super::kernel::extract_kernel`]).

use super::apt;
use super::fallback::{self, Fallback};
use super::kernel::{self, ExtractedKernel};
use super::lock::{KernelPin, PackagePin};
use super::used;
use super::{read_stamp, write_stamp, CacheMiss, KernelInstall, KoCompression, ProvisionError, Provisioner};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What a kernel's folder holds: the pin it stands for, what was extracted
/// and, after a fallback, the release and packages used instead.
#[derive(Serialize, Deserialize, PartialEq)]
struct KernelStamp {
    pin: KernelPin,
    extracted: ExtractedKernel,
    #[serde(default)]
    used: Option<UsedKernel>,
}

/// A fallback kernel: its `uname -r` and packages.
#[derive(Serialize, Deserialize, PartialEq, Clone)]
struct UsedKernel {
    release: String,
    packages: Vec<PackagePin>,
}

/// The kernel `pin` stands for, as provisioned in `cache`, or why not.
pub(crate) fn load(cache: &Path, pin: &KernelPin) -> Result<KernelInstall, CacheMiss> {
    let dir = cache.join("kernels").join(&pin.id);
    let stamp: KernelStamp = read_stamp(&dir.join("stamp.json")).ok_or(CacheMiss::Missing)?;
    if &stamp.pin != pin {
        return Err(CacheMiss::Stale);
    }
    let files = std::iter::once("vmlinuz").chain(stamp.extracted.modules.iter().map(String::as_str));
    if let Some(f) = files.clone().find(|f| !dir.join(f).is_file()) {
        return Err(CacheMiss::Gone(dir.join(f)));
    }
    let (release, packages) = match &stamp.used {
        Some(u) => (u.release.clone(), u.packages.clone()),
        None => (pin.release.clone(), pin.packages.clone()),
    };
    Ok(KernelInstall {
        id: pin.id.clone(),
        release,
        vmlinuz: dir.join("vmlinuz"),
        modules: stamp.extracted.modules.iter().map(|m| dir.join(m)).collect(),
        compression: stamp.extracted.compression,
        packages: used::pair("kernel", &packages, &pin.packages),
    })
}

/// The kernel for `pin`: cached, else its pinned packages, else (gone, not
/// `--locked`) the newest image of its track.
///
/// # Errors
/// Apt, checksum and unpack failures; a gone pin under `--locked`; an empty track.
pub(crate) fn ensure(p: &mut Provisioner<'_>, pin: &KernelPin) -> Result<(), ProvisionError> {
    if let Ok(k) = load(&p.cache, pin) {
        p.say(&format!("kernel {}: {} (cached)", pin.name(), k.release));
        return Ok(());
    }
    let used = if p.pins_available(&pin.packages)? {
        None
    } else {
        let a = p.apt()?;
        let (image, carriers, release) = fallback::newest_kernel(&a, &pin.track)?.ok_or_else(|| {
            ProvisionError::Package(format!("kernel {}: no package in the archive matches {:?}", pin.name(), pin.track))
        })?;
        let pinned_image = PackagePin {
            name: format!("linux-image-{}", pin.release),
            version: pin.packages[0].version.clone(),
            sha256: String::new(),
            suite: None,
        };
        p.say(&Fallback::new(&pinned_image, &fallback::pin_of(&image), "the archive").to_string());
        Some(UsedKernel { release, packages: carriers })
    };
    let (release, packages) = match &used {
        Some(u) => (u.release.clone(), u.packages.clone()),
        None => (pin.release.clone(), pin.packages.clone()),
    };
    let dir = p.cache.join("kernels").join(&pin.id);
    let tmp = tempfile::tempdir_in(&p.cache).map_err(|e| ProvisionError::io(&p.cache, e))?;
    for pkg in &packages {
        let deb = p.fetch(pkg)?;
        p.say(&format!("kernel {}: unpacking {}", pin.name(), pkg.name));
        apt::extract_deb(&deb, tmp.path())?;
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| ProvisionError::io(&dir, e))?;
    }
    let extracted = kernel::extract_kernel(tmp.path(), &release, &dir)?;
    p.say(&format!(
        "kernel {}: {release} ready (modules {}, stored {} in the package, decompressed)",
        pin.name(),
        extracted.modules.join(", "),
        match extracted.compression {
            KoCompression::None => "as plain .ko",
            KoCompression::Xz => "as .ko.xz",
        }
    ));
    write_stamp(&dir.join("stamp.json"), &KernelStamp { pin: pin.clone(), extracted, used })
}
