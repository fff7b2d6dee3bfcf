//! `cpumask_local_spread(i, node)`: the i-th CPU "near" a node, in two flavours.
//!
//! - [`local_spread_flat`]: Linux ≤ 6.2 (Debian 6.1.192 keeps it): the node's CPUs, then
//!   every other CPU by id, distance ignored.
//! - [`local_spread_hops`]: Linux 6.3–7.x: CPUs ordered by NUMA hop
//!   (`sched_numa_find_nth_cpu()`), CPU-less nodes remapped with `numa_nearest_node()`.

use super::numa::NumaLevels;
use crate::cpulist::CpuMask;

/// `cpumask_local_spread(i, node)` before the hop-aware rewrite.
///
/// Models lib/cpumask.c `cpumask_local_spread()`, Linux 5.x–6.2 and Debian 6.1.192:
/// `i %= num_online_cpus()`; NUMA_NO_NODE (`None`) → the i-th online CPU; otherwise the
/// node's online CPUs in id order, then the remaining online CPUs in id order (remote
/// nodes are **not** ordered by distance). A CPU-less node therefore gives the i-th
/// online CPU. Returns `None` only when no CPU is online.
pub fn local_spread_flat(numa: &NumaLevels, i: u32, node: Option<u32>) -> Option<u32> {
    let online = numa.online();
    let i = i.checked_rem(online.count())?;
    let Some(node) = node else {
        return online.nth(i);
    };
    let local = numa.node_cpus(node).and(online);
    let nlocal = local.count();
    if i < nlocal {
        local.nth(i)
    } else {
        online.andnot(&local).nth(i - nlocal)
    }
}

/// The order in which the hop-aware `cpumask_local_spread(i, node)` hands out CPUs for
/// i = 0, 1, …: for each hop of `numa_nearest_node(node)`, the CPUs that hop adds, in
/// id order. NUMA_NO_NODE gives all online CPUs in id order. Empty when the scheduler has
/// no NUMA masks (invalid distances).
pub fn local_spread_order(numa: &NumaLevels, node: Option<u32>) -> Vec<u32> {
    let online = numa.online();
    let Some(node) = node else {
        return online.iter().collect();
    };
    let near = numa.nearest_cpu_node(node);
    let mut prev = CpuMask::new();
    let mut order = Vec::with_capacity(online.count() as usize);
    for mask in numa.hop_masks(Some(near)) {
        order.extend(mask.and(online).andnot(&prev).iter());
        prev = mask.clone();
    }
    order
}

/// `cpumask_local_spread(i, node)` from Linux 6.3 on.
///
/// Models lib/cpumask.c `cpumask_local_spread()` → kernel/sched/topology.c
/// `sched_numa_find_nth_cpu(cpu_online_mask, i, node)` (Linux 6.3–7.x; the
/// `numa_nearest_node()` remap of CPU-less nodes is in Debian 6.12.117 and 7.3.4): `i %= num_online_cpus()`;
/// NUMA_NO_NODE → the i-th online CPU; otherwise the i-th entry of
/// [`local_spread_order`]. `None` stands for the kernel's `nr_cpu_ids` result (no
/// masks after an invalid distance; the kernel WARNs).
pub fn local_spread_hops(numa: &NumaLevels, i: u32, node: Option<u32>) -> Option<u32> {
    let i = i.checked_rem(numa.online().count())?;
    local_spread_order(numa, node).get(i as usize).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// R08: node 0 = 0-3, node 1 = 4-5, node 2 = 6-7, node 3 = 8-15, SLIT rows
    /// [10,50,30,70], [50,10,70,30], [30,70,10,50], [70,30,50,10].
    fn r08() -> NumaLevels {
        let cpus: Vec<CpuMask> = ["0-3", "4-5", "6-7", "8-15"].iter().map(|c| c.parse().expect("cpulist")).collect();
        let d = vec![vec![10, 50, 30, 70], vec![50, 10, 70, 30], vec![30, 70, 10, 50], vec![70, 30, 50, 10]];
        NumaLevels::build(&cpus, &d, &CpuMask::first_n(16))
    }

    fn spread(numa: &NumaLevels, node: u32, f: fn(&NumaLevels, u32, Option<u32>) -> Option<u32>) -> Vec<u32> {
        (0..16).map(|i| f(numa, i, Some(node)).expect("a CPU")).collect()
    }

    #[test]
    fn r08_hop_aware_orders() {
        // R08 expected cpumask_local_spread(i, node), i = 0..15 (commits cd7f55359c90, 406d394abfcd).
        let n = r08();
        let r = |v: std::ops::RangeInclusive<u32>| v.collect::<Vec<_>>();
        let cat = |parts: &[Vec<u32>]| parts.concat();
        assert_eq!(spread(&n, 0, local_spread_hops), cat(&[r(0..=3), r(6..=7), r(4..=5), r(8..=15)]));
        assert_eq!(spread(&n, 1, local_spread_hops), cat(&[r(4..=5), r(8..=15), r(0..=3), r(6..=7)]));
        assert_eq!(spread(&n, 2, local_spread_hops), cat(&[r(6..=7), r(0..=3), r(8..=15), r(4..=5)]));
        assert_eq!(spread(&n, 3, local_spread_hops), cat(&[r(8..=15), r(4..=5), r(6..=7), r(0..=3)]));
    }

    #[test]
    fn r08_flat_order_ignores_distance() {
        // R08: "Before the change, remote CPUs were searched flat, ignoring distance."
        let n = r08();
        let r = |v: std::ops::RangeInclusive<u32>| v.collect::<Vec<_>>();
        assert_eq!(spread(&n, 1, local_spread_flat), [r(4..=5), r(0..=3), r(6..=15)].concat());
        assert_eq!(spread(&n, 3, local_spread_flat), [r(8..=15), r(0..=7)].concat());
    }

    #[test]
    fn index_wraps_at_the_online_count() {
        // lib/cpumask.c: i %= num_online_cpus().
        let n = r08();
        assert_eq!(local_spread_hops(&n, 16, Some(3)), Some(8));
        assert_eq!(local_spread_flat(&n, 17, Some(1)), Some(5));
    }

    #[test]
    fn numa_no_node_gives_the_ith_online_cpu() {
        // R13 (commit 9ecea9ae4d31): cpumask_local_spread(i, NUMA_NO_NODE) = i-th online CPU.
        let n = r08();
        assert_eq!(local_spread_hops(&n, 5, None), Some(5));
        assert_eq!(local_spread_flat(&n, 5, None), Some(5));
    }

    #[test]
    fn cpu_less_node_uses_the_nearest_cpu_node() {
        // R15 (inferred): a device on memory-only node 2 spreads from node 0 (distance 17).
        let cpus: Vec<CpuMask> = ["0-3", "4-7", "", ""].iter().map(|c| c.parse().expect("cpulist")).collect();
        let d = vec![vec![10, 21, 17, 28], vec![21, 10, 28, 17], vec![17, 28, 10, 28], vec![28, 17, 28, 10]];
        let n = NumaLevels::build(&cpus, &d, &CpuMask::first_n(8));
        assert_eq!(local_spread_hops(&n, 0, Some(3)), Some(4));
        // 6.1 flavour: L = ∅, so simply the i-th online CPU.
        assert_eq!(local_spread_flat(&n, 0, Some(3)), Some(0));
    }
}
