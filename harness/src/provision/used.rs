//! The packages a run actually used, against what the lock pins: every report
//! names them, so that a verdict on 6.12.119 never passes for one on 6.12.117.

use super::lock::PackagePin;
use crate::text::agree;
use serde::{Deserialize, Serialize};

/// One package a run used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsedPackage {
    /// What it is for: `qemu`, `kernel`, `kernel source`, `busybox`, `ethtool`, `irqbalance`.
    pub part: String,
    /// Debian package name.
    pub name: String,
    /// Debian version.
    pub version: String,
    /// The lock's pin (`name version`) when this package differs from it (a
    /// fallback); absent when it is exactly the pin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked: Option<String>,
}

impl UsedPackage {
    /// `name version`, with `(lock: …)` after a fallback.
    pub fn describe(&self) -> String {
        match &self.locked {
            Some(l) => format!("{} {} (lock: {l})", self.name, self.version),
            None => format!("{} {}", self.name, self.version),
        }
    }
}

/// `used` for `part`, each paired with the pin at the same place in `pinned`
/// (a kernel's image may change its name, so pairs go by position).
pub fn pair(part: &str, used: &[PackagePin], pinned: &[PackagePin]) -> Vec<UsedPackage> {
    used.iter()
        .enumerate()
        .map(|(i, u)| {
            let pin = pinned.get(i);
            let same = pin.is_some_and(|p| p.name == u.name && p.version == u.version);
            UsedPackage {
                part: part.to_owned(),
                name: u.name.clone(),
                version: u.version.clone(),
                locked: match pin {
                    Some(p) if !same => Some(format!("{} {}", p.name, p.version)),
                    _ => None,
                },
            }
        })
        .collect()
}

/// One line for a report's header: every package with its version, then
/// whether they are the lock's (`as locked`) or which differ.
pub fn summary(packages: &[UsedPackage]) -> String {
    let listed: Vec<String> = packages.iter().map(UsedPackage::describe).collect();
    let differ = packages.iter().filter(|p| p.locked.is_some()).count();
    let tail = match differ {
        0 => "as locked".to_owned(),
        n => format!(
            "{n} {} from guest-images/kernels.lock: the pinned {} gone from the archive",
            agree(n, "differs", "differ"),
            agree(n, "version is", "versions are")
        ),
    };
    format!("packages: {} ({tail})", listed.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(n: &str, v: &str) -> PackagePin {
        PackagePin { name: n.into(), version: v.into(), sha256: String::new() }
    }

    #[test]
    fn a_package_equal_to_its_pin_is_as_locked_and_a_fallback_names_the_pin() {
        let kernel = pair(
            "kernel",
            &[pin("linux-image-6.1.0-58-cloud-amd64", "6.1.193-1")],
            &[pin("linux-image-6.1.0-57-cloud-amd64", "6.1.192-3")],
        );
        assert_eq!(kernel[0].locked.as_deref(), Some("linux-image-6.1.0-57-cloud-amd64 6.1.192-3"));
        let bb = pair("busybox", &[pin("busybox-static", "1:1.37.0-6+b9")], &[pin("busybox-static", "1:1.37.0-6+b9")]);
        assert_eq!(bb[0].locked, None);
        assert_eq!(summary(&bb), "packages: busybox-static 1:1.37.0-6+b9 (as locked)");
        let both: Vec<UsedPackage> = kernel.into_iter().chain(bb).collect();
        let line = summary(&both);
        assert!(
            line.contains(
                "linux-image-6.1.0-58-cloud-amd64 6.1.193-1 (lock: linux-image-6.1.0-57-cloud-amd64 6.1.192-3)"
            ),
            "{line}"
        );
        assert!(
            line.ends_with("(1 differs from guest-images/kernels.lock: the pinned version is gone from the archive)"),
            "{line}"
        );
    }
}
