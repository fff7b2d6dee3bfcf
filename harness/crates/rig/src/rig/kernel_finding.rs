//! A guest that is not the declared machine because its kernel did not bring
//! it up is a finding about the kernel ([`KernelFinding`]), not a rig error:
//! QEMU gave every CPU (the guest's `present` mask is the machine's), yet some
//! never came online, without a scenario taking them offline. Or every CPU
//! came up but the kernel built no scheduling domains for the machine
//! ([`SchedDomainsNotBuilt`]).

use super::judging::Judging;
use super::outcome::RunOutcome;
use super::report_to_verdict;
use crate::cpulist::CpuMask;
use crate::guest_protocol::GuestReport;
use crate::qemu;
use crate::topology::Topology;
use crate::verdict::{KernelFinding, SchedDomainsNotBuilt, ARCH_TOPOLOGY_BORKEN};

/// The CPUs `report`'s kernel never brought up on `spec` (guest numbering:
/// `guest`), when that is all that differs in the CPU set: the present CPUs
/// are the machine's and no CPU is online that should not be. `None` when the
/// guest is the machine, or differs otherwise (a rig error then).
pub(super) fn cpus_not_brought_up(
    spec: &qemu::MachineSpec,
    guest: &Topology,
    report: &GuestReport,
    release: &str,
) -> Option<KernelFinding> {
    let n = spec.vcpus();
    let all: CpuMask = (0..n).collect();
    if report.cpu_state.present.as_ref().is_some_and(|p| p.iter().copied().collect::<CpuMask>() != all) {
        return None;
    }
    let declared: CpuMask = guest.online_at(guest.last_stage()).iter().filter(|&c| c < n).collect();
    let online: CpuMask = report.cpus.keys().copied().collect();
    let missing = declared.andnot(&online);
    if missing.is_empty() || !online.andnot(&declared).is_empty() {
        return None;
    }
    let warnings = report
        .warnings
        .iter()
        .map(|w| strip_timestamp(w))
        .filter(|w| w.starts_with("WARNING:") || w.starts_with("BUG:"))
        .map(str::to_owned)
        .collect();
    Some(KernelFinding { release: release.to_owned(), missing, online, warnings })
}

/// The kernel's warning that `build_sched_domains()` gave up on the machine
/// (`WARNING: kernel/sched/topology.c:… at build_sched_domains…`), with the
/// count of [`ARCH_TOPOLOGY_BORKEN`] lines among `warnings` (the report's
/// kernel warnings); `None` when it did not warn there.
pub(super) fn sched_domains_not_built(warnings: &[String], release: &str) -> Option<SchedDomainsNotBuilt> {
    let lines: Vec<&str> = warnings.iter().map(|w| strip_timestamp(w)).collect();
    let warning = lines.iter().find(|w| w.starts_with("WARNING:") && w.contains(" at build_sched_domains+"))?;
    let borken = lines.iter().filter(|w| w.starts_with(ARCH_TOPOLOGY_BORKEN)).count();
    Some(SchedDomainsNotBuilt { release: release.to_owned(), warning: (*warning).to_owned(), borken })
}

/// `[    2.496279] WARNING: …` → `WARNING: …`.
fn strip_timestamp(line: &str) -> &str {
    let t = line.trim_start();
    match t.strip_prefix('[').and_then(|r| r.split_once(']')) {
        Some((stamp, rest)) if stamp.trim().parse::<f64>().is_ok() => rest.trim_start(),
        _ => t,
    }
}

impl Judging<'_> {
    /// The outcome of a run whose kernel did not bring up the machine: the
    /// model's verdict on what the guest showed, its checks not judged, and
    /// the failing `guest_machine` check ([`KernelFinding::check`]).
    ///
    /// # Errors
    /// [`report_to_verdict::BadHint`]: an `affinity_hint` in the report that
    /// is not a hex cpumask.
    pub(super) fn kernel_finding_outcome(
        &self,
        booted: qemu::BootOutcome,
        finding: &KernelFinding,
    ) -> Result<RunOutcome, report_to_verdict::BadHint> {
        let (req, topo) = (self.req, self.topo);
        let model = req.model.unwrap_or(req.kernel);
        let accel = self.run_accel_label(&booted);
        let observed = report_to_verdict::observed_of(
            &booted.report,
            booted.report.nic.as_deref(),
            model,
            &req.model_basis,
            &accel,
        )?;
        let guest = topo.to_qemu_numbering();
        let expected = crate::model::expected_table(&guest, model);
        let mut verdict = self.report_verdict(&observed, &expected);
        verdict.judge_by_kernel_finding(finding);
        Ok(self.finished(booted, verdict, observed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_timestamps_are_stripped_from_warnings() {
        assert_eq!(
            strip_timestamp("[    2.496279] WARNING: kernel/time/timer_migration.c:1850 at tmigr_setup_groups"),
            "WARNING: kernel/time/timer_migration.c:1850 at tmigr_setup_groups"
        );
        assert_eq!(strip_timestamp("WARNING: x"), "WARNING: x");
    }

    #[test]
    fn a_warning_in_build_sched_domains_is_a_finding_and_other_warnings_are_not() {
        // Debian 7.3.4 arm64 on topologies/arm64/virt-socket-split-nodes.toml (the report's lines).
        let mut warnings = vec!["[    1.160454] BUG: arch topology borken".to_owned(); 2];
        warnings.push(
            "[    1.162217] WARNING: kernel/sched/topology.c:3142 at build_sched_domains+0xb94/0x1988, CPU#0: swapper/0/1"
                .into(),
        );
        let f = sched_domains_not_built(&warnings, "7.3.4+deb13-cloud-arm64").expect("a finding");
        assert_eq!(f.borken, 2);
        assert!(f.warning.starts_with("WARNING: kernel/sched/topology.c:3142 at build_sched_domains"), "{}", f.warning);
        let other = ["[    2.4] WARNING: kernel/time/timer_migration.c:1676 at tmigr_cpu_prepare+0x1/0x2".to_owned()];
        assert_eq!(sched_domains_not_built(&other, "6.12"), None);
        assert_eq!(sched_domains_not_built(&warnings[..2], "7.3"), None, "borken alone is not the give-up");
    }
}
