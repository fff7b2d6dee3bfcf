//! The guest's CPU architecture: `[machine] arch` in a topology file and the
//! command line's `--arch`.
//!
//! x86_64 guests boot QEMU's `q35` machine; arm64 guests boot QEMU's `virt`
//! machine (GICv3 with an ITS, the CPUs in sockets, clusters, cores and
//! threads). The kernel's algorithms the model runs are the same on both; what
//! differs is the machine around them (no SMT unless asked, clusters instead
//! of dies, MSI-X through the ITS).

use serde::{Deserialize, Serialize};

/// A guest CPU architecture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
pub enum Arch {
    /// x86-64 (`q35`); the default.
    #[default]
    #[serde(rename = "x86_64")]
    X86_64,
    /// AArch64 (`virt`), as on Azure's Cobalt VMs.
    #[serde(rename = "arm64")]
    Arm64,
}

/// A name that is no [`Arch`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown architecture {given:?}: use x86_64 or arm64")]
pub struct ArchParseError {
    /// What was given.
    pub given: String,
}

impl Arch {
    /// Every architecture, x86_64 first.
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Arm64];

    /// The name files and the command line use: `x86_64`, `arm64`.
    pub fn as_str(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }

    /// Debian's name for it (`dpkg --print-architecture`): `amd64`, `arm64`.
    pub fn debian(self) -> &'static str {
        match self {
            Arch::X86_64 => "amd64",
            Arch::Arm64 => "arm64",
        }
    }

    /// Whether this is the default, x86_64 (serde's `skip_serializing_if`).
    pub fn is_x86_64(&self) -> bool {
        *self == Arch::X86_64
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Arch {
    type Err = ArchParseError;

    /// `x86_64` (also `amd64`, `x86-64`) or `arm64` (also `aarch64`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "x86_64" | "x86-64" | "amd64" => Ok(Arch::X86_64),
            "arm64" | "aarch64" => Ok(Arch::Arm64),
            _ => Err(ArchParseError { given: s.to_owned() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_both_ways_and_a_bad_one_is_a_typed_error() {
        for a in Arch::ALL {
            assert_eq!(a.as_str().parse::<Arch>(), Ok(a));
        }
        assert_eq!("aarch64".parse::<Arch>(), Ok(Arch::Arm64));
        assert_eq!("amd64".parse::<Arch>(), Ok(Arch::X86_64));
        let err = "riscv64".parse::<Arch>().expect_err("unknown");
        assert_eq!(err, ArchParseError { given: "riscv64".into() });
        assert_eq!(err.to_string(), "unknown architecture \"riscv64\": use x86_64 or arm64");
        assert_eq!(Arch::Arm64.debian(), "arm64");
        assert_eq!(Arch::X86_64.debian(), "amd64");
    }
}
