//! The `vport_vectors` check of a NIC with several vPorts: the device's Ethernet EQs that
//! carry queues, in creation order, use the MSI-X vectors [`crate::model::vport_plan`]
//! predicts and carry as many vPorts' queues as it says: on 6.x the device's own EQs,
//! created once at probe and shared by channel i of every vPort (one SQ per vPort on
//! each); on 7.x each vPort's EQs, vPort 0's first (the guest opens its netdevs in order).

use super::check::{Check, CheckStatus};
use super::stages::QueueTable;
use crate::model::{EqScope, VportPlan};
use crate::text::plural;

/// The check's name.
pub const VPORT_VECTORS_CHECK: &str = "vport_vectors";

/// Compare the queue table's EQ rows (MSI-X index, SQ count) with the plan's
/// [`VportPlan::eqs`]; skipped without a table, or when the model expects no probe.
pub fn vport_vectors_check(plan: Option<&VportPlan>, table: Option<&QueueTable>) -> Check {
    let (Some(plan), Some(table)) = (plan, table) else {
        return Check::new(VPORT_VECTORS_CHECK, CheckStatus::Skip, "no queue table, or no probe in the model");
    };
    let want: Vec<(u32, u32)> = plan.eqs().iter().map(|e| (e.msix_index, e.vports)).collect();
    let got: Vec<(u32, u32)> = table.rows.iter().map(|r| (u32::from(r.msix_index), r.sqs.len() as u32)).collect();
    let vectors = |v: &[(u32, u32)]| v.iter().map(|(m, _)| m.to_string()).collect::<Vec<_>>().join(",");
    let sqs = |v: &[(u32, u32)]| v.iter().map(|(_, n)| n.to_string()).collect::<Vec<_>>().join(",");
    let mode = if plan.sharing { "shared" } else { "dedicated" };
    let ports = plan.vectors.len();
    let owner = match plan.eq_scope {
        EqScope::Device => "the device's EQs (made at probe, channel i of every vPort on EQ i)",
        EqScope::Vport => "each vPort's own EQs (made as it opens, vPort 0 first)",
    };
    Check::pass_if(
        VPORT_VECTORS_CHECK,
        got == want,
        format!(
            "{}, {owner}, {mode} MSI-X: the model expects EQ vectors {} with {} SQs each, \
             the device shows {} with {}",
            plural(ports, "vPort"),
            vectors(&want),
            sqs(&want),
            vectors(&got),
            sqs(&got)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::QueueRow;

    /// One row per vector, each EQ with `ports` SQs and RQs.
    fn table(vectors: &[u16], ports: u32) -> QueueTable {
        let ids = |i: usize| (0..ports).map(|p| p * 100 + i as u32 + 1).collect::<Vec<u32>>();
        let rows = vectors
            .iter()
            .enumerate()
            .map(|(i, &m)| QueueRow {
                channel: i,
                sqs: ids(i),
                rqs: ids(i),
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
        let plan = VportPlan {
            msix_usable: 9,
            sharing: false,
            eq_scope: EqScope::Vport,
            vectors: vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8]],
        };
        let ok = vport_vectors_check(Some(&plan), Some(&table(&[1, 2, 3, 4, 5, 6, 7, 8], 1)));
        assert_eq!(ok.status, CheckStatus::Pass, "{}", ok.message);
        let bad = vport_vectors_check(Some(&plan), Some(&table(&[1, 2, 3, 4, 1, 2, 3, 4], 1)));
        assert_eq!(bad.status, CheckStatus::Fail);
        assert!(bad.message.contains("expects EQ vectors 1,2,3,4,5,6,7,8 with 1,1,1,1,1,1,1,1 SQs"), "{}", bad.message);
        assert_eq!(vport_vectors_check(Some(&plan), None).status, CheckStatus::Skip);
    }

    /// The same file on 6.1 and 6.12: the device's four EQs (vectors 1-4), each with
    /// both vPorts' SQs, as `run --kernel 6.12-min` shows them (EQ 1: SQs 1,5). Four
    /// EQs with one vPort's queues each (the other vPort never opened) fail.
    #[test]
    fn on_6_x_four_device_eqs_with_both_vports_queues_pass() {
        let plan = VportPlan {
            msix_usable: 9,
            sharing: true,
            eq_scope: EqScope::Device,
            vectors: vec![vec![1, 2, 3, 4], vec![1, 2, 3, 4]],
        };
        let ok = vport_vectors_check(Some(&plan), Some(&table(&[1, 2, 3, 4], 2)));
        assert_eq!(ok.status, CheckStatus::Pass, "{}", ok.message);
        assert!(ok.message.contains("the device's EQs"), "{}", ok.message);
        let one_port = vport_vectors_check(Some(&plan), Some(&table(&[1, 2, 3, 4], 1)));
        assert_eq!(one_port.status, CheckStatus::Fail, "{}", one_port.message);
        assert!(one_port.message.ends_with("the device shows 1,2,3,4 with 1,1,1,1"), "{}", one_port.message);
    }
}
