//! The guest modules selftest runs load besides mana: the remote end's NIC
//! driver `virtio_net` with the modules it depends on (`net_failover`,
//! `failover`), and the traffic control ring_reconfig.py installs (the `fq`
//! and `clsact` qdiscs, flower and matchall filters, the skbedit action;
//! Debian builds all of them as modules: CONFIG_VIRTIO_NET=m,
//! CONFIG_NET_SCH_FQ=m, CONFIG_NET_SCH_INGRESS=m, CONFIG_NET_CLS_FLOWER=m,
//! CONFIG_NET_CLS_MATCHALL=m, CONFIG_NET_ACT_SKBEDIT=m in the cloud kernels'
//! configs), from the pinned kernel's own packages. Extracted once
//! per kernel pin into `<cache>/selftests/modules/<id>/`, decompressed, in
//! `insmod` order.

use crate::provision::kernel::collect_module_closure;
use crate::provision::{apt, CacheMiss, KernelInstall, ProvisionError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The remote NIC's driver.
pub const REMOTE_DRIVER: &str = "virtio_net";
/// The modules loaded, each after its dependencies: the remote NIC's driver,
/// then the qdiscs the tests install.
pub const MODULES: &[&str] = &[REMOTE_DRIVER, "sch_fq", "sch_ingress", "cls_flower", "cls_matchall", "act_skbedit"];
/// Raised when [`MODULES`] changes, so that cached extractions are made again.
const SET: u32 = 3;

#[derive(Serialize, Deserialize, PartialEq)]
struct Stamp {
    set: u32,
    release: String,
    /// (name, version) of the kernel's packages the modules came from.
    packages: Vec<(String, String)>,
    modules: Vec<String>,
}

/// The `.deb` of `name`/`version` as setup stored it in `<cache>/debs`.
fn cached_deb(cache: &Path, name: &str, version: &str) -> PathBuf {
    cache.join("debs").join(format!("{name}_{}_amd64.deb", version.replace(':', "%3a")))
}

/// [`MODULES`] and their dependencies for the pinned kernel `kernel`, as
/// files in `insmod` order.
///
/// # Errors
/// [`ProvisionError::NotProvisioned`] when setup's copy of a kernel package
/// is gone or altered; unpack and module errors.
pub fn remote_modules(cache: &Path, pin: &KernelInstall) -> Result<Vec<PathBuf>, ProvisionError> {
    if pin.packages.is_empty() {
        return Err(ProvisionError::Package(format!(
            "kernel {}: selftest runs load {REMOTE_DRIVER} from a pinned kernel's packages; this kernel has none",
            pin.release
        )));
    }
    let dir = cache.join("selftests/modules").join(&pin.id);
    let packages: Vec<(String, String)> = pin.packages.iter().map(|p| (p.name.clone(), p.version.clone())).collect();
    let stamp_path = dir.join("stamp.json");
    if let Some(s) = std::fs::read(&stamp_path).ok().and_then(|b| serde_json::from_slice::<Stamp>(&b).ok()) {
        let files: Vec<PathBuf> = s.modules.iter().map(|m| dir.join(m)).collect();
        if s.set == SET && s.release == pin.release && s.packages == packages && files.iter().all(|f| f.is_file()) {
            return Ok(files);
        }
    }
    let tmp = tempfile::tempdir_in(cache).map_err(|e| ProvisionError::io(cache, e))?;
    for p in &pin.packages {
        // Setup downloaded and checked it (its pin's SHA-256, or the signed
        // index's for a fallback) and keeps it in `<cache>/debs`.
        let deb = cached_deb(cache, &p.name, &p.version);
        if !deb.is_file() {
            return Err(ProvisionError::NotProvisioned {
                what: format!("{} {} (the kernel's {REMOTE_DRIVER} module)", p.name, p.version),
                cache: cache.to_path_buf(),
                why: CacheMiss::Gone(deb),
            });
        }
        apt::extract_deb(&deb, tmp.path())?;
    }
    let moddir = ["lib/modules", "usr/lib/modules"]
        .iter()
        .map(|d| tmp.path().join(d).join(&pin.release).join("kernel"))
        .find(|d| d.is_dir())
        .ok_or_else(|| ProvisionError::Package(format!("kernel {}: no modules folder in its packages", pin.release)))?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| ProvisionError::io(&dir, e))?;
    }
    let mut modules: Vec<String> = Vec::new();
    for m in MODULES {
        for file in collect_module_closure(&moddir, m, &pin.release, &dir)?.modules {
            if !modules.contains(&file) {
                modules.push(file);
            }
        }
    }
    let stamp = Stamp { set: SET, release: pin.release.clone(), packages, modules };
    let text = serde_json::to_string_pretty(&stamp).map_err(|e| ProvisionError::Package(e.to_string()))?;
    std::fs::write(&stamp_path, text).map_err(|e| ProvisionError::io(&stamp_path, e))?;
    Ok(stamp.modules.iter().map(|m| dir.join(m)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_kernel_package_says_to_run_setup() {
        let cache = tempfile::tempdir().expect("tempdir");
        let pin = KernelInstall {
            id: "7".into(),
            release: "7.3.4+deb13-cloud-amd64".into(),
            vmlinuz: PathBuf::new(),
            modules: Vec::new(),
            compression: crate::provision::KoCompression::Xz,
            packages: vec![crate::provision::UsedPackage {
                part: "kernel".into(),
                name: "linux-modules-7.3.4+deb13-cloud-amd64".into(),
                version: "7.3.4-1~bpo13+1".into(),
                locked: None,
            }],
        };
        let e = remote_modules(cache.path(), &pin).expect_err("not there").to_string();
        assert!(e.contains("cargo xtask setup") && e.contains("virtio_net"), "{e}");
    }
}
