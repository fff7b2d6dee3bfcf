//! What a kernel build is for: x86_64 (the host's gcc, `bzImage`) or arm64
//! (the host's aarch64 cross compiler, `Image` with its EFI stub), and on
//! arm64 the page size (4 KiB or 64 KiB: `CONFIG_ARM64_64K_PAGES`).
//!
//! The target picks the make variables (`ARCH=arm64
//! CROSS_COMPILE=aarch64-linux-gnu-`), the compiler whose version goes into
//! the cache key, the image make builds and where it lands, the host
//! packages the build needs beyond the common ones ([`super::missing_build_deps`]), and manarig's base
//! config fragments (guest-images/kernel-config/: `manarig.config` on x86,
//! `arm64.config` plus `arm64-64k.config` on arm64). Builds of different
//! targets never share a cache key: their fragments and compilers differ.

use crate::topology::Arch;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The guest's page size, on arm64 (x86_64 has 4 KiB only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PageSize {
    /// 4 KiB (`CONFIG_ARM64_4K_PAGES`, the default; Debian's arm64 kernels).
    #[default]
    #[serde(rename = "4k")]
    K4,
    /// 64 KiB (`CONFIG_ARM64_64K_PAGES`).
    #[serde(rename = "64k")]
    K64,
}

impl PageSize {
    /// Bytes.
    pub fn bytes(self) -> u64 {
        match self {
            PageSize::K4 => 4096,
            PageSize::K64 => 65536,
        }
    }
}

/// A page size that is neither `4k` nor `64k`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("page size {0:?}: use 4k or 64k")]
pub struct BadPageSize(pub String);

impl std::str::FromStr for PageSize {
    type Err = BadPageSize;

    /// `4k` or `64k` (any case; also `4K`, `64KiB`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().trim_end_matches("ib") {
            "4k" => Ok(PageSize::K4),
            "64k" => Ok(PageSize::K64),
            _ => Err(BadPageSize(s.to_owned())),
        }
    }
}

/// A build's target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// x86_64 with the host's gcc; the default (and every build before arm64 builds).
    #[default]
    X86_64,
    /// arm64 with the host's `aarch64-linux-gnu-gcc` (Debian's `gcc-aarch64-linux-gnu`).
    Arm64 {
        /// The guest's page size.
        pages: PageSize,
    },
}

/// manarig's arm64 fragment (guest-images/kernel-config/arm64.config).
pub const ARM64_FRAGMENT: &str = include_str!("../../../../../guest-images/kernel-config/arm64.config");
/// The name the arm64 fragment is reported (and keyed) under.
pub const ARM64_FRAGMENT_NAME: &str = "guest-images/kernel-config/arm64.config";
/// The 64 KiB-page fragment (guest-images/kernel-config/arm64-64k.config), after arm64.config.
pub const ARM64_64K_FRAGMENT: &str = include_str!("../../../../../guest-images/kernel-config/arm64-64k.config");
/// The name the 64 KiB-page fragment is reported (and keyed) under.
pub const ARM64_64K_FRAGMENT_NAME: &str = "guest-images/kernel-config/arm64-64k.config";

/// The cross compiler's Debian package and the file that shows it is installed.
pub const CROSS_GCC: (&str, &str) = ("gcc-aarch64-linux-gnu", "/usr/bin/aarch64-linux-gnu-gcc");

impl Target {
    /// The target of `arch`'s guests with `pages` (x86_64 ignores `pages`:
    /// callers refuse 64 KiB there first).
    pub fn new(arch: Arch, pages: PageSize) -> Self {
        match arch {
            Arch::X86_64 => Target::X86_64,
            Arch::Arm64 => Target::Arm64 { pages },
        }
    }

    /// The guest architecture.
    pub fn arch(self) -> Arch {
        match self {
            Target::X86_64 => Arch::X86_64,
            Target::Arm64 { .. } => Arch::Arm64,
        }
    }

    /// The guest's page size.
    pub fn pages(self) -> PageSize {
        match self {
            Target::X86_64 => PageSize::K4,
            Target::Arm64 { pages } => pages,
        }
    }

    /// The C compiler (`gcc`, `aarch64-linux-gnu-gcc`): its `--version` is
    /// in the cache key, and ccache wraps it.
    pub fn compiler(self) -> &'static str {
        match self {
            Target::X86_64 => "gcc",
            Target::Arm64 { .. } => "aarch64-linux-gnu-gcc",
        }
    }

    /// Make variables that select the target (none for x86_64 on an x86_64 host).
    pub fn make_vars(self) -> &'static [&'static str] {
        match self {
            Target::X86_64 => &[],
            Target::Arm64 { .. } => &["ARCH=arm64", "CROSS_COMPILE=aarch64-linux-gnu-"],
        }
    }

    /// The image target make builds (`bzImage`, `Image`: arm64's uncompressed
    /// image, an EFI application the firmware starts).
    pub fn image_target(self) -> &'static str {
        match self {
            Target::X86_64 => "bzImage",
            Target::Arm64 { .. } => "Image",
        }
    }

    /// Where make leaves the image, relative to the object folder.
    pub fn image_in_obj(self) -> &'static str {
        match self {
            Target::X86_64 => "arch/x86/boot/bzImage",
            Target::Arm64 { .. } => "arch/arm64/boot/Image",
        }
    }

    /// Host packages (Debian name, file that shows it) beyond the common build tools.
    pub fn extra_host_packages(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Target::X86_64 => &[],
            Target::Arm64 { .. } => &[CROSS_GCC],
        }
    }

    /// manarig's base fragments, in order: (name, text).
    pub fn base_fragments(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Target::X86_64 => vec![(super::BASE_FRAGMENT_NAME, super::BASE_FRAGMENT)],
            Target::Arm64 { pages: PageSize::K4 } => vec![(ARM64_FRAGMENT_NAME, ARM64_FRAGMENT)],
            Target::Arm64 { pages: PageSize::K64 } => {
                vec![(ARM64_FRAGMENT_NAME, ARM64_FRAGMENT), (ARM64_64K_FRAGMENT_NAME, ARM64_64K_FRAGMENT)]
            }
        }
    }
}

impl fmt::Display for Target {
    /// `x86_64`, `arm64`, `arm64 (64 KiB pages)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::X86_64 => f.write_str("x86_64"),
            Target::Arm64 { pages: PageSize::K4 } => f.write_str("arm64"),
            Target::Arm64 { pages: PageSize::K64 } => f.write_str("arm64 (64 KiB pages)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kbuild::config::{parse_fragment, ConfigValue};

    #[test]
    fn each_target_has_its_own_fragments_and_the_64k_one_asks_for_64k_pages() {
        let names = |t: Target| t.base_fragments().iter().map(|(n, _)| *n).collect::<Vec<_>>();
        assert_eq!(names(Target::X86_64), [crate::kbuild::BASE_FRAGMENT_NAME]);
        assert_eq!(names(Target::Arm64 { pages: PageSize::K4 }), [ARM64_FRAGMENT_NAME]);
        assert_eq!(names(Target::Arm64 { pages: PageSize::K64 }), [ARM64_FRAGMENT_NAME, ARM64_64K_FRAGMENT_NAME]);
        for t in [Target::X86_64, Target::Arm64 { pages: PageSize::K4 }, Target::Arm64 { pages: PageSize::K64 }] {
            for (name, text) in t.base_fragments() {
                let settings = parse_fragment(text, name).expect("fragment parses");
                assert!(
                    settings.iter().any(|s| s.symbol == "MICROSOFT_MANA" && s.value == ConfigValue::Module)
                        || name == ARM64_64K_FRAGMENT_NAME
                );
            }
        }
        let k64 = parse_fragment(ARM64_64K_FRAGMENT, ARM64_64K_FRAGMENT_NAME).expect("parses");
        assert!(k64.iter().any(|s| s.symbol == "ARM64_64K_PAGES" && s.value == ConfigValue::Yes));
    }

    #[test]
    fn arm64_builds_cross_compile_an_efi_image() {
        let t = Target::new(Arch::Arm64, PageSize::K64);
        assert_eq!((t.arch(), t.pages(), t.pages().bytes()), (Arch::Arm64, PageSize::K64, 65536));
        assert_eq!(t.make_vars(), ["ARCH=arm64", "CROSS_COMPILE=aarch64-linux-gnu-"]);
        assert_eq!(
            (t.compiler(), t.image_target(), t.image_in_obj()),
            ("aarch64-linux-gnu-gcc", "Image", "arch/arm64/boot/Image")
        );
        assert_eq!(t.extra_host_packages(), [CROSS_GCC]);
        assert_eq!(Target::new(Arch::X86_64, PageSize::K64), Target::X86_64);
        assert!(Target::X86_64.make_vars().is_empty() && Target::X86_64.extra_host_packages().is_empty());
        assert_eq!(t.to_string(), "arm64 (64 KiB pages)");
        assert_eq!(
            ("64k".parse(), "4K".parse(), "64KiB".parse()),
            (Ok(PageSize::K64), Ok(PageSize::K4), Ok(PageSize::K64))
        );
        assert!("16k".parse::<PageSize>().is_err());
    }
}
