//! The minimal guest kernels: Debian's pinned `linux-source-*` of a kernel
//! generation, unpatched, built with manarig's config fragment alone
//! (guest-images/kernel-config/manarig.config). They run the same MANA code
//! as the pinned Debian kernel images of that generation but boot in a
//! fraction of the time (docs/boot-speed.md): the rig's fast path
//! (`--kernel 6.12-min`). Built on first use, then taken from the cache.
//!
//! The debug kernels (`--kernel 6.12-debug`) are the same build plus the debug
//! fragment (guest-images/kernel-config/debug.config: KASAN, kmemleak,
//! lockdep, DEBUG_ATOMIC_SLEEP, SLUB debugging), with their own cache key.
//!
//! On arm64 (`--arch arm64`) the same source is cross-compiled with the
//! host's aarch64-linux-gnu-gcc and arm64's fragment
//! (guest-images/kernel-config/arm64.config; [`super::target`]); the
//! 64 KiB-page kernel (`--kernel 6.12-min-64k`) adds arm64-64k.config.

use super::target::Target;
use super::{build, source::SourceSpec, BuildRequest, Built, KbuildError};
use crate::model::KernelGen;
use std::path::Path;

/// The `--kernel` suffix that names a minimal kernel (`6.12-min`).
pub const SUFFIX: &str = "-min";
/// The `--kernel` suffix that names a 64 KiB-page minimal kernel
/// (`6.12-min-64k`; arm64 guests only).
pub const SUFFIX_64K: &str = "-min-64k";
/// The `--kernel` suffix that names a debug kernel (`6.12-debug`).
pub const DEBUG_SUFFIX: &str = "-debug";

/// The pinned Debian source package of `gen` (guest-images/kernel-sources.lock);
/// `None` for the 6.3 model, which no pinned source runs.
pub fn source_package(gen: KernelGen) -> Option<&'static str> {
    match gen {
        KernelGen::V6_1 => Some("linux-source-6.1"),
        KernelGen::V6_3 => None,
        KernelGen::V6_12 => Some("linux-source-6.12"),
        KernelGen::V7 => Some("linux-source-7.3"),
    }
}

/// The build request of `gen`'s minimal kernel in `cache` (with `debug`, its
/// debug kernel): no patches, no extra fragment, all host CPUs, ccache when
/// installed, missing host build packages installed (as root), 120 minutes per
/// make step.
///
/// # Errors
/// [`KbuildError::Source`] if the source is not pinned (the 6.3 model, or a lock
/// file bug).
pub fn request(gen: KernelGen, cache: &Path, debug: bool) -> Result<BuildRequest, KbuildError> {
    request_for(gen, cache, debug, Target::X86_64)
}

/// As [`request`], for `target` (arm64 with either page size).
///
/// # Errors
/// As [`request`]; [`KbuildError::Target`] for a debug kernel of arm64
/// (debug.config has been tried on x86_64 only).
pub fn request_for(gen: KernelGen, cache: &Path, debug: bool, target: Target) -> Result<BuildRequest, KbuildError> {
    if debug && target != Target::X86_64 {
        return Err(KbuildError::Target(format!(
            "no debug kernel for {target} yet: guest-images/kernel-config/debug.config (KASAN, kmemleak, lockdep) \
             has been built and booted on x86_64 only; use {}{SUFFIX} or {}{SUFFIX_64K}",
            gen.as_str(),
            gen.as_str()
        )));
    }
    let package = source_package(gen).ok_or_else(|| {
        KbuildError::Source(format!(
            "no minimal kernel for the {gen} model: no Debian source runs it (use 6.1-min, 6.12-min or 7.x-min, \
             or build a tree that runs it with `cargo xtask kernel build`)"
        ))
    })?;
    let source = SourceSpec::parse(&format!("debian:{package}"))?;
    Ok(BuildRequest { debug, target, ..BuildRequest::new(source, cache.to_path_buf()) })
}

/// `gen`'s minimal kernel (with `debug`, its debug kernel): the cached build,
/// or a new one (a cold build takes about 8 minutes on a 2-core machine, a
/// debug one about 25; `progress` gets one line per step).
///
/// # Errors
/// Any [`KbuildError`] of [`build`].
pub fn ensure(gen: KernelGen, cache: &Path, debug: bool, progress: &mut dyn FnMut(&str)) -> Result<Built, KbuildError> {
    ensure_for(gen, cache, debug, Target::X86_64, progress)
}

/// As [`ensure`], for `target` (a cold arm64 cross build takes about as long
/// as an x86 one: about 8 minutes on 2 free cores).
///
/// # Errors
/// As [`request_for`] and [`build`].
pub fn ensure_for(
    gen: KernelGen,
    cache: &Path,
    debug: bool,
    target: Target,
    progress: &mut dyn FnMut(&str),
) -> Result<Built, KbuildError> {
    build(&request_for(gen, cache, debug, target)?, progress)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_generation_has_a_pinned_source() {
        for gen in KernelGen::PINNED {
            let req = request(gen, Path::new("/nonexistent"), false).expect("pinned");
            assert!(!req.debug && request(gen, Path::new("/nonexistent"), true).expect("pinned").debug);
            // The usual build otherwise (BuildRequest::new): no patches, ccache, two hours a make step.
            assert!(req.patches.is_none() && req.fragment.is_none() && req.ccache && req.install_deps && !req.fresh);
            assert_eq!(
                (req.deadline, req.cache.as_path()),
                (super::super::DEFAULT_MAKE_DEADLINE, Path::new("/nonexistent"))
            );
            assert!(req.jobs >= 1);
            match req.source {
                SourceSpec::Debian(pin) => assert_eq!(Some(pin.package.as_str()), source_package(gen)),
                SourceSpec::Tree(t) => panic!("{gen}: a tree {}", t.display()),
            }
        }
        let e = request(KernelGen::V6_3, Path::new("/nonexistent"), false).expect_err("6.3 has no source");
        assert!(e.to_string().contains("6.12-min"), "{e}");
    }

    #[test]
    fn arm64_minimal_kernels_carry_their_target_and_debug_ones_are_refused() {
        use crate::kbuild::target::PageSize;
        let k64 = Target::Arm64 { pages: PageSize::K64 };
        let req = request_for(KernelGen::V6_12, Path::new("/nonexistent"), false, k64).expect("pinned");
        assert_eq!((req.target, req.debug), (k64, false));
        assert_eq!(request(KernelGen::V6_12, Path::new("/nonexistent"), false).expect("pinned").target, Target::X86_64);
        let e = request_for(KernelGen::V6_12, Path::new("/nonexistent"), true, k64).expect_err("no arm64 debug");
        assert!(matches!(e, KbuildError::Target(_)), "{e}");
        assert!(e.to_string().contains("6.12-min-64k"), "{e}");
    }
}
