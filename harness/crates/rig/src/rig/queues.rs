//! Which MSI-X vector each active queue raises: the device's view (SQ/RQ →
//! CQ → EQ → `eq_pci_msix_index`, learnt from GDMA_CREATE_QUEUE) joined with
//! the guest's (MSI-X index → Linux IRQ → `smp_affinity_list`).
//!
//! The device status is device-model's own [`DeviceStatus`] (its `core` is
//! [`mana_device_api::snapshot::Snapshot`]), read from the device process while the
//! guest printed its report (see [`crate::qemu::BootRequest::on_marker`] and
//! [`super::device::DeviceStatusHandle::snapshot`]): after `ethtool -L`, before
//! the shutdown path destroys the queues; in a run that unloads the driver
//! before its report (`--inject`, debug kernels), at the `MANARIG-UNLOAD` mark
//! just before that rmmod.
//!
//! [`QueueTable`] and [`QueueRow`] live in [`crate::verdict`] (every report
//! format carries them) and are re-exported here.

use crate::model::KernelGen;
use crate::verdict::{ObservedVector, VectorName};
pub use crate::verdict::{QueueRow, QueueTable, VportQueues};
use mana_device_api::codes::DeviceType;
use mana_device_api::snapshot::EqSnapshot;
use mana_device_api::snapshot::{WqKind, WqSnapshot};
use mana_device_api::status::DeviceStatus;

/// Errors reading the device status.
#[derive(Debug, thiserror::Error)]
pub enum QueueTableError {
    /// The status has no core snapshot (the core never ran).
    #[error("the device status has no core snapshot")]
    NoCore,
}

/// Join the device status with the guest's vectors (`gen` names them:
/// [`VectorName`]). Only the Ethernet function's EQs (owner
/// `GDMA_DEVICE_MANA`, include/net/mana/gdma.h) count; the HWC's is not a queue's.
///
/// # Errors
/// [`QueueTableError::NoCore`] when the status has no core snapshot.
pub fn queue_table(
    status: &DeviceStatus,
    vectors: &[ObservedVector],
    gen: KernelGen,
) -> Result<QueueTable, QueueTableError> {
    let core = status.core.as_ref().ok_or(QueueTableError::NoCore)?;
    let mut eqs: Vec<&EqSnapshot> =
        core.eqs.iter().filter(|e| DeviceType(e.owner.dev_type) == DeviceType::MANA).collect();
    eqs.sort_by_key(|e| e.id);
    let mut table = QueueTable::default();
    for eq in eqs {
        let of = |kind: WqKind| -> Vec<u32> {
            let mut ids: Vec<u32> =
                core.wqs.iter().filter(|w| w.parent_eq == Some(eq.id) && w.kind == kind).map(|w| w.id).collect();
            ids.sort_unstable();
            ids
        };
        let (sqs, rqs) = (of(WqKind::Sq), of(WqKind::Rq));
        if sqs.is_empty() && rqs.is_empty() {
            table.idle_eqs.push(eq.id);
            continue;
        }
        let vector =
            vectors.iter().find(|v| VectorName::parse(&v.name, gen).msix_index == Some(u32::from(eq.msix_index)));
        table.rows.push(QueueRow {
            channel: table.rows.len(),
            sqs,
            rqs,
            eq: eq.id,
            msix_index: eq.msix_index,
            irq: vector.map(|v| v.irq),
            name: vector.map(|v| VectorName::parse(&v.name, gen).short.to_string()),
            cpus: vector.map(|v| v.smp_affinity.clone()),
            effective: vector.and_then(|v| v.effective.clone()),
        });
    }
    table.vports = vport_queues(&core.wqs);
    Ok(table)
}

/// The Ethernet SQs and RQs per vPort, by vPort index (the HWC's queues have
/// no vPort); a WQ counts whether or not its CQ still exists.
fn vport_queues(wqs: &[WqSnapshot]) -> Vec<VportQueues> {
    let mut out: Vec<VportQueues> = Vec::new();
    for w in wqs {
        let Some(vport) = w.vport else { continue };
        let at = match out.iter().position(|v| v.vport == vport) {
            Some(i) => i,
            None => {
                out.push(VportQueues { vport, sqs: 0, rqs: 0 });
                out.len() - 1
            }
        };
        match w.kind {
            WqKind::Sq => out[at].sqs += 1,
            WqKind::Rq => out[at].rqs += 1,
        }
    }
    out.sort_by_key(|v| v.vport);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mana_device_api::snapshot::Owner;
    use mana_device_api::snapshot::Snapshot;

    fn vector(irq: u32, name: &str, cpus: &[u32]) -> ObservedVector {
        ObservedVector {
            irq,
            name: format!("{name}@pci:0000:41:00.0"),
            smp_affinity: cpus.iter().copied().collect(),
            affinity_hint: None,
            effective: Some(cpus[..1].iter().copied().collect()),
            counts: vec![1],
        }
    }

    /// Seed 000's experiment on seed 002's default 9-vector machine (Linux
    /// 6.12): 8 Ethernet EQs at probe with eq_pci_msix_index (i + 1) % 9
    /// (mana_create_eq(), mana_en.c 6.12), then `ethtool -L combined 4`: the
    /// queues of channels 0-3 use EQs 1-4, i.e. vectors 1-4 = mana_q0..q3 on
    /// seed 002's sibling groups 0-1, 2-3, 0-1, 2-3.
    #[test]
    fn four_channels_join_eqs_vectors_and_cpus() {
        let eq = |id: u32, msix_index: u16, dev_type: DeviceType| EqSnapshot {
            id,
            msix_index,
            owner: Owner { dev_type: dev_type.0, instance: 0 },
            entries: 64,
            events_posted: 0,
            armed: true,
        };
        let mut core = Snapshot::default();
        core.eqs.push(eq(0, 0, DeviceType::HWC));
        for i in 1..=8u32 {
            core.eqs.push(eq(i, (i % 9) as u16, DeviceType::MANA));
        }
        for ch in 0..4u32 {
            core.wqs.push(WqSnapshot {
                id: 10 + ch,
                kind: WqKind::Sq,
                cq_id: 20 + ch,
                parent_eq: Some(ch + 1),
                vport: Some(0),
                traffic: None,
            });
            core.wqs.push(WqSnapshot {
                id: 30 + ch,
                kind: WqKind::Rq,
                cq_id: 40 + ch,
                parent_eq: Some(ch + 1),
                vport: Some(0),
                traffic: None,
            });
        }
        let status = DeviceStatus { core: Some(core), ..DeviceStatus::default() };
        let vectors = [
            vector(25, "mana_hwc", &[0]),
            vector(26, "mana_q0", &[0, 1]),
            vector(27, "mana_q1", &[2, 3]),
            vector(28, "mana_q2", &[0, 1]),
            vector(29, "mana_q3", &[2, 3]),
        ];
        let t = queue_table(&status, &vectors, KernelGen::V6_12).expect("table");
        assert_eq!(t.rows.len(), 4);
        assert_eq!(t.idle_eqs, vec![5, 6, 7, 8]);
        let got: Vec<(u16, Option<u32>, String)> = t
            .rows
            .iter()
            .map(|r| (r.msix_index, r.irq, r.cpus.as_ref().map(ToString::to_string).unwrap_or_default()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, Some(26), "0-1".into()),
                (2, Some(27), "2-3".into()),
                (3, Some(28), "0-1".into()),
                (4, Some(29), "2-3".into())
            ]
        );
        assert_eq!((t.rows[0].sqs.clone(), t.rows[0].rqs.clone()), (vec![10], vec![30]));
        assert_eq!(t.rows[3].name.as_deref(), Some("mana_q3"));
        assert_eq!(t.vports, [VportQueues { vport: 0, sqs: 4, rqs: 4 }], "a queue pair per channel on vPort 0");
    }

    #[test]
    fn a_status_without_core_is_an_error() {
        let status = DeviceStatus::default();
        assert!(matches!(queue_table(&status, &[], KernelGen::V7), Err(QueueTableError::NoCore)));
    }
}
