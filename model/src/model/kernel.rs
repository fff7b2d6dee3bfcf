//! Kernel generations whose MANA IRQ code the model knows.

use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A family of kernels that share MANA's IRQ code and the spreading helpers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KernelGen {
    /// Linux 6.1 as Debian ships it (6.1.192-3, bookworm-security): one CPU per vector
    /// from the flat `cpumask_local_spread()`; no `irq_setup()`.
    V6_1,
    /// Linux 6.3–6.8: MANA still gives each vector one CPU from `cpumask_local_spread()`
    /// (no `irq_setup()`), but that helper walks NUMA hops from 6.3 on
    /// (`sched_numa_find_nth_cpu()`): the spreading of the mlx5 patch in seed 003. No
    /// Debian kernel is pinned for it; built trees that run it (e.g. Debian 6.12 with
    /// examples/patches/revert-irq-setup) are detected from their source.
    V6_3,
    /// Linux 6.9–6.16 (Debian 6.12.117-1, trixie): static MSI-X, `irq_setup()` gives each
    /// queue vector a whole sibling group; hop-aware `cpumask_local_spread()`.
    V6_12,
    /// Linux 6.17–7.x (Debian 7.3.4-1~bpo13+1, trixie-backports): dynamic MSI-X, HWC set
    /// up first, `mana_irq_setup_numa_aware(skip_first_cpu)` or `mana_irq_setup_linear()`.
    V7,
}

/// Why a run is judged by the generation it is judged by.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ModelBasis {
    /// The kernel's release names the generation (a pinned Debian kernel, or a
    /// user's image whose release is taken at its word): the guest's `uname -r`
    /// must agree.
    #[default]
    Release,
    /// Detected from the source of the kernel that ran (a build or a minimal
    /// kernel): its MANA IRQ code decides, not its release.
    Source {
        /// The detection's evidence (which functions the tree defines and calls).
        evidence: String,
    },
    /// Named by the user (`--model`), whatever the kernel runs.
    Given,
    /// Detected from the built module of a Debian image that stands in for
    /// the pinned one (a newer version of its track): its `mana.ko`'s symbols
    /// show the pinned generation's IRQ code.
    Module {
        /// The detection's evidence (which functions the module defines and calls).
        evidence: String,
    },
}

impl fmt::Display for ModelBasis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Release => f.write_str("the kernel's release"),
            Self::Source { evidence } => write!(f, "detected from the source: {evidence}"),
            Self::Given => f.write_str("--model"),
            Self::Module { evidence } => write!(f, "detected from the module: {evidence}"),
        }
    }
}

/// A kernel version string the model does not cover.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "kernel {0:?} is not modelled: use 6.1 (Debian 6.1.192), 6.3 (6.3-6.8), 6.12 (6.9-6.16, \
     Debian 6.12.117) or 7.x (6.17 and later, Debian 7.3.4)"
)]
pub struct UnknownKernel(pub String);

impl KernelGen {
    /// All generations, oldest first.
    pub const ALL: [KernelGen; 4] = [KernelGen::V6_1, KernelGen::V6_3, KernelGen::V6_12, KernelGen::V7];

    /// The generations with a pinned Debian kernel and source (`--kernel 6.1`, `6.12-min`, …).
    pub const PINNED: [KernelGen; 3] = [KernelGen::V6_1, KernelGen::V6_12, KernelGen::V7];

    /// The short name used on the command line and in reports (`6.1`, `6.3`, `6.12`, `7.x`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V6_1 => "6.1",
            Self::V6_3 => "6.3",
            Self::V6_12 => "6.12",
            Self::V7 => "7.x",
        }
    }

    /// The Debian source package version whose MANA and scheduler code the model
    /// follows; `None` for [`KernelGen::V6_3`], which no pinned Debian kernel runs.
    pub fn debian_version(self) -> Option<&'static str> {
        match self {
            Self::V6_1 => Some("6.1.192-3"),
            Self::V6_3 => None,
            Self::V6_12 => Some("6.12.117-1"),
            Self::V7 => Some("7.3.4-1~bpo13+1"),
        }
    }

    /// The source the model follows, for reports: the Debian version (`6.12.117-1`), or
    /// `upstream 6.3-6.8` for [`KernelGen::V6_3`].
    pub fn model_version(self) -> &'static str {
        self.debian_version().unwrap_or("upstream 6.3-6.8")
    }

    /// Upstream releases this generation stands for.
    pub fn upstream_range(self) -> &'static str {
        match self {
            Self::V6_1 => "6.1 (Debian backports; flat cpumask_local_spread, before 6.3)",
            Self::V6_3 => "6.3-6.8",
            Self::V6_12 => "6.9-6.16",
            Self::V7 => "6.17-7.x",
        }
    }

    /// What the model of this generation does to MANA's vectors, in one phrase for
    /// reports (the run header, JSON `run.model`).
    pub fn algorithm(self) -> &'static str {
        match self {
            Self::V6_1 => "per-vector cpumask_local_spread, flat (the node, then every CPU by id)",
            Self::V6_3 => {
                "per-vector cpumask_local_spread, NUMA-hop-aware (MANA of Linux 6.3-6.8; the mlx5 spreading of seed 003)"
            }
            Self::V6_12 => "irq_setup(): a whole sibling group per vector, NUMA hop by hop",
            Self::V7 => "mana_irq_setup_numa_aware() / mana_irq_setup_linear() (dynamic MSI-X)",
        }
    }
}

impl FromStr for KernelGen {
    type Err = UnknownKernel;

    /// Accepts `6.1`; `6.3` … `6.8` (→ [`KernelGen::V6_3`]); `6.9` … `6.16` (→
    /// [`KernelGen::V6_12`]); `6.17` … `6.19`, `7`,
    /// `7.x`, `7.N` (→ [`KernelGen::V7`]). A Debian suffix (`6.12.117-1`) is ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownKernel(s.to_owned());
        let t = s.trim();
        if t == "7" || t.eq_ignore_ascii_case("7.x") {
            return Ok(Self::V7);
        }
        let mut parts = t.split(['.', '-']);
        let major: u32 = parts.next().and_then(|p| p.parse().ok()).ok_or_else(unknown)?;
        let minor: u32 = parts.next().and_then(|p| p.parse().ok()).ok_or_else(unknown)?;
        match (major, minor) {
            (6, 1) => Ok(Self::V6_1),
            (6, 3..=8) => Ok(Self::V6_3),
            (6, 9..=16) => Ok(Self::V6_12),
            (6, 17..) | (7, _) => Ok(Self::V7),
            _ => Err(unknown()),
        }
    }
}

impl fmt::Display for KernelGen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for KernelGen {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_names_users_type() {
        for (s, k) in [
            ("6.1", KernelGen::V6_1),
            ("6.12", KernelGen::V6_12),
            ("6.9", KernelGen::V6_12),
            ("6.8", KernelGen::V6_3),
            ("6.3", KernelGen::V6_3),
            ("6.7", KernelGen::V6_3),
            ("6.5", KernelGen::V6_3),
            ("6.12.117-1", KernelGen::V6_12),
            ("7.x", KernelGen::V7),
            ("7.3", KernelGen::V7),
            ("6.17", KernelGen::V7),
            ("7", KernelGen::V7),
        ] {
            assert_eq!(s.parse::<KernelGen>(), Ok(k), "{s}");
        }
        for s in ["6.2", "5.15", "", "six", "6"] {
            assert!(s.parse::<KernelGen>().is_err(), "{s}");
        }
    }
}
