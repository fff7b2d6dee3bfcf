//! The other NICs of a `[[nic]]` machine (NIC 1, 2, …): each judged on its
//! own against the model of the machine with only that NIC, and their
//! combined load with NIC 0's.

use super::outcome::StageOutcome;
use super::report_to_verdict;
use super::request::RunRequest;
use crate::model::{expected_stages, KernelGen};
use crate::topology::Topology;
use crate::verdict::Observed;

/// NIC 1, 2, … of a `[[nic]]` machine, judged each on its own.
pub(super) struct OtherNics<'a> {
    pub(super) topo: &'a Topology,
    pub(super) report: &'a crate::guest_protocol::GuestReport,
    /// Guest PCI address per topology NIC.
    pub(super) bdfs: &'a [Option<String>],
    pub(super) model: KernelGen,
    pub(super) req: &'a RunRequest,
    pub(super) accel: &'a str,
}

impl OtherNics<'_> {
    /// Each other NIC's verdict (named `<run>#nicK`) against the model of the machine
    /// with only that NIC, at every stage of the run as NIC 0's
    /// ([`crate::verdict::judge_staged`] over `stages`), and the combined load at the
    /// report with NIC 0's `observed0`/`expected0`.
    ///
    /// # Errors
    /// [`report_to_verdict::BadHint`]: a NIC's `affinity_hint` that is not a
    /// hex cpumask.
    pub(super) fn report(
        &self,
        run_name: &str,
        stages: &[StageOutcome],
        observed0: &Observed,
        expected0: &crate::model::ExpectedTable,
    ) -> Result<crate::verdict::NicsReport, report_to_verdict::BadHint> {
        let mut judged = Vec::new();
        let last_stage = self.topo.to_qemu_numbering().last_stage().to_owned();
        for k in 1..self.topo.nics().len() {
            let Some(only) = self.topo.with_only_nic(k) else { continue };
            let bdf = self.bdfs.get(k).cloned().flatten();
            let observed_in = |report: &crate::guest_protocol::GuestReport| {
                report_to_verdict::observed_of(report, bdf.as_deref(), self.model, &self.req.model_basis, self.accel)
            };
            let observed = observed_in(self.report)?;
            let at_stages: Vec<Observed> = stages.iter().map(|s| observed_in(&s.report)).collect::<Result<_, _>>()?;
            // The device status (queue tables) is NIC 0's: the other NICs' stages carry none.
            let earlier: Vec<(&str, &Observed, crate::verdict::StageFacts)> = stages
                .iter()
                .zip(&at_stages)
                .map(|(s, o)| (s.name.as_str(), o, report_to_verdict::stage_facts(&s.report, None)))
                .collect();
            let expected_at = expected_stages(&only.to_qemu_numbering(), self.model);
            let report = report_to_verdict::stage_facts(self.report, None);
            let mut verdict =
                crate::verdict::judge_staged(&only, &expected_at, &earlier, &last_stage, &observed, report);
            let expected = crate::verdict::table_at(&expected_at, &last_stage).clone();
            verdict.run.name = format!("{run_name}#nic{k}");
            judged.push((k, bdf, only.nic().node, observed, expected, verdict));
        }
        let mut pairs = vec![(observed0, expected0)];
        pairs.extend(judged.iter().map(|(_, _, _, o, e, _)| (o, e)));
        let load = crate::verdict::combined_load(&self.topo.to_qemu_numbering(), &pairs);
        let nics = judged
            .into_iter()
            .map(|(index, bdf, node, _, _, verdict)| crate::verdict::NicVerdict { index, bdf, node, verdict })
            .collect();
        Ok(crate::verdict::NicsReport { nics, load })
    }
}
