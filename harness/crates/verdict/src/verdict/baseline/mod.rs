//! The baseline oracle: the same machine on a baseline kernel (K0) and on the patched
//! one, compared vector by vector and by the reviewers' numbers, without a model of
//! the patched algorithm.
//!
//! Public API:
//! - [`compare`]`(&Verdict, &Verdict) -> Result<Baseline, BaselineError>`: two verdicts
//!   of the same topology (`judge` output of each run; only their observed side and
//!   [`Summary`] are used, so the model either was judged by does not matter);
//! - [`compare_observed`]`(&Topology, &Observed, &Observed) -> Baseline`: the same from
//!   two guest reports (each is judged against its own kernel's model to get its rows
//!   and summary);
//! - [`Baseline`]: which vectors moved (CPUs, nodes, cores, hop before and after) and
//!   [`Metrics`] before and after; [`Baseline::to_text`] renders it for people,
//!   serde for machines, and [`Baseline::checks`] turns "not worse than K0" into
//!   [`Check`]s for a pass/fail run.
//!
//! The metrics come from [`Summary`] (each vector's effective CPU once it fired, the
//! numbers the seed 000 review asked for), so a vector that never fired is counted in
//! `vectors` only.

mod render;

use super::check::{Check, CheckStatus};
use super::guest_irqs::Observed;
use super::judge::judge;
use super::outcome::Verdict;
use super::row::{ObservedSide, VectorRow};
use super::summary::{NodeCount, Summary};
use crate::cpulist::CpuMask;
use crate::model::expected_table;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// Two verdicts that cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BaselineError {
    /// The runs are of different machines.
    #[error("baseline run {baseline} and patched run {patched} are not of the same machine ({why})")]
    DifferentMachines {
        /// The baseline run's name (`seed-002@6.1`).
        baseline: String,
        /// The patched run's name.
        patched: String,
        /// What differs.
        why: String,
    },
}

/// Where one vector sits on one kernel (guest CPU numbering).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Short IRQ name on that kernel (`mana_q3`, 7.x `mana_msi4`).
    pub name: String,
    /// Linux IRQ number.
    pub irq: u32,
    /// `smp_affinity_list`.
    pub cpus: CpuMask,
    /// NUMA nodes of the set.
    pub nodes: Vec<u32>,
    /// Physical cores of the set.
    pub cores: Vec<u32>,
    /// First hop from the NIC's node holding the whole set.
    pub hop: Option<u32>,
    /// The CPU it was delivered to, once it fired (`effective_affinity_list`).
    pub effective: Option<u32>,
}

/// One vector that differs between the runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorMove {
    /// MSI-X index (0 = HWC); `None` for an IRQ whose name follows no scheme.
    pub msix_index: Option<u32>,
    /// On the baseline kernel (`None`: it had no such vector).
    pub before: Option<Placement>,
    /// On the patched kernel (`None`: it has no such vector).
    pub after: Option<Placement>,
}

/// The reviewers' numbers for one run, from its [`Summary`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metrics {
    /// MANA IRQs the guest shows.
    pub vectors: u32,
    /// Of those, how many fired (the rest are not counted below).
    pub fired: u32,
    /// IRQs per node with CPUs.
    pub per_node: Vec<NodeCount>,
    /// Cores that took at least one IRQ.
    pub cores_with_irqs: u32,
    /// IRQs on the busiest core.
    pub most_on_one_core: u32,
    /// Cores where two or more SMT siblings each took an IRQ.
    pub cores_with_busy_siblings: u32,
    /// IRQs delivered outside the NIC's node.
    pub outside_nic_node: u32,
    /// The farthest hop such an IRQ went to.
    pub farthest_hop: Option<u32>,
}

impl Metrics {
    /// The numbers of one run's summary.
    pub fn of(s: &Summary) -> Self {
        Self {
            vectors: s.vectors,
            fired: s.fired,
            per_node: s.per_node.clone(),
            cores_with_irqs: u32::try_from(s.cores_with_irqs()).unwrap_or(u32::MAX),
            most_on_one_core: s.per_core.iter().map(|c| c.irqs).max().unwrap_or(0),
            cores_with_busy_siblings: u32::try_from(s.both_siblings.len()).unwrap_or(u32::MAX),
            outside_nic_node: u32::try_from(s.remote.len()).unwrap_or(u32::MAX),
            farthest_hop: s.remote.iter().filter_map(|r| r.hop).max(),
        }
    }
}

/// One side of the comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Side {
    /// The run's name (`seed-002@6.1`).
    pub run: String,
    /// Kernel generation the run was for (`6.1`).
    pub kernel: String,
    /// Guest `uname -r`.
    pub release: String,
}

/// The baseline comparison of one machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    /// Topology name.
    pub topology: String,
    /// The baseline kernel's run (K0).
    pub baseline: Side,
    /// The patched kernel's run.
    pub patched: Side,
    /// Vectors that moved, appeared or disappeared, by MSI-X index.
    pub moved: Vec<VectorMove>,
    /// Vectors on the same CPUs in both runs.
    pub unchanged: u32,
    /// The baseline run's numbers.
    pub before: Metrics,
    /// The patched run's numbers.
    pub after: Metrics,
    /// The baseline run's full summary (per core, which siblings, which remote IRQs).
    pub before_summary: Summary,
    /// The patched run's full summary.
    pub after_summary: Summary,
}

fn placement(row: &VectorRow, o: &ObservedSide) -> Placement {
    Placement {
        name: row.name.clone(),
        irq: o.irq,
        cpus: o.smp_affinity_list.clone(),
        nodes: o.nodes.clone(),
        cores: o.cores.clone(),
        hop: o.hop,
        effective: row.effective_cpu(),
    }
}

/// The guest's vectors of a verdict by MSI-X index (then by name for unknown ones).
fn placements(v: &Verdict) -> Vec<(Option<u32>, Placement)> {
    let mut out: Vec<(Option<u32>, Placement)> =
        v.vectors.iter().filter_map(|r| r.observed.as_ref().map(|o| (r.msix_index, placement(r, o)))).collect();
    out.sort_by(|a, b| (a.0.is_none(), a.0, &a.1.name).cmp(&(b.0.is_none(), b.0, &b.1.name)));
    out
}

fn side(v: &Verdict) -> Side {
    Side { run: v.run.name.clone(), kernel: v.run.kernel.to_string(), release: v.run.kernel_release.clone() }
}

/// Compare two verdicts of the same machine: `before` on the baseline kernel (K0),
/// `after` on the patched one. Vectors are matched by MSI-X index, so 6.x `mana_q3` and
/// 7.x `mana_msi4` are the same vector; names that follow no scheme by name.
///
/// # Errors
/// [`BaselineError::DifferentMachines`] when the topologies, CPU counts or NIC nodes
/// differ.
pub fn compare(before: &Verdict, after: &Verdict) -> Result<Baseline, BaselineError> {
    let (b, a) = (&before.run, &after.run);
    let why = if b.topology != a.topology {
        Some(format!("topology {} vs {}", b.topology, a.topology))
    } else if b.nr_cpu_ids != a.nr_cpu_ids {
        Some(format!("{} vs {} CPUs", b.nr_cpu_ids, a.nr_cpu_ids))
    } else if b.nic_node != a.nic_node {
        Some(format!("NIC node {:?} vs {:?}", b.nic_node, a.nic_node))
    } else {
        None
    };
    match why {
        Some(why) => Err(BaselineError::DifferentMachines { baseline: b.name.clone(), patched: a.name.clone(), why }),
        None => Ok(build(before, after)),
    }
}

/// [`compare`] for two guest reports of `topo` (the file as loaded; either numbering).
/// Each is judged against the model of the kernel it ran to get its rows and summary.
pub fn compare_observed(topo: &Topology, before: &Observed, after: &Observed) -> Baseline {
    let guest = topo.to_qemu_numbering();
    let verdict = |o: &Observed| judge(topo, o, &expected_table(&guest, o.kernel));
    build(&verdict(before), &verdict(after))
}

fn build(before: &Verdict, after: &Verdict) -> Baseline {
    let (old, new) = (placements(before), placements(after));
    let mut keys: Vec<(Option<u32>, String)> =
        old.iter().chain(&new).map(|(i, p)| (*i, if i.is_some() { String::new() } else { p.name.clone() })).collect();
    keys.sort_by(|a, b| (a.0.is_none(), a.0, &a.1).cmp(&(b.0.is_none(), b.0, &b.1)));
    keys.dedup();
    let find = |list: &[(Option<u32>, Placement)], key: &(Option<u32>, String)| {
        list.iter().find(|(i, p)| *i == key.0 && (key.0.is_some() || p.name == key.1)).map(|(_, p)| p.clone())
    };
    let mut moved = Vec::new();
    let mut unchanged = 0;
    for key in &keys {
        let (b, a) = (find(&old, key), find(&new, key));
        match (&b, &a) {
            (Some(x), Some(y)) if x.cpus == y.cpus => unchanged += 1,
            _ => moved.push(VectorMove { msix_index: key.0, before: b, after: a }),
        }
    }
    Baseline {
        topology: before.run.topology.clone(),
        baseline: side(before),
        patched: side(after),
        moved,
        unchanged,
        before: Metrics::of(&before.summary),
        after: Metrics::of(&after.summary),
        before_summary: before.summary.clone(),
        after_summary: after.summary.clone(),
    }
}

impl Baseline {
    /// "Not worse than K0", one check per metric a reviewer would object to: no vector
    /// lost (`baseline_vectors`), no more IRQs outside the NIC's node
    /// (`baseline_outside_nic_node`), no more cores with busy SMT siblings
    /// (`baseline_busy_siblings`), no fewer cores used (`baseline_cores_used`), no
    /// busier busiest core (`baseline_busiest_core`). A metric that got better passes
    /// and says so. These are a reviewer's first questions, not proof of a regression.
    pub fn checks(&self) -> Vec<Check> {
        let (b, a) = (&self.before, &self.after);
        let (k0, k1) = (&self.baseline.kernel, &self.patched.kernel);
        // (name, what, before, after, whether more is worse)
        let rows = [
            ("baseline_vectors", "MANA IRQs", b.vectors, a.vectors, false),
            ("baseline_outside_nic_node", "IRQs outside the NIC's node", b.outside_nic_node, a.outside_nic_node, true),
            (
                "baseline_busy_siblings",
                "cores whose SMT siblings both took IRQs",
                b.cores_with_busy_siblings,
                a.cores_with_busy_siblings,
                true,
            ),
            ("baseline_cores_used", "cores with an IRQ", b.cores_with_irqs, a.cores_with_irqs, false),
            ("baseline_busiest_core", "IRQs on the busiest core", b.most_on_one_core, a.most_on_one_core, true),
        ];
        rows.into_iter()
            .map(|(name, what, before, after, more_is_worse)| {
                let worse = if more_is_worse { after > before } else { after < before };
                let better = before != after && !worse;
                let how = if worse {
                    "worse than the baseline"
                } else if better {
                    "better than the baseline"
                } else {
                    "as the baseline"
                };
                Check {
                    name: name.to_owned(),
                    status: if worse { CheckStatus::Fail } else { CheckStatus::Pass },
                    message: format!("{}: {what}: {before} on {k0}, {after} on {k1} ({how})", self.topology),
                    detail: Vec::new(),
                }
            })
            .collect()
    }

    /// The comparison as text: the moved vectors (MSI-X, name, before → after with
    /// nodes, cores and hop), then the metrics side by side.
    pub fn to_text(&self) -> String {
        render::text(self)
    }
}

#[cfg(test)]
mod tests;
