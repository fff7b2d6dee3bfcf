//! A guest that is not the machine QEMU was given, because the kernel did not
//! bring it up: a finding about the kernel, judged as such rather than as a
//! rig error. Seen with Debian 7.3.4 on a 64-vCPU machine of 8 uneven nodes
//! (one across both sockets): CPUs 56-63 never came up, after
//! `WARNING: kernel/time/timer_migration.c:1850 at tmigr_setup_groups`;
//! Linux 6.12 brings up the same machine.
//!
//! A kernel can also bring up every CPU and still give up on the machine's
//! shape: `build_sched_domains()` (kernel/sched/topology.c) warns when a
//! non-NUMA level's spans overlap without being equal
//! (`topology_span_sane()`) and then builds no scheduling domains at all
//! ([`SchedDomainsNotBuilt`]). Seen with Debian 7.3.4 arm64 on QEMU's virt
//! machine with a socket's cores in two NUMA nodes
//! (topologies/arm64/virt-socket-split-nodes.toml); Debian's 6.12 arm64 kernel
//! (built without CONFIG_SCHED_CLUSTER) builds them.

use super::check::{Check, CheckStatus, Status};
use super::outcome::Verdict;
use crate::cpulist::CpuMask;

/// The check that names the finding.
pub const GUEST_MACHINE: &str = "guest_machine";

/// What the kernel did instead of bringing up the declared machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFinding {
    /// The kernel's release (`uname -r`).
    pub release: String,
    /// The CPUs declared online that never came up (guest numbering).
    pub missing: CpuMask,
    /// The CPUs that came up.
    pub online: CpuMask,
    /// The kernel's warnings at boot (`WARNING: … at file:line …`), as the
    /// guest logged them, without timestamps.
    pub warnings: Vec<String>,
}

impl KernelFinding {
    /// The failing [`GUEST_MACHINE`] check: which CPUs never came up and the
    /// kernel's first warning with its location.
    pub fn check(&self) -> Check {
        let said = match self.warnings.first() {
            Some(w) => format!("; the kernel warned: {w}"),
            None => "; the kernel printed no warning".to_owned(),
        };
        let mut c = Check::new(
            GUEST_MACHINE,
            CheckStatus::Fail,
            format!(
                "Linux {} did not bring up the declared machine: {} never came up (online: {}){said}",
                self.release,
                self.missing.named(),
                self.online.to_cpulist()
            ),
        );
        c.detail = self.warnings.iter().skip(1).cloned().collect();
        c
    }
}

/// The kernel brought up every CPU of the declared machine but built no
/// scheduling domains for it: `build_sched_domains()` warned (its
/// `topology_span_sane()` check failed: two CPUs' spans at a non-NUMA level
/// overlap without being equal) and took its error path. The IRQ placement
/// the model predicts does not read sched domains, so the model's checks are
/// still judged; the finding is one failing [`GUEST_MACHINE`] check beside them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedDomainsNotBuilt {
    /// The kernel's release (`uname -r`).
    pub release: String,
    /// The kernel's warning (`WARNING: kernel/sched/topology.c:… at build_sched_domains…`),
    /// without its timestamp.
    pub warning: String,
    /// How many `BUG: arch topology borken` lines came before it
    /// (`build_sched_domain()`: a level's span is not a subset of its parent's).
    pub borken: usize,
}

/// The kernel's line for a child domain that is not a subset of its parent
/// (kernel/sched/topology.c `build_sched_domain()`).
pub const ARCH_TOPOLOGY_BORKEN: &str = "BUG: arch topology borken";

impl SchedDomainsNotBuilt {
    /// The failing [`GUEST_MACHINE`] check: the kernel's warning, and how
    /// often it said [`ARCH_TOPOLOGY_BORKEN`] first.
    pub fn check(&self) -> Check {
        let before = match self.borken {
            0 => String::new(),
            n => format!(", after {n} × \"{ARCH_TOPOLOGY_BORKEN}\""),
        };
        Check::new(
            GUEST_MACHINE,
            CheckStatus::Fail,
            format!(
                "Linux {} brought up every CPU but built no scheduling domains for the declared machine: \
                 the kernel warned: {}{before}",
                self.release, self.warning
            ),
        )
    }
}

impl Verdict {
    /// Adds the kernel's finding that it built no scheduling domains: the
    /// model's checks stay as judged, the failing [`GUEST_MACHINE`] check
    /// makes the run fail.
    pub fn add_sched_domains_finding(&mut self, finding: &SchedDomainsNotBuilt) {
        self.status = Status::Fail;
        self.checks.push(finding.check());
    }

    /// Makes the kernel's finding the run's verdict: the model's checks,
    /// made for the declared machine, are skipped ("not judged: …"), and the
    /// failing [`GUEST_MACHINE`] check decides.
    pub fn judge_by_kernel_finding(&mut self, finding: &KernelFinding) {
        for check in &mut self.checks {
            if check.status != CheckStatus::Skip {
                check.status = CheckStatus::Skip;
                check.message = format!("not judged: the guest is not the declared machine ({})", check.message);
            }
        }
        self.status = Status::Fail;
        self.checks.push(finding.check());
    }

    /// The failing [`GUEST_MACHINE`] check, when the run is a kernel finding.
    pub fn kernel_finding(&self) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == GUEST_MACHINE && c.status == CheckStatus::Fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_names_the_cpus_that_never_came_up_and_the_kernels_warning() {
        let f = KernelFinding {
            release: "7.3.4+deb13-cloud-amd64".into(),
            missing: "56-63".parse().expect("cpulist"),
            online: "0-55".parse().expect("cpulist"),
            // As Debian 7.3.4 printed it on the 64-vCPU machine (kernel/panic.c's format).
            warnings: vec![
                "WARNING: kernel/time/timer_migration.c:1850 at tmigr_setup_groups+0x67d/0x780, CPU#0: swapper/0/1"
                    .into(),
            ],
        };
        let c = f.check();
        assert_eq!(c.status, CheckStatus::Fail);
        assert_eq!(
            c.message,
            "Linux 7.3.4+deb13-cloud-amd64 did not bring up the declared machine: CPUs 56-63 never came up \
             (online: 0-55); the kernel warned: WARNING: kernel/time/timer_migration.c:1850 at \
             tmigr_setup_groups+0x67d/0x780, CPU#0: swapper/0/1"
        );
    }

    #[test]
    fn unbuilt_sched_domains_fail_the_guest_machine_check_in_the_kernels_words() {
        let f = SchedDomainsNotBuilt {
            release: "7.3.4+deb13-cloud-arm64".into(),
            // As Debian 7.3.4 arm64 printed it on topologies/arm64/virt-socket-split-nodes.toml.
            warning: "WARNING: kernel/sched/topology.c:3142 at build_sched_domains+0xb94/0x1988, CPU#0: swapper/0/1"
                .into(),
            borken: 14,
        };
        let c = f.check();
        assert_eq!((c.name.as_str(), c.status), (GUEST_MACHINE, CheckStatus::Fail));
        assert_eq!(
            c.message,
            "Linux 7.3.4+deb13-cloud-arm64 brought up every CPU but built no scheduling domains for the declared \
             machine: the kernel warned: WARNING: kernel/sched/topology.c:3142 at build_sched_domains+0xb94/0x1988, \
             CPU#0: swapper/0/1, after 14 × \"BUG: arch topology borken\""
        );
    }
}
