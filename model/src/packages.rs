//! The Debian packages a run used (QEMU, the kernel, busybox, guest tools), each
//! against what guest-images/kernels.lock pins: every report names them, so that
//! a verdict on 6.12.119 never passes for one on 6.12.117. Pure data; the
//! provisioning that fills it lives in the harness.

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

    fn used(part: &str, name: &str, version: &str, locked: Option<&str>) -> UsedPackage {
        UsedPackage { part: part.into(), name: name.into(), version: version.into(), locked: locked.map(Into::into) }
    }

    #[test]
    fn a_summary_says_as_locked_or_which_packages_differ() {
        let bb = used("busybox", "busybox-static", "1:1.37.0-6+b9", None);
        assert_eq!(summary(std::slice::from_ref(&bb)), "packages: busybox-static 1:1.37.0-6+b9 (as locked)");
        let k = used(
            "kernel",
            "linux-image-6.1.0-58-cloud-amd64",
            "6.1.193-1",
            Some("linux-image-6.1.0-57-cloud-amd64 6.1.192-3"),
        );
        let line = summary(&[k, bb]);
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
