//! NUMA distance levels and hop masks, as the scheduler builds them at boot.
//!
//! Models, for Linux 6.3–7.x (Debian 6.12.117 and 7.3.4 read):
//! - `sched_init_numa()` in kernel/sched/topology.c (7.x: with `sched_record_numa_dist()`):
//!   [`NumaLevels::build`];
//! - `sched_numa_hop_mask()` + `for_each_numa_hop_mask()` (include/linux/topology.h):
//!   [`NumaLevels::hop_masks`];
//! - `numa_nearest_node(node, N_CPU)` in mm/mempolicy.c: [`NumaLevels::nearest_cpu_node`];
//! - x86's SLIT sanity check, `slit_valid()` in drivers/acpi/numa/srat.c:
//!   [`effective_slit`].
//!
//! 7.x on x86 builds the masks from `arch_sched_node_distance()`, which equals the SLIT
//! except on Intel Granite Rapids / Darkmont SNC-3 machines with more than one package;
//! those are not modelled.

use crate::cpulist::CpuMask;

/// LOCAL_DISTANCE (include/linux/topology.h).
pub const LOCAL_DISTANCE: u32 = 10;
/// REMOTE_DISTANCE, the x86 default between nodes without a (valid) SLIT.
pub const REMOTE_DISTANCE: u32 = 20;
/// NR_DISTANCE_VALUES = 1 << DISTANCE_BITS (8): distances must be below this.
pub const NR_DISTANCE_VALUES: u32 = 256;

/// The distance table Linux x86 ends up with for a firmware SLIT.
///
/// Models `slit_valid()` + `acpi_numa_slit_init()` (drivers/acpi/numa/srat.c, Linux
/// 2.6–7.x): if any diagonal entry is not 10 or any other entry is ≤ 10, the SLIT is
/// ignored ("SLIT table looks invalid. Not used.") and `node_distance()` falls back to
/// 10 on the diagonal and 20 elsewhere. `slit` must be square (n×n); the result is n×n.
pub fn effective_slit(slit: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let n = slit.len();
    let valid = slit.iter().enumerate().all(|(i, row)| {
        row.len() == n
            && row.iter().enumerate().all(|(j, &d)| if i == j { d == LOCAL_DISTANCE } else { d > LOCAL_DISTANCE })
    });
    if valid {
        return slit.to_vec();
    }
    (0..n).map(|i| (0..n).map(|j| if i == j { LOCAL_DISTANCE } else { REMOTE_DISTANCE }).collect()).collect()
}

/// The scheduler's NUMA levels and per-level node masks.
#[derive(Debug, Clone)]
pub struct NumaLevels {
    /// Number of possible nodes (`nr_node_ids`).
    nr_node_ids: u32,
    /// `sched_domains_numa_distance[]`: sorted unique distances among CPU nodes.
    levels: Vec<u32>,
    /// `sched_domains_numa_masks[h][node]`; `None` for nodes without CPUs. The outer
    /// `Option` is `None` when `sched_init_numa()` bailed out on an invalid distance.
    masks: Option<Vec<Vec<Option<CpuMask>>>>,
    /// `cpumask_of_node()` ∩ online, per node.
    node_cpus: Vec<CpuMask>,
    /// `node_distance()`, n×n.
    distances: Vec<Vec<u32>>,
    /// `cpu_online_mask`.
    online: CpuMask,
}

impl NumaLevels {
    /// Build levels and masks from online CPUs per node and the distance table.
    ///
    /// Models `sched_init_numa(NUMA_NO_NODE)` (kernel/sched/topology.c, Linux 5.16–7.x,
    /// run from `sched_init_smp()` once all boot CPUs are online):
    /// 1. node set S = nodes with at least one online CPU (`N_CPU`); memory-only nodes
    ///    are left out (since 5.18, R15);
    /// 2. any `d(i, j)` for i, j ∈ S outside `[10, 255]` → "Invalid distance value
    ///    range": no levels, no masks;
    /// 3. levels = sorted unique `d(i, j)` over all pairs of S, diagonal included (all
    ///    rows, not just row 0: R16);
    /// 4. `masks[h][j]` = CPUs of every k ∈ S with `d(j, k) ≤ levels[h]`, for j ∈ S;
    ///    `None` for j ∉ S.
    ///
    /// `node_cpus[n]` are node n's CPUs (masked with `online` here), `distances` is n×n.
    pub fn build(node_cpus: &[CpuMask], distances: &[Vec<u32>], online: &CpuMask) -> Self {
        let node_cpus: Vec<CpuMask> = node_cpus.iter().map(|c| c.and(online)).collect();
        let n = node_cpus.len();
        let d = |i: usize, j: usize| distances.get(i).and_then(|r| r.get(j)).copied().unwrap_or(REMOTE_DISTANCE);
        let cpu_nodes: Vec<usize> = (0..n).filter(|&i| !node_cpus[i].is_empty()).collect();
        let mut seen = [false; NR_DISTANCE_VALUES as usize];
        let mut invalid = false;
        for &i in &cpu_nodes {
            for &j in &cpu_nodes {
                let dist = d(i, j);
                if !(LOCAL_DISTANCE..NR_DISTANCE_VALUES).contains(&dist) {
                    invalid = true;
                } else {
                    seen[dist as usize] = true;
                }
            }
        }
        let base = Self {
            nr_node_ids: n as u32,
            levels: Vec::new(),
            masks: None,
            node_cpus,
            distances: (0..n).map(|i| (0..n).map(|j| d(i, j)).collect()).collect(),
            online: online.clone(),
        };
        if invalid {
            return base;
        }
        let levels: Vec<u32> = (0..NR_DISTANCE_VALUES).filter(|&v| seen[v as usize]).collect();
        let masks = levels
            .iter()
            .map(|&level| {
                (0..n)
                    .map(|j| {
                        cpu_nodes.contains(&j).then(|| {
                            cpu_nodes
                                .iter()
                                .filter(|&&k| d(j, k) <= level)
                                .fold(CpuMask::new(), |acc, &k| acc.or(&base.node_cpus[k]))
                        })
                    })
                    .collect()
            })
            .collect();
        Self { levels, masks: Some(masks), ..base }
    }

    /// `sched_domains_numa_distance[]` (empty if the build bailed out).
    pub fn levels(&self) -> &[u32] {
        &self.levels
    }

    /// Whether `sched_domains_numa_masks` exists (false after an invalid distance).
    pub fn has_masks(&self) -> bool {
        self.masks.is_some()
    }

    /// `cpu_online_mask`.
    pub fn online(&self) -> &CpuMask {
        &self.online
    }

    /// Online CPUs of a node (empty for a memory-only or unknown node).
    pub fn node_cpus(&self, node: u32) -> &CpuMask {
        static EMPTY: CpuMask = CpuMask::new();
        self.node_cpus.get(node as usize).unwrap_or(&EMPTY)
    }

    /// `node_distance(a, b)`.
    pub fn distance(&self, a: u32, b: u32) -> u32 {
        self.distances.get(a as usize).and_then(|r| r.get(b as usize)).copied().unwrap_or(if a == b {
            LOCAL_DISTANCE
        } else {
            REMOTE_DISTANCE
        })
    }

    /// `sched_numa_hop_mask(node, hop)`: `None` stands for every value the loop stops on
    /// (`-EINVAL` for node ≥ nr_node_ids or hop ≥ levels, `-EBUSY` without masks, and a
    /// NULL entry for a node without CPUs).
    pub fn hop_mask(&self, node: u32, hop: usize) -> Option<&CpuMask> {
        if node >= self.nr_node_ids || hop >= self.levels.len() {
            return None;
        }
        self.masks.as_ref()?.get(hop)?.get(node as usize)?.as_ref()
    }

    /// The masks `for_each_numa_hop_mask(mask, node)` visits, in order.
    ///
    /// Models the macro in include/linux/topology.h (Linux 6.3–7.x): hop 0 of
    /// NUMA_NO_NODE (`None`) is `cpu_online_mask` and hop 1 ends the loop (one pass over
    /// all online CPUs); for a node, hops 0, 1, … until [`NumaLevels::hop_mask`] stops
    /// it. A node without CPUs gives **no** masks (it is not remapped to a nearby node).
    /// Consecutive masks can be equal when no node sits at a level's distance.
    pub fn hop_masks(&self, node: Option<u32>) -> Vec<&CpuMask> {
        match node {
            None => vec![&self.online],
            Some(node) => (0..).map_while(|h| self.hop_mask(node, h)).collect(),
        }
    }

    /// `numa_nearest_node(node, N_CPU)`: the node itself if it has online CPUs, else the
    /// CPU node with the smallest `node_distance(node, n)`, ties to the lowest id; the
    /// node itself if there is no CPU node at all.
    ///
    /// Models mm/mempolicy.c `numa_nearest_node()` (Debian 6.12.117 and 7.3.4 read).
    pub fn nearest_cpu_node(&self, node: u32) -> u32 {
        if !self.node_cpus(node).is_empty() {
            return node;
        }
        let mut best = (u32::MAX, node);
        for n in 0..self.nr_node_ids {
            if !self.node_cpus(n).is_empty() && self.distance(node, n) < best.0 {
                best = (self.distance(node, n), n);
            }
        }
        best.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masks(cpus: &[&str]) -> Vec<CpuMask> {
        cpus.iter().map(|c| c.parse().expect("cpulist")).collect()
    }

    fn hops(l: &NumaLevels, node: Option<u32>) -> Vec<String> {
        // Report each hop as the CPUs it adds, which is what irq_setup() walks.
        let mut prev = CpuMask::new();
        l.hop_masks(node)
            .into_iter()
            .map(|m| {
                let new = m.andnot(&prev).to_cpulist();
                prev = m.clone();
                new
            })
            .collect()
    }

    #[test]
    fn r16_levels_come_from_every_row_not_row_0() {
        // R16 (commit 620a6dc40754): distance 30 only appears in rows 1 and 3.
        let d = vec![vec![10, 20, 20, 20], vec![20, 10, 20, 30], vec![20, 20, 10, 20], vec![20, 30, 20, 10]];
        let l = NumaLevels::build(&masks(&["0-1", "2-3", "4-5", "6-7"]), &d, &CpuMask::first_n(8));
        assert_eq!(l.levels(), &[10, 20, 30]);
        // R16 rig scenario: from node 1 the hops are {1}, {0,2}, {3}.
        assert_eq!(hops(&l, Some(1)), ["2-3", "0-1,4-5", "6-7"]);
    }

    #[test]
    fn r15_memory_only_nodes_are_left_out_of_the_levels() {
        // R15 (commit 0fb3978b0aac): 2 × 48 CPUs, nodes 2 and 3 memory-only. Expected:
        // 2 levels (10, 21), not 4, and NULL masks for the CPU-less nodes.
        let d = vec![vec![10, 21, 17, 28], vec![21, 10, 28, 17], vec![17, 28, 10, 28], vec![28, 17, 28, 10]];
        let l = NumaLevels::build(&masks(&["0-47", "48-95", "", ""]), &d, &CpuMask::first_n(96));
        assert_eq!(l.levels(), &[10, 21]);
        assert!(l.hop_masks(Some(2)).is_empty(), "a CPU-less node gets zero passes (R09 inferred)");
        // numa_nearest_node(2, N_CPU) = node 0 (distance 17), R15 inferred.
        assert_eq!(l.nearest_cpu_node(2), 0);
        assert_eq!(l.nearest_cpu_node(3), 1);
    }

    #[test]
    fn numa_no_node_is_one_pass_over_online_cpus() {
        // include/linux/topology.h for_each_numa_hop_mask(): cpu_online_mask for NUMA_NO_NODE (R09, R13).
        let l = NumaLevels::build(&masks(&["0-3", "4-7"]), &[vec![10, 20], vec![20, 10]], &CpuMask::first_n(8));
        assert_eq!(hops(&l, None), ["0-7"]);
        // A node id beyond nr_node_ids ends the loop at once (-EINVAL).
        assert!(l.hop_masks(Some(2)).is_empty());
    }

    #[test]
    fn invalid_distance_range_builds_no_masks() {
        // sched_init_numa(): "Invalid distance value range" for d >= NR_DISTANCE_VALUES.
        let l = NumaLevels::build(&masks(&["0", "1"]), &[vec![10, 300], vec![300, 10]], &CpuMask::first_n(2));
        assert!(!l.has_masks());
        assert!(l.levels().is_empty());
        assert!(l.hop_masks(Some(0)).is_empty());
        assert_eq!(hops(&l, None), ["0-1"], "NUMA_NO_NODE does not need the masks");
    }

    #[test]
    fn invalid_slit_falls_back_to_10_20() {
        // drivers/acpi/numa/srat.c slit_valid(): a remote distance of 10 invalidates the SLIT.
        assert_eq!(effective_slit(&[vec![10, 10], vec![10, 10]]), vec![vec![10, 20], vec![20, 10]]);
        assert_eq!(effective_slit(&[vec![12, 21], vec![21, 10]]), vec![vec![10, 20], vec![20, 10]]);
        let ok = vec![vec![10, 11], vec![11, 10]];
        assert_eq!(effective_slit(&ok), ok);
    }

    #[test]
    fn hop_0_includes_nodes_at_the_smallest_distance() {
        // kernel/sched/topology.c: masks[0][j] holds every node k with d(j,k) <= levels[0] = 10.
        // (Impossible with a valid SLIT, but the rule is the kernel's.)
        let l = NumaLevels::build(
            &masks(&["0", "1", "2"]),
            &[vec![10, 10, 30], vec![10, 10, 30], vec![30, 30, 10]],
            &CpuMask::first_n(3),
        );
        assert_eq!(hops(&l, Some(0)), ["0-1", "2"]);
    }
}
