//! The provisioned cache a run boots from, and the pinned kernels' ids in it.

use crate::model::KernelGen;
use crate::provision::{self, Provisioned};
use anyhow::{bail, Context, Result};
use std::path::Path;

/// Load the cache, provisioning it first when it is missing (the README's
/// commands provision on first use).
///
/// # Errors
/// Provisioning errors, with context.
pub fn provisioned(cache_dir: Option<&Path>) -> Result<Provisioned> {
    let cache = provision::cache_dir(cache_dir)?;
    if cache.exists() && !cache.is_dir() {
        bail!("cache folder {}: exists and is not a directory (see --cache-dir / MANARIG_CACHE)", cache.display());
    }
    match provision::load(&cache) {
        Ok(p) => Ok(p),
        Err(provision::ProvisionError::NotProvisioned { .. }) => {
            eprintln!("manarig: first use: provisioning QEMU, kernels and busybox into {}", cache.display());
            let opts = provision::SetupOptions::default();
            provision::setup(&cache, &opts, &mut |line| eprintln!("setup: {line}"))
                .with_context(|| format!("provisioning {}", cache.display()))
        }
        Err(e) => Err(e.into()),
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
