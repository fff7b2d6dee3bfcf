//! MANA's own spreading of queue IRQs over sibling groups, NUMA hop by NUMA hop.
//!
//! Each function returns the affinity masks it would set, in IRQ order (entry k is what
//! `irq_set_affinity_and_hint(irqs[k], …)` receives); IRQs past the end of the list are
//! not touched and keep their default affinity.

use super::numa::NumaLevels;
use crate::cpulist::CpuMask;

/// `topology_sibling_cpumask(cpu)`, supplied by the caller.
pub type Siblings<'a> = &'a dyn Fn(u32) -> CpuMask;

/// The shared walk of `irq_setup()` and `mana_irq_setup_numa_aware()`.
///
/// For each hop mask (see [`NumaLevels::hop_masks`]): `weight` = CPUs the hop adds;
/// while `weight > 0`, one pass over those CPUs in id order, re-reading the live set
/// after each step (`for_each_cpu` over a mask it shrinks), taking one CPU per sibling
/// group, removing the group and decrementing `weight` once per group. `weight` is only
/// tested between passes, so uneven SMT (cores of 2+2+1 threads, weight 5) gets 3 + 3 = 6
/// IRQs. `skip_first` consumes the first group visited without giving it an IRQ (7.x).
fn walk(
    numa: &NumaLevels,
    siblings: Siblings<'_>,
    len: usize,
    node: Option<u32>,
    mut skip_first: bool,
) -> Vec<CpuMask> {
    let mut out = Vec::with_capacity(len);
    let mut prev = CpuMask::new();
    for next in numa.hop_masks(node) {
        let fresh = next.andnot(&prev);
        let mut weight = i64::from(fresh.count());
        while weight > 0 {
            let mut cpus = fresh.clone();
            let mut cursor = 0;
            while let Some(cpu) = cpus.next_from(cursor) {
                let group = siblings(cpu);
                cpus.andnot_assign(&group);
                weight -= 1;
                cursor = cpu + 1;
                if skip_first {
                    skip_first = false;
                    continue;
                }
                if out.len() == len {
                    return out;
                }
                out.push(group);
            }
        }
        prev = next.clone();
    }
    out
}

/// MANA `irq_setup(irqs, len, node)`: whole sibling groups, hop by hop, each hop's
/// groups visited repeatedly until the hop has had as many IRQs as it has CPUs.
///
/// Models drivers/net/ethernet/microsoft/mana/gdma_main.c `irq_setup()`, Linux 6.9–6.16
/// (commit 91bfe210e196, "net: mana: add a function to spread IRQs per CPUs"; Debian
/// 6.12.117 read). A node without CPUs gives no hop masks, so nothing is assigned.
pub fn irq_setup(numa: &NumaLevels, siblings: Siblings<'_>, len: usize, node: Option<u32>) -> Vec<CpuMask> {
    walk(numa, siblings, len, node, false)
}

/// MANA `mana_irq_setup_numa_aware(irqs, len, node, skip_first_cpu)`: [`irq_setup`] with
/// the option to skip the first sibling group once (it already carries the HWC IRQ).
/// The skipped group still counts against the hop's weight and is visited again in the
/// next pass.
///
/// Models gdma_main.c `mana_irq_setup_numa_aware()`, Linux 6.17–7.x (Debian 7.3.4 read;
/// `skip_first_cpu` from the 2025 "Allow irq_setup() to skip cpus" series, R05).
pub fn irq_setup_numa_aware(
    numa: &NumaLevels,
    siblings: Siblings<'_>,
    len: usize,
    node: Option<u32>,
    skip_first_cpu: bool,
) -> Vec<CpuMask> {
    walk(numa, siblings, len, node, skip_first_cpu)
}

/// MANA `mana_irq_setup_linear(irqs, len)`: IRQ k → the k-th online CPU alone, NUMA and
/// SMT ignored; IRQs beyond the online count are left alone.
///
/// Models gdma_main.c `mana_irq_setup_linear()`, Linux 7.x (R06, "Optimize irq affinity
/// for low vcpu configs"; Debian 7.3.4 read).
pub fn irq_setup_linear(numa: &NumaLevels, len: usize) -> Vec<CpuMask> {
    numa.online().iter().take(len).map(CpuMask::single).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Siblings N, N+1 (QEMU numbering, threads = 2).
    fn pairs(cpu: u32) -> CpuMask {
        CpuMask::single(cpu & !1).or(&CpuMask::single(cpu | 1))
    }

    fn two_nodes_of_two_cores() -> NumaLevels {
        // Seed 002 / R01: node 0 = 0-3, node 1 = 4-7, SMT-2.
        let cpus: Vec<CpuMask> = ["0-3", "4-7"].iter().map(|c| c.parse().expect("cpulist")).collect();
        NumaLevels::build(&cpus, &[vec![10, 20], vec![20, 10]], &CpuMask::first_n(8))
    }

    fn lists(v: &[CpuMask]) -> Vec<String> {
        v.iter().map(CpuMask::to_cpulist).collect()
    }

    #[test]
    fn seed_002_table() {
        // Seed 002 (commit message of 91bfe210e196): IRQ 0..7 → 0-1 2-3 0-1 2-3 4-5 6-7 4-5 6-7.
        let n = two_nodes_of_two_cores();
        assert_eq!(lists(&irq_setup(&n, &pairs, 8, Some(0))), ["0-1", "2-3", "0-1", "2-3", "4-5", "6-7", "4-5", "6-7"]);
    }

    #[test]
    fn yury_norov_walk_through_adds_irqs_one_by_one() {
        // Seed 000, Yury Norov's reply: with 2 IRQs "0-1, 2-3"; a 3rd goes to core 0 (0-1)
        // because NUMA locality trumps sibling dislocality; a 4th to 2-3; then node 1 fills
        // up the same way. Each prefix of the 8-IRQ table is the table for fewer IRQs.
        let n = two_nodes_of_two_cores();
        let full = lists(&irq_setup(&n, &pairs, 8, Some(0)));
        for len in 0..=8 {
            assert_eq!(lists(&irq_setup(&n, &pairs, len, Some(0))), full[..len], "{len} IRQs");
        }
        assert_eq!(full[..2], ["0-1", "2-3"]);
        assert_eq!(full[2], "0-1");
        assert_eq!(full[3], "2-3");
    }

    #[test]
    fn nic_on_node_1_starts_there() {
        // R01 rig scenario: device on node 1 → 4-5, 6-7 first.
        let n = two_nodes_of_two_cores();
        assert_eq!(lists(&irq_setup(&n, &pairs, 5, Some(1))), ["4-5", "6-7", "4-5", "6-7", "0-1"]);
    }

    #[test]
    fn uneven_smt_hop_gets_an_extra_pass() {
        // Kernel algorithm (weight checked only between passes): cores 0-1, 2-3, 4 → weight 5,
        // pass 1 gives 3 IRQs (weight 2), pass 2 gives 3 more (weight -1): 6 IRQs on 5 CPUs.
        let cpus: Vec<CpuMask> = vec!["0-4".parse().expect("cpulist")];
        let n = NumaLevels::build(&cpus, &[vec![10]], &CpuMask::first_n(5));
        let sib = |c: u32| if c == 4 { CpuMask::single(4) } else { pairs(c) };
        assert_eq!(lists(&irq_setup(&n, &sib, 10, Some(0))), ["0-1", "2-3", "4", "0-1", "2-3", "4"]);
    }

    #[test]
    fn skip_first_consumes_one_group_in_the_first_pass_only() {
        // R05: 2 nodes × 4 cores × 2 threads; HWC on {0,1}, first queue IRQ on {2,3}; the
        // skipped group is visited again in the second pass.
        let cpus: Vec<CpuMask> = ["0-7", "8-15"].iter().map(|c| c.parse().expect("cpulist")).collect();
        let n = NumaLevels::build(&cpus, &[vec![10, 20], vec![20, 10]], &CpuMask::first_n(16));
        assert_eq!(
            lists(&irq_setup_numa_aware(&n, &pairs, 9, Some(0), true)),
            ["2-3", "4-5", "6-7", "0-1", "2-3", "4-5", "6-7", "8-9", "10-11"]
        );
        // Static allocation (no skip) starts on {0,1}.
        assert_eq!(lists(&irq_setup_numa_aware(&n, &pairs, 2, Some(0), false)), ["0-1", "2-3"]);
    }

    #[test]
    fn linear_is_one_cpu_per_irq_in_id_order() {
        // R06 with the fix: queue IRQs → 0, 1, 2, 3.
        let cpus: Vec<CpuMask> = vec!["0-3".parse().expect("cpulist")];
        let n = NumaLevels::build(&cpus, &[vec![10]], &CpuMask::first_n(4));
        assert_eq!(lists(&irq_setup_linear(&n, 4)), ["0", "1", "2", "3"]);
        assert_eq!(irq_setup_linear(&n, 6).len(), 4, "IRQs beyond the online count are left alone");
    }

    #[test]
    fn no_node_is_one_pass_over_everything() {
        // R01/R23: NUMA_NO_NODE → hop 0 = cpu_online_mask.
        let n = two_nodes_of_two_cores();
        assert_eq!(
            lists(&irq_setup(&n, &pairs, 9, None)),
            ["0-1", "2-3", "4-5", "6-7", "0-1", "2-3", "4-5", "6-7"],
            "8 CPUs give 8 assignments; the 9th IRQ keeps its default"
        );
    }
}
