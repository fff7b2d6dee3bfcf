//! A machine with several NICs (`[[nic]]`): the verdict of NIC 1, 2, … beside NIC 0's
//! (which is the run's own [`Verdict`]), and the combined per-CPU IRQ load of every
//! NIC's MANA vectors, as the guest shows it and as the model expects it.
//!
//! The kernel spreads each device's vectors on its own (nothing in gdma_main.c reads
//! another device's IRQs, Linux 6.1-7.3), so two NICs on one node stack their vectors
//! on the same CPUs; the load table shows where that happens.

use super::check::Status;
use super::guest_irqs::{Observed, ObservedVector};
use super::outcome::{CpuLoad, NicsReport, Verdict};
use crate::cpulist::CpuMask;
use crate::model::ExpectedTable;
use crate::topology::Topology;

impl Verdict {
    /// Attaches the other NICs' verdicts and the combined load; the status becomes
    /// Fail if one of those NICs fails.
    pub fn add_nics(&mut self, report: NicsReport) {
        if report.nics.iter().any(|n| n.verdict.status == Status::Fail) {
            self.status = Status::Fail;
        }
        self.nics = Some(report);
    }

    /// Every check of the run with the name a test report gives it: this verdict's
    /// checks by their own names, then NIC K's (K ≥ 1) as `nicK:<name>`.
    pub fn checks_of_every_nic(&self) -> Vec<(String, &super::Check)> {
        let mut out: Vec<(String, &super::Check)> = self.checks.iter().map(|c| (c.name.clone(), c)).collect();
        for nic in self.nics.iter().flat_map(|n| &n.nics) {
            out.extend(nic.verdict.checks.iter().map(|c| (format!("nic{}:{}", nic.index, c.name), c)));
        }
        out
    }
}

/// Where one observed vector is delivered: its effective CPUs when shown, else a
/// one-CPU affinity, else nowhere known.
fn delivered(v: &ObservedVector) -> Option<CpuMask> {
    match &v.effective {
        Some(e) if !e.is_empty() => Some(e.clone()),
        _ => (v.smp_affinity.count() == 1).then(|| v.smp_affinity.clone()),
    }
}

/// The combined load over `nics` (one `(Observed, ExpectedTable)` per NIC, NIC 0
/// first) on `topo` in guest (QEMU) numbering: one row per CPU.
pub fn combined_load(topo: &Topology, nics: &[(&Observed, &ExpectedTable)]) -> Vec<CpuLoad> {
    let n = nics.len();
    let mut rows: Vec<CpuLoad> = (0..topo.ncpu())
        .map(|cpu| CpuLoad {
            cpu,
            node: topo.node_of(cpu).unwrap_or(0),
            delivered: vec![0; n],
            in_affinity: vec![0; n],
            in_model: vec![0; n],
        })
        .collect();
    let mut add = |mask: &CpuMask, k: usize, pick: fn(&mut CpuLoad) -> &mut Vec<u32>| {
        for cpu in mask.iter() {
            if let Some(row) = rows.get_mut(cpu as usize) {
                pick(row)[k] += 1;
            }
        }
    };
    for (k, (observed, expected)) in nics.iter().enumerate() {
        for v in &observed.vectors {
            if let Some(mask) = delivered(v) {
                add(&mask, k, |r| &mut r.delivered);
            }
            add(&v.smp_affinity, k, |r| &mut r.in_affinity);
        }
        for e in &expected.vectors {
            add(&e.smp_affinity_list, k, |r| &mut r.in_model);
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{expected_table, KernelGen};
    use crate::verdict::NicVerdict;

    #[test]
    fn two_nics_on_two_nodes_load_each_node_with_its_own_nics_vectors() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../topologies/two-nics-small.toml");
        let t = Topology::load(path).expect("loads");
        let tables: Vec<ExpectedTable> = (0..2)
            .map(|k| expected_table(&t.with_only_nic(k).expect("nic").to_qemu_numbering(), KernelGen::V6_12))
            .collect();
        let none = Observed {
            kernel_release: String::new(),
            kernel: KernelGen::V6_12,
            model_basis: Default::default(),
            accel: String::new(),
            nic_bdf: None,
            nic_numa_node: None,
            vectors: Vec::new(),
            probe_ok: false,
            dmesg_mana: Vec::new(),
        };
        let load = combined_load(&t, &[(&none, &tables[0]), (&none, &tables[1])]);
        // 4 CPUs, 2 per node, 5 vectors per NIC (HWC + 4 queues). 6.12's irq_setup()
        // gives each queue a whole sibling group, the NIC's node first; the HWC gets
        // the node's first CPU (cpumask_local_spread(0, node)).
        let model: Vec<Vec<u32>> = load.iter().map(|r| r.in_model.clone()).collect();
        assert_eq!(model, vec![vec![3, 2], vec![2, 2], vec![2, 3], vec![2, 2]], "{load:?}");
        assert_eq!(load.iter().map(CpuLoad::delivered_total).sum::<u32>(), 0);
    }

    #[test]
    fn a_failing_second_nic_fails_the_run_and_its_checks_are_named_by_nic() {
        let mut v = super::super::fixtures::Run::new("seed-002", "6.12").judge();
        let mut other = v.clone();
        other.status = Status::Fail;
        other.checks[0].status = super::super::CheckStatus::Fail;
        assert_eq!(v.status, Status::Pass);
        v.add_nics(NicsReport {
            nics: vec![NicVerdict { index: 1, bdf: None, node: Some(1), verdict: other }],
            load: Vec::new(),
        });
        assert_eq!(v.status, Status::Fail);
        let names: Vec<String> = v.checks_of_every_nic().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names.len(), 2 * v.checks.len());
        assert_eq!(names[v.checks.len()], format!("nic1:{}", v.checks[0].name));
    }
}
