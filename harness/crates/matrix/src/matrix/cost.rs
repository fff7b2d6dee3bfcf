//! What a pair costs: the estimated wall time of one whole run (kernel key,
//! initramfs, QEMU, probe, report, verdict) on the reference host, the 2-core
//! build machine, with the boot speed-ups and nothing else running. Shards are
//! balanced on it and the progress line's ETA starts from it.
//!
//! Calibration (whole-run medians, seconds):
//! - minimal kernels (`6.12-min`; every kernel built by `kbuild` has the same
//!   config): 8 vCPUs 1.8 (seed 002), 128 vCPUs 15.4 (seed 001), 256 vCPUs 54.8
//!   (seed 003) from `benches/baseline.json` (commit c22ab0b) and the targets
//!   table of docs/boot-speed.md; 32 vCPUs 5.8 and 64 vCPUs 11.3 from its
//!   "Thread mode and size limits" list (single-threaded TCG below 48 vCPUs,
//!   multi-threaded from 48, as `accel::TCG_MULTI_FROM_VCPUS` chooses);
//! - Debian's cloud kernels (`6.1`, `6.12`, `7.x`): 8 vCPUs 3.5, 128 vCPUs 33.8,
//!   256 vCPUs 85.4 from the targets table's "Debian 6.12 kernel" column; 32
//!   vCPUs 10.6 and 64 vCPUs 20.2 from the thread-mode list. (The Debian rows of
//!   `benches/baseline.json`, 11.5 s and 156.8 s, predate the speed-ups and are
//!   not used.)
//!
//! Between two points the cost is interpolated linearly in the vCPU count;
//! below 8 vCPUs it is the 8-vCPU cost (boot work that does not shrink with
//! the machine dominates), above 256 the last segment is extended. A user's
//! own image (`image:…`) is costed like a Debian kernel. The kernel generation
//! (6.1, 6.12, 7.x) is not in the model: within one kind they boot within the
//! noise of this host.

use serde::{Deserialize, Serialize};

/// How a kernel was built, as far as its boot time goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KernelKind {
    /// Debian's cloud kernel package (or a user's image: unknown config, costed the same).
    Debian,
    /// Built with manarig's minimal config (`-min`, `build:KEY`, `--source`).
    Minimal,
}

/// (vCPUs, whole-run seconds) for minimal kernels; see the module docs.
const MINIMAL: &[(u32, f64)] = &[(8, 1.8), (32, 5.8), (64, 11.3), (128, 15.4), (256, 54.8)];
/// (vCPUs, whole-run seconds) for Debian's kernels; see the module docs.
const DEBIAN: &[(u32, f64)] = &[(8, 3.5), (32, 10.6), (64, 20.2), (128, 33.8), (256, 85.4)];

/// How many times an x86 guest's cost an arm64 guest's run costs (`matrix
/// --arch`): UEFI (about 7 s a boot) and TCG's aarch64 guests. From the
/// README's arm64 table, measured beside a load average of about 15:
/// `arm64/cobalt-16.toml` (16 vCPUs) on 6.12 28 s against 5.9 s interpolated
/// here for an x86 guest (4.8 times), `arm64/seed-002-no-smt.toml` (8 vCPUs)
/// 30 s against 3.5 s (8.6 times, the load counting more); 5 is the rounder
/// of the two at 16 vCPUs.
pub const ARM64_FACTOR: f64 = 5.0;

/// The factor of [`pair_cost_s`] for a pair's architecture on the matrix's
/// arch axis: [`ARM64_FACTOR`] for arm64; 1 for x86_64 and for a pair that
/// runs its file's own (the plan does not read which that is).
pub fn arch_factor(arch: Option<crate::topology::Arch>) -> f64 {
    match arch {
        Some(crate::topology::Arch::Arm64) => ARM64_FACTOR,
        _ => 1.0,
    }
}

/// Estimated seconds of one run of a `vcpus`-CPU machine on a `kind` kernel
/// (module docs: where the numbers come from). Always finite and positive.
pub fn pair_cost_s(vcpus: u32, kind: KernelKind) -> f64 {
    let points = match kind {
        KernelKind::Debian => DEBIAN,
        KernelKind::Minimal => MINIMAL,
    };
    let v = f64::from(vcpus);
    let (first, last) = (points[0], points[points.len() - 1]);
    if vcpus <= first.0 {
        return first.1;
    }
    let segment =
        points.windows(2).find(|w| vcpus <= w[1].0).map_or((points[points.len() - 2], last), |w| (w[0], w[1]));
    let ((x0, y0), (x1, y1)) = segment;
    let slope = (y1 - y0) / f64::from(x1 - x0);
    (y0 + slope * (v - f64::from(x0))).max(first.1)
}

/// The cost of a pair whose topology file does not load (it is a rig error at
/// once, without a boot): zero.
pub const BROKEN_INPUT_COST_S: f64 = 0.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_points_are_returned_exactly_and_the_curve_grows() {
        assert_eq!(pair_cost_s(8, KernelKind::Minimal), 1.8);
        assert_eq!(pair_cost_s(128, KernelKind::Minimal), 15.4);
        assert_eq!(pair_cost_s(256, KernelKind::Debian), 85.4);
        assert_eq!(pair_cost_s(2, KernelKind::Minimal), 1.8, "small machines cost the 8-vCPU boot");
        let mut last = 0.0;
        for v in (1..=512).step_by(7) {
            let c = pair_cost_s(v, KernelKind::Minimal);
            assert!(c.is_finite() && c >= last, "{v}: {c} after {last}");
            assert!(pair_cost_s(v, KernelKind::Debian) > c, "{v}: Debian is slower");
            last = c;
        }
        // Linear between points: 96 vCPUs halfway between 64 and 128.
        assert!((pair_cost_s(96, KernelKind::Minimal) - 13.35).abs() < 1e-9);
        // Beyond the last point the last segment goes on.
        assert!(pair_cost_s(512, KernelKind::Minimal) > 54.8 * 2.0);
    }
}
