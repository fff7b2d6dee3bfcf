//! A guest that is not the machine QEMU was given, because the kernel did not
//! bring it up: a finding about the kernel, judged as such rather than as a
//! rig error. Seen with Debian 7.3.4 on a 64-vCPU machine of 8 uneven nodes
//! (one across both sockets): CPUs 56-63 never came up, after
//! `WARNING: kernel/time/timer_migration.c:1850 at tmigr_setup_groups`;
//! Linux 6.12 brings up the same machine.

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

impl Verdict {
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
}
