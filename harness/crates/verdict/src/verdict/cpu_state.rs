//! The `cpu_state` check: the guest kernel took the topology's `[scenario]` as asked —
//! its offline CPUs at each stage, `isolcpus=` (domain CPUs in
//! `/sys/devices/system/cpu/isolated`), `nohz_full=` and `irqaffinity=`
//! (`/proc/irq/default_smp_affinity`).
//!
//! A kernel built without the code behind `isolcpus=` or `nohz_full=` ignores it, and
//! the check says so instead of failing (MANA's vectors are not managed: neither
//! parameter changes the IRQ table, which is judged on its own). The evidence is the
//! guest's: a `name=value` parameter no built-in handler takes (or whose handler
//! refuses it) is handed to `/init` as an environment variable (init/main.c
//! `unknown_bootoption()`; the report's `initenv:` lines, `/proc/1/environ`): both
//! parameters are `__setup()`s of kernel/sched/isolation.c, built only with
//! CONFIG_CPU_ISOLATION, whose `nohz_full=` and `isolcpus=nohz,…` refuse the value
//! without CONFIG_NO_HZ_FULL; and `/sys/devices/system/cpu/nohz_full` exists only with
//! CONFIG_NO_HZ_FULL (drivers/base/cpu.c). A kernel that took a parameter and shows
//! other CPUs than asked still fails. `irqaffinity=` (kernel/irq/manage.c, every SMP
//! kernel) and the offline CPUs are always compared: the IRQ table depends on them.

use super::check::{Check, CheckStatus};
use crate::cpulist::CpuMask;
use crate::guest_protocol::GuestCpuState;
use crate::topology::Topology;

/// The check's name.
pub const CPU_STATE_CHECK: &str = "cpu_state";

/// The guest's `nohz_full` file, present only with CONFIG_NO_HZ_FULL.
const NOHZ_FULL_FILE: &str = "/sys/devices/system/cpu/nohz_full";

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

/// The note for a scenario `item` (`nohz_full=6-7`, as the guest's command line has it)
/// the kernel did not take, or None when nothing says it did not: `config` names the
/// option the kernel lacks, `no_file` a file that would exist with it and does not.
fn not_taken(item: &str, config: &str, init_env: &[String], no_file: Option<&str>) -> Option<String> {
    let mut evidence = Vec::new();
    if let Some(file) = no_file {
        evidence.push(format!("it has no {file}"));
    }
    if init_env.iter().any(|e| e == item) {
        evidence.push("it handed the parameter to /init as an environment variable, /proc/1/environ".to_owned());
    }
    (!evidence.is_empty())
        .then(|| format!("{item} ignored: this kernel was built without {config} ({})", evidence.join("; ")))
}

/// The check for one moment of the run. `topo` is in the guest's (QEMU) numbering;
/// `stages` pairs each moment's name (`probe`, `offline-after`, the report's
/// [`Topology::last_stage`]) with what the guest showed then; `init_env` is the
/// environment the kernel gave `/init` (the report's
/// [`init_env`](crate::guest_protocol::GuestReport::init_env)).
pub fn check_cpu_state(topo: &Topology, stages: &[(&str, &GuestCpuState)], init_env: &[String]) -> Check {
    let s = topo.scenario();
    let all = CpuMask::first_n(topo.ncpu());
    let cmdline = topo.scenario_cmdline();
    let item = |name: &str| cmdline.iter().find(|i| i.starts_with(name)).cloned().unwrap_or_default();
    let no_nohz_file = stages.iter().all(|(_, cs)| cs.nohz_full.is_none());
    let nohz_ignored = s.nohz_full.as_ref().and_then(|_| {
        not_taken(&item("nohz_full="), "CONFIG_NO_HZ_FULL", init_env, no_nohz_file.then_some(NOHZ_FULL_FILE))
    });
    let isolcpus_ignored = s.isolcpus.as_ref().and_then(|i| {
        let nohz_flag = i.flags.iter().any(|f| f == "nohz") && no_nohz_file;
        let config = if nohz_flag { "CONFIG_NO_HZ_FULL" } else { "CONFIG_CPU_ISOLATION" };
        not_taken(&item("isolcpus="), config, init_env, None)
    });
    let mut wrong = Vec::new();
    for (stage, cs) in stages {
        let mut here = Vec::new();
        compare(&mut here, "/sys/devices/system/cpu/offline", &all.andnot(&topo.online_at(stage)), cs.offline.as_ref());
        if let (Some(i), None) = (&s.isolcpus, &isolcpus_ignored) {
            let isolated = if i.domain() { i.cpus.clone() } else { CpuMask::new() };
            compare(&mut here, "/sys/devices/system/cpu/isolated (isolcpus=)", &isolated, cs.isolated.as_ref());
        }
        if let (Some(n), None) = (&s.nohz_full, &nohz_ignored) {
            compare(&mut here, &format!("{NOHZ_FULL_FILE} (nohz_full=)"), n, cs.nohz_full.as_ref());
        }
        compare(
            &mut here,
            "/proc/irq/default_smp_affinity (irqaffinity=, plus the boot CPU)",
            &topo.irq_default_affinity(),
            cs.default_smp_affinity.as_ref(),
        );
        wrong.extend(here.into_iter().map(|w| format!("{stage}: {w}")));
    }
    let notes: Vec<String> = isolcpus_ignored.into_iter().chain(nohz_ignored).collect();
    let asked = if cmdline.is_empty() { "no CPU parameters".to_owned() } else { cmdline.join(" ") };
    match wrong.split_first() {
        None => {
            let mut message = format!(
                "the guest's offline CPUs and CPU policies are the scenario's at {} ({asked})",
                stages.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            );
            if !notes.is_empty() {
                message = format!(
                    "{message}, except what this kernel ignores, which MANA's vectors (not managed) do not depend on: {}",
                    notes.join("; ")
                );
            }
            Check::new(CPU_STATE_CHECK, CheckStatus::Pass, message)
        }
        Some((first, rest)) => {
            let mut c = Check::new(
                CPU_STATE_CHECK,
                CheckStatus::Fail,
                format!("the guest did not take the scenario ({asked}): {first}"),
            );
            c.detail = rest.iter().chain(&notes).cloned().collect();
            c
        }
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

    /// What a guest kernel built with manarig's minimal config hands to `/init` for
    /// `isolcpus=2 nohz_full=3`: both unknown (no CONFIG_CPU_ISOLATION), after the
    /// kernel's own HOME and TERM (init/main.c `envp_init`).
    fn min_env() -> Vec<String> {
        ["HOME=/", "TERM=linux", "isolcpus=2", "nohz_full=3"].map(String::from).to_vec()
    }

    #[test]
    fn a_guest_that_took_the_scenario_passes_at_every_stage() {
        let t = topo("offline_after = \"3\"\nisolcpus = \"2\"\nirqaffinity = \"1\"");
        let probe = state(&[], &[2], &[0, 1]);
        let after = state(&[3], &[2], &[0, 1]);
        let c = check_cpu_state(&t, &[("probe", &probe), ("offline-after", &after)], &[]);
        assert_eq!(c.status, CheckStatus::Pass, "{c:?}");
        assert!(c.message.contains("irqaffinity=1 isolcpus=2"), "{}", c.message);
        assert!(!c.message.contains("ignored"), "{}", c.message);
    }

    /// The -min kernels (no CONFIG_CPU_ISOLATION, no CONFIG_NO_HZ_FULL): `isolated` is
    /// empty, there is no `nohz_full` file, and both parameters are in /init's
    /// environment. The check passes and says which were ignored and how it knows.
    #[test]
    fn a_kernel_without_cpu_isolation_passes_naming_the_ignored_parameters_and_the_evidence() {
        let t = topo("isolcpus = \"2\"\nnohz_full = \"3\"");
        let c = check_cpu_state(&t, &[("probe", &state(&[], &[], &[0, 1, 2, 3]))], &min_env());
        assert_eq!(c.status, CheckStatus::Pass, "{c:?}");
        assert!(
            c.message.contains(
                "isolcpus=2 ignored: this kernel was built without CONFIG_CPU_ISOLATION (it handed the parameter \
                 to /init as an environment variable, /proc/1/environ)"
            ),
            "{}",
            c.message
        );
        assert!(
            c.message.contains(
                "nohz_full=3 ignored: this kernel was built without CONFIG_NO_HZ_FULL (it has no \
                 /sys/devices/system/cpu/nohz_full; it handed the parameter to /init"
            ),
            "{}",
            c.message
        );
    }

    /// A kernel with CONFIG_CPU_ISOLATION but not CONFIG_NO_HZ_FULL takes isolcpus= and
    /// refuses nohz_full= (kernel/sched/isolation.c `housekeeping_setup()`): the missing
    /// file alone says why nohz_full= changed nothing; isolcpus= is still compared.
    #[test]
    fn without_the_nohz_full_file_nohz_full_is_ignored_but_isolcpus_is_still_compared() {
        let t = topo("isolcpus = \"2\"\nnohz_full = \"3\"");
        let ok = check_cpu_state(&t, &[("probe", &state(&[], &[2], &[0, 1, 2, 3]))], &[]);
        assert_eq!(ok.status, CheckStatus::Pass, "{ok:?}");
        assert!(ok.message.contains("nohz_full=3 ignored: this kernel was built without CONFIG_NO_HZ_FULL (it has no /sys/devices/system/cpu/nohz_full)"), "{}", ok.message);
        let bad = check_cpu_state(&t, &[("probe", &state(&[], &[], &[0, 1, 2, 3]))], &[]);
        assert_eq!(bad.status, CheckStatus::Fail, "took isolcpus=2 but isolated nothing");
        assert!(bad.message.contains("isolated (isolcpus=): declared 2, the guest has "), "{}", bad.message);
        assert!(bad.detail.iter().any(|d| d.starts_with("nohz_full=3 ignored")), "{:?}", bad.detail);
    }

    /// A kernel that took both parameters (its `nohz_full` file exists, nothing in
    /// /init's environment) but shows other CPUs fails, naming the files.
    #[test]
    fn a_kernel_that_took_isolcpus_and_nohz_full_and_shows_other_cpus_fails_naming_the_files() {
        let t = topo("isolcpus = \"2\"\nnohz_full = \"3\"");
        let mut cs = state(&[], &[1], &[0, 1, 2, 3]);
        cs.nohz_full = Some(vec![2]);
        let c = check_cpu_state(&t, &[("probe", &cs)], &["HOME=/".to_owned(), "TERM=linux".to_owned()]);
        assert_eq!(c.status, CheckStatus::Fail);
        assert!(
            c.message.contains("probe: /sys/devices/system/cpu/isolated (isolcpus=): declared 2, the guest has 1"),
            "{}",
            c.message
        );
        assert_eq!(c.detail, ["probe: /sys/devices/system/cpu/nohz_full (nohz_full=): declared 3, the guest has 2"]);
    }

    /// irqaffinity= is compared whatever /init's environment says: the IRQ table depends
    /// on it, and every SMP kernel has its handler.
    #[test]
    fn irqaffinity_is_always_compared() {
        let t = topo("irqaffinity = \"1\"");
        let env = ["irqaffinity=1".to_owned()];
        let c = check_cpu_state(&t, &[("probe", &state(&[], &[], &[0, 1, 2, 3]))], &env);
        assert_eq!(c.status, CheckStatus::Fail, "{c:?}");
        assert!(
            c.message.contains("default_smp_affinity (irqaffinity=, plus the boot CPU): declared 0-1"),
            "{}",
            c.message
        );
    }
}
