//! The IRQ table after CPU hotplug following the probe (`[scenario]` `offline_after`,
//! `online_after`): MANA's vectors are not managed, so the kernel only moves a vector
//! when the last online CPU of its mask goes, and never moves it back.

use super::kernel::KernelGen;
use super::mana::{describe, expected_table, numa_levels_at, TableShape};
use super::table::{Algorithm, ExpectedTable};
use crate::cpulist::CpuMask;
use crate::topology::{CpuStep, Topology};

/// Name of the stage the guest prints when the probe is done, before any hotplug.
pub const PROBE_STAGE: &str = "probe";

/// One CPU hotplug step applied to a table's vectors.
///
/// Models, for a started, non-managed MSI-X vector (Linux 6.1–7.x; Debian 6.1.192 and
/// 6.12.117 read):
/// - offline: `irq_migrate_all_off_this_cpu()` → `migrate_one_irq()`
///   (kernel/irq/cpuhotplug.c), run on the dying CPU after it left `cpu_online_mask`:
///   a vector whose effective CPU was that CPU keeps its mask when the mask still has
///   an online CPU (`smp_affinity_list` unchanged, the effective CPU moves inside
///   it), else gets `cpu_online_mask` ("broken affinity"), which
///   `irq_do_set_affinity()` copies into its affinity. The hint stays.
/// - online: nothing for these vectors (`irq_affinity_online_cpu()` restores managed
///   vectors only).
///
/// Assumes each vector's effective CPU lies in its mask (every vector has fired once
/// when the rig reads it). The hints are [`live_hint`]'s business.
fn apply(vectors: &mut [(Algorithm, CpuMask, Option<CpuMask>)], online: &mut CpuMask, step: CpuStep) {
    match step {
        CpuStep::Offline(cpu) => {
            online.remove(cpu);
            for (alg, mask, _) in vectors.iter_mut() {
                if !mask.intersects(online) {
                    *mask = online.clone();
                    *alg = Algorithm::Migrated;
                }
            }
        }
        CpuStep::Online(cpu) => online.insert(cpu),
    }
}

/// The CPU whose `topology_sibling_cpumask()` a vector's hint points at, if it does.
///
/// `irq_set_affinity_and_hint()` keeps the mask *pointer* as the hint
/// (`desc->affinity_hint`, kernel/irq/manage.c), and MANA's `irq_setup()` (6.9–6.16)
/// and `mana_irq_setup_numa_aware()` (6.17–7.x) pass `topology_sibling_cpumask(cpu)`:
/// x86's live per-CPU sibling map, cleared when that CPU goes offline
/// (`remove_siblinginfo()`) and joined by a sibling that comes online
/// (`set_cpu_sibling_map()`). `cpu` is the group's lowest CPU at the probe (the walk
/// visits a hop's CPUs in ascending order). The other paths pass `cpumask_of(cpu)`, a
/// constant. Seen in a 6.12 guest: the hint of a vector on {6} read 6-7 once CPU 7 came
/// online, and the hint of a vector on {2} read empty once CPU 2 went offline.
fn sibling_hint_source(alg: Algorithm, probe_mask: &CpuMask) -> Option<u32> {
    matches!(alg, Algorithm::IrqSetup | Algorithm::NumaAware | Algorithm::NumaAwareSkipFirst)
        .then(|| probe_mask.first())
        .flatten()
}

/// The hint `/proc/irq/N/affinity_hint` shows with `online` as `cpu_online_mask`: for a
/// sibling-map hint (see [`sibling_hint_source`]) the source CPU's online siblings
/// (itself included), none while it is offline; otherwise the probe's hint.
fn live_hint(topo: &Topology, source: Option<u32>, probe_hint: Option<&CpuMask>, online: &CpuMask) -> Option<CpuMask> {
    match source {
        Some(cpu) if online.contains(cpu) => Some(topo.siblings(cpu).and(online)),
        Some(_) => None,
        None => probe_hint.cloned(),
    }
}

/// The expected table at every stage of a run: [`PROBE_STAGE`] (the table of
/// [`expected_table`]), then one per group of [`Topology::after_probe_steps`]
/// (`offline-after`, `online-after`), each after its steps in order. CPU ids are the
/// topology's own (pass [`Topology::to_qemu_numbering`] for a guest's view).
pub fn expected_stages(topo: &Topology, gen: KernelGen) -> Vec<(String, ExpectedTable)> {
    let probe = expected_table(topo, gen);
    let mut online = topo.probe_online();
    let mut vectors: Vec<(Algorithm, CpuMask, Option<CpuMask>)> =
        probe.vectors.iter().map(|v| (v.algorithm, v.smp_affinity_list.clone(), v.hint.clone())).collect();
    let sources: Vec<Option<u32>> =
        probe.vectors.iter().map(|v| sibling_hint_source(v.algorithm, &v.smp_affinity_list)).collect();
    let mut out = vec![(PROBE_STAGE.to_owned(), probe.clone())];
    for (name, steps) in topo.after_probe_steps() {
        for step in steps {
            apply(&mut vectors, &mut online, step);
        }
        for ((v, source), p) in vectors.iter_mut().zip(&sources).zip(&probe.vectors) {
            v.2 = live_hint(topo, *source, p.hint.as_ref(), &online);
        }
        let numa = numa_levels_at(topo, &online);
        out.push((name.to_owned(), describe(topo, gen, &numa, vectors.clone(), TableShape::of(&probe))));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(scenario: &str) -> Topology {
        let text = format!(
            "name = \"t\"\n[source]\nkind = \"synthetic\"\nwording = \"w\"\n[cpus]\nsockets = 2\ncores = 2\nthreads = 2\n\
             [[numa.nodes]]\ncpus = \"0-3\"\nmemory_mib = 256\n[[numa.nodes]]\ncpus = \"4-7\"\nmemory_mib = 256\n\
             [nic]\nnuma_node = 0\n[expect]\nverdict = \"pass\"\nsource = \"s\"\n[scenario]\n{scenario}"
        );
        Topology::from_toml_str("t.toml", &text).expect("valid")
    }

    fn lists(t: &ExpectedTable) -> Vec<String> {
        t.vectors.iter().map(|v| v.smp_affinity_list.to_cpulist()).collect()
    }

    #[test]
    fn offline_at_probe_shrinks_the_sibling_groups_and_the_vector_count() {
        // Seed 002's machine with CPU 3 offline before mana loads: 7 online CPUs,
        // nvec = 8 = num_online_cpus() + 1, so the HWC takes cpumask_local_spread(0) = 0
        // and irq_setup() walks node 0's groups {0-1}, {2} (CPU 3 gone from
        // topology_sibling_cpumask(2)) in passes until the hop's weight 3 is used up
        // (two passes: 4 vectors), then node 1's groups.
        let t = topo("offline = \"3\"");
        let s = expected_stages(&t, KernelGen::V6_12);
        assert_eq!(s.len(), 1);
        assert_eq!(lists(&s[0].1), ["0", "0-1", "2", "0-1", "2", "4-5", "6-7", "4-5"]);
        assert_eq!(s[0].1.online_cpus, 7);
    }

    #[test]
    fn offline_after_moves_only_vectors_left_without_an_online_cpu() {
        // Seed 002 on 6.12: q0..q7 = 0-1 2-3 0-1 2-3 4-5 6-7 4-5 6-7 (HWC on 0). Offlining
        // 2 and 3 breaks q1 and q3: migrate_one_irq() gives them cpu_online_mask
        // (0-1,4-7); the others keep their masks; onlining 2-3 moves nothing back.
        let t = topo("offline_after = \"2-3\"\nonline_after = \"2-3\"");
        let s = expected_stages(&t, KernelGen::V6_12);
        let names: Vec<&str> = s.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["probe", "offline-after", "online-after"]);
        assert_eq!(lists(&s[0].1), ["0", "0-1", "2-3", "0-1", "2-3", "4-5", "6-7", "4-5", "6-7"]);
        let after = ["0", "0-1", "0-1,4-7", "0-1", "0-1,4-7", "4-5", "6-7", "4-5", "6-7"];
        assert_eq!(lists(&s[1].1), after);
        assert_eq!(s[1].1.vectors[2].algorithm, Algorithm::Migrated);
        // The hint of q1 points at CPU 2's sibling map: empty while CPU 2 is offline.
        assert_eq!(s[1].1.vectors[2].hint, None);
        assert_eq!(s[1].1.vectors[1].hint.as_ref().map(CpuMask::to_cpulist).as_deref(), Some("0-1"));
        assert_eq!(lists(&s[2].1), after);
        assert_eq!(s[2].1.vectors[2].hint.as_ref().map(CpuMask::to_cpulist).as_deref(), Some("2-3"), "back with 2-3");
        assert_eq!(s[2].1.online_cpus, 8);
    }

    #[test]
    fn a_mask_broken_earlier_holds_the_cpus_online_then() {
        // Offline 2 then 3 then 4: q1 (2-3) breaks at CPU 3 → 0-1,4-7; CPU 4 leaving
        // does not empty that mask, so it still names CPU 4.
        let t = topo("offline_after = \"2-4\"");
        let s = expected_stages(&t, KernelGen::V6_12);
        assert_eq!(s[1].1.vectors[2].smp_affinity_list.to_cpulist(), "0-1,4-7");
        assert_eq!(s[1].1.vectors[5].smp_affinity_list.to_cpulist(), "4-5", "q4 on 4-5 keeps CPU 5");
    }
}
