//! The provisioned cache a run boots from, and the pinned kernels' ids in it.

use crate::model::KernelGen;
use crate::provision::{self, Provisioned};
use crate::topology::Arch;
use std::path::{Path, PathBuf};

/// Load the cache, provisioning it first when it is missing (the README's
/// commands provision on first use).
///
/// # Errors
/// [`CacheError`]: no cache folder, the cache cannot be loaded, or the
/// first use's provisioning failed.
pub fn provisioned(cache_dir: Option<&Path>) -> Result<Provisioned, CacheError> {
    let cache = provision::cache_dir(cache_dir)?;
    if cache.exists() && !cache.is_dir() {
        return Err(CacheError::NotADirectory { path: cache });
    }
    match provision::load(&cache) {
        Ok(p) => Ok(p),
        Err(provision::ProvisionError::NotProvisioned { .. }) => {
            eprintln!("manarig: first use: provisioning QEMU, kernels and busybox into {}", cache.display());
            let opts = provision::SetupOptions::default();
            provision::setup(&cache, &opts, &mut |line| eprintln!("setup: {line}"))
                .map_err(|source| CacheError::Setup { cache, source: Box::new(source) })
        }
        Err(e) => Err(e.into()),
    }
}

/// As [`provisioned`], for guests of `arch`: arm64 guests' parts live in
/// `<cache>/arm64` ([`provision::arm64`]) and are provisioned on first use
/// the same way.
///
/// # Errors
/// As [`provisioned`].
pub fn provisioned_for(arch: Arch, cache_dir: Option<&Path>) -> Result<Provisioned, CacheError> {
    if arch == Arch::X86_64 {
        return provisioned(cache_dir);
    }
    let cache = provision::cache_dir(cache_dir)?;
    if cache.exists() && !cache.is_dir() {
        return Err(CacheError::NotADirectory { path: cache });
    }
    match provision::arm64::load(&cache) {
        Ok(p) => Ok(p),
        Err(provision::ProvisionError::NotProvisioned { .. }) => {
            eprintln!("manarig: first arm64 use: provisioning qemu-system-aarch64, firmware, arm64 kernels and busybox into {}", provision::arm64::dir(&cache).display());
            let opts = provision::SetupOptions::default();
            provision::arm64::setup(&cache, &opts, &mut |line| eprintln!("setup: {line}"))
                .map_err(|source| CacheError::Setup { cache, source: Box::new(source) })
        }
        Err(e) => Err(e.into()),
    }
}

/// The provisioned cache could not be had.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The cache path names something that is not a folder.
    #[error("cache folder {}: exists and is not a directory (see --cache-dir / MANARIG_CACHE)", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// No cache folder, or the cache cannot be loaded.
    #[error(transparent)]
    Load(Box<provision::ProvisionError>),
    /// The first use's provisioning failed.
    #[error("provisioning {}", cache.display())]
    Setup {
        /// The cache folder.
        cache: PathBuf,
        /// Why.
        #[source]
        source: Box<provision::ProvisionError>,
    },
}

impl From<provision::ProvisionError> for CacheError {
    fn from(e: provision::ProvisionError) -> Self {
        CacheError::Load(Box::new(e))
    }
}

/// The pinned kernel's lock id for a generation (guest-images/kernels.lock).
/// The 6.3 model has no pinned kernel: its id is not in the lock, and looking it
/// up gives [`provision::ProvisionError::UnknownKernel`] listing those there are.
pub fn kernel_lock_id(gen: KernelGen) -> &'static str {
    match gen {
        KernelGen::V6_1 => "6.1",
        KernelGen::V6_3 => "6.3",
        KernelGen::V6_12 => "6.12",
        KernelGen::V7 => "7",
    }
}
