//! The `vport_vectors` check of a NIC with several vPorts: the device's EQs, in
//! creation order (vPort 0's channels first, as the guest opens its netdevs in
//! order), use the MSI-X vectors [`crate::model::vport_plan`] predicts.

use super::check::{Check, CheckStatus, Status};
use super::outcome::Verdict;
use super::stages::QueueTable;
use crate::model::VportPlan;

/// The check's name.
pub const VPORT_VECTORS_CHECK: &str = "vport_vectors";

/// Compare the queue table's EQ vectors with the plan; skipped without a table, or
/// when the model expects no probe.
pub fn vport_vectors_check(plan: Option<&VportPlan>, table: Option<&QueueTable>) -> Check {
    let (Some(plan), Some(table)) = (plan, table) else {
        return Check::new(VPORT_VECTORS_CHECK, CheckStatus::Skip, "no queue table, or no probe in the model");
    };
    let got: Vec<u32> = table.rows.iter().map(|r| u32::from(r.msix_index)).collect();
    let want = plan.vectors.concat();
    let mode = if plan.sharing { "shared" } else { "dedicated" };
    let text = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    Check::pass_if(
        VPORT_VECTORS_CHECK,
        got == want,
        format!(
            "{} vPorts, {mode} MSI-X: the model expects EQ vectors {} (vPort 0 first), the device shows {}",
            plan.vectors.len(),
            text(&want),
            text(&got)
        ),
    )
}

impl Verdict {
    /// Append the `vport_vectors` check; the status becomes Fail if it fails.
    pub fn add_vport_check(&mut self, check: Check) {
        if check.status == CheckStatus::Fail {
            self.status = Status::Fail;
        }
        self.checks.push(check);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::QueueRow;

    fn table(vectors: &[u16]) -> QueueTable {
        let rows = vectors
            .iter()
            .enumerate()
            .map(|(i, &m)| QueueRow {
                channel: i,
                sqs: vec![i as u32 + 1],
                rqs: vec![i as u32 + 1],
                eq: i as u32 + 1,
                msix_index: m,
                irq: None,
                name: None,
                cpus: None,
                effective: None,
            })
            .collect();
        QueueTable { rows, ..QueueTable::default() }
    }

    /// topologies/vports-dedicated.toml on 7.3 (model/src/model/vports.rs): 1-4, 5-8.
    #[test]
    fn dedicated_vectors_pass_and_shared_ones_fail_against_a_dedicated_plan() {
        let plan = VportPlan { msix_usable: 9, sharing: false, vectors: vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8]] };
        let ok = vport_vectors_check(Some(&plan), Some(&table(&[1, 2, 3, 4, 5, 6, 7, 8])));
        assert_eq!(ok.status, CheckStatus::Pass, "{}", ok.message);
        let bad = vport_vectors_check(Some(&plan), Some(&table(&[1, 2, 3, 4, 1, 2, 3, 4])));
        assert_eq!(bad.status, CheckStatus::Fail);
        assert!(bad.message.contains("expects EQ vectors 1,2,3,4,5,6,7,8"), "{}", bad.message);
        assert_eq!(vport_vectors_check(Some(&plan), None).status, CheckStatus::Skip);
    }
}
