//! The `cpu_state` check: the guest kernel took the topology's `[scenario]` as asked —
//! its offline CPUs at each stage, `isolcpus=` (domain CPUs in
//! `/sys/devices/system/cpu/isolated`), `nohz_full=` and `irqaffinity=`
//! (`/proc/irq/default_smp_affinity`). A kernel that ignores a parameter (built without
//! CONFIG_CPU_ISOLATION or CONFIG_NO_HZ_FULL) fails it, naming the file it read: the
//! IRQ table of such a run does not answer the scenario's question.

use super::check::{Check, CheckStatus, Status};
use super::outcome::Verdict;
use crate::cpulist::CpuMask;
use crate::guest_protocol::GuestCpuState;
use crate::topology::Topology;

/// The check's name.
pub const CPU_STATE_CHECK: &str = "cpu_state";

fn mask(v: &[u32]) -> CpuMask {
    v.iter().copied().collect()
}

/// One comparison: `what` (the guest file), the declared CPUs, the guest's (None: the
/// file was not in the report).
fn compare(out: &mut Vec<String>, what: &str, declared: &CpuMask, observed: Option<&Vec<u32>>) {
    match observed {
        Some(o) if mask(o) == *declared => {}
        Some(o) => {
            out.push(format!("{what}: declared {}, the guest has {}", declared.to_cpulist(), mask(o).to_cpulist()))
        }
        None => out.push(format!("{what}: declared {}, the guest has no such file", declared.to_cpulist())),
    }
}

/// The check for one moment of the run. `topo` is in the guest's (QEMU) numbering;
/// `stages` pairs each moment's name (`probe`, `offline-after`, the report's
/// [`Topology::last_stage`]) with what the guest showed then.
pub fn check_cpu_state(topo: &Topology, stages: &[(&str, &GuestCpuState)]) -> Check {
    let s = topo.scenario();
    let all = CpuMask::first_n(topo.ncpu());
    let mut wrong = Vec::new();
    for (stage, cs) in stages {
        let mut here = Vec::new();
        compare(&mut here, "/sys/devices/system/cpu/offline", &all.andnot(&topo.online_at(stage)), cs.offline.as_ref());
        if let Some(i) = &s.isolcpus {
            let isolated = if i.domain() { i.cpus.clone() } else { CpuMask::new() };
            compare(&mut here, "/sys/devices/system/cpu/isolated (isolcpus=)", &isolated, cs.isolated.as_ref());
        }
        if let Some(n) = &s.nohz_full {
            compare(&mut here, "/sys/devices/system/cpu/nohz_full (nohz_full=)", n, cs.nohz_full.as_ref());
        }
        compare(
            &mut here,
            "/proc/irq/default_smp_affinity (irqaffinity=, plus the boot CPU)",
            &topo.irq_default_affinity(),
            cs.default_smp_affinity.as_ref(),
        );
        wrong.extend(here.into_iter().map(|w| format!("{stage}: {w}")));
    }
    let asked = topo.scenario_cmdline();
    let asked = if asked.is_empty() { "no CPU parameters".to_owned() } else { asked.join(" ") };
    match wrong.split_first() {
        None => Check::new(
            CPU_STATE_CHECK,
            CheckStatus::Pass,
            format!(
                "the guest's offline CPUs and CPU policies are the scenario's at {} ({asked})",
                stages.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ),
        ),
        Some((first, rest)) => {
            let mut c = Check::new(
                CPU_STATE_CHECK,
                CheckStatus::Fail,
                format!("the guest did not take the scenario ({asked}): {first}"),
            );
            c.detail = rest.to_vec();
            c
        }
    }
}

impl Verdict {
    /// Append a check made outside [`judge`](super::judge()) (the `cpu_state` check);
    /// a failing one fails the verdict.
    pub fn add_check(&mut self, check: Check) {
        if check.status == CheckStatus::Fail {
            self.status = Status::Fail;
        }
        self.checks.push(check);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(scenario: &str) -> Topology {
        let text = format!(
            "name = \"t\"\n[source]\nkind = \"synthetic\"\nwording = \"w\"\n[cpus]\nsockets = 1\ncores = 2\nthreads = 2\n\
             [[numa.nodes]]\ncpus = \"0-3\"\nmemory_mib = 256\n[nic]\nnuma_node = 0\n\
             [expect]\nverdict = \"pass\"\nsource = \"s\"\n[scenario]\n{scenario}"
        );
        Topology::from_toml_str("t.toml", &text).expect("valid")
    }

    fn state(offline: &[u32], isolated: &[u32], default: &[u32]) -> GuestCpuState {
        GuestCpuState {
            offline: Some(offline.to_vec()),
            isolated: Some(isolated.to_vec()),
            default_smp_affinity: Some(default.to_vec()),
            ..GuestCpuState::default()
        }
    }

    #[test]
    fn a_guest_that_took_the_scenario_passes_at_every_stage() {
        let t = topo("offline_after = \"3\"\nisolcpus = \"2\"\nirqaffinity = \"1\"");
        let probe = state(&[], &[2], &[0, 1]);
        let after = state(&[3], &[2], &[0, 1]);
        let c = check_cpu_state(&t, &[("probe", &probe), ("offline-after", &after)]);
        assert_eq!(c.status, CheckStatus::Pass, "{c:?}");
        assert!(c.message.contains("irqaffinity=1 isolcpus=2"), "{}", c.message);
    }

    #[test]
    fn a_kernel_that_ignored_isolcpus_and_nohz_full_fails_naming_the_files() {
        let t = topo("isolcpus = \"2\"\nnohz_full = \"3\"");
        let c = check_cpu_state(&t, &[("probe", &state(&[], &[], &[0, 1, 2, 3]))]);
        assert_eq!(c.status, CheckStatus::Fail);
        assert!(
            c.message.contains("probe: /sys/devices/system/cpu/isolated (isolcpus=): declared 2, the guest has "),
            "{}",
            c.message
        );
        assert_eq!(
            c.detail,
            ["probe: /sys/devices/system/cpu/nohz_full (nohz_full=): declared 3, the guest has no such file"]
        );
    }
}
