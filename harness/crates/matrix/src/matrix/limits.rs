//! How many guests run at once: `--jobs`, its default, and the TCG limits
//! the rig measured (`accel::TCG_MAX_VCPUS_PER_HOST_CORE` vCPUs per host
//! core; `accel::TCG_MULTI_FROM_VCPUS`: from there a guest is multi-threaded
//! and uses every host core).
//!
//! - Default jobs = host cores: a small guest is single-threaded TCG and
//!   fills one host core; docs/boot-speed.md ("Parallel matrix on 2 cores")
//!   measured two small runs at once on 2 cores as fast as one, where a third
//!   would only time-share.
//! - A guest takes one slot, or every host core's slot (at most `jobs`) when
//!   it is multi-threaded, so by default a 128-vCPU guest runs alone.
//! - The vCPUs of the guests running together never exceed the per-core
//!   limit times the host cores; `--jobs` above the most pairs that could
//!   ever run together under that limit is lowered, with a note.
//! - A pair is admitted when nothing runs, whatever it needs (the rig itself
//!   refuses a guest too large for the host).

use crate::accel::{TCG_MAX_VCPUS_PER_HOST_CORE, TCG_MULTI_FROM_VCPUS};

/// The limits a matrix runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Guest slots (`--jobs`, after lowering).
    pub jobs: u32,
    /// Host CPUs this process may use.
    pub host_cores: u32,
    /// vCPUs of all running guests together, at most.
    pub vcpu_budget: u32,
}

/// Limits and, when `--jobs` was lowered, a note saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobsPlan {
    /// The limits.
    pub limits: Limits,
    /// `--jobs 8 lowered to 2: …`.
    pub note: Option<String>,
}

/// The limits for `requested` jobs (`None`: the default) on `host_cores`
/// cores, for pairs of `vcpus` CPUs each (unknown sizes count as 1).
pub fn plan(requested: Option<u32>, host_cores: u32, vcpus: &[u32]) -> JobsPlan {
    let host_cores = host_cores.max(1);
    let vcpu_budget = TCG_MAX_VCPUS_PER_HOST_CORE.saturating_mul(host_cores);
    // The most pairs that can ever run together: the smallest ones first.
    let mut sizes: Vec<u32> = vcpus.iter().map(|&v| v.max(1)).collect();
    sizes.sort_unstable();
    let mut sum = 0u32;
    let fit = sizes.iter().take_while(|&&v| {
        sum = sum.saturating_add(v);
        sum <= vcpu_budget
    });
    let most = u32::try_from(fit.count()).unwrap_or(u32::MAX).max(1);
    let wanted = requested.unwrap_or(host_cores).max(1);
    let jobs = wanted.min(most);
    let note = (requested.is_some() && jobs < wanted).then(|| {
        format!(
            "--jobs {wanted} lowered to {jobs}: at most {TCG_MAX_VCPUS_PER_HOST_CORE} vCPUs per host core run under TCG \
             ({vcpu_budget} on {}), and no {} of these pairs fit in that together",
            crate::text::plural(host_cores, "core"),
            jobs + 1
        )
    });
    JobsPlan { limits: Limits { jobs, host_cores, vcpu_budget }, note }
}

impl Limits {
    /// Slots a guest of `vcpus` CPUs takes: 1, or every host core's (at most
    /// `jobs`) when TCG runs it multi-threaded.
    pub fn slots(&self, vcpus: u32) -> u32 {
        if vcpus >= TCG_MULTI_FROM_VCPUS {
            self.host_cores.min(self.jobs).max(1)
        } else {
            1
        }
    }

    /// Whether a guest of `vcpus` CPUs may start while guests taking `slots`
    /// slots and `running_vcpus` vCPUs run (`slots == 0`: nothing runs).
    pub fn admits(&self, slots: u32, running_vcpus: u32, vcpus: u32) -> bool {
        slots == 0
            || (slots + self.slots(vcpus) <= self.jobs && running_vcpus.saturating_add(vcpus) <= self.vcpu_budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_jobs_are_the_host_cores_and_big_guests_run_alone() {
        let p = plan(None, 2, &[8, 8, 128]);
        assert_eq!(p.limits, Limits { jobs: 2, host_cores: 2, vcpu_budget: 256 });
        assert_eq!(p.note, None);
        let l = p.limits;
        assert!(l.admits(0, 0, 256), "anything runs alone");
        assert!(l.admits(1, 8, 8));
        assert!(!l.admits(2, 16, 8), "two slots taken");
        assert!(!l.admits(1, 8, 128), "a multi-threaded guest wants both cores");
        assert_eq!((l.slots(8), l.slots(48), l.slots(128)), (1, 2, 2));
    }

    #[test]
    fn jobs_beyond_the_measured_tcg_limit_are_lowered_with_a_note() {
        // 2 cores: 256 vCPUs at once. Three 128-vCPU machines fit two at a time.
        let p = plan(Some(3), 2, &[128, 128, 128]);
        assert_eq!(p.limits.jobs, 2);
        let note = p.note.expect("a note");
        assert!(note.contains("--jobs 3 lowered to 2") && note.contains("128 vCPUs per host core"), "{note}");
        // Small machines: many fit, --jobs is kept as asked.
        let p = plan(Some(6), 2, &[8; 10]);
        assert_eq!((p.limits.jobs, p.note), (6, None));
        assert!(!p.limits.admits(5, 250, 8), "the vCPU budget holds even with free slots");
        // One 256-vCPU machine: one job.
        assert_eq!(plan(Some(4), 2, &[256, 256]).limits.jobs, 1);
    }
}
