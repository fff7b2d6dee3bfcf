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
use super::stages::StageFacts;
use crate::cpulist::CpuMask;
use crate::model::{ExpectedTable, PROBE_STAGE};
use crate::topology::Topology;

/// The model's table for the run stage `stage` out of `expected_at`
/// ([`crate::model::expected_stages`]: the probe first, then one per hotplug
/// stage): `first-probe` (before an rmmod/reprobe) is the probe's, a stage the
/// model has no table for gets the probe's too.
///
/// # Panics
/// Never for `expected_stages`' output (it always holds the probe's table);
/// an empty `expected_at` is a caller's bug.
pub fn table_at<'a>(expected_at: &'a [(String, ExpectedTable)], stage: &str) -> &'a ExpectedTable {
    let stage = if stage == "first-probe" { PROBE_STAGE } else { stage };
    expected_at.iter().find(|(n, _)| n == stage).map_or(&expected_at[0].1, |(_, t)| t)
}

/// One NIC judged the way the rig judges NIC 0 over a run's stages: each
/// earlier stage's IRQ table (`earlier`: stage name, what the guest showed for
/// this NIC then, that moment's facts) against the model's table for that
/// stage, the report's (`observed`) against the table of `last_stage`, then
/// [`Verdict::add_stages`] (a failing hotplug stage fails the NIC). `only` is
/// the machine with only this NIC (file numbering), `expected_at` its
/// [`crate::model::expected_stages`] in guest numbering. With no earlier
/// stage it is the plain [`super::judge`].
pub fn judge_staged(
    only: &Topology,
    expected_at: &[(String, ExpectedTable)],
    earlier: &[(&str, &Observed, StageFacts)],
    last_stage: &str,
    observed: &Observed,
    report: StageFacts,
) -> Verdict {
    let mut verdict = super::judge(only, observed, table_at(expected_at, last_stage));
    if earlier.is_empty() {
        return verdict;
    }
    let judged: Vec<(&str, Verdict, &StageFacts)> = earlier
        .iter()
        .map(|(name, o, facts)| (*name, super::judge(only, o, table_at(expected_at, name)), facts))
        .collect();
    verdict.add_stages(judged.iter().map(|(n, v, f)| (*n, v, (*f).clone())).collect(), report);
    verdict
}

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
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../topologies/two-nics-small.toml");
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
            probe_unfinished: false,
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

    /// two-nics-small with CPU 3 (node 1, NIC 1's node) offlined after the probe:
    /// NIC 1 is judged at the probe against the probe's table and at the report
    /// against the table after the hotplug, as NIC 0 is.
    #[test]
    fn a_second_nic_is_judged_at_every_hotplug_stage() {
        use crate::model::{expected_stages, KernelGen};
        let (t, last) = super::super::fixtures::offlined_after("two-nics-small", "3");
        assert_eq!(last, "offline-after");
        let only = t.with_only_nic(1).expect("nic 1");
        let at = expected_stages(&only.to_qemu_numbering(), KernelGen::V6_12);
        let (probe, after) = (table_at(&at, "probe"), table_at(&at, &last));
        assert_ne!(format!("{probe:?}"), format!("{after:?}"), "offlining CPU 3 changes NIC 1's table");
        // NIC 1 alone on node 1 (kernel algorithm, 6.12, 5 vectors on 4 CPUs): the HWC
        // gets cpumask_local_spread(0, 1) = CPU 2; irq_setup() gives the queues hop 0's
        // sibling group 2-3 twice (its weight is 2 CPUs), then hop 1's 0-1 twice.
        let rows = ["2", "2-3", "2-3", "0-1", "0-1"];
        let seen_probe = super::super::fixtures::guest_report(KernelGen::V6_12, Some(1), 4, &rows, &[]);
        // CPU 3 offlined: the affinities keep an online CPU, so they stay; irq_setup()'s
        // hints are topology_sibling_cpumask(2) itself, which now reads 2 alone
        // (model/src/model/hotplug.rs, as seen in a 6.12 guest).
        let mut seen_after = seen_probe.clone();
        for q in &mut seen_after.vectors[1..3] {
            q.affinity_hint = Some("2".parse().expect("cpulist"));
        }
        let facts = StageFacts::default();
        let judge = |at_probe: &Observed, at_report: &Observed| {
            judge_staged(&only, &at, &[("probe", at_probe, facts.clone())], &last, at_report, facts.clone())
        };
        let v = judge(&seen_probe, &seen_after);
        assert_eq!(v.status, Status::Pass, "{:#?}", v.failures().collect::<Vec<_>>());
        let stages: Vec<&str> = v.queues.iter().flatten().map(|s| s.stage.as_str()).collect();
        assert_eq!(stages, ["probe", super::super::REPORT_STAGE]);
        // The report still showing the probe's table: the hotplug was not followed.
        assert_eq!(judge(&seen_probe, &seen_probe).status, Status::Fail);
        // The probe showing the table after the hotplug: the probe stage fails the NIC.
        let v = judge(&seen_after, &seen_after);
        assert_eq!(v.status, Status::Fail);
        assert_eq!(v.queues.as_ref().expect("stages")[0].status, Status::Fail);
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
        // The verdict line counts every NIC's checks and names NIC 1's failure.
        let text = super::super::render(&v, super::super::Format::Human).expect("render");
        let want = format!("verdict: FAIL (1 of {} checks failed: nic1:{})\n", names.len(), v.checks[0].name);
        assert!(text.ends_with(&want), "{text}");
    }
}
