//! Which kernel a run boots: a pinned Debian kernel (`6.1`, `6.12`, `7.x`),
//! manarig's minimal build of the same source (`6.12-min`: the fast path), its
//! debug build (`6.12-debug`: KASAN, kmemleak, lockdep), a kernel build (`build:KEY`, from `cargo xtask kernel build`) or a user's
//! own image (`image:BZIMAGE:MODULES`), and which reference model judges it.

use crate::kbuild::target::{PageSize, Target};
use crate::kbuild::{self, KbuildError};
use crate::model::{KernelGen, ModelBasis};
use crate::provision::KernelInstall;
use crate::topology::Arch;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A kernel as named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelChoice {
    /// A pinned Debian kernel of this generation (guest-images/kernels.lock).
    Pinned(KernelGen),
    /// The minimal kernel of this generation: its pinned Debian source built
    /// with manarig's config fragment (built on first use; [`kbuild::minimal`]).
    Minimal(KernelGen),
    /// The minimal kernel of this generation with 64 KiB pages (arm64 guests
    /// only; guest-images/kernel-config/arm64-64k.config).
    Minimal64k(KernelGen),
    /// The debug kernel of this generation: the minimal kernel plus the debug
    /// fragment (guest-images/kernel-config/debug.config), built on first use.
    Debug(KernelGen),
    /// A kernel build: key prefix or build folder.
    Build(String),
    /// A user's bzImage and the folder holding its mana.ko.
    Image {
        /// The bzImage.
        image: PathBuf,
        /// A folder with mana.ko (a build tree, `lib/modules/<release>`, …).
        modules: PathBuf,
    },
}

/// A kernel choice that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kernel {0:?}: use 6.1, 6.12 or 7.x (pinned Debian kernels), 6.1-min, 6.12-min or 7.x-min (their source built with manarig's minimal config), 6.12-min-64k or 7.x-min-64k (arm64 with 64 KiB pages), 6.1-debug, 6.12-debug or 7.x-debug (the same with KASAN, kmemleak and lockdep), build:KEY (cargo xtask kernel build) or image:BZIMAGE:MODULES_DIR")]
pub struct BadKernelChoice(pub String);

impl FromStr for KernelChoice {
    type Err = BadKernelChoice;

    /// `6.1` / `6.12` / `7.x` (also `7.3`, the pinned 7.x kernel); the same
    /// with `-min` or `-debug`; `build:KEY-or-folder`; `image:BZIMAGE:MODULES_DIR`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadKernelChoice(s.to_string());
        if let Some(b) = s.strip_prefix(KernelInstall::BUILD_ID_PREFIX) {
            return if b.is_empty() { Err(bad()) } else { Ok(KernelChoice::Build(b.to_string())) };
        }
        if let Some(rest) = s.strip_prefix("image:") {
            let (image, modules) = rest.rsplit_once(':').ok_or_else(bad)?;
            if image.is_empty() || modules.is_empty() {
                return Err(bad());
            }
            return Ok(KernelChoice::Image { image: image.into(), modules: modules.into() });
        }
        // Only the kernels that are pinned: `--kernel 7.9` must not quietly boot 7.3.
        let pinned = |name: &str| match name {
            "6.1" => Some(KernelGen::V6_1),
            "6.12" => Some(KernelGen::V6_12),
            "7.x" | "7.3" => Some(KernelGen::V7),
            _ => None,
        };
        if let Some(gen) = s.strip_suffix(kbuild::minimal::SUFFIX_64K) {
            return pinned(gen).map(KernelChoice::Minimal64k).ok_or_else(bad);
        }
        if let Some(gen) = s.strip_suffix(kbuild::minimal::SUFFIX) {
            return pinned(gen).map(KernelChoice::Minimal).ok_or_else(bad);
        }
        if let Some(gen) = s.strip_suffix(kbuild::minimal::DEBUG_SUFFIX) {
            return pinned(gen).map(KernelChoice::Debug).ok_or_else(bad);
        }
        pinned(s).map(KernelChoice::Pinned).ok_or_else(bad)
    }
}

impl fmt::Display for KernelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelChoice::Pinned(g) => f.write_str(g.as_str()),
            KernelChoice::Minimal(g) => write!(f, "{}{}", g.as_str(), kbuild::minimal::SUFFIX),
            KernelChoice::Minimal64k(g) => write!(f, "{}{}", g.as_str(), kbuild::minimal::SUFFIX_64K),
            KernelChoice::Debug(g) => write!(f, "{}{}", g.as_str(), kbuild::minimal::DEBUG_SUFFIX),
            KernelChoice::Build(b) => write!(f, "{}{b}", KernelInstall::BUILD_ID_PREFIX),
            KernelChoice::Image { image, .. } => write!(f, "image:{}", image.display()),
        }
    }
}

/// Why `[scenario] irqbalance` / `--irqbalance` cannot run on this kernel, when that
/// is known before the boot: manarig's minimal and debug builds start from
/// `allnoconfig`, and unless one of their fragments sets `CONFIG_UNIX=y` they have no
/// AF_UNIX sockets, without which irqbalance 1.9 exits at start ("Socket couldn't be
/// created.", seen on 6.12-min). Debian's kernels have them; for a `build:` or
/// `image:` kernel the guest tells (`crate::rig` turns that exit into a rig error).
pub fn irqbalance_refusal(choice: &KernelChoice) -> Option<String> {
    let minimal = matches!(choice, KernelChoice::Minimal(_) | KernelChoice::Minimal64k(_) | KernelChoice::Debug(_));
    let unix =
        [kbuild::BASE_FRAGMENT, kbuild::DEBUG_FRAGMENT].iter().any(|f| f.lines().any(|l| l.trim() == "CONFIG_UNIX=y"));
    (minimal && !unix).then(|| {
        format!(
            "kernel {choice} is built with manarig's minimal config ({}), which has no CONFIG_UNIX: irqbalance 1.9 \
             exits at start without an AF_UNIX socket (\"Socket couldn't be created.\"); use a pinned Debian kernel \
             (--kernel 6.1, 6.12 or 7.x)",
            kbuild::BASE_FRAGMENT_NAME
        )
    })
}

/// A choice resolved to something bootable.
#[derive(Debug, Clone)]
pub struct ResolvedKernel {
    /// The model generation (the pinned kernel's, the build's detected one, or `--model`).
    pub gen: KernelGen,
    /// The kernel to boot instead of the pinned one (`None` for pinned kernels).
    pub custom: Option<KernelInstall>,
    /// A short name for run names and tables (`6.12`, `build-0123abcd`, `image-6.12.1`).
    pub label: String,
    /// Which model judges the run, and why (printed before the run).
    pub model_note: String,
    /// Why the model judges the run, for the verdict's `kernel_generation` check.
    pub basis: ModelBasis,
    /// A debug kernel (built with guest-images/kernel-config/debug.config): its
    /// runs get [`crate::rig::RunRequest::debug`].
    pub debug: bool,
}

impl ResolvedKernel {
    /// A run of `topology` on this kernel with the defaults of
    /// [`RunRequest::new`](crate::rig::RunRequest::new): judged by its
    /// generation's model, its custom image booted, the run named after it.
    pub fn request(&self, topology: impl Into<PathBuf>) -> crate::rig::RunRequest {
        let mut req = crate::rig::RunRequest::new(topology, self.gen);
        req.custom_kernel.clone_from(&self.custom);
        req.model_basis = self.basis.clone();
        req.label = Some(self.label.clone());
        req.debug = self.debug;
        req
    }

    /// The kernel to boot: the custom build or image, else the pinned kernel of
    /// this generation from the provisioned cache.
    ///
    /// # Errors
    /// [`crate::provision::ProvisionError`] when the pinned kernel is not provisioned.
    pub fn install<'a>(
        &'a self,
        prov: &'a crate::provision::Provisioned,
    ) -> Result<&'a KernelInstall, crate::provision::ProvisionError> {
        match &self.custom {
            Some(k) => Ok(k),
            None => prov.kernel(crate::rig::kernel_lock_id(self.gen)),
        }
    }
}

/// Resolve a choice for x86_64 guests. `model` (`--model`) overrides the detected generation.
///
/// # Errors
/// As [`resolve_on`].
pub fn resolve(
    choice: &KernelChoice,
    model: Option<KernelGen>,
    cache_dir: Option<&Path>,
) -> Result<ResolvedKernel, KbuildError> {
    resolve_on(choice, model, cache_dir, Arch::X86_64)
}

/// The build target of a minimal kernel for `arch`'s guests.
///
/// # Errors
/// [`KbuildError::Target`] for a 64 KiB-page kernel of x86_64.
fn minimal_target(choice: &KernelChoice, arch: Arch) -> Result<Target, KbuildError> {
    match (choice, arch) {
        (KernelChoice::Minimal64k(_), Arch::X86_64) => Err(KbuildError::Target(format!(
            "kernel {choice}: 64 KiB pages are arm64's (CONFIG_ARM64_64K_PAGES); x86_64 has 4 KiB pages only \
             (use --arch arm64, or an arm64 topology)"
        ))),
        // 6.1's mana Kconfig: `X86_64 || (ARM64 && ... && ARM64_4K_PAGES)` at most;
        // 64 KiB pages came with 6.10 (MANA_PAGE_SIZE).
        (KernelChoice::Minimal64k(KernelGen::V6_1), _) => Err(KbuildError::Target(format!(
            "kernel {choice}: Linux 6.1's mana driver does not build with 64 KiB pages (its Kconfig needs \
             ARM64_4K_PAGES on arm64; 64 KiB pages are supported from 6.10); use 6.12-min-64k or 7.x-min-64k"
        ))),
        (KernelChoice::Minimal64k(_), _) => Ok(Target::new(arch, PageSize::K64)),
        _ => Ok(Target::new(arch, PageSize::K4)),
    }
}

/// Resolve a choice for `arch`'s guests: a minimal kernel is built for
/// `arch` (arm64: cross-compiled, [`kbuild::target`]), a kernel build must
/// have been built for it. `model` (`--model`) overrides the detected generation.
///
/// # Errors
/// [`KbuildError`] for an unknown build or one of another architecture, an
/// unusable image, a user image whose generation cannot be told from its
/// release without `--model`, a 64 KiB-page kernel of x86_64, a debug kernel of arm64.
pub fn resolve_on(
    choice: &KernelChoice,
    model: Option<KernelGen>,
    cache_dir: Option<&Path>,
    arch: Arch,
) -> Result<ResolvedKernel, KbuildError> {
    let cache = || crate::provision::cache_dir(cache_dir).map_err(KbuildError::from);
    match choice {
        KernelChoice::Pinned(g) => Ok(ResolvedKernel {
            gen: *g,
            custom: None,
            debug: false,
            label: g.as_str().to_string(),
            basis: if model.is_some_and(|m| m != *g) { ModelBasis::Given } else { ModelBasis::Release },
            model_note: match model {
                Some(m) if m != *g => format!("model {m} (--model), kernel Debian {}", g.model_version()),
                _ => format!("model {g} (Debian {})", g.model_version()),
            },
        }),
        KernelChoice::Minimal(g) | KernelChoice::Minimal64k(g) | KernelChoice::Debug(g) => {
            let debug = matches!(choice, KernelChoice::Debug(_));
            let target = minimal_target(choice, arch)?;
            let built = kbuild::minimal::ensure_for(*g, &cache()?, debug, target, &mut |line| {
                eprintln!("kernel {choice}: {line}");
            })?;
            let detected = built.model()?;
            let short = kbuild::key::short(&built.stamp.key).to_string();
            let gen = model.unwrap_or(detected);
            let model_note = match model {
                Some(m) if m != detected => format!("model {m} (--model; the source runs {detected})"),
                _ => format!("model {detected}, detected from the source: {}", built.stamp.detected.evidence),
            };
            Ok(ResolvedKernel {
                gen,
                custom: Some(built.install()),
                label: choice.to_string(),
                basis: source_basis(model, detected, &built),
                model_note: format!(
                    "{} kernel {} (Debian {} built with manarig's {}config{}, build {short}): {model_note}",
                    if debug { "debug" } else { "minimal" },
                    built.stamp.release,
                    built.stamp.source,
                    if debug { "debug " } else { "" },
                    if target == Target::X86_64 { String::new() } else { format!(" for {target}") }
                ),
                debug,
            })
        }
        KernelChoice::Build(what) => {
            let built = kbuild::load_build(what, &cache()?)?;
            if built.stamp.target.arch() != arch {
                return Err(KbuildError::Target(format!(
                    "kernel build {what} was built for {}, not for {arch} guests (kernel build --arch {arch})",
                    built.stamp.target
                )));
            }
            if model.is_none() && built.stamp.detected.is_stale() {
                return Err(kbuild::NoBuild::StaleModel {
                    dir: built.dir.clone(),
                    model: built.stamp.detected.model.clone(),
                }
                .into());
            }
            let detected = built.model()?;
            let short = kbuild::key::short(&built.stamp.key).to_string();
            let gen = model.unwrap_or(detected);
            let model_note = match model {
                Some(m) if m != detected => {
                    format!(
                        "model {m} (--model; the build's source looks like {detected}: {})",
                        built.stamp.detected.evidence
                    )
                }
                _ => format!("model {detected}, detected from the source: {}", built.stamp.detected.evidence),
            };
            Ok(ResolvedKernel {
                gen,
                custom: Some(built.install()),
                debug: built.is_debug(),
                label: format!("build-{}", &short[..8.min(short.len())]),
                basis: source_basis(model, detected, &built),
                model_note: format!("kernel build {short} ({}): {model_note}", built.stamp.release),
            })
        }
        KernelChoice::Image { image, modules } => {
            let install = kbuild::image::user_kernel(image, modules, &cache()?)?;
            let (gen, why) = match model {
                Some(m) => (m, "--model".to_string()),
                None => {
                    let g: KernelGen = install.release.parse().map_err(|_| {
                        KbuildError::Image(format!(
                            "{}: release {} does not say which MANA IRQ code it runs; pass --model 6.1|6.3|6.12|7.x",
                            image.display(),
                            install.release
                        ))
                    })?;
                    (
                        g,
                        format!(
                            "from the release string {}; pass --model if its MANA IRQ code differs",
                            install.release
                        ),
                    )
                }
            };
            Ok(ResolvedKernel {
                gen,
                label: format!("image-{}", install.release),
                debug: false,
                basis: if model.is_some() { ModelBasis::Given } else { ModelBasis::Release },
                model_note: format!("user kernel {} ({}): model {gen} ({why})", image.display(), install.release),
                custom: Some(install),
            })
        }
    }
}

/// Whether the model of the pinned generation fits a Debian image that
/// stands in for the pin (a newer version of its track).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageFit {
    /// Not a stand-in (the pinned image, a build, a user's image, or `--model`).
    NotAStandIn,
    /// Its `mana.ko` runs the pinned generation's IRQ code: the model judges,
    /// with this basis.
    Same(ModelBasis),
    /// Its `mana.ko` runs other code, or none the detection knows: the
    /// properties judge it, for this reason.
    Unmodelled(String),
}

/// [`ImageFit`] of `kernel` for a run of the pinned generation `gen` (with
/// `--model` when `given`): a fallback's `mana.ko` symbols are read
/// ([`kbuild::detect::detect_module`]).
pub fn image_fit(gen: KernelGen, given: bool, kernel: &KernelInstall) -> ImageFit {
    if given || !kernel.id.chars().next().is_some_and(|c| c.is_ascii_digit()) || !kernel.is_fallback() {
        return ImageFit::NotAStandIn;
    }
    let Some(ko) = kernel.modules.iter().find(|m| m.file_name().is_some_and(|n| n == "mana.ko")) else {
        return ImageFit::Unmodelled(format!("Linux {} has no mana.ko to read", kernel.release));
    };
    let detected = crate::provision::kernel::module_symbols(ko).map_err(|e| e.to_string()).and_then(|syms| {
        kbuild::detect::detect_module(&syms, &kernel.release, &format!("mana.ko of {}", kernel.release))
            .map_err(|e| e.to_string())
    });
    match detected {
        Ok(d) if d.generation().is_ok_and(|g| g == gen) => ImageFit::Same(ModelBasis::Module { evidence: d.evidence }),
        Ok(d) => ImageFit::Unmodelled(format!(
            "Linux {} stands in for the pinned {gen} kernel, but {}: the {} code, not {gen}'s",
            kernel.release, d.evidence, d.model
        )),
        Err(e) => ImageFit::Unmodelled(format!(
            "Linux {} stands in for the pinned {gen} kernel, and its MANA IRQ code is not recognised ({e})",
            kernel.release
        )),
    }
}

/// The basis of a build's model: its detected source, unless `--model` names another.
fn source_basis(model: Option<KernelGen>, detected: KernelGen, built: &kbuild::Built) -> ModelBasis {
    match model {
        Some(m) if m != detected => ModelBasis::Given,
        _ => built.model_basis(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn irqbalance_is_refused_on_the_minimal_kernels_only() {
        let refusal = |k: &str| irqbalance_refusal(&k.parse().expect("choice"));
        assert!(refusal("6.12-min").expect("refused").contains("no CONFIG_UNIX"));
        assert!(refusal("7.x-debug").is_some());
        assert!(refusal("6.12").is_none() && refusal("build:abc").is_none(), "Debian's kernels; the guest tells");
    }

    #[test]
    fn a_64k_minimal_kernel_is_arm64_only() {
        let k64 = KernelChoice::Minimal64k(KernelGen::V6_12);
        let e = minimal_target(&k64, Arch::X86_64).expect_err("x86 has 4 KiB pages");
        assert!(matches!(e, KbuildError::Target(_)) && e.to_string().contains("--arch arm64"), "{e}");
        assert_eq!(minimal_target(&k64, Arch::Arm64).expect("arm64"), Target::Arm64 { pages: PageSize::K64 });
        let old = KernelChoice::Minimal64k(KernelGen::V6_1);
        let e = minimal_target(&old, Arch::Arm64).expect_err("6.1's Kconfig: 4 KiB pages only");
        assert!(e.to_string().contains("ARM64_4K_PAGES"), "{e}");
        let min = KernelChoice::Minimal(KernelGen::V6_12);
        assert_eq!(minimal_target(&min, Arch::Arm64).expect("arm64"), Target::Arm64 { pages: PageSize::K4 });
        assert_eq!(minimal_target(&min, Arch::X86_64).expect("x86"), Target::X86_64);
    }

    #[test]
    fn choices_parse() {
        assert_eq!("6.12".parse(), Ok(KernelChoice::Pinned(KernelGen::V6_12)));
        assert_eq!("7.x".parse(), Ok(KernelChoice::Pinned(KernelGen::V7)));
        assert_eq!("build:0123abcd".parse(), Ok(KernelChoice::Build("0123abcd".into())));
        assert_eq!(
            "image:/k/bzImage:/k".parse(),
            Ok(KernelChoice::Image { image: "/k/bzImage".into(), modules: "/k".into() })
        );
        assert_eq!("6.12-min".parse(), Ok(KernelChoice::Minimal(KernelGen::V6_12)));
        assert_eq!("7.x-min".parse(), Ok(KernelChoice::Minimal(KernelGen::V7)));
        assert_eq!("6.12-min-64k".parse(), Ok(KernelChoice::Minimal64k(KernelGen::V6_12)));
        assert_eq!(KernelChoice::Minimal64k(KernelGen::V7).to_string(), "7.x-min-64k");
        assert!("6.3-min-64k".parse::<KernelChoice>().is_err());
        assert_eq!("7.3".parse(), Ok(KernelChoice::Pinned(KernelGen::V7)));
        assert_eq!(KernelChoice::Minimal(KernelGen::V6_1).to_string(), "6.1-min");
        assert_eq!("6.12-debug".parse(), Ok(KernelChoice::Debug(KernelGen::V6_12)));
        assert_eq!("7.x-debug".parse(), Ok(KernelChoice::Debug(KernelGen::V7)));
        assert_eq!(KernelChoice::Debug(KernelGen::V6_1).to_string(), "6.1-debug");
        // Not pinned: refused rather than rounded to a pinned kernel.
        for bad in [
            "5.10",
            "7.9",
            "6.8",
            "6.12.1",
            "6.12-max",
            "-min",
            "-debug",
            "6.3-debug",
            "build:",
            "image:/k/bzImage",
            "image::x",
        ] {
            assert_eq!(bad.parse::<KernelChoice>(), Err(BadKernelChoice(bad.to_owned())));
        }
    }

    #[test]
    fn a_pinned_choice_needs_no_cache() {
        let r = resolve(&KernelChoice::Pinned(KernelGen::V6_1), None, Some(Path::new("/nonexistent"))).expect("pinned");
        assert_eq!((r.gen, r.label.as_str()), (KernelGen::V6_1, "6.1"));
        assert!(r.custom.is_none() && !r.debug);
        let r = resolve(&KernelChoice::Pinned(KernelGen::V6_1), Some(KernelGen::V6_12), None).expect("pinned");
        assert!(r.model_note.contains("--model"), "{}", r.model_note);
    }
}
